"""KV beyond the GPU: swap vs recompute, and cache tiers (the Italian seed, "Quando la memoria finisce").

    t_recompute ≈ 2·N_p·L / P_eff        t_swap ≈ L·m_kv / B_host        ratio = 2·N_p·B_host / (P_eff·m_kv)
7e9 parameters, 25 GB/s, 5e14 FLOP/s: 1.3 with 512 KiB/token (MHA), 5.3 with 128 KiB/token (GQA-8); counting the
way out too (no overlap) 0.67 and 2.7. The closed form holds above the roofline knee (below it recompute costs at
least a weight read) and below the attention crossover (above it recompute grows faster than L, and keeping wins
more). Here recompute is the full prefill model (weight-read floor, quadratic attention), swap is per GPU over
its own host link.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine_cycle import prefill_terms
from calc.latency import LatencyResult
from calc.pool import PoolResult, request_cache_bytes
from calc.roofline import attention_crossover_tokens
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.units import GB, GiB
from calc.work import block_flop_per_token, streamed_weight_bytes


def swap_recompute_ratio_closed_form(*, params: float, host_bytes_per_s: float, effective_flop_per_s: float,
                                     kv_bytes_per_token: float, both_ways: bool = False) -> float:  # fmt: skip
    ratio = 2 * params * host_bytes_per_s / (effective_flop_per_s * kv_bytes_per_token)
    return ratio / 2 if both_ways else ratio


def recompute_s(s: Scenario, lat: LatencyResult, tokens: int) -> float:
    """One prefill of `tokens` context tokens on this replica, in chunks of the step budget (the step model)."""
    if tokens <= 0:
        return 0.0
    return prefill_terms(lat.step, tokens, budget=s.max_num_batched_tokens)[0].total_s


def cache_bytes(mem: PoolResult, lat: LatencyResult, tokens: float) -> float:
    """One request's cache of `tokens` tokens on one GPU as the engine holds it [bytes]: each kind of layer's KV up to
    its window (StepModel.kv_read: a sliding-window layer keeps at most its window, as the pool does), plus its
    recurrent state (calc.pool.request_cache_bytes with the step model's kv_read)."""
    return request_cache_bytes(mem, tokens, lat.step.kv_read)


@dataclass(frozen=True)
class SwapPoint:
    context: int
    recompute_s: float
    swap_s: float
    ratio: float


@dataclass(frozen=True)
class Tier:
    name: str
    bandwidth_bytes_per_s: float
    reload_s: float
    """Bring back a prefix of input_len tokens."""
    recompute_s: float
    worth_keeping: bool
    break_even_bytes_per_s: float
    """Bandwidth at which reloading and recomputing this prefix cost the same."""
    capacity_tokens: float
    """Prompt tokens the tier holds: per-GPU capacity / one prompt's cache (KV and state) × input_len; the GPU's,
    without per-request state, vLLM's "GPU KV cache size" (blocks × block_size)."""


@dataclass(frozen=True)
class OffloadResult:
    host_bytes_per_s: float
    swap_s: float
    """Swap a context of input_len + output_len tokens back in (and out too, without overlap)."""
    recompute_s: float
    swap_recompute_ratio: float
    """recompute_s / swap_s, one way: > 1 means swapping wins."""
    swap_recompute_ratio_both_ways: float
    winner: str
    knee_tokens: float
    """Below this prompt length a prefill is bandwidth-bound and recompute costs at least a weight read."""
    attention_crossover_tokens: float
    closed_form_valid: bool
    curve: tuple[SwapPoint, ...]
    tiers: tuple[Tier, ...]
    closed_form_ratio: float = 0.0
    """The seed's closed form, one way: 2·N_p·B_host / (P_eff·m_kv) per GPU (N_p the active parameters over TP · PP,
    P_eff the GPU's effective FLOP/s, m_kv its KV bytes a token); recompute_s / swap_s is the full prefill model's."""


def offload(s: Scenario, m: ModelSpec, g: GPUSpec, mem: PoolResult, lat: LatencyResult) -> OffloadResult:
    host = g.host_link_bytes_per_s
    L = s.request_len
    way = 1 if s.swap_overlap else 2
    rec = recompute_s(s, lat, L)
    sw = cache_bytes(mem, lat, L) / host
    knee = (
        lat.ridge_flop_per_byte
        * streamed_weight_bytes(m, mem.params, mem.weight_format, tokens=1)
        / block_flop_per_token(mem.params)
    )
    width = (m.num_attention_heads or 0) * (m.kv_head_dim if not m.is_mla else m.v_head_dim)  # type: ignore[operator]
    n_attn = m.plan.attention()
    cross = (attention_crossover_tokens(params=mem.params.blocks_active, num_layers=n_attn, attn_width=width)
             if n_attn and width else float("inf"))  # fmt: skip
    curve = []
    for c in sorted({int(x) for x in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
                     if x <= max(s.max_model_len, 4096)}):  # fmt: skip
        r, w = recompute_s(s, lat, c), cache_bytes(mem, lat, c) / host * way
        curve.append(SwapPoint(c, r, w, r / w))
    tiers = []
    prefix_rec = recompute_s(s, lat, s.input_len)
    prefix_bytes = cache_bytes(mem, lat, s.input_len)

    def held(cap_bytes: float) -> float:
        return max(0.0, cap_bytes) / prefix_bytes * s.input_len

    # the GPU's tier holds what vLLM's "GPU KV cache size" says (blocks × block_size), where no state counts per prompt
    gpu_tokens = held(mem.kv_cache_memory_bytes) if mem.state_bytes_per_request else float(mem.kv_cache_tokens)
    links = (
        ("GPU memory (HBM)", g.memory_bandwidth_bytes_per_s, gpu_tokens),
        ("host DRAM over PCIe", host, held(s.host_cache_gib * GiB)),
        ("local NVMe SSD", min(s.ssd_gb_per_s * GB, host), held(s.ssd_cache_gib * GiB)),
        ("remote memory over the network", min(s.network_gb_per_s * GB, host), held(s.remote_cache_gib * GiB)),
    )
    for name, bw, tokens in links:
        reload = prefix_bytes / bw
        tiers.append(Tier(name, bw, reload, prefix_rec, reload < prefix_rec, prefix_bytes / prefix_rec, tokens))
    return OffloadResult(
        host_bytes_per_s=host,
        swap_s=sw * way,
        recompute_s=rec,
        swap_recompute_ratio=rec / sw,
        swap_recompute_ratio_both_ways=rec / (2 * sw),
        winner="swap" if rec > sw * way and s.host_cache_gib > 0 else "recompute",  # no host cache: nowhere to go
        knee_tokens=knee,
        attention_crossover_tokens=cross,
        closed_form_valid=knee < L < cross,
        closed_form_ratio=swap_recompute_ratio_closed_form(
            params=mem.params.active / (s.tensor_parallel_size * s.pipeline_parallel_size), host_bytes_per_s=host,
            effective_flop_per_s=lat.step.effective_flop_per_s, kv_bytes_per_token=mem.kv_bytes_per_token_per_gpu)
        if mem.kv_bytes_per_token_per_gpu else 0.0,
        curve=tuple(curve),
        tiers=tuple(tiers),
    )
