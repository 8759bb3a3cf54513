"""Tails: what averages hide (the Italian seed, "Le medie mentono").

fan-out to n calls: P(at least one slow) = 1 − (1 − p)^n        1 − 0.99^20 ≈ 18.2 %
per-call quantile for the whole to meet q: q^(1/n)               0.99^(1/20) ≈ 0.99950 (p99.95)
a chain of sequential calls adds: 20 × 1 s with one 3 s step = 22 s (+10 %)
200 gaps of 20 ms and one of 2 s average 29.85 ms: mean TPOT hides the stall, max ITL shows it
"""

from __future__ import annotations

from dataclasses import dataclass


def p_any_slow(*, p_slow: float, fanout: int) -> float:
    return 1.0 - (1.0 - p_slow) ** fanout


def per_call_quantile(*, target_quantile: float, fanout: int) -> float:
    return target_quantile ** (1.0 / fanout)


def hedge_extra_load(*, hedge_quantile: float) -> float:
    """Sending a duplicate when a call passes its q-quantile re-sends the (1 − q) slowest: p95 → +5 % load."""
    return 1.0 - hedge_quantile


def chain_total_s(step_s: list[float]) -> float:
    return float(sum(step_s))


@dataclass(frozen=True)
class ItlSummary:
    mean_s: float
    max_s: float


def itl_summary(gaps_s: list[float]) -> ItlSummary:
    return ItlSummary(sum(gaps_s) / len(gaps_s), max(gaps_s))
