"""A scenario's StepModel: what one engine step moves and computes per tensor-parallel rank, and the efficiencies
of its GPU (spec file) and engine (spec file). Weights are read from memory once per step whatever the batch; the
input embedding is a lookup and the vision tower runs on images only, so neither is streamed."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

from calc.engine_spec import EngineSpec, version_tuple
from calc.expert_parallel import expert_ranks
from calc.kv_cache import attention_bytes_per_token_per_layer, kv_bytes_per_token
from calc.pool import PoolResult
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.speculative import EAGLE3_DRAFT_VOCAB, draft_layer_parts, draft_layers, drafted, tokens_per_step
from calc.state import state_kind, state_shape
from calc.step_time import StepModel
from calc.units import DTYPE_BYTES, GB, US

FOUR_BIT_MAX_BYTES = 0.75
"""Bytes per parameter at or below which weights are 4-bit (AWQ / GPTQ int4, MXFP4 with its scales)."""
BALANCED_ROUTERS = frozenset({"deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa",
                              "minimax_m2", "nemotron_h"})
"""Model types whose router adds a learned per-expert bias before its top-k (DeepSeek-V3's auxiliary-loss-free
balancing, `e_score_correction_bias` in their checkpoints): one prompt's tokens spread over the experts like
independent requests', so a prefill counts each of its tokens as a draw (calc.step_time.StepModel.prefill_routing)."""
W4A16_TILE_TOKENS = 16
"""Rows of one tensor-core MMA tile (mma.m16n8k16) that 4-bit weight-only kernels (Marlin for AWQ / GPTQ / MXFP4)
pad a step's tokens to: below 16 tokens they stream the weights, so the GEMM's half-throughput point is one tile,
not a dense GEMM's ~60 tokens (which made one decoding token of MXFP4 experts compute-bound on an A100)."""


def half_tokens(engine: EngineSpec, bytes_per_param: float) -> float:
    """Tokens at which a GEMM over weights stored at this many bytes per parameter reaches half its throughput."""
    return float(W4A16_TILE_TOKENS) if bytes_per_param <= FOUR_BIT_MAX_BYTES else engine.gemm_half_tokens


def expert_compute_share(engine: EngineSpec, compute_dtype: str, g: GPUSpec) -> float:
    """The routed experts' share of the effective matmul rate: the dense GEMMs' share × the fused-MoE kernels' share,
    × the block-scaled FP8 grouped GEMMs' share where the GPU runs FP8 checkpoints on FP8 tensor cores (an A100 runs
    them as W8A16 at its 16-bit rate, which moe_compute_share already describes)."""
    fp8 = compute_dtype == "fp8" and g.fp8_tflop_per_s is not None
    return engine.gemm_compute_share * engine.moe_compute_share * (engine.fp8_moe_compute_share if fp8 else 1.0)


def blocks(m: ModelSpec) -> float:
    """Transformer blocks' worth of sublayers: (layers with a mixer + layers with an FFN) / 2. A decoder layer of
    most models holds both; a Nemotron-H layer holds one (its 52 layers are 26 blocks' worth)."""
    plan = m.plan
    return (2 * plan.n - plan.count("none") - plan.count("ffn:none")) / 2


def _share(engine: EngineSpec, bytes_per_param: float) -> float:
    """The engine's kernel share for weights stored at this many bytes per parameter."""
    if bytes_per_param >= 2:
        return 1.0
    if bytes_per_param > FOUR_BIT_MAX_BYTES:
        return engine.fp8_weight_share  # fp8 and int8 alike: 1-byte weights with scales
    return engine.int4_weight_share


def _expert_share(engine: EngineSpec, bytes_per_param: float) -> float:
    """The routed experts' share of the achievable bandwidth: the 4-bit fused-MoE kernels' own, else the weight
    precision's kernel share × the fused-MoE kernels' share."""
    if bytes_per_param <= FOUR_BIT_MAX_BYTES:
        return engine.int4_moe_weight_share
    return _share(engine, bytes_per_param) * engine.moe_weight_share


