"""config.json's quantization, read for calc.hf_config: `quantization_config` (AWQ, GPTQ, bitsandbytes,
compressed-tensors, ModelOpt's NVFP4 / FP8 / MIXED_PRECISION, mxfp4) → ModelSpec.quantization_config, and a checkpoint
whose name says it is quantized where its config.json does not."""

from __future__ import annotations

from typing import Any

from calc.errors import InputError

MODELOPT_BITS = {"NVFP4": 4, "W4A16_NVFP4": 4, "W4A16_AWQ": 4, "W4A8_AWQ": 4, "FP8": 8, "FP8_PB_WO": 8}
"""ModelOpt's quant_algo names → weight bits (its MIXED_PRECISION checkpoints name one per module)."""


def mixed_precision_algos(layers: Any) -> dict[str, str]:
    """ModelOpt's MIXED_PRECISION `quantized_layers` ({module: {"quant_algo": …}}) → the routed experts' format
    ("experts") and the other linear layers' ("rest"), the most common of each; the lm_head is left out (the planner
    keeps the tables 16-bit). Qwen3.6-35B-A3B-NVFP4: experts W4A16_NVFP4, attention and linear attention FP8."""
    if not isinstance(layers, dict) or not layers:
        raise InputError("quantization_config.quantized_layers", "MIXED_PRECISION needs {module: {quant_algo: …}}")
    counts: dict[str, dict[str, int]] = {"experts": {}, "rest": {}}
    for name, spec in list(layers.items())[:100_000]:
        algo = spec.get("quant_algo") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not isinstance(algo, str) or name.endswith("lm_head"):
            continue
        bucket = counts["experts" if ".experts" in name and "shared_expert" not in name else "rest"]
        bucket[algo[:40]] = bucket.get(algo[:40], 0) + 1
    return {k: max(v, key=v.get) for k, v in counts.items() if v}


def quantization(q: Any) -> dict | None:
    if not isinstance(q, dict):
        raise InputError("quantization_config", "expected an object with quant_method")
    method = str(q.get("quant_method") or q.get("quant_algo") or "unknown")[:40]
    out: dict[str, Any] = {"quant_method": method}
    bits = q.get("bits", q.get("w_bit"))
    if bits is not None and (isinstance(bits, bool) or not isinstance(bits, (int, float)) or not 0 < bits <= 64):
        raise InputError("quantization_config.bits", f"expected a positive number of bits a weight, such as 4 or 8 "
                                                     f"(got {str(bits)[:20]!r})")  # fmt: skip
    family = method.removesuffix("_marlin")
    if family in ("gptq", "awq") and bits is None:  # vLLM's GPTQConfig / AWQConfig.from_config read it, or fail
        raise InputError("quantization_config.bits", f"{method} needs its bit width (bits, or AWQ's w_bit): vLLM "
                                                     "refuses a config without it")  # fmt: skip
    if family == "awq" and bits not in (4, 8):  # AWQ kernels: 4-bit (AWQConfig), 8-bit via AWQ-Marlin
        raise InputError("quantization_config.bits", f"AWQ weights are 4 or 8 bits in vLLM (got {bits:g})")
    if family == "gptq" and bits not in (2, 3, 4, 8):
        raise InputError("quantization_config.bits", f"GPTQ weights are 2, 3, 4 or 8 bits in vLLM (got {bits:g})")
    if method == "bitsandbytes":
        bits = 4 if q.get("load_in_4bit") else 8
    if method == "compressed-tensors":  # config_groups → weights.num_bits
        groups = q.get("config_groups") or {}
        if not isinstance(groups, dict):
            raise InputError("quantization_config.config_groups", "expected an object of groups, each with weights")
        weights = [g.get("weights") or {} for g in groups.values() if isinstance(g, dict)]
        if not all(isinstance(w, dict) for w in weights):
            raise InputError("quantization_config.config_groups.weights", "expected an object with num_bits")
        found = [w.get("num_bits") for w in weights]
        bits = next((b for b in found if b in (4, 8)), 8)
        four = next((w for w in weights if w.get("num_bits") == 4), None)
        if four is not None and str(four.get("type", "")).lower() == "float":  # NVFP4 (RedHatAI/Qwen3-8B-NVFP4)
            out["nvfp4"] = True
        elif four is not None:  # its group size and symmetry set the bytes (calc.weights.int_bytes)
            group = four.get("group_size")
            if isinstance(group, int) and not isinstance(group, bool) and 8 <= group <= 4096:
                out["group_size"] = group
            if four.get("symmetric") is True:
                out["symmetric"] = True
    if str(q.get("quant_algo", "")).upper() in ("NVFP4", "W4A16_AWQ"):
        bits = 4
    if str(q.get("quant_algo", "")).upper() == "MIXED_PRECISION":
        algos = mixed_precision_algos(q.get("quantized_layers"))
        experts, rest = (MODELOPT_BITS.get(algos.get(k, "").upper()) for k in ("experts", "rest"))
        bits = experts or rest
        if rest and experts and rest != experts:
            out["rest_bits"] = rest
    if bits in (2, 3, 4, 8) and not isinstance(bits, bool):
        out["bits"] = bits
    if method.startswith("modelopt") and (kv := _modelopt_kv(q)):
        out["kv_cache_quant_algo"] = kv
    elif method == "compressed-tensors" and (kv := _llm_compressor_fp8_kv(q.get("kv_cache_scheme"))):
        out["kv_cache_quant_algo"] = kv
    elif method == "fp8" and str(q.get("kv_cache_quant_algo", "")).upper() == "FP8":
        out["kv_cache_quant_algo"] = "fp8"  # SGLang's Fp8Config reads it (calc.resolve.CHECKPOINT_KV_SINCE)
    skipped = [x for k in ("ignore", "exclude_modules", "modules_to_not_convert")
               for x in (q.get(k) if isinstance(q.get(k), list) else [])[:100_000] if isinstance(x, str)]  # fmt: skip
    if any("mtp" in x.lower() for x in skipped):  # "mtp*", "mtp.layers.0*": the draft layers stay 16-bit
        out["mtp_unquantized"] = True
    if method in ("compressed-tensors", "modelopt") and any("self_attn" in x for x in skipped) and \
            any("mlp" in x or "shared_expert" in x for x in skipped):  # fmt: skip
        out["experts_only"] = True  # attention and dense / shared MLPs left out: the routed experts alone (Kimi-K2-Thinking,
        # compressed-tensors; Kimi-K2.6-NVFP4, ModelOpt's ignore list in the same form)
    if method == "mxfp4":
        out["experts_only"] = True  # gpt-oss: modules_to_not_convert = attention, router, embeddings, lm_head
    return out


