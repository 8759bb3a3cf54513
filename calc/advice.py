"""The smallest changes that would make a workload fit, each evaluated with its resulting numbers."""

from __future__ import annotations

from dataclasses import dataclass, replace

from calc.parallel_rules import tp_check
from calc.pool import linked_ranks, measured_at, size_pool
from calc.precision_support import checkpoint_refusal, dtype_refusal, kv_dtype_refusal
from calc.resolve import other_gpu_fields
from calc.scenario import Scenario, field_bounds
from calc.sglang_hybrid import as_sglang_runs
from calc.specs import GPUSpec, ModelSpec
from calc.speculative import spec_refusal
from calc.workload import budget_refused, fit_workload


@dataclass(frozen=True)
class Suggestion:
    change: str
    """Human description, e.g. 'kv_cache_dtype=fp8'."""
    fields: dict
    """Scenario fields to set (what a link or CLI call would carry)."""
    num_gpu_blocks: int
    max_concurrency_at_length: int
    pool_fraction: float
    fits: bool


def _try(s: Scenario, m: ModelSpec, g: GPUSpec, change: str, **fields) -> Suggestion | None:
    if "tensor_parallel_size" in fields:  # measured memory holds for the TP it was measured at: moved with it
        fields |= measured_at(s, m, tp=fields["tensor_parallel_size"], pp=s.pipeline_parallel_size, dtype=s.dtype,
                              max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens)  # fmt: skip
    t = s.model_copy(update=fields)
    if s.max_model_len != Scenario.model_fields["max_model_len"].default:
        fields = {"max_model_len": s.max_model_len, **fields}
    if tp_check(t, m):
        return None
    mem = size_pool(t, m, g)
    fit = fit_workload(as_sglang_runs(t, m, mem), m, mem)  # a hybrid under SGLang runs its own pool's cap
    return Suggestion(change, fields, mem.num_gpu_blocks, fit.max_concurrency_at_length, fit.pool_fraction, fit.fits)


def suggest(s: Scenario, m: ModelSpec, g: GPUSpec, gpus: dict[str, GPUSpec]) -> tuple[Suggestion, ...]:
    """fp8 KV cache; the next tensor_parallel_size vLLM accepts; fp8 weights for a 16-bit checkpoint, on fewer GPUs
    than that TP; the smallest shipped GPU with more memory that fits; fewer concurrent requests; a shorter
    max_model_len. Only changes that fit are returned."""
    out: list[Suggestion | None] = []
    if s.request_len > min(m.max_len_limit, field_bounds("max_model_len")[1]):
        return ()  # no max_model_len the model (or this planner) accepts admits the request (the verdict says so)
    if s.max_model_len > m.max_len_limit:  # vLLM refuses to start: every option needs the model's limit
        s = s.model_copy(update={"max_model_len": m.max_len_limit})
        out.append(_try(s, m, g, f"max_model_len={m.max_len_limit} (the model's maximum)"))
    if s.request_len > s.max_model_len:  # every option also needs a max_model_len that admits the request
        s = s.model_copy(update={"max_model_len": s.request_len})
        out.append(_try(s, m, g, f"max_model_len={s.request_len}"))
    original = s
    needed: dict = {}  # what vLLM needs to start at all, carried by every other option
    if budget_refused(s.engine, s.max_num_batched_tokens, s.max_num_seqs):
        needed["max_num_batched_tokens"] = s.max_num_seqs
    if dtype_refusal(s.dtype, g.arch, s.engine):  # no kernel (or no bf16) on this GPU: the checkpoint's own weights
        needed["dtype"] = "auto"
    if spec_refusal(s, m):  # a draft this engine, layout or checkpoint cannot plan: without it
        needed["speculative_method"] = "none"
    if needed:
        s = s.model_copy(update=needed)
        label = " + ".join(f"{k}={v}" for k, v in needed.items())
        why = "what vLLM needs to start" if s.engine == "vllm" else "what SGLang needs to start, or this plan to size it"
        out.append(_try(s, m, g, f"{label} ({why})", **needed))
    if out and out[-1] is not None and out[-1].fits:  # the change every option needs is enough alone
        return (out[-1],)
    if needed:  # the other options carry what lets vLLM start
        options = tuple(replace(x, change=f"{x.change} + {label}", fields={**needed, **x.fields})
                        if needed.keys() - x.fields.keys() else x for x in _options(s, m, g, gpus, out))  # fmt: skip
        return options + _gpu_keeping_dtype(original, m, g, gpus, {k: v for k, v in needed.items() if k != "dtype"})
    return _options(s, m, g, gpus, out) or _combined(s, m, g, gpus)


