"""Each configuration in one serving mode: its capacity (calc.search_capacity.largest_ok over the SLO test, then
with the wait for a free slot, as calc.replicas.capacity), the latency at its operating point, and the replicas —
or prefill and decode instances — for the request rate, as calc.replicas.fleet sizes them.

    aggregated      replicas = ⌈rate / capacity⌉; without a rate, one replica at its own throughput
    disaggregated   decode = ⌈rate / capacity⌉, capacity = b / (output_len · TPOT);
                    prefill = max(1, ⌈rate · prefill time / (2/3)⌉), or as many as the TTFT SLO needs
                    (calc.prefill_pool, over arrays in calc.search_capacity.prefill_pool_arrays); without a rate,
                    one decode instance
"""

from __future__ import annotations

import numpy as np

from calc.front_end import front_end_rps
from calc.latency import graphed_counts
from calc.prefill_pool import prefill_count
from calc.replicas import GRAPH_GAIN, LOAD_PRECISION, RATIO_TOL
from calc.scenario import Scenario
from calc.search_capacity import (
    Rows,
    Slo,
    aggregated_at,
    aggregated_with_step,
    decode_step,
    disaggregated_at,
    disaggregated_with_step,
    engine_decode_step,
    largest_ok,
)
from calc.slot_queue import queue_service


def serve_mode(s: Scenario, c, table: Rows, slo: Slo, held: np.ndarray, disaggregated: bool) -> dict:
    """Capacity, operating point and replica counts of every configuration, in one serving mode."""
    at = disaggregated_at if disaggregated else aggregated_at

    def throughput(n, ttft, tpot):
        return n / (c.N * tpot) if disaggregated else n / (ttft + (c.N - 1) * tpot)

    b, load, ttft, tpot = operating_points(s, c, table, slo, held, at, throughput)
    thr = throughput(np.maximum(b, 1), ttft, tpot)
    cap = np.where(b >= 1, load / np.maximum(b, 1) * thr, 0.0)
    cap = np.minimum(cap, front_end_rps(c.front_busy_s, s.slo_ttft_s - ttft))  # as calc.replicas.capacity
    rate = np.full(len(b), s.request_rate) if s.request_rate else thr
    if not disaggregated:
        units = ceil_div(rate, cap) if s.request_rate else np.where(held >= 1, 1, 0)
        return {"ok": b, "ttft": ttft, "tpot": tpot, "thr": thr, "cap": cap, "units": units, "rate": rate,
                "prefill": np.zeros_like(units), "decode": np.zeros_like(units), "share": np.ones(len(b))}  # fmt: skip
    v = table.all()
    decode = ceil_div(rate, cap) if s.request_rate else np.where(held >= 1, 1, 0)
    count = v.pinst if s.request_rate else prefill_count(rate * v.alone, v.alone)  # the TTFT SLO's, with a rate
    prefill = np.where(decode > 0, count, 0).astype(np.int64)
    return {"ok": b, "ttft": ttft, "tpot": tpot, "thr": thr, "cap": cap, "units": prefill + decode, "rate": rate,
            "prefill": prefill, "decode": decode, "share": 1 + thr * v.alone}  # fmt: skip


