"""Latency at a concurrency, the SLO test and each configuration's capacity, over arrays (calc.latency,
calc.goodput and calc.replicas.capacity, vectorised).

Aggregated (calc.latency.latency at concurrency b, b ≤ max_num_seqs):
    vLLM   TTFT = front-end + queue + prefill + what the b − 1 running decodes add to its chunk steps
                  + the rest of the step in flight, max(0, TPOT − front-end) (b > 1)
           TPOT = steps of b decodes, a share of them carrying a chunk of the prompts admitted (b / output_len per step)
    SGLang TTFT = … + half a decode step (b > 1); with the overlap schedule max(0, decode step − front-end) + a
                  decode step (b > 1);  TPOT = decode step + (b − 1) / output_len · prefill
Disaggregated (prefill and decode on separate instances of the same configuration):
    TTFT = front-end + queue + (with a rate) the wait for a prefill instance + prefill alone + KV transfer of the
           prompt + one decode step of b
    TPOT = one decode step of b (no prefill rides on a decode instance)
Capacity: the largest b in [1, slots] whose conformance P(TTFT ≤ τ_f) · P(TPOT ≤ τ_p) · (1 − P(wait for a slot >
slack)) at a load of b meets the quota, by the same bisection as calc.numeric.largest_true (so the same probes, in
the same order); then calc.search_fleet refines the load between b and b + 1, as calc.replicas.capacity.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from calc.front_end import FRONT_STEPS
from calc.goodput import p_within, tpot_slo_s
from calc.numeric import falling_root, phi_precise
from calc.prefill_pool import prefill_count, prefill_wait_budget_s, prefill_wait_s
from calc.prefill_queue import conformance as poisson_conformance
from calc.prefill_queue import conformance_one
from calc.search_step import Consts, step_total
from calc.slot_queue import erlang_c, erlang_c_bound, far, late_share_one, wait_decay
from calc.step_time import prompts_in


class Rows:
    """The per-configuration rows of the step model as one matrix, so a subset is one gather."""

    def __init__(self, rows: dict[str, np.ndarray]):
        self.names = list(rows)
        self.matrix = np.vstack([np.broadcast_to(np.asarray(r, dtype=float), np.shape(rows["Wt"])) for r in rows.values()])

    def take(self, idx) -> SimpleNamespace:
        return SimpleNamespace(**dict(zip(self.names, self.matrix[:, idx], strict=True)))

    def all(self) -> SimpleNamespace:
        return SimpleNamespace(**dict(zip(self.names, self.matrix, strict=True)))


def aggregated_at(c: Consts, v, b):
    """(TTFT, TPOT) at b requests in flight, as calc.latency.latency: where the API server binds, the engine holds
    k < b of them (calc.front_end.in_engine) and each waits b · busy − E2E(k) for the API server."""
    _, ttft, tpot = _in_engine(c, v, b)
    return _front_waited(c, b, ttft, tpot), tpot


def aggregated_with_step(c: Consts, v, b):
    """aggregated_at's (TTFT, TPOT) and the plain decode step of the k in the engine (engine_decode_step), from one
    solve."""
    k, ttft, tpot = _in_engine(c, v, b)
    return _front_waited(c, b, ttft, tpot), tpot, decode_step(c, v, k)


def _front_waited(c: Consts, b, ttft, tpot):
    """TTFT with the wait for the API server: each of the b cycles in b · busy at least (calc.latency)."""
    return ttft + np.maximum(0.0, b * c.front_busy_s - (ttft + (c.N - 1) * tpot))


def disaggregated_with_step(c: Consts, v, b):
    """disaggregated_at's (TTFT, TPOT) and the plain decode step, which is its TPOT."""
    ttft, tpot = disaggregated_at(c, v, b)
    return ttft, tpot, tpot


