"""Requests that queue for a slot: a replica sized by the closed forms runs b requests at a time, but Poisson arrivals
at its capacity find all its slots (max_num_seqs, or what the KV pool holds) busy now and then, and wait for one.
The closed loop of `vllm bench serve --max-concurrency` never does; real traffic does.

Erlang C (M/M/c), with c slots and an offered load of a = rate · S (S: one request's time in a slot, E2E):
    B(c, a) = (a^c / c!) / Σ_{k=0}^{c} a^k / k!        (Erlang B)
    C(c, a) = c · B / (c − a · (1 − B))                  P(a request waits), 1 at a ≥ c
    P(wait > t) = C(c, a) · exp(−(c − a) · t / S)
A request that waits longer than its TTFT slack (the SLO minus the TTFT estimate) misses the TTFT SLO; the
capacity test (calc.replicas.capacity, calc.search_capacity) multiplies the conformance by 1 − P(wait > slack).
S is not the operating point's E2E: a replica slows as more requests run, and a queue forms at the top of the
count's swings, so S is the E2E at queue_top (b + ⌈3 √b⌉ + 2 in flight, at most c; on the line from the E2E at b
to the E2E at c: queue_service) and a the rate times it. With the operating point's E2E, 2 of 35 slot-bound
random setups kept under 85 % within both SLOs in the simulation (77.2 % the lowest); with the E2E at c itself, a
replica of 16,384 slots was sized at 6 in flight.
Source: Kleinrock, Queueing Systems vol. 1 (1975), §3.5. Checked against the scheduler simulation's Poisson runs
in scripts/closed_form.py.

Each function takes arrays (the search); its *_one twin one value in plain numbers (calc.replicas.capacity), with the
same operations in the same order, so both give the same bits (tests/test_slot_queue.py).
"""

from __future__ import annotations

import math

import numpy as np

FAR_SIGMAS = 7.0
FAR_SLOTS = 12.0
"""The sum runs over k from max(0, a − 7 √a − 12) to c, and C(c, a) is taken as 0 where c > a + 7 √a + 12: what is
left out is below e^−24 (1e-10) of what is kept (a Poisson tail that far from its mean)."""

TABLE_CELLS = 1 << 17  # pairs × terms summed at once: bounds the table's memory (1 MiB)


