"""The rows of a reconciliation: `Row` and `Feed`, the fewest-blocks pool (`blocks_range`), and the builders for the
overhead lines, the pool lines (with their print-convention `_candidates` and gap `_hypotheses`) and the extra
V0 / start-failure lines."""

from __future__ import annotations

from dataclasses import dataclass, replace

from boundary.vllm_log import VllmLog
from calc.engine_spec import version_tuple
from calc.kv_cache import StageLayout, blocks_from_bytes
from calc.pool import PoolResult, prints_concurrency_tokens
from calc.scenario import Scenario
from calc.units import GiB

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


def blocks_range(feeds: list[Feed], sign: int, layouts: list[StageLayout], extra_layers: int = 0, scale: float = 1.0):
    """Fewest blocks over workers at value + sign · slack, each worker sized with its own stage's layers (all
    stages tried when a line's stage is unknown): (blocks, binding layout, binding feed). `extra_layers` adds draft
    layers to each block, `scale` multiplies the bytes per block (another KV dtype)."""
    best = None
    for f in feeds:
        avail = f.bytes_ + sign * f.slack_bytes
        for st in range(len(layouts)) if f.stage is None else [f.stage]:
            lay = layouts[st]
            b = blocks_from_bytes(avail, (lay.block_bytes + extra_layers * lay.page_bytes) * scale)
            if best is None or b < best[0]:
                best = (b, lay, f)
    return best


_OVERHEADS = (
    ("total_memory_gib", "total_memory_bytes", "GPU total memory", "the GPU spec's memory_gib vs cudaMemGetInfo"),
    ("weights_gib", "weights_memory_bytes", "Model weights per GPU",
     "weights estimate (parameters × dtype / GPUs; quantization scales, MoE buffers, uneven splits not modelled)"),
    ("activation_gib", "activation_memory_bytes", "Activation peak",
     "activation estimate (vLLM profiles one forward pass of max_num_batched_tokens tokens)"),
    ("non_torch_gib", "non_torch_memory_bytes", "Non-torch memory", "non-torch estimate (CUDA context, NCCL buffers)"),
    ("cudagraph_gib", "cudagraph_memory_bytes", "CUDA graphs", "CUDA graph estimate (captured after the pool ≤ 0.19)"),
    ("cudagraph_estimate_gib", "cudagraph_estimate_bytes", "CUDA graph estimate (vLLM)", "CUDA graph estimate"),
)  # fmt: skip


def overhead_rows(log, est: PoolResult, feeds, layouts, assumed: bool) -> list[Row]:
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
    binding = blocks_range(feeds, 0, layouts)[2]
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


def _need(lay: StageLayout, tokens: int, s: Scenario) -> int:
    return lay.blocks_per_request(tokens, max_num_batched_tokens=s.max_num_batched_tokens)


