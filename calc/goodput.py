"""Goodput: the requests served within the promises (the Italian seed, "Il goodput", "Misurare in venti righe").

    G = (1/Δt) Σ 1[TTFT_i ≤ τ_f ∧ TPOT_i ≤ τ_p] = throughput × conformant fraction
The stricter variant replaces mean TPOT with the largest inter-token gap (a 2 s stall hides in a 29.85 ms mean).

Variability model (stated, and the seed's own): TTFT and TPOT are independent log-normals around the latency
model's estimate (the median) with spread σ, so P(TTFT ≤ τ) = Φ(ln(τ / median) / σ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def tpot_slo_s(s) -> float:
    """The TPOT SLO a request of the scenario is held to: none (inf) for a one-token output, which has no gap to
    time (`vllm bench serve` leaves such requests out of TPOT)."""
    return math.inf if s.output_len <= 1 else s.slo_tpot_s


def p_within(*, median_s: float, slo_s: float, sigma: float) -> float:
    """P(X ≤ slo) for X log-normal with this median and σ (σ = 0: a step)."""
    if sigma == 0 or not math.isfinite(median_s) or median_s <= 0:
        return 1.0 if median_s <= slo_s else 0.0
    z = math.log(slo_s / median_s) / sigma
    return 0.5 * math.erfc(-z / math.sqrt(2))


@dataclass(frozen=True)
class Conformance:
    p_ttft: float
    p_tpot: float
    conformance: float
    """Both promises kept (mean TPOT): the seed's definition, used for goodput and capacity."""
    p_max_itl: float
    strict_conformance: float
    """TTFT kept and every inter-token gap under slo_tpot_s."""
    throughput_rps: float
    goodput_rps: float
    """Requests per second served within both SLOs: G = throughput × conformance."""


def conformance(*, ttft_s: float, tpot_s: float, itl_s: float, spike_s: float, output_len: int,
                others_prefill: bool, slo_ttft_s: float, slo_tpot_s: float, sigma: float,
                throughput_rps: float, tokens_per_gap: float = 1.0) -> Conformance:  # fmt: skip
    """`itl_s`, `spike_s`: the gaps between streamed chunks, each of `tokens_per_gap` tokens (τ under speculative
    decoding, else 1)."""
    p_f = p_within(median_s=ttft_s, slo_s=slo_ttft_s, sigma=sigma)
    p_p = p_within(median_s=tpot_s, slo_s=slo_tpot_s, sigma=sigma)
    p_gap = every_gap_within(tpot_s=tpot_s, itl_s=itl_s, spike_s=spike_s if others_prefill else itl_s,
                             output_len=output_len, slo_s=slo_tpot_s, sigma=sigma, tokens_per_gap=tokens_per_gap)  # fmt: skip
    return Conformance(p_f, p_p, p_f * p_p, p_gap, p_f * p_gap, throughput_rps, throughput_rps * p_f * p_p)


def every_gap_within(*, tpot_s: float, itl_s: float, spike_s: float, output_len: int, slo_s: float,
                     sigma: float, tokens_per_gap: float = 1.0) -> float:  # fmt: skip
    """P(every one of a request's N − 1 inter-token gaps ≤ slo): the gaps are plain steps (itl_s) and steps that
    carry another request's prompt (spike_s), in the share q that makes their mean the TPOT, q = (TPOT − ITL) /
    (spike − ITL); each gap an independent log-normal draw around its step, so P = p(ITL)^((N−1)(1−q)) ·
    p(spike)^((N−1)q). A spike over the SLO that a request meets at all (q > 0) breaks it for sure. At most P(TPOT ≤
    slo): every gap within it puts their mean within it too. Under speculative decoding a gap brings a chunk of
    τ = tokens_per_gap tokens: (N − 1) / τ gaps, their mean τ · TPOT."""
    gaps = max(0, output_len - 1) / tokens_per_gap
    mean = tpot_s * tokens_per_gap
    q = min(1.0, max(0.0, (mean - itl_s) / (spike_s - itl_s))) if spike_s > itl_s else 0.0
    if q and spike_s > slo_s:
        return 0.0
    p = p_within(median_s=itl_s, slo_s=slo_s, sigma=sigma) ** (gaps * (1 - q)) \
        * p_within(median_s=spike_s, slo_s=slo_s, sigma=sigma) ** (gaps * q)  # fmt: skip
    return min(p, p_within(median_s=tpot_s, slo_s=slo_s, sigma=sigma)) if gaps else p


