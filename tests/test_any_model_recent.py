"""Any model from the Hub, the 2026 layouts: shared experts and length keys spelled otherwise, Kimi-Linear's MLA and
Kimi Delta Attention layers, Zamba2's shared blocks, Gemma 3n's KV-shared layers, Nemotron 3's latent MoE and layer
lists, GLM-5's layer names, the families refused by name, LLaVA-NeXT's Mistral text defaults (quantization: test_any_model_quant.py).

Configs: tests/data/hf_configs/<slug>/ (each with its SOURCE.md); vLLM's rules as cited in each test. Every expected
number is written out below.
"""

import json

import pytest
from test_any_model import CONFIGS, _encode, load

from calc.errors import InputError
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.kv_cache import kv_bytes_per_token
from calc.params import count_params
from calc.pool import size_pool
from calc.scenario import Scenario
from calc.search import search
from calc.state import state_shape
from calc.units import GiB


def refused_field(cfg: dict) -> str:
    """The field the reader names when it refuses this config.json (it must refuse it)."""
    with pytest.raises(InputError) as e:
        model_from_hf_config(cfg)
    return e.value.field

def test_shared_experts_spelled_num_shared_experts_are_counted():
    """Ling-lite-1.5 (bailing_moe) writes num_shared_experts: 2 of moe_intermediate_size 1,408 per layer; they were
    dropped. 28 layers × 2 × 3 matrices × 2,048 × 1,408 = 484,442,112 parameters, in every token's path."""
    cfg = json.loads((CONFIGS / "ling-lite-1.5" / "config.json").read_text())
    with_shared = count_params(model_from_hf_config(cfg, name="ling"))
    without = count_params(model_from_hf_config({**cfg, "num_shared_experts": 0}, name="ling"))
    assert with_shared.total - without.total == 28 * 2 * 3 * 2048 * 1408 == 484_442_112
    assert with_shared.active - without.active == 484_442_112


@pytest.mark.parametrize(("keys", "expected"), [
    ({"model_max_length": 1_048_576}, 1_048_576),  # Kimi-Linear states only this one (vLLM: Command-R's key)
    ({"max_position_embeddings": 131_072, "model_max_length": 32_768}, 32_768),
    ({"max_position_embeddings": 8_192, "seq_length": 32_768}, 8_192),
    ({"n_positions": 2_048, "max_seq_len": 4_096}, 2_048),
])  # fmt: skip
def test_the_model_length_is_the_smallest_length_key_as_vllm_reads_it(keys, expected):
    """vLLM's _get_and_verify_max_len reads max_position_embeddings, n_positions, max_seq_len, seq_length,
    model_max_length, max_target_positions, max_sequence_length, max_seq_length and seq_len, and keeps the least."""
    cfg = json.loads((CONFIGS / "ling-lite-1.5" / "config.json").read_text())
    cfg.pop("max_position_embeddings")
    assert model_from_hf_config({**cfg, **keys}, name="x").max_position_embeddings == expected


def test_kimi_linear_keeps_kv_for_its_mla_layers_and_a_state_for_its_kda_layers(catalog):
    """Kimi-Linear-48B-A3B: 7 of 27 layers are MLA (linear_attn_config.full_attn_layers), 20 are Kimi Delta
    Attention. KV per token: 7 × (kv_lora_rank 512 + rope 64) × 2 B = 8,064 B (all 27 as MLA gave 31,104).
    A KDA layer's state (vLLM kda.py, mamba_utils.kda_state_dtype): 32 heads × 128 × 128 × 4 B (fp32 recurrent)
    + 3 short convolutions × (kernel 4 − 1) × 4,096 × 2 B = 2,097,152 + 73,728 = 2,170,880 B; vLLM pads pages."""
    m = load("kimi-linear-48b-a3b")
    assert m.max_position_embeddings == 1_048_576  # model_max_length, its only length key
    r = evaluate(Scenario(model="custom", custom_model=_encode(m), gpu="h200", max_model_len=1_048_576), catalog)
    assert r.memory.kv_bytes_per_token == 7 * (512 + 64) * 2 == 8064
    raw = 20 * (32 * 128 * 128 * 4 + 3 * 3 * 4096 * 2)
    assert raw <= r.memory.state_bytes_per_request <= raw * 1.01
    assert r.shortfall.engine_starts  # one 1M-token request: 8,064 B × 1,048,576 = 7.9 GiB of KV fits an H200


