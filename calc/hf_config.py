"""One general reader of a Hugging Face config.json → ModelSpec, for any decoder family vLLM serves.

- Multimodal wrappers (`text_config`, `llm_config`, `language_config`) are unwrapped; the wrapper's dtype,
  quantization and vision tower (`vision_config`) are kept.
- Family spellings of the same quantity are mapped onto one name (table `ALIASES`; Granite's `mamba_d_state` is
  `ssm_state_size`, GPT-2's `n_layer` is `num_hidden_layers`, …); NAS `block_configs` become per-layer KV heads
  and MLP widths; family defaults that a config leaves to its transformers class are filled in (`FAMILY_DEFAULTS`).
- An unknown `model_type` with the standard fields is accepted, and the spec's `assumptions` say what was assumed;
  only a config without the fields that matter is refused, naming them.
Pure: a dict in, a ModelSpec (or an InputError naming the field) out.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError

from calc.errors import InputError, describe
from calc.hf_families import adapt, img_processor_tower, vision_defaults
from calc.hf_quant import quantization, quantized_name
from calc.hf_recent import audio_tower, omni_thinker
from calc.model_spec import MAX_LAYERS, ModelSpec, VisionConfig
from calc.params import NON_GATED_ACTS, count_params
from calc.weights import SIZED_DTYPES, SIZED_METHODS

WRAPPERS = ("text_config", "llm_config", "language_config")
ALIASES = {  # family spelling → the name ModelSpec uses
    "n_layer": "num_hidden_layers", "n_layers": "num_hidden_layers", "num_layers": "num_hidden_layers",
    "n_embd": "hidden_size", "d_model": "hidden_size", "n_head": "num_attention_heads",
    "n_inner": "intermediate_size", "ffn_hidden_size": "intermediate_size",
    "padded_vocab_size": "vocab_size", "num_shared_experts": "n_shared_experts",
    "num_kv_heads": "num_key_value_heads", "n_head_kv": "num_key_value_heads", "multi_query_group_num": "num_key_value_heads",
    "num_multi_query_heads": "num_key_value_heads",  # CogVLM2
    "mtp_num_hidden_layers": "num_nextn_predict_layers",  # Qwen3-Next, Qwen3.5
    "kv_channels": "head_dim", "attention_head_dim": "head_dim", "experts_per_token": "num_experts_per_tok", "moe_topk": "num_experts_per_tok",
    "num_experts_per_token": "num_experts_per_tok", "dtype": "torch_dtype", "tie_embedding": "tie_word_embeddings",
    "mamba_n_heads": "mamba_num_heads", "mamba_d_head": "mamba_head_dim", "mamba_d_state": "ssm_state_size",
    "mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_d_ssm": "mamba_intermediate_size",
    "moe_shared_expert_intermediate_size": "shared_expert_intermediate_size",
    "shared_intermediate_size": "shared_expert_intermediate_size", "time_step_rank": "mamba_dt_rank",
    "num_dense_layers": "first_k_dense_replace",  # LFM2-MoE, Arcee AFMoE: a dense MLP below it, MoE from it on
}  # fmt: skip
PURE_MAMBA_ALIASES = {"state_size": "ssm_state_size", "expand": "mamba_expand", "num_heads": "mamba_num_heads",
                      "head_dim": "mamba_head_dim", "intermediate_size": "mamba_intermediate_size"}  # fmt: skip
VISION_ALIASES = {"depth": "num_hidden_layers", "num_heads": "num_attention_heads", "in_chans": "in_channels",
                  "num_channels": "in_channels",
                  # Kimi-K2.5's MoonViT (vision_config vt_*)
                  "vt_hidden_size": "hidden_size", "vt_intermediate_size": "intermediate_size",
                  "vt_num_attention_heads": "num_attention_heads", "vt_num_hidden_layers": "num_hidden_layers"}  # fmt: skip
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text", "gemma3n_text", "opt", "cohere", "cohere2", "gpt_bigcode",
                   "bloom", "mpt", "gpt2", "smollm3", "lfm2_moe")  # fmt: skip
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"vocab_size": 262208, "max_position_embeddings": 131072, "sliding_window_pattern": 6,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256},  # Gemma3TextConfig
    "llama4_text": {"n_shared_experts": 1},  # one shared expert of intermediate_size per MoE layer
    "cohere2": {"sliding_window_pattern": 4},
    "starcoder2": {"attention_bias": True},
    "falcon": {"max_position_embeddings": 2048},  # FalconConfig
    "bamba": {"max_position_embeddings": 262144},  # BambaConfig
    "ernie4_5_moe": {"max_position_embeddings": 131072},  # Ernie4_5_MoeConfig
    "qwen3_next": {"num_nextn_predict_layers": 1},  # vLLM Qwen3NextMTP: getattr(config, "num_nextn_predict_layers", 1)
}
KNOWN = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "gemma", "gemma2",
    "gemma3_text", "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "gpt_oss", "phi3", "opt", "llama4_text",
    "qwen2_5_vl_text", "qwen2_vl_text", "qwen3_vl_text", "qwen3_vl_moe_text", "glm4_moe", "minimax_m2",
    "ministral3", "nemotron_h", "nemotron-nas", "granitemoehybrid", "exaone4", "cohere", "cohere2", "olmo2", "olmo3",
    "starcoder2", "internlm2", "baichuan", "falcon_h1", "jamba", "mamba", "mamba2", "falcon_mamba", "lfm2", "lfm2_moe",
    "afmoe", "minimax",
    "bamba", "granite", "granitemoe", "phi", "ernie4_5", "ernie4_5_moe", "hunyuan_v1_dense", "seed_oss", "dbrx",
    "arctic", "falcon", "minicpm3", "olmoe", "chatglm", "gpt_bigcode", "gptj", "bloom", "gpt_neox", "nemotron",
    "persimmon", "llava", "qwen2_audio", "hunyuan", "hunyuan_v1_moe", "phi3_v", "mpt", "gpt2", "qwen", "internlm",
    "stablelm", "orion", "minicpm", "deepseek", "bailing_moe", "kimi_linear", "zamba2", "gemma3n_text",
    "qwen3_5_text", "qwen3_5_moe_text", "glm_moe_dsa", "step3_text", "step3p5", "glm4v_text", "glm4v_moe_text",
    "laguna", "smollm3", "dots1", "glm4", "exaone", "bailing_moe_v2", "phimoe", "minimax_text_01", "apertus", "arcee",
    "qwen3_omni_moe_text",
)  # fmt: skip
TEXT_TYPES = {"gemma3": "gemma3_text", "gemma3n": "gemma3n_text", "llama4": "llama4_text",
              "qwen2_5_vl": "qwen2_5_vl_text", "qwen2_vl": "qwen2_vl_text", "qwen3_vl": "qwen3_vl_text",
              "qwen3_vl_moe": "qwen3_vl_moe_text", "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text",
              "gemma4": "gemma4_text", "qwen3_omni_moe_thinker": "qwen3_omni_moe_text"}  # fmt: skip
REQUIRED = ("num_hidden_layers", "hidden_size", "vocab_size")
VISION_TYPE_OF = {"qwen3_vl_text": "qwen3_vl", "qwen3_vl_moe_text": "qwen3_vl_moe", "qwen2_vl_text": "qwen2_vl",
                  "qwen2_5_vl_text": "qwen2_5_vl", "qwen3_omni_moe_thinker": "qwen3_omni_moe_vision_encoder",
                  "qwen3_omni_moe_text": "qwen3_omni_moe_vision_encoder"}  # fmt: skip
"""A checkpoint's (or its language model's) type → its vision tower's, for a vision_config that does not state it."""
ENCODER_DECODERS = ("t5", "mt5", "umt5", "longt5", "bart", "mbart", "whisper", "pegasus", "marian", "m2m_100", "led",
                    "blenderbot", "nllb-moe", "seamless_m4t", "switch_transformers")  # fmt: skip
