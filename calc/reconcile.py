"""Hold a parsed vLLM startup log against the planner: line by line, logged vs predicted, and what explains a gap.

The check the issue asks for (reference/vllm_kv.md §4–§5): feed the logged "Available KV cache memory" back in
(kv_cache_memory_bytes = X GiB · 2^30) and re-derive, per worker, `blocks = floor(X / page / layers_per_group)`; the
engine keeps the fewest blocks over workers. The logged X is rounded to two decimals, so the blocks must lie between
the values at X − 0.005 and X + 0.005 GiB; concurrency and "GPU KV cache size" follow from the blocks:

    concurrency = blocks / ceil(L / block_size)   (V1 ≥ 0.9; V0 and V1 0.7–0.8 print blocks · block_size / L)
    tokens      = blocks · block_size             (≤ 0.19)  or  int(concurrency · L)  (≥ 0.20)

LMCache #1739 (Qwen3-14B, 163,840 B/token): 6.51 GiB → 2,666 blocks (2,664 – 2,668) = 42,656 tokens, 2,666 / 2,048 = 1.30x.
The overhead lines (weights, activation, non-torch, CUDA graphs) are compared with the planner's estimates, and the
measured ones become `calibration`: Scenario overrides that adopt them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from calc.catalog import Catalog
from calc.errors import InputError, describe, first_field
from calc.evaluate import resolve
from calc.kv_cache import StageLayout, blocks_per_request, pp_layer_ranges, stage_layout
from calc.memory import MemoryResult, size_pool, tp_check
from calc.scenario import Scenario
from calc.specs import ModelSpec
from calc.units import GiB
from calc.vllm_log import Measure, VllmLog, log_scenario_fields

KV_KEYS = ("available_kv_gib", "kv_cache_bytes", "num_gpu_blocks", "kv_cache_tokens", "max_concurrency")
SWAP_DEFAULT_BYTES = 4 * GiB  # vLLM V0 --swap-space default, for "# CPU blocks"


@dataclass(frozen=True)
class Row:
    key: str
    quantity: str
    unit: str
    """'bytes', 'blocks', 'tokens' or 'x' (concurrency)."""
    logged: float | None
    predicted: float | None
    low: float | None = None
    """Prediction at the low end of the logged figure's rounding (None: no range)."""
    high: float | None = None
    matches: bool | None = None
    explanation: str = ""

    @property
    def residual(self) -> float | None:
        return None if self.logged is None or self.predicted is None else self.logged - self.predicted


@dataclass(frozen=True)
class Feed:
    """One worker's KV memory fed back in: the value, its rounding slack and its pipeline stage (None: unknown)."""

    bytes_: float
    slack_bytes: float
    stage: int | None
    label: str


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
                "scenario": self.scenario.changed(), "calibration": self.calibration, "matches": self.matches,
                "notes": list(self.notes)}  # fmt: skip


def _pool_dict(m: MemoryResult) -> dict:
    return {"kv_cache_memory_bytes": m.kv_cache_memory_bytes, "num_gpu_blocks": m.num_gpu_blocks,
            "kv_cache_tokens": m.kv_cache_tokens, "max_concurrency": m.max_concurrency}  # fmt: skip


