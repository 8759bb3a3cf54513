"""calc.pool over a whole grid of configurations at once: blocks, vLLM's maximum concurrency, and the requests of
the scenario's lengths each configuration holds.

What does not depend on the GPU's memory — each stage's layer layout and bytes per block, weights per stage, the
activation peak — comes from the scalar code (calc.kv_cache, calc.weights, calc.overheads) once per distinct
(TP, PP, precision, KV dtype, block size the GPU's attention backend forces); the memory arithmetic is the same as
size_pool's, operation for operation, over arrays:

    available_k = memory · utilization − weights_k − activation peak − non-torch [− CUDA graphs]   (stage k)
    blocks      = min_k ⌊available_k / block bytes_k⌋        (0 where nothing is left)
    max_concurrency = blocks / blocks per max_model_len request (of the stage with the fewest blocks)
    requests at length = min(⌊blocks / blocks per (input_len + output_len) request⌋, max_num_seqs)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calc.kv_cache import forced_block_size, kv_bytes_per_token_expr, mla_arch, pp_layer_ranges
from calc.overheads import activation_peak_bytes, cudagraph_bytes, graphs_subtracted, non_torch_bytes
from calc.params import count_params
from calc.pool import kv_bytes_per_element, measured_at, stage_layouts, whole_model_layout, whole_model_release
from calc.precision_support import dtype_refusal, kv_dtype_refusal
from calc.scenario import Scenario
from calc.search_space import Grid
from calc.sglang_hybrid import MAMBA_FULL_MEMORY_RATIO, mamba_ratio, sglang_state_bytes
from calc.weights import weight_format, weights_bytes_per_stage
from calc.workload import budget_refused

NO_STAGE = np.iinfo(np.int64).max  # blocks of a stage a shallower pipeline does not have: never the minimum


@dataclass(frozen=True)
class PoolArrays:
    """One entry per configuration of the grid."""

    num_gpu_blocks: np.ndarray
    max_concurrency: np.ndarray
    """vLLM's 'Maximum concurrency for max_model_len tokens per request'."""
    max_concurrency_at_length: np.ndarray
    """Requests of input_len + output_len tokens held at once, capped by max_num_seqs (0: the engine would not
    start, or a request exceeds max_model_len)."""
    kv_cache_memory_bytes: np.ndarray
    weights_bytes_per_gpu: np.ndarray
    kv_bytes_per_token_per_gpu: np.ndarray
    state_bytes_per_request: np.ndarray
    block_size: np.ndarray
    pool_beyond_gpu: np.ndarray
    """kv_cache_memory_bytes and the weights exceed the GPU's memory: vLLM cannot allocate that pool, and refuses to
    start (calc.workload.fit_workload's refusal)."""
    running_cap: np.ndarray
    """Under SGLang, a hybrid's state slots // ratio: the most requests it runs, whatever max_num_seqs asks (the
    int64 maximum where nothing caps them)."""
    sglang_short: np.ndarray
    """Under SGLang, the activation peak and CUDA graphs exceed the rest of the GPU its fraction leaves: it runs out of
    memory at its first large step (calc.evaluate.sglang_rest_short_bytes > 0)."""
    whole_model_refused: np.ndarray | None = None
    """vLLM 0.14–0.15 at PP > 1: the whole model's request exceeds one stage's pool, so those releases refuse to start
    (calc.pool.PP_WHOLE_MODEL_CHECK)."""


def _blockings(m, s: Scenario, grid: Grid, gpus) -> tuple[np.ndarray, list]:
    """Per GPU of the space, an index into the distinct block sizes its attention backend forces; a representative
    GPU for each (the layout depends on the GPU through that block size only)."""
    sizes: dict[int, object] = {}
    which = []
    for gid in grid.space.gpus:
        size = forced_block_size(m, requested=s.block_size, arch=mla_arch(gpus[gid]))[0]
        sizes.setdefault(size, gpus[gid])
        which.append(list(sizes).index(size))
    return np.array(which, dtype=np.intp), list(sizes.values())