def engine_decode_step(c: Consts, v, b):
    """One decode step of the requests in the engine at b in flight (the LatencyResult's itl_s). The API server can
    bind only where b · busy > busy + (N − 1) · step(b), E2E's least (TTFT ≥ the front end's busy, TPOT ≥ the
    plain step): _in_engine runs there alone."""
    plain = decode_step(c, v, b)
    busy, b = c.front_busy_s, np.broadcast_to(np.asarray(b, dtype=float), np.shape(plain))
    maybe = np.flatnonzero((b > 1) & (b * busy > busy + (c.N - 1) * plain)) if busy > 0 else []
    if not len(maybe):
        return plain
    plain, sub = plain.copy(), _rows(v, maybe)
    plain[maybe] = decode_step(c, sub, _in_engine(c, sub, b[maybe])[0])
    return plain


def _in_engine(c: Consts, v, b):
    """(k in the engine, TTFT and TPOT at k before the API server's wait) at b in flight: calc.front_end.in_engine's
    cases and root over arrays, evaluated only where the API server binds."""
    ttft, tpot = _waited(c, v, b)
    busy, b = c.front_busy_s, np.broadcast_to(np.asarray(b, dtype=float), np.shape(ttft))
    bound = np.flatnonzero((b > 1) & (b * busy > ttft + (c.N - 1) * tpot)) if busy > 0 else []
    if not len(bound):
        return b, ttft, tpot
    k, ttft, tpot = b.copy(), ttft.copy(), tpot.copy()
    sub, flight = _rows(v, bound), b[bound]
    t1, p1 = _waited(c, sub, 1.0)
    one = t1 + (c.N - 1) * p1
    k[bound] = 1.0
    r = np.flatnonzero(one > busy)
    e2e = ttft[bound] + (c.N - 1) * tpot[bound]
    ttft[bound], tpot[bound] = t1, p1
    if r.size:
        sub_r, last = _rows(sub, r), []

        def excess(x):
            last[:] = _waited(c, sub_r, x)
            return last[0] + (c.N - 1) * last[1] - busy * x

        k[bound[r]] = falling_root(excess, 1.0, one[r] - busy, flight[r], e2e[r] - busy * flight[r], FRONT_STEPS)
        ttft[bound[r]], tpot[bound[r]] = last  # the root is the last point tried
    return k, ttft, tpot


def _rows(v, idx) -> SimpleNamespace:
    return SimpleNamespace(**{name: a[idx] for name, a in vars(v).items()})


def _waited(c: Consts, v, b):
    """(TTFT, TPOT) at b in the engine, the wait for the step budget included."""
    ttft, tpot = _aggregated_at(c, v, b)
    return ttft + _budget_wait(c, v, b, ttft, tpot), tpot


def _aggregated_at(c: Consts, v, b):
    if c.mixed:
        others = b - 1
        steps = np.ceil(v.Lp / np.maximum(1, v.budget - others))
        shared = step_total(c, v, v.Lp / steps, v.pairs / steps, others, others * c.ctx, scale=steps)
        ttft = v.base + (shared - v.alone)
        if c.N <= 1:
            return ttft, step_total(c, v, 0, 0, b, b * c.ctx)
        mixed = _mixed_tpot(c, v, b)
        in_flight = np.where(b > 1, np.maximum(0.0, mixed - c.front_s), 0.0)  # calc.engine_cycle.in_flight_wait_s
        return ttft + in_flight, np.where(b > 1, mixed, v.dec1)
    dec = step_total(c, v, 0, 0, b, b * c.ctx)
    # calc.engine_cycle.cycle: at one request in flight its batch is launched on an idle GPU (the overlap schedule)
    base = v.base + np.where(b <= 1, c.idle_launch_s, 0.0) if c.idle_launch_s else v.base
    if c.lagged:  # the overlap schedule: the step in flight, and for b > 1 the one decided before it came
        ttft = base + np.maximum(0.0, dec - c.front_s) + np.where(b > 1, dec, 0.0)
    else:
        ttft = base + np.where(b > 1, dec / 2, 0.0)
    return ttft, dec if c.N <= 1 else dec + (b - 1) / c.N * v.alone


def decode_step(c: Consts, v, b):
    """One decode step of b requests (calc.latency's decode_point: the LatencyResult's itl_s)."""
    return step_total(c, v, 0, 0, b, b * c.ctx)


