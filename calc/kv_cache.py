"""KV-cache bytes per token, and how vLLM lays a pipeline stage's layers out in its block pool.

Per attention layer and token, on one tensor-parallel rank (reference/vllm_kv.md §1):
    GQA/MHA   2 · max(1, n_kv_heads // tp) · head_dim · bytes(kv_dtype)      Qwen2.5-7B: 2 × 4 × 128 × 2 = 2,048 B
    MLA       (kv_lora_rank + qk_rope_head_dim) · bytes, on every rank         DeepSeek-V3: 576 × 2 = 1,152 B
    V3.2      fp8 KV: 656 B (fp8_ds_mla), plus the lightning indexer's 132 B in every layer
State layers (Mamba, Gated DeltaNet, …) hold a constant per request instead (calc.state).

Grouping (vllm/v1/core/kv_cache_utils.py, get_kv_cache_groups, vllm_kv.md §4): one group when every layer is alike
(`block = page · layers`); attention layers whose pages differ (NAS per-layer heads, V3.2's indexer) share one group
of summed pages; different kinds with one page size (full + sliding, full + chunked, attention + Mamba after the
block size is raised and the Mamba page padded) form groups of `group_size = min(layers per kind)`, each kind cut
into ⌈n / group_size⌉ groups, and one block id then holds `group_size` pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from calc.engine_spec import version_tuple
from calc.expr import E
from calc.speculative import speculative_blocks
from calc.state import state_shape

INDEXER_BYTES = 128 + 128 // 128 * 4  # DeepSeek-V3.2: index_head_dim fp8 values + one fp32 scale per 128
FP8_DS_MLA_BYTES = 656  # 512 fp8 latent + 4 fp32 scales + 64 bf16 RoPE values
HYBRID_ALIGN = 16  # attention block sizes vLLM picks for Mamba hybrids are multiples of 16


def attention_bytes_per_token_per_layer(m, *, kv_bytes_per_element: float, tp: int = 1, kv_heads: int | None = None
                                        ) -> float:  # fmt: skip
    """One attention layer, one token, on one GPU [bytes] (the indexer of V3.2 not included)."""
    if m.is_mla:
        if m.index_topk and kv_bytes_per_element == 1:
            return FP8_DS_MLA_BYTES
        return (m.kv_lora_rank + m.qk_rope_head_dim) * kv_bytes_per_element
    return 2 * max(1, (kv_heads or m.kv_heads) // tp) * m.kv_head_dim * kv_bytes_per_element


def kv_bytes_per_token_expr(m, layers: range | None, *, kv_bytes_per_element: float, tp: int = 1) -> E:
    """KV bytes one token adds in `layers` (all by default) on one GPU, as a formula (sliding and chunked layers
    counted in full: their cap depends on the request). KV-shared layers (Gemma 3n) add nothing."""
    plan = m.plan
    n = plan.cached_attention(layers)
    if n == 0:
        return E(0, "no attention layers")
    b = E(kv_bytes_per_element, "bytes")
    if m.is_mla:
        if m.index_topk and kv_bytes_per_element == 1:
            per_layer = E(FP8_DS_MLA_BYTES, "fp8_ds_mla")
        else:
            per_layer = (E(m.kv_lora_rank, "kv_lora_rank") + E(m.qk_rope_head_dim, "qk_rope_head_dim")) * b
        if m.index_topk:
            per_layer = per_layer + E(INDEXER_BYTES, "indexer")
        return E(n, "layers") * per_layer
    if m.kv_heads_per_layer:
        r = layers or range(m.num_hidden_layers)
        heads = sum(max(1, h // tp) for h in m.kv_heads_per_layer[r.start:r.stop] if h)
        return E(2, "K,V") * E(heads, "Σ kv_heads") * E(m.kv_head_dim, "head_dim") * b
    heads = E(max(1, m.kv_heads // tp), "kv_heads" if tp == 1 else "kv_heads/tp")
    return E(2, "K,V") * E(n, "layers") * heads * E(m.kv_head_dim, "head_dim") * b


def kv_bytes_per_token(m, *, kv_bytes_per_element: float, tp: int = 1) -> float:
    """All attention layers, one token, one GPU [bytes] (sliding and chunked layers counted in full)."""
    return kv_bytes_per_token_expr(m, None, kv_bytes_per_element=kv_bytes_per_element, tp=tp).value


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
    """A KV-cache group of vLLM's allocator: layers of one kind that share block ids."""

    kind: str  # "full" | "sliding" | "chunked" | "state"
    window: int | None = None
    """Sliding window or attention chunk, tokens."""
    state_blocks: int = 1
    """Pages a request's state holds: 1, or 2 under prefix caching's align mode (calc.kv_cache.state_blocks)."""
    cp: int = 1
    """Decode context parallelism: a request's tokens split over this many GPUs, ⌈L / cp⌉ on each."""
    share: float = 1.0
    """kind "split" (SGLang's two pools, calc.sglang_swa): SWA tokens per full token."""

    @property
    def swa_bound_below(self) -> float:
        """kind "split": the request length under which the SWA pool binds, window / share [tokens]."""
        return self.window / self.share  # type: ignore[operator]

    def blocks_for(self, tokens: int, *, block_size: int, max_num_batched_tokens: int) -> int:
        """Blocks one request of `tokens` tokens holds in this group (vLLM max_memory_usage_bytes / page).

        sliding: cdiv(min(W − 1 + max_num_batched_tokens, L), bs) + 1 (the window may start mid-block)
        chunked: cdiv(min(chunk + max_num_batched_tokens, L), bs)      state: 1 page (2 in align mode), whatever L
        split (SGLang's full and SWA pools, in full-pool blocks): max(b, cdiv(min(b, cdiv(W, bs)), r)), b = cdiv(L, bs)
        """
        if self.kind == "state":
            return self.state_blocks
        if self.kind == "split":
            b = ceil(tokens / block_size)
            return max(b, ceil(min(b, ceil(self.window / block_size)) / self.share))  # type: ignore[operator]
        if self.kind == "sliding":
            return ceil(min(self.window - 1 + max_num_batched_tokens, tokens) / block_size) + 1  # type: ignore[operator]
        if self.kind == "chunked":
            return ceil(min(self.window + max_num_batched_tokens, tokens) / block_size)  # type: ignore[operator]
        return ceil(ceil(tokens / self.cp) / block_size)  # DCP: "each dcp rank only need save (L // dcp) tokens"