def _modelopt_kv(q: dict) -> str | None:
    """A ModelOpt config's KV scales, as vLLM's get_kv_cache_quant_algo_string reads them: kv_cache_scheme
    {"dynamic": false, "num_bits": 8, "type": "float"} or kv_cache_quant_algo "FP8" → "fp8"; a 4-bit float scheme or
    "NVFP4" → "nvfp4" (vLLM 0.20+); at the top or under "quantization"."""
    inner = q.get("quantization") if isinstance(q.get("quantization"), dict) else q
    kv = inner.get("kv_cache_scheme") or q.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo") \
        or q.get("kv_cache_quant_algo")  # fmt: skip
    if isinstance(kv, dict) and kv.get("type") == "float":
        return "fp8" if kv.get("dynamic") is False and kv.get("num_bits") == 8 else "nvfp4" if kv.get("num_bits") == 4 else None
    return kv.lower() if isinstance(kv, str) and kv.lower() in ("fp8", "nvfp4") else None


def _llm_compressor_fp8_kv(kv: Any) -> str | None:
    """A compressed-tensors kv_cache_scheme of 8-bit symmetric floats (the only KV scheme vLLM serves: others raise at
    load): "fp8" where its scales are static and per tensor, as SGLang also takes them, else "fp8_per_head"."""
    if not isinstance(kv, dict) or kv.get("num_bits") != 8 or kv.get("type") != "float" or kv.get("symmetric") is False:
        return None
    return "fp8" if kv.get("strategy") == "tensor" and kv.get("dynamic") is False else "fp8_per_head"


QUANT_WORDS = ("NVFP4", "MXFP4", "FP8", "FP4", "AWQ", "GPTQ", "INT4", "INT8", "W4A16", "W8A8")


def quantized_name(name: str | None, config: dict) -> str | None:
    """The quantization a checkpoint's name states ('…-NVFP4', '…-FP8'), if any."""
    text = f"{name or ''} {config.get('_name_or_path') or ''}".upper()
    return next((w for w in QUANT_WORDS if w in text.replace("_", "-").split("-") or f"-{w}" in text), None)
