"""Hold a parsed vLLM startup log against the planner: line by line, logged vs predicted, and what explains a gap.

The check the issue asks for (reference/vllm_kv.md §4–§5): feed the logged "Available KV cache memory" back in
(kv_cache_memory_bytes = X GiB · 2^30) and re-derive, per worker, `blocks = floor(X / page / layers_per_group)`; the
engine keeps the fewest blocks over workers. The logged X is rounded to two decimals, so the blocks must lie between
the values at X − 0.005 and X + 0.005 GiB; concurrency and "GPU KV cache size" follow from the blocks:

    concurrency = blocks / ceil(L / block_size)   (V1 ≥ 0.9; V0 and V1 0.7–0.8 print blocks · block_size / L)
    tokens      = blocks · block_size             (≤ 0.20.0)  or  int(concurrency · L)  (≥ 0.20.1)

LMCache #1739 (Qwen3-14B, 163,840 B/token): 6.51 GiB → 2,666 blocks (2,664 – 2,668) = 42,656 tokens, 2,666 / 2,048 = 1.30x.
The overhead lines (weights, activation, non-torch, CUDA graphs) are compared with the planner's estimates, and the
measured ones become `calibration`: Scenario overrides that adopt them.

Model/GPU name matching lives in boundary.log_names, the log's engine arguments in boundary.log_fields, the row
builders (Row, Feed and the per-line checks) in boundary.reconcile_rows, a failed start's fixes in
boundary.reconcile_fail; this module builds the scenario, feeds the logged pool back in and assembles the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import permutations

from pydantic import ValidationError

from boundary.log_fields import log_scenario_fields
from boundary.log_names import detect_gpu, match_model
from boundary.log_scenario import build_scenario
from boundary.reconcile_fail import StartFailure, start_failure
from boundary.reconcile_rows import SWAP_DEFAULT_BYTES, Feed, Row, blocks_range, overhead_rows, pool_rows
from boundary.vllm_log import Measure, VllmLog
from calc.catalog import Catalog
from calc.errors import InputError, describe, first_field
from calc.evaluate import resolve_checked
from calc.kv_cache import StageLayout
from calc.pool import PoolResult, size_pool, stage_layouts, whole_model_check, whole_model_layout
from calc.resolve import checkpoint_kv, checkpoint_kv_note
from calc.scenario import Scenario, field_constraints
from calc.specs import ModelSpec
from calc.units import GiB

__all__ = [
    "KV_KEYS", "SWAP_DEFAULT_BYTES", "Feed", "Reconciliation", "Row", "build_scenario", "calibration", "detect_gpu",
    "match_model", "reconcile",
]  # fmt: skip

KV_KEYS = ("available_kv_gib", "kv_cache_bytes", "num_gpu_blocks", "kv_cache_tokens", "max_concurrency",
           "error_available_gib", "kv_needed_gib")  # a failed start's ValueError sizes it too


@dataclass(frozen=True)
class Reconciliation:
    scenario: Scenario
    model_name: str
    gpu_name: str
    gpu_source: str
    gpu_assumed: bool
    logged: dict
    predicted: dict
    estimate: dict
    calibrated: dict
    rows: tuple[Row, ...]
    calibration: dict
    notes: tuple[str, ...]
    log: VllmLog = field(repr=False)
    failure: StartFailure | None = None
    """Set when the log is a start that failed for memory: what vLLM logged and the fixes."""

    @property
    def adopted(self) -> dict:
        """Every field that reproduces the log: the scenario's own (TP, PP, max_model_len, estimate_cudagraphs, …
        as the log states them) and the calibration. What the page's "Adopt" sets and `calc reconcile` prints as
        a command."""
        return {k: v for k, v in self.scenario.changed().items() if k != "custom_model"} | self.calibration

    @property
    def matches(self) -> dict[str, bool]:
        return {r.key: r.matches for r in self.rows if r.matches is not None}

    def to_dict(self) -> dict:
        rows = [{"key": r.key, "quantity": r.quantity, "unit": r.unit, "logged": r.logged, "predicted": r.predicted,
                 "residual": r.residual, "low": r.low, "high": r.high, "matches": r.matches,
                 "explanation": r.explanation} for r in self.rows]  # fmt: skip
        return {"model": self.scenario.model, "model_name": self.model_name, "gpu": self.scenario.gpu,
                "gpu_name": self.gpu_name, "gpu_source": self.gpu_source, "gpu_assumed": self.gpu_assumed,
                "engine": self.log.engine, "vllm_version": self.log.version, "logged": self.logged,
                "predicted": self.predicted, "estimate": self.estimate, "calibrated": self.calibrated, "rows": rows,
                "scenario": self.scenario.changed(), "calibration": self.calibration, "adopted": self.adopted,
                "matches": self.matches,
                "notes": list(self.notes), "does_not_fit": self.failure.message if self.failure else None,
                "fixes": list(self.failure.fixes) if self.failure else []}  # fmt: skip


def _pool_dict(m: PoolResult) -> dict:
    return {"kv_cache_memory_bytes": m.kv_cache_memory_bytes, "num_gpu_blocks": m.num_gpu_blocks,
            "kv_cache_tokens": m.kv_cache_tokens, "max_concurrency": m.max_concurrency}  # fmt: skip


def _stage(m: Measure, s: Scenario) -> int | None:
    """Pipeline stage of a worker line: vLLM ranks are pp_rank · tp + tp_rank."""
    if s.pipeline_parallel_size == 1:
        return 0
    if m.pp_rank is not None:
        return m.pp_rank
    return None if m.rank is None else min(m.rank // s.tensor_parallel_size, s.pipeline_parallel_size - 1)


FP8_KV_HINT = "matches with kv_cache_dtype=fp8"


def reconcile(log: VllmLog, catalog: Catalog, flags: dict | None = None,
              defaults: dict | None = None) -> Reconciliation:  # fmt: skip
    """Raises InputError when the log never reached KV sizing, names no known model, or breaks TP rules. A log that
    states no KV dtype and whose block count only fp8 explains (twice the blocks auto gives) is reconciled with
    kv_cache_dtype=fp8, said in a note and carried in the calibration."""
    flags = flags or {}
    rec = _reconcile(log, catalog, flags, defaults)
    blocks = [r for r in rec.rows if r.key == "num_gpu_blocks" and r.matches is False]
    if ("kv_cache_dtype" in flags or "kv_cache_dtype" in log_scenario_fields(log)[0] or not blocks
            or not all(r.explanation.startswith(FP8_KV_HINT) for r in blocks)):  # fmt: skip
        return rec
    again = _reconcile(log, catalog, flags | {"kv_cache_dtype": "fp8"}, defaults)
    note = ("kv_cache_dtype=fp8 inferred: the log states no KV dtype and holds twice the blocks the model's own dtype "
            "gives at the same memory (pass --kv-cache-dtype to set it)")  # fmt: skip
    return replace(again, notes=(note, *again.notes), calibration={"kv_cache_dtype": "fp8"} | again.calibration)


def _reconcile(log: VllmLog, catalog: Catalog, flags: dict, defaults: dict | None = None) -> Reconciliation:
    if not any(log.get(k) for k in KV_KEYS) and "kv_cache_memory_bytes" not in flags:
        raise InputError("log", "the log stops before vLLM sized the KV cache (no 'Available KV cache memory', "
                                "'# GPU blocks', 'GPU KV cache size' or 'Maximum concurrency' line): nothing to "
                                "reconcile; pass the whole startup log")  # fmt: skip
    s, gpu_source, assumed, notes = build_scenario(log, catalog, flags, defaults)
    notes += log.reading_notes
    model, gpu = resolve_checked(s, catalog)
    if model.quantization_config is not None and "dtype" not in flags and s.dtype != "auto":
        s = s.model_copy(update={"dtype": "auto"})  # the config's own format (a per-module NVFP4 / FP8 mix), not the log's word
        notes.append(f"dtype auto: the model's quantization_config ({model.quantization_config.quant_method}) is the "
                     "checkpoint's format, which the log's `quantization` only names")  # fmt: skip
    if (resolved := checkpoint_kv(s, model)) is not s:  # the checkpoint's FP8 KV scales: 'auto' is fp8
        s = resolved
        notes.append(checkpoint_kv_note(s, model))
    kv_model = _engine_layout_model(log, model, notes)
    est = size_pool(s, kv_model, gpu)
    if est.dtype_refusal:  # the plan of this scenario refuses it (a KV precision, a draft): the log ran all the same
        notes.append(f"the plan of this scenario refuses it: {est.dtype_refusal}; the rows below size the pool anyway")
    layouts = stage_layouts(s, kv_model, gpu)
    feeds, source = _feeds(log, s, layouts)
    feeds = _assign_stages(feeds, layouts, log, s, notes)
    if not feeds:
        feeds = [Feed(est.kv_cache_memory_bytes, 0.0, None, "the planner's estimate")]
    check = _start_check_layouts(s, kv_model, gpu)
    rows, logged, predicted = pool_rows(log, s, feeds, source, layouts, check)
    if check is not None and (log.get("kv_needed_gib") or log.get("error_available_gib")):  # a failed start
        notes.append(f"vLLM {s.engine_version} sizes its start check with every pipeline stage's layers against one "
                     "stage's pool (vllm#32105, fixed by vllm#33698, merged 2026-02): the fixes above are for a release that "
                     "checks each stage's own, where one request of max_model_len needs "
                     f"{est.blocks_per_max_len_request * est.layout.block_bytes / GiB:,.2f} GiB a GPU")  # fmt: skip
    rows = overhead_rows(log, est, feeds, layouts, assumed and s.memory_gib is None) + rows  # a given total is not assumed
    predicted["kv_cache_memory_bytes"] = est.kv_cache_memory_bytes
    pool = blocks_range(feeds, 0, layouts)
    cal = exact_pool(calibration(log, pool[2].bytes_ if source in ("logged", "implied") else None), logged, pool)
    cal, s_cal = adoptable(s, cal, notes)
    cal, s_cal = exact_overheads(cal, s_cal, logged, pool, kv_model, gpu)
    distinct = sorted({round(f.bytes_ / GiB, 4) for f in feeds}) if source == "logged" else []
    if len(distinct) > 1:
        notes.append(f"workers report different Available KV cache memory ({', '.join(map(str, distinct))} GiB); "
                     "the engine keeps the fewest blocks over workers (pipeline stages hold different layers)")  # fmt: skip
    if log.config.get("speculative_config", "None") != "None" and s.speculative_method == "none":
        notes.append("speculative decoding with a draft model (a separate checkpoint): its attention layers share the "
                     "pool and are not in the model spec (an EAGLE head is: --speculative-method eagle or eagle3)")  # fmt: skip
    if assumed:
        total = f"; its total memory is the given {s.memory_gib:g} GiB" if s.memory_gib is not None else ""
        notes.insert(0, f"GPU ASSUMED: {gpu.name} ({s.gpu}); the log names no device and no --gpu was given{total}")
    biggest = max((f.bytes_ for f in feeds if source == "logged"), default=0.0)
    logged_w = log.get("weights_gib")
    weights = max(m.value for m in logged_w) * GiB if logged_w else est.weights_bytes_per_gpu
    if biggest > gpu.memory_bytes:  # more KV memory than the whole GPU: the log ran on another
        notes.insert(0, f"WRONG GPU? the log's available KV cache memory ({biggest / GiB:,.2f} GiB) is more than the "
                        f"whole {gpu.name} ({gpu.memory_bytes / GiB:,.2f} GiB): it ran on another GPU; pick that one")  # fmt: skip
    elif biggest and biggest + weights > gpu.memory_bytes:  # the pool and the weights cannot share this GPU
        said = "logged" if logged_w else "planned"
        notes.insert(0, f"WRONG GPU? the log's available KV cache memory ({biggest / GiB:,.2f} GiB) and the {said} "
                        f"weights ({weights / GiB:,.2f} GiB) are more than the whole {gpu.name} "
                        f"({gpu.memory_bytes / GiB:,.2f} GiB): it ran on another GPU (or another model); pick that one")  # fmt: skip
    return Reconciliation(s, model.name, gpu.name, gpu_source, assumed, logged, predicted, _pool_dict(est),
                          _pool_dict(size_pool(s_cal, kv_model, gpu)), tuple(rows), cal, tuple(notes), log,
                          start_failure(log, s, kv_model, gpu))  # fmt: skip


def _start_check_layouts(s: Scenario, m: ModelSpec, gpu) -> list[StageLayout] | None:
    """The whole model as one stage where the release's start check sized it so (calc.pool.whole_model_check)."""
    return [whole_model_layout(s, m, gpu)] if whole_model_check(s) else None