@dataclass(frozen=True)
class StageLayout:
    """One pipeline stage's layers in vLLM's block pool, on one GPU."""

    layers: int
    groups: tuple[KVGroup, ...]
    layers_per_group: int
    """Layers that share each block id: all when uniform, the smallest per-kind count when hybrid."""
    padding_layers: int
    """Empty layer slots the hybrid grouping adds ("Add N padding layers")."""
    block_size: int
    page_bytes: float
    """One block of one layer (attention: block_size tokens; state: one request), after padding."""
    block_bytes: float
    """Memory one block id takes on this GPU: page · layers_per_group, or the summed pages of a uniform-type group."""
    attention_bytes_per_token: float
    """This stage's attention layers, one token, this GPU (window caps not applied)."""
    state_bytes_per_request: float
    """This stage's state layers, one request, this GPU, as vLLM charges them (padded pages)."""
    state_bytes_unpadded: float
    block_size_note: str

    @property
    def split(self) -> KVGroup | None:
        """SGLang's full and SWA pools as one group (calc.sglang_swa), or None for any other layout."""
        return self.groups[0] if len(self.groups) == 1 and self.groups[0].kind == "split" else None

    @property
    def bytes_per_pool_token(self) -> float:
        """One block's bytes / block_size [B]: under SGLang's split, the full layers' bytes a token + share × the
        windowed layers' (gpt-oss-20b: 12 × 2,048 + 0.8 × 12 × 2,048 = 44,236.8 B)."""
        return self.block_bytes / self.block_size

    def swa_binds(self, tokens: int) -> bool:
        """Whether SGLang's SWA pool, not its full one, sets a request's blocks: requests under window / share tokens
        take more blocks than tokens / block_size."""
        return self.split is not None and \
            self.blocks_per_request(tokens, max_num_batched_tokens=0) > ceil(tokens / self.block_size)  # fmt: skip

    def blocks_per_request(self, tokens: int, *, max_num_batched_tokens: int) -> int:
        """Blocks a request of `tokens` tokens takes from the shared pool: the sum over groups."""
        return sum(g.blocks_for(tokens, block_size=self.block_size, max_num_batched_tokens=max_num_batched_tokens)
                   for g in self.groups)  # fmt: skip


