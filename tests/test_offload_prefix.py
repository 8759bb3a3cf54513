"""Swap vs recompute, cache tiers and prefix reuse: the Italian seed's numbers and block-arithmetic properties."""

import pytest
from conftest import scenario

from calc.evaluate import evaluate
from calc.offload import swap_recompute_ratio_closed_form
from calc.prefix import TENANT_NOTE, conversation_prefill_tokens, reuse_saving
from calc.units import KiB


# --- published (seed) and hand-computed ------------------------------------------------------------------------
@pytest.mark.parametrize("kv_kib, one_way, both", [(512, 1.3, 0.67), (128, 5.3, 2.7)])
def test_swap_recompute_closed_form(kv_kib, one_way, both):
    # 2 · 7e9 · 25e9 / (5e14 · 524,288) = 1.335; GQA-8 (131,072 B) = 5.34; counting the way out halves them
    kw = dict(params=7e9, host_bytes_per_s=25e9, effective_flop_per_s=5e14, kv_bytes_per_token=kv_kib * KiB)
    assert swap_recompute_ratio_closed_form(**kw) == pytest.approx(one_way, abs=0.05)
    assert swap_recompute_ratio_closed_form(**kw, both_ways=True) == pytest.approx(both, abs=0.05)


@pytest.mark.parametrize("turns, without, with_", [(8, 9_000, 2_000), (10, 13_750, 2_500), (20, 52_500, 5_000)])
def test_conversation_prefill_tokens(turns, without, with_):
    assert conversation_prefill_tokens(turns=turns, tokens_per_turn=250, reuse=False) == without  # 250·n(n+1)/2
    assert conversation_prefill_tokens(turns=turns, tokens_per_turn=250, reuse=True) == with_  # 250·n
    assert without / with_ == reuse_saving(turns)


def test_reuse_savings_of_the_seed():
    assert reuse_saving(10) == 5.5 and reuse_saving(20) == 10.5


def test_report_carries_the_offload_keys_and_the_tenant_note(catalog):
    d = evaluate(scenario(), catalog).to_dict()
    for k in ("swap_recompute_ratio", "swap_s", "recompute_s", "prefix_reuse_saving"):
        assert d[k] > 0
    assert d["prefix_reuse_saving"] == 5.5  # default 10 turns
    assert d["prefix"]["tenant_note"] == TENANT_NOTE and "per tenant" in TENANT_NOTE


# --- properties ------------------------------------------------------------------------------------------------
def test_shared_system_prompt_fits_more_requests(catalog):
    base = evaluate(scenario(input_len=2048, shared_prefix_len=0), catalog).prefix
    shared = evaluate(scenario(input_len=2048, shared_prefix_len=1536), catalog).prefix
    assert shared.shared_prefix_blocks == 1536 // 16 == 96
    assert shared.max_concurrency_with_sharing > base.max_concurrency_with_sharing
    assert shared.blocks_saved == (16 - 1) * 96  # C − 1 copies of the prefix's blocks are not stored
    assert shared.ttft_saved_per_request_s > 0


def test_mha_swaps_less_favourably_than_gqa(catalog):
    gqa = evaluate(scenario(model="llama-3.1-8b", gpu="a100-80gb-sxm"), catalog).offload
    mha = evaluate(scenario(model="llama-2-7b", gpu="a100-80gb-sxm", max_model_len=4096), catalog).offload
    assert gqa.swap_recompute_ratio > 2 * mha.swap_recompute_ratio  # 4× fewer KV bytes per token


def test_ratio_grows_past_the_attention_crossover(catalog):
    r = evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=131072), catalog).offload
    long = [p.ratio for p in r.curve if p.context >= r.attention_crossover_tokens]
    assert len(long) >= 2 and long == sorted(long)
    mid = [p.ratio for p in r.curve if r.knee_tokens * 4 < p.context < r.attention_crossover_tokens / 8]
    assert max(mid) / min(mid) < 1.3  # nearly independent of L between knee and crossover


def test_slower_tiers_reload_slower(catalog):
    tiers = evaluate(scenario(), catalog).offload.tiers
    reload = [t.reload_s for t in tiers]
    assert reload[0] < reload[1] <= reload[3] and reload[1] < reload[2]
    assert all(t.capacity_tokens >= 0 for t in tiers)


