"""Family rules for config.json layouts that the general reader (calc.hf_config) cannot read by field names alone:
nested blocks, family spellings of MoE layouts, and fields a family's transformers class leaves to its defaults.

Each rule rewrites the config dict in place into the standard fields ModelSpec reads, and says what it assumed.
Sources: the families' transformers configuration classes and vLLM's model files (model_executor/models/*.py).
Pure: dicts in, dicts out.
"""

from __future__ import annotations

from typing import Any

from calc.errors import InputError
from calc.hf_recent import glm_moe_dsa, laguna, nemotron_blocks, qwen3_5_state_dtype, refuse_unmodelled
from calc.hf_shared import gemma3n, zamba2
from calc.hf_stepfun import STEP_TYPES, stepfun
from calc.model_spec import MAX_LAYERS

QWEN2_VL_VISION = {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "patch_size": 14,
                   "spatial_merge_size": 2, "temporal_patch_size": 2}  # fmt: skip
"""Qwen2VLVisionConfig's defaults: a saved config leaves out what equals them."""


TEXT_CLASS_DEFAULTS = {  # what a multimodal wrapper's text_config leaves to its transformers class
    "llama": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
              "vocab_size": 32000, "max_position_embeddings": 2048},  # LlamaConfig
    "qwen2": {"hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 32, "vocab_size": 151936, "max_position_embeddings": 32768},  # Qwen2Config
    "mistral": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 131072},
    # MistralConfig (llava-v1.6-mistral-7b-hf leaves these out); not its sliding_window 4,096: a null in the file
    # is dropped before this, and the text configs that omit it (v0.2 on) have none
}  # fmt: skip
WIDE_MLP = ("gptj", "bloom", "gpt2", "gpt_bigcode", "falcon", "phi-msft")
ENCODERS = ("bert", "roberta", "xlm-roberta", "distilbert", "electra", "deberta", "deberta-v2", "nomic_bert", "modernbert")
"""Encoder-only families: embeddings or classification, no decoding and no KV cache to plan."""
RECURRENT = ("rwkv", "rwkv5", "rwkv6", "rwkv7")
"""Families whose MLP is 4 × hidden_size unless n_inner / ffn_hidden_size / intermediate_size says otherwise."""


def _first(x: Any) -> Any:
    """ERNIE-4.5 lists some fields per modality (text first): the text's."""
    return x[0] if isinstance(x, list) and x else x


def _index_bound(name: str, x: Any, pick) -> Any:
    """ERNIE-4.5-VL lists a MoE layer bound per modality: the widest (`pick`: min for the start, max for the end).
    A list of anything but whole numbers is refused by name (min() of [1, 'a'] raised a TypeError)."""
    if not isinstance(x, list):
        return x
    if not x or not all(isinstance(v, int) and not isinstance(v, bool) for v in x):
        raise InputError(name, "expected a layer index or a non-empty list of layer indices (whole numbers)")
    return pick(x)


def _nested(cfg: dict, block: str) -> dict:
    x = cfg.pop(block, None) or {}
    if not isinstance(x, dict):
        raise InputError(block, "expected an object of fields")
    return x


