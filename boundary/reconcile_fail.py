"""A start that failed for memory: what vLLM logged, and the changes that would make the model fit.

vLLM refuses to start when the pool cannot hold one max_model_len request: V1 logs "Available KV cache memory: -1.27
GiB" (nothing left after weights, activations and non-torch memory: "No available memory for the cache blocks") or
"X GiB KV cache is needed, which is larger than the available KV cache memory (A GiB)"; V0 logs "max seq len (L) is
larger than the maximum number of tokens that can be stored in KV cache (N)".

Each fix is judged from the log's own pool A plus the planner's *difference* for the change (a shift the planner's
model predicts well even where its absolute overheads are off): `A' = A + (pool(changed) − pool(now))`, fits when
A' holds one request of max_model_len.
"""

from __future__ import annotations

from dataclasses import dataclass

from boundary.vllm_log import VllmLog
from calc.parallel_rules import tp_check
from calc.pool import PoolResult, size_pool
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.units import GiB

MAX_UTILIZATION = 0.98  # above this the CUDA context and allocator fragmentation have no room


@dataclass(frozen=True)
class StartFailure:
    message: str
    """'this model does not fit: vLLM logged −1.27 GiB available for the KV cache …'"""
    fixes: tuple[str, ...]
    """Changes that would make one max_model_len request fit, each with its numbers."""


def _need(m: PoolResult, tokens: int) -> float:
    """Bytes one request of `tokens` tokens takes from the pool (the binding stage's layout)."""
    return m.blocks_per_request(tokens) * m.layout.block_bytes


def _longest(m: PoolResult, avail: float, upto: int) -> int:
    """Largest length whose request fits in `avail` bytes (vLLM's estimate_max_model_len), 0 if none."""
    lo, hi = 0, upto
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _need(m, mid) <= avail else (lo, mid - 1)
    return lo


def _logged_pool(log: VllmLog) -> float | None:
    """The smallest pool a worker logged, in bytes; the failure message's own figure first."""
    for key in ("error_available_gib", "available_kv_gib"):
        values = [m.value for m in log.get(key)]
        if values:
            return min(values) * GiB
    return None


def start_failure(log: VllmLog, s: Scenario, model: ModelSpec, gpu: GPUSpec) -> StartFailure | None:
    """None when the log shows a pool that holds a request (or no pool at all)."""
    failed = bool(log.get("error_available_gib") or log.get("seq_len_error_tokens") or log.get("kv_needed_gib"))
    avail = _logged_pool(log)
    if avail is None or (avail > 0 and not failed):
        return None
    logged_need = log.first("kv_needed_gib")  # its own length: "max seq len (221000), (10.12 GiB … is needed"
    L = logged_need.arg if logged_need and logged_need.arg else s.max_model_len
    base = s.model_copy(update={"kv_cache_memory_bytes": None, "max_model_len": L})
    now = size_pool(base, model, gpu)
    need = logged_need.value * GiB if logged_need else _need(now, L)
    said = f"this model does not fit: vLLM logged {avail / GiB:.2f} GiB available for the KV cache"
    logged_len = log.first("estimated_max_model_len") or log.first("seq_len_error_tokens")  # V1 estimate, V0 tokens
    shorter = f"max_model_len={int(logged_len.value):,} or less (vLLM's own figure)" if logged_len else ""
    if avail > need:  # the log failed at a length the planner was not given: only the log's own estimate is sure
        return StartFailure(f"{said} (less than one max_model_len request needs)",
                            tuple(x for x in (shorter, f"pass the log's --max-model-len (the planner assumed {L:,}) "
                                                       "to size the other fixes") if x))  # fmt: skip
    if avail <= 0:
        what = "nothing is left for the KV cache after weights, activations and non-torch memory"
        shorter = ("a shorter max_model_len or an fp8 KV cache cannot help alone: they shrink the need, not the "
                   "memory the weights and activations already take")  # fmt: skip
    else:
        what = f"one {L:,}-token request needs {need / GiB:.2f} GiB"
        longest = _longest(now, avail, L)
        shorter = shorter or (
            f"max_model_len={longest:,} or less (the longest request that pool holds)" if longest else ""
        )
    fixes = [_utilization_fix(s, now, avail, need), shorter]
    fixes += [_judged(base, model, gpu, now, avail, change) for change in _changes(s, model)]
    return StartFailure(f"{said} ({what})", tuple(f for f in fixes if f))


def _utilization_fix(s: Scenario, now: PoolResult, avail: float, need: float) -> str:
    wanted = s.gpu_memory_utilization + (need - avail) / now.total_memory_bytes
    if wanted <= MAX_UTILIZATION:
        return f"gpu_memory_utilization={min(wanted + 0.005, MAX_UTILIZATION):.2f} (now {s.gpu_memory_utilization:g})"
    return (f"raising gpu_memory_utilization cannot do it on this GPU alone (it would need {wanted:.2f}; "
            f"{MAX_UTILIZATION} is the practical ceiling)")  # fmt: skip


def _changes(s: Scenario, model: ModelSpec) -> list[dict]:
    """fp8 KV cache; the next tensor_parallel_size vLLM accepts (2, 4, 8); fp8 weights for 16-bit checkpoints."""
    out: list[dict] = []
    if s.kv_cache_dtype != "fp8":
        out.append({"kv_cache_dtype": "fp8"})
    for tp in (2, 4, 8):
        if tp > s.tensor_parallel_size and not tp_check(s.model_copy(update={"tensor_parallel_size": tp}), model):
            out.append({"tensor_parallel_size": tp})
            break
    if s.dtype in ("auto", "bf16", "fp16") and model.quantization_config is None:
        out.append({"dtype": "fp8"})
    return out


def _judged(base: Scenario, model: ModelSpec, gpu: GPUSpec, now: PoolResult, avail: float, change: dict) -> str:
    after = size_pool(base.model_copy(update=change), model, gpu)
    pool = avail + (after.kv_cache_memory_bytes - now.kv_cache_memory_bytes)
    need = _need(after, base.max_model_len)
    name = ", ".join(f"{k}={v}" for k, v in change.items())
    if pool <= 0:
        return ""  # still nothing left: not a fix
    verdict = "fits" if pool >= need else "not enough alone"
    return f"{name}: about {pool / GiB:.2f} GiB for the KV cache, {need / GiB:.2f} GiB needed per request ({verdict})"
