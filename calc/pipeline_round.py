"""Pipeline parallelism's round (vLLM V1's max_concurrent_batches = pipeline size, SGLang's event_loop_pp): the
step-time model's terms for a round in which every running request advances one token, from a StepModel's one-batch
terms (calc.step_time.StepModel._parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calc.step_time import StepModel


def pipeline_round(m: StepModel, prefill_tokens: float, prefill_pairs: float, decode_seqs: int, decode_context: float,
                   prefill_seqs: int = 1) -> tuple[tuple[float, ...], tuple[float, float, float]]:  # fmt: skip
    """The step's terms and (floor, FLOP, bytes) per GPU. A pipeline of p stages (pp > 1) holds one micro-batch a
    stage: the d decoding requests spread over k = min(p, d) micro-batches, the prompt tokens in one of them (the
    heavy one); a stage works on one at a time, so a round, in which every request advances one token, takes
    max(t(heavy), (t(heavy) + (k − 1) · t(light)) / p), t the whole model's step at a micro-batch (all stages'
    weights, layers and launches, each term alike). The per-request CPU costs stay those of all d requests, once
    a round (one engine core schedules every micro-batch). The stage-to-stage transfers are not carried."""
    if m.pp == 1:
        parts, aux = m._parts(prefill_tokens, prefill_pairs, decode_seqs, decode_context, prefill_seqs)
        return parts, (m._floor(*aux), aux[0], aux[1])
    p, k = m.pp, max(1, min(m.pp, decode_seqs))  # at least one micro-batch, none of less than one request
    heavy, aux = m._parts(prefill_tokens, prefill_pairs, decode_seqs / k, decode_context / k, prefill_seqs)
    seq = heavy[-1] * k  # the d requests' CPU costs, once a round (a micro-batch carries d / k of them)
    floor = m._floor(*aux)
    if k == 1 or not prefill_tokens:  # decode only: the k micro-batches are alike and k ≤ p, so one paces the round
        return (*heavy[:-1], seq), (floor, aux[0], aux[1])
    light, laux = m._parts(0.0, 0.0, decode_seqs / k, decode_context / k)
    if sum(heavy[:-1]) * p >= sum(heavy[:-1]) + (k - 1) * sum(light[:-1]):  # the heavy micro-batch paces the round
        return (*heavy[:-1], seq), (floor, aux[0], aux[1])
    parts = tuple((h + (k - 1) * li) / p for h, li in zip(heavy[:-1], light[:-1], strict=True))
    floor = max(floor, (floor + (k - 1) * m._floor(*laux)) / p)
    return (*parts, seq), (floor, (aux[0] + (k - 1) * laux[0]) / p, (aux[1] + (k - 1) * laux[1]) / p)
