"""How many distinct experts a MoE layer reads when g tokens are routed: uniform routing, or a router that favours
some experts (a Zipf popularity).

    uniform         touched(g) = E · (1 − (1 − k/E)^g)
    Zipf, skew s    q_i = min(1, c · i^−s),  Σ_i q_i = k     (token → expert i, i = 1 … E by popularity)
                    touched(g) = Σ_i 1 − (1 − q_i)^g         (s = 0: q_i = k/E, the uniform case)

One token still reads its k experts (touched(1) = Σ q_i = k) and many tokens still reach all E; in between a skewed
router saturates sooner: its popular experts are read by nearly every batch, its rare ones by few. Fitted on the
calibration runs (engine_specs: routing_skew), because no published router statistic says how skewed a batch of
different requests is (docs/calibration-history.md, 2026-12-04 night and last session).

The skewed sum is E terms per call, and the scheduler simulation asks per step: it is tabulated once per (E, k, s)
on a log grid of g (128 points a decade, 10⁻² … 10⁷) and read by linear interpolation in ln g (relative error below
1e-4 against the sum, tests/test_routing.py).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

_GRID_LN_G = np.linspace(np.log(1e-2), np.log(1e7), 9 * 128 + 1)


def popularity(experts: int, top_k: float, skew: float) -> np.ndarray:
    """q_i, the chance one token visits expert i (most popular first): min(1, c·i^−s) with Σ q_i = k, c found by
    filling from the top (an expert visited by every token cannot take more)."""
    w = np.arange(1, experts + 1, dtype=float) ** -skew
    k = min(float(top_k), float(experts))
    full = np.arange(experts)  # the `full` most popular experts at q = 1, the rest scaled to the remainder
    tail = np.cumsum(w[::-1])[::-1]  # Σ w[full:], every `full` at once (one pass, not E)
    c = (k - full) / tail
    fits = np.flatnonzero(c * w <= 1.0)
    if not fits.size:
        return np.ones(experts)
    f = int(fits[0])
    return np.concatenate([np.ones(f), c[f] * w[f:]])


def _log_miss(experts: int, top_k: float, skew: float) -> np.ndarray:
    """ln(1 − q_i): −inf for an expert every token visits."""
    q = popularity(experts, top_k, skew)
    with np.errstate(divide="ignore"):
        return np.where(q >= 1.0, -np.inf, np.log1p(-np.minimum(q, 1.0)))


def _touched(g: np.ndarray, log_miss: np.ndarray) -> np.ndarray:
    """Σ_i 1 − (1 − q_i)^g for each g > 0 (E terms each), a block of g at a time (at most a million terms held)."""
    g = np.asarray(g, dtype=float)
    flat = g.reshape(-1)
    rows = max(1, 1_000_000 // max(1, log_miss.size))
    out = np.concatenate([log_miss.size - np.exp(np.multiply.outer(flat[i:i + rows], log_miss)).sum(axis=-1)
                          for i in range(0, flat.size, rows)]) if flat.size else flat  # fmt: skip
    return out.reshape(g.shape)


@lru_cache(maxsize=64)
def _table(experts: int, top_k: float, skew: float) -> np.ndarray:
    return _touched(np.exp(_GRID_LN_G), _log_miss(experts, top_k, skew))


@lru_cache(maxsize=64)
def _table_list(experts: int, top_k: float, skew: float) -> list[float]:
    return _table(experts, top_k, skew).tolist()


_LN_LO, _LN_STEP = float(_GRID_LN_G[0]), float(_GRID_LN_G[1] - _GRID_LN_G[0])


def distinct_experts(*, experts, top_k, tokens, skew: float = 0.0):
    """Expected distinct experts per MoE layer visited by `tokens` independent draws of top-k of E. Floats or numpy
    arrays (tokens)."""
    if skew <= 0.0:
        return experts * (1.0 - (1.0 - top_k / experts) ** tokens)
    if isinstance(tokens, float | int) and 1e-2 <= tokens < 1e7:  # the simulation's per-step call: no numpy
        t = (math.log(tokens) - _LN_LO) / _LN_STEP
        i = min(int(t), len(_GRID_LN_G) - 2)
        table = _table_list(int(experts), float(top_k), float(skew))
        return table[i] + (t - i) * (table[i + 1] - table[i])
    g = np.asarray(tokens, dtype=float)
    ln_g = np.log(np.maximum(g, 1e-300))
    table = _table(int(experts), float(top_k), float(skew))
    out = np.interp(ln_g, _GRID_LN_G, table)
    low = g < 1e-2  # below the grid (a fraction of a draw: never a real step's), the sum itself; 0 draws touch 0
    if np.any(low):
        exact = _touched(np.where(low & (g > 0), g, 1.0), _log_miss(int(experts), float(top_k), float(skew)))
        out = np.where(low, np.where(g > 0, exact, 0.0), out)
    return float(out) if out.ndim == 0 else out