def adapt(cfg: dict, mt: str, assumptions: list[str], wrapper: str | None = None) -> None:
    """Rewrite `cfg` (model_type `mt`; `wrapper`: the multimodal config around it, if any) into the standard fields,
    in place."""
    if wrapper is not None:
        for k, v in TEXT_CLASS_DEFAULTS.get(mt, {}).items():
            cfg.setdefault(k, v)
    if "n_embed" in cfg and cfg.get("hidden_size") is None:  # BloomConfig's old spelling
        cfg["hidden_size"] = cfg.pop("n_embed")
    if mt in WIDE_MLP and all(cfg.get(k) is None for k in ("intermediate_size", "n_inner", "ffn_hidden_size")):
        width = cfg.get("hidden_size", cfg.get("n_embd"))
        if isinstance(width, int) and not isinstance(width, bool):
            cfg["intermediate_size"] = 4 * width
    if mt in ENCODERS:
        raise InputError("model_type", f"'{mt}' is an encoder (embeddings, classification): it decodes nothing and "
                         "keeps no KV cache, so there is no serving capacity of this kind to plan")  # fmt: skip
    if mt in RECURRENT:
        raise InputError("model_type", f"'{mt}' is an RWKV recurrent network, which this planner does not model")
    if mt == "qwen" and isinstance(cfg.get("intermediate_size"), int):  # Qwen-1: the MLP's width is half of it
        cfg["intermediate_size"] //= 2  # vLLM qwen.py: QWenMLP(hidden_size, intermediate_size // 2)
    if mt == "gpt_bigcode" and cfg.get("multi_query", True):  # GPTBigCodeConfig: multi_query defaults to True
        cfg.setdefault("num_key_value_heads", 1)
    refuse_unmodelled(mt, wrapper)
    if mt == "nemotron_h":
        nemotron_blocks(cfg)
    elif mt in ("qwen3_5_text", "qwen3_5_moe_text"):
        qwen3_5_state_dtype(cfg)
    elif mt == "glm_moe_dsa":
        glm_moe_dsa(cfg, assumptions)
    elif mt == "laguna":
        laguna(cfg)
    if mt in STEP_TYPES:
        stepfun(cfg, mt, assumptions)
    if mt == "zamba2":
        zamba2(cfg, assumptions)
    elif mt == "gemma3n_text":
        gemma3n(cfg, assumptions)
    if mt == "kimi_linear":
        _kimi_linear(cfg, assumptions)
    if mt == "dbrx":  # DbrxConfig: attention and MoE fields in attn_config / ffn_config; every layer MoE
        attn, ffn = _nested(cfg, "attn_config"), _nested(cfg, "ffn_config")
        cfg.setdefault("num_attention_heads", cfg.pop("n_heads", None))
        cfg.setdefault("num_key_value_heads", attn.get("kv_n_heads", 1))
        cfg.setdefault("max_position_embeddings", cfg.pop("max_seq_len", 2048))
        cfg.setdefault("num_local_experts", ffn.get("moe_num_experts", 4))
        cfg.setdefault("num_experts_per_tok", ffn.get("moe_top_k", 1))
        cfg.setdefault("moe_intermediate_size", ffn.get("ffn_hidden_size", 3584))
    elif mt in ("ernie4_5_moe", "ernie4_5_vl_moe"):  # Ernie4_5_MoeConfig: MoE where start ≤ i ≤ end, (i+1) % interval == 0
        experts = _first(cfg.pop("moe_num_experts", None))
        if experts:
            cfg.setdefault("num_experts", experts)
            cfg.setdefault("num_experts_per_tok", cfg.pop("moe_k", 2))
            cfg.setdefault("n_shared_experts", cfg.pop("moe_num_shared_experts", 0))
            cfg["moe_intermediate_size"] = _first(cfg.get("moe_intermediate_size")) or None
            n = cfg.get("num_hidden_layers")
            start = cfg.pop("moe_layer_start_index", 1)
            end = cfg.pop("moe_layer_end_index", -1)
            step = cfg.pop("moe_layer_interval", 1)
            start = _index_bound("moe_layer_start_index", start, min)
            end = _index_bound("moe_layer_end_index", end, max)
            if isinstance(n, int) and 0 < n <= MAX_LAYERS and all(isinstance(v, int) and not isinstance(v, bool)
                                                                  for v in (start, end, step)):  # fmt: skip
                end = n - 1 if end < 0 else end  # more layers than MAX_LAYERS: num_hidden_layers is refused by name
                cfg.setdefault("mlp_layer_types", ["moe" if start <= i <= end and (i + 1) % max(step, 1) == 0
                                                   else "dense" for i in range(n)])  # fmt: skip
    elif mt == "mpt":  # MptConfig: n_heads, attn_config.kv_n_heads (GQA variants), expansion_ratio × d_model, ALiBi
        attn = _nested(cfg, "attn_config")
        cfg.setdefault("num_attention_heads", cfg.pop("n_heads", 16))
        if attn.get("kv_n_heads") is not None:
            cfg.setdefault("num_key_value_heads", attn["kv_n_heads"])
        ratio, width = cfg.pop("expansion_ratio", 4), cfg.get("hidden_size", cfg.get("d_model"))
        if isinstance(width, int) and isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio > 0:
            if not ratio * width < 2**40:  # also inf and nan
                raise InputError("expansion_ratio", f"expected a finite MLP width (expansion_ratio × d_model below "
                                 f"2^40; got {ratio:g} × {width:,})")  # fmt: skip
            cfg.setdefault("intermediate_size", int(ratio * width))
        cfg.setdefault("max_position_embeddings", cfg.pop("max_seq_len", 2048))
    elif mt == "arctic":  # ArcticConfig: a dense residual MLP beside the experts, as wide as one (vLLM arctic.py)
        cfg.setdefault("decoder_sparse_step", cfg.pop("moe_layer_frequency", 2))
        if cfg.pop("use_residual", False):
            cfg.setdefault("n_shared_experts", 1)
    elif mt == "falcon":  # FalconConfig: multi_query (Falcon-7B) means one KV head
        if cfg.get("multi_query") and cfg.get("num_kv_heads") is None and cfg.get("n_head_kv") is None \
                and not cfg.get("new_decoder_architecture"):  # fmt: skip
            cfg["num_key_value_heads"] = 1
    elif mt == "minicpm3":  # MiniCPM3Config carries no v_head_dim: vLLM takes hidden_size / heads
        h, heads = cfg.get("hidden_size"), cfg.get("num_attention_heads")
        if cfg.get("v_head_dim") is None and isinstance(h, int) and isinstance(heads, int) and heads > 0:
            cfg["v_head_dim"] = h // heads
    elif mt in ("hunyuan", "hunyuan_v1_moe"):  # vLLM hunyuan_v1.py: per-layer lists, and a shared MLP beside
        for k in ("moe_topk", "moe_intermediate_size", "num_shared_expert"):  # the experts (use_mixed_mlp_moe)
            if isinstance(cfg.get(k), list):
                cfg[k] = _first(cfg[k])
        cfg.setdefault("num_experts_per_tok", cfg.pop("moe_topk", None))
        shared = cfg.pop("num_shared_expert", 0)
        if cfg.get("use_mixed_mlp_moe") and isinstance(shared, int) and isinstance(cfg.get("intermediate_size"), int):
            cfg.setdefault("shared_expert_intermediate_size", shared * cfg["intermediate_size"])
        if cfg.get("use_cla"):
            assumptions.append(f"cross-layer attention (use_cla, share factor {cfg.get('cla_share_factor', 2)}) "
                               "reuses KV between layers: KV is counted for every layer here, an overestimate")  # fmt: skip
    elif mt == "phi3small":
        raise InputError("model_type", "Phi-3-small (phi3small) uses block-sparse attention, which this planner does "
                         "not model, and current vLLM no longer serves it")  # fmt: skip
    elif mt == "mllama_text_model" or cfg.get("cross_attention_layers"):
        raise InputError("cross_attention_layers", "Llama 3.2 Vision (mllama): its cross-attention layers keep each "
                         "request's image KV, which this planner does not model; it refuses rather than plan it wrong")  # fmt: skip


