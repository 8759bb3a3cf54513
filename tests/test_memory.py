"""vLLM's KV-cache sizing: DESIGN.md's memory numbers, reference/vllm_kv.md's cases, and properties."""

import pytest
from conftest import scenario

from calc.evaluate import evaluate
from calc.kv_cache import kv_bytes_per_token, pp_layer_counts, stage_layout
from calc.pool import size_pool
from calc.units import GiB, KiB, MiB


def variant(m, **fields):
    """A model with some config fields changed (validated afresh, so its layer plan is rebuilt)."""
    return type(m).model_validate(m.model_dump() | fields)


def pool(catalog, model=None, gpu="rtx-4090", **kw):
    s = scenario(gpu=gpu, **kw)
    m = model or catalog.models[s.model]
    return size_pool(s, m, catalog.gpus[gpu])


# --- hand-computed -----------------------------------------------------------------------------------------------
def test_qwen_kv_bytes_per_token(catalog):
    m = catalog.models["qwen2.5-7b-instruct"]
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 2 * 28 * 4 * 128 * 2 == 57_344  # 56 KiB
    assert kv_bytes_per_token(m, kv_bytes_per_element=1) == 57_344 / 2  # fp8 halves it


def test_mha_and_gqa_variants(catalog):
    qwen_mha = variant(catalog.models["qwen2.5-7b-instruct"], num_key_value_heads=28)
    assert kv_bytes_per_token(qwen_mha, kv_bytes_per_element=2) == 392 * KiB  # 56 KiB × 7
    llama2 = catalog.models["llama-2-7b"]
    assert kv_bytes_per_token(llama2, kv_bytes_per_element=2) == 2 * 32 * 32 * 128 * 2 == 512 * KiB
    gqa8 = variant(llama2, num_key_value_heads=8)
    assert kv_bytes_per_token(gqa8, kv_bytes_per_element=2) == 128 * KiB


def test_mla_latent_is_not_split_by_tp(catalog):
    v3 = catalog.models["deepseek-v3"]
    for tp in (1, 8, 16):
        # 61 layers × (512 + 64) elements × 2 B = 70,272 B on every rank (DESIGN.md, vllm_kv.md §1.2)
        r = pool(catalog, gpu="h200", model=v3, tensor_parallel_size=tp)
        assert r.kv_bytes_per_token_per_gpu == 61 * 576 * 2 == 70_272
    assert pool(catalog, gpu="h200", model=v3).block_size == 64  # FlashMLA on Hopper


def test_tp_beyond_kv_heads_replicates(catalog):
    q235 = catalog.models["qwen3-235b-a22b"]  # 4 KV heads, head_dim 128, 94 layers
    tp4 = pool(catalog, gpu="h100-sxm", model=q235, tensor_parallel_size=4)
    tp8 = pool(catalog, gpu="h100-sxm", model=q235, tensor_parallel_size=8)
    assert tp8.kv_bytes_per_token_per_gpu == tp4.kv_bytes_per_token_per_gpu == 94 * 2 * 1 * 128 * 2


def test_pp_layer_split_as_get_pp_indices():
    assert pp_layer_counts(27, 2) == [14, 13]  # vllm_kv.md §6: stage 0 has 14 of 27 layers
    assert pp_layer_counts(32, 4) == [8, 8, 8, 8]
    assert pp_layer_counts(61, 4) == [15, 15, 16, 15]  # remainder: partitions[-2], [-3], … (get_pp_indices)


# --- published: the seed report and vLLM logs ------------------------------------------------------------------
def test_seed_pool_from_kv_cache_memory_bytes(catalog):
    # 6,884,950,016 B = 7,504 blocks × 16 tokens × 57,344 B; the log: 120,064 tokens, 14.66x at 8,192
    r = pool(catalog, kv_cache_memory_bytes=6_884_950_016, max_model_len=8192)
    assert r.num_gpu_blocks == 7_504
    assert r.kv_cache_tokens == 120_064
    assert round(r.max_concurrency, 2) == 14.66