def _mixed_tpot(c: Consts, v, b):
    """calc.engine_cycle.mixed_tpot_s: a share q of the steps carries a chunk of the arriving prompts, the rest decode."""
    room = np.maximum(0.0, v.budget - b)
    x = np.minimum(b * v.Lp / c.N, room)
    chunk = np.minimum(v.Lp, room)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(chunk > 0, np.minimum(1.0, x / np.where(chunk > 0, chunk, 1.0)), 1.0)
        tokens = np.where(q > 0, x / np.where(q > 0, q, 1.0), 0.0)
    plain = step_total(c, v, 0, 0, b, b * c.ctx)
    return np.where(q > 0, q * step_total(c, v, tokens, tokens * (v.Lp / 2 + v.hit), b, b * c.ctx) + (1 - q) * plain, plain)


def _budget_wait(c: Consts, v, b, ttft, tpot):
    """What the prompts wait for the step budget beyond the requests' own time (calc.engine_cycle.budget_cycle_s)."""
    d = np.minimum(b, v.budget * (c.N - 1) / (v.Lp + c.N - 1))
    p = v.budget - d
    full = step_total(c, v, p, p * (v.Lp / 2 + v.hit), d, d * c.ctx, pseqs=prompts_in(p, v.Lp))
    with np.errstate(divide="ignore", invalid="ignore"):
        cycle = np.where(p > 0, b * v.Lp * full / np.where(p > 0, p, 1.0), 0.0)
    return np.maximum(0.0, cycle - (ttft + (c.N - 1) * tpot))


def disaggregated_at(c: Consts, v, b):
    """(TTFT, TPOT) of a decode instance holding b requests (v.transfer: the prompt's KV over the link), with a
    request rate the wait for a prefill instance (v.pwait: prefill_pool_arrays)."""
    dec = step_total(c, v, 0, 0, b, b * c.ctx)
    return v.base + v.pwait + v.transfer + dec, dec


def prefill_pool_arrays(s, rows: dict) -> tuple[np.ndarray, np.ndarray]:
    """calc.prefill_pool.prefill_pool over the configurations (rows' alone, base, transfer, dec1): the prefill
    instances the TTFT SLO needs and the mean wait for one; (1, 0) without a request rate."""
    alone = rows["alone"]
    if not s.request_rate:
        return np.ones_like(alone), np.zeros_like(alone)
    x = s.request_rate * alone
    most = prefill_wait_budget_s(s, rows["base"] + rows["transfer"] + rows["dec1"], rows["dec1"])
    n = prefill_count(x, alone, most)
    return n, prefill_wait_s(x, alone, n)


def _ratio_for(target: float, sigma: float) -> float:
    """The SLO / median ratio r at which P(X ≤ SLO) = target, for X log-normal with spread σ (bisection on ln r)."""
    lo, hi = -60.0 * sigma, 60.0 * sigma
    for _ in range(64):  # 120 σ / 2^64: far below a double's resolution of ln r
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if p_within(median_s=1.0, slo_s=math.exp(mid), sigma=sigma) >= target else (mid, hi)
    return math.exp(hi)


# Abramowitz & Stegun 7.1.26: erfc(x) ≈ t·(a1 + t·(a2 + … + t·a5))·e^(−x²), t = 1 / (1 + p·x), x ≥ 0;
# |error| ≤ 1.5e-7 (7e-8 measured against math.erfc over ±10 σ)
AS_P = 0.3275911
AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
AS_MARGIN = 1e-6  # conformance this close to the quota is decided by the exact p_within instead
PRECISE_MARGIN = 1e-12  # with calc.numeric.phi_precise (1e-14 per Φ), what is closer still goes to the scalar


def phi_approx(z: np.ndarray) -> np.ndarray:
    """Φ(z) to 1.5e-7 (A&S 7.1.26): only ever used to decide what is far from the quota."""
    x = np.abs(z) / math.sqrt(2)
    t = 1 / (1 + AS_P * x)
    a1, a2, a3, a4, a5 = AS_A
    tail = 0.5 * t * (a1 + t * (a2 + t * (a3 + t * (a4 + t * a5)))) * np.exp(-x * x)
    return np.where(z >= 0, 1 - tail, tail)


