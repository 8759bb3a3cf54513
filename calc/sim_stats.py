"""The benchmark client's side of calc/scheduler.py: the workload `vllm bench serve` sends, and what it and
`vllm bench latency` print.

Inter-token latencies are kept as weighted segments, not one entry per token: a stretch of k identical decode
steps of n sequences is one segment of k evenly spaced gap values from lo to hi, each seen by n requests
(k · n samples). Percentiles are those numpy.percentile's default ("linear") method gives on the expanded samples:
    h = (M − 1) · q / 100,   P_q = x_⌊h⌋ + (h − ⌊h⌋) · (x_⌊h⌋+1 − x_⌊h⌋)        x sorted, M samples
where the value of rank i is found by bisection on the sample count (no expansion, however many tokens).
TPOT per request = (E2E − TTFT) / (output_len − 1), vllm bench serve's definition (no TPOT for one-token outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calc.units import MS

LATENCY_PERCENTILES = (10, 25, 50, 75, 90, 99)
"""The percentiles `vllm bench latency` prints and writes to its JSON."""


@dataclass(frozen=True)
class Workload:
    """`vllm bench serve --dataset-name random`: closed loop with max_concurrency C (each client sends its next
    request when the last one finishes), Poisson arrivals at request_rate (inf: all at t = 0), or both."""

    input_len: int
    output_len: int
    num_prompts: int
    max_concurrency: int | None = None
    request_rate: float = math.inf
    range_ratio: float = 0.0
    """Lengths uniform on the integers of [len·(1 − r), len·(1 + r)], as vllm's random dataset."""
    seed: int = 0