def _fp8_kv_helps(s: Scenario, m: ModelSpec, g: GPUSpec) -> bool:
    """An fp8 KV cache is a change worth offering: from the 16-bit cache, or from an nvfp4 one this GPU or release
    refuses (a served nvfp4 cache already holds more)."""
    return s.kv_cache_dtype == "auto" or (s.kv_cache_dtype == "nvfp4" and bool(
        kv_dtype_refusal("nvfp4", m, g, s.engine, s.engine_version)))  # fmt: skip


def _combined(s: Scenario, m: ModelSpec, g: GPUSpec, gpus: dict[str, GPUSpec]) -> tuple[Suggestion, ...]:
    """Where no one change fits: the fp8 KV cache with each larger tensor_parallel_size, fp8 weights or the smallest
    larger GPU, and each structural change (those, and the ones alone) with as many concurrent requests as it then
    holds. The best whole fit (fewest GPUs) and the change that keeps the most requests, each its numbers."""
    kv = {"kv_cache_dtype": "fp8"} if _fp8_kv_helps(s, m, g) else {}
    kv_label = " + fp8 KV cache (kv_cache_dtype=fp8)" if kv else ""
    tries: list[tuple[str, dict, GPUSpec]] = [("fp8 KV cache (kv_cache_dtype=fp8)", kv, g)] if kv else []
    for tp in (2, 4, 8, 16):
        if tp > s.tensor_parallel_size and g.node_holds(tp * s.pipeline_parallel_size * linked_ranks(s, m)):
            tries += [(f"tensor_parallel_size={tp}{kv_label}", {"tensor_parallel_size": tp, **kv}, g),
                      (f"tensor_parallel_size={tp}", {"tensor_parallel_size": tp}, g)]  # fmt: skip
    if s.dtype in ("auto", "bf16", "fp16") and m.quantization_config is None:
        tries.append((f"fp8 weights (dtype=fp8){kv_label}", {"dtype": "fp8", **kv}, g))
    bigger = sorted((gg.memory_gib, gid) for gid, gg in gpus.items() if gg.memory_gib > g.memory_gib)
    if bigger:
        gid = bigger[0][1]
        tries.append((f"gpu={gid} ({gpus[gid].memory_gib:g} GiB){kv_label}", {**other_gpu_fields(s, gid), **kv}, gpus[gid]))
    whole, fewer = [], []
    for label, fields, gg in tries:
        sug = _try(s, m, gg, label, **fields)
        if sug is None:
            continue
        gpus_n = fields.get("tensor_parallel_size", s.tensor_parallel_size)
        if sug.fits:
            whole.append((gpus_n, len(sug.fields), sug))
        elif 0 < sug.max_concurrency_at_length < s.concurrency:
            n = sug.max_concurrency_at_length
            less = _try(s, m, gg, f"{label} + concurrency={n}", **fields, concurrency=n)
            if less is not None and less.fits:
                fewer.append((gpus_n, -n, len(less.fields), less))
    best = [min(whole, key=lambda x: x[:2])] if whole else []
    cheaper = [x for x in fewer if not best or x[0] < best[0][0]]  # fewer GPUs than the whole fit, fewer requests
    if cheaper:
        best.append(min(cheaper, key=lambda x: x[1:3]))
    return tuple(x[-1] for x in best)


def _gpu_keeping_dtype(s: Scenario, m: ModelSpec, g: GPUSpec, gpus: dict[str, GPUSpec], carry: dict) -> tuple:
    """Where the weights' precision has no kernel on this GPU, the smallest GPU that has one and fits, the
    precision kept (fp8 on an L4 rather than 16-bit weights on a T4)."""
    if not checkpoint_refusal(s.dtype, m, g.arch, s.engine):
        return ()
    for _, gid in sorted((gg.memory_gib, gid) for gid, gg in gpus.items() if gid != s.gpu):
        if checkpoint_refusal(s.dtype, m, gpus[gid].arch, s.engine):
            continue
        sug = _try(s.model_copy(update=carry), m, gpus[gid], f"gpu={gid} ({gpus[gid].memory_gib:g} GiB), "
                   f"dtype={s.dtype} kept", **carry, **other_gpu_fields(s, gid))  # fmt: skip
        if sug and sug.fits:
            return (sug,)
    return ()


