"""What an engine picks for the step budget and the running-request cap when its server is started without them.

vLLM ≥ 0.10 (engine/arg_utils.py, `_set_default_args`): on a GPU of 70 GiB or more that is not an A100 (H100,
H200, B200, MI300X, …) the OpenAI server takes max_num_batched_tokens 8,192 and max_num_seqs 1,024 (the LLM class
16,384 and 1,024); on any other GPU 2,048 and 256 (the LLM class 8,192). SGLang 0.5 (server_args.py): a
chunked_prefill_size by memory class (2,048 under 35 GiB, 4,096 under 60, 8,192 under 160, else 16,384), and its
running-request cap from the pool (1,024 as a bound here). shared/reference/vllm_kv.md §3.1.
"""

from __future__ import annotations

from calc.engine_spec import version_tuple
from calc.pool import size_pool
from calc.scenario import Scenario
from calc.sglang_defaults import sglang_chunk, sglang_running_cap
from calc.sglang_hybrid import mamba_ratio
from calc.specs import GPUSpec, ModelSpec

A100_EXCLUDED_SINCE = (0, 9)
"""vLLM 0.8 gave every GPU of 70 GiB or more the large defaults; 0.9 left A100s out ("a100" not in device_name,
engine/arg_utils.py of 0.8.5 against 0.9.0)."""


def default_budget(engine: str, memory_gib: float, gpu_id: str, llm_class: bool = False,
                   version: str = "latest") -> tuple[int, int]:  # fmt: skip
    """(max_num_batched_tokens, max_num_seqs) the engine starts with when neither is given (`version`: the
    engine's release, as Scenario.engine_version)."""
    release = version_tuple(version)
    a100_small = release is None or release[:2] >= A100_EXCLUDED_SINCE
    big = memory_gib >= 70 and not (a100_small and gpu_id.startswith("a100"))
    if engine == "sglang":
        return sglang_chunk(version, memory_gib * 1024), 1024
    return (16384 if big else 8192) if llm_class else (8192 if big else 2048), 1024 if big else 256


def server_defaults(s: Scenario, g: GPUSpec, moe: bool = True, pool_tokens: int | None = None,
                    state_slots: int = 0) -> dict | None:  # fmt: skip
    """The batch limits the engine's server starts with on this GPU where they differ from the plan's and the plan
    keeps the planner's defaults: vLLM's max_num_batched_tokens and max_num_seqs (neither set), SGLang's
    --chunked-prefill-size as max_num_batched_tokens and, given this plan's pool (`pool_tokens`), the running-request
    cap it sizes from it (sglang_running_cap) as max_num_seqs; else None."""
    fields = Scenario.model_fields
    budget_default, seqs_default = fields["max_num_batched_tokens"].default, fields["max_num_seqs"].default
    budget, seqs = default_budget(s.engine, g.memory_gib, s.gpu, version=s.engine_version)
    if s.engine == "sglang":
        if moe:  # DP attention divides --chunked-prefill-size over the ranks (plain replicas keep their own)
            budget //= s.data_parallel_size
        own = {} if s.max_num_batched_tokens != budget_default or budget == budget_default else \
            {"max_num_batched_tokens": budget}  # fmt: skip
        if pool_tokens and s.max_num_seqs == seqs_default:
            cap = sglang_running_cap(pool_tokens, s.max_model_len)
            if state_slots:  # a hybrid's state slots cap it too (calc.sglang_hybrid)
                cap = max(1, min(cap, state_slots // mamba_ratio(s.engine_version)))
            own |= {"max_num_seqs": cap} if cap != s.max_num_seqs else {}
        return own or None
    if (s.max_num_batched_tokens, s.max_num_seqs) != (budget_default, seqs_default):
        return None
    if (budget, seqs) == (s.max_num_batched_tokens, s.max_num_seqs):
        return None
    return {"max_num_batched_tokens": budget, "max_num_seqs": seqs}


def defaults_note(s: Scenario, m: ModelSpec, g: GPUSpec, mem) -> str | None:
    """Where the planner's defaults (DESIGN: 256 running requests, a 2,048-token step) are not what the engine's
    server starts with on this GPU: say so, with the KV cache vLLM's own defaults leave (a larger step, a larger
    activation peak, fewer blocks). None when they agree or are set."""
    theirs_fields = server_defaults(s, g, bool(m.routed_experts), mem.pool_token_capacity,
                                    mem.running_slots)  # fmt: skip
    if theirs_fields is None:
        return None
    budget = theirs_fields.get("max_num_batched_tokens", s.max_num_batched_tokens)
    if s.engine == "sglang":
        chunk = (f"a {budget:,}-token prefill chunk on each of its {s.data_parallel_size} DP-attention ranks (its "
                 f"--chunked-prefill-size default, {budget * s.data_parallel_size:,}, divided over them)"
                 if s.data_parallel_size > 1 and m.routed_experts else f"--chunked-prefill-size {budget:,}")  # fmt: skip
        parts = []
        if "max_num_batched_tokens" in theirs_fields:
            parts.append(f"{chunk} when it is not given; this plan chunks prompts at {s.max_num_batched_tokens:,} "
                         f"tokens (max_num_batched_tokens), as a server started with --chunked-prefill-size "
                         f"{s.max_num_batched_tokens}")  # fmt: skip
        if "max_num_seqs" in theirs_fields:
            cap = theirs_fields["max_num_seqs"]
            slots = (f", and at most its {mem.running_slots:,} state slots // "
                     f"{mamba_ratio(s.engine_version)}" if mem.state_slots else "")
            parts.append(f"--max-running-requests {cap:,} when it is not given (from this pool of "
                         f"{mem.pool_token_capacity:,} tokens: min(pool / 2, clamp(pool / {s.max_model_len:,} × 512, "
                         f"2,048, 4,096)){slots}); this plan runs {s.max_num_seqs:,} at most (max_num_seqs), as a server "
                         f"started with --max-running-requests {s.max_num_seqs}")  # fmt: skip
        return (f"SGLang on this GPU ({g.name}, {g.memory_gib:g} GiB) starts with " + "; and with ".join(parts)
                + ". Set them to its defaults to plan a server started without them")  # fmt: skip
    seqs = theirs_fields["max_num_seqs"]
    ours = mem  # this plan's pool (calc.pool.size_pool)
    theirs = size_pool(s.model_copy(update=theirs_fields), m, g)
    kv = (f": {theirs.kv_cache_tokens:,} tokens of KV cache rather than {ours.kv_cache_tokens:,} (the larger "
          "step's activation peak)" if theirs.kv_cache_tokens != ours.kv_cache_tokens else "")  # fmt: skip
    return (f"vllm serve on this GPU ({g.name}: 70 GiB or more{'' if g.memory_gib >= 70 and s.gpu.startswith('a100') else ', not an A100'}) starts with max_num_batched_tokens {budget:,} "
            f"and max_num_seqs {seqs:,} when neither is given; this plan uses the planner's "
            f"{s.max_num_batched_tokens:,} and {s.max_num_seqs:,}, as a server started with those flags. Set both "
            f"to plan a server started without them{kv}")