def _engine_layout_model(log: VllmLog, m: ModelSpec, notes: list[str]) -> ModelSpec:
    """The KV layout the logged engine used: V0 has no sliding-window saving; vLLM < 0.7.1 stored MLA models as
    per-head K/V with head_size 256 (vllm_kv.md §1.2–1.3)."""
    update: dict = {}
    if log.engine == "V0" and m.sliding_layer_count:
        update["layer_types"] = ["full_attention" if t == "sliding_attention" else t for t in m.layer_types]
        notes.append("V0 engine: sliding-window layers are charged for the full context")
    version = log.version_tuple
    if m.is_mla and log.engine == "V0" and version is not None and version < (0, 7, 1):
        update |= {"kv_lora_rank": None, "head_dim": 256}
        notes.append(f"vLLM {log.version} predates MLA support: K and V stored per head, {m.kv_heads} heads × 256")
    elif m.is_mla and log.engine == "V0" and version is None:
        notes.append("MLA model on V0 of unknown version: releases before 0.7.1 stored K/V per head (256 wide)")
    return ModelSpec.model_validate(m.model_dump() | update) if update else m


def _feeds(log: VllmLog, s: Scenario, layouts: list[StageLayout]) -> tuple[list[Feed], str]:
    """What to feed back: --kv-cache-memory-bytes, the exact 0.10.2 bytes, the per-worker Available lines, the pool
    the logged blocks imply, or (nothing logged) the planner's estimate."""
    if s.kv_cache_memory_bytes is not None:
        return [Feed(s.kv_cache_memory_bytes, 0.0, None, "--kv-cache-memory-bytes")], "flag"
    exact = log.get("kv_cache_bytes")
    if exact:
        return [Feed(min(m.value for m in exact), 0.0, None, "Current kv cache memory in use")], "logged"
    avail = log.get("available_kv_gib")
    if avail:
        return [Feed(m.value * GiB, m.half_unit * GiB, _stage(m, s), m.worker or f"line {m.line_no}")
                for m in avail], "logged"  # fmt: skip
    blocks = log.get("num_gpu_blocks")
    tokens = log.get("kv_cache_tokens")
    n = min(m.value for m in blocks) if blocks else None
    if n is None and tokens and all(len(lay.groups) == 1 for lay in layouts):
        n = min(m.value for m in tokens) // s.block_size  # ≤ 0.19 prints blocks · block_size
    if n is not None:
        per_block = max(lay.block_bytes for lay in layouts)
        return [Feed(n * per_block, 0.0, None, "implied by the logged blocks")], "implied"
    return [], "estimate"