def mla_arch(g) -> str:
    """The arch as vLLM's MLA backends tell it apart: SM 12.x Blackwell (RTX 5090, RTX PRO 6000) has neither FlashMLA
    nor CUTLASS MLA (SM 10.x), only Triton MLA, which takes the block size asked for."""
    return "blackwell-sm12" if g.arch == "blackwell" and g.compute_capability and int(g.compute_capability) == 12 \
        else g.arch  # fmt: skip


def forced_block_size(m, *, requested: int, arch: str) -> tuple[int, str]:
    """MLA backends force their own block size (vllm_kv.md §2); `arch` as mla_arch gives it."""
    if m.is_mla and m.index_topk and arch in ("hopper", "blackwell"):
        return 64, "FlashMLASparse (DeepSeek-V3.2) forces 64-token blocks"
    if m.is_mla and arch == "hopper":
        return 64, "FlashMLA forces 64-token blocks on Hopper"
    if m.is_mla and arch == "blackwell":
        return 128, "CUTLASS MLA forces 128-token blocks on Blackwell"
    return requested, ""


def stage_layout(m, layers: range, *, tp: int = 1, kv_bytes_per_element: float = 2.0, model_bytes: float = 2.0,
                 block_size: int = 16, arch: str = "ampere", hybrid_manager: bool = True,
                 ssm_dtype: str = "auto", separate_state: bool = False, state_pages: int = 1,
                 cp: int = 1, num_spec: int = 0, windowed_share: float | None = None) -> StageLayout:  # fmt: skip
    """`windowed_share`: SGLang's cost of a windowed layer's token against a full layer's (calc.sglang_swa; None:
    vLLM's window caps). `separate_state`: the state layers keep their own pool (SGLang's MambaPool beside its token pool, calc.sglang_hybrid),
    so a model with attention layers too gets blocks of its attention layers alone. `state_pages`: blocks a request's
    state holds (state_blocks); `cp`: the decode-context-parallel size (vLLM FullAttentionSpec.max_memory_usage_bytes
    with DCP: cdiv(cdiv(L, dcp), block_size) blocks a request; the pool's blocks are each GPU's own); `num_spec`: speculative
    tokens, rows a conv state adds (calc.state.state_shape)."""
    plan = m.plan
    block, note = forced_block_size(m, requested=block_size, arch=arch)
    attn_1tok = attention_bytes_per_token_per_layer(m, kv_bytes_per_element=kv_bytes_per_element, tp=tp)
    attn_stage = kv_bytes_per_token_expr(m, layers, kv_bytes_per_element=kv_bytes_per_element, tp=tp).value
    counts = {"full": plan.cached("full_attention", layers) + plan.cached("hybrid", layers),
              "sliding": plan.cached("sliding_attention", layers), "chunked": plan.cached("chunked_attention", layers),
              "state": plan.state(layers)}  # fmt: skip
    if not hybrid_manager or windowed_share == 1.0:  # vLLM's --disable-hybrid-kv-cache-manager, or SGLang's pool
        counts["full"] += counts.pop("sliding") + counts.pop("chunked")  # without its split: windows in full
    counts = {k: n for k, n in counts.items() if n}
    if windowed_share is not None and counts.keys() & {"sliding", "chunked"} and "state" not in counts:
        return _split_layout(m, layers, counts, windowed_share, block_size=block, kv_bytes_per_element=kv_bytes_per_element,
                             tp=tp, attn_1tok=attn_1tok, attn_stage=attn_stage, note=note)  # fmt: skip
    if separate_state and len(counts) > 1:
        counts.pop("state", None)
    shape = state_shape(m, tp=tp, model_bytes=model_bytes, ssm_override=ssm_dtype, num_spec=num_spec) \
        if "state" in counts else None  # fmt: skip
    state_page = shape.bytes if shape else 0.0
    windows = {"sliding": m.sliding_window, "chunked": m.attention_chunk_size}
    n_layers = len(layers)

    if shape and len(counts) > 1:  # attention + state: raise the block size until a page holds one state
        need = HYBRID_ALIGN * ceil(state_page / (HYBRID_ALIGN * attn_1tok))
        if block < need:
            block, note = need, f"attention block size raised to {need:,} tokens so a page holds one layer's state"
        state_page_padded = block * attn_1tok
    else:
        state_page_padded = state_page
    page = block * attn_1tok if "state" not in counts or len(counts) > 1 else state_page
    n_state = counts.get("state", 0)
    common = dict(block_size=block, attention_bytes_per_token=attn_stage, state_bytes_per_request=n_state *
                  state_page_padded * state_pages, state_bytes_unpadded=n_state * state_page * state_pages,
                  block_size_note=note)  # fmt: skip

    if not counts:
        return StageLayout(n_layers, (), 1, 0, page_bytes=0.0, block_bytes=0.0, **common)
    if len(counts) == 1:
        kind, n = next(iter(counts.items()))
        group = KVGroup(kind, windows.get(kind), state_pages, cp)
        uneven = kind == "full" and (m.kv_heads_per_layer or m.index_topk)
        if uneven:  # one group of summed pages (UniformTypeKVCacheSpecs): Σ block · bytes per token per layer
            return StageLayout(n_layers, (group,), n, 0, page_bytes=page, block_bytes=block * attn_stage, **common)
        return StageLayout(n_layers, (group,), n, 0, page_bytes=page, block_bytes=page * n, **common)
    size = min(counts.values())
    groups: list[KVGroup] = []
    for kind, n in counts.items():
        groups += [KVGroup(kind, windows.get(kind), state_pages, cp)] * ceil(n / size)
    padding = len(groups) * size - sum(counts.values())
    return StageLayout(n_layers, tuple(groups), size, padding, page_bytes=page, block_bytes=page * size, **common)


