"""Speculative decoding's step (vLLM V1, v1/spec_decode/eagle.py, read in the 0.17.0 wheel), from a StepModel whose
spec_tokens k and accepted_tokens τ are set (calc.step_inputs): the real step that verifies 1 + k tokens of each
decoding request and runs the drafter's k passes, and that step per token a request gains, which the simulation and
the closed forms run on (docs/calibration-history.md (36)–(38))."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calc.step_time import StepModel

Terms = tuple[tuple[float, ...], float, tuple[float, float, float]]
"""(the StepTerms terms in order, the drafter's time [s], (floor [s], FLOP, bytes))."""


def verify(m: StepModel, prefill_tokens: float, prefill_pairs: float, decode_seqs: int, decode_context: float,
           prefill_seqs: int) -> Terms:  # fmt: skip
    """One real speculative step: the target verifies 1 + k tokens of each of the d decoding requests (k·d more
    tokens through its GEMMs and experts, routed as a short prompt each, and their logits; each attends to its
    request's context, whose KV is read once), then the drafter runs once over the step's tokens and k − 1 more
    times over the d requests, its kernels alone (the step's fixed and per-sequence costs are the target's, once)."""
    k, d = m.spec_tokens, decode_seqs
    avg = decode_context / d if d else 0.0
    more, pairs = k * d, prefill_pairs + k * d * (avg + (k + 1) / 2)
    parts, (flop, moved, comm) = m._parts(prefill_tokens + more, pairs, d, decode_context, prefill_seqs,
                                          extra_logits=more)  # fmt: skip
    draft, dflop, dmoved = 0.0, 0.0, 0.0
    if m.draft is not None and (d or prefill_tokens):
        for i in range(k if d else 1):  # after a prompt-only step the drafter proposes once, then verifies
            dp, (f, b, _) = (m.draft._parts(prefill_tokens + more, pairs, d, decode_context, prefill_seqs) if i == 0
                             else m.draft._parts(0.0, 0.0, d, decode_context + d * i))  # fmt: skip
            draft += sum(dp) - dp[7] - dp[10]  # less step_overhead_s and the per-sequence costs
            dflop, dmoved = dflop + f, dmoved + b
    return parts, draft, (m._floor(flop + dflop, moved + dmoved, comm), flop + dflop, moved + dmoved)


def per_token(m: StepModel, prefill_tokens: float, prefill_pairs: float, decode_seqs: int, decode_context: float,
              prefill_seqs: int = 1) -> Terms:  # fmt: skip
    """The step per token a decoding request gains, τ of them a real step: with d > 0 decoding, the real step over
    τ × the prompt tokens, / τ, each term alike (the simulation and the closed forms, one token a step, give a step
    1 / τ of the prompt room a real step leaves: StepModel.prompt_room); a step with no decoding request is itself."""
    if not decode_seqs:
        return verify(m, prefill_tokens, prefill_pairs, 0, 0.0, prefill_seqs)
    tau = m.accepted_tokens
    parts, draft, aux = verify(m, prefill_tokens * tau, prefill_pairs * tau, decode_seqs, decode_context, prefill_seqs)
    return tuple(x / tau for x in parts), draft / tau, tuple(x / tau for x in aux)