def test_logged_641_gib_brackets_the_logged_tokens(catalog):
    # "Available KV cache memory: 6.41 GiB" is rounded to ±0.005 GiB; 6.41 GiB / 56 KiB = 120,025 tokens
    lo = pool(catalog, kv_cache_memory_bytes=6.405 * GiB).kv_cache_tokens
    hi = pool(catalog, kv_cache_memory_bytes=6.415 * GiB).kv_cache_tokens
    assert lo <= 120_064 <= hi
    assert 8192 * 56 * KiB == 448 * MiB  # one full 8,192-token request


def test_default_estimate_lands_on_the_seed_pool(catalog):
    # The seed's engine (≤0.19: no CUDA-graph subtraction; max_num_seqs 128, budget 2,048) logged 6.41 GiB.
    r = pool(catalog, max_num_seqs=128, estimate_cudagraphs=False)
    assert r.kv_cache_memory_bytes / GiB == pytest.approx(6.41, rel=0.02)


def test_mha_variant_holds_17152_tokens_and_816_token_prompts(catalog):
    qwen_mha = variant(catalog.models["qwen2.5-7b-instruct"], num_key_value_heads=28)
    s = scenario(kv_cache_memory_bytes=6_884_950_016, concurrency=16, output_len=256)
    from calc.workload import fit_workload

    mem = size_pool(s, qwen_mha, catalog.gpus["rtx-4090"])
    assert mem.pool_token_capacity == 17_152  # 6,884,950,016 / (16 × 401,408) = 1,072 blocks
    assert fit_workload(s, qwen_mha, mem).longest_prompt_at_concurrency == 816  # 1,072 − 256


def test_16_requests_of_8448_do_not_fit(catalog):
    r = evaluate(scenario(kv_cache_memory_bytes=6_884_950_016, input_len=8192, output_len=256,
                          max_model_len=8448, concurrency=16), catalog)  # fmt: skip
    assert r.fit.tokens_needed == 16 * (8192 + 256) == 135_168 > 120_064
    assert not r.fit.fits
    assert r.suggestions and all(s.fits for s in r.suggestions)
    assert any("kv_cache_dtype" in s.fields for s in r.suggestions)


def test_no_single_change_fits_so_the_advice_combines_them(catalog):
    """64 requests of 32,768 + 1,024 tokens of Llama-3.1-70B on two H100s (max_model_len 65,536): vLLM cannot even
    start, and neither the fp8 KV cache nor TP 4 or 8 alone holds all 64. The advice combines changes (TP 8 with the
    fp8 KV cache) and offers the change that keeps the most requests on fewer GPUs; each suggestion, opened, fits."""
    s = scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=2, input_len=32_768, output_len=1_024,
                 concurrency=64, max_model_len=65_536)  # fmt: skip
    r = evaluate(s, catalog)
    assert not r.fit.fits and r.suggestions
    blocks_per_request = (32_768 + 1_024) // 16  # 2,112 blocks of 16 tokens
    for sug in r.suggestions:
        opened = evaluate(s.model_copy(update=sug.fields), catalog)
        assert opened.fit.fits, sug.change
        n = sug.fields.get("concurrency", 64)
        assert opened.memory.num_gpu_blocks >= n * blocks_per_request, sug.change
    whole = r.suggestions[0]
    assert whole.fields["kv_cache_dtype"] == "fp8" and whole.fields["tensor_parallel_size"] == 8
    if len(r.suggestions) > 1:  # fewer GPUs than the whole fit, fewer requests
        assert r.suggestions[1].fields["tensor_parallel_size"] < 8 and r.suggestions[1].fields["concurrency"] < 64


def test_sliding_window_plus_one_block_gemma3(catalog):
    # vllm_kv.md §5, case rocm-gemma-3-27b: L = 4,096, max_num_batched_tokens 8,192 →
    # full group 256 blocks + 6 sliding groups × (⌈min(1023 + 8192, 4096)/16⌉ + 1 = 257) = 1,798
    g3 = catalog.models["gemma-3-27b"]
    layout = stage_layout(g3, range(62))
    assert layout.layers_per_group == 10 and len(layout.groups) == 7 and layout.padding_layers == 8
    assert layout.blocks_per_request(4096, max_num_batched_tokens=8192) == 256 + 6 * 257 == 1798


