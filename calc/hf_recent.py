"""Family rules for the 2026 config.json layouts: Nemotron 3 (transformers 5's `layers_block_type` list), Qwen3.5's
state dtype, poolside's Laguna, and the families whose KV layout this planner does not model, refused by name.

Each rule rewrites the config dict in place into the fields ModelSpec reads (as calc.hf_families does), or raises an
InputError naming the family. Sources: vLLM's model_executor/models/*.py and models/config.py. Pure: dicts in, dicts
out.
"""

from __future__ import annotations

from calc.errors import InputError
from calc.model_spec import MAX_LAYERS

NEMOTRON_BLOCKS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
"""transformers 5 NemotronHConfig.layers_block_type → the hybrid_override_pattern letter vLLM's nemotron_h.py reads."""
NOT_MODELLED = {
    "deepseek_v4": "DeepSeek-V4 keeps a compressed sparse KV cache (compress_ratios, a sliding window and an indexer per "
                   "layer: vLLM models/deepseek_v4)",
    "deepseek_ref": "DeepSeek-V4 (reference layout) keeps a compressed sparse KV cache (compress_ratios, a sliding "
                    "window and an indexer per layer: vLLM models/deepseek_v4)",
    "gemma4_text": "Gemma 4 gives its full-attention layers another head size and KV head count (global_head_dim, "
                   "num_global_key_value_heads, attention_k_eq_v) than its sliding ones (vLLM gemma4.py)",
    "minimax_m3_vl": "MiniMax-M3 mixes sparse-attention layers (sparse_attention_config) into its stack (vLLM "
                     "models/minimax_m3)",
    "minimax_m3": "MiniMax-M3 mixes sparse-attention layers (sparse_attention_config) into its stack (vLLM "
                  "models/minimax_m3)",
    "mimo_v2_flash": "MiMo-V2-Flash's sliding layers have other KV heads than its full ones (swa_num_key_value_heads) "
                     "and keys wider than values (head_dim 192, v_head_dim 128) (vLLM mimo_v2.py)",
    "kimi_k3": "Kimi-K3 routes its experts in a latent space (routed_expert_hidden_size) beside MLA and Kimi Delta "
               "Attention layers (vLLM models/kimi_k3)",
    "longcat_flash": "LongCat-Flash runs two MLA attentions and two MLPs in each layer, beside experts of "
                     "expert_ffn_hidden_size and zero-computation ones (zero_expert_num) (vLLM longcat_flash.py)",
    "bailing_moe_linear": "Ring- and Ling-linear (bailing_moe_linear) run lightning (linear) attention with a "
                          "per-request state in every layer but each layer_group_size-th, softmax attention there "
                          "(SGLang bailing_moe_linear.py); this config's layer pattern is not read",
    "phi4flash": "Phi-4-mini-flash (SambaY) shares one full-attention layer's KV across its upper half (YOCO) beside "
                 "sliding-window, Mamba and gated-memory layers (vLLM phi4flash.py)",
}  # fmt: skip
"""vLLM serves these; their KV layout (or expert shapes) is one this planner does not model, so it refuses rather than
plan a wrong number."""


UNSERVED = {"bitnet": "BitNet b1.58 (ternary weights): vLLM has no model class for it (no BitNetForCausalLM)",
            "recurrent_gemma": "RecurrentGemma (Griffin's recurrent blocks beside local attention): vLLM has no model "
                               "class for it ('RecurrentGemmaForCausalLM' is not supported, vllm-project/vllm#5431)"}
"""Families vLLM cannot serve at all: no server to plan."""


def refuse_unmodelled(mt: str, wrapper: str | None) -> None:
    for t in (mt, wrapper):
        if t in UNSERVED:
            raise InputError("model_type", f"'{t}': {UNSERVED[t]}, so there is no server to plan")
        if t in NOT_MODELLED:
            raise InputError("model_type", f"'{t}': {NOT_MODELLED[t]}, which this planner does not model; it refuses "
                             "rather than plan it wrong")  # fmt: skip


