"""evaluate(Scenario) → Report: every number the page and the CLI show, as named fields with units in their names."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, is_dataclass

from pydantic import ValidationError

from calc.advice import Suggestion, suggest
from calc.catalog import Catalog
from calc.custom import decode_custom_model
from calc.errors import InputError, describe
from calc.goodput import Conformance
from calc.latency import LatencyResult, latency
from calc.memory import MemoryResult, size_pool, tp_check
from calc.offload import OffloadResult, offload
from calc.prefix import PrefixResult, prefix
from calc.replicas import Fleet, capacity, conformance_of, fleet
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.workload import WorkloadFit, fit_workload


@dataclass(frozen=True)
class Report:
    scenario: Scenario
    model_name: str
    gpu_name: str
    memory: MemoryResult
    fit: WorkloadFit
    latency: LatencyResult
    conformance: Conformance
    fleet: Fleet
    offload: OffloadResult
    prefix: PrefixResult
    suggestions: tuple[Suggestion, ...]
    notes: tuple[str, ...]

    @property
    def goodput_rps(self) -> float:
        """Requests per second served within both SLOs: throughput × conformance."""
        return self.latency.requests_per_s * self.conformance.conformance

    def to_dict(self) -> dict:
        """Flat JSON: the keys scripts depend on at top level, then each section."""
        m, f = self.memory, self.fit
        flat = {
            "model": self.scenario.model,
            "gpu": self.scenario.gpu,
            "model_name": self.model_name,
            "gpu_name": self.gpu_name,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "kv_bytes_per_token_per_gpu": m.kv_bytes_per_token_per_gpu,
            "weights_bytes_per_gpu": m.weights_bytes_per_gpu,
            "kv_cache_memory_bytes": m.kv_cache_memory_bytes,
            "num_gpu_blocks": m.num_gpu_blocks,
            "kv_cache_tokens": m.kv_cache_tokens,
            "max_concurrency": m.max_concurrency,
            "fits": f.fits,
        }
        lat = self.latency
        flat |= {
            "prefill_floor_s": lat.prefill.floor_s,
            "prefill_s": lat.prefill.estimate_s,
            "decode_step_floor_s": lat.decode.floor_s,
            "decode_step_s": lat.decode.estimate_s,
            "ttft_s": lat.ttft_s,
            "tpot_s": lat.tpot_s,
            "e2e_s": lat.e2e_s,
            "ridge_flop_per_byte": lat.ridge_flop_per_byte,
            "prefill_intensity_flop_per_byte": lat.prefill.intensity_flop_per_byte,
            "decode_intensity_flop_per_byte": lat.decode.intensity_flop_per_byte,
        }
        flat["scenario"] = self.scenario.model_dump()
        flat["memory"] = _plain(m) | {"headroom_bytes": m.headroom_bytes}
        flat["params"] = _plain(m.params) | {"total": m.params.total, "active": m.params.active}
        flat["workload"] = _plain(f)
        c, fl, off, pre = self.conformance, self.fleet, self.offload, self.prefix
        flat |= {
            "goodput_rps": self.goodput_rps,
            "conformance": c.conformance,
            "capacity_rps_per_replica": fl.capacity.rps,
            "replicas": fl.replicas,
            "gpus": fl.gpus,
            "cost_per_million_output_tokens": fl.cost_per_million_output_tokens,
            "swap_recompute_ratio": off.swap_recompute_ratio,
            "swap_s": off.swap_s,
            "recompute_s": off.recompute_s,
            "prefix_reuse_saving": pre.prefix_reuse_saving,
        }
        flat["slo"] = asdict(c) | {"goodput_definition": GOODPUT_DEFINITION}
        flat["fleet"] = _plain(fl) | {"capacity": asdict(fl.capacity)}
        flat["offload"] = asdict(off)
        flat["prefix"] = asdict(pre)
        flat["latency"] = _plain(lat) | {"prefill": asdict(lat.prefill), "decode": asdict(lat.decode)}
        flat["labels"] = LABELS
        flat["suggestions"] = [asdict(x) for x in self.suggestions]
        flat["notes"] = list(self.notes)
        return flat


GOODPUT_DEFINITION = (
    "goodput = throughput × P(TTFT ≤ slo_ttft_s) × P(mean TPOT ≤ slo_tpot_s), TTFT and TPOT log-normal around the "
    "estimates with σ = latency_sigma; strict_conformance replaces mean TPOT by every inter-token gap"
)

LABELS = {
    "prefill_floor_s": "floor: roofline lower bound (peak FLOP/s and bandwidth)",
    "prefill_s": "estimate: floor scaled by the scenario's mfu/mbu",
    "decode_step_floor_s": "floor: roofline lower bound",
    "decode_step_s": "estimate: floor scaled by mbu (and mfu for large batches)",
    "ttft_s": "estimate: queue + prefill + chunked-prefill steps + front-end",
    "tpot_s": "estimate: decode step + prefill work of arriving requests",
    "e2e_s": "estimate: TTFT + (output_len − 1) · TPOT",
    "kv_cache_memory_bytes": "vLLM arithmetic on estimated overheads (exact with --kv-cache-memory-bytes)",
    "num_gpu_blocks": "exact vLLM arithmetic given kv_cache_memory_bytes",
}


def json_safe(x):
    """Non-finite floats (an empty pool's infinite occupancy) become null: JSON has no Infinity."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def _plain(obj) -> dict:
    """A dataclass's own fields, nested dataclasses skipped (they get sections of their own)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj) if not is_dataclass(getattr(obj, f.name))}


def resolve(s: Scenario, catalog: Catalog) -> tuple[ModelSpec, GPUSpec]:
    if s.model == "custom":
        model = decode_custom_model(s.custom_model or "")
    elif s.model in catalog.models:
        model = catalog.models[s.model]
    else:
        raise InputError("model", f"unknown model '{s.model}'; shipped: {', '.join(sorted(catalog.models))}")
    model_over = {k: getattr(s, k) for k in ("num_hidden_layers", "num_key_value_heads", "head_dim") if getattr(s, k)}
    if model_over:
        data = model.model_dump() | model_over
        if "num_hidden_layers" in model_over and model.layer_types is not None:
            lt = model.layer_types  # keep the pattern (gpt-oss alternates) over the new depth
            data["layer_types"] = [lt[i % len(lt)] for i in range(model_over["num_hidden_layers"])]
        try:
            model = ModelSpec.model_validate(data)
        except ValidationError as e:
            raise InputError(next(iter(model_over)), describe(e)) from None
    if s.gpu not in catalog.gpus:
        raise InputError("gpu", f"unknown gpu '{s.gpu}'; shipped: {', '.join(sorted(catalog.gpus))}")
    gpu = catalog.gpus[s.gpu]
    overrides = {
        k: v
        for k, v in (
            ("memory_gib", s.memory_gib),
            ("memory_bandwidth_gb_per_s", s.memory_bandwidth_gb_per_s),
            ("scaleup_link_gb_per_s", s.scaleup_link_gb_per_s),
            ("host_link_gb_per_s", s.host_link_gb_per_s),
        )
        if v is not None
    }
    if overrides:
        if "memory_gib" in overrides:
            overrides["memory_vendor_gb"] = max(gpu.memory_vendor_gb, overrides["memory_gib"])
        gpu = gpu.model_copy(update=overrides)
    return model, gpu


def resolve_checked(s: Scenario, catalog: Catalog) -> tuple[ModelSpec, GPUSpec]:
    """resolve(), then vLLM's parallelism rules; InputError names the field that breaks them."""
    model, gpu = resolve(s, catalog)
    problem = tp_check(s, model)
    if problem:
        raise InputError("tensor_parallel_size" if "tensor" in problem else "pipeline_parallel_size", problem)
    return model, gpu


def evaluate(s: Scenario, catalog: Catalog) -> Report:
    """Raises InputError (naming the field) when the scenario names unknown specs or breaks vLLM's TP rules."""
    model, gpu = resolve_checked(s, catalog)
    mem = size_pool(s, model, gpu)
    fit = fit_workload(s, model, mem)
    notes = []
    if mem.block_size_note:
        notes.append(mem.block_size_note)
    if model.sliding_layer_count:
        notes.append(
            f"{model.sliding_layer_count} of {model.num_hidden_layers} layers use a {model.sliding_window}-token "
            "sliding window; their blocks are capped at the window plus max_num_batched_tokens"
        )
    if s.tensor_parallel_size > model.kv_heads and not model.is_mla:
        notes.append(f"tensor_parallel_size exceeds the {model.kv_heads} KV heads: each GPU keeps a replica of one")
    if model.is_mla:
        notes.append("MLA: one latent per layer is stored on every tensor-parallel rank (not split)")
    lat = latency(s, model, gpu, mem)
    conf = conformance_of(s, lat)
    fl = fleet(s, gpu, capacity(s, model, gpu, mem), throughput_rps=lat.requests_per_s)
    off = offload(s, model, gpu, mem, lat)
    pre = prefix(s, model, mem, lat)
    sugg = () if fit.fits else suggest(s, model, gpu, catalog.gpus)
    return Report(s, model.name, gpu.name, mem, fit, lat, conf, fl, off, pre, sugg, tuple(notes))
