"""What is missing when a plan does not fit, and by how much (per GPU); and what the workload takes of the pool.

    usable              = total · gpu_memory_utilization                      (what the engine may use)
    weights over        = weights per GPU − usable                            (> 0: the weights alone do not fit)
    start missing       = blocks of one max_model_len request · block bytes − available KV memory
                          (> 0: vLLM refuses to start: "… is larger than the available KV cache memory")
    workload missing    = running · blocks per request · block bytes − available KV memory   (running: concurrency,
                          at most max_num_seqs; the rest wait in the queue)
                          (> 0: the requests do not fit at once; vLLM preempts)
    pool used           = running · blocks per request · block bytes, of which state = running · state bytes
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.pool import PoolResult
from calc.scenario import Scenario
from calc.workload import WorkloadFit


@dataclass(frozen=True)
class Shortfall:
    usable_bytes: float
    """Memory the engine may use on each GPU: total · gpu_memory_utilization."""
    weights_over_bytes: float
    """Weights per GPU beyond the usable memory (0 when they fit)."""
    engine_starts: bool
    """One request of max_model_len tokens fits the pool (vLLM's start-up check), and nothing else makes vLLM
    refuse to start (WorkloadFit.refused)."""
    start_missing_bytes: float
    """KV memory per GPU missing for one max_model_len request (0 when the engine starts)."""
    start_missing_blocks: int
    serves: bool
    """The engine starts and at least one request of input_len + output_len tokens is admitted."""
    workload_missing_bytes: float
    """KV memory per GPU missing for the requests running at once (0 when they fit)."""
    workload_missing_blocks: int
    pool_used_bytes: float
    """What the requests running at once (concurrency, at most max_num_seqs) take of the pool on each GPU."""
    state_used_bytes: float
    """The Mamba / linear-attention state among them (hybrid models; 0 otherwise)."""
    kv_used_bytes: float
    """pool_used_bytes − state_used_bytes: the attention KV the requests hold."""
    pool_free_bytes: float
    """What the requests leave of the pool (0 when they overflow it, or there is none)."""
    rest_of_usable_bytes: float
    """usable − available KV memory: what weights, activations, non-torch memory and CUDA graphs take of the usable
    memory by vLLM's profile (negative when a pool set by kv_cache_memory_bytes exceeds the usable memory)."""


def shortfall(s: Scenario, mem: PoolResult, fit: WorkloadFit) -> Shortfall:
    block = mem.layout.block_bytes
    avail = mem.kv_cache_memory_bytes
    start_blocks = max(0, mem.blocks_per_max_len_request - mem.num_gpu_blocks)
    pool_starts = mem.num_gpu_blocks > 0 and start_blocks == 0
    starts = pool_starts and not fit.refused
    load_blocks = max(0, fit.blocks_needed - mem.num_gpu_blocks)
    running = min(s.rank_concurrency, s.max_num_seqs)
    return Shortfall(
        usable_bytes=mem.requested_memory_bytes,
        weights_over_bytes=max(0.0, mem.weights_bytes_per_gpu - mem.requested_memory_bytes),
        engine_starts=starts,
        start_missing_bytes=max(0.0, mem.blocks_per_max_len_request * block - avail) if not pool_starts else 0.0,
        start_missing_blocks=start_blocks if not pool_starts else 0,
        serves=starts and fit.max_concurrency_at_length >= 1,
        workload_missing_bytes=max(0.0, fit.blocks_needed * block - avail) if load_blocks else 0.0,
        workload_missing_blocks=load_blocks,
        pool_used_bytes=fit.blocks_needed * block,
        state_used_bytes=running * mem.state_bytes_per_request,  # those running; the queue holds none
        kv_used_bytes=fit.blocks_needed * block - running * mem.state_bytes_per_request,
        pool_free_bytes=max(0.0, avail - fit.blocks_needed * block),
        rest_of_usable_bytes=mem.requested_memory_bytes - avail,
    )
