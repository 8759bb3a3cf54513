"""The benchmark client's side of calc/scheduler.py: the workload `vllm bench serve` sends, and what it and
`vllm bench latency` print.

Inter-token latencies are kept as weighted segments, not one entry per token: a stretch of k identical decode
steps of n sequences is one segment of k evenly spaced gap values from lo to hi, each seen by n requests
(k · n samples). Percentiles are those numpy.percentile's default ("linear") method gives on the expanded samples:
    h = (M − 1) · q / 100,   P_q = x_⌊h⌋ + (h − ⌊h⌋) · (x_⌊h⌋+1 − x_⌊h⌋)        x sorted, M samples
where the value of rank i is found by bisection on the sample count (no expansion, however many tokens; every
rank a page needs in one pass).
TPOT per request = (E2E − TTFT) / (output_len − 1), vllm bench serve's definition (no TPOT for one-token outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from calc.length_shapes import DATASETS, draw
from calc.sim_peaks import peaks
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
    dataset: str = "random"
    """"random" (range_ratio), or a dataset of calc.length_shapes.DATASETS whose (prompt, reply) pairs, scaled to the
    mean lengths input_len and output_len, give each request's lengths (range_ratio then unused)."""
    seed: int = 0
    burstiness: float = 1.0
    """`--burstiness`: the gamma shape of the gaps between paced requests (mean 1 / request_rate): 1 is Poisson,
    below 1 burstier, above 1 more even."""
    decoded_share: float = 1.0
    """Output tokens decoded on average over output_len: below 1 (`--ignore-eos` off) each request ends at
    end-of-sequence with one per-token probability h, at most at its drawn length (eos_hazard)."""

    def __post_init__(self) -> None:
        if not self.request_rate > 0:  # NaN included: 0 req/s would never send the second request
            raise ValueError(f"request_rate: expected > 0 requests/s or inf (got {self.request_rate!r})")
        if not 0 < self.burstiness <= 1000:
            raise ValueError(f"burstiness: expected 0 < b ≤ 1,000 (got {self.burstiness!r})")
        if not 0 <= self.range_ratio < 1:
            raise ValueError(f"range_ratio: expected 0 ≤ r < 1 (got {self.range_ratio!r})")
        if self.dataset != "random" and self.dataset not in DATASETS:
            raise ValueError(f"dataset: expected one of random, {', '.join(DATASETS)} (got {self.dataset!r})")
        if not 0 < self.decoded_share <= 1:
            raise ValueError(f"decoded_share: expected 0 < share ≤ 1 (got {self.decoded_share!r})")


