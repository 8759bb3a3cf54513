"""A Scenario's model, GPU and engine release, with its spec overrides applied — here and nowhere else.

An override describes a hypothetical part (a GPU with more memory, the MHA variant of a GQA model). It changes the
scenario's own GPU or model only: the GPU options, suggestions and search price other GPUs from their own specs.
"""

from __future__ import annotations

from pydantic import ValidationError

from calc.catalog import Catalog
from calc.custom import decode_custom_model
from calc.engine_spec import EngineSpec, version_tuple
from calc.errors import InputError, describe
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec

MODEL_OVERRIDES = ("num_hidden_layers", "num_key_value_heads", "head_dim")
GPU_OVERRIDES = ("memory_gib", "memory_bandwidth_gb_per_s", "peak_tflop_per_s", "scaleup_link_gb_per_s",
                 "host_link_gb_per_s")  # fmt: skip
PER_LAYER = ("layer_types", "mlp_layer_types", "no_rope_layers", "kv_heads_per_layer", "intermediate_size_per_layer",
             "hybrid_override_pattern")  # fmt: skip
PEAK_FIELD = {"bf16": "bf16_tflop_per_s", "fp16": "fp16_tflop_per_s", "fp8": "fp8_tflop_per_s", "int8": "int8_tops"}


def base_model(s: Scenario, catalog: Catalog) -> ModelSpec:
    if s.model == "custom":
        return decode_custom_model(s.custom_model or "")
    if s.model in catalog.models:
        return catalog.models[s.model]
    raise InputError("model", f"unknown model '{s.model}'; shipped: {', '.join(sorted(catalog.models))}")


def override_model(s: Scenario, model: ModelSpec) -> ModelSpec:
    """The model with the scenario's spec overrides; under language_model_only without its vision and audio towers,
    which vLLM then neither loads nor profiles."""
    over = {k: getattr(s, k) for k in MODEL_OVERRIDES if getattr(s, k)}
    if s.language_model_only and (model.vision_config or model.audio_config):
        over |= {"vision_config": None, "audio_config": None}
    if not over:
        return model
    data = model.model_dump() | over
    if "num_hidden_layers" in over:  # keep each per-layer pattern (gpt-oss alternates) over the new depth
        n = over["num_hidden_layers"]
        for name in PER_LAYER:
            seq = data.get(name)
            if seq:
                data[name] = type(seq)(seq[i % len(seq)] for i in range(n))
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as e:
        raise InputError(next(iter(over)), describe(e)) from None


def override_gpu(s: Scenario, gpu: GPUSpec, compute_dtype: str) -> GPUSpec:
    """The GPU with the scenario's overrides; `peak_tflop_per_s` replaces the peak of the matmul precision."""
    over = {k: getattr(s, k) for k in GPU_OVERRIDES if getattr(s, k) is not None}
    if not over:
        return gpu
    if "memory_gib" in over:
        over["memory_vendor_gb"] = max(gpu.memory_vendor_gb, over["memory_gib"])
    if "scaleup_link_gb_per_s" in over:  # the stated link joins the whole group, not the spec's bridged pair
        over["scaleup_link_gpus"] = None
    if "peak_tflop_per_s" in over:
        over[PEAK_FIELD.get(compute_dtype, "bf16_tflop_per_s")] = over.pop("peak_tflop_per_s")
    return gpu.model_copy(update=over)


def resolve(s: Scenario, catalog: Catalog) -> tuple[ModelSpec, GPUSpec]:
    from calc.precision_support import served_format
    from calc.weights import weight_format  # the peak override follows the matmul precision of the weights

    model = override_model(s, base_model(s, catalog))
    if s.gpu not in catalog.gpus:
        raise InputError("gpu", f"unknown gpu '{s.gpu}'; shipped: {', '.join(sorted(catalog.gpus))}")
    base = catalog.gpus[s.gpu]
    gpu = override_gpu(s, base, served_format(weight_format(model, s.dtype), s.dtype, base.arch).compute_dtype)
    return model, gpu


