"""The workload question as data: do `concurrency` requests of `input_len + output_len` tokens fit in the pool?

Each request holds `blocks_per_request(L)` blocks (⌈L / block_size⌉ for full attention; sliding-window layers cap
at the window). Pool occupancy `C · blocks(L) / num_blocks` is the seed report's straight line in L with slope C
(measured R² = 0.99993, slope 15.99 vs 16). Seed: 16 × (8,192 + 256) tokens need 16 × 528 = 8,448 blocks
(135,168 tokens) > 7,504 blocks (120,064 tokens): does not fit, vLLM preempts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calc.expr import E
from calc.numeric import largest_true
from calc.pool import PoolResult, whole_model_check
from calc.scenario import Scenario
from calc.sglang_hybrid import mamba_ratio, running_limit
from calc.specs import ModelSpec
from calc.speculative import spec_refusal
from calc.units import GiB


@dataclass(frozen=True)
class WorkloadFit:
    request_tokens: int
    blocks_per_request: int
    blocks_needed: int
    """Of one pool: a data-parallel rank's share of the requests (all of them with one rank) that run at once, at
    most max_num_seqs (the rest wait in the queue and hold no blocks)."""
    tokens_needed: int
    """requests running at once (concurrency, at most max_num_seqs) · request length: the seed's '16 × (L + 256)' (a
    rank's share, as blocks_needed)."""
    pool_fraction: float
    """blocks_needed / num_gpu_blocks (vLLM's gpu_cache_usage at steady state); inf when the pool is empty."""
    fits: bool
    reasons: tuple[str, ...]
    max_concurrency_at_length: int
    """Most requests of this length the server holds at once, capped by max_num_seqs a rank (0 when vLLM refuses to
    start); with data-parallel ranks, all of them together."""
    longest_request_at_concurrency: int
    """Longest request (prompt + output) each of the requests running at once (concurrency, at most max_num_seqs)
    can have, capped by max_model_len (a rank's share of them against its pool, with data-parallel ranks)."""
    longest_prompt_at_concurrency: int
    """The same minus output_len (the seed's 'prompts of at most 816' for the MHA variant)."""
    formula: E = field(repr=False, compare=False)
    """concurrency × blocks per request, against the pool."""
    refused: str = ""
    """Why vLLM refuses to start whatever the pool holds (max_model_len beyond the model's positions, a
    kv_cache_memory_bytes the GPU cannot hold), else ''."""
    planner_limit: bool = False
    """`refused` is this planner's own limit (a speculative draft it does not plan: calc.speculative.spec_refusal),
    not the engine's refusal: the page says "not planned", not "cannot run"."""


def budget_refused(engine: str, max_num_batched_tokens, max_num_seqs):
    """vLLM's SchedulerConfig refuses a token budget below max_num_seqs (every running request may need a token a
    step); SGLang has no such rule. Numbers or arrays (the search's grid): one rule for the plan, the fixes and the
    search."""
    return (engine == "vllm") & (max_num_batched_tokens < max_num_seqs)


def start_refusal(s: Scenario, m: ModelSpec, mem: PoolResult) -> str:
    """Why vLLM refuses to start whatever the pool holds, or '': max_model_len beyond the model's positions, a token
    budget below max_num_seqs, a kv_cache_memory_bytes that does not fit beside the weights, or bf16 weights on a GPU
    without bf16."""
    if mem.dtype_refusal:
        return mem.dtype_refusal
    if s.max_model_len > m.max_len_limit:
        return (f"vLLM refuses to start: max_model_len {s.max_model_len:,} exceeds the model's maximum, "
                f"{m.max_len_text} (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides it, at the model's risk)")  # fmt: skip
    slots = mem.running_slots
    if s.engine == "sglang" and mem.state_slots and slots // mamba_ratio(s.engine_version) == 0:  # a stage may have 0
        return (f"SGLang cannot run a request: its Mamba pool holds {slots:,} requests' state and runs at most "
                f"{slots:,} // {mamba_ratio(s.engine_version)} = 0 at once (a larger --mem-fraction-static, "
                "gpu_memory_utilization, gives it more)")  # fmt: skip
    if budget_refused(s.engine, s.max_num_batched_tokens, s.max_num_seqs):
        return (f"vLLM refuses to start: max_num_batched_tokens ({s.max_num_batched_tokens:,}) must be at least "
                f"max_num_seqs ({s.max_num_seqs:,}) (vLLM's SchedulerConfig: every running request may need a token "
                "a step)")  # fmt: skip
    if whole_model_check(s) and 0 < mem.kv_cache_memory_bytes < mem.whole_model_request_bytes:
        return (f"vLLM {s.engine_version} refuses to start: its check compares one {s.max_model_len:,}-token request's "
                f"KV over the whole model ({mem.whole_model_request_bytes / GiB:,.2f} GiB, every pipeline stage's "
                f"layers) with one stage's pool ({mem.kv_cache_memory_bytes / GiB:,.2f} GiB), a regression of "
                "0.14–0.15 (vllm#32105, fixed by vllm#33698): a later release, or a shorter max_model_len")  # fmt: skip
    if mem.kv_cache_memory_from_flag and mem.kv_cache_memory_bytes + mem.weights_bytes_per_gpu > mem.total_memory_bytes:
        return (f"kv_cache_memory_bytes ({mem.kv_cache_memory_bytes / GiB:,.2f} GiB) and the weights "
                f"({mem.weights_bytes_per_gpu / GiB:,.2f} GiB) exceed the GPU's {mem.total_memory_bytes / GiB:,.2f} GiB: "
                "vLLM cannot allocate that pool")  # fmt: skip
    return ""