"""Families with an encoder and a cross-attending decoder, whose configs may not say is_encoder_decoder."""
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
"""vLLM's _get_and_verify_max_len reads every one of these a config states and takes the smallest."""
NO_LENGTH_KEY = 10_485_760
"""max_position_embeddings for a config without a length key: no limit that a max_model_len meets (vLLM's
_get_and_verify_max_len returns the max_model_len it is given), the largest a shipped model states (Llama 4 Scout)."""


def _unwrap(config: dict) -> tuple[dict, dict | None, str | None]:
    """(language-model config, vision config, wrapper model_type)."""
    for key in WRAPPERS:
        text = config.get(key)
        if isinstance(text, dict):
            outer = {k: config[k] for k in ("architectures", "torch_dtype", "dtype", "quantization_config",
                                             "tie_word_embeddings", "_name_or_path") if k in config}  # fmt: skip
            cfg = {**{k: v for k, v in text.items() if v is not None}, **outer}
            wrapper = config.get("model_type")
            if not cfg.get("model_type"):
                cfg["model_type"] = TEXT_TYPES.get(str(wrapper), wrapper)
            defaults = cfg.pop("_defaults_from_Gemma3TextConfig", None) or {}
            if not isinstance(defaults, dict):
                raise InputError(f"{key}._defaults_from_Gemma3TextConfig", "expected an object of field: value")
            for k, v in defaults.items():
                cfg.setdefault(k, v)
            vision = config.get("vision_config")
            return cfg, vision if isinstance(vision, dict) else None, str(wrapper) if wrapper else None
    vision = config.get("vision_config")
    return dict(config), vision if isinstance(vision, dict) else None, None


