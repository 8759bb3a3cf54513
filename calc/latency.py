"""Latency in closed form, from the step-time model (calc.step_time): floors and estimates side by side.

    prefill       = Σ over its chunks of one step each                     (chunks of max_num_batched_tokens)
    TTFT          = request overhead + queue + the prompt's chunked steps, each also carrying the running decodes
                    (vLLM mixes them; SGLang runs the prefill alone, then resumes decoding)
                    + the rest of the step in flight when it arrives (vLLM: a TPOT less the front-end time;
                    SGLang: its overlap schedule launched that decode step with the predecessor still in, so a
                    decode step less the front-end time even alone, and one decode step more, decided before the
                    prompt came, when others are in flight; half a decode step without the overlap)
    TPOT          = the mean step while C requests decode and their successors' prompts are prefilled:
                    vLLM: C decodes, and C·input_len/output_len prompt tokens per step in chunks (mixed_tpot_s);
                    SGLang: a decode step + (C / output_len) · one prefill
    E2E           = TTFT + (N_out − 1) · TPOT            0.350 s + 199 × 0.025 s = 5.325 s (DESIGN.md)
    throughput    = C / E2E (Little's law)
    data-parallel D ranks: each holds ⌈C / D⌉ of the requests (its own pool and steps, the MoE layers over all
                  ranks' tokens), the one API server feeds all D; throughput = C / E2E at ⌈C / D⌉ a rank
    KV pool       the engine holds at most S = the requests of this length its pool holds (max_num_seqs at most);
                  with C > S in flight the rest queue: each waits (C / S − 1) · E2E(S) for room, throughput S / E2E(S)
    API server    one request at a time for `busy` each (calc.front_end): where C · busy > E2E(C), the engine holds
                  k = E2E(k) / busy of the C (steps, TPOT and the rest at k) and each request waits C · busy − E2E(k)
                  for it before its prompt; E2E = C · busy, throughput 1 / busy
Disaggregated (prefill and decode on separate instances): TTFT = front-end + queue + (with a request rate) the wait
for a prefill instance + prefill alone + the prompt's KV over the link + one decode step; TPOT = the decode step; a
decode instance serves C / (N_out · TPOT) requests/s.
The request's way through the engine at b in it is calc.engine_cycle.cycle; this module adds the queues in front of
the engine and the roofline beside it. The scheduler simulation (calc.scheduler) plays the same steps out request by
request, with queueing; these closed forms are its steady state and the numbers the search evaluates by the million.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calc.engine_cycle import cycle, e2e_s
from calc.engine_spec import EngineSpec
from calc.expr import E
from calc.front_end import front_busy_s, in_engine, request_overhead_s
from calc.pool import PoolResult, kv_link_bytes_per_s, transfer_s
from calc.prefix_hit import prefix_hit
from calc.roofline import Phase, phase, ridge_flop_per_byte
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.step_inputs import step_model
from calc.step_time import StepModel, StepTerms, chunk_pairs
from calc.work import attention_flop_per_context_token, block_flop_per_token, logits_flop
from calc.workload import max_requests_at_length

READER_TOKENS_PER_S = (4.5, 10.0)  # 3–4 words/s × 1.5–2.5 tokens/word (DESIGN.md)


def chunk_step_s(*, decode_step_s: float, chunk_tokens: int, flop_per_token: float, effective_flop_per_s: float
                 ) -> float:  # fmt: skip
    """The seed's approximation of a step carrying a chunk: 20.26 ms + 512 × 13.05 GFLOP / 146.3 TFLOP/s ≈ 66 ms."""
    return decode_step_s + chunk_tokens * flop_per_token / effective_flop_per_s


def chunk_from_itl(*, itl_p50_s: float, itl_p99_s: float, effective_flop_per_s: float, flop_per_token: float) -> float:
    """Inverse of chunk_step_s: the prefill chunk riding on the slowest steps [tokens]."""
    return (itl_p99_s - itl_p50_s) * effective_flop_per_s / flop_per_token