# --- layers that share weights or KV: Zamba2's shared blocks, Gemma 3n's KV-shared layers --------------------------
def test_zamba2_keeps_kv_in_its_hybrid_layers_and_a_mamba2_state_in_all(catalog):
    """Zamba2-7B (vLLM zamba2.py): 81 Mamba2 layers; the 13 "hybrid" ones also run one of 2 shared transformer
    blocks, whose attention (over concat(hidden, embedding): 7,168 wide, 32 heads of 224, MHA) keeps a cache per
    hybrid layer. KV: 13 × 2 × 32 × 224 × 2 B = 372,736 B/token (all 81 as attention layers gave 1,161,216).
    Mamba2 state per layer: (3 · 7,424 + 112 · 64 · 64) · 2 B = 962,048 B. Block size: 16 · ⌈962,048 / (16 · 28,672)⌉
    = 48 tokens → page 48 · 28,672 = 1,376,256 B; groups of 13 layers: 1 attention + ⌈81 / 13⌉ = 7 state groups."""
    m = load("zamba2-7b")
    assert (m.kv_head_dim, m.kv_heads, m.mamba_num_heads, m.mamba_head_dim) == (224, 32, 112, 64)
    s = Scenario(kv_cache_memory_bytes=50 * GiB, max_model_len=4096)
    r = size_pool(s, m, catalog.gpus["h100-sxm"])
    assert r.kv_bytes_per_token == 13 * 2 * 32 * 224 * 2 == 372_736
    assert r.block_size == 48 and r.page_bytes == 48 * 28_672 == 1_376_256
    assert (r.kv_groups, r.layers_per_group, r.padding_layers) == (8, 13, 7 * 13 - 81)
    assert r.state_bytes_per_request == 81 * 1_376_256  # each Mamba page padded to the attention page
    assert r.num_gpu_blocks == 50 * GiB // (1_376_256 * 13) == 3000
    assert r.blocks_per_max_len_request == -(-4096 // 48) + 7 == 93


def test_zamba2_counts_its_shared_blocks_once():
    """H 3,584, F 14,336, adapter rank 128, vocab 32,000 (tied: vLLM ties always). Per layer, Mamba2 (calc.params,
    inner 7,168, 2 groups of 64, 112 heads, conv 4): in_proj 3,584 · (2 · 7,168 + 256 + 112) + conv 7,424 · 5
    + 3 · 112 + norm 7,168 + out 7,168 · 3,584 = 78,433,872, plus its input norm 3,584. Each of 2 shared blocks:
    q,k,v 3 · 7,168² + o 7,168 · 3,584 + MLP 3 · 3,584 · 14,336 + norms 3 · 3,584 = 333,982,208. Each of 13 hybrid
    layers: linear 3,584² + MLP adapter 3,584 · 128 + 128 · 28,672 = 16,973,824."""
    p = count_params(load("zamba2-7b"))
    mamba = 3584 * (2 * 7168 + 256 + 112) + 7424 * 5 + 3 * 112 + 7168 + 7168 * 3584
    block = 3 * 7168**2 + 7168 * 3584 + 3 * 3584 * 14336 + 3 * 3584
    per_use = 3584**2 + 3584 * 128 + 128 * 2 * 14336
    assert (mamba, block, per_use) == (78_433_872, 333_982_208, 16_973_824)
    assert p.lm_head == 0 and p.embedding == 32_000 * 3584
    assert p.total == 81 * (mamba + 3584) + 2 * block + 13 * per_use + 32_000 * 3584 + 3584 == 7_356_749_648


def test_zamba2_upstream_names_plan_the_same_as_the_fork_names():
    """The same model in transformers' Zamba2Config names (n_mamba_heads, mamba_d_state, adapter_rank, …)."""
    fork = json.loads((CONFIGS / "zamba2-7b" / "config.json").read_text())
    upstream = {k: v for k, v in fork.items() if k not in ("ffn_hidden_size", "kv_channels", "state_size",
                                                            "mamba_headdim", "lora_rank", "conv_dimension",
                                                            "expansion_factor", "use_shared_block_lora",
                                                            "use_shared_attention_lora")}  # fmt: skip
    upstream |= {"intermediate_size": 14336, "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2,
                 "n_mamba_heads": 112, "adapter_rank": 128, "use_shared_mlp_adapter": True,
                 "attention_head_dim": 224, "attention_hidden_size": 7168}  # fmt: skip
    a, b = load("zamba2-7b"), model_from_hf_config(upstream, name="zamba2-7b")
    assert count_params(a).total == count_params(b).total
    assert kv_bytes_per_token(a, kv_bytes_per_element=2) == kv_bytes_per_token(b, kv_bytes_per_element=2)
    assert state_shape(a, tp=1, model_bytes=2) == state_shape(b, tp=1, model_bytes=2)
    assert any("pre-upstream" in x for x in a.assumptions) and not any("pre-upstream" in x for x in b.assumptions)


def test_gemma3n_keeps_kv_only_in_the_layers_that_are_not_shared(catalog):
    """Gemma 3n E4B: 35 layers, sliding ×4 then full (7 times); the last 15 read layer 18's or 19's KV (vLLM
    kv_sharing_target_layer_name) and keep none. KV: 20 layers × 2 × 2 × 256 × 2 B = 40,960 B/token (16 sliding + 4
    full). Groups of 4: 1 full + 4 sliding. 10 GiB / (16 · 2,048 · 4) = 81,920 blocks; a 32,768-token request:
    full ⌈32,768 / 16⌉ = 2,048 blocks, each sliding group ⌈min(511 + 2,048, 32,768) / 16⌉ + 1 = 161."""
    m = load("gemma-3n-e4b-partial")
    s = Scenario(kv_cache_memory_bytes=10 * GiB, max_model_len=32_768, max_num_batched_tokens=2048)
    r = size_pool(s, m, catalog.gpus["h100-sxm"])
    assert r.kv_bytes_per_token == 20 * 2 * 2 * 256 * 2 == 40_960
    assert (r.kv_groups, r.layers_per_group, r.padding_layers) == (5, 4, 0)
    assert r.num_gpu_blocks == 10 * GiB // (16 * 2048 * 4) == 81_920
    assert r.blocks_per_max_len_request == 2048 + 4 * 161
    notes = evaluate(Scenario(model="custom", custom_model=_encode(m), gpu="h100-sxm"), catalog).notes
    assert any("15 of 35 layers reuse" in n for n in notes)
    assert any("vision tower" in a and "audio encoder" in a and "not counted" in a for a in m.assumptions)


def test_gemma3n_counts_its_per_layer_embeddings_and_ties_its_head():
    """H 2,048, 8 heads (2 KV) of 256, MLP 16,384, p 256, AltUp 4, LAuReL 64, vocab 262,400 (tied), per-layer vocab
    262,144. Per layer: attention 2,048 · (2,048 + 2 · 512) + 2,048² + q/k norms 2 · 256 = 10,486,272; MLP 3 · 2,048
    · 16,384 = 100,663,296; LAuReL 2 · 2,048 · 64 = 262,144; AltUp 4² + 4³ + 2,048 · 4 = 8,272; per-layer input gate
    and projection 2 · 2,048 · 256 = 1,048,576; norms 5 · 2,048 + 3 · 2,048 = 16,384. Model: per-layer table
    262,144 · 35 · 256 = 2,348,810,240, its projection 2,048 · 8,960 + norm 256, AltUp projections 2 · 3 · 2,048²,
    embedding 262,400 · 2,048, final norm 2,048."""
    p = count_params(load("gemma-3n-e4b-partial"))
    layer = 10_486_272 + 100_663_296 + 262_144 + 8_272 + 1_048_576 + 16_384
    assert layer == 2048 * (2048 + 2 * 512) + 2048**2 + 512 + 3 * 2048 * 16384 + 2 * 2048 * 64 + 4**2 + 4**3 \
        + 2048 * 4 + 2 * 2048 * 256 + 8 * 2048  # fmt: skip
    assert p.per_layer_embedding == 262_144 * 35 * 256 == 2_348_810_240 and p.lm_head == 0
    model = 2_348_810_240 + 2048 * 8960 + 256 + 2 * 3 * 2048**2 + 262_400 * 2048 + 2048
    assert p.total == 35 * layer + model == 6_866_696_688
    assert p.active == p.total - 2_348_810_240 - 262_400 * 2048  # both tables are lookups


def test_gemma3n_intermediate_size_as_one_number_or_one_per_layer():
    """Gemma3nTextConfig takes intermediate_size as an int (broadcast) or a list with one width per layer."""
    cfg = json.loads((CONFIGS / "gemma-3n-e4b-partial" / "config.json").read_text())
    listed = model_from_hf_config(cfg, name="g")
    scalar = model_from_hf_config({**cfg, "text_config": {**cfg["text_config"], "intermediate_size": 16384}}, name="g")
    assert count_params(listed).total == count_params(scalar).total
    narrow = [8192] * 35  # a MatFormer slice: every MLP at half width
    half = model_from_hf_config({**cfg, "text_config": {**cfg["text_config"], "intermediate_size": narrow}}, name="g")
    assert count_params(listed).total - count_params(half).total == 35 * 3 * 2048 * 8192


@pytest.mark.parametrize(("change", "field"), [
    ({"intermediate_size": [16384] * 34}, "intermediate_size"),
    ({"intermediate_size": [16384] * 34 + ["wide"]}, "intermediate_size"),
    ({"num_kv_shared_layers": 35}, "num_kv_shared_layers"),
    ({"num_kv_shared_layers": -1}, "num_kv_shared_layers"),
])  # fmt: skip
def test_gemma3n_bad_fields_are_refused_by_name(change, field):
    cfg = json.loads((CONFIGS / "gemma-3n-e4b-partial" / "config.json").read_text())
    assert refused_field({**cfg, "text_config": {**cfg["text_config"], **change}}) == field


@pytest.mark.parametrize(("change", "field"), [
    ({"layers_block_type": ["mamba"] * 80}, "layers_block_type"),
    ({"layers_block_type": ["mamba"] * 80 + ["attention"]}, "layers_block_type"),
    ({"layers_block_type": "hybrid"}, "layers_block_type"),
    ({"num_attention_heads": 33}, "num_attention_heads"),
    ({"mamba_headdim": None, "n_mamba_heads": 100}, "n_mamba_heads"),
    ({"hidden_size": "3584"}, "hidden_size"),
])  # fmt: skip
def test_zamba2_bad_fields_are_refused_by_name(change, field):
    cfg = json.loads((CONFIGS / "zamba2-7b" / "config.json").read_text())
    assert refused_field({**cfg, **change}) == field


def test_latent_moe_experts_work_at_the_latent_width():
    """vLLM nemotron_h.py NemotronHMoE: with moe_latent_size the routed experts are latent × width (relu², up and
    down), and fc1_latent_proj / fc2_latent_proj (hidden × latent each) run for every token of a MoE layer."""
    p = count_params(load("nemotron-3-super-120b-a12b"))
    expert = 2 * 1024 * 2688  # up + down at latent 1,024, moe_intermediate_size 2,688
    assert p.experts == 40 * 512 * expert  # 40 MoE layers ('E') × 512 routed experts
    assert p.active_experts == 40 * 22 * expert  # top-22
    cfg = json.loads((CONFIGS / "nemotron-3-super-120b-a12b" / "config.json").read_text())
    full = count_params(model_from_hf_config({**cfg, "moe_latent_size": None}))
    assert full.experts == 40 * 512 * 2 * 4096 * 2688  # the same experts at hidden 4,096
    assert full.dense_mlp - p.dense_mlp == -40 * 2 * 4096 * 1024  # no latent projections without a latent


def test_nemotron_layers_block_type_gives_the_layers():
    m = load("nemotron-3-ultra-550b-a55b")  # states no num_hidden_layers: 108 entries
    assert m.num_hidden_layers == 108
    assert m.plan.mixers.count("full_attention") == 12 and m.plan.ffns.count("moe") == 48
    cfg = json.loads((CONFIGS / "nemotron-3-ultra-550b-a55b" / "config.json").read_text())
    assert refused_field({**cfg, "num_hidden_layers": 100}) == "layers_block_type"
    assert refused_field({**cfg, "layers_block_type": ["mamba", "ssm"]}) == "layers_block_type"


def test_glm5_sparse_mlp_layers_are_moe_and_the_shared_indexers_noted():
    m = load("glm-5.2")
    assert m.plan.ffns.count("moe") == 75 and m.plan.ffns.count("dense") == 3  # 'sparse' = MoE
    assert any("57 of 78 layers reuse" in a for a in m.assumptions)
    assert not any("not one this planner knows" in a for a in m.assumptions)


@pytest.mark.parametrize("slug", ["deepseek-v4-flash", "gemma-4-26b-a4b"])
def test_unmodelled_kv_layouts_are_refused_by_name(slug):
    with pytest.raises(InputError) as e:
        load(slug)
    assert e.value.field == "model_type" and "refuses" in str(e.value)


def test_a_quantized_name_without_a_quantization_config_says_the_weights_are_planned_unquantized():
    """nvidia's NVFP4 checkpoints keep their quantization in hf_quant_config.json, which vLLM reads and this
    planner does not: planned at torch_dtype (2–4× the bytes) without a word before."""
    cfg = json.loads((CONFIGS / "ling-lite-1.5" / "config.json").read_text())
    m = model_from_hf_config(cfg, name="nvidia--Ling-lite-NVFP4")
    assert any(a.startswith("the name says NVFP4 but config.json carries no quantization_config") for a in m.assumptions)
    assert not any("quantization_config" in a for a in model_from_hf_config(cfg, name="ling-lite").assumptions)


@pytest.mark.parametrize("slug", ["zamba2-7b", "gemma-3n-e4b-partial"])
def test_pipeline_parallelism_is_refused_where_vllm_has_none(catalog, slug):
    """vLLM's Zamba2ForCausalLM and Gemma3nForCausalLM do not implement SupportsPP: PP > 1 does not start. The plan
    said fits and the search recommended TP 1 × PP 2."""
    m = load(slug)
    with pytest.raises(InputError, match="does not support pipeline parallelism"):
        evaluate(Scenario(model="custom", custom_model=_encode(m), gpu="h100-sxm", pipeline_parallel_size=2,
                          max_model_len=4096), catalog)  # fmt: skip
    r = search(Scenario(model="custom", custom_model=_encode(m), gpu="h100-sxm", max_model_len=4096,
                        search_gpus="h100-sxm", search_pipeline_parallel_size="1,2"), catalog)  # fmt: skip
    assert all(pp == 1 for _, pp in r.grid.parallel)


# --- StepFun: Step-3 (MFA: one KV head, low-rank query) and Step-3.5 (sliding layers with their own query heads) ---
def test_step3_keeps_one_kv_head_of_256_on_every_rank(catalog):
    """vLLM step3_text.py: Step3TextAttention is built with num_kv_heads = 1 (the config's num_attention_groups), head
    size 256, on every TP rank. KV: 61 × 2 × 1 × 256 × 2 B = 62,464 B/token at TP 1 and at TP 8 (read as MHA it was
    61 × 2 × 64 × 256 × 2 = 3,997,696). One group of 61 layers, page 16 × 1,024 B: 40 GiB / (16,384 · 61) = 42,974
    blocks; a 65,536-token request takes 4,096 of them."""
    m = load("step3-partial")
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 61 * 2 * 1 * 256 * 2 == 62_464
    assert kv_bytes_per_token(m, kv_bytes_per_element=2, tp=8) == 62_464
    r = size_pool(Scenario(kv_cache_memory_bytes=40 * GiB, max_model_len=65_536), m, catalog.gpus["h100-sxm"])
    assert (r.block_size, r.page_bytes, r.kv_groups, r.layers_per_group) == (16, 16 * 1024, 1, 61)
    assert r.num_gpu_blocks == 40 * GiB // (16 * 1024 * 61) == 42_974
    assert r.blocks_per_max_len_request == 65_536 // 16
    assert m.max_position_embeddings == 65_536  # max_seq_len


def test_step3_counts_its_low_rank_query_and_shared_experts():
    """H 7,168, 64 heads of 256, share_q_dim 2,048, 1 KV head. Attention per layer: qkv_proj 7,168 · (2,048 + 512)
    + inter_norm 2,048 + wq 2,048 · 16,384 + o_proj 16,384 · 7,168 = 169,347,072. MoE layers 4–59 (56): 48 experts
    of 5,120 (top 3) + a shared MLP of 5,120 + router 7,168 · 48; dense layers (0–3, 60): MLP 18,432. Vocab 128,815
    untied. Card: "Total Parameters (LLM) 316B", "Activated Params per Token 38B"."""
    p = count_params(load("step3-partial"))
    attn = 7168 * 2560 + 2048 + 2048 * 16384 + 16384 * 7168
    assert attn == 169_347_072 and p.attention == 61 * attn
    expert = 3 * 7168 * 5120
    assert p.experts == 56 * 48 * expert and p.active_experts == 56 * 3 * expert
    assert p.dense_mlp == 56 * (expert + 7168 * 48) + 5 * 3 * 7168 * 18432
    text = p.total - p.towers
    assert text == 61 * attn + p.dense_mlp + p.experts + p.norms + 2 * 128_815 * 7168
    assert abs(text - 316e9) <= 0.5e9 and abs(p.active - 38e9) <= 0.5e9  # 316.29 B, 37.92 B
    assert p.towers > 0  # the 63-layer ViT vLLM's step3_vl.py loads


def test_step3p5_keeps_one_page_size_and_slides_33_of_its_45_layers(catalog):
    """Step-3.5-Flash: 45 layers (layer_types lists 48: the 3 MTP layers follow), full attention every 4th (12),
    sliding window 512 in 33; every layer 8 KV heads × 128 (the sliding layers' attention_other_setting says the
    same). KV: 45 × 2 × 8 × 128 × 2 B = 184,320 B/token; TP 8: 45 × 2 × 1 × 128 × 2 = 23,040. Groups of 12 layers:
    1 full + ⌈33 / 12⌉ = 3 sliding (3 padding layers); page 16 × 4,096 B. 40 GiB / (65,536 · 12) = 54,613 blocks.
    At L = 65,536, budget 8,192: full ⌈65,536 / 16⌉ = 4,096 blocks, each sliding group ⌈(511 + 8,192) / 16⌉ + 1 = 545."""
    m = load("step-3.5-flash-partial")
    assert m.plan.mixers.count("full_attention") == 12 and m.plan.mixers.count("sliding_attention") == 33
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 45 * 2 * 8 * 128 * 2 == 184_320
    assert kv_bytes_per_token(m, kv_bytes_per_element=2, tp=8) == 45 * 2 * 1 * 128 * 2 == 23_040
    s = Scenario(kv_cache_memory_bytes=40 * GiB, max_model_len=65_536, max_num_batched_tokens=8192)
    r = size_pool(s, m, catalog.gpus["h100-sxm"])
    assert (r.kv_groups, r.layers_per_group, r.padding_layers, r.page_bytes) == (4, 12, 3, 16 * 4096)
    assert r.num_gpu_blocks == 40 * GiB // (16 * 4096 * 12) == 54_613
    assert r.blocks_per_max_len_request == 4096 + 3 * 545
    assert any("MTP layers" in a for a in m.assumptions)


def test_step3p5_counts_96_query_heads_in_its_sliding_layers():
    """vLLM step3p5.py: sliding layers take attention_other_setting's 96 query heads, full ones 64; each has q_norm and
    k_norm (128 each) and a head-wise gate g_proj (hidden → heads). Per layer, H 4,096, d 128, 8 KV heads:
    full 4,096 · 8,192 + 2 · 4,096 · 1,024 + 8,192 · 4,096 + 256 + 4,096 · 64 = 75,759,872; sliding with 12,288 query
    wide and 96 gates: 109,445,376. MoE layers 3–44: 288 experts of 1,280 (top 8), a shared MLP of 1,280, router
    4,096 · 288 + its bias 288. Card: 196B total, 11B active (apxml: 196.81B)."""
    p = count_params(load("step-3.5-flash-partial"))
    full = 4096 * 8192 + 2 * 4096 * 1024 + 8192 * 4096 + 256 + 4096 * 64
    slide = 4096 * 12288 + 2 * 4096 * 1024 + 12288 * 4096 + 256 + 4096 * 96
    assert (full, slide) == (75_759_872, 109_445_376) and p.attention == 12 * full + 33 * slide
    expert = 3 * 4096 * 1280
    assert p.experts == 42 * 288 * expert and p.active_experts == 42 * 8 * expert
    assert abs(p.total - 196.81e9) <= 0.02 * 196.81e9 and abs(p.active - 11e9) <= 0.5e9  # 196.96 B, 11.46 B


@pytest.mark.parametrize(("change", "field"), [
    ({"attention_other_setting": {"attention_type": "sliding_attention", "num_attention_heads": 96,
                                  "num_attention_groups": 4, "head_dim": 128}}, "attention_other_setting"),
    ({"attention_other_setting": "sliding"}, "attention_other_setting"),
    ({"moe_layers_enum": "3,4,x"}, "moe_layers_enum"),
    ({"moe_layers_enum": "3,45"}, "moe_layers_enum"),
])  # fmt: skip
def test_step3p5_layouts_it_cannot_plan_are_refused_by_name(change, field):
    cfg = json.loads((CONFIGS / "step-3.5-flash-partial" / "config.json").read_text())
    assert refused_field({**cfg, **change}) == field


def test_step3_with_more_than_one_kv_group_is_refused():
    cfg = json.loads((CONFIGS / "step3-partial" / "config.json").read_text())
    assert refused_field({**cfg, "text_config": {**cfg["text_config"], "num_attention_groups": 8}}) == "num_attention_groups"


# --- vision-language wrappers -----------------------------------------------------------------------------------
def test_glm41v_reads_its_text_config_and_says_the_tower_is_not_counted():
    """GLM-4.1V (glm4v around glm4v_text, vLLM glm4_1v.py): 40 layers, 32 heads of 4,096 / 32 = 128, 2 KV heads.
    KV: 40 × 2 × 2 × 128 × 2 B = 40,960 B/token; TP 4: 40 × 2 × 1 × 128 × 2 = 20,480 (2 heads replicated). The text
    model, H 4,096, MLP 13,696 (gated), qkv biases, 4 norms per layer (Glm4DecoderLayer), vocab 151,552 untied:
    40 · (4,096 · (4,096 + 2 · 256) + 4,096² + 4,608 + 4,096 + 3 · 4,096 · 13,696 + 4 · 4,096) + 4,096
    + 2 · 151,552 · 4,096 = 9.40 B (GLM-4-9B's 9.4 B). This stored vision_config is cut short: not counted, and said."""
    m = load("glm-4.1v-glyph-partial")
    assert m.model_type == "glm4v_text" and m.max_position_embeddings == 131_072
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 40 * 2 * 2 * 128 * 2 == 40_960
    assert kv_bytes_per_token(m, kv_bytes_per_element=2, tp=4) == 40 * 2 * 1 * 128 * 2 == 20_480
    p = count_params(m)
    layer = 4096 * (4096 + 512) + 4096**2 + 4608 + 4096 + 3 * 4096 * 13696 + 4 * 4096
    assert p.total == 40 * layer + 4096 + 2 * 151_552 * 4096 == 9_400_442_880
    assert p.towers == 0 and any("vision tower vLLM loads is not counted" in a for a in m.assumptions)
    assert not any("not one this planner knows" in a for a in m.assumptions)


def test_llava_next_mistral_takes_mistrals_class_defaults_for_what_its_text_config_leaves_out(catalog):
    """llava-hf/llava-v1.6-mistral-7b-hf: its text_config states model_type mistral, intermediate_size 14,336, 8 KV
    heads and 32,064 tokens, and leaves hidden_size, num_hidden_layers and num_attention_heads to MistralConfig
    (4,096, 32, 32). The text_config below is verbatim from NVIDIA TensorRT-LLM's test of that checkpoint
    (tests/unittest/_torch/modeling/test_modeling_llava_next.py, LLAVA_NEXT_7B_CONFIG; its vision tower trimmed to
    2 layers there, 24 in the checkpoint as its note says). The planner refused it ('lacks num_hidden_layers').
    KV: 2 × 32 layers × 8 heads × 128 × 2 B = 131,072 B a token."""
    text = {"_name_or_path": "mistralai/Mistral-7B-Instruct-v0.2", "architectures": ["MistralForCausalLM"],
            "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
            "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
            "torch_dtype": "bfloat16", "vocab_size": 32064}  # fmt: skip
    vision = {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096, "model_type": "clip_vision_model",
              "num_attention_heads": 16, "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768,
              "vocab_size": 32000}  # fmt: skip
    m = model_from_hf_config({"architectures": ["LlavaNextForConditionalGeneration"], "model_type": "llava_next",
                              "text_config": text, "vision_config": vision, "torch_dtype": "float16",
                              "vocab_size": 32064})  # fmt: skip
    assert (m.hidden_size, m.num_hidden_layers, m.num_attention_heads) == (4096, 32, 32)
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert m.max_position_embeddings == 32_768 and not m.sliding_layer_count  # the config's own, not the class's


def test_cogvlm2_names_its_kv_heads_num_multi_query_heads():
    """CogVLM2-Llama3's config gives its grouped KV heads as num_multi_query_heads (8 of 32): 2 × 32 layers × 8 × 128
    × 2 B = 131,072 B a token, not the 524,288 of 32 heads."""
    cfg = {"model_type": "cogvlm2", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_multi_query_heads": 8, "vocab_size": 128256,
           "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}  # fmt: skip
    m = model_from_hf_config(cfg, name="cogvlm2-llama3")
    assert m.num_key_value_heads == 8
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 2 * 32 * 8 * 128 * 2