class Slo:
    """The SLO test of calc.replicas.capacity: conformance P(TTFT ≤ τ_f) · P(TPOT ≤ τ_p) ≥ quota.

    Decided in three passes, each exact where it decides: bounds on SLO / latency (a factor below the quota fails,
    both factors above √quota pass); then Φ to 1.5e-7 where the conformance is more than 1e-6 from the quota; the
    few left get the scalar p_within itself, so every decision is the scalar's."""

    def __init__(self, s):
        self.ttft_s, self.tpot_s, self.sigma, self.quota = s.slo_ttft_s, tpot_slo_s(s), s.latency_sigma, s.conformance_quota
        self.output_len = s.output_len
        if self.sigma > 0:
            self.r_fail = _ratio_for(self.quota, self.sigma) * (1 - 1e-9)
            self.r_pass = _ratio_for(math.sqrt(self.quota), self.sigma) * (1 + 1e-9)

    def p(self, median, slo: float) -> np.ndarray:
        f = np.frompyfunc(lambda x: p_within(median_s=x, slo_s=slo, sigma=self.sigma), 1, 1)
        return np.asarray(f(np.asarray(median, dtype=float)), dtype=float)

    def conformance(self, ttft, tpot) -> np.ndarray:
        return self.p(ttft, self.ttft_s) * self.p(tpot, self.tpot_s)

    def meets(self, ttft, tpot) -> np.ndarray:
        if self.sigma == 0:
            return (ttft <= self.ttft_s) & (tpot <= self.tpot_s)
        rf, rp = self.ttft_s / ttft, self.tpot_s / tpot
        out = (rf >= self.r_pass) & (rp >= self.r_pass)
        unsure = ~out & (rf >= self.r_fail) & (rp >= self.r_fail)
        if not unsure.any():
            return out
        i = np.flatnonzero(unsure)
        near = phi_approx(np.log(rf[i]) / self.sigma) * phi_approx(np.log(rp[i]) / self.sigma) - self.quota
        out[i] = near > 0
        j = i[np.abs(near) <= AS_MARGIN]
        if j.size:
            out[j] = self.conformance(ttft[j], tpot[j]) >= self.quota
        return out

    def meets_queued(self, ttft, tpot, slots, load, slack_s, service_s, plain, work, rate, conf=None) -> np.ndarray:
        """meets() under Poisson arrivals at `rate`, as calc.replicas.capacity: the conformance of
        calc.prefill_queue (prompts queueing behind each other's prefill: `plain` the decode step, `work` S) times
        1 − late, late = calc.slot_queue.late_share (the share waiting past the TTFT slack for a slot). Erlang C
        runs only where meets() passes and a bound on late (erlang_c_bound · wait_decay) could fail the quota; Φ to
        1.5e-7 decides what is more than 1e-6 from the quota, the scalar functions the rest. `conf`: approx() of
        these latencies, where every one is known to pass meets() (the load's bisection: the latency stays, the
        load moves)."""
        out = np.ones(len(ttft), dtype=bool) if conf is not None else self.meets(ttft, tpot)
        i = np.flatnonzero(out)
        if not i.size:
            return out
        closed = self.approx(ttft[i], tpot[i]) if conf is None else conf[i]
        poisson = poisson_conformance(closed, ttft[i], tpot[i], plain[i], work[i], rate[i], self.output_len, self.ttft_s,
                                     self.tpot_s, self.sigma, phi_approx)  # fmt: skip
        late = np.zeros(i.size)
        k = np.flatnonzero(~far(slots[i], load[i]))  # where C(c, a) is 0 nothing waits for a slot
        if k.size:
            decay = wait_decay(slots[i[k]], load[i[k]], slack_s[i[k]], service_s[i[k]])
            k_keep = poisson[k] * (1 - decay * erlang_c_bound(slots[i[k]], load[i[k]])) - self.quota <= AS_MARGIN
            k, decay = k[k_keep], decay[k_keep]  # the rest pass whatever the wait
            late[k] = erlang_c(slots[i[k]], load[i[k]]) * decay  # = calc.slot_queue.late_share
        near = poisson * (1 - late) - self.quota
        out[i] = near > 0
        close = np.abs(near) <= AS_MARGIN
        if not close.any():
            return out
        j, late = i[close], late[close]  # again with Φ to 1e-14 (a quota of 0.9999999 can put every one here)
        precise = poisson_conformance(self.approx(ttft[j], tpot[j], phi_precise), ttft[j], tpot[j], plain[j], work[j],
                                     rate[j], self.output_len, self.ttft_s, self.tpot_s, self.sigma, phi_precise)  # fmt: skip
        near = precise * (1 - late) - self.quota
        out[j] = near > 0
        for k in j[np.abs(near) <= PRECISE_MARGIN]:  # a tie to 1e-12: the scalar itself
            out[k] = self.exact(ttft[k], tpot[k], plain[k], work[k], rate[k], slots[k], load[k], slack_s[k],
                                service_s[k]) >= self.quota  # fmt: skip
        return out

    def exact(self, ttft, tpot, plain, work, rate, slots, load, slack_s, service_s) -> float:
        """calc.replicas.capacity's conformance under Poisson arrivals for one configuration, in its own operations."""
        closed = p_within(median_s=ttft, slo_s=self.ttft_s, sigma=self.sigma) * p_within(
            median_s=tpot, slo_s=self.tpot_s, sigma=self.sigma)  # fmt: skip
        poisson = conformance_one(closed=closed, ttft_s=float(ttft), tpot_s=float(tpot), plain_s=float(plain),
                                  work=float(work), rate_rps=float(rate), output_len=self.output_len,
                                  slo_ttft_s=self.ttft_s, slo_tpot_s=self.tpot_s, sigma=self.sigma)  # fmt: skip
        return poisson * (1 - late_share_one(int(slots), float(load), float(slack_s), float(service_s)))

    def approx(self, ttft, tpot, phi=phi_approx) -> np.ndarray:
        """The conformance to 3e-7 (Φ by A&S 7.1.26; to 1e-13 with calc.numeric.phi_precise); σ = 0: the step."""
        if self.sigma == 0:
            return ((ttft <= self.ttft_s) & (tpot <= self.tpot_s)).astype(float)
        return phi(np.log(self.ttft_s / ttft) / self.sigma) * phi(np.log(self.tpot_s / tpot) / self.sigma)


