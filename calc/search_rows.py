"""One configuration of a SearchResult as the rest of the planner speaks of it: its Scenario (what the page opens),
an object with the Scenario's and the Report's field names (what `python -m calc search --json` prints), the
commands that serve it, and its check against the scheduler simulation."""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc.bench import CHECK_RANGE_RATIO, MAX_CHECK_PROMPTS
from calc.pool import measured_at
from calc.replica_check import RateCheck, replica_check
from calc.resolve import for_other_gpu
from calc.scenario import Scenario
from calc.search import CANNOT_SERVE
from calc.serve_command import serve_lines


def fields_of(r, i: int) -> dict:
    """The Scenario fields that make configuration i."""
    g, b = r.grid, r.base(i)
    tp, pp = g.parallel[g.par[b]]
    sp = g.space
    return {"gpu": sp.gpus[g.gpu[b]], "tensor_parallel_size": int(tp), "pipeline_parallel_size": int(pp),
            "dtype": g.dtypes[g.dtype[b]], "kv_cache_dtype": sp.kv_cache_dtypes[g.kv[b]],
            "max_num_seqs": int(sp.max_num_seqs[g.seqs[b]]), "max_num_batched_tokens": int(sp.max_num_batched_tokens[g.budget[b]]),
            "gpu_memory_utilization": float(sp.gpu_memory_utilizations[g.util[b]]),
            "concurrency": int(r.concurrency[i]), "disaggregated": bool(r.disaggregated[i])}  # fmt: skip


def scenario_of(r, i: int) -> Scenario:
    """Configuration i as a Scenario at its operating point: `evaluate()` of it shows this configuration's numbers.
    On another GPU than the scenario's, the scenario's GPU overrides and own price do not travel."""
    f = fields_of(r, i)
    moved = measured_at(r.scenario, r.model, tp=f["tensor_parallel_size"], pp=f["pipeline_parallel_size"],
                        dtype=f["dtype"], max_num_seqs=f["max_num_seqs"],
                        max_num_batched_tokens=f["max_num_batched_tokens"]) if r.model is not None else {}  # fmt: skip
    return Scenario.model_validate(for_other_gpu(r.scenario, f["gpu"]).model_dump() | f | moved)


def served_scenario(r, i: int) -> Scenario:
    """scenario_of(r, i) as its serve command deploys it: under vLLM, max_num_seqs capped at what the KV pool holds at
    the full length (SearchResult.served_seqs, CAPPED_SEQS). Its numbers are configuration i's; it is what the
    simulated check runs and what the page opens."""
    s, seqs = scenario_of(r, i), r.served_seqs(i)
    return s if seqs >= s.max_num_seqs else Scenario.model_validate(s.model_dump() | {"max_num_seqs": seqs})


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else None


def row(r, i: int) -> dict:
    """Configuration i with the Scenario's field names, then the Report's, the currency and the serve command."""
    s, p, b = r.scenario, r.pool, r.base(i)
    deployed = r.gpus[i] > 0
    out = fields_of(r, i) | {"max_model_len": s.max_model_len, "engine": s.engine}
    d_gpu = out["gpu"]
    out |= {"fits": bool(r.why[i] not in CANNOT_SERVE), "meets_slo": bool(r.capacity_rps[i] > 0), "why_not": r.why_not(i),
            "num_gpu_blocks": int(p.num_gpu_blocks[b]), "block_size": int(p.block_size[b]),
            "max_concurrency": float(p.max_concurrency[b]),
            "max_concurrency_at_length": int(p.max_concurrency_at_length[b]), "ttft_s": _num(r.ttft_s[i]),
            "tpot_s": _num(r.tpot_s[i]), "tokens_per_s_per_user": _num(r.tokens_per_s_per_user[i]),
            "tokens_per_s_per_gpu": _num(r.tokens_per_s_per_gpu[i]), "requests_per_s": _num(r.requests_per_s[i]),
            "capacity_rps_per_replica": _num(r.capacity_rps[i]), "conformance": _num(conf := r.conformance_at(i)),
            "goodput_rps": _num(r.requests_per_s[i] * conf),
            "replicas": int(r.replicas[i]) if deployed and s.request_rate else None,
            "prefill_instances": int(r.prefill_instances[i]) if deployed and r.disaggregated[i] else None,
            "decode_instances": int(r.decode_instances[i]) if deployed and r.disaggregated[i] else None,
            "gpus": int(r.gpus[i]) if deployed else None, "price_per_gpu_hour": float(r.price_per_gpu_hour[i]),
            "cost_per_hour": _num(r.cost_per_hour[i]) if deployed else None,
            "cost_per_million_output_tokens": _num(r.cost_per_million_output_tokens[i]) if deployed else None,
            "currency": r.currency(i), "price_estimated": d_gpu in r.estimated_prices}  # fmt: skip
    out["served_max_num_seqs"] = r.served_seqs(i)  # what the serve command sets (CAPPED_SEQS)
    cmds = serve_commands(r, i)
    out["serve_command"] = "\n".join(f"# {role}\n{cmd}" if role else cmd for role, cmd in cmds)
    return out


