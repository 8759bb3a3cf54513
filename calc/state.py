"""Per-request state of the layers that are not KV caches: Mamba-1/2, Gated DeltaNet, lightning attention and short
convolutions hold a constant state per request, whatever its length (vLLM's MambaSpec; vllm/model_executor/layers/
mamba/mamba_utils.py, MambaStateShapeCalculator, v0.11–0.33).

One layer, one request, one tensor-parallel rank [bytes]:

    mamba1   conv (K − 1) · I/tp              + ssm I/tp · N                      I = mamba_expand · hidden
    mamba2   conv (K − 1) · (I + 2·G'·N)/tp   + ssm heads/tp · head_dim · N       I = heads · head_dim
    GDN      conv (K − 1) · (2·nk·dk + nv·dv)/tp + ssm nv/tp · dk · dv
    lightning                                   ssm H/tp · d · d
    conv     conv (L_cache − 1) · conv_dim/tp

G' = n_groups, replicated up to tp when tp does not divide it (extra_groups_for_head_shards). Conv state in the
model's dtype; the SSM state in `mamba_ssm_cache_dtype` — "auto" is the model dtype, except that vLLM ≥ 0.20 keeps
Nemotron-H's in float32, and configs that name one are followed. kv_cache_dtype=fp8 changes none of it.
Nemotron-H-8B at TP 1 in bf16: 3 · (8,192 + 2·8·128) · 2 + 128 · 64 · 128 · 2 = 61,440 + 2,097,152 = 2,158,592 B.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class StateShape:
    kind: str  # "mamba1" | "mamba2" | "gdn" | "lightning" | "conv"
    conv_elements: int
    """Per layer, per request, per rank."""
    ssm_elements: int
    conv_bytes_per_element: float
    ssm_bytes_per_element: float

    @property
    def bytes(self) -> float:
        return self.conv_elements * self.conv_bytes_per_element + self.ssm_elements * self.ssm_bytes_per_element


def _div(a: int, tp: int) -> int:
    return max(1, ceil(a / tp))


def state_kind(m) -> str | None:
    kinds = set(m.layer_types)
    if kinds & {"mamba", "hybrid"}:
        return "mamba2" if m.mamba_num_heads else "mamba1"
    if "linear_attention" in kinds:
        return "gdn" if m.linear_key_head_dim else "lightning"
    if "conv" in kinds:
        return "conv"
    return None


def ssm_dtype(m, *, model_bytes: float, override: str = "auto") -> float:
    """Bytes per SSM-state element: the scenario's --mamba-ssm-cache-dtype, else the checkpoint's, else vLLM's
    default for the family (Nemotron-H: float32 from 0.20), else the model dtype."""
    if override != "auto":
        return DTYPE_BYTES[override]
    if m.mamba_ssm_cache_dtype:
        return DTYPE_BYTES[m.mamba_ssm_cache_dtype]
    if m.model_type == "nemotron_h":
        return 4
    return model_bytes


def state_shape(m, *, tp: int, model_bytes: float, ssm_override: str = "auto", num_spec: int = 0) -> StateShape | None:
    """The state of one state-holding layer (None when the model has none). `num_spec`: vLLM's speculative tokens, which
    a Mamba-2 or Gated DeltaNet conv state keeps as more rows (mamba_utils: conv_kernel − 1 + num_spec; read in vLLM
    0.24's qwen_gdn_linear_attn.py and mamba_mixer2.py, and matched by 0.23.0 logs of Qwen3.6-27B; earlier releases'
    Mamba-2 mixers were not read)."""
    kind = state_kind(m)
    if kind is None:
        return None
    ssm_b = ssm_dtype(m, model_bytes=model_bytes, override=ssm_override)
    if kind == "mamba2":
        heads, hd, N, K = m.mamba_num_heads, m.mamba_head_dim, m.ssm_state_size, m.conv_kernel
        inner = m.mamba_intermediate_size or heads * hd
        groups = m.n_groups if m.n_groups % tp == 0 else max(m.n_groups, tp)
        conv = (K - 1 + num_spec) * _div(inner + 2 * groups * N, tp)
        return StateShape(kind, conv, _div(heads, tp) * hd * N, model_bytes, ssm_b)
    if kind == "mamba1":
        inner = m.mamba_intermediate_size or round(m.mamba_expand * m.hidden_size)
        return StateShape(kind, (m.conv_kernel - 1) * _div(inner, tp), _div(inner, tp) * m.ssm_state_size,
                          model_bytes, ssm_b)  # fmt: skip
    if kind == "gdn":
        nk, nv = m.linear_num_key_heads, m.linear_num_value_heads
        dk, dv = m.linear_key_head_dim, m.linear_value_head_dim
        conv = (m.linear_conv_kernel_dim - 1 + num_spec) * _div(2 * nk * dk + nv * dv, tp)
        return StateShape(kind, conv, _div(nv, tp) * dk * dv, model_bytes, ssm_b)
    if kind == "lightning":
        d = m.kv_head_dim
        return StateShape(kind, 0, _div(m.num_attention_heads, tp) * d * d, model_bytes, model_bytes)
    conv_dim = m.conv_dim or m.hidden_size
    return StateShape(kind, (m.conv_L_cache - 1) * _div(conv_dim, tp), 0, model_bytes, model_bytes)
