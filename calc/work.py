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
    return 2.0 * (m.num_attention_heads or 0) * (qk + v) * m.plan.attention()


def attended_tokens(m: ModelSpec, context: float) -> float:
    """Context tokens one token attends to, averaged over the attention layers (sliding layers cap at the window,
    chunked layers at the chunk)."""
    plan = m.plan
    n = plan.attention()
    if n == 0:
        return 0.0
    sliding, chunked = plan.count("sliding_attention"), plan.count("chunked_attention")
    capped = sliding * min(context, m.sliding_window or context) + chunked * min(context, m.attention_chunk_size or context)
    return ((n - sliding - chunked) * context + capped) / n


def prefill_flop(m: ModelSpec, p: ParamCounts, tokens: int) -> float:
    """A prompt of `tokens`: dense part, causal attention (≈ L²/2 pairs) and one token's logits [FLOP]."""
    causal_pairs = tokens * attended_tokens(m, tokens / 2)
    return tokens * block_flop_per_token(p) + causal_pairs * attention_flop_per_context_token(m) + logits_flop(p)


def decode_step_flop(m: ModelSpec, p: ParamCounts, *, batch: float, context: float) -> float:
    """One decode step of `batch` sequences at `context` tokens each [FLOP]."""
    per_seq = (
        block_flop_per_token(p) + logits_flop(p) + attended_tokens(m, context) * attention_flop_per_context_token(m)
    )
    return batch * per_seq


def experts_touched(m: ModelSpec, tokens: float) -> float:
    """Expected distinct experts per MoE layer visited by `tokens` tokens choosing top-k of E at random:
    E · (1 − (1 − k/E)^tokens)."""
    if not m.is_moe:
        return 0.0
    E, k = m.routed_experts, m.num_experts_per_tok or 1
    return E * (1.0 - (1.0 - k / E) ** tokens)


def streamed_weight_bytes(m: ModelSpec, p: ParamCounts, f: WeightFormat, *, tokens: float) -> float:
    """Weights read from memory by one forward pass over `tokens` tokens, all GPUs together [bytes].
    The embedding table is a lookup (not streamed) unless it doubles as the lm_head."""
    experts = 0.0
    if m.is_moe and p.experts:
        per_expert = p.experts / m.routed_experts
        experts = experts_touched(m, tokens) * per_expert * f.expert_bytes
    blocks = (p.attention + p.state_mixers + p.dense_mlp) * f.linear_bytes + p.norms * 2.0
    return blocks + experts + p.logits_weight * 2.0


def kv_read_bytes(m: ModelSpec, *, kv_bytes_per_token_all_gpus: float, batch: float, context: float) -> float:
    """KV read by one decode step: every running sequence's cache at its context [bytes]."""
    return batch * attended_tokens(m, context) * kv_bytes_per_token_all_gpus