def nemotron_blocks(cfg: dict) -> None:
    """Nemotron 3 (transformers 5): `layers_block_type` lists each layer's mixer ('mamba', 'attention', 'mlp', 'moe')
    and num_hidden_layers is its length (Ultra states none); vLLM's NemotronHConfig reads it as the
    hybrid_override_pattern."""
    blocks = cfg.pop("layers_block_type", None)
    if blocks is None or cfg.get("hybrid_override_pattern") is not None:
        return
    if not isinstance(blocks, list) or not 0 < len(blocks) <= MAX_LAYERS or \
            any(not isinstance(b, str) or b not in NEMOTRON_BLOCKS for b in blocks):  # fmt: skip  # [1] is unhashable
        raise InputError("layers_block_type", "expected one entry per layer, each 'mamba', 'attention', 'mlp' or 'moe'")
    n = cfg.setdefault("num_hidden_layers", len(blocks))
    if n != len(blocks):
        raise InputError("layers_block_type", f"has {len(blocks)} entries, num_hidden_layers is {n}")
    cfg["hybrid_override_pattern"] = "".join(NEMOTRON_BLOCKS[b] for b in blocks)


def qwen3_5_state_dtype(cfg: dict) -> None:
    """Qwen3.5: vLLM's Qwen3_5ForConditionalGenerationConfig (models/config.py) sets mamba_ssm_cache_dtype 'auto' to
    the checkpoint's mamba_ssm_dtype (float32 in every Qwen3.5 config): the gated-DeltaNet recurrent state is fp32."""
    dtype = cfg.pop("mamba_ssm_dtype", None)
    if dtype is not None:
        cfg.setdefault("mamba_ssm_cache_dtype", dtype)


def glm_moe_dsa(cfg: dict, assumptions: list[str]) -> None:
    """GLM-5 (GlmMoeDsaForCausalLM): vLLM serves it with deepseek_v2.py as DeepSeek-V3.2 (MLA with a lightning
    indexer); GLM-5.1/5.2 spell a MoE layer 'sparse' in mlp_layer_types and an MLA layer 'deepseek_sparse_attention' in
    layer_types."""
    mlp = cfg.get("mlp_layer_types")
    if isinstance(mlp, list):
        cfg["mlp_layer_types"] = ["moe" if t == "sparse" else t for t in mlp]
    lt = cfg.get("layer_types")
    if isinstance(lt, list):
        cfg["layer_types"] = ["full_attention" if t == "deepseek_sparse_attention" else t for t in lt]
    shared = cfg.pop("indexer_types", None)
    if isinstance(shared, list) and "shared" in shared:
        assumptions.append(f"indexer_types: {shared.count('shared')} of {len(shared)} layers reuse another layer's "
                           "indexer; the indexer's 132 B/token is counted in every layer here (an overestimate of at "
                           "most 132 B per such layer)")  # fmt: skip


LAGUNA_GATES = (True, False, "per-head")


