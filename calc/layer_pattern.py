"""Family pattern fields → the two per-layer lists of a ModelSpec (`layer_types`, `mlp_layer_types`), and the checks
that the fields each layer kind needs are there.

The rules are the families' own (transformers configs, vLLM model code):

    sliding_window_pattern p (int)     layer i slides unless (i + 1) % p == 0     Gemma-3 6, EXAONE-4 4, Cohere2 4
    sliding_window_pattern "LLLG"      layer i slides where the letter is L
    gemma2                             even layers slide (p = 2)
    qwen* with use_sliding_window      layers ≥ max_window_layers slide (off by default)
    sliding_window otherwise           every layer slides (Mistral-7B-v0.1, Phi-3, StarCoder2)
    attention_chunk_size (Llama 4)     RoPE layers (no_rope_layers[i] = 1) are chunked-local; default: 3 of every 4
    hybrid_override_pattern            M = Mamba, * = attention, - = MLP, E = MoE (Nemotron-H)
    full_attention_interval k          every k-th layer full attention, the rest Gated DeltaNet (Qwen3-Next)
    attn_layer_period / _offset        attention where i % period == offset, Mamba elsewhere (Jamba)
    first_k_dense_replace, moe_layer_freq   MoE where i ≥ k and i % freq == 0 (DeepSeek, GLM-4.5, Kimi-K2)
    decoder_sparse_step, mlp_only_layers    MoE where (i + 1) % step == 0 and i ∉ mlp_only_layers (Qwen-MoE)
    interleave_moe_layer_step s        MoE where (i + 1) % s == 0 (Llama 4)
    expert_layer_period / _offset      MoE where i % period == offset (Jamba)
"""

from __future__ import annotations

from typing import Any

from calc.model_spec import MAX_LAYERS

MIXER_ALIASES = {
    "attention": "full_attention", "full": "full_attention", "global": "full_attention", "sliding": "sliding_attention",
    "local": "sliding_attention", "chunked": "chunked_attention", "mamba2": "mamba", "ssm": "mamba",
    "linear": "linear_attention", "short_conv": "conv", "mlp": "none", "no_op": "none",
}  # fmt: skip
PURE_SSM = ("mamba", "mamba2", "falcon_mamba")


