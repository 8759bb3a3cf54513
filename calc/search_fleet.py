"""Each configuration in one serving mode: its capacity (calc.search_capacity.largest_ok over the SLO test), the
latency at its operating point, and the replicas — or prefill and decode instances — for the request rate, as
calc.replicas.fleet sizes them.

    aggregated      replicas = ⌈rate / capacity⌉; without a rate, one replica at its own throughput
    disaggregated   decode = ⌈rate / capacity⌉, capacity = b / (output_len · TPOT);
                    prefill = max(1, ⌈rate · prefill time / (2/3)⌉); without a rate, one decode instance
"""

from __future__ import annotations

import numpy as np

from calc.scenario import Scenario
from calc.search_capacity import Rows, Slo, aggregated_at, disaggregated_at, largest_ok, prefill_instances


def serve_mode(s: Scenario, c, table: Rows, slo: Slo, held: np.ndarray, disaggregated: bool) -> dict:
    """Capacity, operating point and replica counts of every configuration, in one serving mode."""
    at = disaggregated_at if disaggregated else aggregated_at

    def pred(idx, n):
        ttft, tpot = at(c, table.take(idx), n)
        return slo.meets(ttft, tpot), ttft, tpot

    ok, ttft, tpot = largest_ok(held, pred)
    b = np.maximum(ok, 1)
    v = table.all()
    unprobed = held < 1  # nothing fits: one request's latency, for the table
    if unprobed.any():
        ttft[unprobed], tpot[unprobed] = at(c, table.take(np.flatnonzero(unprobed)), 1)
    if not disaggregated:
        thr = b / (ttft + (c.N - 1) * tpot)
        cap = np.where(ok >= 1, thr, 0.0)
        rate = np.full(len(b), s.request_rate) if s.request_rate else thr
        units = ceil_div(rate, cap) if s.request_rate else np.where(held >= 1, 1, 0)
        return {"ok": ok, "ttft": ttft, "tpot": tpot, "thr": thr, "cap": cap, "units": units, "rate": rate,
                "prefill": np.zeros_like(units), "decode": np.zeros_like(units), "share": np.ones(len(b))}  # fmt: skip
    thr = b / (c.N * tpot)
    cap = np.where(ok >= 1, thr, 0.0)
    rate = np.full(len(b), s.request_rate) if s.request_rate else thr
    decode = ceil_div(rate, cap) if s.request_rate else np.where(held >= 1, 1, 0)
    prefill = np.where(decode > 0, prefill_instances(rate, v.alone), 0).astype(np.int64)
    return {"ok": ok, "ttft": ttft, "tpot": tpot, "thr": thr, "cap": cap, "units": prefill + decode, "rate": rate,
            "prefill": prefill, "decode": decode, "share": 1 + thr * v.alone}  # fmt: skip


def ceil_div(a: np.ndarray, b) -> np.ndarray:
    """⌈a / b⌉ where b > 0, else 0 (no deployment)."""
    b = np.broadcast_to(b, np.shape(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, np.ceil(a / np.where(b > 0, b, 1.0)), 0).astype(np.int64)
