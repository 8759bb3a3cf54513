"""The engine's side of calc/scheduler.py: what one engine is (EngineConfig, its step-time function) and how long a
stretch of identical decode steps takes, which is what lets the simulation skip from event to event.

Time is compressed. Between events (an arrival, a prefill chunk, a finish, a preemption, the step at which the pool
would run out) the decoding set is constant and every context grows by one token per step, so k decode steps are
one stretch: with n sequences whose contexts sum to c₀ at the first,
    Σ_{j<k} step_s(0, 0, n, c₀ + n·j) ≈ k · (f(0) + 4 f((k−1)/2) + f(k−1)) / 6     (Simpson; exact for linear)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

StepFn = Callable[..., float]
"""step_s(prefill_tokens, prefill_pairs, decode_seqs, decode_context[, prefill_seqs]) → seconds for one engine step
(prefill_seqs: how many prompts the prefill tokens belong to, 1 when not given)."""

# The simulation's cost bounds (calc/scheduler.py stops at either and marks the result stopped_early)
MAX_SIM_ITERATIONS = 15_000
"""Scheduling decisions one simulation may take: 9 µs each with a linear step function, up to ~40 µs with the
step-time model when every decision is a prefill chunk (200 requests of 100,000 output tokens at C = 1,024, each
preemption recomputed: 0.6–0.7 s of CPU here at the cap, tests/test_cost_bound.py). A run of 200 prompts of 1,024
tokens at C = 16 takes 155, 10,000 such prompts at C = 256 about 11,000, the most of any published run replayed
11,304 (tests/data/benchmarks); 200 prompts under a 1-token budget would take 205,000."""

MAX_SIM_WORK = 5_000_000
"""Σ over scheduling decisions of the requests running at each: a decision's own work (the decoders' block counts,
a preemption's or a finish's removal) grows with how many run, 0.04–0.08 µs per running request per decision.
5,000 prompts of 1 → 8,000 tokens at C = 65,536 (5,000 running; the pool preempts every decision) took 0.9 s of
CPU and 7.8 M at the decision cap alone; 0.7 s at this cap, and 0.39–0.41 s since the decoders' array is kept in
place rather than rebuilt at each change (tests/test_cost_bound.py). Published and tested runs stay below it: the
calibration's replays (≤ 1,000 prompts at ≤ 256 in flight) ≤ 0.3 M, the suite's largest ordinary run 0.5 M, 5,000
prompts preempting every step at 256 in flight 2.8 M, 5,000 of 1 → 2,000 tokens at C = 1,000 on Llama-3.1-8B /
H200 4.1 M (0.22 s)."""


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int
    max_num_batched_tokens: int
    """vLLM's per-step token budget; SGLang's chunked_prefill_size."""
    num_gpu_blocks: int
    block_size: int
    blocks_for: Callable[[int], int]
    """Blocks one request of that many tokens holds (a function of ⌈tokens / block_size⌉)."""
    engine: Literal["vllm", "sglang"] = "vllm"
    prefix_cached_tokens: int = 0
    """Prompt tokens every request after the first finds in the prefix cache: no prefill compute, still context."""
    request_overhead_s: float = 0.0
    """Front-end latency per request (HTTP, chat template, first-token streaming): it counts in TTFT and E2E, and
    requests overlap in it (the API server awaits, it does not compute, most of that time)."""
    request_serial_s: float = 0.0
    """Front-end CPU time per request besides its tokens (the chat template), one request at a time."""
    request_token_s: float = 0.0
    """Front-end CPU time per prompt token (tokenisation), one request at a time: a burst of N prompts queues there
    before the engine sees the last of them."""
    overlap_schedule: bool = False
    """SGLang's overlap scheduler: it launches step k + 1 before it has read step k's tokens, so a request whose last
    token came at step k still rides in step k + 1 (a decode step, its token dropped) unless a prefill was waiting."""
    idle_launch_s: float = 0.0
    """EngineSpec.idle_launch_s: under the overlap schedule, added to a prompt step that starts with no step in
    flight (the scheduler forms and launches it with the GPU idle)."""
    compile_s: float = 0.0
    """StepModel.compile_s, which step_s adds to every step with prompt tokens: the simulation takes it back from a
    step whose prompt-token count the server has run before (the compiled kernel is reused)."""
    decode_tokens: int = 1
    """Tokens of max_num_batched_tokens a decoding request takes a step (vLLM): 1 + k under speculative decoding."""
    tokens_per_step: float = 1.0
    """Under speculative decoding τ, the tokens a decoding request gains a real step: the simulation plays a step per
    token, so a step with decoding requests has 1 / τ of the prompt budget a real step leaves them."""
    busy_peers: float = 0.0
    """Other data-parallel ranks with requests (StepModel.busy_peers), run alike: their prompt steps hold this rank's
    decode steps in every MoE layer (the lockstep; calc.scheduler._Sim.decode)."""


def stretch_s(step: StepFn, n: int, c0: float, k: int, f0: float, fe: float) -> float:
    """k decode steps of n sequences whose contexts sum to c0 at the first (f0 = its time, fe = the last's), each
    context one token longer per step: Simpson's rule over the step function, exact where it is linear [s]."""
    if k <= 2:
        return f0 + (fe if k == 2 else 0.0)
    return k * (f0 + 4 * step(0.0, 0.0, n, c0 + n * (k - 1) / 2) + fe) / 6


def steps_to_cover(gap_s: float, f0_s: float, slope_s: float, k: int) -> int:
    """Fewest steps m ≥ 1 whose summed time reaches gap_s, step j lasting f0 + slope·j:
    m·f0 + slope·m(m−1)/2 ≥ gap  →  m = ⌈(−b + √(b² + 2·slope·gap)) / slope⌉, b = f0 − slope/2  (capped at k)."""
    if slope_s <= 1e-12 * f0_s:
        m = gap_s / f0_s
    else:
        b = f0_s - slope_s / 2
        m = (-b + math.sqrt(b * b + 2 * slope_s * gap_s)) / slope_s
    return max(1, min(k, math.ceil(m - 1e-9)))