def _logged_blocks(log: VllmLog, s: Scenario, lay: StageLayout) -> float | None:
    """The block count the log's own lines state or imply (blocks; tokens ≤ 0.19 = blocks · block_size;
    concurrency · blocks per max_model_len request)."""
    if log.get("num_gpu_blocks"):
        return min(m.value for m in log.get("num_gpu_blocks"))
    if log.get("max_concurrency"):
        per = lay.blocks_per_request(s.max_model_len, max_num_batched_tokens=s.max_num_batched_tokens)
        return min(m.value for m in log.get("max_concurrency")) * per
    if log.get("kv_cache_tokens") and len(lay.groups) == 1:
        return min(m.value for m in log.get("kv_cache_tokens")) / lay.block_size / s.decode_context_parallel_size
    return None


def _assign_stages(feeds: list[Feed], layouts: list[StageLayout], log: VllmLog, s: Scenario,
                   notes: list[str]) -> list[Feed]:  # fmt: skip
    """Workers whose pipeline stage the log does not say (no rank prefix): give each distinct logged memory its
    own stage, the assignment that reproduces the log's block count — never one memory for every stage, which would
    pair the smaller memory with the stage of more layers."""
    unknown = [f for f in feeds if f.stage is None]
    values = list(dict.fromkeys(f.bytes_ for f in unknown))
    if len(layouts) == 1 or not unknown or len(values) > len(layouts):
        return feeds
    known = [f for f in feeds if f.stage is not None]
    target = _logged_blocks(log, s, layouts[0])
    best = None
    for perm in permutations(range(len(layouts)), len(values)):
        trial = known + [replace(f, stage=perm[values.index(f.bytes_)]) for f in unknown]
        blocks = blocks_range(trial, 0, layouts)[0]
        score = abs(blocks - target) if target is not None else -blocks
        if best is None or score < best[0]:
            best = (score, trial, perm)
    notes.append("the log does not say which worker is which pipeline stage: each logged memory was given the stage "
                 "that reproduces the logged block count" if target is not None else "the log does not say which "
                 "worker is which pipeline stage: stages were assigned so that no stage is charged another's memory")  # fmt: skip
    return best[1]  # type: ignore[index]


