"""SGLang's pool for sliding-window and chunked-attention layers (calc/sglang_swa.py): every layer whole where its
hybrid SWA memory is off, two pools at --swa-full-tokens-ratio where it is on."""

import math

import pytest

from calc.evaluate import evaluate
from calc.kv_cache import KVGroup
from calc.scenario import Scenario
from calc.sglang_swa import SWA_FULL_TOKENS_RATIO, windowed_share


def _mem(catalog, version, gpu="h100-sxm", model="gpt-oss-20b", engine="sglang"):
    r = evaluate(Scenario(model=model, gpu=gpu, engine=engine, engine_version=version), catalog)
    return r, r.memory


def test_gpt_oss_block_bytes_by_hand(catalog):
    # gpt-oss-20b: 24 layers, 12 sliding (window 128) and 12 full; 8 KV heads × head_dim 64, bf16 KV.
    # One token of one layer: 2 (K, V) × 8 × 64 × 2 B = 2,048 B.
    # 0.5.4 (hybrid SWA off): a 16-token block holds every layer whole: 16 × 24 × 2,048 = 786,432 B
    # 0.5.9 on an H100 (two pools): 16 × (12 × 2,048 + 0.8 × 12 × 2,048) = 16 × 44,236.8 = 707,788.8 B
    _, off = _mem(catalog, "0.5.4.post2")
    _, split = _mem(catalog, "0.5.9")
    assert off.layout.block_bytes == pytest.approx(16 * 24 * 2048)
    assert split.layout.block_bytes == pytest.approx(16 * (12 * 2048 + 0.8 * 12 * 2048))
    # the same memory, so the split pool holds 24 / 21.6 as many full-layer tokens
    assert off.kv_cache_memory_bytes == pytest.approx(split.kv_cache_memory_bytes)
    assert split.num_gpu_blocks == math.floor(split.kv_cache_memory_bytes / (16 * (12 * 2048 + 0.8 * 12 * 2048)))
    assert split.num_gpu_blocks / off.num_gpu_blocks == pytest.approx(24 / 21.6, rel=1e-4)


def test_ratio_as_sglang_logs_it():
    # sgl-project/sglang PR #18039 (MiMo-V2-Flash, default ratio): "Use sliding window memory pool.
    # full_layer_tokens=375360, swa_layer_tokens=300288"
    assert 300_288 / 375_360 == pytest.approx(SWA_FULL_TOKENS_RATIO)


@pytest.mark.parametrize(("engine", "version", "model_type", "arch", "share"), [
    ("vllm", "latest", "gpt_oss", "hopper", None),  # vLLM's hybrid manager caps the windows instead
    ("sglang", "0.5.7", "gpt_oss", "hopper", 1.0),  # server_args.py 0.5.0rc2–0.5.7: disable_hybrid_swa_memory = True
    ("sglang", "0.5.8", "gpt_oss", "hopper", 0.8),  # model_config.py 0.5.8: GptOssForCausalLM in hybrid_swa_archs
    ("sglang", "0.5.9", "gpt_oss", "blackwell", 1.0),  # trtllm_mha (sm100's default) disables it, 0.5.8–0.5.9
    ("sglang", "0.5.10", "gpt_oss", "blackwell", 0.8),
    ("sglang", "latest", "gemma3_text", "hopper", 1.0),  # overrides.py 0.5.15: _gemma2_gemma3_overrides
    ("sglang", "0.5.7", "llama4_text", "hopper", 1.0),  # split only with --hybrid-kvcache-ratio (default None)
    ("sglang", "latest", "llama4_text", "hopper", 0.8),
    ("sglang", "0.5.11", "laguna", "hopper", 1.0),  # LagunaForCausalLM joins the list in 0.5.12
    ("sglang", "0.5.12", "laguna", "hopper", 0.8),
    ("sglang", "latest", "mistral", "hopper", 1.0),  # no window in SGLang's own class: every layer whole
])  # fmt: skip
def test_which_release_splits(engine, version, model_type, arch, share):
    assert windowed_share(engine, version, model_type, arch) == share


