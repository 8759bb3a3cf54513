"""KV-cache bytes per token, and how vLLM groups layers into block pools.

Per layer and token: K and V, `2 · n_kv_heads · head_dim · bytes(kv_dtype)`; MLA stores one latent,
`(kv_lora_rank + qk_rope_head_dim) · bytes`, not split by tensor parallelism (reference/vllm_kv.md §1.1–1.2).
Tensor parallelism keeps `max(1, n_kv_heads // tp)` heads per GPU (replicated when tp > n_kv_heads).
Pipeline parallelism gives each stage the layers vLLM's `get_pp_indices` assigns it.
Qwen2.5-7B: 2 × 28 layers × 4 heads × 128 × 2 B = 57,344 B = 56 KiB per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from calc.specs import ModelSpec


def kv_bytes_per_token_per_layer(m: ModelSpec, *, kv_bytes_per_element: float, tp: int = 1) -> float:
    """One full-attention layer, one token, on one GPU [bytes]."""
    if m.is_mla:
        return (m.kv_lora_rank + m.qk_rope_head_dim) * kv_bytes_per_element  # type: ignore[operator]
    return 2 * max(1, m.kv_heads // tp) * m.kv_head_dim * kv_bytes_per_element


def kv_bytes_per_token(m: ModelSpec, *, kv_bytes_per_element: float, tp: int = 1) -> float:
    """All layers, one token [bytes]; an upper bound for sliding-window layers, which cap at the window."""
    return m.num_hidden_layers * kv_bytes_per_token_per_layer(m, kv_bytes_per_element=kv_bytes_per_element, tp=tp)


def pp_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as vLLM's get_pp_indices: an even split, the remainder going to the stages
    before the last, counting backwards (27 layers on 2 stages → [14, 13])."""
    base = num_layers // pp
    parts = [base] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def pp_layer_ranges(num_layers: int, pp: int) -> list[range]:
    out, start = [], 0
    for n in pp_layer_counts(num_layers, pp):
        out.append(range(start, start + n))
        start += n
    return out


@dataclass(frozen=True)
class KVGroup:
    """A KV-cache group of vLLM's hybrid allocator: `layers_per_group` layers of one kind share block ids."""

    kind: str  # "full" or "sliding"
    window: int | None

    def blocks_for(self, tokens: int, *, block_size: int, max_num_batched_tokens: int) -> int:
        """Blocks one request of `tokens` tokens holds in this group (vLLM max_memory_usage_bytes / page).

        Sliding window: `cdiv(min(W − 1 + max_num_batched_tokens, L), bs) + 1` — the window may start mid-block,
        and a prefill chunk attends W − 1 tokens back (vllm_kv.md §1.1, SlidingWindowSpec).
        """
        if self.kind == "sliding":
            held = min(self.window - 1 + max_num_batched_tokens, tokens)  # type: ignore[operator]
            return ceil(held / block_size) + 1
        return ceil(tokens / block_size)


@dataclass(frozen=True)
class StageLayout:
    """How one pipeline stage's layers are laid out in vLLM's block pool."""

    layers: int
    groups: tuple[KVGroup, ...]
    layers_per_group: int
    """Layers that share each block id: all layers when uniform, min count per kind when hybrid."""
    padding_layers: int
    """Empty layer slots the hybrid grouping adds ("Add N padding layers")."""


def stage_layout(m: ModelSpec, layer_ids: range) -> StageLayout:
    """vLLM's grouping (kv_cache_utils.get_kv_cache_groups): one group when every layer is alike; otherwise
    group_size = the smallest per-kind count, and each kind is cut into cdiv(n, group_size) groups."""
    sliding = sum(m.is_sliding_layer(i) for i in layer_ids)
    full = len(layer_ids) - sliding
    counts = {k: n for k, n in (("full", full), ("sliding", sliding)) if n}
    if len(counts) <= 1:
        kind = next(iter(counts), "full")
        group = KVGroup(kind, m.sliding_window if kind == "sliding" else None)
        return StageLayout(len(layer_ids), (group,), len(layer_ids), 0)
    size = min(counts.values())
    groups: list[KVGroup] = []
    for kind, n in counts.items():
        groups += [KVGroup(kind, m.sliding_window if kind == "sliding" else None)] * ceil(n / size)
    return StageLayout(len(layer_ids), tuple(groups), size, len(groups) * size - len(layer_ids))


def blocks_per_request(layout: StageLayout, tokens: int, *, block_size: int, max_num_batched_tokens: int) -> int:
    """Blocks a request of `tokens` tokens takes from the shared pool: the sum over groups."""
    return sum(g.blocks_for(tokens, block_size=block_size, max_num_batched_tokens=max_num_batched_tokens)
               for g in layout.groups)  # fmt: skip