def workload_arrays(w: Workload) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prompt lengths, output lengths and ready times [s] (numpy default_rng(seed); Poisson gaps after the first)."""
    rng = np.random.default_rng(w.seed)

    def lengths(n: int) -> np.ndarray:
        lo, hi = max(1, int(n * (1 - w.range_ratio))), max(1, int(n * (1 + w.range_ratio)))
        return rng.integers(lo, hi + 1, w.num_prompts) if hi > lo else np.full(w.num_prompts, lo)

    prompt, out = lengths(w.input_len), lengths(w.output_len)
    ready = np.zeros(w.num_prompts)
    if math.isfinite(w.request_rate) and w.num_prompts > 1:
        ready[1:] = np.cumsum(rng.exponential(1.0 / w.request_rate, w.num_prompts - 1))
    return prompt, out, ready


@dataclass(frozen=True, eq=False)
class ItlSegments:
    """Inter-token gaps [s]: segment i holds steps[i] values evenly spaced from lo_s[i] to hi_s[i], each counted
    weight[i] times; sum_s[i] is the sum of its values once (so the mean is exact even where steps are not linear)."""

    lo_s: np.ndarray
    hi_s: np.ndarray
    steps: np.ndarray
    weight: np.ndarray
    sum_s: np.ndarray

    @property
    def count(self) -> int:
        """M = Σ steps · weight: one sample per output token after a request's first."""
        return int((self.steps * self.weight).sum())

    @property
    def mean_s(self) -> float:
        return float((self.sum_s * self.weight).sum() / self.count) if self.count else 0.0

    def _count_le(self, v: float) -> int:
        """Samples ≤ v: per segment ⌊(v − lo) / Δ⌋ + 1 values, clipped to [0, steps], Δ = (hi − lo) / (steps − 1)."""
        span = self.hi_s - self.lo_s
        delta = np.where(self.steps > 1, span / np.maximum(self.steps - 1, 1), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            n_le = np.where(delta > 0, np.floor((v - self.lo_s) / delta) + 1, np.where(v >= self.lo_s, self.steps, 0))
        return int((np.clip(n_le, 0, self.steps) * self.weight).sum())

    def _value_at_rank(self, rank: int) -> float:
        """x_rank (0-based) of the sorted expansion: the smallest v with count(≤ v) ≥ rank + 1, snapped to a sample."""
        lo, hi = float(self.lo_s.min()), float(self.hi_s.max())
        for _ in range(200):
            if hi - lo <= 1e-15 * max(abs(hi), 1e-300):
                break
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if self._count_le(mid) >= rank + 1:
                hi = mid
            else:
                lo = mid
        if self._count_le(lo) >= rank + 1:
            hi = lo
        # snap to the largest sample ≤ hi (bisection stops within rounding of it)
        delta = np.where(self.steps > 1, (self.hi_s - self.lo_s) / np.maximum(self.steps - 1, 1), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            j = np.where(delta > 0, np.floor((hi - self.lo_s) / delta), 0.0)
        j = np.clip(j, 0, self.steps - 1)
        cand = self.lo_s + j * delta
        ok = cand <= hi * (1 + 1e-12) + 1e-300
        return float(cand[ok].max()) if ok.any() else hi

    def percentile_s(self, q: float) -> float:
        m = self.count
        if m == 0:
            return 0.0
        h = (m - 1) * q / 100
        i = math.floor(h)
        x_i = self._value_at_rank(i)
        if h == i:
            return x_i
        return x_i + (h - i) * (self._value_at_rank(i + 1) - x_i)


def _stat_ms(values: np.ndarray) -> tuple[float, float, float]:
    """mean, median, p99 in ms of the finite values (0 when none, as vllm bench serve's `np.mean(x or 0)`)."""
    v = values[np.isfinite(values)]
    if not v.size:
        return 0.0, 0.0, 0.0
    return float(v.mean()) / MS, float(np.median(v)) / MS, float(np.percentile(v, 99)) / MS


@dataclass(frozen=True, eq=False)
class SimResult:
    """One simulated `vllm bench serve` run. Per-request arrays are in request (send) order; NaN where a request
    never completed (it cannot fit the KV pool even alone) or, for tpot_s, has a single output token."""

    input_lens: np.ndarray
    output_lens: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    queue_s: np.ndarray
    """Send → first scheduled (vLLM's request_queue_time)."""
    prefill_s: np.ndarray
    """First scheduled → first token (vLLM's request_prefill_time): chunks plus the decodes they ride with."""
    itl: ItlSegments
    duration_s: float
    """First request sent → last request finished."""
    completed: int
    preemptions: int
    """vLLM recompute preemptions, or SGLang decode retractions."""
    mean_running: float
    """Time average of running requests (decoding plus in prefill) over duration_s: vLLM's num_requests_running."""
    num_steps: int
    stopped_early: bool = False
    """The simulation hit its work cap (scheduler.MAX_SIM_ITERATIONS) before every request finished: the figures are
    over the `completed` requests, which a closed loop reaches in its steady state."""

    def bench_summary(self) -> dict[str, float]:
        """The keys `vllm bench serve --save-result` writes, with its units (s, req/s, tok/s, ms)."""
        done = np.isfinite(self.e2e_s)
        out_tokens = float(self.output_lens[done].sum())
        in_tokens = float(self.input_lens[done].sum())
        d = self.duration_s if self.duration_s > 0 else math.inf
        ttft, tpot, e2el = _stat_ms(self.ttft_s), _stat_ms(self.tpot_s), _stat_ms(self.e2e_s)
        itl = (self.itl.mean_s / MS, self.itl.percentile_s(50) / MS, self.itl.percentile_s(99) / MS)
        out = {
            "completed": self.completed,
            "duration": self.duration_s,
            "request_throughput": self.completed / d,
            "output_throughput": out_tokens / d,
            "total_token_throughput": (in_tokens + out_tokens) / d,
        }
        for name, (mean, median, p99) in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
            out |= {f"mean_{name}_ms": mean, f"median_{name}_ms": median, f"p99_{name}_ms": p99}
        return out


@dataclass(frozen=True)
class BatchLatency:
    """One `vllm bench latency` iteration: B prompts sent at once, run until the last has output_len tokens."""

    latency_s: float

    def bench_summary(self) -> dict[str, object]:
        """`vllm bench latency --output-json` keys: avg_latency [s] and its percentiles (all equal: no noise)."""
        return {"avg_latency": self.latency_s, "percentiles": {str(p): self.latency_s for p in LATENCY_PERCENTILES}}
