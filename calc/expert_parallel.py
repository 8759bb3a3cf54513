"""Expert parallelism: each of N GPUs holds E/N whole experts instead of a 1/N slice of every expert, so a step
waits for its busiest GPU.

    touched experts on a GPU ~ Binomial(E/N, q),   q = touched / E          (each of its experts touched or not)
    busiest GPU ≈ min(E/N, μ + z_N·σ),             μ = (E/N)·q,  σ² = (E/N)·q·(1 − q)
    bytes factor = busiest / μ                      (×1 where every expert is touched, or every GPU holds one)
    routed tokens on a GPU ~ Binomial(A, 1/N),     A = tokens × top_k     (token-expert assignments a layer)
    tokens factor = min(N, 1 + z_N·√((N − 1) / A))

z_N = E[max of N independent standard normals] (0.5642 = 1/√π for N = 2, 1.0294 for 4, 1.4236 for 8): the expected
excess of the busiest of N GPUs over the mean, in standard deviations. Under tensor parallelism every GPU reads
its slice of every touched expert and gets every token: balanced by construction. The MoE layer's all-gather and
reduce-scatter move an all-reduce's bytes (vLLM's allgather_reducescatter all2all backend), so the link terms do
not change.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=64)
def expected_max_normal(n: int) -> float:
    """E[max of n iid N(0, 1)] = ∫ x · n φ(x) Φ(x)^(n−1) dx (trapezoid on [−9, 9], 4,001 points; exact for n = 1, 2
    to 1e-9). 0 for n ≤ 1."""
    if n <= 1:
        return 0.0
    x = np.linspace(-9.0, 9.0, 4001)
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return float(np.trapezoid(x * n * phi * cdf ** (n - 1), x))


def bytes_factor(experts: int, ranks: int, touched: float) -> float:
    """The busiest GPU's touched experts over the mean (≥ 1): what its whole-expert reads cost against a
    tensor-parallel slice of every touched expert. `touched`: distinct experts a MoE layer's tokens visit."""
    per = experts / ranks
    q = min(1.0, max(touched / experts, 1e-12))
    mu = per * q
    return min(per, mu + expected_max_normal(ranks) * math.sqrt(per * q * (1.0 - q))) / mu


def tokens_factor(ranks: int, assignments: float) -> float:
    """The busiest GPU's routed tokens over the mean (≥ 1), for `assignments` token-expert pairs a layer."""
    return min(float(ranks), 1.0 + expected_max_normal(ranks) * math.sqrt((ranks - 1) / max(assignments, 1.0)))


def expert_ranks(s, m) -> int:
    """GPUs the routed experts are spread over whole: the TP group (all data-parallel ranks' GPUs) under
    enable_expert_parallel for a model with routed experts, else 1 (each GPU a slice of every expert, or none)."""
    if not (s.enable_expert_parallel and m.routed_experts):
        return 1
    return s.tensor_parallel_size * s.data_parallel_size