def _rope(raw: Any) -> dict | None:
    """rope_scaling (or transformers v5's rope_parameters, per layer type or not) → ModelSpec.rope_scaling: its type
    ('type' read as rope_type, as vLLM's patch_rope_scaling does), factor and original_max_position_embeddings."""
    if not isinstance(raw, dict):
        return None
    if not any(k in raw for k in ("rope_type", "type", "factor")):  # {"full_attention": {...}, "sliding_attention": …}
        raw = raw.get("full_attention") if isinstance(raw.get("full_attention"), dict) else \
            next((v for v in raw.values() if isinstance(v, dict)), {})  # fmt: skip
    kind = raw.get("rope_type", raw.get("type", "default"))
    kind = {"su": "longrope", "mrope": "default"}.get(kind, kind) if isinstance(kind, str) else "default"
    out: dict[str, Any] = {"rope_type": kind[:40]}
    factor, original = raw.get("factor"), raw.get("original_max_position_embeddings")
    if factor is not None:
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 10_000:
            raise InputError("config.json: rope_scaling.factor", "expected a number above 0 and at most 10,000, such "
                             f"as 2.0 or 4.0 (got {str(factor)[:20]!r})")  # fmt: skip
        out["factor"] = float(factor)
    if isinstance(original, int) and not isinstance(original, bool) and 0 < original <= 2**31:
        out["original_max_position_embeddings"] = original
    return out