def operating_points(s: Scenario, c, table: Rows, slo: Slo, held: np.ndarray, at, throughput):
    """calc.replicas.capacity's steps over arrays: (b in flight, load in busy slots, TTFT, TPOT at b) of every
    configuration; b = 0 where not even one request keeps the quota (TTFT, TPOT then of one request)."""
    work = np.zeros(len(held)) if at is disaggregated_at else table.all().work  # decode instances prefill nothing
    step_at = decode_step if at is disaggregated_at else engine_decode_step  # no API server wait on a decode instance
    with_step = disaggregated_with_step if at is disaggregated_at else aggregated_with_step
    full_e2e = np.full(len(held), np.nan)  # E2E with every slot busy
    some = np.flatnonzero(held >= 1)
    full_e2e[some] = held[some] / throughput(held[some], *at(c, table.take(some), held[some]))

    def serving(idx, n, ttft, tpot):
        """The queue's service time at n in flight (calc.slot_queue.queue_service)."""
        return queue_service(n, held[idx], n / throughput(n, ttft, tpot), full_e2e[idx])

    def queued(idx, n, load, ttft, tpot, conf=None, full=None, plain=None):
        """The SLO test under Poisson arrivals (other prompts' prefill, the wait for a slot), at n in flight and a
        load of `load` slots (at n's speed)."""
        full = serving(idx, n, ttft, tpot) if full is None else full
        plain = step_at(c, table.take(idx), n) if plain is None else plain
        slots, load = held[idx].astype(float), np.broadcast_to(np.asarray(load, dtype=float), np.shape(ttft))
        service = n / throughput(n, ttft, tpot)
        return slo.meets_queued(ttft, tpot, slots, load * full / service, s.slo_ttft_s - ttft, full, plain, work[idx],
                                load / service, conf)  # fmt: skip

    def latency_only(idx, n):
        ttft, tpot = at(c, table.take(idx), n)
        return slo.meets(ttft, tpot), ttft, tpot

    def with_wait(idx, n):
        ttft, tpot, plain = with_step(c, table.take(idx), n)
        return queued(idx, n, n, ttft, tpot, plain=plain), ttft, tpot

    top, ttft, tpot = largest_ok(held, latency_only)
    unprobed = held < 1  # nothing fits: one request's latency, for the table
    if unprobed.any():
        ttft[unprobed], tpot[unprobed] = at(c, table.take(np.flatnonzero(unprobed)), 1)
    # with the wait for a slot: at a = c every arrival waits, so ok < slots
    ok = top.copy()
    idx = np.flatnonzero(top >= 1)
    fails = idx[~queued(idx, top[idx], top[idx], ttft[idx], tpot[idx])]
    if fails.size:
        sub = np.zeros(len(top), dtype=np.int64)
        sub[fails] = top[fails] - 1
        ok_sub, t_sub, p_sub = largest_ok(sub, with_wait)
        ok[fails] = ok_sub[fails]
        has = fails[ok_sub[fails] >= 1]
        ttft[has], tpot[has] = t_sub[has], p_sub[has]
    # where the wait binds (the latency at ok + 1 keeps the quota), the load between ok and ok + 1
    b, load = ok.copy(), ok.astype(float)
    n1 = ok[fails] + 1
    t1, p1, plain1 = with_step(c, table.take(fails), n1)
    lo, hi, conf1 = ok[fails].astype(float), n1.astype(float), slo.approx(t1, p1)  # n1 ≤ top: t1, p1 meet the SLOs
    full1 = serving(fails, n1, t1, p1)
    go = np.flatnonzero(hi - lo > np.maximum(lo, 1 / LOAD_PRECISION) / LOAD_PRECISION)
    while go.size:
        mid = (lo[go] + hi[go]) / 2
        yes = queued(fails[go], n1[go], mid, t1[go], p1[go], conf1[go], full1[go], plain1[go])
        lo[go], hi[go] = np.where(yes, mid, lo[go]), np.where(yes, hi[go], mid)
        go = go[hi[go] - lo[go] > np.maximum(lo[go], 1 / LOAD_PRECISION) / LOAD_PRECISION]
    at_ok = throughput(np.maximum(ok[fails], 1), ttft[fails], tpot[fails])
    better = (ok[fails] < 1) | (lo / n1 * throughput(n1, t1, p1) > at_ok)
    j = fails[better]
    b[j], load[j], ttft[j], tpot[j] = n1[better], lo[better], t1[better], p1[better]
    b = np.where(load > 0, b, 0)
    # past the CUDA-graph size fewer in flight can serve more: calc.replicas.capacity's probes, in the same order
    rate = np.where(b >= 1, load / np.maximum(b, 1) * throughput(np.maximum(b, 1), ttft, tpot), 0.0)
    budget = table.all().budget
    for k in graphed_counts(b, input_len=table.all().Lp, output_len=c.N, budget=budget, graph_tokens=c.cudagraph_max_tokens):
        idx = np.flatnonzero((k >= 1) & (k < b))
        if not idx.size:
            continue
        tk, pk = at(c, table.take(idx), k[idx])
        rk = throughput(k[idx], tk, pk)
        up = rk > rate[idx] * (1 + GRAPH_GAIN)
        if not up.any():
            continue
        meets = queued(idx[up], k[idx][up], k[idx][up], tk[up], pk[up])
        j, w = idx[up][meets], np.flatnonzero(up)[meets]
        b[j], load[j], ttft[j], tpot[j], rate[j] = k[j], k[j], tk[w], pk[w], rk[w]
    return b, load, ttft, tpot


def ceil_div(a: np.ndarray, b) -> np.ndarray:
    """⌈a / b⌉ where b > 0, else 0 (no deployment)."""
    b = np.broadcast_to(b, np.shape(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, np.ceil(a / np.where(b > 0, b, 1.0) * (1 - RATIO_TOL)), 0).astype(np.int64)