def erlang_c(slots, load) -> np.ndarray:
    """C(c, a), the probability that an arrival finds every slot busy; slots c ≥ 1 (integers), load a ≥ 0 in
    Erlangs (mean busy slots). 1 / B = Σ_{i=0}^{c−k₀} Π_{j=c−i+1}^{c} j / a: a running product and a running sum
    along each row of a table (sequential, so an entry's value does not depend on the entries beside it)."""
    c0, a0 = np.broadcast_arrays(np.asarray(slots, dtype=float), np.asarray(load, dtype=float))
    c, a = c0.ravel(), a0.ravel()
    out = np.where(a >= c, 1.0, 0.0)
    live = np.flatnonzero((a > 0) & (a < c) & ~far(c, a))
    if not live.size:
        return out.reshape(np.shape(c0))
    pairs, back = np.unique(c[live] + 1j * a[live], return_inverse=True)  # the search's configurations share
    cl, al = pairs.real.copy(), pairs.imag.copy()  # slots and loads: each pair once
    n = cl - np.maximum(0.0, np.floor(al - (FAR_SIGMAS * np.sqrt(al) + FAR_SLOTS)))  # terms after the first
    order = np.argsort(-n, kind="stable")  # longest first: a block's width is its first pair's
    value = np.empty(cl.size)
    start = 0
    while start < cl.size:  # blocks of pairs × terms, at most TABLE_CELLS
        width = int(n[order[start]])
        rows = order[start:start + max(1, TABLE_CELLS // max(width, 1))]
        with np.errstate(over="ignore", invalid="ignore"):
            # row r, column i − 1: (c − i + 1) / a (integers below 2^53: exact in any order); past a row's own n
            # the columns are computed and not read
            table = np.subtract.outer(cl[rows] + 1, np.arange(1.0, width + 1))
            table /= al[rows, None]
            np.cumprod(table, axis=1, out=table)
            np.cumsum(table, axis=1, out=table)
            total = 1 + table[np.arange(rows.size), n[rows].astype(np.int64) - 1]
            b = 1 / total
            value[rows] = np.where(np.isfinite(total), cl[rows] * b / (cl[rows] - al[rows] * (1 - b)), 0.0)
        start += rows.size
    out[live] = value[np.ravel(back)]
    return out.reshape(np.shape(c0))


def far(slots, load) -> np.ndarray:
    """Where C(c, a) is taken as 0: c − a > 7 √a + 12."""
    return slots - load > FAR_SIGMAS * np.sqrt(load) + FAR_SLOTS


def erlang_c_bound(slots, load) -> np.ndarray:
    """An upper bound on C(c, a) that costs a few operations, for c ≥ a + 1/3 (else 1): C ≤ c · B / (c − a),
    B = pmf(c) / cdf(c) ≤ 2 pmf(c) since c is at least the median (< a + 1/3, Choi 1994), and Stirling's
    c! ≥ √(2πc) (c/e)^c gives pmf(c) ≤ e^(c − a + c ln(a/c)) / √(2πc)."""
    c, a = np.asarray(slots, dtype=float), np.asarray(load, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        pmf = np.exp(c - a + c * np.log(a / c)) / np.sqrt(2 * np.pi * c)
        bound = 2 * c * pmf / (c - a)
    return np.where((c >= a + 1 / 3) & np.isfinite(bound), np.minimum(bound, 1.0), 1.0)


def wait_decay(slots, load, slack_s, service_s) -> np.ndarray:
    """P(wait > slack | wait) = exp(−(c − a) · slack / S); slack_s ≥ 0, service_s > 0 (s)."""
    c, a = np.asarray(slots, dtype=float), np.asarray(load, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        decay = np.exp(-np.maximum(c - a, 0.0) * np.maximum(slack_s, 0.0) / service_s)
    return np.where(np.isfinite(decay), decay, 0.0)


def late_share(slots, load, slack_s, service_s) -> np.ndarray:
    """P(wait for a slot > slack): C(c, a) · exp(−(c − a) · slack / S)."""
    return erlang_c(slots, load) * wait_decay(slots, load, slack_s, service_s)


def erlang_c_one(slots: int, load: float) -> float:
    """erlang_c for one value, in plain floats (5–10× faster than numpy on one value)."""
    c, a = float(slots), float(load)
    if a >= c:
        return 1.0
    reach = FAR_SIGMAS * math.sqrt(a) + FAR_SLOTS if a > 0 else FAR_SLOTS
    if a <= 0 or c - a > reach:
        return 0.0
    n = int(c - max(0.0, math.floor(a - reach)))
    term, run = 1.0, 0.0
    for i in range(1, n + 1):
        term = term * ((c - i + 1) / a)
        run += term
    total = 1 + run
    if not math.isfinite(total):
        return 0.0
    b = 1 / total
    return c * b / (c - a * (1 - b))


def late_share_one(slots: int, load: float, slack_s: float, service_s: float) -> float:
    """late_share for one value."""
    late = erlang_c_one(slots, load)
    if late == 0.0:
        return 0.0
    return late * math.exp(-max(float(slots) - load, 0.0) * max(slack_s, 0.0) / service_s)


def queue_top(in_flight, slots) -> np.ndarray:
    """The in-flight count whose speed serves the queue: at most the slots, and 3 √b + 2 above the operating point
    b (the Poisson count's swings): b + ⌈3 √b⌉ + 2 (integer arrays)."""
    b = np.asarray(in_flight, dtype=np.int64)
    return np.minimum(slots, b + np.ceil(3 * np.sqrt(b)).astype(np.int64) + 2)


def queue_service(in_flight, slots, e2e_s, full_e2e_s) -> np.ndarray:
    """The queue's service time S: the E2E at queue_top, on the line from the E2E at the operating point b
    (e2e_s) to the E2E with every slot busy (full_e2e_s), so that it costs no latency evaluation of its own:
    e2e + (full − e2e) · (top − b) / (c − b); at b = c, full (s)."""
    b = np.asarray(in_flight)
    top = queue_top(b, slots)
    return np.where(slots > b, e2e_s + (full_e2e_s - e2e_s) * (top - b) / np.maximum(slots - b, 1), full_e2e_s)


def queue_service_one(in_flight: int, slots: int, e2e_s: float, full_e2e_s: float) -> float:
    """queue_service for one value, in plain numbers."""
    if slots <= in_flight:
        return full_e2e_s
    top = min(slots, in_flight + math.ceil(3 * math.sqrt(in_flight)) + 2)
    return e2e_s + (full_e2e_s - e2e_s) * (top - in_flight) / (slots - in_flight)