def largest_ok(hi: np.ndarray, pred) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """calc.numeric.largest_true(pred, 1, hi) for every entry at once (0 where hi < 1 or pred(1) fails), with the
    (TTFT, TPOT) of the answer (of 1 where it is 0; NaN where hi < 1). pred(idx, n) → (passes, TTFT, TPOT) for
    the entries idx at values n."""
    ok = np.zeros(len(hi), dtype=np.int64)
    ttft, tpot = np.full(len(hi), np.nan), np.full(len(hi), np.nan)
    idx = np.flatnonzero(hi >= 1)
    if not idx.size:
        return ok, ttft, tpot
    yes, ttft[idx], tpot[idx] = pred(idx, np.ones(idx.size, dtype=np.int64))
    idx = idx[yes]
    top = hi[idx]
    yes, a, b = pred(idx, top)
    ok[idx[yes]], ttft[idx[yes]], tpot[idx[yes]] = top[yes], a[yes], b[yes]
    idx, lo, top = idx[~yes], np.ones((~yes).sum(), dtype=np.int64), top[~yes]
    while idx.size:
        mid = (lo + top) // 2
        yes, a, b = pred(idx, mid)
        ttft[idx[yes]], tpot[idx[yes]] = a[yes], b[yes]
        lo, top = np.where(yes, mid, lo), np.where(yes, top, mid)
        done = top - lo <= 1
        ok[idx[done]] = lo[done]
        idx, lo, top = idx[~done], lo[~done], top[~done]
    return ok, ttft, tpot
