"""How far the latency estimates were from published runs they were not fitted on: the held-out error that
scripts/calibrate.py writes to tests/data/benchmarks/errors.json (read by calc.loader, never restated here).

The band shown next to an estimate is the held-out median |error| of that metric, for the GPU's architecture
family when enough of its runs were held out, else over all held-out runs."""

from __future__ import annotations

from dataclasses import dataclass

MIN_FAMILY_RUNS = 5
"""Fewer held-out runs of a family than this: the band over all runs is the better estimate."""


@dataclass(frozen=True)
class MetricError:
    n: int
    median_abs: float
    """Median of |predicted / measured − 1| over the held-out runs."""
    p90_abs: float
    bias: float
    """Mean signed error (predicted / measured − 1)."""


@dataclass(frozen=True)
class Accuracy:
    runs: int
    metrics: dict[str, MetricError]
    """'tpot', 'ttft', 'throughput', 'latency' over all held-out runs."""
    families: dict[str, dict[str, MetricError]]
    """The same per GPU architecture ('hopper', 'ampere', …)."""


@dataclass(frozen=True)
class ErrorBand:
    metric: str
    median_abs: float
    n: int
    scope: str
    """'hopper runs', 'all runs': which held-out runs the figure comes from."""


def error_band(acc: Accuracy | None, *, metric: str, arch: str) -> ErrorBand | None:
    """The held-out median |error| for `metric` on this architecture (or over all runs); None without data."""
    if acc is None:
        return None
    fam = acc.families.get(arch, {}).get(metric)
    if fam is not None and fam.n >= MIN_FAMILY_RUNS:
        return ErrorBand(metric, fam.median_abs, fam.n, f"held-out {arch} runs")
    all_runs = acc.metrics.get(metric)
    if all_runs is None or all_runs.n == 0:
        return None
    return ErrorBand(metric, all_runs.median_abs, all_runs.n, "held-out runs, all GPUs")


def accuracy_from_dict(data: dict) -> Accuracy:
    """errors.json as scripts/calibrate.py writes it: {'runs', 'metrics': {m: {n, median_abs, p90_abs, bias}},
    'families': {arch: {m: …}}}. Raises KeyError/TypeError/ValueError on another shape."""

    def metric(d: dict) -> MetricError:
        e = MetricError(int(d["n"]), float(d["median_abs"]), float(d["p90_abs"]), float(d["bias"]))
        if e.n < 0 or not 0 <= e.median_abs < 1e6:
            raise ValueError("median_abs out of range")
        return e

    return Accuracy(
        runs=int(data["runs"]),
        metrics={str(k): metric(v) for k, v in data["metrics"].items()},
        families={str(f): {str(k): metric(v) for k, v in ms.items()} for f, ms in data.get("families", {}).items()},
    )