def _candidates(kind: str, b: int, lay: StageLayout, s: Scenario, v0: bool, new: bool,
                version: tuple[int, ...] | None = None) -> list:  # fmt: skip
    """(print convention, value) for one pool, most likely convention first; a log without its version may print
    either (`version` None)."""
    L, block = s.max_model_len, lay.block_size
    conc = [("blocks / ⌈L / block_size⌉ (V1 ≥ 0.9)", b / _need(lay, L, s))]
    flat = [("blocks · block_size / L (V0, V1 0.7–0.8)", b * block / L)]
    if kind == "max_concurrency":  # a V1 release that prints its version is one formula: 0.9 on, concurrency
        return flat if v0 or (version is not None and version < (0, 9)) else conc if version else conc + flat
    dcp = s.decode_context_parallel_size  # "Multiplying the GPU KV cache size by the dcp_world_size" (≤ 0.19)
    old = [("blocks · block_size (≤ 0.20.0)" + (f" × dcp {dcp}" if dcp > 1 else ""), b * block * dcp)]
    if len(lay.groups) > 1:
        old.append(("blocks // groups · block_size (hybrid, 0.11–0.20.0)", b // len(lay.groups) * block))
    newer = [("int(concurrency · L) (≥ 0.20.1)", int(conc[0][1] * L))]
    return newer + old if new else old + newer


def pool_rows(log: VllmLog, s: Scenario, feeds, source, layouts, check_layouts=None) -> tuple[list[Row], dict, dict]:
    """`check_layouts`: what the start check of a failed start sized, where not the stages' own (vLLM 0.14–0.15 at
    PP > 1: the whole model as one stage, calc.pool.PP_WHOLE_MODEL_CHECK)."""
    v0 = log.engine == "V0"
    version = log.version_tuple or (version_tuple(s.engine_version) if s.engine == "vllm" else None)
    new = bool(version) and prints_concurrency_tokens(version)
    pools = [blocks_range(feeds, sign, layouts) for sign in (-1, 0, 1)]
    binding, block = pools[1][2], pools[1][1].block_size
    logged: dict = {}
    if source == "logged":
        logged["kv_cache_memory_bytes"] = binding.bytes_
    predicted = {"num_gpu_blocks": pools[1][0],
                 "max_concurrency": _candidates("max_concurrency", *pools[1][:2], s, v0, new, version)[0][1],
                 "kv_cache_tokens": _candidates("kv_cache_tokens", *pools[1][:2], s, v0, new, version)[0][1]}  # fmt: skip
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
        per = block * s.decode_context_parallel_size  # ≤ 0.19 print blocks · block_size × dcp
        blocks_logged = [t // per] if t % per == 0 else []
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
            return [("blocks", p[0])] if key == "num_gpu_blocks" else _candidates(key, *p[:2], s, v0, new, version)

        lo, mid, hi = (cands(p) for p in pools)
        hit = next((i for i in range(len(mid)) if lo[i][1] - tol <= val <= hi[i][1] + tol), None)
        i = hit if hit is not None else 0
        predicted[key] = mid[i][1]
        note = base if hit is not None else _hypotheses(key, val, tol, feeds, layouts, s, v0, new, version)
        if hit is not None and key != "num_gpu_blocks":
            note += f"; printed as {mid[i][0]}"
        rows.append(Row(key, label, unit, val, mid[i][1], lo[i][1], hi[i][1], hit is not None, note))
    check = check_layouts or layouts
    whole = [replace(f, stage=None) for f in feeds]  # each feed against the one whole-model layout
    rows += _extra_rows(log, s, blocks_range(whole, 0, check) if check_layouts else pools[1], check)
    return rows, logged, predicted


def _hypotheses(key, val, tol, feeds, layouts, s, v0, new, version=None) -> str:
    """Which single change would reproduce the logged value: another worker's pool, one more (draft) layer per
    block, or the other KV dtype."""
    trials = [(f"a different rank: matches {f.label}'s {f.bytes_ / GiB:g} GiB", [f], 0, 1.0)
              for f in feeds if len(feeds) > 1]  # fmt: skip
    trials += [
        ("draft-model layers: matches with one extra attention layer", feeds, 1, 1.0),
        ("matches with kv_cache_dtype=fp8 (half the bytes)", feeds, 0, 0.5),
        ("matches with a 16-bit KV cache (twice the bytes)", feeds, 0, 2.0),
    ]
    for text, fs, extra, scale in trials:
        lo, hi = (blocks_range(fs, sign, layouts, extra, scale) for sign in (-1, 1))
        if key == "num_gpu_blocks":
            if lo[0] <= val <= hi[0]:
                return text
            continue
        for (_, a), (_, b) in zip(_candidates(key, *lo[:2], s, v0, new, version),
                                  _candidates(key, *hi[:2], s, v0, new, version), strict=True):  # fmt: skip
            if a - tol <= val <= b + tol:
                return text
    return "not explained by rounding, rank, draft layers or KV dtype: check the model, TP/PP and block_size"


def _extra_rows(log, s, pool, layouts) -> list[Row]:
    """V0 '# CPU blocks' (swap space / block bytes) and the V1 start-failure message's figures."""
    rows, lay = [], pool[1]
    cpu = log.get("num_cpu_blocks")
    if cpu:
        swap = float(log.config.get("swap_space", 0) or 0) * GiB or SWAP_DEFAULT_BYTES
        pred = blocks_from_bytes(swap, lay.block_bytes)
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
        pred = _need(lay, needed.arg, s) * lay.block_bytes
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
            b = blocks_range([Feed(avail.value * GiB, avail.half_unit * GiB, None, "")], sign, layouts)[0]
            lo, hi = 1, max(needed.arg if needed and needed.arg else s.max_model_len, 1)
            while hi - lo > 1:  # largest L with need(L) ≤ blocks (vLLM's estimate_max_model_len)
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _need(lay, mid, s) <= b else (lo, mid)
            fits.append(lo)
        ok = fits[0] <= est_len.value <= fits[1]
        rows.append(Row("estimated_max_model_len", f"Estimated max model length at {avail.value} GiB", "tokens",
                        est_len.value, (fits[0] + fits[1]) // 2, fits[0], fits[1], ok,
                        "the failed start's own available memory, ± its rounding"))  # fmt: skip
    return rows
