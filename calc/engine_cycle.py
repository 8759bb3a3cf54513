"""One request's way through the engine with b requests in it, in closed form: calc.latency assembles the headline
from it, after the queues in front of the engine (calc.front_end, the engine's own queue).

    prefill   = Σ over the prompt's chunks of one step each (chunks of the budget the running decodes leave)
    TTFT      = front-end + queue + prefill + what the running decodes add to its steps (vLLM mixes them; SGLang
                runs the prefill alone, then resumes decoding) + the rest of the step in flight when it arrives
    TPOT      = vLLM: the mixture of steps that carry the arriving prompts' chunks and steps that only decode
                (mixed_tpot_s); SGLang: a decode step + (b − 1) / output_len · one prefill
    E2E       = TTFT + (N_out − 1) · TPOT, and the prompts' wait for the step budget where they outrun it
                (budget_cycle_s)
Disaggregated: the prompt alone on a prefill instance (with a request rate, the wait for one, as many instances as
the TTFT SLO needs: calc.prefill_pool), its KV over the link, then one decode step.
"""

from __future__ import annotations

import math
from dataclasses import fields
from math import ceil
from typing import NamedTuple

from calc.engine_spec import EngineSpec
from calc.prefill_pool import prefill_pool, prefill_wait_budget_s
from calc.scenario import Scenario
from calc.step_time import StepModel, StepTerms, chunk_pairs, prompts_in

LOCKSTEP_FLOOR = 0.05
"""The least share of time the decodes keep under other ranks' prompt steps (a bound on 1 / (1 − F), not a fit)."""


def e2e_s(*, ttft_s: float, tpot_s: float, output_len: int) -> float:
    return ttft_s + (output_len - 1) * tpot_s


def scaled(t: StepTerms, k: float) -> StepTerms:
    """k identical steps, term by term."""
    return StepTerms(**{f.name: getattr(t, f.name) * k for f in fields(t)})


def prefill_terms(model: StepModel, tokens: int, *, budget: int, decode_seqs: int = 0, decode_context: float = 0.0,
                  offset: int = 0) -> tuple[StepTerms, int]:  # fmt: skip
    """A prompt of `tokens` in chunks of the budget left after `decode_seqs` decodes: (summed terms, steps); `offset`:
    cached tokens before them (a prefix-cache hit, calc.prefix_hit), which they attend to. The chunks are costed as
    their mean (exact for the terms linear in tokens and pairs). Under speculative decoding
    with decodes beside it each chunk is a whole step (1 + k tokens a decode taken from the budget): the per-token
    step of 1 / τ of its prompt tokens (calc.spec_step.per_token), τ times."""
    chunk = max(1, budget - decode_seqs * model.decode_tokens)
    steps = ceil(tokens / chunk)
    tau = model.steps_per_real(decode_seqs)
    mean = model.terms(tokens / steps / tau, chunk_pairs(tokens, offset) / steps / tau, decode_seqs, decode_context)
    return scaled(mean, steps * tau), steps


def budget_cycle_s(model: StepModel, *, b: float, input_len: int, output_len: int, budget: int,
                   context: float, offset: int = 0) -> float:  # fmt: skip
    """The shortest end-to-end time b requests in a closed loop can each have when the engine's steps are full: a
    step processes at most `budget` tokens, and each request needs input_len prompt tokens and output_len − 1
    decode tokens of them. Saturated, d = min(b, budget · (N − 1) / (L + N − 1)) sequences decode and the rest of
    the budget, p = budget − d, prefills; requests then finish at p / L per full step T_full = step(p prefill
    tokens, d decodes), and by Little's law each of the b takes b · L · T_full / p [s]. 0 when nothing prefills.
    Under speculative decoding a decoding request takes q = 1 + k of a real step's budget and a step is one token of
    τ, with 1 / τ of its prompt room: d = min(b, budget · (N − 1) / (τ · L + q · (N − 1))), p = (budget − q · d) / τ.
    L is the prompt tokens computed; `offset` cached ones before each (calc.prefix_hit) lengthen their attention.
    """
    L, q, tau = input_len, model.decode_tokens, model.accepted_tokens  # noqa: N806 - the formula's name
    d = min(b, budget * (output_len - 1) / (tau * L + q * (output_len - 1)))
    p = model.prompt_room(budget, d) if d else budget
    if p <= 0:
        return 0.0
    return b * L * model.step_s(p, p * (L / 2 + offset), d, d * context, float(prompts_in(p, L))) / p


