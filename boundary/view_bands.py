"""The held-out error beside an estimate, as text: the band (median and p90 |error| on held-out runs of the GPU's
family, calc.accuracy), or why there is none."""

from __future__ import annotations

from boundary import fmt

NO_BAND = "no held-out error table (tests/data/benchmarks/errors.json, written by scripts/calibrate.py report)"


def band(r, metric: str, *, simulated: bool = False) -> str:
    """'± 28% (median |error| on held-out hopper runs, n = 18; 9 in 10 within ± 51%)', or '' when there is no error
    table: the estimates' (closed forms') error, or with simulated the predicted benchmark's."""
    b = (r.benchmark_error_bands if simulated else r.error_bands).get(metric)
    if b is None:
        return ""
    tail = f"; 9 in 10 within ± {fmt.pct(b.p90_abs, 0)}" if b.p90_abs else ""
    return f"± {fmt.pct(b.median_abs, 0)} (median |error| on {b.scope}, n = {b.n}{_groups(b)}{tail})"


def _groups(b) -> str:
    """' from one source group' where the runs are one source's checkpoint on one GPU (its host and harness, not n
    independent measurements); nothing for more, or where the table predates the count."""
    return " from one source group" if b.groups == 1 else ""


def band_short(r, metric: str) -> str:
    """'± 28% · p90 ± 51%' under a headline number: the held-out median |error| and the tail a median hides (whose runs,
    the GPU's family or all GPUs, in the tile's help: band()); 'no held-out band' where the GPU earns none
    (Report.bands_withheld); '' without an error table."""
    b = r.error_bands.get(metric)
    if b is None:
        return "no held-out band" if r.bands_withheld else ""
    tail = f" · p90 ± {fmt.pct(b.p90_abs, 0)}" if b.p90_abs else ""  # a tile's badge shows about 24 characters
    return f"± {fmt.pct(b.median_abs, 0)}{tail}"
