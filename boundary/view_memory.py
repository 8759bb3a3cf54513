"""The Memory tab's three sections (and the CLI text's): vLLM's memory profile per GPU, the KV cache, the workload
against the pool — finished text from boundary.view's parts."""

from __future__ import annotations

from boundary import fmt
from boundary.view import Section, kv_available, kv_tokens_formula


def memory_section(r) -> Section:
    s, m = r.scenario, r.memory
    if s.engine == "sglang":
        return _sglang_memory(r)
    graphs = fmt.gib(m.cudagraph_bytes) if m.cudagraph_subtracted else "not subtracted" + (
        f" (vLLM {s.engine_version} captures them after sizing the pool; 0.20 and later subtract them first)"
        if s.estimate_cudagraphs and not s.enforce_eager else "")  # fmt: skip
    rows = [
        ("total as the runtime sees it", fmt.gib(m.total_memory_bytes)),
        (f"× gpu_memory_utilization {s.gpu_memory_utilization:g}", fmt.gib(m.requested_memory_bytes)),
        ("− weights", fmt.gib(m.weights_bytes_per_gpu)),
        ("− activation peak" + ("" if s.activation_memory_bytes is not None else " (estimate)"), fmt.gib(m.activation_bytes)),
        ("− non-torch" + ("" if s.non_torch_memory_bytes is not None else " (estimate)"), fmt.gib(m.non_torch_bytes)),
        ("− CUDA graphs" + ("" if s.cudagraph_memory_bytes is not None else " (estimate)"), graphs),
        ("= available KV cache memory", kv_available(r) + ("  (from kv_cache_memory_bytes)" if m.kv_cache_memory_from_flag else "")),
    ]  # fmt: skip
    return Section("Memory per GPU (vLLM's profile" + (", every rank alike)" if s.data_parallel_size > 1 else ")"), rows)


def _sglang_memory(r) -> Section:
    """SGLang's profile (model_runner.profile_max_num_token): its fraction of what is free before loading, less the
    weights; the activation peak and CUDA graphs live in the rest (calc.pool)."""
    s, m = r.scenario, r.memory
    est = "" if s.non_torch_memory_bytes is not None else " (estimate)"
    before = m.total_memory_bytes - m.non_torch_bytes
    rows = [
        ("total as the runtime sees it", fmt.gib(m.total_memory_bytes)),
        ("− in use before loading (CUDA context, NCCL)" + est, fmt.gib(m.non_torch_bytes)),
        (f"× --mem-fraction-static {s.gpu_memory_utilization:g}", fmt.gib(m.requested_memory_bytes)),
        ("− weights", fmt.gib(m.weights_bytes_per_gpu)),
        *([(f"− Mamba state pool ({fmt.count(m.state_slots)} requests, mamba_full_memory_ratio 0.9)",
            fmt.gib(m.state_pool_bytes))] if m.state_slots else []),
        ("= KV pool", kv_available(r) + ("  (from kv_cache_memory_bytes)" if m.kv_cache_memory_from_flag else "")),
        ("the rest of the GPU: activation peak + CUDA graphs (estimates)",
         f"{fmt.gib(m.activation_bytes + m.cudagraph_bytes)} of {fmt.gib(before - m.requested_memory_bytes)}"),
    ]  # fmt: skip
    return Section("Memory per GPU (SGLang's profile" + (", every rank alike)" if s.data_parallel_size > 1 else ")"), rows)


def kv_section(r) -> Section:
    s, m = r.scenario, r.memory
    rows = [("bytes per token (all layers)", f"{fmt.bytes_exact(m.kv_bytes_per_token)} = {fmt.size(m.kv_bytes_per_token)}"),
            ("bytes per token per GPU", fmt.bytes_exact(m.kv_bytes_per_token_per_gpu))]  # fmt: skip
    if g := m.layout.split:  # SGLang's two pools: a full-pool token carries share × a windowed one
        rows.append(("per full-pool token per GPU (SGLang's split)", f"{fmt.bytes_exact(m.layout.bytes_per_pool_token)}: "
                     f"the full layers' bytes + {g.share:g} × the windowed layers' (its SWA pool holds {g.share:g} × "
                     "the tokens)"))  # fmt: skip
    if m.state_bytes_per_request:
        rows.append(("state per request per GPU", f"{fmt.bytes_exact(m.state_bytes_per_request)} = "
                     f"{fmt.size(m.state_bytes_per_request)} (Mamba / linear attention)"))  # fmt: skip
    size = fmt.tokens(m.kv_cache_tokens)
    if m.kv_cache_tokens != m.num_gpu_blocks * m.block_size:
        if s.engine != "vllm":  # SGLang prints no such line: its log's max_total_num_tokens is another figure
            size += f" = {kv_tokens_formula(r)}, vLLM's figure for this pool"
        else:
            who = "the latest vLLM" if s.engine_version in ("latest", "nightly") else f"vLLM {s.engine_version}"
            size += f" = {kv_tokens_formula(r)}, as {who} prints it"
    rows += [("GPU blocks × block size", f"{fmt.count(m.num_gpu_blocks)} × {fmt.count(m.block_size)}"),
             ("GPU KV cache size", size),
             (f"max concurrency at {fmt.count(s.max_model_len)}", f"{m.max_concurrency:,.2f}x")]  # fmt: skip
    if s.data_parallel_size > 1:  # vLLM logs each rank's pool; the server holds D of them
        d = s.data_parallel_size
        rows.append((f"all {d} data-parallel ranks", f"{fmt.tokens(d * m.kv_cache_tokens)}, "
                     f"{d * m.max_concurrency:,.2f}x at {fmt.count(s.max_model_len)}"))  # fmt: skip
    return Section("KV cache" + (" (each data-parallel rank)" if s.data_parallel_size > 1 else ""), rows)


def workload_section(r) -> Section:
    s, f, m, sf = r.scenario, r.fit, r.memory, r.shortfall
    rows = [("pool occupancy", fmt.pct(f.pool_fraction) if m.num_gpu_blocks else fmt.missing("no KV cache")),
            ("pool the requests take", f"{fmt.gib(sf.pool_used_bytes)} per GPU"
             + (f", of which state {fmt.gib(sf.state_used_bytes)}" if sf.state_used_bytes else "")),
            ("most requests at this length", fmt.count(f.max_concurrency_at_length)),
            ((f"longest request at {s.max_num_seqs:,} running" if s.rank_concurrency > s.max_num_seqs else
              f"longest request at C={s.rank_concurrency:,}") + (" a rank" if s.data_parallel_size > 1 else ""), fmt.missing("the engine does not start") if not sf.engine_starts
             else f"{fmt.tokens(f.longest_request_at_concurrency)} "
             + (f"(prompt ≤ {fmt.count(f.longest_prompt_at_concurrency)})" if f.longest_prompt_at_concurrency else
                f"(no room for a prompt beside the {s.output_len:,}-token output)"))]  # as the headline says  # fmt: skip
    if s.shared_prefix_len:
        p = r.prefix
        rows.append((f"with the shared {fmt.count(s.shared_len)}-token prompt",
                     f"{fmt.plural(p.max_concurrency_with_sharing, 'request')} fit (without sharing "
                     f"{fmt.count(p.max_concurrency_without_sharing)}); {fmt.count(p.blocks_saved)} blocks saved"))  # fmt: skip
    return Section("Workload", rows)