def build_scenario(log: VllmLog, catalog: Catalog, flags: dict) -> tuple[Scenario, str, bool, list[str]]:
    """The Scenario the log describes; `flags` (validated Scenario fields) fill gaps and override the log.

    Returns (scenario, where the GPU came from, whether it was assumed, notes)."""
    data, notes = log_scenario_fields(log)
    if "tensor_parallel_size" not in data and "pipeline_parallel_size" not in data and len(log.workers) > 1:
        tp, pp = _split_from_ranks(log)
        data |= {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}
        notes.append(f"assumed tensor_parallel_size={tp}, pipeline_parallel_size={pp} from {len(log.workers)} worker "
                     "ranks; pass --tensor-parallel-size / --pipeline-parallel-size if the split differs")  # fmt: skip
    if "model" not in flags:
        names = [n for n in (log.config.get("model"), log.config.get("served_model_name")) if n]
        hint = log.header.get("model", "").split(" ")[0]
        names += [hint] if "/" in hint else []
        ids = [match_model(n, catalog) for n in names]
        if not any(ids):
            said = f"names model '{names[0]}', which is not a shipped spec" if names else "does not name its model"
            raise InputError("model", f"the log {said}; pass --model ID (see `python -m calc models`) or --model "
                                      "PATH to a config.json")  # fmt: skip
        data["model"] = next(i for i in ids if i)
    gpu_source, assumed = "--gpu", False
    if "gpu" not in flags:
        total = log.first("total_memory_gib")
        gpu_id, gpu_source = detect_gpu(log, catalog, total.value if total else None)
        assumed = gpu_id is None
        data["gpu"] = gpu_id or Scenario.model_fields["gpu"].default
        if assumed:
            gpu_source = "ASSUMED (the log names no device; pass --gpu)"
    total, gpu_id = log.first("total_memory_gib"), flags.get("gpu", data.get("gpu"))
    spec_gib = catalog.gpus[gpu_id].memory_gib if gpu_id in catalog.gpus else None
    if total and spec_gib and abs(total.value - spec_gib) > 0.005:
        data["memory_gib"] = total.value
        notes.append(f"memory_gib={total.value} from the log's total GPU memory (spec: {spec_gib} GiB)")
    data |= flags
    if "max_model_len" not in data:
        notes.append(f"max_model_len is not in the log: using {Scenario.model_fields['max_model_len'].default} "
                     "(pass --max-model-len)")  # fmt: skip
    for _ in range(len(data) + 1):
        try:
            return Scenario.model_validate(data), gpu_source, assumed, notes
        except ValidationError as e:
            name = first_field(e)
            if name in flags or name not in data:
                raise InputError(name, describe(e)) from None
            notes.append(f"ignored the log's {name}={data.pop(name)!r} ({describe(e)})")
    raise InputError("log", "could not build a scenario from the log")  # pragma: no cover