CAPPED_SEQS = ("# --max-num-seqs {seqs:,}, not {asked:,}: the KV pool holds {seqs:,} requests of {tokens:,} tokens "
               "(same capacity; above it vLLM admits on the prompt alone and bursts preempt)")
SGLANG_CAPPED = ("# --max-running-requests {seqs:,}, not {asked:,}: this hybrid model's Mamba state slots // ratio, "
                 "which SGLang runs at most whatever it is asked (calc.sglang_hybrid)")
"""vLLM admits a request when its prompt fits, so with max_num_seqs above what the pool holds at full length a burst
preempts and recomputes instead of waiting, which the capacity assumes (calc.replicas.Capacity.overcommitted): the
command caps it, and the capacity, found at the slots the pool holds, is the same."""


def serve_commands(r, i: int) -> list[tuple[str, str]]:
    """(role, command) for configuration i: one `vllm serve` (or SGLang launch) line, or a prefill and a decode one."""
    f, s = fields_of(r, i), r.scenario
    seqs = r.served_seqs(i)
    serves = r.pool.max_concurrency_at_length[r.base(i)] >= 1  # a configuration that cannot run has no cap to explain
    note = ""
    if seqs < f["max_num_seqs"] and serves:
        note = CAPPED_SEQS.format(seqs=seqs, asked=f["max_num_seqs"], tokens=s.input_len + s.output_len) \
            if s.engine != "sglang" else SGLANG_CAPPED.format(seqs=seqs, asked=f["max_num_seqs"])  # fmt: skip
    counts = {"prefill": r.prefill_instances[i], "decode": r.decode_instances[i]} if r.gpus[i] else None
    return serve_lines(s, f, r.model_name, seqs, disaggregated=bool(r.disaggregated[i]), counts=counts, note=note,
                       hf_id=r.hf_id, multimodal=r.multimodal, arch=r.archs.get(f["gpu"], ""))  # fmt: skip


@dataclass(frozen=True)
class Check:
    """A configuration's closed-form latency against the scheduler simulation at its operating point
    (`vllm bench serve --max-concurrency C --random-range-ratio 0.3`, calc.bench.serve)."""

    ttft_s: float
    tpot_s: float
    simulated_ttft_s: float
    """Median TTFT of the simulated run."""
    simulated_tpot_s: float
    """Mean TPOT of the simulated run."""
    num_prompts: int
    max_concurrency: int
    range_ratio: float

    @property
    def ttft_ratio(self) -> float | None:
        """Closed form / simulated; None where the simulated run has no such figure."""
        return self.ttft_s / self.simulated_ttft_s if self.simulated_ttft_s > 0 else None

    @property
    def tpot_ratio(self) -> float | None:
        """None for one-token outputs: they have no TPOT (vllm bench serve's definition), the run prints 0."""
        return self.tpot_s / self.simulated_tpot_s if self.simulated_tpot_s > 0 else None


def check(r, i: int, catalog) -> Check | None:
    """None for a disaggregated configuration (the simulation serves one aggregated engine) or one whose simulation
    completed nothing."""
    from calc import bench
    from calc.evaluate import evaluate

    if r.disaggregated[i]:
        return None
    report = evaluate(scenario_of(r, i), catalog)
    c = int(r.concurrency[i])
    n = min(MAX_CHECK_PROMPTS, max(400, 8 * c))
    d = bench.serve(report, num_prompts=n, max_concurrency=c, range_ratio=CHECK_RANGE_RATIO).bench_summary()
    if not d["completed"]:  # nothing timed within the simulation's work cap: no check to show
        return None
    return Check(float(r.ttft_s[i]), float(r.tpot_s[i]), d["median_ttft_ms"] / 1e3, d["mean_tpot_ms"] / 1e3, n, c,
                 CHECK_RANGE_RATIO)  # fmt: skip


def rate_check(r, i: int, catalog) -> RateCheck | None:
    """calc.replica_check for configuration i at its replica count: None without a request rate, for a
    disaggregated configuration (the simulation serves one aggregated engine) or where no replica count was
    found."""
    if not r.scenario.request_rate or r.disaggregated[i] or int(r.replicas[i]) < 1:
        return None
    from calc.evaluate import evaluate

    return replica_check(evaluate(served_scenario(r, i), catalog), int(r.replicas[i]))