def test_sliding_window_saves_with_a_small_budget(catalog):
    mistral = catalog.models["mistral-7b-v0.1"]  # every layer slides over 4,096 tokens
    layout = stage_layout(mistral, range(32))
    # 32k request, budget 2,048: ⌈(4095 + 2048)/16⌉ + 1 = 385 blocks instead of 2,048
    assert layout.blocks_per_request(32768, max_num_batched_tokens=2048) == 385
    assert layout.blocks_per_request(1000, max_num_batched_tokens=2048) == 63 + 1


def test_engine_refusal_gives_estimated_max_model_len(catalog):
    r = evaluate(scenario(model="llama-3.1-70b", gpu="a100-80gb-sxm", tensor_parallel_size=2,
                          max_model_len=131072), catalog)  # fmt: skip
    m = r.memory
    assert m.max_concurrency < 1 and not r.fit.fits
    assert 0 < m.estimated_max_model_len < 131072
    assert "estimated maximum model length" in r.fit.reasons[0]


# --- properties ------------------------------------------------------------------------------------------------
def test_pool_occupancy_is_linear_in_length_with_slope_c(catalog):
    # seeds/002: occupancy = C · (L + 256) / pool tokens, a straight line with slope C
    from calc.workload import fit_workload

    s0 = scenario(kv_cache_memory_bytes=6_884_950_016)
    m = catalog.models["qwen2.5-7b-instruct"]
    mem = size_pool(s0, m, catalog.gpus["rtx-4090"])
    for L in (256, 512, 1024, 2048, 4096):
        f = fit_workload(s0.model_copy(update={"input_len": L}), m, mem)
        assert f.blocks_needed == 16 * ((L + 256 + 15) // 16)
        assert f.pool_fraction == pytest.approx(16 * (L + 256) / 120_064, rel=1e-9)


@pytest.mark.parametrize("gpu", ["rtx-4090", "h100-sxm"])
def test_more_memory_never_fewer_blocks(catalog, gpu):
    blocks = [pool(catalog, gpu=gpu, gpu_memory_utilization=u).num_gpu_blocks for u in (0.7, 0.8, 0.9, 0.95)]
    assert blocks == sorted(blocks)


def test_more_concurrency_takes_more_of_the_pool(catalog):
    fr = [evaluate(scenario(concurrency=c), catalog).fit.pool_fraction for c in (1, 2, 8, 16, 64)]
    assert fr == sorted(fr) and fr[-1] == pytest.approx(64 * fr[0])


def test_every_shipped_pair_evaluates(catalog):
    for gid in catalog.gpus:
        for mid in catalog.models:
            r = evaluate(scenario(gpu=gid, model=mid), catalog)
            assert r.memory.num_gpu_blocks >= 0 and (r.memory.kv_bytes_per_token > 0 or r.memory.state_bytes_per_request > 0)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen2.5-7b-instruct", "deepseek-v3", "gemma-3-27b"])
def test_one_gpu_holds_exactly_the_models_weights(catalog, model):
    """At TP 1 and PP 1 the per-GPU weights are the whole model's, and PP stages add up to it: the final norm was
    on no stage (Llama-3.1-8B's 4,096 × 2 B = 8,192 B short)."""
    from calc.params import count_params
    from calc.weights import weight_format, weights_bytes, weights_bytes_per_stage

    m = catalog.models[model]
    p, f = count_params(m), weight_format(m, "auto")
    assert weights_bytes_per_stage(m, p, f, tp=1, pp=1) == [pytest.approx(weights_bytes(p, f), abs=1)]
    untied = p.lm_head > 0  # a tied head is copied onto the last stage, so a pipeline then holds one table more
    stages = sum(weights_bytes_per_stage(m, p, f, tp=1, pp=2))
    assert stages == pytest.approx(weights_bytes(p, f) + (0 if untied else p.embedding * 2), abs=1)
