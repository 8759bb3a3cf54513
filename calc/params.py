"""Parameter counts from the architecture: total, active (MoE), and the parts the latency model needs.

Method of shared/reference/models.md §5: embedding V·H, per layer attention (+ biases, q/k norms, sinks), MLP or MoE
(experts, router, shared experts), norms, final norm, lm_head unless tied. MLA uses the low-rank projections.
"Active" = everything but the experts a token does not visit (embedding and lm_head included, the convention of
the Qwen3 and Mixtral cards).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.specs import ModelSpec


@dataclass(frozen=True)
class ParamCounts:
    embedding: int
    """Input embedding table (plus OPT's learned positions): a lookup, never streamed as a matmul."""
    lm_head: int
    """Output projection; 0 when tied to the embedding (the tied table is then streamed for logits)."""
    attention: int
    """All layers' attention projections, biases and norms."""
    dense_mlp: int
    """All layers' non-expert MLP weights, router and shared experts included."""
    experts: int
    """All routed experts of all MoE layers."""
    active_experts: int
    """The routed experts one token visits (top-k per MoE layer)."""
    norms: int

    @property
    def total(self) -> int:
        return self.embedding + self.lm_head + self.attention + self.dense_mlp + self.experts + self.norms

    @property
    def active(self) -> int:
        return self.total - self.experts + self.active_experts

    @property
    def blocks_active(self) -> int:
        """Parameters of the transformer blocks one token multiplies by (the report's 6.525e9 for Qwen2.5-7B)."""
        return self.attention + self.dense_mlp + self.active_experts + self.norms

    @property
    def logits_weight(self) -> int:
        """Weights multiplied to produce one token's logits: the lm_head, or the tied embedding table."""
        return self.lm_head or self.embedding


def _attention_per_layer(m: ModelSpec) -> int:
    H, nh = m.hidden_size, m.num_attention_heads
    if m.is_mla:
        qk_dim = m.qk_nope_head_dim + m.qk_rope_head_dim  # type: ignore[operator]
        if m.q_lora_rank:
            q = H * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nh * qk_dim
        else:
            q = H * nh * qk_dim
        kv_a = H * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank  # type: ignore[operator]
        kv_b = m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim)  # type: ignore[operator]
        return q + kv_a + kv_b + nh * m.v_head_dim * H  # type: ignore[operator]
    d, nkv = m.kv_head_dim, m.kv_heads
    q_out, kv_out = nh * d, nkv * d
    n = H * q_out + 2 * H * kv_out + q_out * H
    if m.model_type == "qwen2":
        n += q_out + 2 * kv_out  # q/k/v bias
    if m.attention_bias or m.model_type == "opt":
        n += q_out + 2 * kv_out + H  # q/k/v/o bias
    if m.model_type in ("qwen3", "qwen3_moe", "gemma3_text"):
        n += 2 * d  # q_norm, k_norm
    if m.model_type == "gpt_oss":
        n += nh  # attention sinks
    return n


def _is_moe_layer(m: ModelSpec, i: int) -> bool:
    return m.is_moe and i >= (m.first_k_dense_replace or 0)


def _expert(m: ModelSpec) -> int:
    H, inter = m.hidden_size, m.expert_ffn_size
    n = 3 * H * inter
    if m.model_type == "gpt_oss":
        n += 2 * inter + H  # gate_up and down biases
    return n


def _moe_shared_per_layer(m: ModelSpec) -> int:
    """Router (+ its bias) and shared experts of one MoE layer."""
    H, E = m.hidden_size, m.routed_experts
    n = H * E
    if m.model_type in ("gpt_oss", "deepseek_v3"):
        n += E  # router bias / e_score_correction_bias
    n += (m.n_shared_experts or 0) * 3 * H * m.expert_ffn_size
    return n


def _dense_mlp_per_layer(m: ModelSpec) -> int:
    H, inter = m.hidden_size, m.dense_ffn_size
    if m.model_type == "opt":
        return 2 * H * inter + inter + H  # ReLU fc1/fc2 with biases
    return 3 * H * inter  # gated: gate, up, down


def count_params(m: ModelSpec) -> ParamCounts:
    H, L = m.hidden_size, m.num_hidden_layers
    embedding = m.vocab_size * H
    if m.model_type == "opt":
        embedding += (m.max_position_embeddings + 2) * H  # learned positions, offset 2
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * H
    norms_per_layer = {"gemma2": 4 * H, "gemma3_text": 4 * H, "opt": 4 * H}.get(m.model_type, 2 * H)
    final_norm = 2 * H if m.model_type == "opt" else H
    dense_mlp = experts = active_experts = 0
    for i in range(L):
        if _is_moe_layer(m, i):
            dense_mlp += _moe_shared_per_layer(m)
            experts += m.routed_experts * _expert(m)
            active_experts += m.num_experts_per_tok * _expert(m)  # type: ignore[operator]
        else:
            dense_mlp += _dense_mlp_per_layer(m)
    return ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=L * _attention_per_layer(m),
        dense_mlp=dense_mlp,
        experts=experts,
        active_experts=active_experts,
        norms=L * norms_per_layer + final_norm,
    )