def lockstep_share(share: float, peers: float) -> float:
    """The share of steps (or of time) in which some rank runs a prompt, for a rank's own `share` and `peers` other
    busy data-parallel ranks alike: 1 − (1 − share)^(1 + peers). Every MoE layer waits for every rank, so a rank
    that only decodes waits for another's prompt step (`share` unchanged without data parallelism)."""
    return 1 - (1 - min(1.0, share)) ** (1 + peers) if peers else share


def mixed_tpot_s(model: StepModel, *, b: float, input_len: int, output_len: int, budget: int,
                 context: float, offset: int = 0) -> float:  # fmt: skip
    """vLLM's mean step while b requests decode and their successors' prompts are prefilled beside them [s].
    X = b · L / N prompt tokens arrive per step (capped at the budget the decodes leave), in chunks of
    min(L, budget − b): a share q = min(1, X / chunk) of the steps carries one (X / q tokens), the rest only decode.
    TPOT = q · step(X / q prompt tokens, b decodes) + (1 − q) · step(b decodes). Spreading X over every step
    instead would have each plain decode step of an MoE model read the experts a whole prompt reaches. A decoding
    request takes model.decode_tokens of the budget (1 + k under speculative decoding), and a step is then one
    token of τ, with 1 / τ of the room (StepModel.prompt_room). L is the prompt tokens computed, after `offset`
    cached ones (calc.prefix_hit) that each attends to as well."""
    L = input_len  # noqa: N806 - the formula's name
    room = max(0.0, model.prompt_room(budget, b))
    x = min(b * L / output_len, room)
    chunk = min(L, room)
    q = min(1.0, x / chunk) if chunk > 0 else 1.0
    plain = model.step_s(0.0, 0.0, b, b * context)
    if q <= 0:
        return plain
    tokens = x / q
    q = lockstep_share(q, model.busy_peers)  # other data-parallel ranks' chunk steps hold this rank's steps too
    return q * model.step_s(tokens, tokens * (L / 2 + offset), b, b * context) + (1 - q) * plain


def in_flight_wait_s(*, tpot_s: float, front_s: float) -> float:
    """What a new request waits for the step the engine is running when it arrives (vLLM, several in flight):
    max(0, mean step − front-end time) [s]. The engine starts its next step the moment one ends, and in a closed
    loop a request is sent the moment its predecessor's last token comes out, at a step's end: it reaches the
    scheduler front_s into the next step and waits for the rest of it (the mean step is TPOT). The scheduler
    simulation (calc.scheduler) plays this out step by step. SGLang's overlap schedule launches the step after a
    request's last token with it still in: its successor waits for that decode step even alone."""
    return max(0.0, tpot_s - front_s)


def decode_point(model: StepModel, *, batch: float, context: float) -> StepTerms:
    """One decode step of `batch` sequences at `context` tokens each."""
    return model.terms(0, 0, batch, batch * context)


class Cycle(NamedTuple):
    """One request's way through the engine with b requests in it (latency's parts before the API server's wait)."""

    alone: StepTerms
    steps: int
    dec: StepTerms
    others: float
    riding: float
    lagged: bool
    tpot: float
    in_flight: float
    prefill_wait: float
    transfer: float
    ttft: float
    budget_wait: float
    total: float
    prefill_instances: int = 0
    """Disaggregated under a request rate: the prefill instances its wait is for (calc.prefill_pool); else 0."""
    idle_launch: float = 0.0
    """The overlap schedule at one request in flight: its batch formed and launched with the GPU idle
    (EngineSpec.idle_launch_s); else 0."""
    prefill_budget: float = math.inf
    """Disaggregated under a request rate: the mean wait for a prefill instance the TTFT SLO leaves
    (calc.prefill_pool.prefill_wait_budget_s), which the instance count was sized for [s]; else inf."""


def idle_launch_s(s: Scenario, engine: EngineSpec) -> float:
    """What a prompt step started with no step in flight waits for the scheduler [s]: EngineSpec.idle_launch_s under
    a prefill-first engine's overlap schedule (which otherwise hides that work behind the step in flight), aggregated
    serving; else 0. The closed forms add it at one request in flight, the simulation where the engine was idle."""
    overlap = engine.overlap_schedule and engine.scheduling == "prefill-first" and not s.disaggregated
    return engine.idle_launch_s if overlap else 0.0


