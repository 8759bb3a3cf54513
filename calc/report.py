"""The Report: every number any surface shows (page, CLI text, JSON, exports), as named fields with units in their
names. Sections that cost more than the headline (capacity and replicas, swap and prefix reuse, curves, the GPU
sweep, the simulations, suggestions) are computed on first access, so `evaluate()` stays fast and a surface pays
only for what it shows; `to_dict()` has them all."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import cached_property

from calc.accuracy import BANDED_RIDGE_FLOP_PER_BYTE, Accuracy, ErrorBand, error_band, low_ridge
from calc.curves import Curves
from calc.engine_spec import EngineSpec
from calc.goodput import SEED_CONFIGS, Conformance, SimRow, scenario_sim_config, simulate
from calc.latency import LatencyResult
from calc.offload import OffloadResult, offload
from calc.pool import PoolResult
from calc.prefix import PrefixResult, prefix
from calc.replicas import Fleet, Option, capacity, fleet, gpu_options
from calc.scenario import Scenario
from calc.serve_command import joined, plan_serve_commands
from calc.shortfall import Shortfall, shortfall
from calc.specs import GPUSpec, ModelSpec
from calc.tails import ItlSummary, Tails, seed_itl_example, tails
from calc.workload import WorkloadFit


@dataclass(frozen=True)
class Report:
    scenario: Scenario
    model: ModelSpec
    """The model as planned: the shipped or uploaded spec with the scenario's overrides applied."""
    gpu: GPUSpec
    """The GPU as planned, overrides applied."""
    engine: EngineSpec
    memory: PoolResult
    fit: WorkloadFit
    latency: LatencyResult
    conformance: Conformance
    notes: tuple[str, ...]
    other_gpus: dict[str, GPUSpec] = field(repr=False, compare=False, default_factory=dict)
    """The shipped GPUs, for the sections that compare (suggestions, GPU options)."""
    accuracy: Accuracy | None = field(repr=False, compare=False, default=None)
    """Held-out error of the latency estimates (calc.accuracy), for the bands beside TTFT and TPOT."""
    multimodal: bool = field(repr=False, compare=False, default=False)
    """The checkpoint has a vision or audio tower (`model` has none under language_model_only)."""
    asked: Scenario | None = field(repr=False, compare=False, default=None)
    """The scenario as given, where `scenario` runs fewer requests than it asks (SGLang's hybrid cap): the changes
    and GPU options start from it, each capped again on its own pool."""

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def gpu_name(self) -> str:
        return self.gpu.name

    @property
    def goodput_rps(self) -> float:
        """Requests per second served within both SLOs: throughput × conformance."""
        return self.conformance.goodput_rps

    @cached_property
    def fleet(self) -> Fleet:
        """Capacity of one replica at the conformance quota, replicas and GPUs for request_rate, cost."""
        return self._fleet_at(self.scenario)

    def _fleet_at(self, s: Scenario) -> Fleet:
        """The fleet for scenario `s`, this Report's with other SLO settings (the latency does not depend on them)."""
        lat = self.latency
        cap = capacity(s, self.model, self.gpu, self.memory, self.engine, lat.step)
        return fleet(s, self.gpu, cap, throughput_rps=lat.requests_per_s, prefill_s=lat.prefill_s,
                     prefill_instances=lat.prefill_instances, prefill_wait_budget_s=lat.prefill_wait_budget_s)  # fmt: skip

    @cached_property
    def looser_quota(self) -> Fleet | None:
        """The fleet for the same rate at a conformance quota one point lower (0.90 → 0.89), where a rate is sized:
        where the quota meets a flat stretch of the conformance curve, that point can move the replica count a lot
        (an audit: DeepSeek-V3 on 8 H200s at 3 req/s, 23 replicas at 90 %, 15 at 89 %). None without a rate, a
        replica count or a quota above 0.5 to lower."""
        s = self.scenario
        if not s.request_rate or self.fleet.replicas is None or s.conformance_quota <= 0.5:
            return None
        return self._fleet_at(s.model_copy(update={"conformance_quota": round(s.conformance_quota - 0.01, 6)}))

    @cached_property
    def offload(self) -> OffloadResult:
        return offload(self.scenario, self.model, self.gpu, self.memory, self.latency)

    @cached_property
    def prefix(self) -> PrefixResult:
        return prefix(self.scenario, self.memory, self.latency)

    @cached_property
    def suggestions(self):
        from calc.advice import suggest

        return () if self.fit.fits else suggest(self.asked or self.scenario, self.model, self.gpu, self.other_gpus)

    @cached_property
    def curves(self) -> Curves:
        return Curves(self)

    @cached_property
    def simulation(self) -> tuple[SimRow, ...]:
        """The seed's two configurations, then this scenario, in the seed's log-normal simulation."""
        s, lat = self.scenario, self.latency
        mine = scenario_sim_config(requests_per_s=lat.requests_per_s, window_s=s.sim_window_s,
                                   ttft_s=s.sim_ttft_median_s or lat.ttft_s, tpot_s=s.sim_tpot_median_s or lat.tpot_s)  # fmt: skip
        rows = simulate(SEED_CONFIGS)
        rows += simulate([mine], sigma=s.latency_sigma, window_s=s.sim_window_s, slo_ttft_s=s.slo_ttft_s,
                         slo_tpot_s=s.slo_tpot_s)  # fmt: skip
        return tuple(rows)

    @cached_property
    def tails(self) -> Tails:
        s, lat = self.scenario, self.latency
        others = lat.decode_batch > 1 and not s.disaggregated  # another request's prompt can ride on a step
        return tails(fanout=s.fanout, chain_calls=s.chain_calls, e2e_s=lat.e2e_s, sigma=s.latency_sigma,
                     itl_s=lat.stream_itl_s, spike_s=lat.stream_spike_s if others else lat.stream_itl_s,
                     tpot_s=lat.tpot_s * lat.step.accepted_tokens)  # the gaps between streamed chunks  # fmt: skip

    def _price_estimated(self, gid: str) -> bool:
        """The GPU's price is its spec's own estimate (its `derived` list), not a published rate nor the user's."""
        own = gid == self.scenario.gpu and self.scenario.gpu_hour_price is not None
        return not own and "price_per_gpu_hour" in self.other_gpus[gid].derived

    @cached_property
    def gpu_options(self) -> tuple[Option, ...]:
        return tuple(gpu_options(self.asked or self.scenario, self.model, self.gpu, self.other_gpus, self.engine))

    @cached_property
    def shortfall(self) -> Shortfall:
        """What is missing per GPU when the plan does not fit, and what the workload takes of the pool."""
        return shortfall(self.scenario, self.memory, self.fit)

    @property
    def serves(self) -> bool:
        """The engine starts and admits a request of this length: latency, SLO and cost figures can happen."""
        return self.shortfall.serves

    @property
    def benchmark_prompts(self) -> int:
        """max(200, 10·C), at most what one simulation runs (calc.bench.MAX_SIM_PROMPTS)."""
        from calc.bench import MAX_SIM_PROMPTS

        return min(MAX_SIM_PROMPTS, max(200, 10 * self.scenario.concurrency))

    @cached_property
    def benchmark(self):
        """`vllm bench serve --max-concurrency C --num-prompts max(200, 10·C)` at the scenario's lengths, predicted
        by the scheduler simulation (calc.bench): per-request TTFT, TPOT, E2E and the ITL distribution."""
        from calc import bench

        c = self.scenario.concurrency
        return bench.serve(self, num_prompts=self.benchmark_prompts, max_concurrency=c)

    @cached_property
    def benchmark_steady_p99_ttft_s(self) -> float | None:
        """p99 TTFT of the predicted benchmark past its first C requests [s]: the tool starts its C clients together,
        so the first wave's prompts wait for each other's prefill, and its p99 over every request can be that wave
        alone (Qwen3-8B on an H100 at C = 128: 4.2 s over all 1,280, 0.25 s past the first 128). None where no more
        than C requests completed."""
        import numpy as np

        c, t = self.scenario.concurrency, np.asarray(self.benchmark.ttft_s)
        rest = t[c:][np.isfinite(t[c:])]
        return float(np.percentile(rest, 99)) if rest.size else None

    @cached_property
    def benchmark_varied(self):
        """The same benchmark with lengths ±30 % (`--random-range-ratio 0.3`, the search's check): requests out of
        step, as traffic is, where fixed lengths keep them in lockstep. At most 1,000 prompts (the search check's
        bound: it is shown beside the main run, not instead of it)."""
        from calc import bench

        c = self.scenario.concurrency
        n = min(bench.MAX_CHECK_PROMPTS, self.benchmark_prompts)
        return bench.serve(self, num_prompts=n, max_concurrency=c, range_ratio=bench.CHECK_RANGE_RATIO)

    @cached_property
    def replica_check(self):
        """The replica count for request_rate against the scheduler simulation (calc.replica_check): one replica
        at its share of the rate, Poisson arrivals; None without a rate, a replica count, or for disaggregated
        serving. Up to four simulations: computed only where shown."""
        from calc.replica_check import replica_check

        return replica_check(self, self.fleet.replicas)

    @cached_property
    def benchmark_distribution(self):
        """Quantiles of the predicted benchmark's TTFT, TPOT, E2E and ITL (calc.distribution), for its CDF."""
        from calc.distribution import distribution

        return distribution(self.benchmark)

    @cached_property
    def error_bands(self) -> dict[str, ErrorBand]:
        """The estimates' (closed forms') held-out median |error| per metric ('ttft', 'tpot', 'throughput') for this
        GPU's family, where known."""
        return self._bands(closed_form=True)

    @cached_property
    def benchmark_error_bands(self) -> dict[str, ErrorBand]:
        """The same for the predicted benchmark (the scheduler simulation), with its median ITL's ('itl')."""
        return self._bands(closed_form=False)

    @property
    def bands_withheld(self) -> str | None:
        """Why no held-out band is shown for this GPU though the table has its family's: a part far outside the
        GPUs the bands were measured on (calc.accuracy.low_ridge), or a plan with speculative decoding's speed (no
        held-out run speculates)."""
        if self.latency.step.spec_tokens:
            return ("none with speculative decoding: no held-out run speculates (one published vLLM run with its "
                    "acceptance printed was predicted blind, TPOT +6.3 %: docs/calibration-history.md (36))")  # fmt: skip
        ridge = low_ridge(self.gpu)
        if ridge is None:
            return None
        return (f"none for this GPU: its ridge of {ridge:.0f} FLOP a byte lies far below the held-out runs' GPUs' "
                f"({BANDED_RIDGE_FLOP_PER_BYTE} and up), so their errors do not describe it")  # fmt: skip

    def _bands(self, *, closed_form: bool) -> dict[str, ErrorBand]:
        if self.bands_withheld:
            return {}
        out = {m: error_band(self.accuracy, metric=m, arch=self.gpu.arch, closed_form=closed_form)
               for m in ("ttft", "tpot", "itl", "throughput")}  # fmt: skip
        return {m: b for m, b in out.items() if b is not None}

    @cached_property
    def measured_decode(self):
        """The decode step at the measured (fractional) running batch, when measured_running_batch is set."""
        from calc.measured import measured_decode

        s = self.scenario
        if s.measured_running_batch is None:
            return None
        return measured_decode(batch=s.measured_running_batch, lat=self.latency, measured_itl_s=s.measured_itl_s)

    @property
    def itl_example(self) -> ItlSummary:
        """The seed's mean-vs-max example (200 gaps of 20 ms, one of 2 s)."""
        return seed_itl_example()

    @cached_property
    def formulas(self) -> dict[str, str]:
        from calc.formulas import formulas

        return formulas(self)

    def to_dict(self) -> dict:
        """Flat JSON: the keys scripts depend on at top level, then each section, then the lazy sections."""
        m, f, lat, c, fl, off, pre = (self.memory, self.fit, self.latency, self.conformance, self.fleet,
                                      self.offload, self.prefix)  # fmt: skip
        flat = {
            "model": self.scenario.model,
            "gpu": self.scenario.gpu,
            "model_name": self.model_name,
            "gpu_name": self.gpu_name,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "kv_bytes_per_token_per_gpu": m.kv_bytes_per_token_per_gpu,
            "state_bytes_per_request": m.state_bytes_per_request,
            "weights_bytes_per_gpu": m.weights_bytes_per_gpu,
            "kv_cache_memory_bytes": m.kv_cache_memory_bytes,
            "num_gpu_blocks": m.num_gpu_blocks,
            "kv_cache_tokens": m.kv_cache_tokens,
            "max_concurrency": m.max_concurrency,
            "data_parallel_size": self.scenario.data_parallel_size,
            "kv_cache_tokens_all_ranks": self.scenario.data_parallel_size * m.kv_cache_tokens,
            "max_concurrency_all_ranks": self.scenario.data_parallel_size * m.max_concurrency,
            "fits": f.fits,
            "prefill_floor_s": lat.prefill_floor_s,
            "prefill_s": lat.prefill_s,
            "decode_step_floor_s": lat.decode_step_floor_s,
            "decode_step_s": lat.decode_step_s,
            "ttft_s": lat.ttft_s,
            "tpot_s": lat.tpot_s,
            "e2e_s": lat.e2e_s,
            "ridge_flop_per_byte": lat.ridge_flop_per_byte,
            "prefill_intensity_flop_per_byte": lat.prefill.intensity_flop_per_byte,
            "decode_intensity_flop_per_byte": lat.decode.intensity_flop_per_byte,
            "goodput_rps": c.goodput_rps,
            "conformance": c.conformance,
            "capacity_rps_per_replica": fl.capacity.rps,
            "replicas": fl.replicas,
            "gpus": fl.gpus,
            "cost_per_million_output_tokens": fl.cost_per_million_output_tokens,
            "currency": fl.currency,
            "swap_recompute_ratio": off.swap_recompute_ratio,
            "swap_s": off.swap_s,
            "recompute_s": off.recompute_s,
            "prefix_reuse_saving": pre.prefix_reuse_saving,
            "serve_command": joined(plan_serve_commands(self)),
        }
        flat["scenario"] = self.scenario.model_dump()
        flat["memory"] = _plain(m) | {"headroom_bytes": m.headroom_bytes}
        flat["params"] = _plain(m.params) | {"total": m.params.total, "active": m.params.active}
        flat["workload"] = _plain(f)
        flat["slo"] = asdict(c) | {"goodput_definition": GOODPUT_DEFINITION}
        flat["fleet"] = _plain(fl) | {"capacity": asdict(fl.capacity)}
        flat["offload"] = asdict(off)
        flat["prefix"] = asdict(pre)
        flat["latency"] = _plain(lat) | {"prefill": asdict(lat.prefill), "decode": asdict(lat.decode)}
        flat["tails"] = asdict(self.tails)
        flat["curves"] = {name: tuple(asdict(p) for p in getattr(self.curves, name)) for name in Curves.NAMES}
        flat["simulation"] = [asdict(x) for x in self.simulation]
        flat["gpu_options"] = [asdict(x) | {"price_is_estimate": self._price_estimated(x.gpu)} for x in self.gpu_options]
        flat["suggestions"] = [asdict(x) for x in self.suggestions]
        flat["formulas"] = self.formulas
        b = self.benchmark
        flat["benchmark"] = b.bench_summary() | {"num_prompts": self.benchmark_prompts, "max_concurrency":
                                                 self.scenario.concurrency, "preemptions": b.preemptions}  # fmt: skip
        flat["shortfall"] = asdict(self.shortfall) | {"serves": self.serves}
        flat["error_bands"] = {m: asdict(x) for m, x in self.error_bands.items()}
        flat["benchmark_error_bands"] = {m: asdict(x) for m, x in self.benchmark_error_bands.items()}
        flat["error_bands_withheld"] = self.bands_withheld
        flat["measured_decode"] = asdict(self.measured_decode) if self.measured_decode else None
        flat["itl_example"] = asdict(self.itl_example)
        flat["labels"] = LABELS
        flat["notes"] = list(self.notes)
        if not self.serves:  # no latency, SLO, cost or benchmark figure can happen: null, never a number
            flat |= dict.fromkeys(UNSERVED_KEYS) | dict.fromkeys(UNSERVED_SECTIONS)
        return flat