def max_requests_at_length(s: Scenario, mem: PoolResult, m: ModelSpec | None = None) -> int:
    """Most requests of input_len + output_len tokens the pool holds at once, capped by max_num_seqs (0 when the
    engine would not start — with the model given, for its refusals too — or the request exceeds max_model_len)."""
    if s.request_len > s.max_model_len or mem.max_concurrency < 1 or (m is not None and start_refusal(s, m, mem)):
        return 0
    return min(mem.num_gpu_blocks // mem.blocks_per_request(s.request_len), s.max_num_seqs)


def fit_workload(s: Scenario, m: ModelSpec, mem: PoolResult) -> WorkloadFit:
    need = mem.blocks_per_request
    L, C = s.request_len, s.rank_concurrency  # one data-parallel rank's share of the requests, against its own pool
    dp = s.data_parallel_size
    each = f" on each of the {dp} data-parallel ranks" if dp > 1 else ""
    per_req = need(L)
    blocks = mem.num_gpu_blocks
    refused = start_refusal(s, m, mem)
    reasons = [refused] if refused else []
    if mem.kv_cache_memory_bytes < 0 and not mem.kv_cache_memory_from_flag:
        reasons.append(
            f"the weights ({mem.weights_bytes_per_gpu / GiB:,.2f} GiB per GPU) and overheads exceed the usable memory "
            f"({mem.requested_memory_bytes / GiB:,.2f} GiB) by {-mem.kv_cache_memory_bytes / GiB:,.2f} GiB: vLLM "
            "refuses to start"
        )
    elif mem.num_gpu_blocks == 0:
        reasons.append("no memory is left for the KV cache")
    elif mem.max_concurrency < 1:
        reasons.append(
            f"the engine refuses to start: one request of max_model_len {s.max_model_len:,} tokens needs "
            f"{mem.blocks_per_max_len_request:,} blocks, the pool has {blocks:,} "
            f"(estimated maximum model length {mem.estimated_max_model_len:,})"
        )
    if L > s.max_model_len:
        reasons.append(f"a request of {L:,} tokens exceeds max_model_len {s.max_model_len:,}")
    R = min(C, s.max_num_seqs)  # running at once; the rest wait in the queue and hold no blocks
    if R * per_req > blocks:
        evicts = "SGLang retracts some" if s.engine == "sglang" else "vLLM preempts"
        reasons.append(f"{R:,} running requests need {R * per_req:,} blocks{each}, the pool has {blocks:,}: {evicts}")
    if C > s.max_num_seqs:
        reasons.append(f"concurrency {C:,}{each} exceeds {running_limit(s, mem)}: the rest wait in the queue")
    per_seq_blocks = blocks // R
    longest = max(0, largest_true(lambda n: need(n) <= per_seq_blocks, 1, s.max_model_len))
    running = "concurrency" if R == C else "running requests (max_num_seqs)"
    return WorkloadFit(
        request_tokens=L,
        blocks_per_request=per_req,
        blocks_needed=R * per_req,
        tokens_needed=R * L,
        pool_fraction=(R * per_req / blocks) if blocks else float("inf"),
        fits=not reasons,
        reasons=tuple(reasons),
        max_concurrency_at_length=dp * max_requests_at_length(s, mem, m),
        longest_request_at_concurrency=longest,
        longest_prompt_at_concurrency=max(0, longest - s.output_len),
        formula=E(R, running if dp == 1 else "requests a rank") * E(per_req, f"blocks per {L:,}-token request"),
        refused=refused,
        planner_limit=bool(refused) and refused == spec_refusal(s, m),
    )
