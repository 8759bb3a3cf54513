"""evaluate(Scenario) → Report: resolve the specs (overrides applied once), size the pool, then every section."""

from __future__ import annotations

from calc.catalog import Catalog
from calc.errors import InputError
from calc.latency import latency
from calc.offload import offload
from calc.pool import size_pool, tp_check
from calc.prefix import prefix
from calc.replicas import capacity, conformance_of, fleet
from calc.report import Report, json_safe  # noqa: F401  (json_safe: the boundaries serialise with it)
from calc.resolve import resolve
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.workload import fit_workload


def resolve_checked(s: Scenario, catalog: Catalog) -> tuple[ModelSpec, GPUSpec]:
    """resolve(), then vLLM's parallelism rules; InputError names the field that breaks them."""
    model, gpu = resolve(s, catalog)
    problem = tp_check(s, model)
    if problem:
        raise InputError("tensor_parallel_size" if "tensor" in problem else "pipeline_parallel_size", problem)
    return model, gpu


def notes_for(s: Scenario, model: ModelSpec, block_size_note: str) -> tuple[str, ...]:
    notes = []
    if block_size_note:
        notes.append(block_size_note)
    if model.sliding_layer_count:
        notes.append(
            f"{model.sliding_layer_count} of {model.num_hidden_layers} layers use a {model.sliding_window}-token "
            "sliding window; their blocks are capped at the window plus max_num_batched_tokens"
        )
    if s.tensor_parallel_size > model.kv_heads and not model.is_mla:
        notes.append(f"tensor_parallel_size exceeds the {model.kv_heads} KV heads: each GPU keeps a replica of one")
    if model.is_mla:
        notes.append("MLA: one latent per layer is stored on every tensor-parallel rank (not split)")
    return tuple(notes)


def evaluate(s: Scenario, catalog: Catalog) -> Report:
    """Raises InputError (naming the field) when the scenario names unknown specs or breaks vLLM's TP rules."""
    model, gpu = resolve_checked(s, catalog)
    mem = size_pool(s, model, gpu)
    fit = fit_workload(s, model, mem)
    engine = catalog.engines[s.engine]
    lat = latency(s, model, gpu, mem, engine)
    conf = conformance_of(s, lat)
    fl = fleet(s, gpu, capacity(s, model, gpu, mem, engine), throughput_rps=lat.requests_per_s)
    off = offload(s, model, gpu, mem, lat)
    pre = prefix(s, model, mem, lat)
    return Report(s, model, gpu, engine, mem, fit, lat, conf, fl, off, pre, notes_for(s, model, mem.block_size_note),
                  other_gpus=catalog.gpus)  # fmt: skip
