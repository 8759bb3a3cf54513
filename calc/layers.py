"""A model's layers by kind, counted once: what the pool, the parameter count and the step time iterate over.

Every later computation asks for counts per kind over a range of layers (a pipeline stage), from prefix sums, so its
cost does not grow with `num_hidden_layers`.

Cache kinds, as vLLM's KV specs: `full` (FullAttentionSpec), `sliding` (SlidingWindowSpec), `chunked`
(ChunkedLocalAttentionSpec, Llama 4), `state` (MambaSpec: Mamba, Gated DeltaNet, lightning attention, short conv;
a constant per request). A `hybrid` layer (Falcon-H1) holds one attention cache and one state.
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
        return sum(self.count(k, layers) for k in ATTENTION)

    def state(self, layers: range | None = None) -> int:
        return sum(self.count(k, layers) for k in STATE)

    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in self._prefix if self.count(k))


def layer_plan(m) -> LayerPlan:
    mixers, ffns = tuple(m.layer_types), tuple(m.mlp_layer_types)
    prefix = {}
    for tag, seq in (("", mixers), ("ffn:", ffns)):
        for kind in sorted(set(seq)):
            prefix[tag + kind] = [0, *accumulate(int(x == kind) for x in seq)]
    return LayerPlan(mixers, ffns, prefix)
