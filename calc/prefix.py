"""Prefix reuse (the Italian seed, "La leva che resta").

    a conversation of n turns of m tokens: prefill m·n(n+1)/2 tokens without reuse, m·n with it, saving (n+1)/2
    250 tokens/turn: 8 turns 9,000 tokens; 10 turns 13,750 vs 2,500 (5.5×); 20 turns 10.5×
A document of D tokens asked about k times (questions of tokens_per_turn tokens) is prefilled once with reuse.
A system prompt of P tokens shared by every request is stored once: its full blocks (⌊P / block_size⌋) are
shared, so C requests need `shared + C · blocks(L − shared tokens)` blocks instead of `C · blocks(L)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.latency import LatencyResult
from calc.offload import recompute_s
from calc.pool import PoolResult
from calc.prefix_hit import cache_block_tokens
from calc.scenario import Scenario

TENANT_NOTE = (
    "A shared prefix cache is a timing side channel: a fast first token tells a user that someone else already "
    "sent that prefix (7 of 17 API providers were found sharing across tenants). Partition the cache per tenant, "
    "and share only declared-public prefixes such as the product's own system prompt."
)


def conversation_prefill_tokens(*, turns: int, tokens_per_turn: int, reuse: bool) -> int:
    return tokens_per_turn * turns if reuse else tokens_per_turn * turns * (turns + 1) // 2


def reuse_saving(turns: int) -> float:
    return (turns + 1) / 2


@dataclass(frozen=True)
class PrefixResult:
    conversation_tokens_without_reuse: int
    conversation_tokens_with_reuse: int
    prefix_reuse_saving: float
    last_turn_ttft_without_reuse_s: float
    last_turn_ttft_with_reuse_s: float
    shared_prefix_blocks: int
    ttft_saved_per_request_s: float
    blocks_saved: int
    max_concurrency_without_sharing: int
    max_concurrency_with_sharing: int
    document_tokens_without_reuse: int
    document_tokens_with_reuse: int
    document_ttft_first_s: float
    document_ttft_repeat_s: float
    """A later question about the same document (tokens_per_turn tokens) with its KV reused."""
    tenant_note: str
    reuse_note: str = ""
    """Why the engine reuses no prefix for this scenario ('' where it does): the 'with reuse' figures then equal the
    ones without."""


NO_REUSE = ("no prefix is reused here: vLLM caches a hybrid model's prefixes (its recurrent state beside the KV) only "
            "with enable_prefix_caching, from 0.15 (the state's align mode)")


def prefix(s: Scenario, mem: PoolResult, lat: LatencyResult) -> PrefixResult:
    n, t = s.turns, s.tokens_per_turn
    ctx_last = n * t
    need = mem.blocks_per_request
    unit = cache_block_tokens(s, mem)
    shared_tokens = s.shared_len // unit * unit if unit else 0  # whole blocks (one a GPU each)
    per_req = need(s.request_len)
    per_req_rest = need(max(1, s.request_len - shared_tokens))
    # the prefix's blocks in every KV group that still holds them (a sliding group past its window does not): what
    # a request no longer holds alone (32 of one group for a 512-token prefix; 7 groups × 32 for Gemma-3 within its
    # window)
    shared_blocks = per_req - per_req_rest if shared_tokens else 0
    B, C = mem.num_gpu_blocks, s.rank_concurrency  # one rank's pool and requests
    with_sharing = (B - shared_blocks) // per_req_rest if B > shared_blocks else 0

    def rec(k: int) -> float:
        return recompute_s(s, lat, k) if k > 0 else 0.0

    def extend(cached: int, new: int) -> float:
        """Prefill `new` tokens after `cached` reused ones: their own pass, attending to the whole context."""
        return max(rec(cached + new) - rec(cached), rec(new))

    D, q, k = s.document_len, t, s.document_queries
    without = conversation_prefill_tokens(turns=n, tokens_per_turn=t, reuse=False)
    return PrefixResult(
        conversation_tokens_without_reuse=without,
        conversation_tokens_with_reuse=conversation_prefill_tokens(turns=n, tokens_per_turn=t, reuse=True) if unit else without,
        prefix_reuse_saving=reuse_saving(n) if unit else 1.0,
        last_turn_ttft_without_reuse_s=rec(ctx_last),
        last_turn_ttft_with_reuse_s=extend(ctx_last - t, t) if unit else rec(ctx_last),
        shared_prefix_blocks=shared_blocks,
        ttft_saved_per_request_s=rec(s.input_len) - extend(shared_tokens, s.input_len - shared_tokens),
        blocks_saved=max(0, C * per_req - (shared_blocks + C * per_req_rest)) if shared_blocks else 0,
        max_concurrency_without_sharing=min(B // per_req, s.max_num_seqs),
        max_concurrency_with_sharing=min(with_sharing, s.max_num_seqs),
        document_tokens_without_reuse=k * (D + q),
        document_tokens_with_reuse=D + k * q if unit else k * (D + q),
        document_ttft_first_s=rec(D + q),
        document_ttft_repeat_s=extend(D, q) if unit else rec(D + q),
        tenant_note=TENANT_NOTE,
        reuse_note="" if unit else NO_REUSE,
    )
