"""Family rules for config.json layouts that share weights or KV between layers: Zamba2 and Gemma 3n.

Each rule rewrites the config dict in place into the fields ModelSpec reads (as calc.hf_families does), and says
what it assumed. Sources: transformers' Zamba2Config and Gemma3nTextConfig, vLLM's model_executor/models/zamba2.py
and gemma3n.py. Pure: dicts in, dicts out.
"""

from __future__ import annotations

from typing import Any

from calc.errors import InputError
from calc.model_spec import MAX_LAYERS

ZAMBA2_DEFAULTS = {"mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_ngroups": 1,
                   "n_mamba_heads": 8, "num_mem_blocks": 1, "adapter_rank": 128, "max_position_embeddings": 4096,
                   "hidden_size": 2560, "num_hidden_layers": 54, "num_attention_heads": 32, "vocab_size": 32000}  # fmt: skip
"""transformers Zamba2Config's defaults (what vLLM reads when a config leaves a field out)."""
ZAMBA2_FORK_NAMES = {"state_size": "mamba_d_state", "conv_dimension": "mamba_d_conv", "expansion_factor": "mamba_expand",
                     "lora_rank": "adapter_rank", "use_shared_attention_lora": "use_shared_attention_adapter"}  # fmt: skip
"""Zyphra's pre-upstream spellings (transformers 4.43 fork) → the upstream Zamba2Config names."""
GEMMA3N_DEFAULTS = {"vocab_size": 262_400, "vocab_size_per_layer_input": 262_144, "hidden_size": 2048,
                    "hidden_size_per_layer_input": 256, "intermediate_size": 16_384, "num_hidden_layers": 35,
                    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
                    "max_position_embeddings": 32_768, "sliding_window": 512, "altup_num_inputs": 4,
                    "num_kv_shared_layers": 15, "laurel_rank": 64}  # fmt: skip
"""transformers Gemma3nTextConfig's defaults (E4B)."""


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def zamba2(cfg: dict, assumptions: list[str]) -> None:
    """Zamba2: every layer is a Mamba2 layer; a `hybrid` one (layers_block_type) also runs one of num_mem_blocks
    shared transformer blocks over concat(hidden, embedding): attention 2·hidden wide in num_attention_heads heads of
    2·hidden / heads (MHA: vLLM's QKVParallelLinear is given no KV head count), KV cached per hybrid layer; Mamba2 of
    mamba_expand · hidden in n_mamba_heads heads. vLLM ties the lm_head always (zamba2.py tie_weights)."""
    fork = [old for old in ZAMBA2_FORK_NAMES if old in cfg]
    for old, new in ZAMBA2_FORK_NAMES.items():
        if old in cfg:
            cfg.setdefault(new, cfg.pop(old))
    if "use_shared_block_lora" in cfg:
        fork.append("use_shared_block_lora")
        cfg.pop("use_shared_block_lora")
    if "ffn_hidden_size" in cfg:
        cfg.setdefault("intermediate_size", cfg.pop("ffn_hidden_size"))
    for k, v in ZAMBA2_DEFAULTS.items():
        if cfg.get(k) is None and k != "n_mamba_heads":
            cfg[k] = v
    H, heads, expand = cfg["hidden_size"], cfg["num_attention_heads"], cfg["mamba_expand"]
    for name, x in (("hidden_size", H), ("num_attention_heads", heads), ("mamba_expand", expand),
                    ("num_hidden_layers", cfg["num_hidden_layers"])):
        if not _whole(x):
            raise InputError(name, "expected a whole number ≥ 1 (Zamba2Config)")
    inner = expand * H
    head_dim = cfg.pop("mamba_headdim", None)
    m_heads = cfg.pop("n_mamba_heads", None)
    if m_heads is None:  # the fork states the head width instead: heads = mamba_expand · hidden / mamba_headdim
        m_heads = inner // head_dim if _whole(head_dim) and inner % head_dim == 0 else ZAMBA2_DEFAULTS["n_mamba_heads"]
    if not _whole(m_heads) or inner % m_heads:
        raise InputError("n_mamba_heads", f"expected a whole number that divides mamba_expand × hidden_size ({inner:,})")
    if (2 * H) % heads:
        raise InputError("num_attention_heads", f"expected a divisor of 2 × hidden_size ({2 * H:,}): Zamba2's shared "
                         "attention is 2 × hidden_size wide")  # fmt: skip
    if cfg.get("intermediate_size") is None:  # Zamba2Config: 4 × hidden_size
        cfg["intermediate_size"] = 4 * H
    for k in ("kv_channels", "num_query_groups", "num_key_value_heads", "head_dim", "attention_head_dim"):
        cfg.pop(k, None)
    cfg.update(head_dim=2 * H // heads, num_key_value_heads=heads, mamba_num_heads=m_heads,
               mamba_head_dim=inner // m_heads, ssm_state_size=cfg.pop("mamba_d_state"),
               conv_kernel=cfg.pop("mamba_d_conv"), n_groups=cfg.pop("mamba_ngroups"),
               mamba_intermediate_size=inner, tie_word_embeddings=True)  # fmt: skip
    cfg.pop("mamba_expand")
    if cfg.pop("use_long_context", False):  # Zamba2Config: the long-context variant extends to 16,384 positions
        cfg["max_position_embeddings"] = 16_384
    blocks = cfg.pop("layers_block_type", None)
    n = cfg["num_hidden_layers"]
    if blocks is None:  # Zamba2Config's default pattern (54 layers)
        blocks = ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3 + \
                 ["hybrid"] + ["mamba"] * 2  # fmt: skip
    if not isinstance(blocks, list) or any(b not in ("mamba", "hybrid") for b in blocks) or len(blocks) > MAX_LAYERS:
        raise InputError("layers_block_type", "expected one entry per layer, each 'mamba' or 'hybrid'")
    if len(blocks) != n:
        raise InputError("layers_block_type", f"has {len(blocks)} entries, num_hidden_layers is {n}")
    cfg["layer_types"] = list(blocks)
    cfg["mlp_layer_types"] = ["dense" if b == "hybrid" else "none" for b in blocks]
    if fork:
        assumptions.append("Zyphra's pre-upstream field names (" + ", ".join(sorted(fork)) + ") read as transformers' "
                           "Zamba2Config ones; the Mamba heads are mamba_expand × hidden_size / mamba_headdim")  # fmt: skip
    assumptions.append(f"Zamba2: the {cfg['num_mem_blocks']} shared transformer blocks are counted once in the "
                       "weights; the step-time model streams and multiplies them once per step, not once per hybrid "
                       "layer that reuses them (an underestimate of decode time)")  # fmt: skip