def exact_pool(cal: dict, logged: dict, pool) -> dict:
    """A logged pool in GiB carries two decimals (±0.005 GiB, several blocks): adopt instead the whole number of
    bytes that gives the logged block count exactly (blocks × bytes per block), when the two agree within that
    rounding — so the adopted scenario reproduces the log to the block (7,504 × 917,504 B = 6,884,950,016 B, not
    6.41 GiB = 6,882,685,091.84 B, which is 7,501 blocks)."""
    blocks = logged.get("num_gpu_blocks")
    if "kv_cache_memory_bytes" not in cal or not blocks:
        return cal
    _, layout, feed = pool
    exact = int(blocks) * int(layout.block_bytes)
    if abs(exact - cal["kv_cache_memory_bytes"]) <= feed.slack_bytes + layout.block_bytes:
        return cal | {"kv_cache_memory_bytes": float(exact)}
    return cal


def exact_overheads(cal: dict, s_cal: Scenario, logged: dict, pool, model: ModelSpec, gpu) -> tuple[dict, Scenario]:
    """Adopted overheads of two decimals each (V0's profiling line: weights, activation, non-torch, total) rebuild
    the pool a block or two from the logged count (vllm#10517's 20k log: 1,951 for 1,952): where that is within
    their rounding, the non-torch memory takes the difference, so the calibrated plan gives the logged blocks."""
    blocks = logged.get("num_gpu_blocks")
    if not blocks or "non_torch_memory_bytes" not in cal or "kv_cache_memory_bytes" in cal:
        return cal, s_cal
    _, layout, feed = pool
    got = size_pool(s_cal, model, gpu).kv_cache_memory_bytes
    target = (int(blocks) + 0.5) * layout.block_bytes  # the middle of the logged block: no float lands it a block off
    delta = got - target
    if abs(delta) > feed.slack_bytes * 4 + layout.block_bytes or cal["non_torch_memory_bytes"] + delta < 0:
        return cal, s_cal
    cal = cal | {"non_torch_memory_bytes": float(round(cal["non_torch_memory_bytes"] + delta))}
    return cal, s_cal.model_copy(update={"non_torch_memory_bytes": cal["non_torch_memory_bytes"]})


