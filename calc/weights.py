"""Weight bytes per GPU for each weight precision, and the matmul precision it implies.

Assumptions (stated so a reviewer can check them):
- bf16 / fp16: 2 bytes per parameter.
- fp8: 1 byte for the transformer-block linear weights plus one fp32 scale per 128×128 block (+0.024 %);
  embedding, lm_head and norms stay 16-bit (vLLM quantizes linear layers only).
- int8: 1 byte plus one fp16 scale per output channel (+2/hidden_size bytes, ≈0.05 %).
- int4 (AWQ/GPTQ-style, group 128): 0.5 byte plus a fp16 scale and zero per 128 weights → 0.53125 byte.
- mxfp4 (gpt-oss experts): 4 bits plus one 8-bit scale per 32 weights → 0.53125 byte.
- dtype "auto": the checkpoint's own format — its quantization_config if it ships quantized (DeepSeek-V3 fp8,
  gpt-oss mxfp4 experts), else its 16-bit torch_dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.kv_cache import pp_layer_ranges
from calc.params import ParamCounts
from calc.specs import ModelSpec

FP8_BLOCK_SCALE_OVERHEAD = 4 / (128 * 128)
INT4_GROUP_BYTES = 0.5 + 4 / 128
MXFP4_BYTES = 0.5 + 1 / 32


@dataclass(frozen=True)
class WeightFormat:
    """Bytes per parameter for the blocks' linear layers and for the routed experts, plus the matmul dtype."""

    linear_bytes: float
    expert_bytes: float
    compute_dtype: str  # precision of the tensor-core math: bf16, fp16, fp8 or int8
    label: str


def weight_format(m: ModelSpec, dtype: str) -> WeightFormat:
    if dtype == "auto":
        q = m.quantization_config
        native = m.native_dtype
        if q is None:
            return WeightFormat(2.0, 2.0, native, native)
        if q.quant_method == "mxfp4":
            return WeightFormat(2.0, MXFP4_BYTES, native, "mxfp4 experts, bf16 rest")
        if q.quant_method in ("fp8", "compressed-tensors"):
            b = 1 + FP8_BLOCK_SCALE_OVERHEAD
            return WeightFormat(b, b, "fp8", "fp8 (checkpoint)")
        bits = q.bits or 4
        b = INT4_GROUP_BYTES if bits == 4 else 1.0
        return WeightFormat(b, b, native, f"int{bits} ({q.quant_method})")
    if dtype in ("bf16", "fp16"):
        return WeightFormat(2.0, 2.0, dtype, dtype)
    if dtype == "fp8":
        b = 1 + FP8_BLOCK_SCALE_OVERHEAD
        return WeightFormat(b, b, "fp8", "fp8")
    if dtype == "int8":
        b = 1 + 2 / m.hidden_size
        return WeightFormat(b, b, "int8", "int8 (W8A8)")
    if dtype == "int4":
        return WeightFormat(INT4_GROUP_BYTES, INT4_GROUP_BYTES, m.native_dtype, "int4 (W4A16, group 128)")
    raise ValueError(f"dtype: unknown weight precision {dtype!r}")


def weights_bytes(p: ParamCounts, f: WeightFormat) -> float:
    """Whole model, all GPUs together [bytes]."""
    blocks = p.attention + p.dense_mlp
    return blocks * f.linear_bytes + p.experts * f.expert_bytes + (p.embedding + p.lm_head + p.norms) * 2.0


def weights_bytes_per_stage(m: ModelSpec, p: ParamCounts, f: WeightFormat, *, tp: int, pp: int) -> list[float]:
    """Weight bytes on one GPU of each pipeline stage: the stage's share of the layers split over tp ranks, the
    embedding on the first stage and the lm_head on the last (vocab-parallel, so also split over tp)."""
    L = m.num_hidden_layers
    out = []
    stages = pp_layer_ranges(L, pp)
    per_layer_linear = (p.attention + p.dense_mlp) / L * f.linear_bytes + p.experts / L * f.expert_bytes
    norms = p.norms / L * 2.0
    for s, layers in enumerate(stages):
        b = len(layers) * (per_layer_linear / tp + norms)
        if s == 0:
            b += p.embedding * 2.0 / tp
        if s == len(stages) - 1:
            b += (p.lm_head or (p.embedding if pp > 1 else 0)) * 2.0 / tp  # tied head: a copy on the last stage
        out.append(b)
    return out