def test_the_gpu_tier_holds_what_vllm_says_the_pool_holds(catalog):
    """Without per-request state the HBM tier is vLLM's "GPU KV cache size" itself (blocks × block_size), not a
    bytes ratio a few tokens off it (479,316 beside 479,312)."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    for kw in (dict(), dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=3000)):
        r = evaluate(Scenario(**kw), catalog)
        hbm = next(t for t in r.offload.tiers if t.name == "GPU memory (HBM)")
        assert hbm.capacity_tokens == r.memory.num_gpu_blocks * r.scenario.block_size == r.memory.kv_cache_tokens


def test_a_sliding_window_models_swap_moves_only_what_its_layers_hold(catalog):
    """An audit: Gemma-3-27B's swap of an 8,000-token context counted every layer at 8,000 tokens (507,904 B a token:
    4.06 GB, 63.5 ms over 64 GB/s). Its 52 sliding layers hold at most their 1,024-token window: per GPU
    81,920 · 8,000 + 425,984 · 1,024 = 655,360,000 + 436,207,616 = 1,091,567,616 B, 17.06 ms at 64 GB/s."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    r = evaluate(Scenario(model="gemma-3-27b", gpu="h100-sxm", input_len=7000, output_len=1000, concurrency=4), catalog)
    assert r.gpu.host_link_bytes_per_s == 64e9
    assert r.offload.swap_s == pytest.approx(1_091_567_616 / 64e9, rel=1e-9)
    dense = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", input_len=7000, output_len=1000), catalog)
    assert dense.offload.swap_s == pytest.approx(8000 * 131_072 / 64e9, rel=1e-9)  # no window: every token


def test_the_seeds_closed_form_ratio_is_printed_beside_the_full_models(catalog):
    """The seed: 7e9 parameters, 25 GB/s, 5e14 FLOP/s, 512 KiB a token (MHA): recompute / swap = 2 · 7e9 · 25e9 /
    (5e14 · 524,288) = 1.34 ≈ 1.3. Llama-2-7B's 6.6 B active parameters give 1.26 (within 5 % of the seed's 1.3), the
    full prefill model 1.58 (its attention and weight-read floor): the text shows both (an audit could not find 1.3)."""
    from boundary.view_fleet import beyond_lines
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    r = evaluate(Scenario(model="llama-2-7b", gpu="h100-sxm", peak_tflop_per_s=1000, mfu=0.5, host_link_gb_per_s=25,
                          input_len=2048, output_len=1, max_model_len=4096, concurrency=1), catalog)  # fmt: skip
    assert 2 * 7e9 * 25e9 / (5e14 * 524_288) == pytest.approx(1.335, abs=1e-3)
    assert r.offload.closed_form_ratio == pytest.approx(1.3, rel=0.05)
    assert any("closed form 2·N_p·B_host / (P_eff·m_kv) = 1.26× one way" in x for x in beyond_lines(r))


def test_a_shared_prompt_is_held_once_in_every_kv_group_that_holds_it(catalog):
    """An audit: Gemma-3-27B (10 global layers, 52 sliding ones of a 1,024-token window: vLLM's hybrid allocator
    makes groups of 10 layers, 1 full + 6 sliding = 7) with a 512-token shared prompt counted the prefix as one group's
    32 blocks. A request of 1,280 tokens stays within the window, so every group holds the prefix: 7 × 512 / 16 = 224
    blocks once, and each of 16 requests holds 224 fewer: saved 15 × 224 = 3,360 (it said 3,552)."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    r = evaluate(Scenario(model="gemma-3-27b", gpu="h100-pcie", shared_prefix_len=512, concurrency=16), catalog)
    assert r.memory.kv_groups == 7 and r.scenario.request_len == 1280
    assert r.prefix.shared_prefix_blocks == 7 * 512 // 16 == 224
    assert r.prefix.blocks_saved == 15 * 224 == 3360


def test_a_disaggregated_transfer_sends_what_a_sliding_layer_holds(catalog):
    """The prefill → decode transfer of a 7,000-token Gemma-3-27B prompt: 81,920 B a token in its global layers and
    425,984 B a token up to the 1,024-token window in its sliding ones, 573,440,000 + 436,207,616 = 1,009,647,616 B a GPU
    (it counted every layer at 7,000 tokens: 507,904 · 7,000 = 3,555,328,000 B); the search sends the same."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    r = evaluate(Scenario(model="gemma-3-27b", gpu="h100-sxm", input_len=7000, output_len=1000, disaggregated=True),
                 catalog)  # fmt: skip
    held = 81_920 * 7000 + 425_984 * 1024
    assert held == 573_440_000 + 436_207_616
    assert r.latency.kv_transfer_s == pytest.approx(held / r.latency.kv_transfer_link_bytes_per_s, rel=1e-12)