# --- the seed's simulation, to the digit ----------------------------------------------------------------------
@dataclass(frozen=True)
class SimRow:
    name: str
    requests_per_s: float
    goodput_rps: float
    conformance: float
    ttft_over_slo: float
    ttft_mean_ms: float
    ttft_p50_ms: float
    ttft_p95_ms: float
    ttft_p99_ms: float
    tpot_p50_ms: float
    tpot_p95_ms: float
    tpot_p99_ms: float


SEED_CONFIGS = (("batch 16", 200, 0.28, 0.028), ("batch 64", 320, 0.43, 0.043))


def simulate(configs=SEED_CONFIGS, *, sigma: float = 0.35, window_s: float = 10.0, slo_ttft_s: float = 0.5,
             slo_tpot_s: float = 0.05, seed: int = 0) -> list[SimRow]:  # fmt: skip
    """The seed's twenty lines: one generator, `default_rng(seed)`, shared by the configurations in order; each
    request draws TTFT then TPOT log-normally around the medians. configs: (name, n requests, TTFT median s,
    TPOT median s)."""
    import numpy as np  # local: keeps numpy out of the CLI's import path unless simulating

    rng = np.random.default_rng(seed)
    rows = []
    for name, n, ttft_med, tpot_med in configs:
        k = min(n, MAX_SIM_SAMPLES)  # draws; n requests in the window
        ttft = rng.lognormal(np.log(ttft_med), sigma, k)
        tpot = rng.lognormal(np.log(tpot_med), sigma, k)
        ok = (ttft <= slo_ttft_s) & (tpot <= slo_tpot_s)
        p50, p95, p99 = np.percentile(ttft, [50, 95, 99]) * 1000
        q50, q95, q99 = np.percentile(tpot, [50, 95, 99]) * 1000
        rows.append(SimRow(name, n / window_s, ok.mean() * n / window_s, float(ok.mean()), float((ttft > slo_ttft_s).mean()),
                           float(ttft.mean() * 1000), float(p50), float(p95), float(p99),
                           float(q50), float(q95), float(q99)))  # fmt: skip
    return rows


def sim_table(rows: list[SimRow]) -> str:
    """The seed's printout, same columns and widths."""
    lines = [
        f"{'config':<9}{'ric/s':>8}{'good/s':>9}{'conformi':>10}{'TTFT>SLO':>9}{'TTFTmed':>9}{'p50':>7}{'p95':>7}{'p99':>7}"
    ]
    for r in rows:
        lines.append(f"{r.name:<9}{r.requests_per_s:8.1f}{r.goodput_rps:9.1f}{r.conformance:10.1%}{r.ttft_over_slo:9.1%}"
                     f"{r.ttft_mean_ms:9.0f}{r.ttft_p50_ms:7.0f}{r.ttft_p95_ms:7.0f}{r.ttft_p99_ms:7.0f}")  # fmt: skip
    return "\n".join(lines)


MAX_SIM_SAMPLES = 20_000  # a sample this large gives the shares to ±0.7 % (2σ); the rates stay the window's


def scenario_sim_config(*, requests_per_s: float, window_s: float, ttft_s: float, tpot_s: float) -> tuple:
    """The scenario as one simulation row: the requests its throughput serves in the window, around its medians.
    Past MAX_SIM_SAMPLES requests a sample is drawn (the row's name says how many of how many): the shares and
    percentiles of the sample, the rates of the whole window."""
    n = max(1, round(min(requests_per_s * window_s, 1e12)))
    if n <= MAX_SIM_SAMPLES:
        return ("this scenario", n, ttft_s, tpot_s)
    return (f"this scenario ({MAX_SIM_SAMPLES:,} of {n:,} sampled)", n, ttft_s, tpot_s)