@dataclass(frozen=True)
class LatencyResult:
    compute_dtype: str
    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    ridge_flop_per_byte: float
    block_flop_per_token: float
    attention_flop_per_context_token: float
    logits_flop: float
    prefill: Phase
    """One prompt alone (no other requests), on the roofline."""
    decode: Phase
    """One decode step of the running batch, on the roofline."""
    prefill_terms: StepTerms
    decode_terms: StepTerms
    decode_batch: float
    """Requests in the engine's steps: the concurrency (at most max_num_seqs), fewer where the KV pool holds fewer
    at this length (calc.workload.max_requests_at_length; the rest wait in the engine's queue) or where the API
    server sets the pace and the rest wait for it (calc.front_end.in_engine; a mean, not always whole)."""
    decode_context: float
    chunk_tokens: int
    prefill_steps: int
    chunk_step_s: float
    """A decode step that also carries a full prefill chunk: the ITL spike."""
    chunk_riding_s: float
    """What the decodes sharing the prompt's chunk steps add to its prefill (part of TTFT)."""
    request_overhead_s: float
    ttft_s: float
    itl_s: float
    """A plain decode step: the typical inter-token latency (ITL p50); under speculative decoding per token (a step
    / τ), which the SLOs on TPOT read."""
    stream_itl_s: float
    """The time between a request's streamed chunks, as `vllm bench serve` times ITL: itl_s, or under speculative
    decoding the whole step (a chunk of τ tokens)."""
    stream_spike_s: float
    """The same for a step that also carries a prefill chunk: chunk_step_s, or the whole speculative step."""
    tpot_s: float
    """Mean time per output token: the decode step plus the prefill work of the requests that arrive meanwhile."""
    e2e_s: float
    e2e_parts: tuple[tuple[str, float], ...]
    """E2E's named parts in the order a request meets them [s]; they sum to e2e_s (the breakdown chart)."""
    stream_tokens_per_s: float
    average_tokens_per_s: float
    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    kv_transfer_s: float
    kv_transfer_link_bytes_per_s: float
    calibrated_mbu: float | None
    calibrated_mfu: float | None
    inferred_chunk_tokens: float | None
    step: StepModel = field(repr=False, compare=False)
    formulas: dict = field(default_factory=dict, repr=False, compare=False)
    prefill_instances: int = 0
    """Disaggregated under a request rate: the prefill instances the TTFT's wait assumes (calc.prefill_pool)."""
    prefill_wait_s: float = 0.0
    """Disaggregated under a request rate: a prompt's mean wait for one of them [s]."""
    prefill_wait_budget_s: float = math.inf
    """Disaggregated under a request rate: the mean wait the prefill instances were sized for [s]; else inf."""
    prefix_hit_tokens: int = 0
    """Prompt tokens each request finds in the prefix cache (calc.prefix_hit): its prefill computes the rest."""

    @property
    def prefill_floor_s(self) -> float:
        """Roofline floor of one prompt's prefill: max(FLOP / P, bytes / B) + TP all-reduces."""
        return self.prefill.floor_s

    @property
    def prefill_s(self) -> float:
        return self.prefill.estimate_s

    @property
    def decode_step_floor_s(self) -> float:
        """Roofline floor of one decode step of the running batch: max(bytes / B, FLOP / P) + TP all-reduces."""
        return self.decode.floor_s

    @property
    def decode_step_s(self) -> float:
        return self.decode.estimate_s


