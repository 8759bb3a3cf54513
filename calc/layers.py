"""A model's layers by kind, counted once: what the pool, the parameter count and the step time iterate over.

Every later computation asks for counts per kind over a range of layers (a pipeline stage), from prefix sums, so its
cost does not grow with `num_hidden_layers`.

Cache kinds, as vLLM's KV specs: `full` (FullAttentionSpec), `sliding` (SlidingWindowSpec), `chunked`
(ChunkedLocalAttentionSpec, Llama 4), `state` (MambaSpec: Mamba, Gated DeltaNet, lightning attention, short conv;
a constant per request). A `hybrid` layer (Falcon-H1, Zamba2) holds one attention cache and one state.
Layers that read an earlier layer's KV (Gemma 3n's last `num_kv_shared_layers`; vLLM gives them a
kv_sharing_target_layer_name and no KV spec) attend but keep no cache: `cached` counts only the layers that do.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

ATTENTION = ("full_attention", "sliding_attention", "chunked_attention", "hybrid")
STATE = ("mamba", "linear_attention", "conv", "hybrid")


@dataclass(frozen=True)
class LayerPlan:
    mixers: tuple[str, ...]
    ffns: tuple[str, ...]
    _prefix: dict  # kind → prefix sums over layers (len n + 1)

    @property
    def n(self) -> int:
        return len(self.mixers)

    def count(self, kind: str, layers: range | None = None) -> int:
        """Layers of a mixer kind ('sliding_attention') or FFN kind ('ffn:moe') in `layers` (all by default)."""
        p = self._prefix.get(kind)
        if p is None:
            return 0
        r = layers or range(self.n)
        return p[r.stop] - p[r.start]

    def attention(self, layers: range | None = None) -> int:
        """Layers that attend (KV read, attention FLOPs), with or without a cache of their own."""
        return sum(self.count(k, layers) for k in ATTENTION)

    def cached(self, kind: str, layers: range | None = None) -> int:
        """Layers of an attention kind in `layers` that keep their own KV cache (not KV-shared)."""
        return self.count("kv:" + kind, layers)

    def cached_attention(self, layers: range | None = None) -> int:
        """Attention layers that keep their own KV cache: what the block pool holds pages for."""
        return sum(self.cached(k, layers) for k in ATTENTION)

    def state(self, layers: range | None = None) -> int:
        return sum(self.count(k, layers) for k in STATE)

    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in self._prefix if self.count(k) and not k.startswith("kv:"))


def layer_plan(m) -> LayerPlan:
    mixers, ffns = tuple(m.layer_types), tuple(m.mlp_layer_types)
    own_kv = len(mixers) - (m.num_kv_shared_layers or 0)  # vLLM gemma3n.py: layers ≥ n − shared reuse KV
    cached = tuple(x if i < own_kv else "none" for i, x in enumerate(mixers))
    prefix = {}
    for tag, seq in (("", mixers), ("ffn:", ffns), ("kv:", cached)):
        for kind in sorted(set(seq)):
            prefix[tag + kind] = [0, *accumulate(int(x == kind) for x in seq)]
    return LayerPlan(mixers, ffns, prefix)
