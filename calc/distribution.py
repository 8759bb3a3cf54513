"""Quantiles of a simulated benchmark run, for a CDF: per-request TTFT, TPOT and end-to-end latency, and the
inter-token latency over every generated token (calc.sim_stats.ItlSegments, numpy's linear percentile method)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calc.sim_stats import SimResult

QUANTILES = (0.0, 1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.9, 100.0)


@dataclass(frozen=True)
class Distribution:
    quantiles: tuple[float, ...]
    """Percent, 0 to 100."""
    ttft_s: tuple[float, ...]
    tpot_s: tuple[float, ...]
    e2e_s: tuple[float, ...]
    itl_s: tuple[float, ...]
    requests: int
    """Completed requests behind the per-request quantiles (0: every quantile is empty)."""


def _per_request(x: np.ndarray, qs) -> tuple[float, ...]:
    v = x[np.isfinite(x)]
    return tuple(float(y) for y in np.percentile(v, qs)) if v.size else ()


def distribution(res: SimResult, quantiles: tuple[float, ...] = QUANTILES) -> Distribution:
    # the tool's ITL: the time between streamed chunks (a speculative step's τ tokens in one: SimResult.tokens_per_chunk)
    itl = tuple(x * res.tokens_per_chunk for x in res.itl.percentiles_s(quantiles)) if res.itl.count else ()
    return Distribution(tuple(quantiles), _per_request(res.ttft_s, quantiles), _per_request(res.tpot_s, quantiles),
                        _per_request(res.e2e_s, quantiles), itl, int(np.isfinite(res.e2e_s).sum()))  # fmt: skip
