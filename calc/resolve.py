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
    over = {k: getattr(s, k) for k in MODEL_OVERRIDES if getattr(s, k)}
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


CHECKPOINT_KV_SINCE = (0, 13)
"""The first vLLM release whose --kv-cache-dtype auto takes a ModelOpt checkpoint's kv_cache_quant_algo (vllm#29980,
merged 2025-12-10; earlier ones used the model's 16-bit type and loaded the scales unused)."""


CHECKPOINT_KV_NOTE = ("kv_cache_dtype auto is FP8 for this checkpoint: its quantization config carries FP8 KV scales "
                      "(ModelOpt's kv_cache_quant_algo), which vLLM 0.13 and later and SGLang use under "
                      "--kv-cache-dtype auto; the KV figures are FP8's (vLLM before 0.13 keeps the 16-bit cache)")
"""Said wherever checkpoint_kv turned 'auto' into fp8 (the plan, a reconciled log, the search)."""


def checkpoint_kv(s: Scenario, model: ModelSpec) -> Scenario:
    """kv_cache_dtype 'auto' as the engine resolves it: FP8 for a ModelOpt checkpoint with FP8 KV scales (its
    kv_cache_quant_algo) under vLLM 0.13 and later, and under SGLang (model_runner's configure_kv_cache_dtype:
    `auto` and quant_config.kv_cache_quant_algo FP8 → fp8_e4m3; the release that added it not read), else
    unchanged."""
    q = model.quantization_config
    if s.kv_cache_dtype != "auto" or q is None or q.kv_cache_quant_algo != "fp8":
        return s
    version = version_tuple(s.engine_version)
    if s.engine == "vllm" and version is not None and version[:2] < CHECKPOINT_KV_SINCE:
        return s
    return s.model_copy(update={"kv_cache_dtype": "fp8"})


def other_gpu_fields(s: Scenario, gid: str) -> dict:
    """The fields that move the scenario to GPU `gid`: on another GPU than its own, every override meant for its own
    GPU and its own price are dropped (the other GPU is priced from its spec). Only the fields that change."""
    if gid == s.gpu:
        return {}
    return {"gpu": gid} | {k: None for k in (*GPU_OVERRIDES, "gpu_hour_price") if getattr(s, k) is not None}


def for_other_gpu(s: Scenario, gid: str) -> Scenario:
    """The scenario on GPU `gid` (itself when that is its own GPU)."""
    return s.model_copy(update=other_gpu_fields(s, gid))