def engine_of(s: Scenario, catalog: Catalog) -> EngineSpec:
    """The engine spec of the scenario's release (`engine_version`; EngineSpec.at)."""
    if s.engine not in catalog.engines:
        raise InputError("engine", f"unknown engine '{s.engine}'; shipped: {', '.join(sorted(catalog.engines))}")
    try:
        return catalog.engines[s.engine].at(s.engine_version)
    except ValueError as e:
        raise InputError("engine_version", str(e)) from None


def beyond_fitted(s: Scenario, catalog: Catalog, in_flight: float) -> tuple[EngineSpec, EngineSpec] | None:
    """(the scenario's release, the release before it) where `in_flight` requests exceed those its fixed costs were
    fitted on (`fitted_concurrency`): an extrapolation, for which the earlier release's costs are the slower bound."""
    engine = engine_of(s, catalog)
    if not engine.fitted_concurrency or in_flight <= engine.fitted_concurrency:
        return None
    return engine, catalog.engines[s.engine].before(engine.since)


def default_context(s: Scenario, model: ModelSpec) -> Scenario:
    """max_model_len at its default (8,192) stands for 'not set': vLLM without --max-model-len serves the model's own
    maximum, so where that is smaller (Llama-2's 4,096) the plan takes it rather than refuse to start."""
    default = Scenario.model_fields["max_model_len"].default
    if s.max_model_len == default and model.max_len_limit < default:
        return s.model_copy(update={"max_model_len": model.max_len_limit})
    return s


CHECKPOINT_KV_SINCE = {
    ("vllm", "modelopt"): (0, 14),
    ("vllm", "compressed-tensors"): (0, 15),
    ("sglang", "modelopt"): (0, 5, 3),
    ("sglang", "fp8"): (0, 5, 18),
    ("sglang", "compressed-tensors"): (0, 5, 19),
}
"""(engine, the checkpoint's quantization format) → the first release whose --kv-cache-dtype auto is an FP8 cache for
a checkpoint with FP8 KV scales (read in each release's wheel: vLLM resolve_kv_cache_dtype_string for ModelOpt from
0.14.0 (vllm#29980; 0.13.0's arg_utils passes 'auto' on), its Attention layer's `kv_cache_scheme` override for
llm-compressor checkpoints from 0.15.0 (vllm#30141; not MLAAttention); SGLang's configure_kv_cache_dtype for ModelOpt
from 0.5.3, its Fp8Config's kv_cache_quant_algo from 0.5.18, compressed-tensors' static symmetric per-tensor scheme
from 0.5.19). Other formats (Quark, vLLM's fp8) keep the 16-bit cache and drop the scales."""
NVFP4_CHECKPOINT_KV_SINCE = (0, 20)
"""vLLM's MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP maps a ModelOpt checkpoint's NVFP4 KV scales to nvfp4 from 0.20.0 (0.19.0
maps fp8 alone); 0.20's FlashInfer then refuses the cache (calc.precision_support.kv_dtype_refusal says so)."""
SCALES_NAMED = {"modelopt": "ModelOpt's kv_cache_quant_algo", "compressed-tensors": "llm-compressor's kv_cache_scheme",
                "fp8": "its kv_cache_quant_algo"}  # fmt: skip


def _kv_source(model: ModelSpec) -> str | None:
    """The format whose FP8 KV scales the checkpoint carries, or None."""
    q = model.quantization_config
    if q is None or q.kv_cache_quant_algo is None:
        return None
    method = q.quant_method.lower()
    return "modelopt" if method.startswith("modelopt") else method if method in ("compressed-tensors", "fp8") else None