def _split_from_ranks(log: VllmLog) -> tuple[int, int]:
    """(tp, pp) guessed from worker ranks: consecutive ranks 0..n−1 whose Available memory falls into k equal runs
    of one value each look like k pipeline stages (rank = pp_rank · tp + tp_rank); otherwise all ranks are TP."""
    n = len(log.workers)
    by_rank = {m.rank: m.value for m in log.get("available_kv_gib") if m.rank is not None}
    if sorted(by_rank) != list(range(n)):
        return n, 1
    runs = [1]
    for r in range(1, n):
        runs[-1:] = [runs[-1] + 1] if by_rank[r] == by_rank[r - 1] else [runs[-1], 1]
    return (n // len(runs), len(runs)) if len(runs) > 1 and len(set(runs)) == 1 else (n, 1)


def _stage(m: Measure, s: Scenario) -> int | None:
    """Pipeline stage of a worker line: vLLM ranks are pp_rank · tp + tp_rank."""
    if s.pipeline_parallel_size == 1:
        return 0
    if m.pp_rank is not None:
        return m.pp_rank
    return None if m.rank is None else min(m.rank // s.tensor_parallel_size, s.pipeline_parallel_size - 1)


def _blocks(feeds: list[Feed], sign: int, page: float, layouts: list[StageLayout], extra_layers: int = 0):
    """Fewest blocks over workers at value + sign · slack: (blocks, binding layout, binding feed)."""
    best = None
    for f in feeds:
        avail = f.bytes_ + sign * f.slack_bytes
        for st in range(len(layouts)) if f.stage is None else [f.stage]:
            lay = layouts[st]
            b = max(0, int(avail // page // (lay.layers_per_group + extra_layers))) if avail > 0 else 0
            if best is None or b < best[0]:
                best = (b, lay, f)
    return best


def reconcile(log: VllmLog, catalog: Catalog, flags: dict | None = None) -> Reconciliation:
    """Raises InputError when the log never reached KV sizing, names no known model, or breaks TP rules."""
    flags = flags or {}
    if not any(log.get(k) for k in KV_KEYS) and "kv_cache_memory_bytes" not in flags:
        raise InputError("log", "the log stops before vLLM sized the KV cache (no 'Available KV cache memory', "
                                "'# GPU blocks', 'GPU KV cache size' or 'Maximum concurrency' line): nothing to "
                                "reconcile; pass the whole startup log")  # fmt: skip
    s, gpu_source, assumed, notes = build_scenario(log, catalog, flags)
    model, gpu = resolve(s, catalog)
    problem = tp_check(s, model)
    if problem:
        raise InputError("tensor_parallel_size" if "tensor" in problem else "pipeline_parallel_size", problem)
    kv_model = _engine_layout_model(log, model, notes)
    est = size_pool(s, kv_model, gpu)
    page, block = est.page_bytes, est.block_size
    layouts = [stage_layout(kv_model, r) for r in pp_layer_ranges(kv_model.num_hidden_layers, s.pipeline_parallel_size)]
    feeds, source = _feeds(log, s, page, layouts)
    if not feeds:
        feeds = [Feed(est.kv_cache_memory_bytes, 0.0, None, "the planner's estimate")]
    rows, logged, predicted = _pool_rows(log, s, feeds, source, page, block, layouts)
    rows = _overhead_rows(log, est, feeds, layouts, page, assumed) + rows
    predicted["kv_cache_memory_bytes"] = est.kv_cache_memory_bytes
    cal = calibration(log, _blocks(feeds, 0, page, layouts)[2].bytes_ if source in ("logged", "implied") else None)
    s_cal = Scenario.model_validate({**s.model_dump(), **cal})
    distinct = sorted({round(f.bytes_ / GiB, 4) for f in feeds}) if source == "logged" else []
    if len(distinct) > 1:
        notes.append(f"workers report different Available KV cache memory ({', '.join(map(str, distinct))} GiB); "
                     "the engine keeps the fewest blocks over workers (pipeline stages hold different layers)")  # fmt: skip
    if log.config.get("speculative_config", "None") != "None":
        notes.append("speculative decoding: draft-model attention layers share the pool and are not in the model spec")
    if assumed:
        notes.insert(0, f"GPU ASSUMED: {gpu.name} ({s.gpu}); the log names no device and no --gpu was given")
    return Reconciliation(s, model.name, gpu.name, gpu_source, assumed, logged, predicted, _pool_dict(est),
                          _pool_dict(size_pool(s_cal, kv_model, gpu)), tuple(rows), cal, tuple(notes), log)  # fmt: skip


def _engine_layout_model(log: VllmLog, m: ModelSpec, notes: list[str]) -> ModelSpec:
    """The KV layout the logged engine used: V0 has no sliding-window saving; vLLM < 0.7.1 stored MLA models as
    per-head K/V with head_size 256 (vllm_kv.md §1.2–1.3)."""
    update: dict = {}
    if log.engine == "V0" and m.sliding_layer_count:
        update["use_sliding_window"] = False
        notes.append("V0 engine: sliding-window layers are charged for the full context")
    version = log.version_tuple
    if m.is_mla and log.engine == "V0" and version is not None and version < (0, 7, 1):
        update |= {"kv_lora_rank": None, "head_dim": 256}
        notes.append(f"vLLM {log.version} predates MLA support: K and V stored per head, {m.kv_heads} heads × 256")
    elif m.is_mla and log.engine == "V0" and version is None:
        notes.append("MLA model on V0 of unknown version: releases before 0.7.1 stored K/V per head (256 wide)")
    return m.model_copy(update=update) if update else m


def _feeds(log: VllmLog, s: Scenario, page: float, layouts: list[StageLayout]) -> tuple[list[Feed], str]:
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
        per_block = page * max(lay.layers_per_group for lay in layouts)
        return [Feed(n * per_block, 0.0, None, "implied by the logged blocks")], "implied"
    return [], "estimate"


def calibration(log: VllmLog, pool_bytes: float | None) -> dict:
    """Scenario overrides that adopt the logged overheads: weights from "Model loading took"; activation and
    non-torch memory where the V0 profiling or 0.10.2 "Actual usage" line prints them (0.6.4: activation = peak torch
    − weights); otherwise the pool itself (`pool_bytes`: logged or implied, of the worker with the fewest blocks)."""
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
        cal["cudagraph_memory_bytes"] = max(m.value for m in graphs) * GiB
    if act and non_torch and weights:
        cal["activation_memory_bytes"] = max(0.0, max(act)) * GiB
        cal["non_torch_memory_bytes"] = max(0.0, max(non_torch)) * GiB
        for key, out in (("total_memory_gib", "memory_gib"), ("gpu_memory_utilization", "gpu_memory_utilization")):
            if log.first(key):
                cal[out] = log.first(key).value  # type: ignore[union-attr]
    elif pool_bytes is not None:
        cal["kv_cache_memory_bytes"] = pool_bytes
    return cal


# --- names in the log → shipped spec ids -------------------------------------------------------------------------

_DEVICES = (
    (r"GH200", "gh200"), (r"H100[ _-]?NVL", "h100-nvl"), (r"H100[ _-]?PCIe", "h100-pcie"), (r"H100", "h100-sxm"),
    (r"H200", "h200"), (r"B200", "b200"), (r"A100[\w -]{0,12}80\s?GB", "a100-80gb-sxm"),
    (r"A100[\w -]{0,12}40\s?GB", "a100-40gb"), (r"L40S", "l40s"), (r"NVIDIA[ _]L4\b", "l4"), (r"A10G", "a10g"),
    (r"NVIDIA[ _]A10\b", "a10"), (r"RTX[ _]?3090", "rtx-3090"), (r"RTX[ _]?4090", "rtx-4090"),
    (r"RTX[ _]?5090", "rtx-5090"), (r"RTX[ _]6000[ _]Ada", "rtx-6000-ada"), (r"Tesla[ _]T4|NVIDIA[ _]T4\b", "t4"),
    (r"MI300X", "mi300x"), (r"MI325X", "mi325x"),
)  # fmt: skip


def _name_keys(name: str) -> set[str]:
    """A model name's last path component, lower-cased, with and without 'meta-' and an -Instruct/-Chat/-it suffix."""
    last = name.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    bare = last.removeprefix("meta-")
    for suffix in ("-instruct", "-chat", "-it"):
        bare = bare.removesuffix(suffix)
    return {last, bare}


def match_model(name: str, catalog: Catalog) -> str | None:
    """Shipped spec id for a logged model path or Hugging Face id: the hf_id, or the last path component against each
    spec's id, name and hf_id; then the same ignoring a 'meta-' prefix and an -Instruct/-Chat/-it suffix."""
    want = name.strip().rstrip("/").lower()
    last = want.rsplit("/", 1)[-1]
    for sid, m in catalog.models.items():
        if (m.hf_id or "").lower() == want or last in {sid, m.name.lower(), (m.hf_id or "").rsplit("/", 1)[-1].lower()}:
            return sid
    for sid, m in catalog.models.items():
        if _name_keys(want) & (_name_keys(sid) | _name_keys(m.name) | _name_keys(m.hf_id or sid)):
            return sid
    return None


def detect_gpu(log: VllmLog, catalog: Catalog, total_gib: float | None) -> tuple[str | None, str]:
    """GPU spec id from a device name in the log body, else the fixture header's '# gpu:', else the logged total
    memory (within 0.02 GiB of a spec's memory_gib). Returns (id or None, how it was found)."""
    body = "\n".join(log.lines)
    for where, text in (("device name in the log", body), ("the file's '# gpu:' header", log.header.get("gpu", ""))):
        for rx, sid in _DEVICES:
            m = re.search(rx, text, re.IGNORECASE)
            if m and sid in catalog.gpus:
                return sid, f"{where} ('{m.group(0)}')"
    if total_gib is not None:
        near = [sid for sid, g in catalog.gpus.items() if abs(g.memory_gib - total_gib) <= 0.02]
        if near:
            alt = f"; also {', '.join(near[1:])}" if len(near) > 1 else ""
            return near[0], f"logged total memory {total_gib} GiB{alt}"
    return None, ""


# --- rows ------------------------------------------------------------------------------------------------------

_OVERHEADS = (
    ("total_memory_gib", "total_memory_bytes", "GPU total memory", "the GPU spec's memory_gib vs cudaMemGetInfo"),
    ("weights_gib", "weights_memory_bytes", "Model weights per GPU",
     "weights estimate (parameters × dtype / GPUs; quantization scales, MoE buffers, uneven splits not modelled)"),
    ("activation_gib", "activation_memory_bytes", "Activation peak",
     "activation estimate (profiling forward over max_num_batched_tokens; vllm_kv.md §8.1)"),
    ("non_torch_gib", "non_torch_memory_bytes", "Non-torch memory", "non-torch estimate (CUDA context, NCCL buffers)"),
    ("cudagraph_gib", "cudagraph_memory_bytes", "CUDA graphs", "CUDA graph estimate (captured after the pool ≤ 0.19)"),
    ("cudagraph_estimate_gib", "cudagraph_estimate_bytes", "CUDA graph estimate (vLLM)", "CUDA graph estimate"),
)  # fmt: skip


def _overhead_rows(log, est: MemoryResult, feeds, layouts, page, assumed: bool) -> list[Row]:
    predicted = {"total_memory_gib": est.total_memory_bytes, "weights_gib": est.weights_bytes_per_gpu,
                 "activation_gib": est.activation_bytes, "non_torch_gib": est.non_torch_bytes,
                 "cudagraph_gib": est.cudagraph_bytes, "cudagraph_estimate_gib": est.cudagraph_bytes}  # fmt: skip
    values = {k: max(m.value for m in log.get(k)) for k in predicted if log.get(k)}
    if "activation_gib" not in values and "peak_torch_gib" in log.measures and "weights_gib" in values:
        values["activation_gib"] = max(m.value for m in log.get("peak_torch_gib")) - values["weights_gib"]
    rows, terms = [], []
    for key, out, label, why in _OVERHEADS:
        if key not in values:
            continue
        logged, pred = values[key] * GiB, predicted[key]
        ok = abs(logged - pred) <= 0.005 * GiB
        rows.append(Row(out, label, "bytes", logged, pred, matches=ok, explanation="agrees" if ok else why))
        if key in ("weights_gib", "activation_gib", "non_torch_gib"):
            terms.append((abs(logged - pred), label.lower(), (logged - pred) / GiB))
    binding = _blocks(feeds, 0, page, layouts)[2]
    logged_kv = binding.bytes_ if binding.label != "the planner's estimate" else None
    why = []
    if terms:
        _, name, res = max(terms)
        why.append(f"largest logged term: {name} {res:+.2f} GiB")
    if len(terms) < 3:
        why.append("activation / non-torch memory not in the log (estimates)")
    if est.cudagraph_subtracted:
        why.append("CUDA-graph estimate subtracted (vLLM ≥ 0.20)")
    if assumed:
        why.append("total memory of an ASSUMED GPU")
    label = "Available KV cache memory" + ("" if binding.slack_bytes or "Current" in binding.label else " (implied)")
    ok = None if logged_kv is None else abs(logged_kv - est.kv_cache_memory_bytes) <= binding.slack_bytes
    rows.append(Row("kv_cache_memory_bytes", label, "bytes", logged_kv, est.kv_cache_memory_bytes, matches=ok,
                    explanation="; ".join(why)))  # fmt: skip
    return rows


def _need(lay: StageLayout, tokens: int, s: Scenario, block: int) -> int:
    return blocks_per_request(lay, tokens, block_size=block, max_num_batched_tokens=s.max_num_batched_tokens)


def _candidates(kind: str, b: int, lay: StageLayout, s: Scenario, block: int, v0: bool, new: bool) -> list:
    """(print convention, value) for one pool, most likely convention first."""
    L = s.max_model_len
    conc = [("blocks / ⌈L / block_size⌉ (V1 ≥ 0.9)", b / _need(lay, L, s, block))]
    flat = [("blocks · block_size / L (V0, V1 0.7–0.8)", b * block / L)]
    if kind == "max_concurrency":
        return flat if v0 else conc + flat
    old = [("blocks · block_size (≤ 0.19)", b * block)]
    if len(lay.groups) > 1:
        old.append(("blocks // groups · block_size (hybrid, 0.11–0.19)", b // len(lay.groups) * block))
    newer = [("int(concurrency · L) (≥ 0.20)", int(conc[0][1] * L))]
    return newer + old if new else old + newer


def _pool_rows(log: VllmLog, s: Scenario, feeds, source, page, block, layouts) -> tuple[list[Row], dict, dict]:
    v0, version = log.engine == "V0", log.version_tuple
    new = bool(version and version >= (0, 20))
    pools = [_blocks(feeds, sign, page, layouts) for sign in (-1, 0, 1)]
    binding = pools[1][2]
    logged: dict = {}
    if source == "logged":
        logged["kv_cache_memory_bytes"] = binding.bytes_
    predicted = {"num_gpu_blocks": pools[1][0],
                 "max_concurrency": _candidates("max_concurrency", *pools[1][:2], s, block, v0, new)[0][1],
                 "kv_cache_tokens": _candidates("kv_cache_tokens", *pools[1][:2], s, block, v0, new)[0][1]}  # fmt: skip
    if source == "implied":
        base = "pool implied by the logged blocks (no Available line): checks block_size, max_model_len, formula"
    elif binding.slack_bytes:
        base = (f"within the rounding of the logged {binding.bytes_ / GiB:g} GiB (±{binding.slack_bytes / GiB:g} GiB"
                f", {binding.label})")  # fmt: skip
    else:
        base = f"from {binding.label}"
    blocks_logged = [m.value for m in log.get("num_gpu_blocks")]
    tokens = log.get("kv_cache_tokens")
    if not blocks_logged and tokens and not new and len(layouts[0].groups) == 1:
        t = min(m.value for m in tokens)
        blocks_logged = [t // block] if t % block == 0 else []
    checks = [("num_gpu_blocks", "# GPU blocks", "blocks", blocks_logged, 0.0),
              ("kv_cache_tokens", "GPU KV cache size", "tokens", [m.value for m in tokens], 0.0),
              ("max_concurrency", f"Maximum concurrency at {s.max_model_len:,}", "x",
               [m.value for m in log.get("max_concurrency")], 0.005 + 1e-9)]  # fmt: skip
    rows = []
    for key, label, unit, values, tol in checks:
        if not values:
            continue
        val = min(values)
        logged[key] = val

        def cands(p, key=key):
            return [("blocks", p[0])] if key == "num_gpu_blocks" else _candidates(key, *p[:2], s, block, v0, new)

        lo, mid, hi = (cands(p) for p in pools)
        hit = next((i for i in range(len(mid)) if lo[i][1] - tol <= val <= hi[i][1] + tol), None)
        i = hit if hit is not None else 0
        predicted[key] = mid[i][1]
        note = base if hit is not None else _hypotheses(key, val, tol, feeds, page, layouts, s, block, v0, new)
        if hit is not None and key != "num_gpu_blocks":
            note += f"; printed as {mid[i][0]}"
        rows.append(Row(key, label, unit, val, mid[i][1], lo[i][1], hi[i][1], hit is not None, note))
    rows += _extra_rows(log, s, pools[1], page, block, layouts)
    return rows, logged, predicted


def _hypotheses(key, val, tol, feeds, page, layouts, s, block, v0, new) -> str:
    """Which single change would reproduce the logged value: another worker's pool, one more (draft) layer per
    block, or the other KV dtype."""
    trials = [(f"a different rank: matches {f.label}'s {f.bytes_ / GiB:g} GiB", [f], page, 0)
              for f in feeds if len(feeds) > 1]  # fmt: skip
    trials += [
        ("draft-model layers: matches with one extra attention layer", feeds, page, 1),
        ("matches with kv_cache_dtype=fp8 (half the bytes)", feeds, page / 2, 0),
        ("matches with a 16-bit KV cache (twice the bytes)", feeds, page * 2, 0),
    ]
    for text, fs, pg, extra in trials:
        lo, hi = (_blocks(fs, sign, pg, layouts, extra) for sign in (-1, 1))
        if key == "num_gpu_blocks":
            if lo[0] <= val <= hi[0]:
                return text
            continue
        for (_, a), (_, b) in zip(_candidates(key, *lo[:2], s, block, v0, new),
                                  _candidates(key, *hi[:2], s, block, v0, new), strict=True):  # fmt: skip
            if a - tol <= val <= b + tol:
                return text
    return "not explained by rounding, rank, draft layers or KV dtype: check the model, TP/PP and block_size"


def _extra_rows(log, s, pool, page, block, layouts) -> list[Row]:
    """V0 '# CPU blocks' (swap space / block bytes) and the V1 start-failure message's figures."""
    rows, lay = [], pool[1]
    cpu = log.get("num_cpu_blocks")
    if cpu:
        swap = float(log.config.get("swap_space", 0) or 0) * GiB or SWAP_DEFAULT_BYTES
        pred = int(swap // (page * lay.layers_per_group))
        rows.append(
            Row(
                "num_cpu_blocks",
                "# CPU blocks",
                "blocks",
                cpu[0].value,
                pred,
                matches=cpu[0].value == pred,
                explanation=f"swap_space {swap / GiB:g} GiB / (block_size · bytes per token · layers)",
            )
        )
    needed = log.first("kv_needed_gib")
    if needed and needed.arg:
        pred = _need(lay, needed.arg, s, block) * page * lay.layers_per_group
        ok = abs(needed.value * GiB - pred) <= needed.half_unit * GiB
        rows.append(
            Row(
                "kv_needed_bytes",
                f"KV needed for one {needed.arg:,}-token request",
                "bytes",
                needed.value * GiB,
                pred,
                matches=ok,
                explanation="Σ layers ⌈L / block_size⌉ · page",
            )
        )
    avail, est_len = log.first("error_available_gib"), log.first("estimated_max_model_len")
    if avail and est_len:
        fits = []
        for sign in (-1, 1):
            b = _blocks([Feed(avail.value * GiB, avail.half_unit * GiB, None, "")], sign, page, layouts)[0]
            lo, hi = 1, max(needed.arg if needed and needed.arg else s.max_model_len, 1)
            while hi - lo > 1:  # largest L with need(L) ≤ blocks (vLLM's estimate_max_model_len)
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _need(lay, mid, s, block) <= b else (lo, mid)
            fits.append(lo)
        ok = fits[0] <= est_len.value <= fits[1]
        rows.append(Row("estimated_max_model_len", f"Estimated max model length at {avail.value} GiB", "tokens",
                        est_len.value, (fits[0] + fits[1]) // 2, fits[0], fits[1], ok,
                        "the failed start's own available memory, ± its rounding"))  # fmt: skip
    return rows