def laguna(cfg: dict) -> None:
    """poolside Laguna (LagunaForCausalLM; vLLM models/laguna.py): query heads per layer (num_attention_heads_per_layer:
    Laguna-XS.2 48 on its 10 full layers, 64 on its 30 sliding ones, all with 8 KV heads of 128), a softplus gate per
    query head on the attention output (`gating` true or "per-head": g_proj, hidden → heads, every layer), q/k norms,
    a sigmoid router with an e_score_correction_bias and one shared expert. vLLM reads its MoE layers from
    mlp_only_layers and decoder_sparse_step (its LagunaConfig defaults: [0] and 1), not from mlp_layer_types, whose
    'dense' / 'sparse' it ignores."""
    n = cfg.get("num_hidden_layers")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= MAX_LAYERS:
        return  # the field's own validation names the problem
    cfg.pop("mlp_layer_types", None)
    cfg.setdefault("mlp_only_layers", [0])
    cfg.setdefault("decoder_sparse_step", 1)
    gating = cfg.pop("gating", False)
    if gating not in LAGUNA_GATES or isinstance(gating, int) and not isinstance(gating, bool):
        raise InputError("gating", "expected true or \"per-head\" (one gate per query head) or false; a gate per "
                         f"element is not modelled (got {str(gating)[:40]!r})")  # fmt: skip
    cfg["use_head_wise_attn_gate"] = gating is not False
    heads = cfg.pop("num_attention_heads_per_layer", None)
    if heads is None:
        return
    if not isinstance(heads, list) or len(heads) != n or \
            any(not isinstance(h, int) or isinstance(h, bool) or h < 1 for h in heads):  # fmt: skip
        raise InputError("num_attention_heads_per_layer", f"expected {n} whole numbers ≥ 1, one per layer")
    types = cfg.get("layer_types")
    kinds = types if isinstance(types, list) and len(types) == n else ["full_attention"] * n
    full = {h for h, t in zip(heads, kinds, strict=True) if t != "sliding_attention"}
    sliding = {h for h, t in zip(heads, kinds, strict=True) if t == "sliding_attention"}
    if len(full) > 1 or len(sliding) > 1:
        raise InputError("num_attention_heads_per_layer", "one head count for the full-attention layers and one for "
                         f"the sliding ones is modelled; got {sorted(full)} and {sorted(sliding)}")  # fmt: skip
    cfg["num_attention_heads"] = next(iter(full or sliding))
    if sliding and sliding != {cfg["num_attention_heads"]}:
        cfg["swa_num_attention_heads"] = next(iter(sliding))


OMNI_NOTE = ("an omni checkpoint: its thinker (the language model and its encoders) is planned, as vLLM serves it; "
             "the talker and code2wav (speech output) are not loaded by vLLM")
"""Omni checkpoints (thinker, talker, code2wav): vLLM serves the thinker alone (qwen3_omni_moe_thinker.py loads with
`"talker.": None, "code2wav.": None`; the Qwen3-Omni model card: "vLLM serve for Qwen3-Omni currently only supports
the thinker model") and sizes the KV cache from thinker_config.text_config (its get_text_config())."""
AUDIO_FIELDS = ("d_model", "encoder_layers", "encoder_ffn_dim", "num_mel_bins", "downsample_hidden_size", "output_dim")


def omni_thinker(config: dict, assumptions: list[str]) -> dict:
    """An omni checkpoint's config as the thinker vLLM serves: thinker_config's text, vision and audio configs, with
    the checkpoint's name, dtype and quantization."""
    thinker = config["thinker_config"]
    if not isinstance(thinker.get("text_config"), dict):
        raise InputError("thinker_config.text_config", "expected the thinker's language model as an object (Qwen3-Omni's "
                         "thinker_config holds text_config, vision_config and audio_config)")  # fmt: skip
    outer = {k: config[k] for k in ("torch_dtype", "dtype", "quantization_config", "_name_or_path") if k in config}
    assumptions.append(OMNI_NOTE)
    out = {**thinker, **outer, "architectures": config.get("architectures") or thinker.get("architectures")}
    return {k: v for k, v in out.items() if v is not None}


def audio_tower(a: object, assumptions: list[str]) -> dict | None:
    """audio_config as calc.model_spec.AudioConfig where it is Qwen3-Omni's encoder (the one whose layout is
    counted); otherwise a note that the audio encoder is not counted."""
    if isinstance(a, dict) and a.get("model_type") == "qwen3_omni_moe_audio_encoder" and all(
            isinstance(a.get(k), int) and not isinstance(a.get(k), bool) for k in AUDIO_FIELDS):  # fmt: skip
        return {"model_type": a["model_type"], **{k: a[k] for k in AUDIO_FIELDS}}
    assumptions.append("audio_config (an audio encoder) is not counted: its weights and its profiling are missing")
    return None