def _attention_kinds(m: ModelSpec, kv_elem: float, tp: int) -> tuple[tuple[tuple[float, float], ...], tuple]:
    """(KV bytes per context token, cap) and (attention FLOP per query-context pair, cap) per attention kind."""
    plan = m.plan
    if not plan.attention():
        return (), ()
    per_layer = attention_bytes_per_token_per_layer(m, kv_bytes_per_element=kv_elem, tp=tp)
    heads = max(1, (m.num_attention_heads or 0) // tp)
    if m.is_mla:  # decode in the latent space: scores over kv_lora + rope, values over kv_lora
        width = 2 * m.kv_lora_rank + m.qk_rope_head_dim  # type: ignore[operator]
    else:
        width = 2 * m.kv_head_dim
    flop_layer = 2.0 * heads * width
    # Step-3.5, Laguna: the sliding layers have their own query heads (the KV heads are the full layers')
    swa_flop_layer = 2.0 * max(1, m.swa_num_attention_heads // tp) * width if m.swa_num_attention_heads else flop_layer
    sliding, chunked = plan.count("sliding_attention"), plan.count("chunked_attention")
    own = plan.cached("sliding_attention") + plan.cached("chunked_attention")
    shared_full = plan.attention() - sliding - chunked - (plan.cached_attention() - own)
    # a KV-shared layer (Gemma 3n) reads its target's cache: it costs a read like any layer, but holds no cache
    full_bytes = kv_bytes_per_token(m, kv_bytes_per_element=kv_elem, tp=tp) + (shared_full - own) * per_layer
    kinds = [(full_bytes, plan.attention() - sliding - chunked, math.inf, flop_layer),
             (sliding * per_layer, sliding, m.sliding_window or math.inf, swa_flop_layer),
             (chunked * per_layer, chunked, m.attention_chunk_size or math.inf, flop_layer)]  # fmt: skip
    kv = tuple((b, cap) for b, n, cap, _ in kinds if n)
    flop = tuple((n * f, cap) for _, n, cap, f in kinds if n)
    return kv, flop


class GpuRates(NamedTuple):
    """What a StepModel takes from the GPU's compute and memory (its links: allreduce_link)."""

    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    effective_bandwidth_bytes_per_s: float
    effective_flop_per_s: float


def gpu_rates(s: Scenario, g: GPUSpec, compute_dtype: str) -> GpuRates:
    """Peaks and achievable rates for the matmul precision; the scenario's mbu/mfu replace the achievable shares."""
    peak = g.peak_flop_per_s(compute_dtype)
    mm = g.achievable_fp8_matmul_fraction if compute_dtype == "fp8" and g.achievable_fp8_matmul_fraction else g.achievable_matmul_fraction
    bw = g.memory_bandwidth_bytes_per_s
    return GpuRates(peak, bw, bw * (s.mbu if s.mbu is not None else g.achievable_bandwidth_fraction),
                    peak * (s.mfu if s.mfu is not None else mm))  # fmt: skip


class AllReduceLink(NamedTuple):
    """What one tensor-parallel all-reduce costs: latency_s + bus bytes / link_bytes_per_s, plus small_s_per_byte
    for each bus byte up to small_bytes (0 unless the all-reduce crosses PCIe)."""

    latency_s: float
    link_bytes_per_s: float
    small_s_per_byte: float
    small_bytes: float


STAGED_CROSSINGS = 2
"""Without PCIe peer-to-peer NCCL's shared-memory transport copies each all-reduce byte into pinned host memory and
the receiving card reads it back: two crossings of the bus where a peer read makes one (history, 2026-12-05 (3))."""


def allreduce_link(g: GPUSpec, tp: int, engine: EngineSpec) -> AllReduceLink:
    """The GPU's link for a `tp` group; where it crosses PCIe, the engine's PCIe all-reduce costs: a pair's own
    latency (from a CUDA graph; larger PCIe groups keep the spec's NCCL allreduce_latency_us) and the slow rate of
    decode-size messages (engine_specs/*.yaml pcie_allreduce_*); where the cards have no peer-to-peer (GeForce: two
    RTX 4090s at TP 2, tests/data/benchmarks/lyell0710-…, calibration part), every byte at that rate over
    STAGED_CROSSINGS."""
    link, latency_s = g.allreduce_link_bytes_per_s(tp), g.allreduce_latency_us * US
    if tp < 2 or not g.allreduce_crosses_pcie(tp):
        return AllReduceLink(latency_s, link, 0.0, 0.0)
    lat = engine.pcie_allreduce_latency_s if tp == 2 and engine.pcie_allreduce_latency_s else latency_s
    rate = engine.pcie_allreduce_gb_per_s * GB / (1 if g.pcie_p2p else STAGED_CROSSINGS)
    slow = max(0.0, 1.0 / rate - 1.0 / link) if rate else 0.0
    # without peer-to-peer (GeForce) NCCL stages every byte through host memory: no faster path for large messages
    return AllReduceLink(lat, link, slow, engine.pcie_allreduce_small_bytes if g.pcie_p2p else math.inf)


def prompt_steps_eager(s: Scenario, m: ModelSpec) -> bool:
    """SGLang runs a model's prompt steps without CUDA graphs when some layer has no attention module its piecewise
    runner recognises (`self_attn.attn`, MLA's `attn_mqa`, `linear_attn`): Mamba and short-convolution layers
    (Nemotron-H, Jamba, LFM2, Falcon-Mamba). sglang python/sglang/srt/model_executor/model_runner.py,
    init_piecewise_cuda_graphs: "Disable piecewise CUDA graph because some layers do not apply Standard GQA".
    Before 0.5.10 no prompt step is captured; the fitted costs carry that for the rest (history, 2026-12-04)."""
    return s.engine == "sglang" and any(t in ("mamba", "conv") for t in m.plan.mixers)


def compile_s(s: Scenario, m: ModelSpec, engine: EngineSpec) -> float:
    """What a prompt step of a new prompt-token count adds [s]: the engine's qk_l2norm_compile_s for a model with
    gated-DeltaNet or KDA layers (their chunked prefill normalises q and k through a Triton kernel specialised on
    that count) under a release before qk_l2norm_fixed_in; 'latest' has the fix. Else 0."""
    if not engine.qk_l2norm_compile_s or state_kind(m) != "gdn":
        return 0.0
    version, fixed = version_tuple(s.engine_version), engine.qk_l2norm_fixed_in
    return engine.qk_l2norm_compile_s if version is not None and fixed and version < version_tuple(fixed) else 0.0


def fp8_moe_s(engine: EngineSpec, moe_layers: int, arch: str, compute_dtype: str) -> float:
    """The FP8 routed experts' own kernel time a step [s]: the engine's rocm_fp8_moe_layer_s per MoE layer where the
    experts run FP8 GEMMs (FP8 tensor-core math) on a CDNA3 GPU, which published SGLang 0.5.7 runs decode slower than
    bytes and FLOPs say at any concurrency (docs/calibration-history.md (15), (22)); else 0."""
    return engine.rocm_fp8_moe_layer_s * moe_layers if arch == "cdna3" and compute_dtype == "fp8" else 0.0


def step_model(s: Scenario, m: ModelSpec, g: GPUSpec, pool: PoolResult, engine: EngineSpec) -> StepModel:
    tp, p, fmt = s.tensor_parallel_size, pool.params, pool.weight_format
    dense_params = p.attention + p.state_mixers + p.dense_mlp
    dense_bytes = (dense_params * fmt.linear_bytes + p.logits_weight * 2.0) / tp + p.norms * 2.0
    moe_layers = m.plan.count("ffn:moe")
    experts = m.routed_experts if moe_layers else 0
    expert_bytes = p.experts / (moe_layers * experts) * fmt.expert_bytes / tp if experts else 0.0
    kv_read, attn_flop = _attention_kinds(m, pool.kv_bytes_per_element, tp)
    dcp = s.decode_context_parallel_size  # each GPU reads its 1/dcp of every context; the FLOPs stay (dcp× the heads)
    kv_read = tuple((b / dcp, cap) for b, cap in kv_read)
    shape = state_shape(m, tp=tp, model_bytes=DTYPE_BYTES["bf16"], ssm_override=s.mamba_ssm_cache_dtype)
    rates = gpu_rates(s, g, fmt.compute_dtype)
    ar = allreduce_link(g, tp, engine)
    dp = s.data_parallel_size if moe_layers else 1  # a dense model's ranks never meet: each is a replica
    moe_ar = allreduce_link(g, dp * tp, engine) if dp > 1 else ar
    target = StepModel(
        dense_weight_bytes=dense_bytes,
        expert_bytes=expert_bytes,
        moe_layers=moe_layers,
        shared_moe_layers=moe_layers if m.shared_expert_size else 0,
        experts=experts,
        top_k=m.num_experts_per_tok or 0,
        gemm_flop_per_token=2.0 * (dense_params + p.norms) / tp,
        logits_flop_per_token=2.0 * p.logits_weight / tp,
        expert_flop_per_token=2.0 * p.active_experts / tp,
        kv_read=kv_read,
        attention_flop=attn_flop,
        state_bytes_per_seq=(shape.bytes * m.plan.state()) if shape else 0.0,
        layers=m.num_hidden_layers,
        blocks=blocks(m),
        allreduce_bytes_per_token=m.hidden_size * DTYPE_BYTES["bf16"],
        allreduce_latency_s=ar.latency_s,
        cp_collectives_s=3 * m.plan.attention() * ar.latency_s if dcp > 1 else 0.0,
        link_bytes_per_s=ar.link_bytes_per_s,
        allreduce_small_s_per_byte=ar.small_s_per_byte,
        allreduce_small_bytes=ar.small_bytes,
        tp=tp,
        bandwidth_bytes_per_s=rates.bandwidth_bytes_per_s,
        peak_flop_per_s=rates.peak_flop_per_s,
        effective_bandwidth_bytes_per_s=rates.effective_bandwidth_bytes_per_s,
        effective_flop_per_s=rates.effective_flop_per_s,
        weight_share=_share(engine, fmt.linear_bytes),
        expert_weight_share=_expert_share(engine, fmt.expert_bytes),
        weight_half_tokens=half_tokens(engine, fmt.linear_bytes),
        expert_half_tokens=half_tokens(engine, fmt.expert_bytes),
        expert_compute_share=expert_compute_share(engine, fmt.compute_dtype, g),
        expert_ranks=expert_ranks(s, m),
        balanced_router=m.model_type in BALANCED_ROUTERS,
        chat=s.endpoint_type == "openai-chat",
        pp=s.pipeline_parallel_size,
        dp=dp,
        dp_busy=min(1.0, (s.concurrency - 1) / (dp - 1)) if dp > 1 else 1.0,
        moe_latency_s=moe_ar.latency_s,
        moe_link_bytes_per_s=moe_ar.link_bytes_per_s,
        prompt_steps_eager=prompt_steps_eager(s, m),
        compile_s=compile_s(s, m, engine),
        fp8_moe_s=fp8_moe_s(engine, moe_layers, g.arch, fmt.compute_dtype),
        engine=engine,
        eager=s.enforce_eager,
        mbu_override=s.mbu is not None,
        mfu_override=s.mfu is not None,
    )
    tau = tokens_per_step(s, m)
    if tau is None:
        return target
    return replace(target, spec_tokens=s.num_speculative_tokens, accepted_tokens=tau,
                   draft=draft_step_model(s, m, pool, target, engine) if draft_layers(s, m) else None)


def draft_step_model(s: Scenario, m: ModelSpec, pool: PoolResult, target: StepModel, engine: EngineSpec) -> StepModel:
    """The MTP drafter as a step model of its own: one pass runs one of the checkpoint's MTP layers (vLLM reuses
    them, spec_step_idx % layers) — its decoder layer of the model's kind, its input projection (2·H → H) and three
    norms — and the head's logits (the target's lm_head, read again), on the target's GPU, rates and kernel shares;
    at 16 bits where the checkpoint leaves its MTP layers unquantized (calc.speculative.draft_weight_bytes)."""
    dm, n, tp = drafted(s, m), draft_layers(s, m), s.tensor_parallel_size
    linear, experts, norms, linear_b, expert_b = draft_layer_parts(m, dm, pool.weight_format, 1, s.speculative_method)
    head = EAGLE3_DRAFT_VOCAB * m.hidden_size if s.speculative_method == "eagle3" else dm.params.logits_weight
    if s.speculative_method == "eagle3":
        linear -= head  # read below as the head, at 16 bits
    moe = 1 if experts and m.routed_experts else 0
    per_expert = experts / m.routed_experts if moe else 0.0
    kv_all, flop_all = _attention_kinds(dm, pool.kv_bytes_per_element, tp)
    kv_m, flop_m = _attention_kinds(m, pool.kv_bytes_per_element, tp)
    kv = tuple(((b - b0) / n, cap) for (b, cap), (b0, _) in zip(kv_all, kv_m, strict=False) if b > b0)
    fl = tuple(((f - f0) / n, cap) for (f, cap), (f0, _) in zip(flop_all, flop_m, strict=False) if f > f0)
    return replace(
        target, dense_weight_bytes=(linear * linear_b + head * 2.0) / tp + norms * 2.0,
        expert_bytes=per_expert * expert_b / tp, moe_layers=moe, shared_moe_layers=moe if m.shared_expert_size else 0,
        experts=m.routed_experts if moe else 0, gemm_flop_per_token=2.0 * (linear + norms) / tp,
        expert_flop_per_token=2.0 * per_expert * (m.num_experts_per_tok or 0) / tp, kv_read=kv, attention_flop=fl,
        state_bytes_per_seq=0.0, layers=1, blocks=1.0, cp_collectives_s=0.0, compile_s=0.0,
        fp8_moe_s=target.fp8_moe_s / target.moe_layers * moe if target.moe_layers else 0.0,
        weight_share=_share(engine, linear_b), expert_weight_share=_expert_share(engine, expert_b),
        weight_half_tokens=half_tokens(engine, linear_b), expert_half_tokens=half_tokens(engine, expert_b))  # fmt: skip