def _kv_since(s: Scenario, model: ModelSpec) -> tuple[int, ...] | None:
    """The first release of the scenario's engine that serves this checkpoint's KV scales as FP8 under 'auto'."""
    source = _kv_source(model)
    if source is None:
        return None
    if source == "compressed-tensors" and (model.is_mla if s.engine == "vllm"
                                           else model.quantization_config.kv_cache_quant_algo != "fp8"):  # fmt: skip
        return None  # vLLM's MLA layers have no such override; SGLang takes a static per-tensor scheme only
    if model.quantization_config.kv_cache_quant_algo == "nvfp4":
        return NVFP4_CHECKPOINT_KV_SINCE if s.engine == "vllm" else None
    return CHECKPOINT_KV_SINCE.get((s.engine, source))


DSA_FP8_RELEASE = (0, 11, 0)
"""The one vLLM release whose 'auto' is DeepSeek-V3.2's fp8_ds_mla cache (vllm#25988, "For DeepseekV3.2, we use a
custom fp8 format as default (i.e. "auto")"; models/config.py from 0.11.1 keeps bf16 unless fp8 is asked for)."""


def _dsa_default_fp8(s: Scenario, model: ModelSpec) -> bool:
    return s.engine == "vllm" and model.is_mla and bool(model.index_topk) and \
        ((version_tuple(s.engine_version) or (9,)) + (0, 0))[:3] == DSA_FP8_RELEASE  # fmt: skip


def checkpoint_kv(s: Scenario, model: ModelSpec) -> Scenario:
    """kv_cache_dtype 'auto' as the engine resolves it: FP8 for a checkpoint with FP8 KV scales in a format and a
    release that serves them so (CHECKPOINT_KV_SINCE), and for DeepSeek-V3.2 under vLLM 0.11.0; else unchanged."""
    if s.kv_cache_dtype != "auto":
        return s
    since = _kv_since(s, model)
    version = version_tuple(s.engine_version)
    if _dsa_default_fp8(s, model):
        return s.model_copy(update={"kv_cache_dtype": "fp8"})
    if since is not None and (version is None or version[: len(since)] >= since):
        nvfp4 = model.quantization_config.kv_cache_quant_algo == "nvfp4"  # type: ignore[union-attr]
        return s.model_copy(update={"kv_cache_dtype": "nvfp4" if nvfp4 else "fp8"})
    return s


def checkpoint_kv_note(s: Scenario, model: ModelSpec) -> str:
    """Said wherever checkpoint_kv turned 'auto' into fp8 (the plan, a reconciled log, the search)."""
    if _dsa_default_fp8(s, model):
        return ("kv_cache_dtype auto is fp8_ds_mla for DeepSeek-V3.2 under vLLM 0.11.0 (vllm#25988: its custom fp8 "
                "format by default); 0.11.1 and later keep the 16-bit cache unless fp8 is asked for")  # fmt: skip
    since = _kv_since(s, model) or ()
    release = ".".join(str(x) for x in since)
    engine = "vLLM" if s.engine == "vllm" else "SGLang"
    kind = "NVFP4" if model.quantization_config.kv_cache_quant_algo == "nvfp4" else "FP8"  # type: ignore[union-attr]
    return (f"kv_cache_dtype auto is {kind} for this checkpoint: its quantization config carries {kind} KV scales "
            f"({SCALES_NAMED[_kv_source(model) or 'fp8']}), which {engine} {release} and later use under "
            f"--kv-cache-dtype auto; the KV figures are {kind}'s ({engine} before {release} keeps the 16-bit cache)")  # fmt: skip


def other_gpu_fields(s: Scenario, gid: str) -> dict:
    """The fields that move the scenario to GPU `gid`: on another GPU than its own, every override meant for its own
    GPU and its own price are dropped (the other GPU is priced from its spec). Only the fields that change."""
    if gid == s.gpu:
        return {}
    return {"gpu": gid} | {k: None for k in (*GPU_OVERRIDES, "gpu_hour_price") if getattr(s, k) is not None}


def for_other_gpu(s: Scenario, gid: str) -> Scenario:
    """The scenario on GPU `gid` (itself when that is its own GPU)."""
    return s.model_copy(update=other_gpu_fields(s, gid))
