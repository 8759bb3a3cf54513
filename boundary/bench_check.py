"""Published benchmark runs against the planner's prediction: per run, per metric, the relative error.

Serve runs are replayed through the scheduler simulation with the run's own load (closed loop, request rate, or
every prompt at once); static-batch runs through `calc.bench.static_batch`. Metrics, as the tools print them:
TPOT (median, else mean, else median ITL), the median ITL of a closed loop that printed a TPOT too (the decode
step alone, without the stalls TPOT carries; under a burst the client reads its streams in clumps, so not there),
TTFT (median, else mean), output throughput, and `vllm bench latency`'s average latency. Error = predicted /
measured − 1. The fit weighs the ITL at nothing (scripts/calibrate.py WEIGHTS): it is reported, not fitted.

TTFT is kept apart for a burst (every prompt sent at once, more than the engine starts in one step): its median
is the time the queue takes to drain, a throughput figure, not the first-token latency a steady load sees.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from boundary.bench_data import BenchRun, decoded_share, printed_ms
from calc import bench
from calc.evaluate import evaluate

METRICS = ("tpot", "itl", "ttft", "ttft_burst", "throughput", "latency")
MIN_TPOT_TOKENS = 16  # a TPOT over fewer gaps measures the front-end's streaming, not decoding
STALL_SHARE, STALL_RATIO = 0.2, 5.0  # an outlier (p99 > 5 × median) that holds up a fifth of the run


@dataclass(frozen=True)
class RunCheck:
    run: BenchRun
    measured: dict[str, float]
    predicted: dict[str, float]

    def error(self, metric: str) -> float | None:
        m, p = self.measured.get(metric), self.predicted.get(metric)
        return None if m is None or p is None or m <= 0 else p / m - 1


def is_burst(run: BenchRun) -> bool:
    """Every prompt at t = 0 with no concurrency cap, and more than the engine starts in one step: more prompts than
    its batch (max_num_seqs), or more prompt tokens than one step's budget (max_num_batched_tokens). 1,000 prompts of
    128 tokens wait for 16 steps of 8,192 however many sequences the engine may run: on an H100 (1,024 sequences) as
    on an A100 (256)."""
    s = run.scenario
    unpaced = run.request_rate is None or math.isinf(run.request_rate)
    return run.kind == "serve" and unpaced and run.max_concurrency is None and \
        (run.num_prompts > (s.max_num_seqs or 256) or run.num_prompts * s.input_len > s.max_num_batched_tokens)  # fmt: skip


def stalled(run: BenchRun) -> bool:
    """A closed loop in which one request waited for its first token far longer than the rest (p99 over STALL_RATIO
    × the median) and for more than STALL_SHARE of the whole run: a server still warming up (compiling kernels or
    capturing graphs for a new shape). The medians are the steady state's, but the run's duration, hence its
    throughput, carries the stall, which no replay has. Massed Compute's RTX PRO 6000 vLLM runs: 21.9 s of a 26.7 s
    run for 5 requests of 128 + 128 tokens."""
    d = run.measured
    p99, median = d.get("p99_ttft_ms") or 0.0, d.get("median_ttft_ms") or math.inf
    return (run.max_concurrency is not None and p99 > STALL_RATIO * median
            and p99 / 1e3 > STALL_SHARE * (d.get("duration_s") or math.inf))  # fmt: skip


def measured(run: BenchRun) -> dict[str, float]:
    """The metrics a run printed, in seconds and tokens/s (a stalled run's throughput left out)."""
    d, out = run.measured, {}
    ttft, tpot = printed_ms(d)
    if tpot and run.scenario.output_len >= MIN_TPOT_TOKENS:
        out["tpot"] = tpot / 1e3
        if run.max_concurrency and d.get("median_itl_ms") and (d.get("median_tpot_ms") or d.get("mean_tpot_ms")):
            out["itl"] = d["median_itl_ms"] / 1e3  # the decode step alone, beside TPOT's stalls
    if ttft:
        out["ttft_burst" if is_burst(run) else "ttft"] = ttft / 1e3
    if d.get("output_throughput") and not stalled(run):
        out["throughput"] = float(d["output_throughput"])
    lat = d.get("avg_latency_s") or d.get("p50_latency_s") or (d.get("mean_latency_ms") or 0) / 1e3
    if run.kind == "latency" and lat:
        out["latency"] = float(lat)
    return out


def predict(run: BenchRun, catalog, *, engine=None, max_prompts: int | None = None) -> dict[str, float]:
    """The same metrics from the planner (optionally with another engine spec, and at most max_prompts of a run's
    prompts where that keeps its load, for fitting)."""
    if engine is not None:
        catalog = replace(catalog, engines={**catalog.engines, run.scenario.engine: engine})
    r = evaluate(run.scenario, catalog)
    s = run.scenario
    if run.kind == "latency":
        lat = bench.static_batch(r, batch_size=run.batch_size or 1, input_len=s.input_len, output_len=s.output_len)
        return {"latency": lat.latency_s}
    d = replay(run, catalog, max_prompts=max_prompts, report=r).bench_summary()
    uses_median = "median_tpot_ms" in run.measured or "mean_tpot_ms" not in run.measured
    tpot = d["median_tpot_ms"] if uses_median else d["mean_tpot_ms"]
    ttft = d["median_ttft_ms"] if "median_ttft_ms" in run.measured else d["mean_ttft_ms"]
    return {"tpot": tpot / 1e3, "itl": d["median_itl_ms"] / 1e3, "ttft_burst" if is_burst(run) else "ttft": ttft / 1e3,
            "throughput": d["output_throughput"]}  # fmt: skip


def replay(run: BenchRun, catalog, *, max_prompts: int | None = None, report=None):
    """A serve run replayed through the scheduler simulation (calc.bench.serve) with its own load: its prompts,
    concurrency cap or rate, length spread, dataset and early ends; `report` the evaluated scenario if at hand."""
    r = report if report is not None else evaluate(run.scenario, catalog)
    # A shorter replay keeps a closed loop's or a paced run's load; an unpaced, uncapped run sends every prompt at
    # once, so fewer prompts would be a lighter load (200 of 1,000: fewer in flight, a shorter queue). Never cut.
    unpaced = (run.request_rate is None or math.isinf(run.request_rate)) and run.max_concurrency is None
    n = run.num_prompts if max_prompts is None or unpaced else min(run.num_prompts, max_prompts)
    return bench.serve(r, num_prompts=max(n, run.max_concurrency or 1), max_concurrency=run.max_concurrency,
                       request_rate=run.request_rate or math.inf, range_ratio=run.range_ratio, dataset=run.dataset,
                       decoded_share=decoded_share(run))  # fmt: skip


def check(runs: list[BenchRun], catalog, **kw) -> list[RunCheck]:
    return [RunCheck(r, measured(r), predict(r, catalog, **kw)) for r in runs]


def closed_loop(runs: list[BenchRun]) -> list[BenchRun]:
    """The serve runs the closed forms describe: a fixed number in flight (`--max-concurrency C`)."""
    return [r for r in runs if r.kind == "serve" and r.max_concurrency]


def check_closed_form(runs: list[BenchRun], catalog) -> list[RunCheck]:
    """The closed forms the headline, the SLOs and the search use (calc.latency at C = the run's concurrency)
    against what the closed-loop runs printed: TTFT, TPOT and output throughput."""
    out = []
    for r in closed_loop(runs):
        lat = evaluate(r.scenario, catalog).latency
        out.append(RunCheck(r, measured(r), {"ttft": lat.ttft_s, "tpot": lat.tpot_s,
                                             "throughput": lat.output_tokens_per_s}))  # fmt: skip
    return out


def summary(checks: list[RunCheck]) -> dict:
    """Median and p90 |error| per metric, overall and per GPU family, and each family's mean signed error (bias)."""
    out: dict = {"runs": len(checks), "metrics": {}, "families": {}}
    for metric in METRICS:
        if mine := [c for c in checks if c.error(metric) is not None]:
            out["metrics"][metric] = _stats(mine, metric)
    for fam in sorted({c.run.gpu_family for c in checks}):
        fam_checks = [c for c in checks if c.run.gpu_family == fam]
        out["families"][fam] = {m: _stats(mine, m) for m in METRICS
                                if (mine := [c for c in fam_checks if c.error(m) is not None])}  # fmt: skip
    return out


def _stats(checks: list[RunCheck], metric: str) -> dict:
    """n, median and p90 |error|, mean signed error, and the groups (source × checkpoint × GPU) the runs come from:
    ten runs of one group are one source's host and harness, not ten."""
    errs = [c.error(metric) for c in checks]
    a = sorted(abs(e) for e in errs)
    p90 = a[min(len(a) - 1, math.ceil(0.9 * len(a)) - 1)]
    return {"n": len(errs), "median_abs": statistics.median(a), "p90_abs": p90, "bias": statistics.fmean(errs),
            "groups": len({c.run.group for c in checks})}  # fmt: skip
