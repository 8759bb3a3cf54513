"""The two peaks `vllm bench serve` prints since v0.10: "Peak output token throughput (tok/s)" and "Peak concurrent
requests", from a simulated run's per-request times.

vLLM's client cuts the run into one-second buckets from the first request's send (vllm/benchmarks/serve.py,
calculate_metrics) and counts
    tokens in bucket b      = tokens whose arrival time t has ⌊t − t₀⌋ = b   (the first at send + TTFT, then one ITL
                              after another)
    requests in bucket b    = requests with ⌊send − t₀⌋ ≤ b ≤ ⌊finish − t₀⌋  (a request counts in every second it
                              touches, so a closed loop of C can show more than C: one finishing and its successor)
and prints the largest of each. The simulation keeps a request's first-token and finish times but not each token's,
so its tokens are spread evenly between them (its TPOT apart): a bucket's count is the length of the bucket that a
request's token stream covers divided by its TPOT, summed over requests. Both peaks are exact for evenly spaced
tokens; under a mixed load a prefill chunk that stalls a step moves a token or two from one bucket to the next.
"""

from __future__ import annotations

import numpy as np

MAX_BUCKETS = 1_000_000
"""One-second buckets at most (8 MB an array): a run longer than 11.6 days of simulated time gets no peaks."""


def peaks(send_s: np.ndarray, first_s: np.ndarray, finish_s: np.ndarray, output_lens: np.ndarray
          ) -> tuple[float, int] | None:  # fmt: skip
    """(peak output tokens in one second [tok/s], peak requests touching one second) over the requests that finished;
    None when none finished or the run spans more than MAX_BUCKETS seconds. Times in seconds, any origin."""
    done = np.isfinite(finish_s)
    if not done.any():
        return None
    t0 = float(np.nanmin(send_s))
    send, first, fin, out = send_s[done] - t0, first_s[done] - t0, finish_s[done] - t0, output_lens[done]
    n_buckets = int(np.ceil(fin.max())) + 1
    if n_buckets > MAX_BUCKETS:
        return None
    return float(_token_buckets(first, fin, out, n_buckets).max()), int(_request_buckets(send, fin, n_buckets).max())


def _token_buckets(first: np.ndarray, fin: np.ndarray, out: np.ndarray, n: int) -> np.ndarray:
    """Tokens per bucket: a one-token request's token at its first-token time; a longer one's out tokens spread
    over [first − g/2, fin + g/2), g = (fin − first) / (out − 1) its TPOT, out / (fin − first + g) a second."""
    counts = np.bincount(np.floor(first[out == 1]).astype(np.int64), minlength=n).astype(float)[:n]
    many = out > 1
    if not many.any():
        return counts
    g = (fin[many] - first[many]) / (out[many] - 1)
    lo, hi, rate = first[many] - g / 2, fin[many] + g / 2, 1.0 / np.maximum(g, 1e-12)
    # C(t) = Σ rate · (min(t, hi) − lo)⁺ : piecewise linear, read at every whole second
    edges = np.arange(n + 1, dtype=float)
    covered = _ramp_sum(lo, rate, edges) - _ramp_sum(hi, rate, edges)
    return counts + np.diff(covered)


def _ramp_sum(start: np.ndarray, rate: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Σ_i rate_i · (t − start_i)⁺ at each t, by sorting the starts once: t · Σ rate − Σ rate · start over the
    starts ≤ t."""
    order = np.argsort(start)
    s, r = start[order], rate[order]
    k = np.searchsorted(s, t, side="right")
    cum_r, cum_rs = np.concatenate([[0.0], np.cumsum(r)]), np.concatenate([[0.0], np.cumsum(r * s)])
    return t * cum_r[k] - cum_rs[k]


def _request_buckets(send: np.ndarray, fin: np.ndarray, n: int) -> np.ndarray:
    """Requests touching each bucket: +1 from ⌊send⌋ to ⌊finish⌋ inclusive (a difference array)."""
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, np.floor(send).astype(np.int64), 1)
    np.add.at(diff, np.floor(fin).astype(np.int64) + 1, -1)
    return np.cumsum(diff)[:n]
