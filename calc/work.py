"""Work per token and per engine step: FLOPs and bytes moved.

Conventions: FLOPs count multiply and add separately (2·m·n·k). A token multiplies by the transformer blocks'
parameters it visits (active experts only, for MoE): 2 · 6.525e9 = 13.05 GFLOP for Qwen2.5-7B (seed report).
Logits (2 · vocab · hidden) are computed only where a token is sampled: every decode step, once per prefill.
Attention adds `2 · n_heads · (d_qk + d_v)` per layer per context token — `4 · d_model · n_layers` = 401,408 FLOP
for Qwen2.5-7B — and sliding-window layers look back at most `window` tokens.
A decode step streams every weight but the embedding table (a lookup; the untied lm_head is streamed: 14.14 GB for
Qwen2.5-7B) plus the KV of every running sequence at its context.
"""

from __future__ import annotations

from calc.params import ParamCounts
from calc.routing import distinct_experts
from calc.specs import ModelSpec
from calc.weights import WeightFormat


def block_flop_per_token(p: ParamCounts) -> float:
    return 2.0 * p.blocks_active


def logits_flop(p: ParamCounts) -> float:
    """One token's logits [FLOP]."""
    return 2.0 * p.logits_weight


def attention_flop_per_context_token(m: ModelSpec) -> float:
    """Per generated/processed token and per token of context it attends to, all attention layers [FLOP]."""
    if m.is_mla:
        qk, v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim  # type: ignore[operator]
    else:
        qk = v = m.kv_head_dim
    sliding = m.plan.count("sliding_attention") if m.swa_num_attention_heads else 0  # Step-3.5, Laguna: own heads
    heads = (m.num_attention_heads or 0) * (m.plan.attention() - sliding) + (m.swa_num_attention_heads or 0) * sliding
    return 2.0 * heads * (qk + v)


def experts_touched(m: ModelSpec, tokens: float) -> float:
    if not m.is_moe:
        return 0.0
    return distinct_experts(experts=m.routed_experts, top_k=m.num_experts_per_tok or 1, tokens=tokens)


def streamed_weight_bytes(m: ModelSpec, p: ParamCounts, f: WeightFormat, *, tokens: float) -> float:
    """Weights read from memory by one forward pass over `tokens` tokens, all GPUs together [bytes].
    The embedding table is a lookup (not streamed) unless it doubles as the lm_head."""
    experts = 0.0
    if m.is_moe and p.experts:
        per_expert = p.experts / m.routed_experts
        experts = experts_touched(m, tokens) * per_expert * f.expert_bytes
    blocks = (p.attention + p.state_mixers + p.dense_mlp) * f.linear_bytes + p.norms * 2.0
    return blocks + experts + p.logits_weight * 2.0