def _ints(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _whole(d: dict, key: str, default: int, lo: int) -> int:
    """d[key] when it is a whole number ≥ lo (2 or 2.0), else `default`: a malformed value then fails its own field's
    validation, which names it and what is allowed, instead of a TypeError or a modulo by zero here."""
    x = d.get(key)
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and float(x).is_integer() and x >= lo
    return int(x) if ok else default


def _numbers(d: dict, key: str) -> list:
    """d[key] when it is a list of numbers, else [] (and its field's validation names what is wrong)."""
    x = d.get(key)
    return list(x) if isinstance(x, (list, tuple)) and all(isinstance(i, (int, float)) for i in x) else []


def expand(data: dict[str, Any]) -> dict[str, Any]:
    """Fill `layer_types` and `mlp_layer_types` from the family fields, when the data does not state them."""
    n = data.get("num_hidden_layers")
    if not _ints(n) or not 0 < n <= MAX_LAYERS:
        return data  # the field's own validation names the problem
    data = dict(data)
    lt = data.get("layer_types")
    if isinstance(lt, (list, tuple)):
        data["layer_types"] = tuple(MIXER_ALIASES.get(x, x) if isinstance(x, str) else x for x in lt)
    elif lt is None:
        data["layer_types"] = _mixers(data, n)
    if data.get("mlp_layer_types") is None:
        data["mlp_layer_types"] = _ffns(data, n)
    return data


def _mixers(d: dict, n: int) -> tuple[str, ...]:
    mt = str(d.get("model_type", ""))
    pattern = d.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return tuple({"M": "mamba", "*": "full_attention"}.get(c, "none") for c in pattern[:n].ljust(n, "-"))
    if mt in PURE_SSM:
        return ("mamba",) * n
    if mt == "falcon_h1":
        return ("hybrid",) * n
    kv = d.get("kv_heads_per_layer")
    if isinstance(kv, (list, tuple)):
        return tuple("full_attention" if h else "none" for h in kv)
    k = d.get("full_attention_interval")
    if _ints(k) and k > 0:
        return tuple("full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n))
    period = d.get("attn_layer_period")
    if _ints(period) and period > 0:
        off = d.get("attn_layer_offset") or 0
        return tuple("full_attention" if i % period == off else "mamba" for i in range(n))
    chunk = d.get("attention_chunk_size")
    if chunk:
        rope = _numbers(d, "no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]
        return tuple("chunked_attention" if rope[i % len(rope)] else "full_attention" for i in range(n))
    return _sliding(d, n, mt)


def _sliding(d: dict, n: int, mt: str) -> tuple[str, ...]:
    full = ("full_attention",) * n
    if d.get("sliding_window") is None or d.get("use_sliding_window") is False:
        return full
    p = d.get("sliding_window_pattern")
    if isinstance(p, str) and p:
        return tuple("sliding_attention" if p[i % len(p)] in "Ll" else "full_attention" for i in range(n))
    if p is None:
        p = {"gemma2": 2, "gemma3_text": 6, "gemma3": 6, "cohere2": 4, "exaone4": 4}.get(mt)
    if _ints(p) and p > 0:
        return tuple("sliding_attention" if (i + 1) % p else "full_attention" for i in range(n))
    if mt.startswith("qwen"):  # Qwen: the window is off unless use_sliding_window, then from max_window_layers on
        if d.get("use_sliding_window") is not True:
            return full
        first = _whole(d, "max_window_layers", 0, 0)
        return tuple("sliding_attention" if i >= first else "full_attention" for i in range(n))
    return ("sliding_attention",) * n  # Mistral-7B-v0.1, Phi-3, StarCoder2: every layer slides


def _experts(d: dict) -> int:
    return next((d[k] for k in ("num_local_experts", "num_experts", "n_routed_experts") if _ints(d.get(k))), 0)


def _ffns(d: dict, n: int) -> tuple[str, ...]:
    pattern = d.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return tuple({"-": "dense", "E": "moe"}.get(c, "none") for c in pattern[:n].ljust(n, "M"))
    if str(d.get("model_type", "")) in PURE_SSM:
        return ("none",) * n
    sizes = d.get("intermediate_size_per_layer")
    if isinstance(sizes, (list, tuple)):
        return tuple("dense" if s else "none" for s in sizes)
    if not _experts(d):
        return ("dense",) * n
    k, freq = d.get("first_k_dense_replace"), _whole(d, "moe_layer_freq", 1, 1)
    if _ints(k):
        return tuple("moe" if i >= k and i % freq == 0 else "dense" for i in range(n))
    step = d.get("interleave_moe_layer_step")
    if _ints(step) and step > 0:
        return tuple("moe" if (i + 1) % step == 0 else "dense" for i in range(n))
    period = d.get("expert_layer_period")
    if _ints(period) and period > 0:
        off = d.get("expert_layer_offset") or 0
        return tuple("moe" if i % period == off else "dense" for i in range(n))
    step = _whole(d, "decoder_sparse_step", 1, 1)
    dense = set(_numbers(d, "mlp_only_layers"))
    return tuple("moe" if i not in dense and (i + 1) % step == 0 else "dense" for i in range(n))


# --- checks: the fields each layer kind needs ------------------------------------------------------------------
def check(m) -> str | None:
    """The first problem with a ModelSpec, naming the fields; None when it can be planned."""
    n = m.num_hidden_layers
    if m.layer_types is None or m.mlp_layer_types is None:
        return "layer_types could not be derived: num_hidden_layers must be a whole number of layers"
    for name in ("layer_types", "mlp_layer_types", "no_rope_layers", "kv_heads_per_layer",
                 "intermediate_size_per_layer"):  # fmt: skip
        v = getattr(m, name)
        if v is not None and len(v) != n and name != "no_rope_layers":
            return f"{name} has {len(v)} entries, num_hidden_layers is {n}"
    kinds, ffns = set(m.layer_types), set(m.mlp_layer_types)
    if kinds <= {"none"}:
        return "no layer attends or keeps a state (every layer_types entry is 'none'): there is nothing to decode"
    attention = kinds & {"full_attention", "sliding_attention", "chunked_attention", "hybrid"}
    if (attention or ("linear_attention" in kinds and m.linear_key_head_dim is None)) and not m.num_attention_heads:
        return "num_attention_heads is required: the model has attention layers"
    if attention and not m.is_mla:
        for h in set(m.kv_heads_per_layer or ()) - {0} or {m.kv_heads}:
            if m.num_attention_heads % h:
                return (f"num_attention_heads ({m.num_attention_heads}) must be a multiple of "
                        f"num_key_value_heads ({h})")  # fmt: skip
        if m.head_dim is None and m.hidden_size % m.num_attention_heads:
            return (f"hidden_size ({m.hidden_size}) must be a multiple of num_attention_heads "
                    f"({m.num_attention_heads}) when head_dim is not given")  # fmt: skip
    if "sliding_attention" in kinds and m.sliding_window is None:
        return "sliding_window is required: layer_types names sliding_attention layers"
    if "chunked_attention" in kinds and m.attention_chunk_size is None:
        return "attention_chunk_size is required: layer_types names chunked_attention layers"
    if m.is_mla and None in (m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim):
        return "kv_lora_rank given: qk_rope_head_dim, qk_nope_head_dim and v_head_dim are required (MLA)"
    if kinds & {"mamba", "hybrid"}:
        missing = [f for f in ("ssm_state_size", "conv_kernel") if getattr(m, f) is None]
        if m.mamba_num_heads is not None:
            missing += [f for f in ("mamba_head_dim", "n_groups") if getattr(m, f) is None]
        elif m.mamba_expand is None and m.mamba_intermediate_size is None:
            missing.append("mamba_expand")
        if missing:
            return f"{', '.join(missing)} required: the model has Mamba layers"
    if "linear_attention" in kinds and m.linear_key_head_dim is not None:
        gdn = ("linear_num_key_heads", "linear_num_value_heads", "linear_value_head_dim", "linear_conv_kernel_dim")
        missing = [f for f in gdn if getattr(m, f) is None]
        if missing:
            return f"{', '.join(missing)} required: the model has Gated DeltaNet (linear_attention) layers"
    if "conv" in kinds and m.conv_L_cache is None:
        return "conv_L_cache is required: the model has short-convolution (conv) layers"
    if "dense" in ffns and not (m.dense_ffn_size or m.intermediate_size_per_layer):
        return "intermediate_size is required: the model has dense MLP layers"
    if "moe" in ffns:
        if not m.is_moe:
            return "num_local_experts (or num_experts / n_routed_experts) is required: mlp_layer_types names moe layers"
        if m.num_experts_per_tok is None or m.num_experts_per_tok > m.routed_experts:
            return "num_experts_per_tok is required for MoE models and must not exceed the expert count"
        if not m.expert_ffn_size:
            return "moe_intermediate_size (or intermediate_size) is required: the model has MoE layers"
    return None