CAL_SOURCES = {"weights_memory_bytes": "'Model loading took'", "activation_memory_bytes": "activation peak",
               "non_torch_memory_bytes": "non-torch memory", "cudagraph_memory_bytes": "CUDA graph memory",
               "kv_cache_memory_bytes": "KV cache pool", "memory_gib": "total GPU memory",
               "gpu_memory_utilization": "gpu_memory_utilization"}  # fmt: skip
"""The log quantity each calibration override comes from, as a note names it."""


def _allowed(name: str) -> str:
    """'≥ 0, ≤ 931,323 GiB' for a Scenario field in bytes (its constraints shown in GiB), else its bare bounds."""
    scale, unit = (GiB, " GiB") if name.endswith("_bytes") else (1, "")
    parts = []
    for meta in field_constraints(name):
        for attr, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if getattr(meta, attr, None) is not None:
                parts.append(f"{sym} {getattr(meta, attr) / scale:,.6g}{unit}")
    return ", ".join(parts)


def adoptable(s: Scenario, cal: dict, notes: list[str]) -> tuple[dict, Scenario]:
    """The calibration the Scenario accepts, and the scenario with it. A logged value it refuses ('Model loading took
    1000000.0 GiB': weights above the 10¹⁵-byte bound) is left out and named in a note with the allowed range."""
    for _ in range(len(cal) + 1):
        try:
            return cal, Scenario.model_validate({**s.model_dump(), **cal})
        except ValidationError as e:
            name = first_field(e)
            if name not in cal:
                raise InputError(name, describe(e)) from None
            value = cal[name] / GiB if name.endswith("_bytes") else cal[name]
            shown = f"{value:,.2f} GiB" if name.endswith("_bytes") else f"{value:g}"
            notes.append(f"ignored the log's {CAL_SOURCES.get(name, name)} ({shown}): {name} allows {_allowed(name)}")
            cal = {k: v for k, v in cal.items() if k != name}
    raise InputError("log", "could not adopt the log's values")  # pragma: no cover


