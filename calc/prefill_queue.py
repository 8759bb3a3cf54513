"""Prompts that queue behind other prompts. A replica sized at a closed loop's latency and then sent Poisson arrivals
at that rate sees prompts arrive together now and then: the later ones wait for the earlier ones' prefill, and
every request decoding meanwhile stalls for it. Long prompts with short outputs (retrieval, summaries) feel it
most; the closed loop of `vllm bench serve --max-concurrency` spaces its prompts and never does.

The engine's prefill work is one queue (M/D/1). A prompt occupies it for S = min(prefill alone, L · T_B / B) s
(the second form where prompts shorter than the step budget B share a step; T_B: one step of B prompt tokens),
and at a rate λ its load is u = λ · S.
    TTFT   P(wait > t) ≈ u · exp(−2 (1 − u) t / S)    (P(wait) = u, mean wait u · S / (2 (1 − u)): Pollaczek–Khinchine)
    TPOT   median ≥ plain decode step / (1 − u)       (the decodes get the time the prefills leave)
           spread: a request's decode window, m = λ · (N − 1) · TPOT arrivals long, meets a count of prefills with
           mean m and variance m / (1 − u)² (each stall lets more prompts arrive: Borel clusters), so
           CV² = (u / (1 − u))² / m and σ_TPOT = √(σ² + ln(1 + CV²))   (σ: latency_sigma; log-variances add)
P(TTFT ≤ τ_f) = Φ(ln(τ_f / TTFT) / σ) · (1 − P(wait > τ_f − TTFT)), P(TPOT ≤ τ_p) = Φ(ln(τ_p / median) / σ_TPOT);
their product, at most the closed loop's conformance, is 0 at u ≥ 1 (the prompts alone fill the engine). At
u = 0 it is the closed loop's. The capacity (calc.replicas.capacity, calc.search_capacity) uses it in place of the
closed loop's conformance once arrivals are Poisson.

Sources: Kleinrock, Queueing Systems vol. 1 (1975), §5.6 (M/G/1 waiting time), §5.8 (busy periods); Consul & Jain
(1973), the generalized Poisson distribution (variance θ / (1 − λ)³ over mean θ / (1 − λ)). Checked against the
scheduler simulation's Poisson runs (scripts/closed_form.py): on random prefill-heavy setups at their capacity, the
share of requests within both SLOs went from 24 of 148 below 85 % to 3.
"""

from __future__ import annotations

import math

import numpy as np

from calc.goodput import p_within


def work_s(alone_s, prompt_tokens, budget_step_s, budget_tokens):
    """S: engine time one prompt's prefill takes when prompts queue, min(alone, L · T_B / B) (s)."""
    return np.minimum(alone_s, prompt_tokens * budget_step_s / budget_tokens)


def tpot_median(tpot_s, plain_s, u):
    """TPOT under Poisson arrivals: max(TPOT, plain step / (1 − u)) (s); only for u < 1."""
    return np.maximum(tpot_s, plain_s / (1 - u))


def tpot_sigma(sigma, u, rate_rps, output_len, tpot_s):
    """σ_TPOT = √(σ² + ln(1 + (u / (1 − u))² / m)), m = λ · (N − 1) · TPOT; σ itself where u = 0 or N = 1. u < 1."""
    m = rate_rps * max(output_len - 1, 0) * tpot_s
    with np.errstate(divide="ignore", invalid="ignore"):
        cv2 = np.where((u > 0) & (m > 0), (u / (1 - u)) ** 2 / np.where(m > 0, m, 1.0), 0.0)
    return np.sqrt(sigma * sigma + np.log1p(cv2))


def late_share(u, slack_s, work):
    """P(the wait behind other prompts > slack) ≈ u · exp(−2 (1 − u) · slack / S); u < 1, S > 0."""
    with np.errstate(under="ignore"):
        return u * np.exp(-2 * (1 - u) * np.maximum(slack_s, 0.0) / work)


def conformance_one(*, closed: float, ttft_s: float, tpot_s: float, plain_s: float, work: float, rate_rps: float,
                    output_len: int, slo_ttft_s: float, slo_tpot_s: float, sigma: float) -> float:  # fmt: skip
    """conformance() for one configuration in plain floats (what calc.replicas.capacity takes; numpy on one value
    cost it a third more), Φ from math.erfc: the same formula, term by term."""
    u = rate_rps * work
    if u <= 0:
        return closed
    if u >= 1:
        return 0.0
    median = max(tpot_s, plain_s / (1 - u))
    m = rate_rps * max(output_len - 1, 0) * median
    spread = math.sqrt(sigma * sigma + math.log1p((u / (1 - u)) ** 2 / m if m > 0 else 0.0))
    late = u * math.exp(-2 * (1 - u) * max(slo_ttft_s - ttft_s, 0.0) / work)
    p_f = p_within(median_s=ttft_s, slo_s=slo_ttft_s, sigma=sigma) * (1 - late)
    return min(closed, p_f * p_within(median_s=median, slo_s=slo_tpot_s, sigma=spread))


def conformance(closed, ttft_s, tpot_s, plain_s, work, rate_rps, output_len: int, slo_ttft_s: float,
                slo_tpot_s: float, sigma: float, phi) -> np.ndarray:  # fmt: skip
    """min(the closed loop's conformance `closed`, P(TTFT ≤ τ_f) · P(TPOT ≤ τ_p) under Poisson arrivals at
    rate_rps), over arrays (conformance_one: one configuration); Φ by `phi` (the search passes
    calc.search_capacity.phi_approx, to 1.5e-7, or calc.numeric.phi_precise). work ≤ 0 or rate 0: the closed
    loop's; u ≥ 1: 0."""
    u = rate_rps * work
    live = (u > 0) & (u < 1)
    uu = np.where(live, u, 0.0)
    median = tpot_median(tpot_s, plain_s, uu)
    spread = tpot_sigma(sigma, uu, rate_rps, output_len, median)
    w = np.where(work > 0, work, 1.0)
    p_f = _within(slo_ttft_s / ttft_s, sigma, phi) * (1 - late_share(uu, slo_ttft_s - ttft_s, w))
    p = np.minimum(closed, p_f * _within(slo_tpot_s / median, spread, phi))
    return np.where(u <= 0, closed, np.where(live, p, 0.0))


def _within(ratio, sigma, phi) -> np.ndarray:
    """P(X ≤ SLO) for X log-normal with SLO / median = ratio and spread σ (arrays or a number); σ = 0: the step."""
    sigma = np.asarray(sigma, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(ratio) / np.where(sigma > 0, sigma, 1.0)
    return np.where(sigma > 0, phi(z), (np.asarray(ratio) >= 1).astype(float))
