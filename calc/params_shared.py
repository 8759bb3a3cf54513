"""Weights two families add beyond the standard decoder layer that calc.params counts: Zamba2's shared transformer
blocks (stored once, used by several layers) and Gemma 3n's per-layer inputs, AltUp and LAuReL.

Sources: vLLM model_executor/models/zamba2.py (Zamba2AttentionDecoderLayer, Zamba2HybridLayer, Zamba2LoRA) and
gemma3n.py (Gemma3nDecoderLayer, Gemma3nTextModel). Counts are parameters (decimal), no biases unless stated.

Zamba2, H = hidden_size, W = 2·H (attention over concat(hidden, embedding)), F = intermediate_size, r = adapter_rank:
    shared block (num_mem_blocks of them, counted once)   q,k,v W·W each + o W·H + MLP 3·H·F + norms 2·H + H
    per hybrid layer                                       linear H·H + MLP adapter H·r + r·2F
                                                           (+ q,k,v adapters 3·(W·r + r·W) if use_shared_attention_adapter)
    Zamba2-7B block: 3·7,168² + 7,168·3,584 + 3·3,584·14,336 + 3·3,584 = 333,982,208.
Gemma 3n, H = hidden_size, p = hidden_size_per_layer_input, n = altup_num_inputs, r = laurel_rank, L layers:
    per layer      LAuReL 2·H·r, AltUp n² + n³ + H·n, per-layer input gate and projection 2·H·p; norms 3·H
    per model      per-layer embedding vocab_size_per_layer_input · L·p (a lookup), its projection H·L·p (norm p),
                   AltUp (un)embedding projections 2·(n − 1)·H²
    E4B: 262,144 · 35 · 256 = 2,348,810,240 per-layer embedding parameters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FamilyExtras:
    """Per-layer additions (lists over layers) and model-level ones, by the ParamCounts part they belong to."""

    attention: tuple[int, ...]
    dense: tuple[int, ...]
    """Matmul weights outside attention: Zamba2's shared MLP, per-use projection and adapters; Gemma 3n's AltUp,
    LAuReL and per-layer-input projections (and, on the first / last layer, its model-level projections)."""
    norms: tuple[int, ...]
    per_layer_embedding: int = 0


def zamba2_block(m) -> tuple[int, int, int]:
    """One shared transformer block: (attention, MLP, norms) parameters."""
    H, W, F = m.hidden_size, 2 * m.hidden_size, m.intermediate_size or 4 * m.hidden_size
    return 3 * W * W + W * H, 3 * H * F, W + H


def zamba2_per_use(m) -> tuple[int, int]:
    """What each hybrid layer owns around the shared block it calls: (attention adapters, projection + MLP adapter)."""
    H, W, F, r = m.hidden_size, 2 * m.hidden_size, m.intermediate_size or 4 * m.hidden_size, m.adapter_rank or 128
    attn = 3 * (W * r + r * W) if m.use_shared_attention_adapter else 0
    return attn, H * H + H * r + r * 2 * F


def family_extras(m) -> FamilyExtras | None:
    """The extras of a Zamba2 (num_mem_blocks) or Gemma 3n (hidden_size_per_layer_input) model; None for others."""
    n = m.num_hidden_layers
    attn, dense, norms = [0] * n, [0] * n, [0] * n
    if m.num_mem_blocks:
        block_attn, block_mlp, block_norms = zamba2_block(m)
        use_attn, use_dense = zamba2_per_use(m)
        hybrid = [i for i, k in enumerate(m.layer_types) if k == "hybrid"]
        for j, i in enumerate(hybrid):
            first_use = j < m.num_mem_blocks  # vLLM cycles the blocks: hybrid layer j calls block j % num_mem_blocks
            attn[i] = use_attn + (block_attn if first_use else 0)
            dense[i] = use_dense + (block_mlp if first_use else 0)
            norms[i] = block_norms if first_use else 0
        return FamilyExtras(tuple(attn), tuple(dense), tuple(norms))
    if m.hidden_size_per_layer_input:
        H, p = m.hidden_size, m.hidden_size_per_layer_input
        k, r = m.altup_num_inputs or 1, m.laurel_rank or 0
        dense = [2 * H * r + k**2 + k**3 + H * k + 2 * H * p] * n  # LAuReL, AltUp, per-layer input gate + projection
        norms = [3 * H] * n  # LAuReL's norm, AltUp's router norm and output scale
        dense[0] += H * n * p + (k - 1) * H * H  # per-layer input projection, AltUp embedding projections
        norms[0] += p  # per_layer_projection_norm
        dense[-1] += (k - 1) * H * H  # AltUp unembedding projections
        table = (m.vocab_size_per_layer_input or m.vocab_size) * n * p
        return FamilyExtras(tuple(attn), tuple(dense), tuple(norms), per_layer_embedding=table)
    return None