def workload_arrays(w: Workload) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prompt lengths, output lengths and ready times [s] (numpy default_rng(seed); Poisson gaps after the first)."""
    rng = np.random.default_rng(w.seed)

    def lengths(n: int) -> np.ndarray:
        lo, hi = max(1, int(n * (1 - w.range_ratio))), max(1, int(n * (1 + w.range_ratio)))
        return rng.integers(lo, hi + 1, w.num_prompts) if hi > lo else np.full(w.num_prompts, lo)

    if w.dataset == "random":
        prompt, out = lengths(w.input_len), lengths(w.output_len)
    else:
        prompt, out = draw(DATASETS[w.dataset], w.input_len, w.output_len, w.num_prompts, rng)
    ready = np.zeros(w.num_prompts)
    if math.isfinite(w.request_rate) and w.num_prompts > 1:  # vllm bench serve: gamma(b, 1 / (rate · b)) gaps
        mean_gap, n = 1.0 / w.request_rate, w.num_prompts - 1
        gaps = rng.exponential(mean_gap, n) if w.burstiness == 1 else rng.gamma(w.burstiness, mean_gap / w.burstiness, n)
        ready[1:] = np.cumsum(gaps)
    if w.decoded_share < 1:  # drawn last: a run that decodes every token keeps the same draws
        out = np.minimum(out, rng.geometric(eos_hazard(w.output_len, w.decoded_share), w.num_prompts))
    return prompt, out, ready


def eos_hazard(length: int, share: float) -> float:
    """The per-token end-of-sequence probability h under which a request capped at `length` tokens decodes `share`
    of them on average: E[min(G, L)] = Σ_{k<L} (1 − h)^k = (1 − (1 − h)^L) / h for G geometric (first EOS at
    token G), solved by bisection (the mean falls as h grows). L = 128, share 0.95: h ≈ 0.0008, one request in
    ten ends early."""
    target = share * length
    lo, hi = 0.0, 1.0
    for _ in range(60):
        h = (lo + hi) / 2
        mean = (1 - (1 - h) ** length) / h
        lo, hi = (h, hi) if mean > target else (lo, h)
    return max((lo + hi) / 2, 1e-12)


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

    @property
    def std_s(self) -> float:
        """Population standard deviation (numpy's, as `vllm bench serve` writes std_itl_ms): each segment's values
        lo + kΔ, k < n, have Σ x² = n·lo² + lo·Δ·n(n − 1) + Δ²·(n − 1)n(2n − 1)/6."""
        if not self.count:
            return 0.0
        n, lo = self.steps.astype(float), self.lo_s
        delta = np.where(n > 1, (self.hi_s - lo) / np.maximum(n - 1, 1), 0.0)
        squares = n * lo**2 + lo * delta * n * (n - 1) + delta**2 * (n - 1) * n * (2 * n - 1) / 6
        return math.sqrt(max(0.0, float((squares * self.weight).sum()) / self.count - self.mean_s**2))

    @cached_property
    def _split(self) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        """The segments as point masses (one value, or a stretch of equal gaps: most of a long run) — sorted values
        and cumulative counts — and the progressions left (lo, steps, Δ, weight), Δ = (hi − lo) / (steps − 1)."""
        delta = np.where(self.steps > 1, (self.hi_s - self.lo_s) / np.maximum(self.steps - 1, 1), 0.0)
        point = delta <= 0
        order = np.argsort(self.lo_s[point], kind="stable")
        values = self.lo_s[point][order]
        cum = np.cumsum((self.steps * self.weight)[point][order])
        prog = ~point
        return values, cum, (self.lo_s[prog], self.steps[prog], delta[prog], self.weight[prog])

    def _count_le(self, v: np.ndarray) -> np.ndarray:
        """Samples ≤ each v: the point masses by binary search, and per progression ⌊(v − lo) / Δ⌋ + 1 values
        clipped to [0, steps] (progressions × values)."""
        values, cum, (lo, steps, delta, weight) = self._split
        i = np.searchsorted(values, v, side="right")
        out = np.where(i > 0, cum[np.maximum(i - 1, 0)], 0.0) if values.size else np.zeros(v.shape)
        if lo.size:
            n_le = np.floor((v[None, :] - lo[:, None]) / delta[:, None]) + 1
            out = out + (np.clip(n_le, 0, steps[:, None]) * weight[:, None]).sum(axis=0)
        return out

    def _values_at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        """x_rank (0-based) of the sorted expansion for each rank: the smallest v with count(≤ v) ≥ rank + 1, by
        bisection on v (all ranks at once, each stopping on its own), snapped to a sample."""
        need = np.asarray(ranks, dtype=float) + 1
        lo = np.full(need.shape, float(self.lo_s.min()))
        hi = np.full(need.shape, float(self.hi_s.max()))
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            live = (hi - lo > 1e-15 * np.maximum(np.abs(hi), 1e-300)) & (mid > lo) & (mid < hi)
            if not live.any():
                break
            up = self._count_le(mid) >= need
            hi = np.where(live & up, mid, hi)
            lo = np.where(live & ~up, mid, lo)
        hi = np.where(self._count_le(lo) >= need, lo, hi)
        # snap to the largest sample ≤ hi (bisection stops within rounding of it)
        top = hi * (1 + 1e-12) + 1e-300
        values, _, (base, steps, delta, _) = self._split
        i = np.searchsorted(values, top, side="right")
        best = np.where(i > 0, values[np.maximum(i - 1, 0)], -np.inf) if values.size else np.full(hi.shape, -np.inf)
        if base.size:
            j = np.clip(np.floor((hi[None, :] - base[:, None]) / delta[:, None]), 0, steps[:, None] - 1)
            cand = base[:, None] + j * delta[:, None]
            best = np.maximum(best, np.where(cand <= top[None, :], cand, -np.inf).max(axis=0))
        return np.where(np.isfinite(best), best, hi)

    def percentiles_s(self, qs) -> tuple[float, ...]:
        """numpy.percentile(expanded samples, q) for each q, without expanding them."""
        m = self.count
        if m == 0:
            return tuple(0.0 for _ in qs)
        h = (m - 1) * np.asarray(qs, dtype=float) / 100
        i = np.floor(h)
        x = self._values_at_ranks(np.concatenate([i, i + 1]))
        x_i, x_next = x[: len(i)], x[len(i):]
        return tuple(float(a) if f == 0 else float(a + f * (b - a)) for a, b, f in zip(x_i, x_next, h - i, strict=True))

    def percentile_s(self, q: float) -> float:
        return self.percentiles_s([q])[0]


PERCENTILE_METRICS = ("ttft", "tpot", "itl", "e2el")
"""`vllm bench serve --percentile-metrics` names (the tool's default leaves out e2el; here every one is reported)."""


def percentile_word(q: float) -> str:
    """How vllm bench serve names a percentile in its keys and lines: 99 → '99', 99.9 → '99.9'."""
    return str(int(q)) if float(q).is_integer() else str(q)


def _stat_ms(values: np.ndarray, qs: tuple[float, ...]) -> tuple[float, ...]:
    """mean, median, then each percentile of qs, in ms, of the finite values (0 when none, as vllm bench serve's
    `np.mean(x or 0)`)."""
    v = values[np.isfinite(values)]
    if not v.size:
        return (0.0,) * (2 + len(qs))
    return (float(v.mean()) / MS, float(np.median(v)) / MS, *(float(x) / MS for x in np.percentile(v, qs)))


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
    rejected: int = 0
    """Requests that can never fit the KV pool, even alone: vLLM answers them with an error ("Failed requests")."""
    peak_output_tokens_per_s: float | None = None
    """Most output tokens in one second of the run, as vllm bench serve buckets them (calc.sim_peaks)."""
    peak_concurrent_requests: int | None = None
    """Most requests touching one second of the run (calc.sim_peaks): a closed loop of C can show more than C."""
    stopped_early: bool = False
    """The simulation hit its work cap (sim_engine.MAX_SIM_ITERATIONS decisions or MAX_SIM_WORK request-decisions)
    before every request finished: the figures are
    over the `completed` requests, which a closed loop reaches in its steady state."""
    tokens_per_chunk: float = 1.0
    """Output tokens a streamed chunk carries on average: τ under speculative decoding (StepModel.accepted_tokens),
    whose steps the simulation plays per token; the tool's ITL, the time between chunks, is then τ × that."""

    def within_slos(self, *, slo_ttft_s: float, slo_tpot_s: float, skip: int = 0) -> float:
        """Share of the completed requests, past the first `skip` (an empty server's start), with TTFT ≤ its SLO and
        TPOT ≤ its SLO (a one-token output has no TPOT, so none to break); 0 when none completed."""
        ttft, tpot = self.ttft_s[skip:], self.tpot_s[skip:]
        done = np.isfinite(ttft)
        ok = (ttft <= slo_ttft_s) & (np.isnan(tpot) | (tpot <= slo_tpot_s))
        return float(ok[done].mean()) if done.any() else 0.0

    def goodput_rps(self, slo_ms: dict[str, float]) -> float:
        """`--goodput ttft:X tpot:Y e2el:Z` (ms): completed requests within every SLO given, per second of the run
        (a one-token output's TPOT counts as 0, as the tool's does)."""
        values = {"ttft": self.ttft_s, "tpot": np.nan_to_num(self.tpot_s, nan=0.0), "e2el": self.e2e_s}
        ok = np.isfinite(self.e2e_s)
        for name, limit in slo_ms.items():
            ok &= values[name] <= limit * MS
        return float(ok.sum()) / self.duration_s if self.duration_s > 0 else 0.0

    def bench_summary(self, percentiles: tuple[float, ...] = (99,), metrics: tuple[str, ...] = PERCENTILE_METRICS,
                      goodput: dict[str, float] | None = None) -> dict[str, float]:  # fmt: skip
        """The keys `vllm bench serve --save-result` writes, with its units (s, req/s, tok/s, ms): mean_, median_
        and p{q}_ of each of `metrics` for each q of `percentiles` (its --percentile-metrics, --metric-percentiles);
        request_goodput under the `goodput` SLOs [ms] (--goodput), None without."""
        done = np.isfinite(self.e2e_s)
        out_tokens = float(self.output_lens[done].sum())
        in_tokens = float(self.input_lens[done].sum())
        d = self.duration_s if self.duration_s > 0 else math.inf
        qs = tuple(percentiles)
        per_request = {"ttft": self.ttft_s, "tpot": self.tpot_s, "e2el": self.e2e_s}
        out = {
            "completed": self.completed,
            "failed": self.rejected,
            "duration": self.duration_s,
            "total_input_tokens": int(in_tokens),
            "total_output_tokens": int(out_tokens),
            "request_throughput": self.completed / d,
            "request_goodput": self.goodput_rps(goodput) if goodput else None,
            "output_throughput": out_tokens / d,
            "max_output_tokens_per_s": self.peak_output_tokens_per_s,
            "max_concurrent_requests": self.peak_concurrent_requests,
            "total_token_throughput": (in_tokens + out_tokens) / d,
        }
        for name in metrics:
            if name == "itl":  # kept as segments, not per request
                chunk = self.tokens_per_chunk / MS
                mean, median, *ps = self.itl.mean_s * chunk, *(x * chunk for x in self.itl.percentiles_s((50, *qs)))
                std = self.itl.std_s * chunk
            else:
                mean, median, *ps = _stat_ms(per_request[name], qs)
                finite = per_request[name][np.isfinite(per_request[name])]
                std = float(finite.std()) / MS if finite.size else 0.0
            out |= {f"mean_{name}_ms": mean, f"median_{name}_ms": median, f"std_{name}_ms": std}
            out |= {f"p{percentile_word(q)}_{name}_ms": p for q, p in zip(qs, ps, strict=True)}
        if not self.completed:  # nothing was timed: no latency or throughput at all, not zeros read as figures
            out |= {k: None for k in out if k not in ("completed", "failed")}
        return out

    def none_completed_reason(self, max_num_batched_tokens: int, input_len: int, output_len: int = 1) -> str:
        """Why a run completed nothing: its work cap came first, or no request fits the KV pool even alone."""
        if self.stopped_early:
            chunks = math.ceil(input_len / max(1, max_num_batched_tokens))
            redo = (f"; {self.preemptions:,} preemptions made some recompute theirs" if self.preemptions else "")
            return (f"no request finished within the simulation's work cap: each takes {chunks:,} prefill "
                    f"step{'s' * (chunks != 1)} ({input_len:,} prompt tokens at max_num_batched_tokens "
                    f"{max_num_batched_tokens:,}) and {max(0, output_len - 1):,} decode steps{redo}")  # fmt: skip
        return "no request fits the KV pool, even alone"


@dataclass(frozen=True)
class BatchLatency:
    """One `vllm bench latency` iteration: B prompts sent at once, run until the last has output_len tokens."""

    latency_s: float

    def bench_summary(self) -> dict[str, object]:
        """`vllm bench latency --output-json` keys: avg_latency [s] and its percentiles (all equal: no noise)."""
        return {"avg_latency": self.latency_s, "percentiles": {str(p): self.latency_s for p in LATENCY_PERCENTILES}}


def sim_result(prompt: list[int], out: list[int], *, send: list[float], admitted: list[float], first: list[float],
               fin: list[float], seg: list[list[float]], preemptions: int, busy: float, steps: int,
               rejected: int = 0) -> SimResult:
    """A simulation's per-request times [s] (sent, admitted, first token, finished: NaN where it never came) and ITL
    segments as the result `vllm bench serve` would summarise: TTFT = first − sent, TPOT = (E2E − TTFT) / (out − 1),
    the duration from the first send to the last finish, the mean running count = busy request-seconds / duration."""
    send_a, first_a, fin_a = np.array(send), np.array(first), np.array(fin)
    out_a = np.array(out)
    ttft, e2e = first_a - send_a, fin_a - send_a
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(out_a > 1, (e2e - ttft) / (out_a - 1), math.nan)
    finished = np.isfinite(fin_a)
    ttft = np.where(finished, ttft, math.nan)
    admitted_a = np.array(admitted)
    duration = float(fin_a[finished].max() - np.nanmin(send_a)) if finished.any() else 0.0
    lo, hi, n, weight, total = (np.array(c, dtype=float) for c in seg)
    peak_tokens, peak_requests = peaks(send_a, first_a, fin_a, out_a) or (None, None)
    return SimResult(
        input_lens=np.array(prompt),
        output_lens=out_a,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        queue_s=admitted_a - send_a,
        prefill_s=np.where(finished, first_a - admitted_a, math.nan),
        itl=ItlSegments(lo, hi, n, weight, total),
        duration_s=duration,
        completed=int(finished.sum()),
        preemptions=preemptions,
        mean_running=busy / duration if duration > 0 else 0.0,
        num_steps=steps,
        rejected=rejected,
        peak_output_tokens_per_s=peak_tokens,
        peak_concurrent_requests=peak_requests,
    )
