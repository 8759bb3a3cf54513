"""Tails: what averages hide (the Italian seed, "Le medie mentono"), for this scenario.

fan-out to n calls: P(at least one slow) = 1 − (1 − p)^n        1 − 0.99^20 ≈ 18.2 %
per-call quantile for the whole to meet q: q^(1/n)               0.99^(1/20) ≈ 0.99950 (p99.95)
hedged requests sent at the q-quantile re-send the (1 − q) slowest: p95 → +5 % load
a chain of sequential calls adds: 20 × 1 s with one 3 s step = 22 s (+10 %)
200 gaps of 20 ms and one of 2 s average 29.85 ms: mean TPOT hides the stall, max ITL shows it
"""

from __future__ import annotations

import math
from dataclasses import dataclass

P_SLOW = 0.01  # "slow" = beyond the p99
HEDGE_QUANTILE = 0.95
Z99 = 2.326348  # standard normal quantile at 0.99


def p_any_slow(*, p_slow: float, fanout: int) -> float:
    return 1.0 - (1.0 - p_slow) ** fanout


def per_call_quantile(*, target_quantile: float, fanout: int) -> float:
    return target_quantile ** (1.0 / fanout)


def hedge_extra_load(*, hedge_quantile: float) -> float:
    """Sending a duplicate when a call passes its q-quantile re-sends the (1 − q) slowest: p95 → +5 % load."""
    return 1.0 - hedge_quantile


def chain_total_s(step_s: list[float]) -> float:
    return float(sum(step_s))


def quantile_label(q: float) -> str:
    """0.99 → 'p99', 0.9995 → 'p99.95': the tail 100 − 100·q to two significant digits, rounded down (the label is
    never laxer than q, and never p100), at most six decimals. 0.99^(1/200) = 0.999950 → 'p99.995'; 0.99^(1/300) =
    0.9999665 → 'p99.9967' (it read 'p100' at two decimals)."""
    tail = 100 - q * 100
    if tail <= 0:
        return "p100"
    d = min(6, max(2, math.ceil(-math.log10(tail)) + 1))
    shown = math.floor(tail * 10**d + 1e-9) / 10**d
    return "p" + f"{100 - shown:.{d}f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class ItlSummary:
    mean_s: float
    max_s: float


def itl_summary(gaps_s: list[float]) -> ItlSummary:
    return ItlSummary(sum(gaps_s) / len(gaps_s), max(gaps_s))


SEED_ITL_GAPS_S = (0.020,) * 200 + (2.0,)
"""The seed's example: 200 gaps of 20 ms and one stall of 2 s."""


def seed_itl_example() -> ItlSummary:
    """Mean 29.85 ms, max 2 s: a TPOT that looks fine over a 2-second freeze."""
    return itl_summary(list(SEED_ITL_GAPS_S))


@dataclass(frozen=True)
class Tails:
    fanout: int
    p_any_slow: float
    """P(at least one of `fanout` parallel calls is beyond its p99)."""
    per_call_quantile: float
    per_call_quantile_label: str
    hedge_quantile: float
    hedge_extra_load: float
    chain_calls: int
    chain_median_s: float
    """`chain_calls` sequential requests, each at the median end-to-end time."""
    chain_one_slow_s: float
    """The same chain with one step at its p99 (log-normal with σ = latency_sigma)."""
    itl_mean_s: float
    """Mean gap over one request's output: the TPOT estimate, every step that carries another prompt's chunk
    included."""
    itl_max_s: float
    """The largest gap: the step that carries the chunk."""


def tails(*, fanout: int, chain_calls: int, e2e_s: float, sigma: float, itl_s: float, spike_s: float,
          tpot_s: float) -> Tails:  # fmt: skip
    q = per_call_quantile(target_quantile=1 - P_SLOW, fanout=fanout)
    p99 = e2e_s * math.exp(Z99 * sigma)
    spike = max(spike_s, itl_s, tpot_s)
    return Tails(
        fanout=fanout,
        p_any_slow=p_any_slow(p_slow=P_SLOW, fanout=fanout),
        per_call_quantile=q,
        per_call_quantile_label=quantile_label(q),
        hedge_quantile=HEDGE_QUANTILE,
        hedge_extra_load=hedge_extra_load(hedge_quantile=HEDGE_QUANTILE),
        chain_calls=chain_calls,
        chain_median_s=chain_calls * e2e_s,
        chain_one_slow_s=(chain_calls - 1) * e2e_s + p99,
        itl_mean_s=tpot_s,
        itl_max_s=spike,
    )