def _nas(cfg: dict) -> None:
    """DeciLM / Nemotron-NAS `block_configs` → per-layer KV heads and MLP widths (vLLM's nemotron_nas.py)."""
    blocks = cfg.pop("block_configs", None)
    if not isinstance(blocks, list) or not blocks:
        return
    H, heads = cfg.get("hidden_size"), cfg.get("num_attention_heads")
    kv, ffn = [], []
    for b in blocks[:MAX_LAYERS]:
        att, mlp = _block_part(b, "attention"), _block_part(b, "ffn")
        no_attn = att.get("no_op") or att.get("replace_with_linear")
        group = att.get("n_heads_in_group") or 1
        if not _positive_int(group):
            raise InputError("block_configs.attention.n_heads_in_group", "expected a whole number ≥ 1")
        kv.append(0 if no_attn or not _positive_int(heads) else heads // group)
        if mlp.get("no_op") or mlp.get("replace_with_linear") or not isinstance(H, int):
            ffn.append(0)
        else:  # DeciLM _ffn_mult_to_intermediate_size: 2/3 · mult · hidden, rounded up to a multiple of 256
            mult = mlp.get("ffn_mult") or 0
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not 0 <= mult <= 1e6:
                raise InputError("block_configs.ffn.ffn_mult", "expected a number from 0 to 1,000,000")
            width = int(2 * mult * H / 3)
            ffn.append(math.ceil(width / 256) * 256)
    cfg["kv_heads_per_layer"], cfg["intermediate_size_per_layer"] = kv, ffn
    cfg["num_key_value_heads"] = max(kv) or None
    cfg["intermediate_size"] = max(ffn) or None


def _block_part(block: Any, part: str) -> dict:
    if not isinstance(block, dict):
        raise InputError("block_configs", "expected a list of objects, each with attention and ffn")
    x = block.get(part) or {}
    if not isinstance(x, dict):
        raise InputError(f"block_configs.{part}", "expected an object (no_op, replace_with_linear, …)")
    return x


def _positive_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _layers_from_indices(cfg: dict, mt: str) -> None:
    """Families that list their attention layers by index: Bamba (attn_layer_indices), LFM2 (full_attn_idxs),
    MiniMax-Text-01 (attn_type_list: 1 softmax, 0 lightning); AFMoE by a period (global_attn_every_n_layers: every
    n-th layer full attention, the others its sliding window)."""
    n = cfg.get("num_hidden_layers")
    if not isinstance(n, int) or cfg.get("layer_types") is not None or not 0 < n <= MAX_LAYERS:
        return
    if isinstance(cfg.get("attn_type_list"), list):
        t = cfg["attn_type_list"]
        if not t:
            raise InputError("attn_type_list", "expected one entry per layer: 1 (softmax attention) or 0 (lightning)")
        cfg["layer_types"] = ["full_attention" if t[i % len(t)] else "linear_attention" for i in range(n)]
    idx = cfg.get("attn_layer_indices") if mt != "falcon_h1" else None
    if isinstance(idx, list):
        idx = layer_indices(idx)
        cfg["layer_types"] = ["full_attention" if i in idx else "mamba" for i in range(n)]
    if isinstance(cfg.get("full_attn_idxs"), list):
        idx = layer_indices(cfg["full_attn_idxs"])
        cfg["layer_types"] = ["full_attention" if i in idx else "conv" for i in range(n)]
    g = cfg.get("global_attn_every_n_layers")  # Arcee AFMoE: transformers' AfmoeConfig fills layer_types so
    if _positive_int(g) and cfg.get("sliding_window") and "layer_types" not in cfg:
        cfg["layer_types"] = ["sliding_attention" if (i + 1) % g else "full_attention" for i in range(n)]


def layer_indices(items: list) -> frozenset:
    """A config's list of layer indices as a set, read once: a membership test per layer in the list itself cost
    layers × entries (a 1 MB config.json listing 195,000 indices took 2.2 s of CPU). Entries that are not numbers
    name no layer (as `i in list` found none for them)."""
    return frozenset(x for x in items if isinstance(x, (int, float)) and not isinstance(x, bool))


def _vision(v: dict | None, model_type: str) -> dict | None:
    """vision_config as calc.model_spec.VisionConfig (its model_type, where unstated, the checkpoint's), or None
    where it does not give the tower's size."""
    if not v:
        return None
    own = {VISION_ALIASES.get(k, k): val for k, val in v.items() if val is not None}  # a null model_type is unstated
    out = {"model_type": VISION_TYPE_OF.get(model_type, model_type), **own}
    keep = set(VisionConfig.model_fields)
    out = {k: val for k, val in out.items() if k in keep and val is not None}
    if not all(k in out for k in ("hidden_size", "intermediate_size", "num_hidden_layers")):
        return None
    if isinstance(out.get("image_size"), list) and out["image_size"]:  # [height, width]; an empty one fails validation
        out["image_size"] = out["image_size"][0]
    return out


def one_line(text: str) -> str:
    """The text without newlines or other control characters (a name that reaches a shell script's comment, a
    title), its runs of spaces joined."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def _display_name(hf_id: str | None) -> str | None:
    """A readable name from _name_or_path: 'Qwen/Qwen2-VL-7B-Instruct' as it is, a local cache path's repo
    ('…/models--Qwen--Qwen2-VL-7B-Instruct/snapshots/…' → 'Qwen/Qwen2-VL-7B-Instruct'), else its last part."""
    if not hf_id:
        return None
    cached = re.search(r"models--([^/]+?)--([^/]+)", hf_id)
    if cached:
        return f"{cached.group(1)}/{cached.group(2)}"
    if hf_id.startswith(("/", ".", "~")):
        return hf_id.rstrip("/").rsplit("/", 1)[-1] or None
    return hf_id


EXPERT_COUNTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok")


def _no_experts(cfg: dict, mt: str, assumptions: list[str]) -> None:
    """A count of 0 experts is a dense model saying so: Granite 4.0's dense checkpoints (granite-4.0-micro,
    -h-micro) carry "num_local_experts": 0 and "num_experts_per_tok": 0. The fields are dropped; GraniteMoeHybrid's
    MLP is then its shared MLP alone (vLLM builds the routed block only for num_local_experts > 0), a gated MLP of
    shared_intermediate_size, which becomes the dense width."""
    zero = [k for k in EXPERT_COUNTS if type(cfg.get(k)) is int and cfg[k] == 0]
    if not zero or any(type(cfg.get(k)) is int and cfg[k] > 0 for k in EXPERT_COUNTS[:4]):
        return
    for k in zero:
        cfg.pop(k)
    if mt == "granitemoehybrid" and type(cfg.get("shared_intermediate_size")) is int and cfg["shared_intermediate_size"] > 0:
        cfg["intermediate_size"] = cfg.pop("shared_intermediate_size")
        assumptions.append("no routed experts (num_local_experts 0): each layer's MLP is its shared MLP, of "
                           f"shared_intermediate_size {cfg['intermediate_size']:,}")  # fmt: skip


def model_from_hf_config(config: Any, name: str | None = None, source: str = "uploaded config.json") -> ModelSpec:
    """Build a ModelSpec from a parsed config.json."""
    if not isinstance(config, dict):
        raise InputError("config.json", "expected a JSON object")
    if config.get("is_encoder_decoder") is True or str(config.get("model_type")) in ENCODER_DECODERS:
        raise InputError("is_encoder_decoder", "an encoder-decoder model (T5, BART, Whisper) keeps a cross-attention KV "
                         "per request beside its decoder's, which this planner does not model: it plans decoder-only "
                         "models")  # fmt: skip
    assumptions: list[str] = []
    plain_name = None  # what to call a config that names no checkpoint: its model_type (an omni one's, not its thinker's)
    if isinstance(config.get("thinker_config"), dict) and not all(k in config for k in REQUIRED):
        plain_name = one_line(str(config.get("model_type") or ""))[:60] or None
        config = omni_thinker(config, assumptions)
    cfg, vision, wrapper = _unwrap(config)
    vision = vision or img_processor_tower(config)
    if not isinstance(cfg.get("model_type") or "", str):  # a list or an object was named "['x']"
        raise InputError("model_type", "expected the architecture's name as text, e.g. 'llama' or 'qwen3_moe'")
    mt = str(cfg.get("model_type") or "")[:60]
    if not mt:
        mt = "unknown"
        assumptions.append("config.json names no model_type: read as a standard decoder")
    if mt in ("mamba", "mamba2", "falcon_mamba"):
        cfg = {PURE_MAMBA_ALIASES.get(k, k): v for k, v in cfg.items()}
    if mt == "nemotron_h" and "expand" in cfg:
        cfg["mamba_expand"] = cfg.pop("expand")
    if wrapper is None and mt in TEXT_TYPES:  # the flat layout of a multimodal checkpoint (Qwen2-VL's own)
        mt = TEXT_TYPES[mt]
    adapt(cfg, mt, assumptions, wrapper)
    audio = audio_tower(config["audio_config"], assumptions) if isinstance(config.get("audio_config"), dict) else None
    towers = [k for k in ("embd_layer", "audio_processor", "vision_lora", "speech_lora") if isinstance(config.get(k), dict)]
    if towers:  # Phi-4-multimodal: its image and audio encoders and LoRA adapters sit in these
        assumptions.append(f"{', '.join(towers)} (image or audio encoders, LoRA adapters) are not counted: the "
                           "weights and the profiling are the language model's alone")  # fmt: skip
    _no_experts(cfg, mt, assumptions)
    for old, new in ALIASES.items():
        if old in cfg and cfg.get(new) is None:
            cfg[new] = cfg.pop(old)
    lengths = [cfg.pop(k) for k in LENGTH_KEYS[1:] if k in cfg] + [cfg.get("max_position_embeddings")]
    lengths = [v for v in lengths if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if lengths:
        cfg["max_position_embeddings"] = min(lengths)
    cfg["model_type"] = mt
    for k, v in FAMILY_DEFAULTS.get(mt, {}).items():
        cfg.setdefault(k, v)
    _nas(cfg)
    _layers_from_indices(cfg, mt)
    if "sliding_window_size" in cfg and cfg.get("sliding_window") is None:
        cfg["sliding_window"] = cfg["sliding_window_size"]
    if isinstance(cfg.get("torch_dtype"), str):
        cfg["torch_dtype"] = {"float": "float32", "half": "float16"}.get(cfg["torch_dtype"], cfg["torch_dtype"])
        cfg["torch_dtype"] = (cfg["torch_dtype"].split() or [""])[0]
        if cfg["torch_dtype"] not in ("bfloat16", "float16", "float32"):
            assumptions.append(f"torch_dtype '{cfg['torch_dtype'][:20]}' read as bfloat16")
            cfg["torch_dtype"] = "bfloat16"
    if cfg.get("tie_word_embeddings") is None:
        cfg["tie_word_embeddings"] = mt in TIED_BY_DEFAULT
    quant_word = quantized_name(name, config)
    if quant_word and cfg.get("quantization_config") is None and config.get("quantization_config") is None:
        closest = "fp8" if "8" in quant_word and quant_word != "INT8" else "int8" if quant_word == "INT8" else "int4"
        assumptions.append(f"the name says {quant_word} but config.json carries no quantization_config (such "
                           "checkpoints keep it in hf_quant_config.json, which vLLM reads, and `calc plan` does beside the config.json "
                           "it is given, as the page does when both are uploaded): the weights are planned at "
                           f"torch_dtype here; dtype {closest} is the nearest this planner sizes")  # fmt: skip
    if cfg.get("quantization_config") is not None:
        cfg["quantization_config"] = quantization(cfg["quantization_config"])
        method = cfg["quantization_config"]["quant_method"]
        if method.lower() not in SIZED_METHODS:
            assumptions.append(f"quantization_config.quant_method '{method}' is not a format this planner sizes: the "
                               "weights are planned at torch_dtype (an overestimate); set weights_memory_bytes to the "
                               f"checkpoint's size, or a dtype it sizes ({', '.join(SIZED_DTYPES)})")  # fmt: skip
    if cfg.get("mamba_ssm_cache_dtype") not in (None, "float32", "float16", "bfloat16"):
        cfg.pop("mamba_ssm_cache_dtype")
    missing = [f for f in REQUIRED if cfg.get(f) is None]
    if missing:
        them = "them" if len(missing) > 1 else "it"
        raise InputError("config.json", f"lacks {', '.join(missing)}: cannot size this model without {them}")
    if cfg.get("max_position_embeddings") is None:  # vLLM then takes max_model_len as given (2,048 without one)
        cfg["max_position_embeddings"] = NO_LENGTH_KEY
        assumptions.append("the config has no maximum length (max_position_embeddings or the like): vLLM then takes "
                           "max_model_len as given, and assumes 2,048 tokens when none is given")  # fmt: skip
    if mt not in KNOWN:
        assumptions.append(
            f"model_type '{mt}' is not one this planner knows: read as a decoder whose layers are described by its "
            "standard fields (attention as stated, "
            + ("MLPs without a gate (its hidden_act)" if str(cfg.get("hidden_act")) in NON_GATED_ACTS else "gated SwiGLU MLPs")
            + ", biases only where attention_bias declares them); "
            "check the parameter count against "
            "the model card"
        )
    tower = _vision(vision_defaults(vision, VISION_TYPE_OF.get(wrapper or mt, wrapper or mt)) if vision else None,
                    wrapper or mt)  # fmt: skip
    if vision and tower is None:
        assumptions.append("vision_config does not give the tower's hidden_size, intermediate_size and layer count: "
                           "the vision tower vLLM loads is not counted in the weights")  # fmt: skip
    cfg["rope_scaling"] = _rope(cfg.get("rope_scaling") or cfg.get("rope_parameters"))
    keep = set(ModelSpec.model_fields) - {"name", "hf_id", "source", "assumptions", "vision_config", "audio_config"}
    data = {k: v for k, v in cfg.items() if k in keep and v is not None}
    hf_id = one_line(config.get("_name_or_path")) if isinstance(config.get("_name_or_path"), str) else None
    name = one_line(name) if name else None
    data |= {"name": (name or _display_name(hf_id) or plain_name or mt)[:120], "hf_id": hf_id[:200] if hf_id else None, "source": source,
             "assumptions": tuple(a[:300] for a in assumptions),
             "vision_config": tower, "audio_config": audio}  # fmt: skip
    if wrapper and not data.get("architectures"):
        data["architectures"] = (wrapper,)
    try:
        spec = ModelSpec.model_validate(data)
    except ValidationError as e:
        raise InputError("config.json", describe(e)) from None
    return spec if name or hf_id else _sized(spec)


def _sized(spec: ModelSpec) -> ModelSpec:
    """A config that names no checkpoint is called by its model_type, which many sizes share (every Qwen3 is
    'qwen3'): the name carries its parameter count, so a shared link says which one was planned."""
    total = count_params(spec).total
    return spec.model_copy(update={"name": f"{spec.name} ({total / 1e9:,.2f} B parameters)"[:120]})