def _options(s: Scenario, m: ModelSpec, g: GPUSpec, gpus: dict[str, GPUSpec], out: list) -> tuple[Suggestion, ...]:
    """The options beside the changes every option needs (already in `out`): suggest's list, those that fit."""
    base_mem = size_pool(s, m, g)
    longest = base_mem.estimated_max_model_len
    if base_mem.max_concurrency < 1 and s.request_len <= longest < s.max_model_len:  # vLLM refuses this length alone
        out.append(_try(s, m, g, f"max_model_len={longest} (the longest the pool admits: vLLM's own estimate)",
                        max_model_len=longest))  # fmt: skip
    if _fp8_kv_helps(s, m, g):
        out.append(_try(s, m, g, "fp8 KV cache (kv_cache_dtype=fp8)", kv_cache_dtype="fp8"))
    if s.kv_cache_dtype != "nvfp4" and not kv_dtype_refusal("nvfp4", m, g, s.engine, s.engine_version):
        out.append(_try(s, m, g, "nvfp4 KV cache (kv_cache_dtype=nvfp4)", kv_cache_dtype="nvfp4"))
    tp_fix = None
    for tp in (2, 4, 8, 16):
        if tp > s.tensor_parallel_size and g.node_holds(tp * s.pipeline_parallel_size * linked_ranks(s, m)):
            sug = _try(s, m, g, f"tensor_parallel_size={tp}", tensor_parallel_size=tp)
            if sug and sug.fits:
                out.append(sug)
                tp_fix = tp
                break
    if s.dtype in ("auto", "bf16", "fp16") and m.quantization_config is None:  # a 16-bit checkpoint, fp8 on the fly
        for tp in (1, 2, 4, 8, 16):
            if tp < s.tensor_parallel_size or (tp_fix is not None and tp >= tp_fix) or \
                    (tp > s.tensor_parallel_size and not g.node_holds(tp * s.pipeline_parallel_size * linked_ranks(s, m))):  # fmt: skip
                continue  # fewer GPUs than the TP fix, or none of it
            more = {"tensor_parallel_size": tp} if tp != s.tensor_parallel_size else {}
            label = "fp8 weights (dtype=fp8)" + (f" + tensor_parallel_size={tp}" if more else "")
            sug = _try(s, m, g, label, dtype="fp8", **more)
            if sug and sug.fits:
                out.append(sug)
                break
    bigger = sorted((gg.memory_gib, gid) for gid, gg in gpus.items() if gg.memory_gib > g.memory_gib)
    for _, gid in bigger:  # another GPU keeps none of the overrides meant for this one
        sug = _try(s, m, gpus[gid], f"gpu={gid} ({gpus[gid].memory_gib:g} GiB)", **other_gpu_fields(s, gid))
        if sug and sug.fits:
            out.append(sug)
            break
    base = fit_workload(as_sglang_runs(s, m, base_mem), m, base_mem)
    c = s.rank_concurrency
    capped = s.engine == "sglang" and base_mem.state_slots  # a hybrid's cap is SGLang's, not max_num_seqs's to raise
    if s.max_num_seqs < c <= field_bounds("max_num_seqs")[1] and not capped:  # the queue, not the pool
        budget = {"max_num_batched_tokens": c} if c > s.max_num_batched_tokens else {}  # vLLM's rule: budget ≥ seqs
        out.append(_try(s, m, g, f"max_num_seqs={c}", max_num_seqs=c, **budget))
    if 0 < base.max_concurrency_at_length < s.concurrency and s.request_len <= s.max_model_len:
        out.append(_try(s, m, g, f"concurrency={base.max_concurrency_at_length}",
                        concurrency=base.max_concurrency_at_length))  # fmt: skip
    return tuple(x for x in out if x is not None and x.fits)
