"""A replica count against the scheduler simulation: one replica sent Poisson arrivals at its share of the request
rate (rate / replicas, `vllm bench serve --request-rate`), lengths ±30 %, and the share of its requests within both
SLOs against the quota. Where that misses, the fewest replicas (up to 4 more) whose share meets it; where it meets it,
the share one replica fewer keeps (a count above what the simulation needs).

The closed forms size a replica with the mean waits of Poisson arrivals (for a free slot: Erlang C; for the step
budget); bursts cost more where prompts are long or the spread of TTFT and TPOT is wider than latency_sigma says.
This check sees them. It serves `calc plan` (the scenario's own replicas) and `calc search` (the cheapest's).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.bench import CHECK_RANGE_RATIO


@dataclass(frozen=True)
class RateCheck:
    replicas: int
    rate_per_replica_rps: float
    num_prompts: int
    within_slo: float
    """Requests within both SLOs, past the first fifth (the empty server's start), over those that completed."""
    quota: float
    replicas_meeting_quota: int | None
    """`replicas` where it meets the quota; else the fewest of replicas + 1 … + 4 that does; None if none does."""
    preemptions: int = 0
    """Requests the first simulation preempted (vLLM: recomputed) or retracted (SGLang): the KV pool overflowed."""
    fewer_within_slo: float | None = None
    """Where `replicas` (two or more) meets the quota: the share within both SLOs of one replica fewer, at its larger
    share of the rate (a count one above what the simulation needs shows here); else None."""


RATE_CHECK_PROMPTS = 3_000
"""Requests a check simulates (the first fifth skipped): 1,000 left the queues of a replica near its flat
throughput curve too little time to form (SGLang Llama-3.1-8B on an H100 at 11 req/s: 98.6–100 % within both SLOs
over 1,000 on eight seeds, 64.3–100 % over 3,000); ~0.06 s a simulation, up to four a check."""
RATE_CHECK_EXTRA = 4
EXTRA_PROMPTS = 1_000
"""Requests of each simulation that looks for how many more replicas meet the quota: shorter, so that a check whose
count misses stays within a rerun's cost bound (five overloaded simulations of 3,000 took 1.4 s here; one of 3,000
and four of 1,000 took 1.5 s on a slower host, 2026-12-02, hence the bisection)."""


def replica_check(report, replicas: int | None) -> RateCheck | None:
    """None without a request rate or a replica count, and for a disaggregated scenario (the simulation serves one
    aggregated engine). One simulation of RATE_CHECK_PROMPTS requests; where it misses the quota, replicas + 4 over
    EXTRA_PROMPTS, and only if that meets it, a bisection of + 1 … + 3 (more replicas, a lower rate each: a share
    that does not fall). Where the count meets the quota, one more simulation of replicas − 1. At most four
    simulations, two where even + 4 misses (a count far short of the load)."""
    s = report.scenario
    if not s.request_rate or s.disaggregated or not replicas or replicas < 1:
        return None
    first, preempted = _within_slo(report, s.request_rate / replicas, RATE_CHECK_PROMPTS)

    def meets(extra: int) -> bool:
        return _within_slo(report, s.request_rate / (replicas + extra), EXTRA_PROMPTS)[0] >= s.conformance_quota

    meeting = replicas if first >= s.conformance_quota else None
    if meeting is None and meets(RATE_CHECK_EXTRA):
        lo, hi = 1, RATE_CHECK_EXTRA  # hi meets the quota; the fewest that does is in lo … hi
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if meets(mid) else (mid + 1, hi)
        meeting = replicas + hi
    fewer = None
    if meeting == replicas and replicas > 1:  # is the count more than the simulation needs? (one more run)
        fewer = _within_slo(report, s.request_rate / (replicas - 1), RATE_CHECK_PROMPTS)[0]
    return RateCheck(replicas, s.request_rate / replicas, RATE_CHECK_PROMPTS, first, s.conformance_quota, meeting,
                     preempted, fewer)  # fmt: skip


def _within_slo(report, rate_rps: float, n: int) -> tuple[float, int]:
    """(share within both SLOs past the first fifth, preemptions) of one replica at rate_rps, over n requests."""
    from calc import bench

    s = report.scenario
    res = bench.serve(report, num_prompts=n, request_rate=rate_rps, range_ratio=CHECK_RANGE_RATIO)
    return res.within_slos(slo_ttft_s=s.slo_ttft_s, slo_tpot_s=s.slo_tpot_s, skip=n // 5), res.preemptions