def graphed_counts(hi, *, input_len: int, output_len: int, budget, graph_tokens: int, decode_tokens: int = 1,
                   tokens_per_step: float = 1.0) -> tuple:  # fmt: skip
    """(k_mixed, k_decode): the largest in-flight counts ≤ hi whose steps keep vLLM's captured CUDA graphs (a step
    of more than graph_tokens tokens runs eagerly, calc.step_time). k_mixed for the steps that also carry prompt
    tokens (mixed_tpot_s: b + max(min(b·L/N, budget − b), min(L, budget − b)) tokens, non-decreasing in b), k_decode
    = min(hi, graph_tokens) for the decode-only steps. Past them the rate can fall as b grows (Llama-3.1-8B on an
    H100, 128 + 128: 250 in flight serve 43.3 req/s, 300 serve 39.9), so the capacity tries them too. Arrays in,
    arrays out (calc.search_fleet takes it over every configuration; calc.replicas over one). `decode_tokens`: what
    a decoding request takes of the step (1 + k under speculative decoding, StepModel.decode_tokens), and
    `tokens_per_step` the tokens it gains (τ), which brings τ times the prompt tokens a step."""
    hi = np.asarray(hi, dtype=np.int64)
    L, N, q, tau = input_len, output_len, decode_tokens, tokens_per_step  # noqa: N806 - the formula's names

    def tokens(b):  # a real step's: under speculative decoding τ steps' prompt tokens
        room = np.maximum(0.0, budget - q * b)
        return q * b + np.maximum(np.minimum(tau * b * L / N, room), np.minimum(L, room))

    lo, top = np.zeros_like(hi), hi.copy()  # tokens(lo) ≤ graph_tokens holds at 0; find the largest in [0, hi]
    while np.any(lo < top):
        mid = (lo + top + 1) // 2
        ok = tokens(mid) <= graph_tokens
        lo, top = np.where(ok, mid, lo), np.where(ok, top, mid - 1)
    return lo, np.minimum(hi, graph_tokens // q)


def speculating_room(budget: int, input_len: int, decode_tokens: int) -> int:
    """Requests the engine keeps decoding under speculative decoding, each taking decode_tokens = 1 + k of the step
    budget: as many as leave one prompt chunk of min(L, budget / 2) tokens beside them, at least 1. vLLM reserves no
    such room: past budget / (1 + k) decodes it skips some decodes a step and admits no prompt until some finish (the
    simulation plays that out); the plan reads that steady state as these many in the engine, the rest in its queue."""
    return max(1, (budget - min(input_len, budget // 2)) // decode_tokens)


def _phase(model: StepModel, t: StepTerms) -> Phase:
    return phase(flop=t.flop, bytes_moved=t.bytes_moved, peak_flop_per_s=model.peak_flop_per_s,
                 bandwidth_bytes_per_s=model.bandwidth_bytes_per_s, floor_s=t.floor_s, estimate_s=t.total_s)  # fmt: skip


POOL_WAIT = "waiting in the engine's queue"
IDLE_LAUNCH = "its batch launched on an idle GPU"  # EngineSpec.idle_launch_s, the overlap schedule at one request


def latency(s: Scenario, m: ModelSpec, g: GPUSpec, mem: PoolResult, engine: EngineSpec,
            model: StepModel | None = None, *, front_ranks: int = 1) -> LatencyResult:  # fmt: skip
    """`model`: the scenario's StepModel when the caller has it (it does not depend on concurrency or lengths).
    `front_ranks`: for one data-parallel rank planned alone (calc.replicas.rank_scenario), the ranks its API server
    also feeds."""
    model = model or step_model(s, m, g, mem, engine)
    p, L_in, N_out = mem.params, s.input_len, s.output_len
    flight = max(1, s.rank_concurrency)  # one data-parallel rank's share; the ranks run alike
    dp = s.data_parallel_size
    front_ranks = max(front_ranks, dp)
    ctx = L_in + N_out / 2
    budget = s.max_num_batched_tokens
    front = request_overhead_s(s, engine, m)
    link = kv_link_bytes_per_s(s, g)
    transfer = transfer_s(mem, L_in, link, model.kv_read)  # a sliding layer sends its window
    # the engine holds at most what its KV pool holds at this length (the rest wait in its queue), and the API server
    # takes one request at a time: where they need more of it per cycle than their own time, fewer are in the engine
    # (calc.front_end.in_engine) and the rest wait for it
    busy = 0.0 if s.disaggregated else front_busy_s(s, engine, m) * front_ranks  # one API server feeds every rank
    room = min(flight, s.max_num_seqs) if s.disaggregated else \
        min(flight, max_requests_at_length(s, mem, m) or s.max_num_seqs)  # ≤ max_num_seqs
    if model.spec_tokens and not s.disaggregated:  # decodes of 1 + k tokens each fill the step budget: vLLM then
        room = min(room, speculating_room(budget, L_in, model.decode_tokens))  # skips decodes and admits no prompt
    hit = prefix_hit(s, mem)  # a shared system prompt's tokens found in the prefix cache: not computed
    seen = {room: cycle(s, model, engine, room, front, transfer, hit)}

    def e2e(k: float) -> float:
        seen[k] = cycle(s, model, engine, k, front, transfer, hit)
        return seen[k].total

    b = in_engine(e2e, room, busy, seen[room].total)
    c = seen[b] if b in seen else cycle(s, model, engine, b, front, transfer, hit)
    alone, steps, dec, others, riding, tpot = c.alone, c.steps, c.dec, c.others, c.riding, c.tpot
    in_flight, prefill_wait, budget_wait = c.in_flight, c.prefill_wait, c.budget_wait
    front_wait = max(0.0, flight * busy - c.total) if b < room else 0.0  # each cycles in flight · busy
    # room served per E2E(room): each of the flight waits flight / room of it (a decode instance: its own TPOT)
    pool_wait = (flight / room - 1) * c.total if b == room < flight and not s.disaggregated else 0.0
    ttft = c.ttft + front_wait + pool_wait
    total = e2e_s(ttft_s=ttft, tpot_s=tpot, output_len=N_out)
    riding_label, riding_part = (("the decode step decided before it came",) * 2 if c.lagged else
                                 ("decodes sharing its steps", "decode steps its chunks ride on"))  # fmt: skip
    # a real step's prompt room (a prefill instance runs no decodes); under speculative decoding beside decodes that
    # step is τ per-token steps of 1 / τ of its prompt tokens (calc.spec_step.per_token)
    chunk = budget if s.disaggregated else max(1, budget - others * model.decode_tokens)
    tau = model.steps_per_real(others)
    first = min(chunk, L_in - hit)  # the prompt's first chunk, after its cached tokens
    spike = model.step_s(first / tau, chunk_pairs(first, hit) / tau, others, others * ctx)
    # Little's law over the C in flight (a decode instance holds a request N_out steps); with data-parallel ranks the
    # busiest rank's E2E, and fewer than D requests keep only as many ranks busy
    rps = b / (N_out * tpot) if s.disaggregated else (s.concurrency if dp > 1 else flight) / total
    pre_ph, dec_ph = _phase(model, alone), _phase(model, dec)
    # a measured ITL is a whole step, τ per-token steps under speculative decoding
    cal_mbu = (dec.bytes_moved * model.accepted_tokens / (s.measured_itl_s * model.bandwidth_bytes_per_s)) \
        if s.measured_itl_s else None  # fmt: skip
    cal_mfu = (alone.flop / (s.measured_prefill_s * model.peak_flop_per_s)) if s.measured_prefill_s else None
    inferred = None
    if s.measured_itl_p99_s and s.measured_itl_s:
        inferred = chunk_from_itl(itl_p50_s=s.measured_itl_s, itl_p99_s=s.measured_itl_p99_s,
                                  effective_flop_per_s=model.effective_flop_per_s,
                                  flop_per_token=block_flop_per_token(p) / s.tensor_parallel_size)  # fmt: skip
    ttft_e = E(front, "front-end", unit="ms") + E(s.queue_s, "queue", unit="ms") + E(alone.total_s, f"prefill ({hit:,} of its {L_in:,} tokens cached)" if hit else "prefill", unit="ms")
    if s.disaggregated:
        if prefill_wait:
            ttft_e = ttft_e + E(prefill_wait, "wait for a prefill instance", unit="ms")
        ttft_e = ttft_e + E(transfer, "KV transfer", unit="ms") + E(dec.total_s * model.accepted_tokens,
                                                                    "first decode step", unit="ms")  # fmt: skip
    else:
        ttft_e = ttft_e + E(riding, riding_label, unit="ms")
        if in_flight:
            ttft_e = ttft_e + E(in_flight, "the step in flight", unit="ms")
        if c.idle_launch:
            ttft_e = ttft_e + E(c.idle_launch, IDLE_LAUNCH, unit="ms")
        if budget_wait:
            ttft_e = ttft_e + E(budget_wait, "waiting for the step budget", unit="ms")
        if front_wait:
            ttft_e = ttft_e + E(front_wait, "waiting for the API server", unit="ms")
        if pool_wait:
            ttft_e = ttft_e + E(pool_wait, POOL_WAIT, unit="ms")
    waits = (("waiting for a prefill instance", prefill_wait), ("waiting for the step in flight", in_flight))
    after = (("transfer of its KV", transfer), ("first decode step", dec.total_s * model.accepted_tokens)) \
        if s.disaggregated else \
        ((riding_part, riding), (IDLE_LAUNCH, c.idle_launch), ("waiting for the step budget", budget_wait),
         ("waiting for the API server", front_wait), (POOL_WAIT, pool_wait))  # fmt: skip
    optional = (IDLE_LAUNCH, "waiting for the step budget", "waiting for the API server", POOL_WAIT)
    parts = (("front-end", front), ("queue", s.queue_s), *((n, v) for n, v in waits if v), ("prefill", alone.total_s),
             *((n, v) for n, v in after if v or n not in optional), (f"{N_out - 1:,} × TPOT", (N_out - 1) * tpot))  # fmt: skip
    e2e_e = ttft_e.named("TTFT", "s") + E(N_out - 1, "(output_len − 1)") * E(tpot, "TPOT", unit="ms")
    return LatencyResult(
        compute_dtype=mem.weight_format.compute_dtype,
        peak_flop_per_s=model.peak_flop_per_s,
        bandwidth_bytes_per_s=model.bandwidth_bytes_per_s,
        ridge_flop_per_byte=ridge_flop_per_byte(peak_flop_per_s=model.peak_flop_per_s,
                                                bandwidth_bytes_per_s=model.bandwidth_bytes_per_s),  # fmt: skip
        block_flop_per_token=block_flop_per_token(p),
        attention_flop_per_context_token=attention_flop_per_context_token(m),
        logits_flop=logits_flop(p),
        prefill=pre_ph,
        decode=dec_ph,
        prefill_terms=alone,
        decode_terms=dec,
        decode_batch=b,
        decode_context=ctx,
        chunk_tokens=chunk,
        prefill_steps=steps,
        chunk_step_s=spike,
        chunk_riding_s=riding,
        request_overhead_s=front,
        ttft_s=ttft,
        itl_s=dec.total_s,
        stream_itl_s=dec.total_s * model.accepted_tokens,
        stream_spike_s=spike * tau,
        tpot_s=tpot,
        e2e_s=total,
        e2e_parts=parts,
        stream_tokens_per_s=1 / tpot,
        average_tokens_per_s=N_out / total,
        requests_per_s=rps,
        output_tokens_per_s=rps * N_out,
        total_tokens_per_s=rps * (L_in + N_out),
        kv_transfer_s=transfer,
        kv_transfer_link_bytes_per_s=link,
        calibrated_mbu=cal_mbu,
        calibrated_mfu=cal_mfu,
        inferred_chunk_tokens=inferred,
        step=model,
        formulas={"ttft_s": ttft_e, "e2e_s": e2e_e},
        prefill_instances=c.prefill_instances,
        prefill_wait_s=prefill_wait,
        prefill_wait_budget_s=c.prefill_budget,
        prefix_hit_tokens=hit,
    )