def calibration(log: VllmLog, pool_bytes: float | None) -> dict:
    """Scenario overrides that adopt the logged overheads: weights from "Model loading took"; the pool in whole bytes
    where the log prints it so ("Current kv cache memory in use is B bytes", 0.10.2 on: the overheads beside it carry
    two decimals each, and rebuilt from them the pool misses by blocks — 14,849 for Qwen3-235B's logged 14,834 on
    eight L40S); else activation and non-torch memory where the V0 profiling or "Actual usage" line prints them
    (0.6.4: activation = peak torch − weights); otherwise the pool itself (`pool_bytes`: logged or implied, of the
    worker with the fewest blocks)."""
    cal: dict = {}
    weights = log.get("weights_gib")
    if weights:
        cal["weights_memory_bytes"] = max(m.value for m in weights) * GiB
    act = [m.value for m in log.get("activation_gib")]
    if not act and weights and log.get("peak_torch_gib"):
        act = [max(m.value for m in log.get("peak_torch_gib")) - max(m.value for m in weights)]
    non_torch = [m.value for m in log.get("non_torch_gib")]
    graphs = log.get("cudagraph_gib") or log.get("cudagraph_estimate_gib")
    if graphs:
        # "took -0.22 GiB" happens (the pool freed cached memory while capturing): a negative cost is no cost
        cal["cudagraph_memory_bytes"] = max(0.0, max(m.value for m in graphs)) * GiB
    exact = log.get("kv_cache_bytes")
    if exact:
        cal["kv_cache_memory_bytes"] = min(m.value for m in exact)
    elif act and non_torch and weights:
        cal["activation_memory_bytes"] = max(0.0, max(act)) * GiB
        cal["non_torch_memory_bytes"] = max(0.0, max(non_torch)) * GiB
        for key, out in (("total_memory_gib", "memory_gib"), ("gpu_memory_utilization", "gpu_memory_utilization")):
            if log.first(key):
                cal[out] = log.first(key).value  # type: ignore[union-attr]
    elif pool_bytes is not None and pool_bytes > 0:  # a failed start's pool (≤ 0) is nothing to adopt
        cal["kv_cache_memory_bytes"] = pool_bytes
    # whole bytes (a GiB figure with two decimals times 2^30 has a fraction): every surface prints the same number
    return {k: float(round(v)) if k.endswith("_bytes") else v for k, v in cal.items()}
