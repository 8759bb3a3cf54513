"""Family rules for StepFun's config.json layouts: Step-3 (step3_vl around step3_text) and Step-3.5 (step3p5).

Both spell the KV head count `num_attention_groups`, the experts `moe_num_experts` / `moe_top_k`, the one shared expert
`share_expert_dim`, and list their MoE layers as a string `moe_layers_enum` ("4,5,…,59"). Each rule rewrites the config
dict in place into the fields ModelSpec reads (as calc.hf_families does), and says what it assumed.

Sources: vLLM model_executor/models/step3_text.py (Step3TextAttention: num_kv_heads is 1 whatever the config says —
vLLM passes 1 and raises on any other —, head_dim 256, a low-rank query through share_q_dim), step3p5.py
(Step3p5DecoderLayer: the layers whose layer_types entry is attention_other_setting.attention_type take its
num_attention_heads, num_attention_groups and head_dim; sliding layers slide over sliding_window; q_norm, k_norm and a
head-wise gate g_proj), and their configs (transformers_utils/configs/step3_vl.py, step3p5.py). Pure: dicts in.
"""

from __future__ import annotations

from typing import Any

from calc.errors import InputError
from calc.model_spec import MAX_LAYERS

STEP_TYPES = ("step3_text", "step3p5")


def _moe_layers(cfg: dict, n: int) -> None:
    """moe_layers_enum: the MoE layers' indices as a comma-separated string (vLLM: int(i) for i in split(',')); without
    it vLLM makes every layer but the first MoE."""
    spec = cfg.pop("moe_layers_enum", None)
    if spec is None:
        moe = set(range(1, n))
    elif isinstance(spec, str):
        try:
            moe = {int(x) for x in spec.strip().split(",") if x.strip()}
        except ValueError:
            raise InputError("moe_layers_enum", 'expected layer indices separated by commas, e.g. "3,4,5"') from None
    elif isinstance(spec, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
        moe = set(spec)
    else:
        raise InputError("moe_layers_enum", 'expected layer indices separated by commas, e.g. "3,4,5"')
    if any(not 0 <= i < n for i in moe):
        raise InputError("moe_layers_enum", f"names a layer outside 0 … {n - 1} (num_hidden_layers is {n})")
    cfg.setdefault("mlp_layer_types", ["moe" if i in moe else "dense" for i in range(n)])


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def stepfun(cfg: dict, mt: str, assumptions: list[str]) -> None:
    """Step-3 (step3_text) and Step-3.5 (step3p5) → the standard fields, in place."""
    n = cfg.get("num_hidden_layers")
    if not _whole(n) or n > MAX_LAYERS:
        raise InputError("num_hidden_layers", f"expected a whole number of layers from 1 to {MAX_LAYERS:,}")
    groups = cfg.pop("num_attention_groups", None)
    if mt == "step3_text":
        if groups not in (None, 1):
            raise InputError("num_attention_groups", f"Step-3 keeps one KV head (vLLM step3_text.py raises on any "
                             f"other count); got {groups}")  # fmt: skip
        cfg["num_key_value_heads"] = 1
        assumptions.append("Step-3: vLLM keeps qkv_proj (hidden → share_q_dim + 2 · head_dim) whole on every TP rank "
                           "(ReplicatedLinear); the weights per GPU are planned as if it were split (61 layers × "
                           "7,168 × 2,560 = 1.12 B parameters: at TP 8, about 1.8 GiB per GPU more than shown)")  # fmt: skip
    elif groups is not None:
        cfg.setdefault("num_key_value_heads", groups)
    if cfg.get("moe_num_experts") is not None and cfg.get("use_moe", True) is not False:
        cfg.setdefault("num_experts", cfg.pop("moe_num_experts"))
        cfg.setdefault("num_experts_per_tok", cfg.pop("moe_top_k", None))
        share = cfg.pop("share_expert_dim", None)
        if share is not None:  # one shared MLP of share_expert_dim beside the routed experts in every MoE layer
            cfg.setdefault("shared_expert_intermediate_size", share)
        _moe_layers(cfg, n)
    if mt == "step3p5":
        _step3p5(cfg, n, assumptions)


def _step3p5(cfg: dict, n: int, assumptions: list[str]) -> None:
    lt = cfg.get("layer_types")
    if isinstance(lt, list) and len(lt) > n:  # the list runs on over the MTP layers (num_nextn_predict_layers)
        cfg["layer_types"], cfg["mtp_layer_types"] = lt[:n], lt[n:]
    cfg["use_head_wise_attn_gate"] = bool(cfg.get("use_head_wise_attn_gate"))
    other = cfg.pop("attention_other_setting", None)
    if other is not None:
        if not isinstance(other, dict):
            raise InputError("attention_other_setting", "expected an object (attention_type, num_attention_heads, …)")
        kind = other.get("attention_type", "sliding_attention")
        used = isinstance(cfg.get("layer_types"), list) and kind in cfg["layer_types"]
        if used and kind != "sliding_attention":
            raise InputError("attention_other_setting.attention_type", f"'{str(kind)[:40]}': only other settings "
                             "for the sliding_attention layers are modelled")  # fmt: skip
        if used:
            kv, dim = other.get("num_attention_groups"), other.get("head_dim")
            if (kv, dim) != (cfg.get("num_key_value_heads") if kv is not None else None,
                             cfg.get("head_dim") if dim is not None else None):  # fmt: skip
                raise InputError("attention_other_setting", "Step-3.5 with sliding layers of another KV head count or "
                                 "head size than its full layers keeps two page sizes, which this planner does not "
                                 "model; it refuses rather than plan it wrong")  # fmt: skip
            heads = other.get("num_attention_heads")
            if heads is not None and heads != cfg.get("num_attention_heads"):
                if not _whole(heads):
                    raise InputError("attention_other_setting.num_attention_heads", "expected a whole number ≥ 1")
                cfg["swa_num_attention_heads"] = heads
    if cfg.get("num_nextn_predict_layers"):
        assumptions.append(f"the {cfg['num_nextn_predict_layers']} MTP layers (num_nextn_predict_layers) load only as "
                           "a speculative-decoding draft (speculative_method mtp)")  # fmt: skip