def cycle(s: Scenario, model: StepModel, engine: EngineSpec, b: float, front: float, transfer: float,
          hit: int = 0) -> Cycle:  # fmt: skip
    """`hit`: the prompt tokens each request finds in the prefix cache (calc.prefix_hit): not computed, still context."""
    N_out = s.output_len
    L_in = s.input_len - hit  # the prompt tokens computed
    ctx = s.input_len + N_out / 2
    budget = s.max_num_batched_tokens
    mixed = engine.scheduling == "decode-first"
    alone, _ = prefill_terms(model, L_in, budget=budget, offset=hit)
    dec = decode_point(model, batch=b, context=ctx)
    others = b - 1 if mixed else 0
    shared, steps = prefill_terms(model, L_in, budget=budget, decode_seqs=others, decode_context=others * ctx,
                                  offset=hit)  # fmt: skip
    riding = shared.total_s - alone.total_s
    lagged = not mixed and engine.overlap_schedule and N_out > 1
    if not mixed and b > 1:
        # SGLang: a new prompt waits for the running decode step to end; with the overlap schedule the step after
        # that one was decided before it arrived, so it waits a whole decode step more
        riding = dec.total_s if lagged else dec.total_s / 2
    idle = idle_launch_s(s, engine) if b <= 1 else 0.0
    ttft = front + s.queue_s + alone.total_s + riding + idle
    if N_out <= 1:
        tpot = dec.total_s
    elif mixed:
        tpot = mixed_tpot_s(model, b=b, input_len=L_in, output_len=N_out, budget=budget, context=ctx, offset=hit) \
            if b > 1 else dec.total_s
    elif model.busy_peers:  # SGLang's prompt steps on any rank pause every rank's decodes (the lockstep)
        x = (b - 1) / N_out * alone.total_s
        tpot = dec.total_s / max(1 - lockstep_share(x / (dec.total_s + x), model.busy_peers), LOCKSTEP_FLOOR)
    else:
        tpot = dec.total_s + (b - 1) / N_out * alone.total_s
    # a prompt joins at a real step's end: under speculative decoding a step is τ per-token ones (the mean real step
    # τ · TPOT, the first decode step τ of them)
    tau = model.accepted_tokens
    in_flight = in_flight_wait_s(tpot_s=tpot * tau, front_s=front) if mixed and b > 1 and N_out > 1 else 0.0
    if lagged:  # the step in flight, alone too: it was launched with the predecessor in it (calc.scheduler)
        in_flight = in_flight_wait_s(tpot_s=dec.total_s, front_s=front)
    ttft += in_flight
    prefill_wait, prefill_n, most = 0.0, 0, math.inf
    if s.disaggregated:  # the prompt alone on a prefill instance, its KV sent over, then decodes with no prompt riding
        riding = in_flight = 0.0
        if s.request_rate:  # open arrivals queue for a prefill instance, as many as the TTFT SLO needs
            one = decode_point(model, batch=1, context=ctx).total_s * tau
            most = prefill_wait_budget_s(s, front + s.queue_s + alone.total_s + transfer + one, one)
            prefill_n, _, prefill_wait = prefill_pool(rate_rps=s.request_rate, prefill_s=alone.total_s, max_wait_s=most)
        ttft = front + s.queue_s + prefill_wait + alone.total_s + transfer + dec.total_s * tau
        tpot = dec.total_s
    total = e2e_s(ttft_s=ttft, tpot_s=tpot, output_len=N_out)
    budget_wait = 0.0 if s.disaggregated else max(0.0, budget_cycle_s(model, b=b, input_len=L_in, output_len=N_out,
                                                                       budget=budget, context=ctx, offset=hit) - total)  # fmt: skip
    if budget_wait:  # the prompts need more steps than the requests' own time leaves: they queue for the budget
        ttft += budget_wait
        total = e2e_s(ttft_s=ttft, tpot_s=tpot, output_len=N_out)
    return Cycle(alone, steps, dec, others, riding, lagged, tpot, in_flight, prefill_wait, transfer, ttft,
                  budget_wait, total, prefill_n, idle, most)  # fmt: skip
