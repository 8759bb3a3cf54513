"""The prefill instances of a disaggregated deployment under a request rate: how many, and how long a prompt waits
for one. Poisson arrivals at rate / P each, a deterministic service of one prefill (Pollaczek–Khinchine):

    x = rate · prefill                       (instances' worth of prompt work)
    W = ρ · prefill / (2 (1 − ρ)),  ρ = x / P   (the mean wait)
    P = max(1, ⌈x / (2/3)⌉)                  (at most one prefill's wait on average, ρ ≤ 2/3)
      or more where the TTFT SLO needs a shorter wait w: the fewest P with W ≤ w, P = ⌈x (prefill + 2w) / (2w)⌉

w is what the TTFT SLO leaves for the wait at the conformance quota (prefill_wait_budget_s). Every function takes
numbers or numpy arrays (calc.search evaluates many configurations at once).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from calc.goodput import p_within, tpot_slo_s

PREFILL_LOAD = 2 / 3
"""Highest load of a prefill instance: there a prompt waits one prefill on average (ρ / (2 (1 − ρ)) = 1)."""
MIN_WAIT_SHARE = 0.02
"""A wait budget under 2 % of a prefill is not bought with instances (it takes about 25 × the work's count); the
capacity then reports that the SLO cannot be met."""


def prefill_count(x, prefill_s, max_wait_s=math.inf):
    """P for x instances' worth of prompt work: max(1, ⌈x / (2/3)⌉), raised to ⌈x (prefill + 2w) / (2w)⌉ where the
    mean wait there exceeds w = max_wait_s (from 2 % of a prefill up; below it, not raised)."""
    base = np.maximum(1.0, np.ceil(np.asarray(x, dtype=float) / PREFILL_LOAD))
    w = np.asarray(max_wait_s, dtype=float)
    buy = np.isfinite(w) & (w >= MIN_WAIT_SHARE * np.asarray(prefill_s, dtype=float))
    ws = np.where(buy, w, 1.0)
    need = np.ceil(x * (prefill_s + 2 * ws) / (2 * ws) * (1 - 1e-12))
    n = np.where(buy, np.maximum(base, need), base)
    return float(n) if np.ndim(n) == 0 else n


def prefill_wait_s(x, prefill_s, n):
    """The mean wait W = ρ · prefill / (2 (1 − ρ)), ρ = x / n [s]."""
    rho = x / n
    return rho * prefill_s / (2 * (1 - rho))


def prefill_pool(*, rate_rps: float, prefill_s: float, max_wait_s: float = math.inf) -> tuple[int, float, float]:
    """(P, its load ρ, the mean wait W [s]) for rate_rps prompts a second, each prefill_s long. Sized at full load,
    P = ⌈rate · prefill⌉, Qwen2.5-7B fp8 on RTX 4090s at 10 req/s had one instance 86 % busy and a 260 ms wait that
    TTFT did not show; sized at 2/3 alone, Llama-3.1-70B at TP 4 on H100s at 10 req/s (prefill 173 ms) waited 119 ms,
    which left its 500 ms TTFT SLO at 89 % where the quota was 90 %, at any number of decode instances."""
    x = rate_rps * prefill_s
    n = int(prefill_count(x, prefill_s, max_wait_s))
    return n, x / n, prefill_wait_s(x, prefill_s, n)


def _median_one(slo_ttft_s: float, slo_tpot_s: float, sigma: float, quota: float, tpot_s: float) -> float:
    """The TTFT median that keeps the quota beside a TPOT median of tpot_s; −inf where the TPOT alone misses it."""
    p_tpot = p_within(median_s=tpot_s, slo_s=slo_tpot_s, sigma=sigma)
    if p_tpot <= quota:
        return -math.inf
    return slo_ttft_s / (math.exp(sigma * NormalDist().inv_cdf(quota / p_tpot)) if sigma > 0 else 1.0)


def prefill_wait_budget_s(s, fixed_s, tpot_s):
    """The longest mean wait for a prefill instance at which one request keeps the quota: the TTFT median m with
    P(TTFT ≤ slo_ttft) = quota / P(TPOT ≤ slo_tpot) (log-normal, σ = latency_sigma: m = slo_ttft / e^(σ·z)), less the
    TTFT's other parts `fixed_s` (front-end, queue, prefill, KV transfer, one decode step at `tpot_s`); −inf where the
    TPOT alone misses the quota. Numbers or arrays (m once per distinct TPOT: configurations share them)."""
    args = (s.slo_ttft_s, tpot_slo_s(s), s.latency_sigma, s.conformance_quota)
    if np.ndim(fixed_s) == 0 and np.ndim(tpot_s) == 0:
        return _median_one(*args, float(tpot_s)) - float(fixed_s)
    fixed, tpot = np.broadcast_arrays(np.asarray(fixed_s, dtype=float), np.asarray(tpot_s, dtype=float))
    distinct, at = np.unique(tpot, return_inverse=True)
    median = np.array([_median_one(*args, float(t)) for t in distinct])
    return median[at.reshape(tpot.shape)] - fixed