UNSERVED_KEYS = ("prefill_s", "decode_step_s", "ttft_s", "tpot_s", "e2e_s", "goodput_rps", "conformance",
                 "capacity_rps_per_replica", "replicas", "gpus", "cost_per_million_output_tokens", "swap_recompute_ratio",
                 "swap_s", "recompute_s", "prefix_reuse_saving")  # fmt: skip
"""Top-level keys of Report.to_dict that are null when the plan serves nothing (the floors stay: they are the
hardware's, not the engine's)."""
UNSERVED_SECTIONS = ("latency", "slo", "fleet", "offload", "prefix", "tails", "curves", "simulation", "benchmark",
                     "measured_decode", "error_bands", "benchmark_error_bands")  # fmt: skip


GOODPUT_DEFINITION = (
    "goodput = throughput × P(TTFT ≤ slo_ttft_s) × P(mean TPOT ≤ slo_tpot_s), TTFT and TPOT log-normal around the "
    "estimates with σ = latency_sigma; strict_conformance replaces mean TPOT by every inter-token gap"
)

LABELS = {
    "prefill_floor_s": "floor: roofline lower bound (peak FLOP/s and bandwidth)",
    "prefill_s": "estimate: floor scaled by the scenario's mfu/mbu",
    "decode_step_floor_s": "floor: roofline lower bound",
    "decode_step_s": "estimate: floor scaled by mbu (and mfu for large batches)",
    "ttft_s": "estimate: queue + prefill + chunked-prefill steps + front-end",
    "tpot_s": "estimate: decode step + prefill work of arriving requests",
    "e2e_s": "estimate: TTFT + (output_len − 1) · TPOT",
    "kv_cache_memory_bytes": "the engine's pool arithmetic (vLLM's profile; under SGLang its fraction of the memory free "
                             "before loading, less the weights) on estimated overheads (exact with "
                             "--kv-cache-memory-bytes)",
    "num_gpu_blocks": "exact block arithmetic given kv_cache_memory_bytes (blocks of block_size tokens)",
    "kv_cache_tokens": "one data-parallel rank's pool, as vLLM's log line prints it (the whole server's with one rank)",
    "kv_cache_tokens_all_ranks": "data_parallel_size × kv_cache_tokens: every rank's pool together",
    "serve_command": "the server this plan describes, its scenario as given (calc.serve_command; a search row's "
                     "caps max_num_seqs at what the pool holds)",
    "max_concurrency": "vLLM's 'Maximum concurrency for max_model_len tokens per request' (pool ÷ one max_model_len "
                       "request); the client's concurrency is the scenario's `concurrency` (benchmark.max_concurrency)",
}


def json_safe(x):
    """Non-finite floats (an empty pool's infinite occupancy) become null: JSON has no Infinity."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def _plain(obj) -> dict:
    """A dataclass's own fields, nested dataclasses skipped (they get sections of their own), and its formula trees
    (their text is the report's `formulas`; the trees themselves would be dumped as Python reprs)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)
            if f.name != "formulas" and not is_dataclass(getattr(obj, f.name))}  # fmt: skip
