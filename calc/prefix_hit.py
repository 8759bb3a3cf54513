"""What a shared system prompt saves each request's prefill: the prompt tokens it finds in vLLM's prefix cache.

    hit = ⌊min(shared_prefix_len, input_len − 1) / unit⌋ · unit     (unit: cache_block_tokens; 0 where none is reused)

A request computes input_len − hit prompt tokens, each attending to the hit before it as well (its attention pairs
hit·(L − hit) + (L − hit)(L − hit + 1)/2); the hit is still context for its decode steps. vLLM hashes whole blocks, and
always computes the prompt's last token (it needs its logits). The closed forms (calc.engine_cycle, calc.search_step)
and the simulation (calc.bench.engine_config) take the same hit."""

from __future__ import annotations

import numpy as np

from calc.engine_spec import version_tuple
from calc.kv_cache import ALIGN_MODE_SINCE
from calc.pool import PoolResult
from calc.scenario import Scenario


def cache_block_tokens(s: Scenario, mem: PoolResult) -> int:
    """Tokens of one prefix-cache block, the unit a shared prefix is reused in: block_size, × dcp under decode context
    parallelism (vLLM hashes blocks of block_size · dcp tokens, one block a GPU); 0 where the engine reuses no prefix
    for this model: a vLLM hybrid (its state is in the pool) without enable_prefix_caching, or before 0.15, whose
    Gated DeltaNet and Mamba states had no align mode (calc.kv_cache.state_blocks)."""
    if mem.state_bytes_per_request and not reuses_state(s):
        return 0
    return mem.block_size * s.decode_context_parallel_size


def reuses_state(s: Scenario) -> bool:
    """Whether the engine reuses a prefix of a model with per-request state: SGLang, or vLLM with
    enable_prefix_caching from 0.15 (the state's align mode)."""
    if s.engine != "vllm":
        return True
    version = version_tuple(s.engine_version)
    return s.enable_prefix_caching and (version is None or version[:2] >= ALIGN_MODE_SINCE)


def hit_array(s: Scenario, block_size, state_bytes_per_request) -> np.ndarray:
    """prefix_hit over the search's configurations (calc.search_pool.PoolArrays' block sizes and state bytes)."""
    unit = np.asarray(block_size, dtype=np.int64) * s.decode_context_parallel_size
    if not reuses_state(s):
        unit = np.where(np.asarray(state_bytes_per_request) > 0, 0, unit)
    return np.asarray(hit_tokens(s.shared_prefix_len, s.input_len, unit), dtype=float)


def hit_tokens(shared_prefix_len: int, input_len: int, unit) -> int:
    """The prompt tokens every request after the first finds cached: whole units of the shared prefix, short of the
    prompt's last token; 0 without a prefix or a unit (scalars, or numpy arrays of units)."""
    if not shared_prefix_len:
        return 0 * unit
    return min(shared_prefix_len, input_len - 1) // (unit + (unit == 0)) * unit


def prefix_hit(s: Scenario, mem: PoolResult) -> int:
    """hit_tokens for the scenario's engine and pool."""
    return int(hit_tokens(s.shared_prefix_len, s.input_len, cache_block_tokens(s, mem)))
