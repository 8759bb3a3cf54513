"""The verdict and what is missing: the headline sentence of a plan, the shortfalls per GPU when it does not fit or
cannot start, and why no latency figure is shown (split from boundary.view, which re-exports them)."""

from __future__ import annotations

from boundary import fmt
from calc.evaluate import sglang_rest_short_bytes
from calc.sglang_hybrid import running_limit


def each_rank(s) -> str:
    """' on each of 4 ranks' for one data-parallel rank's figure; ' on each of the 2 busy ranks (of 4)' where fewer
    requests are in flight than ranks (the others idle); '' without data parallelism."""
    d = s.data_parallel_size
    if d <= 1:
        return ""
    busy = min(d, s.concurrency)
    return f" on each of the {busy:,} busy ranks (of {d:,})" if busy < d else f" on each of {d:,} ranks"


def verdict(r) -> str:
    """The headline sentence, e.g. '16 × 8,448 tokens: does not fit — 16 requests need 8,448 blocks, …'."""
    s, f, m = r.scenario, r.fit, r.memory
    head = f"{s.concurrency:,} × {fmt.tokens(f.request_tokens)}"
    if f.fits:
        each = each_rank(s)
        oom = sglang_rest_short_bytes(s, m)
        return (f"{head}: fits ({fmt.count(f.blocks_needed)} of {fmt.count(m.num_gpu_blocks)} blocks{each}, "
                f"{fmt.pct(f.pool_fraction, 0)} of the pool{_swa_binds(r)})"
                + (f", but SGLang runs out of memory at its first large step: its activations and CUDA graphs need "
                   f"{fmt.gib(oom)} more than --mem-fraction-static {s.gpu_memory_utilization:g} leaves" if oom else ""))  # fmt: skip
    if not r.shortfall.engine_starts:
        return f"{head}: {'not planned' if f.planner_limit else 'cannot run'} — {_start_problem(r)}"
    return f"{head}: does not fit — {f.reasons[0]}"


def engine_name(s) -> str:
    return "SGLang" if s.engine == "sglang" else "vLLM"


def _swa_binds(r) -> str:
    """Where SGLang's SWA pool, not its full one, sets a request's blocks (calc.sglang_swa): say so, since the count is
    then more than its tokens / block_size."""
    lay = r.memory.layout
    if not lay.swa_binds(r.fit.request_tokens):
        return ""
    g = lay.split
    return (f"; SGLang's sliding-window pool ({g.share:g} × the full pool's tokens) binds below "
            f"{g.swa_bound_below:,.0f} tokens a request: each takes {1 / g.share:g} × its blocks")


def _start_problem(r) -> str:
    sf, m, s = r.shortfall, r.memory, r.scenario
    if r.fit.refused:
        return r.fit.refused
    if sf.weights_over_bytes > 0:
        return (f"the weights alone ({fmt.gib(m.weights_bytes_per_gpu)} per GPU) exceed the "
                f"{fmt.gib(sf.usable_bytes)} the engine may use")  # fmt: skip
    if m.num_gpu_blocks == 0:
        return "no memory is left for the KV cache"
    return (f"the KV cache holds {fmt.count(m.num_gpu_blocks)} blocks, one request of max_model_len "
            f"{fmt.count(s.max_model_len)} tokens needs {fmt.count(m.blocks_per_max_len_request)}: "
            f"{'SGLang' if s.engine == 'sglang' else 'vLLM'} refuses to start")  # fmt: skip


def missing_lines(r) -> list[str]:
    """What is missing and by how much, per GPU; empty when the workload fits."""
    sf, m, s, f = r.shortfall, r.memory, r.scenario, r.fit
    out = []
    if sf.weights_over_bytes > 0:
        out.append(f"weights: {fmt.gib(m.weights_bytes_per_gpu)} per GPU, the engine may use "
                   f"{fmt.gib(sf.usable_bytes)} (gpu_memory_utilization {s.gpu_memory_utilization:g} × "
                   f"{fmt.gib(m.total_memory_bytes)}): {fmt.gib(sf.weights_over_bytes)} short before any KV cache")  # fmt: skip
    if r.fit.refused:
        out.append(r.fit.refused)
    overrun = -m.kv_cache_memory_bytes if m.kv_cache_memory_bytes < 0 else 0.0

    def beyond(short: float) -> str:  # a KV shortfall counts the overrun before the pool, said once above
        return f" (the {fmt.gib(overrun)} the weights and overheads overrun, plus {fmt.gib(short - overrun)})" if overrun else ""

    if sf.start_missing_blocks or (not sf.engine_starts and not r.fit.refused):
        out.append(f"KV cache for one max_model_len request ({fmt.tokens(s.max_model_len)}): "
                   f"{fmt.count(m.blocks_per_max_len_request)} blocks; the pool has {fmt.count(m.num_gpu_blocks)} — "
                   f"{fmt.gib(sf.start_missing_bytes)} per GPU short{beyond(sf.start_missing_bytes)}")  # fmt: skip
    if s.request_len > s.max_model_len:
        ctx = r.model.max_len_limit
        out.append(f"request length: {fmt.tokens(s.request_len)} exceeds max_model_len {fmt.count(s.max_model_len)} "
                   f"by {fmt.tokens(s.request_len - s.max_model_len)}: {engine_name(s)} rejects it" + (
                       f"; it also exceeds the model's own context ({r.model.max_len_text}), so no "
                       "max_model_len admits it: shorten input_len + output_len" if s.request_len > ctx else ""))  # fmt: skip
    rank = each_rank(s)
    if sf.workload_missing_blocks:
        running = min(s.rank_concurrency, s.max_num_seqs)  # the queue beyond max_num_seqs holds no blocks
        out.append(f"KV cache for {fmt.plural(running, 'running request')} of {fmt.tokens(f.request_tokens)}{rank}: "
                   f"{fmt.count(f.blocks_needed)} blocks, the pool has {fmt.count(m.num_gpu_blocks)} — "
                   f"{fmt.count(sf.workload_missing_blocks)} blocks ({fmt.gib(sf.workload_missing_bytes)} per GPU) short"
                   + beyond(sf.workload_missing_bytes) + ((": SGLang retracts requests" if s.engine == "sglang" else
                                                           ": vLLM preempts") if sf.engine_starts else ""))  # fmt: skip
    if s.rank_concurrency > s.max_num_seqs:
        out.append(f"{running_limit(s, m)} < concurrency {s.rank_concurrency:,}{rank}: "
                   f"{s.rank_concurrency - s.max_num_seqs:,} requests{rank} wait in the queue")  # fmt: skip
    return out


def no_latency_reason(r) -> str | None:
    """Why no latency, SLO or cost figure is shown (they cannot happen), or None when they can."""
    if r.serves:
        return None
    if r.fit.refused:
        return r.fit.refused
    if not r.shortfall.engine_starts:
        return "the engine cannot start with this memory"
    if r.scenario.request_len > r.scenario.max_model_len:
        return "vLLM rejects a request longer than max_model_len"
    return "not one request of this length fits the KV pool"