def gemma3n(cfg: dict, assumptions: list[str]) -> None:
    """Gemma 3n (text): intermediate_size per layer (MatFormer), the last num_kv_shared_layers layers reuse the KV of
    the last earlier layer of their kind (vLLM gemma3n.py: kv_sharing_target_layer_name, no cache of their own),
    per-layer input embeddings of vocab_size_per_layer_input × (layers · hidden_size_per_layer_input), AltUp and
    LAuReL; the lm_head is tied (Gemma3nTextConfig.tie_word_embeddings = True)."""
    for k, v in GEMMA3N_DEFAULTS.items():
        if cfg.get(k) is None:
            cfg[k] = v
    n, widths = cfg["num_hidden_layers"], cfg["intermediate_size"]
    if not _whole(n):
        raise InputError("num_hidden_layers", "expected a whole number ≥ 1")
    if isinstance(widths, list):
        if not all(_whole(w) for w in widths) or not widths:
            raise InputError("intermediate_size", "expected a whole number ≥ 1, or a list of them (one per layer)")
        if len(widths) != n:
            raise InputError("intermediate_size", f"has {len(widths)} entries, num_hidden_layers is {n}: "
                             "Gemma3nTextConfig wants one width for all layers or one per layer")  # fmt: skip
        cfg["intermediate_size_per_layer"], cfg["intermediate_size"] = widths, max(widths)
    shared = cfg["num_kv_shared_layers"]
    if not isinstance(shared, int) or isinstance(shared, bool) or not 0 <= shared < n:
        raise InputError("num_kv_shared_layers", "expected a whole number of layers below num_hidden_layers")
    cfg.setdefault("sliding_window_pattern", 5)  # Gemma3nTextConfig: full attention where (i + 1) % 5 == 0
    assumptions.append("Gemma 3n: the text decoder only; the vision tower (MobileNet-V5), the audio encoder and their "
                       "multimodal embedders are not counted")  # fmt: skip
