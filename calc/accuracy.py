"""How far the latency estimates were from published runs they were not fitted on: the held-out error that
scripts/calibrate.py writes to tests/data/benchmarks/errors.json (read by calc.loader, never restated here).

The band shown next to an estimate is the held-out median |error| of that metric (with its p90, the tail), for the
GPU's architecture family when enough of its runs were held out, else over all held-out runs: the closed forms' error
(the headline's estimates, on the held-out runs with a concurrency cap) beside the estimates, the simulation's beside
the predicted benchmark."""

from __future__ import annotations

from dataclasses import dataclass

LOW_RIDGE_FLOP_PER_BYTE = 60.0
"""A 16-bit ridge point (dense tensor FLOP/s ÷ memory bytes/s) below this: a part whose tensor rate was cut, not one
its memory outpaces. The held-out runs that set the error bands ran on GPUs at 153 (A100) to 378 FLOP/byte (H100
PCIe), the calibration runs on 153–560 and one H20-3e run; the H20 and H20-3e lie at 37 and 31 (148 TFLOP/s:
docs/hardware-candidates.md), so no band describes them."""

BANDED_RIDGE_FLOP_PER_BYTE = 150
"""The lowest ridge (rounded down) among the GPUs of the held-out runs that set the bands (A100: 153 FLOP/byte)."""

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
    groups: int = 0
    """Source × checkpoint × GPU groups the runs come from (0: not recorded)."""


@dataclass(frozen=True)
class Accuracy:
    runs: int
    metrics: dict[str, MetricError]
    """'tpot', 'ttft', 'throughput', 'latency' over all held-out runs."""
    families: dict[str, dict[str, MetricError]]
    """The same per GPU architecture ('hopper', 'ampere', …)."""
    closed_form: Accuracy | None = None
    """The closed forms' own error (the estimates beside which the page shows it), where the report has it."""


@dataclass(frozen=True)
class ErrorBand:
    metric: str
    median_abs: float
    n: int
    scope: str
    """'hopper runs', 'all runs': which held-out runs the figure comes from."""
    p90_abs: float = 0.0
    """The 90th percentile of the same |error|s: nine runs in ten came within it (the tail a median hides)."""
    groups: int = 0
    """Source × checkpoint × GPU groups behind the figure (0: not recorded)."""


def low_ridge(gpu) -> float | None:
    """The GPU's ridge point [FLOP/byte] where it is below LOW_RIDGE_FLOP_PER_BYTE (no held-out band applies), else
    None."""
    ridge = gpu.peak_16bit_tflop_per_s * 1e3 / gpu.memory_bandwidth_gb_per_s
    return ridge if ridge < LOW_RIDGE_FLOP_PER_BYTE else None


def error_band(acc: Accuracy | None, *, metric: str, arch: str, closed_form: bool = False) -> ErrorBand | None:
    """The held-out median |error| for `metric` on this architecture (or over all runs): the simulation's, or with
    closed_form the closed forms'; None without data."""
    simulated = acc.families.get(arch, {}).get(metric) if acc is not None else None
    if acc is not None and closed_form:
        acc = acc.closed_form
    if acc is None:
        return None
    runs = "closed-loop runs" if closed_form else "runs"
    fam = acc.families.get(arch, {}).get(metric)
    if fam is not None and fam.n >= MIN_FAMILY_RUNS:
        return ErrorBand(metric, fam.median_abs, fam.n, f"held-out {arch} {runs}", fam.p90_abs, fam.groups)
    all_runs = acc.metrics.get(metric)
    if all_runs is None or all_runs.n == 0:
        return None
    if closed_form and simulated is not None and simulated.n >= MIN_FAMILY_RUNS and \
            simulated.median_abs > all_runs.median_abs:  # fmt: skip
        # too few closed-loop runs of this family, but its simulated runs miss by more than all GPUs' estimates do: a
        # band over all GPUs would promise this family an accuracy its own runs do not show (RTX 4090: ± 7 % vs 52 %)
        return ErrorBand(metric, simulated.median_abs, simulated.n, f"held-out {arch} runs (the benchmark "
                         "simulation's error; too few closed-loop runs of this family)", simulated.p90_abs,
                         simulated.groups)  # fmt: skip
    return ErrorBand(metric, all_runs.median_abs, all_runs.n, f"held-out {runs}, all GPUs", all_runs.p90_abs,
                     all_runs.groups)  # fmt: skip


def accuracy_from_dict(data: dict) -> Accuracy:
    """errors.json as scripts/calibrate.py writes it: {'runs', 'metrics': {m: {n, median_abs, p90_abs, bias}},
    'families': {arch: {m: …}}}. Raises KeyError/TypeError/ValueError on another shape."""

    def metric(d: dict) -> MetricError:
        e = MetricError(int(d["n"]), float(d["median_abs"]), float(d["p90_abs"]), float(d["bias"]), int(d.get("groups", 0)))
        if e.n < 0 or not 0 <= e.median_abs < 1e6:
            raise ValueError("median_abs out of range")
        return e

    closed = data.get("closed_form")
    return Accuracy(
        runs=int(data["runs"]),
        metrics={str(k): metric(v) for k, v in data["metrics"].items()},
        families={str(f): {str(k): metric(v) for k, v in ms.items()} for f, ms in data.get("families", {}).items()},
        closed_form=accuracy_from_dict(closed) if closed is not None else None,
    )
