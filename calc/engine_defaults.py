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


def sglang_running_cap(pool_tokens: int, context_len: int) -> int:
    """The --max-running-requests SGLang takes when it is not given: min(pool / 2, the request-slot pool), the slots
    clamp(pool / context_len × 512, 2,048, 4,096) (model_runner's max_num_reqs, tp_worker; 0.4.6–0.5.23 alike)."""
    slots = min(max(int(pool_tokens / max(context_len, 1) * 512), 2048), 4096)
    return max(1, min(pool_tokens // 2, slots))


def sglang_chunk(version: str, gpu_mib: float) -> int:
    """The --chunked-prefill-size SGLang takes when it is not given, by release and the GPU's MiB (server_args.py):
    0.4.2–0.4.7 2,048 under 25,000 MiB, else 8,192 (0.4.7: 16,384 above 180,000); 0.4.8–0.5.2 2,048 under 35 GiB,
    8,192 under 160, else 16,384; 0.5.3 on 2,048 under 35 GiB, 4,096 under 60, 8,192 under 160, else 16,384."""
    release = version_tuple(version) or (0, 5, 15)
    g = gpu_mib
    if release < (0, 4, 8):
        return 16384 if release >= (0, 4, 7) and g > 180_000 else 2048 if g < 25_000 else 8192
    if release < (0, 5, 3):
        return 2048 if g < 35 * 1024 else 8192 if g < 160 * 1024 else 16384
    return 2048 if g < 35 * 1024 else 4096 if g < 60 * 1024 else 8192 if g < 160 * 1024 else 16384


def server_defaults(s: Scenario, g: GPUSpec, moe: bool = True, pool_tokens: int | None = None) -> dict | None:
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
    theirs_fields = server_defaults(s, g, bool(m.routed_experts), mem.pool_token_capacity)
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
            parts.append(f"--max-running-requests {cap:,} when it is not given (from this pool of "
                         f"{mem.pool_token_capacity:,} tokens: min(pool / 2, clamp(pool / {s.max_model_len:,} × 512, "
                         f"2,048, 4,096))); this plan runs {s.max_num_seqs:,} at most (max_num_seqs), as a server "
                         f"started with --max-running-requests {s.max_num_seqs}")  # fmt: skip
        return (f"SGLang on this GPU ({g.name}, {g.memory_gib:g} GiB) starts with " + "; and with ".join(parts)
                + ". Set them to its defaults to plan a server started without them")  # fmt: skip
    seqs = theirs_fields["max_num_seqs"]
    ours = mem  # this plan's pool (calc.pool.size_pool)
    theirs = size_pool(s.model_copy(update=theirs_fields), m, g)
    kv = (f": {theirs.pool_token_capacity:,} tokens of KV cache rather than {ours.pool_token_capacity:,} (the larger "
          "step's activation peak)" if theirs.pool_token_capacity != ours.pool_token_capacity else "")  # fmt: skip
    return (f"vllm serve on this GPU ({g.name}: 70 GiB or more{'' if g.memory_gib >= 70 and s.gpu.startswith('a100') else ', not an A100'}) starts with max_num_batched_tokens {budget:,} "
            f"and max_num_seqs {seqs:,} when neither is given; this plan uses the planner's "
            f"{s.max_num_batched_tokens:,} and {s.max_num_seqs:,}, as a server started with those flags. Set both "
            f"to plan a server started without them{kv}")


FRACTION_RULES_READ = (0, 5, 15)
"""The newest release whose server_args.py sglang_mem_fraction follows (later ones are given its rules)."""


def _tp_table(parallel: int) -> float:
    """SGLang 0.4.2–0.4.7's fraction by the number of GPUs a replica spans."""
    return 0.79 if parallel >= 16 else 0.81 if parallel >= 8 else 0.85 if parallel >= 4 else 0.87 if parallel >= 2 else 0.88


def _prefill_graph_sizes(max_tokens: int, release: tuple) -> int:
    """How many prompt sizes SGLang captures prefill CUDA graphs for, up to max_tokens (server_args
    _generate_prefill_cuda_graph_batch_sizes, 0.5.8 and later)."""
    mid = range(576 if release >= (0, 5, 9) else 640, 1025, 64)
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *mid, *range(1280, 4097, 256),
             *range(4608, max_tokens + 1, 512)]  # fmt: skip
    return sum(1 for x in sizes if x <= max_tokens)


def sglang_mem_fraction(version: str, gpu_mib: float, *, tp: int = 1, pp: int = 1, dp: int = 1,
                        chunk: int | None = None, context_len: int | None = None, mla: bool = False,
                        multimodal: bool = False, rocm: bool = False) -> float:  # fmt: skip
    """The --mem-fraction-static SGLang takes when it is not given (server_args.py of each release, read in the
    wheels 0.4.2–0.5.15.post1; gpu_mib: nvidia-smi's total, G; dp > 1: DP attention; no speculative decoding):

        0.4.2–0.4.5  by tp: 0.88, 0.87 from 2 GPUs, 0.85 from 4, 0.81 from 8, 0.79 from 16
        0.4.6        the same up to 80 GiB, (G − 13 GiB) / G above
        0.4.7        the table (tp · pp), 0.79 above 180,000 MiB, min(table + 48 GiB · (1 − table) / G, (G − 18 GiB) / G)
                     above 96 GiB
        0.4.8–0.5.2  round((G − R) / G, 3), R = 2.8 + tp·pp/10 GiB under 35 GiB, 9.5 + tp·pp/2 under 90, 12 + tp·pp/2
                     under 160, else 32; + 4 GiB with DP attention
        0.5.3 on     R = 512 + 1.5 · max(chunk, 2,048) + 2 · cuda_graph_max_bs + 1,024 · tp·pp / 8 MiB, + 3 · bs · dp
                     with DP attention (+ 1.5 · bs · dp above bs 300), + 8 MiB a captured prompt size (0.5.10 on, its
                     prefill graphs; 1.5 GiB for MLA before 0.5.15; none with DP attention, pp > 1, vision, ROCm),
                     at least 10 GiB over 60 GiB

    chunk: --chunked-prefill-size (None: its default on this GPU). Two Massed Compute servers started without the
    flag logged 0.843 (Llama-3.1-8B, L40S, 0.5.14) and 0.857 (Llama-3.3-70B, two RTX PRO 6000, 0.5.15.post1), as
    this gives. Vision models' own factor (0.9–1.05 × 0.95) is not applied."""
    release = version_tuple(version) or (0, 5, 15)
    g, parallel = float(gpu_mib), tp * pp
    if release < (0, 4, 6):
        return _tp_table(tp)
    if release < (0, 4, 7):
        return _tp_table(tp) if g <= 81920 else (g - 13 * 1024) / g
    if release < (0, 4, 8):
        table = _tp_table(parallel) if g <= 81920 else 0.88
        if g > 180_000 and not rocm:
            return 0.79
        return min(table + 48 * 1024 * (1 - table) / g, (g - 18 * 1024) / g) if g > 96 * 1024 else table
    if release < (0, 5, 3):
        gib = 2.8 + parallel / 10 if g < 35 * 1024 else 9.5 + parallel / 2 if g < 90 * 1024 else \
            12 + parallel / 2 if g < 160 * 1024 else 32  # fmt: skip
        reserve = (gib + (4 if dp > 1 else 0)) * 1024
        return round((g - reserve) / g, 3)
    default_chunk, bs = (2048, 8) if g < 20 * 1024 else \
        (2048, (24 if release >= (0, 5, 5) else 16) if tp < 4 else 80) if g < 35 * 1024 else \
        (4096, 32 if tp < 4 else 160) if g < 60 * 1024 else (8192, 256 if tp < 4 else 512) if g < 160 * 1024 else \
        (16384, 512)  # fmt: skip
    chunk = chunk or default_chunk
    reserve = 512 + 1.5 * max(chunk, 2048) + 2 * bs + parallel / 8 * 1024
    if dp > 1:
        reserve += 3 * bs * dp + (1.5 * bs * dp if bs > 300 else 0)
    prefill_graphs = release >= (0, 5, 10) and dp == 1 and pp == 1 and not multimodal and not rocm \
        and not (mla and release >= (0, 5, 15))  # fmt: skip
    if prefill_graphs:
        top = min(chunk, context_len) if context_len and release >= (0, 5, 13) else chunk
        reserve += 1.5 * 1024 if mla else 8 * _prefill_graph_sizes(top, release)
    if g > 60 * 1024:
        reserve = max(reserve, 10 * 1024)
    return round((g - reserve) / g, 3)


def sglang_fraction_note(s: Scenario, m: ModelSpec, g: GPUSpec) -> str | None:
    """Under SGLang, where the plan's fraction is not the one SGLang takes when started without --mem-fraction-static
    (sglang_mem_fraction at the scenario's release, GPU, TP, chunk and DP): say both. None under vLLM or when equal."""
    if s.engine != "sglang":
        return None
    own = sglang_mem_fraction(s.engine_version, g.smi_mib, tp=s.tensor_parallel_size * s.data_parallel_size,
                              pp=s.pipeline_parallel_size, dp=s.data_parallel_size,
                              chunk=s.max_num_batched_tokens * s.data_parallel_size, context_len=s.max_model_len,
                              mla=m.is_mla, multimodal=m.vision_config is not None, rocm=g.vendor == "amd")  # fmt: skip
    if abs(own - s.gpu_memory_utilization) < 5e-4:
        return None
    release = version_tuple(s.engine_version)
    rules = "its server_args at this release" if release is not None and release[:3] <= FRACTION_RULES_READ else \
        "its server_args as of 0.5.15, the newest read"  # fmt: skip
    return (f"SGLang started without --mem-fraction-static takes {own:g} here ({rules}, from "
            f"the GPU's {g.smi_mib:,.0f} MiB, the chunk and the CUDA-graph sizes); this plan uses "
            f"{s.gpu_memory_utilization:g}, which its serve command passes. Set gpu_memory_utilization to {own:g} to "
            "plan a server started without it")  # fmt: skip