def pool_arrays(s: Scenario, m, gpus, grid: Grid) -> PoolArrays:
    """`gpus`: spec id → GPUSpec as planned (the scenario's own GPU with its overrides)."""
    sp = grid.space
    params = count_params(m)
    pps = [pp for _, pp in grid.parallel]
    depth = max(pps)
    # --- scalar tables, one entry per distinct combination ----------------------------------------------------
    weights = np.zeros((len(grid.parallel), len(grid.dtypes), depth))
    def measured(key: str, tp: int, pp: int = s.pipeline_parallel_size, dtype: str = s.dtype, seqs: int = s.max_num_seqs,
                 budget: int = s.max_num_batched_tokens) -> float | None:  # fmt: skip
        """The scenario's measurement of `key` moved to this configuration (calc.pool.measured_at), or None."""
        return measured_at(s, m, tp=tp, pp=pp, dtype=dtype, max_num_seqs=seqs, max_num_batched_tokens=budget).get(key)

    for j, (tp, pp) in enumerate(grid.parallel):
        for d, dt in enumerate(grid.dtypes):
            per_stage = weights_bytes_per_stage(m, params, weight_format(m, dt), tp=tp, pp=pp)
            if s.weights_memory_bytes is not None:
                per_stage = [measured("weights_memory_bytes", tp, pp, dt)] * pp
            weights[j, d, :pp] = per_stage
    act = np.zeros((len(grid.parallel), len(sp.max_num_seqs), len(sp.max_num_batched_tokens)))
    for j, (tp, _) in enumerate(grid.parallel):
        for i, seqs in enumerate(sp.max_num_seqs):
            for b, budget in enumerate(sp.max_num_batched_tokens):
                act[j, i, b] = measured("activation_memory_bytes", tp, seqs=seqs, budget=budget) \
                    if s.activation_memory_bytes is not None else \
                    activation_peak_bytes(m, max_num_batched_tokens=budget, max_num_seqs=seqs, tp=tp,
                                          max_model_len=s.max_model_len)  # fmt: skip
    non_torch = np.array([measured("non_torch_memory_bytes", tp, pp) if s.non_torch_memory_bytes is not None else
                          non_torch_bytes(gpus_per_replica=tp * pp, engine=s.engine) for tp, pp in grid.parallel])  # fmt: skip
    graphs = np.array([measured("cudagraph_memory_bytes", tp) if s.cudagraph_memory_bytes is not None else
                       cudagraph_bytes(tp=tp, enforce_eager=s.enforce_eager) for tp, _ in grid.parallel])  # fmt: skip
    blocking, reps = _blockings(m, s, grid, gpus)
    shape = (len(grid.parallel), len(sp.kv_cache_dtypes), len(reps), depth)
    block_bytes, block_size, state = np.ones(shape), np.zeros(shape, dtype=np.int64), np.zeros(shape)
    per_max_len = np.zeros((*shape, len(sp.max_num_batched_tokens)), dtype=np.int64)
    per_request = np.ones_like(per_max_len)
    kv_gpu = np.zeros(shape[:2])
    whole_check = whole_model_release(s)  # vLLM 0.14–0.15: each PP > 1 group below is checked over the whole model
    whole = np.zeros((*shape[:3], len(sp.max_num_batched_tokens)))  # vLLM 0.14–0.15's start check at PP > 1
    sglang_state = np.zeros((len(grid.parallel), depth))  # SGLang's own state pool a request, per stage (hybrids)
    if s.engine == "sglang" and m.plan.state() and s.kv_cache_memory_bytes is None:
        for j, (tp, pp) in enumerate(grid.parallel):
            for q, layers in enumerate(pp_layer_ranges(m.num_hidden_layers, pp)):
                if m.plan.cached_attention(layers):
                    sglang_state[j, q] = sglang_state_bytes(m, tp=tp, layers=layers)
    for j, (tp, pp) in enumerate(grid.parallel):
        busiest = max(pp_layer_ranges(m.num_hidden_layers, pp), key=lambda r: m.plan.cached_attention(r) + m.plan.state(r))
        for k, kv in enumerate(sp.kv_cache_dtypes):
            t = s.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "kv_cache_dtype": kv})
            kv_gpu[j, k] = kv_bytes_per_token_expr(m, busiest, kv_bytes_per_element=kv_bytes_per_element(t), tp=tp).value
            for f, rep in enumerate(reps):
                if whole_check and pp > 1:
                    one = whole_model_layout(t, m, rep)
                    for b, budget in enumerate(sp.max_num_batched_tokens):
                        whole[j, k, f, b] = one.blocks_per_request(s.max_model_len, max_num_batched_tokens=budget) \
                            * one.block_bytes  # fmt: skip
                for q, lay in enumerate(stage_layouts(t, m, rep)):
                    block_bytes[j, k, f, q], block_size[j, k, f, q] = lay.block_bytes, lay.block_size
                    state[j, k, f, q] = lay.state_bytes_per_request
                    for b, budget in enumerate(sp.max_num_batched_tokens):
                        per_max_len[j, k, f, q, b] = lay.blocks_per_request(s.max_model_len, max_num_batched_tokens=budget)
                        per_request[j, k, f, q, b] = lay.blocks_per_request(s.request_len, max_num_batched_tokens=budget)
    memory = np.array([gpus[g].memory_bytes for g in sp.gpus])
    utils = np.array(sp.gpu_memory_utilizations)
    seqs_values = np.array(sp.max_num_seqs, dtype=np.int64)
    # --- per configuration ------------------------------------------------------------------------------------
    par, dt, kvi, bi, si, f = grid.par, grid.dtype, grid.kv, grid.budget, grid.seqs, blocking[grid.gpu]
    a, nt, cg = act[par, si, bi], non_torch[par], graphs[par]
    sglang = s.engine == "sglang"  # its fraction applies to what is free before loading; activations outside it
    requested = (memory[grid.gpu] - nt) * utils[grid.util] if sglang else memory[grid.gpu] * utils[grid.util]
    short = (memory[grid.gpu] - nt - requested < a + cg) if sglang and s.kv_cache_memory_bytes is None else \
        np.zeros(grid.size, dtype=bool)  # fmt: skip
    stages_pp = np.array(pps)[par]
    blocks_k, avail_k = np.empty((depth, grid.size), dtype=np.int64), np.empty((depth, grid.size))
    running_cap = np.full(grid.size, np.iinfo(np.int64).max)  # SGLang's M // ratio, the fewest over the stages
    for q in range(depth):
        if s.kv_cache_memory_bytes is not None:
            avail = np.full(grid.size, s.kv_cache_memory_bytes)
        else:
            avail = requested - weights[par, dt, q] if sglang else requested - weights[par, dt, q] - a - nt
            st = sglang_state[par, q]
            if st.any():  # the state slots SGLang carves first (calc.sglang_hybrid.state_split), elementwise
                ok = (st > 0) & (avail > 0)
                slots = np.floor(np.divide(avail * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO), st,
                                           out=np.zeros_like(avail), where=ok))  # fmt: skip
                avail = avail - np.where(ok, slots * st, 0.0)
                cap = np.where(st > 0, slots // mamba_ratio(s.engine_version), running_cap).astype(np.int64)
                running_cap = np.where(q < stages_pp, np.minimum(running_cap, cap), running_cap)
            if graphs_subtracted(s):
                avail = avail - cg
        bb = block_bytes[par, kvi, f, q]
        ok = (avail > 0) & (bb > 0)
        blocks = np.where(ok, np.floor_divide(avail, bb, where=ok, out=np.zeros_like(avail)), 0).astype(np.int64)
        blocks_k[q] = np.where(q < stages_pp, blocks, NO_STAGE)
        avail_k[q] = avail
    low = np.argmin(blocks_k, axis=0)
    cols = np.arange(grid.size)
    blocks = blocks_k[low, cols]
    per_max = per_max_len[par, kvi, f, low, bi]
    conc = np.divide(blocks, per_max, out=np.zeros(grid.size), where=per_max > 0)
    per = per_request[par, kvi, f, low, bi]
    held = np.minimum(np.floor_divide(blocks, per, out=np.zeros_like(blocks), where=per > 0), seqs_values[si])
    held = np.minimum(held, running_cap)  # a hybrid under SGLang runs no more than its state slots allow
    if s.request_len > s.max_model_len or s.max_model_len > m.max_len_limit:  # rejected, or no start
        held[:] = 0
    held[conc < 1] = 0
    whole_refused = np.zeros(grid.size, dtype=bool)
    if whole_check:  # the whole model's request against one stage's pool (calc.workload.start_refusal)
        whole_refused = whole[par, kvi, f, bi] > avail_k[low, cols]
        held[whole_refused] = 0
    held[budget_refused(s.engine, np.array(sp.max_num_batched_tokens, dtype=np.int64)[bi], seqs_values[si])] = 0
    refused = np.array([[bool(dtype_refusal(d, gpus[gid].arch, s.engine)) for d in grid.dtypes] for gid in sp.gpus])
    held[refused[grid.gpu, dt]] = 0  # no kernel, or no bf16, on that GPU: no start (calc.precision_support)
    held[kv_refused(s, m, gpus, sp)[grid.gpu, kvi]] = 0  # no kernel for that KV precision there
    beyond = np.zeros(grid.size, dtype=bool)
    if s.kv_cache_memory_bytes is not None:  # as size_pool's weights_bytes_per_gpu: the heaviest stage's
        beyond = s.kv_cache_memory_bytes + weights[par, dt].max(axis=1) > memory[grid.gpu]
        held[beyond] = 0
    return PoolArrays(num_gpu_blocks=blocks, max_concurrency=conc, max_concurrency_at_length=held,
                      kv_cache_memory_bytes=avail_k[low, cols], weights_bytes_per_gpu=weights[par, dt, low],
                      kv_bytes_per_token_per_gpu=kv_gpu[par, kvi], state_bytes_per_request=state[par, kvi, f, low],
                      block_size=block_size[par, kvi, f, low], pool_beyond_gpu=beyond, running_cap=running_cap,
                      sglang_short=short, whole_model_refused=whole_refused)  # fmt: skip


def kv_refused(s: Scenario, m, gpus, sp) -> np.ndarray:
    """[gpu, kv dtype]: the engine has no kernel for that KV-cache precision there (calc.precision_support)."""
    return np.array([[bool(kv_dtype_refusal(kv, m, gpus[gid], s.engine, s.engine_version)) for kv in sp.kv_cache_dtypes]
                     for gid in sp.gpus], dtype=bool).reshape(len(sp.gpus), len(sp.kv_cache_dtypes))  # fmt: skip