def test_split_blocks_property():
    g, bs, w, r = KVGroup("split", 128, share=0.8), 16, 128, 0.8
    prev = 0
    for tokens in range(1, 2_000):
        n = g.blocks_for(tokens, block_size=bs, max_num_batched_tokens=2048)
        b = math.ceil(tokens / bs)
        assert n >= b >= 1 and n >= prev  # never below the full pool's blocks; grows with the request
        if tokens >= w / r:  # the window's tokens no longer bind: the full pool does
            assert n == b
        else:
            assert n == math.ceil(min(b, w // bs) / r) or n == b
        prev = n


def test_note_names_the_rule(catalog):
    r, _ = _mem(catalog, "0.5.4.post2")
    assert any(n.startswith("SGLang keeps the whole context in all 24 layers") for n in r.notes)
    r, _ = _mem(catalog, "0.5.9")
    assert any(n.startswith("SGLang splits its pool") for n in r.notes)
    r, _ = _mem(catalog, "latest", engine="vllm")
    assert not any(n.startswith("SGLang") for n in r.notes)


def test_the_verdict_says_when_the_swa_pool_binds(catalog):
    """16 × 1,280 tokens of Llama 4 Scout under SGLang: 1,280 / 16 = 80 blocks a request in the full pool, but the
    chunked layers' pool holds 0.8 × as many tokens and a request of 1,280 < 8,192 keeps all of them there:
    ⌈80 / 0.8⌉ = 100 blocks a request, 1,600 for 16 — more than tokens / block_size, so the banner says why."""
    from boundary import view

    r = evaluate(Scenario(model="llama-4-scout-17b-16e", gpu="h100-sxm", tensor_parallel_size=4, engine="sglang"),
                 catalog)  # fmt: skip
    assert r.fit.blocks_needed == 16 * math.ceil(1280 / 16 / 0.8) == 1_600
    assert "SGLang's sliding-window pool (0.8 × the full pool's tokens) binds below 10,240 tokens" in view.verdict(r)
    # gpt-oss: 1,280 tokens > 128 / 0.8: the full pool binds, nothing to say
    assert "binds" not in view.verdict(evaluate(Scenario(model="gpt-oss-20b", gpu="h100-sxm", engine="sglang",
                                                         engine_version="0.5.9"), catalog))  # fmt: skip


def test_the_hybrid_manager_flag_is_sglangs_disable_hybrid_swa_memory(catalog):
    """disable_hybrid_kv_cache_manager under SGLang shrank the pool to the whole-context one while the note still said
    the pool was split and the launch line passed no flag (an audit, 2026-12-06): it is SGLang's own switch."""
    from calc.serve_command import joined, plan_serve_commands

    _, off = _mem(catalog, "0.5.9")
    s = Scenario(model="gpt-oss-20b", gpu="h100-sxm", engine="sglang", engine_version="0.5.9",
                 disable_hybrid_kv_cache_manager=True)  # fmt: skip
    flagged = evaluate(s, catalog)
    _, whole = _mem(catalog, "0.5.4.post2")
    assert flagged.memory.num_gpu_blocks == whole.num_gpu_blocks < off.num_gpu_blocks
    assert any(n.startswith("SGLang keeps the whole context in all 24 layers: --disable-hybrid-swa-memory")
               for n in flagged.notes)  # fmt: skip
    assert "--disable-hybrid-swa-memory" in joined(plan_serve_commands(flagged))
    already = evaluate(s.model_copy(update={"engine_version": "0.5.4"}), catalog)
    assert any(n.startswith("disable_hybrid_kv_cache_manager (SGLang's --disable-hybrid-swa-memory) changes nothing")
               for n in already.notes)  # fmt: skip


def test_the_memory_table_gives_the_split_pools_bytes_a_token(catalog):
    # gpt-oss-20b under SGLang 0.5.9: 12 × 2,048 + 0.8 × 12 × 2,048 = 44,236.8 B a full-pool token
    from boundary.view_memory import kv_section

    r, m = _mem(catalog, "0.5.9")
    rows = dict(kv_section(r).rows)
    assert rows["per full-pool token per GPU (SGLang's split)"].startswith("44,237 B")
    assert m.layout.bytes_per_pool_token == pytest.approx(12 * 2048 + 0.8 * 12 * 2048)
    assert m.num_gpu_blocks == math.floor(m.kv_cache_memory_bytes / (16 * 44_236.8))


def test_a_short_pool_names_the_engine_that_recovers(catalog):
    from boundary import view

    kw = dict(model="llama-4-scout-17b-16e", gpu="h100-sxm", tensor_parallel_size=4, input_len=8000, concurrency=64,
              max_model_len=16384)  # fmt: skip
    sg = view.missing_lines(evaluate(Scenario(engine="sglang", **kw), catalog))
    assert any(x.endswith(": SGLang retracts requests") for x in sg) and not any("vLLM" in x for x in sg)