def _split_layout(m, layers: range, counts: dict, share: float, *, block_size: int, kv_bytes_per_element: float,
                  tp: int, attn_1tok: float, attn_stage: float, note: str) -> StageLayout:
    """SGLang's full and SWA pools as one pool of full-pool blocks (calc.sglang_swa): a block holds block_size tokens
    of every full layer and share × block_size of every windowed one."""
    kind = "sliding" if "sliding" in counts else "chunked"
    window = m.sliding_window if kind == "sliding" else m.attention_chunk_size
    windowed = sum(kv_bytes_per_token_expr(m, range(i, i + 1), kv_bytes_per_element=kv_bytes_per_element, tp=tp).value
                   for i in layers if m.plan.cached(kind + "_attention", range(i, i + 1)))  # fmt: skip
    per_token = attn_stage - windowed + share * windowed
    return StageLayout(len(layers), (KVGroup("split", window, share=share),), len(layers), 0,
                       page_bytes=block_size * attn_1tok, block_bytes=block_size * per_token, block_size=block_size,
                       attention_bytes_per_token=attn_stage, state_bytes_per_request=0.0, state_bytes_unpadded=0.0,
                       block_size_note=note)  # fmt: skip


ALIGN_MODE_TYPES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
"""Hybrids whose vLLM class does not declare SupportsMambaPrefixCaching, so that --enable-prefix-caching selects
mamba_cache_mode align (models/config.py MambaModelConfig; vllm#51250 for Qwen3.5) rather than 'all'."""
ALIGN_MODE_SINCE = (0, 15)
"""vLLM's align mode (vllm#30877, merged 2025-12): 0.15 is taken as its first release (not read in a wheel)."""


def state_blocks(s, m) -> int:
    """Blocks each request's recurrent state takes (vLLM MambaSpec.max_memory_usage_bytes / page): 1 with
    mamba_cache_mode none (prefix caching off, a hybrid's default), 2 in align mode — the running
    state and the one checkpointed at the last block boundary (v1/kv_cache_interface.py). club-3090#612: Qwen3.6-35B-A3B
    on an RTX 5090 with prefix caching, 299 blocks / (63 attention + 3 GDN groups × 2) = 4.33x, as logged. With
    speculative decoding, num_speculative_tokens more (MambaSpec.num_speculative_blocks)."""
    extra = speculative_blocks(s)
    if s.engine != "vllm" or not s.enable_prefix_caching or m.model_type not in ALIGN_MODE_TYPES:
        return 1 + extra
    version = version_tuple(s.engine_version)
    return (2 if version is None or version[:2] >= ALIGN_MODE_SINCE else 1) + extra


def blocks_from_bytes(available_bytes: float, block_bytes: float) -> int:
    """vLLM's get_num_blocks: int(available // page // layers) = ⌊available / (page · layers)⌋; 0 when nothing is
    left."""
    if available_bytes <= 0 or block_bytes <= 0:
        return 0
    return int(available_bytes // block_bytes)
