"""SGLang's pools for a hybrid model (Mamba, gated-DeltaNet or KDA layers beside attention): the memory its fraction
leaves is split between the layers' per-request state and the attention KV, and the state slots cap the running
requests (model_runner_kv_cache_mixin / pool_configurator of the 0.5.4–0.5.15 wheels; history (27)):

    rest  = mem_fraction_static · (memory free before loading) − weights          (calc.pool, SGLang's profile)
    M     = ⌊rest · r / (1 + r) / state per request⌋   request slots, r = mamba_full_memory_ratio = 0.9
    T     = ⌊(rest − M · state per request) / KV bytes a token of the attention layers⌋   (max_total_num_tokens)
    cap   = min(--max-running-requests, M // ratio)    ratio 5 in 0.5.7–0.5.9 and from 0.5.14 (extra_buffer), else 3

The state per request is SGLang's: conv in bf16, the SSM state in fp32 unless the checkpoint names its dtype.
Massed Compute's Nemotron-3-Nano-30B servers logged M = 81 and 248, 16 and 49 running (internal_states).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine_spec import version_tuple
from calc.state import state_shape
from calc.units import DTYPE_BYTES

MAMBA_FULL_MEMORY_RATIO = 0.9


@dataclass(frozen=True)
class MambaPools:
    slots: int
    """M: requests whose state the Mamba pool holds (max_mamba_cache_size)."""
    running_cap: int
    """M // ratio: the most requests SGLang runs at once, whatever --max-running-requests asks."""
    kv_tokens: int
    """T: the attention KV pool in tokens (max_total_num_tokens)."""
    state_bytes: float
    """One request's state on one GPU, SGLang's dtypes."""
    ratio: int


def mamba_ratio(version: str) -> int:
    """Slots a running request takes (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3, + 2 for the extra buffer the
    overlap schedule keeps: the default in 0.5.7–0.5.9 and again from 0.5.14)."""
    release = version_tuple(version) or (0, 5, 15)
    return 5 if (0, 5, 7) <= release[:3] < (0, 5, 10) or release[:3] >= (0, 5, 14) else 3


def sglang_state_bytes(m, *, tp: int, layers: range | None = None) -> float:
    """One request's state on one GPU as SGLang stores it: each state layer's conv state in bf16, its SSM state in
    fp32 unless the checkpoint names a dtype (mamba_ssm_dtype)."""
    shape = state_shape(m, tp=tp, model_bytes=DTYPE_BYTES["bf16"])
    if shape is None:
        return 0.0
    named = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(m.mamba_ssm_cache_dtype or "float32", "fp32")
    ssm = DTYPE_BYTES[named]
    per_layer = shape.conv_elements * DTYPE_BYTES["bf16"] + shape.ssm_elements * ssm
    return per_layer * m.plan.state(layers)


def state_split(rest_bytes: float, state_bytes: float) -> tuple[int, float]:
    """(M, KV bytes): the request slots of state SGLang carves from what its fraction leaves, ⌊rest · r / (1 + r) /
    state⌋, and what remains for the attention KV, rest − M · state."""
    if state_bytes <= 0 or rest_bytes <= 0:
        return 0, rest_bytes
    slots = int(rest_bytes * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO) // state_bytes)
    return slots, rest_bytes - slots * state_bytes


def mamba_pools(s, m, mem) -> MambaPools | None:
    """SGLang's split of a hybrid model's pool as calc.pool sized it (`mem`: its PoolResult, whose KV pool is already
    what the state slots leave); None for other models or engines, or where nothing is left."""
    if s.engine != "sglang" or not mem.state_slots:
        return None
    slots = mem.running_slots  # the fewest of any pipeline stage (state_slots: the KV-bound stage's)
    ratio = mamba_ratio(s.engine_version)
    tokens = mem.pool_token_capacity  # the pool in whole blocks, as the plan's "GPU KV cache size" counts it
    return MambaPools(slots, slots // ratio, tokens, mem.state_pool_bytes / mem.state_slots, ratio)


def running_limit(s, mem) -> str:
    """The running-request limit a plan runs, named: 'max_num_seqs N', or under SGLang, where a hybrid's state slots
    cap it (calc.evaluate plans what SGLang runs), 'SGLang's running-request cap N (M state slots // ratio)'."""
    slots = mem.running_slots
    if s.engine == "sglang" and slots and s.max_num_seqs == max(1, slots // mamba_ratio(s.engine_version)):
        return (f"SGLang's running-request cap {s.max_num_seqs:,} (its {slots:,} state slots // "
                f"{mamba_ratio(s.engine_version)}, whatever max_num_seqs asks)")  # fmt: skip
    return f"max_num_seqs {s.max_num_seqs:,}"


def as_sglang_runs(s, m, mem):
    """The scenario with max_num_seqs at most what SGLang runs of this hybrid model on this pool (its state slots //
    ratio, at least 1: a cap of 0 is a refusal, calc.workload.start_refusal); the scenario itself otherwise."""
    pools = mamba_pools(s, m, mem)
    if pools is None or s.max_num_seqs <= pools.running_cap:
        return s
    return s.model_copy(update={"max_num_seqs": max(1, pools.running_cap)})