CLIP_VIT_L_336 = {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
                  "num_hidden_layers": 23, "num_attention_heads": 16, "patch_size": 14, "image_size": 336}
"""Phi-3-vision's img_processor names openai/clip-vit-large-patch14-336, which vLLM's phi3v.py builds from a fixed
config, up to the layer the features are taken from (layer_idx −2: 23 of 24)."""


def img_processor_tower(config: dict) -> dict | None:
    """A vision tower named by `img_processor` rather than described by `vision_config` (Phi-3 / 3.5-vision)."""
    p = config.get("img_processor")
    if isinstance(p, dict) and "clip-vit-large-patch14-336" in str(p.get("model_name", "")):
        return dict(CLIP_VIT_L_336)
    return None


QWEN3_VL_VISION = {"num_position_embeddings": 2304, "deepstack_visual_indexes": [8, 16, 24]}
"""Qwen3VLVisionConfig's defaults for what a trimmed vision_config leaves out: with them (and patch 16),
Qwen3-VL-235B-A22B's count is its published 235,670,022,896 (tests/test_qwen3_towers.py)."""


def vision_defaults(v: dict, model_type: str) -> dict:
    """Qwen2-VL's vision_config (embed_dim wide; its hidden_size is the projector's output): the tower's own width,
    its MLP (mlp_ratio × embed_dim) and the defaults the saved config left out."""
    if model_type in ("qwen3_vl", "qwen3_vl_moe", "qwen3_omni_moe_vision_encoder"):  # a trimmed copy: what
        return {**QWEN3_VL_VISION, **{k: x for k, x in v.items() if x is not None}}  # transformers then fills
    if model_type not in ("qwen2_vl", "qwen2_vl_text") and "embed_dim" not in v:
        return v
    v = {**QWEN2_VL_VISION, **v}
    out = dict(v)
    embed, ratio = v.get("embed_dim"), v.get("mlp_ratio")
    if isinstance(embed, int) and isinstance(ratio, (int, float)) and not isinstance(ratio, bool):
        if not 0 < ratio * embed < 2**40:  # also NaN and inf, which int() cannot take
            raise InputError("vision_config.mlp_ratio", f"expected a finite MLP width (mlp_ratio × embed_dim above 0 "
                             f"and below 2^40; got {ratio:g} × {embed:,})")  # fmt: skip
        out["out_hidden_size"] = v.get("hidden_size")
        out["hidden_size"] = embed
        out["intermediate_size"] = int(embed * ratio)
    return out


def _kimi_linear(cfg: dict, assumptions: list[str]) -> None:
    """Kimi-Linear: linear_attn_config lists (from 1) the MLA layers (full_attn_layers) and the Kimi Delta Attention
    ones (kda_layers). A KDA layer keeps a state per request shaped as a gated-DeltaNet one (vLLM kda.py: a
    num_heads × head_dim × head_dim recurrent state and short convolutions over q, k and v), so it is read as one."""
    lac, n = _nested(cfg, "linear_attn_config"), cfg.get("num_hidden_layers")
    full = lac.get("full_attn_layers")
    if not isinstance(full, list) or not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= 4096:
        return
    full = frozenset(x for x in full if isinstance(x, (int, float)) and not isinstance(x, bool))  # once: not n × len
    cfg.setdefault("layer_types", ["full_attention" if i + 1 in full else "linear_attention" for i in range(n)])
    heads, dim = lac.get("num_heads"), lac.get("head_dim")
    cfg.setdefault("mamba_ssm_cache_dtype", "float32")  # vLLM kda_state_dtype: the recurrent state is fp32 always
    for k, v in (("linear_num_key_heads", heads), ("linear_num_value_heads", heads), ("linear_key_head_dim", dim),
                 ("linear_value_head_dim", dim), ("linear_conv_kernel_dim", lac.get("short_conv_kernel_size"))):
        cfg.setdefault(k, v)
    assumptions.append("Kimi Delta Attention layers are sized as gated-DeltaNet ones (the same state per request); "
                       "their projection weights may differ slightly")
