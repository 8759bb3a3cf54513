"""Curves as data for the page's charts (pure; lists of frozen points)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from calc.engine_cycle import decode_point
from calc.engine_spec import EngineSpec
from calc.latency import LatencyResult, latency
from calc.pool import PoolResult
from calc.replicas import conformance_of
from calc.scenario import Scenario, field_bounds
from calc.specs import GPUSpec, ModelSpec
from calc.workload import max_requests_at_length


@dataclass(frozen=True)
class DecodePoint:
    context: float
    batch: float
    floor_s: float
    estimate_s: float


@dataclass(frozen=True)
class ConcurrencyPoint:
    concurrency: int
    tpot_s: float
    ttft_s: float
    per_user_tokens_per_s: float
    output_tokens_per_s: float
    requests_per_s: float
    conformance: float
    goodput_rps: float
    fits: bool


@dataclass(frozen=True)
class OccupancyPoint:
    request_tokens: int
    pool_fraction: float


def geometric(lo: int, hi: int, n: int = 24) -> list[int]:
    if hi <= lo:
        return [lo]
    r = (hi / lo) ** (1 / (n - 1))
    return sorted({max(lo, min(hi, round(lo * r**i))) for i in range(n)})


def decode_vs_context(s: Scenario, lat: LatencyResult,
                      points: list[tuple[float, float]] | None = None) -> list[DecodePoint]:  # fmt: skip
    """Decode step floor and estimate at (context, running batch) points; default: the scenario's batch from
    128 tokens to max_model_len. The seed's five-row table is `points=[(384, 15.39), …]`."""
    batch = max(1, min(s.rank_concurrency, s.max_num_seqs))  # one data-parallel rank's batch
    pts = points or [(c, batch) for c in geometric(128, max(129, s.max_model_len))]
    out = []
    for ctx, b in pts:
        t = decode_point(lat.step, batch=b, context=ctx)
        out.append(DecodePoint(ctx, b, t.floor_s, t.total_s))
    return out


def concurrency_sweep(s: Scenario, m: ModelSpec, g: GPUSpec, mem: PoolResult, engine: EngineSpec
                      ) -> list[ConcurrencyPoint]:  # fmt: skip
    """Throughput, latency and goodput from one request in flight to as many as the pool holds at this length."""
    need = mem.blocks_per_request
    per_req = need(s.request_len)
    out = []
    top = min(s.data_parallel_size * max_requests_at_length(s, mem), field_bounds("concurrency")[1])
    for c in geometric(1, max(2, top), 20):
        t = s.model_copy(update={"concurrency": c})
        lat = latency(t, m, g, mem, engine)
        conf = conformance_of(t, lat).conformance
        out.append(ConcurrencyPoint(c, lat.tpot_s, lat.ttft_s, 1 / lat.tpot_s, lat.output_tokens_per_s,
                                    lat.requests_per_s, conf, lat.requests_per_s * conf,
                                    t.rank_concurrency * per_req <= mem.num_gpu_blocks))  # fmt: skip
    return out


def occupancy_vs_length(s: Scenario, mem: PoolResult) -> list[OccupancyPoint]:
    """The seed report's straight lines: C · blocks(L) / pool, for prompt lengths up to max_model_len (C the requests
    running at once: the concurrency, at most max_num_seqs)."""
    need = mem.blocks_per_request
    lengths = geometric(max(2, s.output_len + 1), max(s.output_len + 2, s.max_model_len), 24)
    running = min(s.rank_concurrency, s.max_num_seqs)
    return [OccupancyPoint(L, running * need(L) / mem.num_gpu_blocks if mem.num_gpu_blocks else float("inf"))
            for L in lengths]  # fmt: skip


@dataclass(frozen=True)
class ContextPoint:
    max_model_len: int
    max_concurrency: float


def concurrency_vs_context(m: ModelSpec, mem: PoolResult) -> list[ContextPoint]:
    """vLLM's 'Maximum concurrency for L tokens per request' as L varies (same pool)."""
    need = mem.blocks_per_request
    return [
        ContextPoint(L, mem.num_gpu_blocks / need(L)) for L in geometric(256, max(512, m.max_len_limit), 24)
    ]


class Curves:
    """The charts' data, each curve computed on first access: a tab pays only for the curves it draws (the
    concurrency sweep, a few milliseconds, is the Latency and SLO tabs' alone)."""

    NAMES = ("occupancy_vs_length", "concurrency_vs_context", "decode_vs_context", "concurrency_sweep")

    def __init__(self, r) -> None:  # a calc.report.Report
        self._r = r

    @cached_property
    def occupancy_vs_length(self) -> tuple[OccupancyPoint, ...]:
        return tuple(occupancy_vs_length(self._r.scenario, self._r.memory))

    @cached_property
    def concurrency_vs_context(self) -> tuple[ContextPoint, ...]:
        return tuple(concurrency_vs_context(self._r.model, self._r.memory))

    @cached_property
    def decode_vs_context(self) -> tuple[DecodePoint, ...]:
        return tuple(decode_vs_context(self._r.scenario, self._r.latency))

    @cached_property
    def concurrency_sweep(self) -> tuple[ConcurrencyPoint, ...]:
        r = self._r
        return tuple(concurrency_sweep(r.scenario, r.model, r.gpu, r.memory, r.engine))
