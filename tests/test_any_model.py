"""Any model from the Hub: published config.json files of every family, sized the way vLLM sizes them.

Configs: tests/data/hf_configs/<slug>/ (each with its SOURCE.md); card figures: tests/data/hf_configs/MODEL_CARDS.md;
vLLM's rules: shared/reference/vllm_kv.md and the notes it cites. Every expected number is written out below.
"""

import json
from pathlib import Path

import pytest

from calc.errors import InputError
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.kv_cache import kv_bytes_per_token
from calc.params import count_params
from calc.pool import size_pool
from calc.scenario import Scenario
from calc.state import state_shape
from calc.units import GiB

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def load(slug: str):
    return model_from_hf_config(json.loads((CONFIGS / slug / "config.json").read_text()), name=slug)


# slug: (KV bytes/token/GPU at TP 1, (tp, at that TP), state bytes per state layer per request at TP 1)
FAMILIES = {
    "llama4-scout-17b-16e-instruct": (48 * 2 * 8 * 128 * 2, (8, 48 * 2 * 1 * 128 * 2), 0),
    "llama4-maverick-17b-128e-instruct": (48 * 2 * 8 * 128 * 2, (8, 48 * 2 * 1 * 128 * 2), 0),
    "qwen2.5-vl-7b-instruct": (28 * 2 * 4 * 128 * 2, (4, 28 * 2 * 1 * 128 * 2), 0),  # 28 heads: TP 8 refused
    "qwen3-vl-30b-a3b-instruct": (48 * 2 * 4 * 128 * 2, (8, 48 * 2 * 1 * 128 * 2), 0),
    "kimi-k2-instruct": (61 * (512 + 64) * 2, (8, 61 * (512 + 64) * 2), 0),  # MLA latent on every rank
    "deepseek-v3.2-exp-partial": (61 * ((512 + 64) * 2 + 132), (8, 61 * ((512 + 64) * 2 + 132)), 0),  # + indexer
    "glm-4.5-air": (46 * 2 * 8 * 128 * 2, (8, 46 * 2 * 1 * 128 * 2), 0),
    "glm-4.7-fp8": (92 * 2 * 8 * 128 * 2, (8, 92 * 2 * 1 * 128 * 2), 0),
    # 12 full-attention layers (every 4th) of 2 KV heads × 256; GDN: conv (4−1)·(2·16·128 + 32·128) + 32·128·128, ×2 B
    "qwen3-next-80b-a3b-thinking": (12 * 2 * 2 * 256 * 2, (8, 12 * 2 * 1 * 256 * 2), (3 * 8192 + 32 * 128 * 128) * 2),
    "minimax-m2": (62 * 2 * 8 * 128 * 2, (8, 62 * 2 * 1 * 128 * 2), 0),
    "mistral-small-3.x-24b-flux2-te": (40 * 2 * 8 * 128 * 2, (8, 40 * 2 * 1 * 128 * 2), 0),
    "ministral3-3b-reasoning-2512": (26 * 2 * 8 * 128 * 2, (8, 26 * 2 * 1 * 128 * 2), 0),
    # 4 attention layers (the '*' of the pattern); Mamba2: conv 3·(128·64 + 2·8·128) · 2 B, SSM 128·64·128 · 4 B
    # (vLLM ≥ 0.20 keeps Nemotron-H's SSM state in float32)
    "nemotron-h-8b-base-8k": (4 * 2 * 8 * 128 * 2, (8, 4 * 2 * 1 * 128 * 2), 3 * (8192 + 2048) * 2 + 128 * 64 * 128 * 4),
    # 6 attention layers, 2 KV heads; Mamba2 64 heads × 64, 8 groups, state 128 (config: mamba_ssm_cache_dtype float32)
    "nemotron-3-nano-30b-a3b": (6 * 2 * 2 * 128 * 2, (2, 6 * 2 * 1 * 128 * 2), 3 * (4096 + 2048) * 2 + 64 * 64 * 128 * 4),
    "llama-3.3-nemotron-super-49b-v1": (49 * 2 * 8 * 128 * 2, (8, 49 * 2 * 1 * 128 * 2), 0),  # 31 no-op attention
    "exaone-4.0-32b": (64 * 2 * 8 * 128 * 2, (8, 64 * 2 * 1 * 128 * 2), 0),
    "aya-23-8b": (32 * 2 * 8 * 128 * 2, (8, 32 * 2 * 1 * 128 * 2), 0),
    "olmo-2-1124-7b": (32 * 2 * 32 * 128 * 2, (8, 32 * 2 * 4 * 128 * 2), 0),
    "starcoder2-7b": (32 * 2 * 4 * 128 * 2, (4, 32 * 2 * 1 * 128 * 2), 0),  # 36 heads: TP 8 refused
    "internlm2_5-7b": (32 * 2 * 8 * 128 * 2, (8, 32 * 2 * 1 * 128 * 2), 0),
    "baichuan2-7b": (32 * 2 * 32 * 128 * 2, (8, 32 * 2 * 4 * 128 * 2), 0),
    "qwen1.5-moe-a2.7b": (24 * 2 * 16 * 128 * 2, (8, 24 * 2 * 2 * 128 * 2), 0),
    "qwen2-57b-a14b": (28 * 2 * 4 * 128 * 2, (4, 28 * 2 * 1 * 128 * 2), 0),  # 28 heads: TP 8 refused
    # Jamba: attention at i % 8 == 4 (4 layers); Mamba-1: conv 3·8192 + SSM 8192·16, ×2 B
    "ai21-jamba-1.5-mini": (4 * 2 * 8 * 128 * 2, (8, 4 * 2 * 1 * 128 * 2), (3 * 8192 + 8192 * 16) * 2),
    # Falcon-H1: attention and Mamba2 side by side in all 36 layers; conv 3·(1536 + 2·1·128)·2, SSM 24·64·128·2
    "falcon-h1-0.5b": (36 * 2 * 2 * 64 * 2, (2, 36 * 2 * 1 * 64 * 2), 3 * 1792 * 2 + 24 * 64 * 128 * 2),
    "falcon-mamba-7b": (0, (8, 0), (3 * 8192 + 8192 * 16) * 2),
    "lfm2-2.6b": (8 * 2 * 8 * 64 * 2, (8, 8 * 2 * 1 * 64 * 2), 2 * 2048 * 2),  # short conv: (L_cache − 1) · conv_dim
    "gemma-3-4b-it": (34 * 2 * 4 * 256 * 2, (4, 34 * 2 * 1 * 256 * 2), 0),  # 8 heads
    "phi-4-mini-instruct": (32 * 2 * 8 * 128 * 2, (8, 32 * 2 * 1 * 128 * 2), 0),
    # 2026-12-02, a review with real configs: DBRX's attn_config / ffn_config, Arctic's residual MLP, ERNIE-4.5's
    # moe_* layout, Falcon's defaults, MiniCPM3's MLA without v_head_dim, Qwen2-VL's flat layout
    "dbrx-instruct": (40 * 2 * 8 * 128 * 2, (8, 40 * 2 * 1 * 128 * 2), 0),  # kv_n_heads 8, 6,144 / 48 heads
    "arctic-instruct": (35 * 2 * 8 * 128 * 2, (8, 35 * 2 * 1 * 128 * 2), 0),
    "falcon-40b": (60 * 2 * 8 * 64 * 2, (8, 60 * 2 * 1 * 64 * 2), 0),  # num_kv_heads 8, 8,192 / 128 heads
    "minicpm3-4b": (62 * (256 + 32) * 2, (8, 62 * (256 + 32) * 2), 0),  # MLA latent + rope key on every rank
    "ernie-4.5-21b-a3b": (28 * 2 * 4 * 128 * 2, (4, 28 * 2 * 1 * 128 * 2), 0),  # 20 heads: TP 8 refused
    "qwen2-vl-7b": (28 * 2 * 4 * 128 * 2, (4, 28 * 2 * 1 * 128 * 2), 0),
    "mixtral-8x22b": (56 * 2 * 8 * 128 * 2, (8, 56 * 2 * 1 * 128 * 2), 0),
    "olmoe-1b-7b": (16 * 2 * 16 * 128 * 2, (8, 16 * 2 * 2 * 128 * 2), 0),
    "glm-4-9b-chat": (40 * 2 * 2 * 128 * 2, (2, 40 * 2 * 1 * 128 * 2), 0),  # multi_query_group_num 2
    # a second review: gpt_bigcode's multi_query (one KV head, on every rank), GPT-J / BLOOM's 4 × hidden MLP and
    # BLOOM's n_embed, LLaVA / Qwen2-Audio text_configs that leave their class defaults out, Bamba's 262,144 positions
    "starcoder-15b": (40 * 2 * 1 * 128 * 2, (8, 40 * 2 * 1 * 128 * 2), 0),
    "gpt-j-6b": (28 * 2 * 16 * 256 * 2, (8, 28 * 2 * 2 * 256 * 2), 0),
    "bloom-7b1": (30 * 2 * 32 * 128 * 2, (8, 30 * 2 * 4 * 128 * 2), 0),
    "bloomz-176b": (70 * 2 * 112 * 128 * 2, (8, 70 * 2 * 14 * 128 * 2), 0),
    "llava-1.5-7b": (32 * 2 * 32 * 128 * 2, (8, 32 * 2 * 4 * 128 * 2), 0),  # LlamaConfig: 32 layers, 32 heads
    "qwen2-audio-7b": (32 * 2 * 32 * 128 * 2, (8, 32 * 2 * 4 * 128 * 2), 0),  # Qwen2Config: 32 KV heads
    "persimmon-8b": (36 * 2 * 64 * 64 * 2, (8, 36 * 2 * 8 * 64 * 2), 0),
    "minitron-8b": (32 * 2 * 8 * 128 * 2, (8, 32 * 2 * 1 * 128 * 2), 0),
    "nemotron-mini-4b": (32 * 2 * 8 * 128 * 2, (8, 32 * 2 * 1 * 128 * 2), 0),  # kv_channels 128
    # 3 attention layers (9, 18, 27); Mamba2: conv 3·(8,192 + 2·1·128) + SSM 128 heads · 64 · 128, ×2 B
    "bamba-9b": (3 * 2 * 8 * 128 * 2, (8, 3 * 2 * 1 * 128 * 2), 3 * (8192 + 256) * 2 + 128 * 64 * 128 * 2),
    "pythia-12b": (36 * 2 * 40 * 128 * 2, (8, 36 * 2 * 5 * 128 * 2), 0),
    # a third review: Hunyuan's per-layer lists and shared MLP, Phi-3.5-vision's img_processor tower, DeepSeek-V2
    "hunyuan-a13b": (32 * 2 * 8 * 128 * 2, (8, 32 * 2 * 1 * 128 * 2), 0),
    "phi-3.5-vision": (32 * 2 * 32 * 96 * 2, (8, 32 * 2 * 4 * 96 * 2), 0),
    "deepseek-v2": (60 * (512 + 64) * 2, (8, 60 * (512 + 64) * 2), 0),
    "mpt-7b-instruct": (32 * 2 * 32 * 128 * 2, (8, 32 * 2 * 4 * 128 * 2), 0),  # n_heads 32 of d_model 4,096
    "gpt2": (12 * 2 * 12 * 64 * 2, (4, 12 * 2 * 3 * 64 * 2), 0),
    "qwen-1.8b-chat": (24 * 2 * 16 * 128 * 2, (8, 24 * 2 * 2 * 128 * 2), 0),  # kv_channels 128
    "phi-2-msft": (32 * 2 * 32 * 80 * 2, (8, 32 * 2 * 4 * 80 * 2), 0),
    # a fourth review: Zamba2's 13 hybrid layers attend (MHA, 32 heads of 2 · 3,584 / 32 = 224) and all 81 keep a
    # Mamba2 state: conv 3 · (7,168 + 2·2·64) + SSM 112 heads · 64 · 64, ×2 B; Gemma 3n keeps KV in its first
    # 35 − 15 = 20 layers only (2 KV heads of 256)
    "zamba2-7b": (13 * 2 * 32 * 224 * 2, (8, 13 * 2 * 4 * 224 * 2), (3 * (7168 + 2 * 2 * 64) + 112 * 64 * 64) * 2),
    "gemma-3n-e4b-partial": (20 * 2 * 2 * 256 * 2, (2, 20 * 2 * 1 * 256 * 2), 0),
    # Nemotron 3 Super: 8 attention layers ('*') of 2 KV heads × 128; Mamba2 128 heads × 64, 8 groups, state 128:
    # conv 3 · (8,192 + 2·8·128) · 2 B, SSM 128 · 64 · 128 · 4 B (mamba_ssm_cache_dtype float32)
    "nemotron-3-super-120b-a12b": (8 * 2 * 2 * 128 * 2, (2, 8 * 2 * 1 * 128 * 2),
                                   3 * (8192 + 2048) * 2 + 128 * 64 * 128 * 4),
    # Ultra lists its layers (layers_block_type): 12 attention, 48 Mamba2 of 256 heads × 64
    "nemotron-3-ultra-550b-a55b": (12 * 2 * 2 * 128 * 2, (2, 12 * 2 * 1 * 128 * 2),
                                   3 * (16384 + 2048) * 2 + 256 * 64 * 128 * 4),
    # Qwen3.5: 15 full-attention layers (every 4th of 60) of 2 KV heads × 256; gated DeltaNet conv
    # 3 · (2·16·128 + 64·128) · 2 B, recurrent 64 · 128 · 128 in the config's mamba_ssm_dtype float32 (4 B)
    "qwen3.5-397b-a17b": (15 * 2 * 2 * 256 * 2, (2, 15 * 2 * 1 * 256 * 2), 3 * (4096 + 8192) * 2 + 64 * 128 * 128 * 4),
    "glm-5.2": (78 * ((512 + 64) * 2 + 132), (8, 78 * ((512 + 64) * 2 + 132)), 0),  # MLA latent + indexer, as V3.2
    # StepFun: Step-3 keeps one KV head of 256 on every rank (vLLM step3_text.py); Step-3.5 8 KV heads × 128 in all
    # 45 layers (12 full, 33 sliding), the 3 MTP layers that layer_types also lists not loaded
    "step3-partial": (61 * 2 * 1 * 256 * 2, (8, 61 * 2 * 1 * 256 * 2), 0),
    "step-3.5-flash-partial": (45 * 2 * 8 * 128 * 2, (8, 45 * 2 * 1 * 128 * 2), 0),
}


@pytest.mark.parametrize("slug", sorted(FAMILIES))
def test_every_family_plans_with_vllms_kv_layout(slug, catalog):
    m = load(slug)
    kv1, (tp, kv_tp), state1 = FAMILIES[slug]
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == kv1
    assert kv_bytes_per_token(m, kv_bytes_per_element=2, tp=tp) == kv_tp
    shape = state_shape(m, tp=1, model_bytes=2)
    assert (shape.bytes if shape else 0) == state1
    s = Scenario(model="custom", custom_model=_encode(m), gpu="h200", tensor_parallel_size=tp, max_model_len=4096)
    r = evaluate(s, catalog)  # plans: no refusal, a pool, a latency
    assert r.memory.num_gpu_blocks >= 0 and r.latency.tpot_s > 0


def _encode(m):
    from calc.custom import encode_custom_model

    return encode_custom_model(m)


# MODEL_CARDS.md: (total as the card writes it, active as the card writes it, what the card's "active" includes)
CARDS = {
    "llama4-scout-17b-16e-instruct": ("109B", "17B", "with embedding"),
    "llama4-maverick-17b-128e-instruct": ("400B", "17B", "with embedding"),
    "qwen3-next-80b-a3b-thinking": ("80B", "3B", "without the output head"),  # 3.25 B; 3.56 B with it, past
    # the card's rounding since q_proj counts its gate (vLLM's shape: tests/test_gated_attention.py)
    "kimi-k2-instruct": ("1T", "32B", "ours"),
    "minimax-m2": ("230B", "10B", "ours"),
    "glm-4.5-air": ("106B", "12B", "without the output head"),
    "nemotron-3-nano-30b-a3b": ("31.6B", "3.2B", "ours"),  # NVIDIA: "3.2B active (3.6B with embeddings), 31.6B total"
    "ai21-jamba-1.5-mini": ("52B", "12B", "ours"),
    "qwen1.5-moe-a2.7b": ("14.3B", "2.7B", "with embedding"),
    "mistral-small-3.x-24b-flux2-te": ("24B", None, ""),
    "llama-3.3-nemotron-super-49b-v1": ("49B", None, ""),
    "nemotron-3-super-120b-a12b": ("120B", "12B", "ours"),  # the HF id's figures
    "nemotron-3-ultra-550b-a55b": ("550B", "55B", "ours"),
    "qwen3.5-397b-a17b": ("397B", "17B", "with embedding"),
    "glm-5.2": ("744B", "40B", "without the output head"),
    "zamba2-7b": ("7.4B", None, ""),  # Zamba2 technical report: "1.2B, 2.7B, and 7.4B parameter" models
}
SCALE = {"B": 1e9, "T": 1e12}


def _within_card(ours: float, stated: str) -> bool:
    """Within 2 % of the card, or within its rounding: half a unit of the last digit it states ('1T' ± 0.5 T,
    '3B' ± 0.5 B, '31.6B' ± 0.05 B)."""
    number, scale = stated[:-1], SCALE[stated[-1]]
    decimals = len(number.split(".")[1]) if "." in number else 0
    card = float(number) * scale
    return abs(ours - card) <= max(0.02 * card, 0.5 * 10**-decimals * scale)


@pytest.mark.parametrize("slug", sorted(CARDS))
def test_parameters_match_the_model_card(slug):
    m = load(slug)
    p = count_params(m)
    total, active, convention = CARDS[slug]
    assert _within_card(p.total, total), (p.total, total)
    if active:
        ours = {"ours": p.active, "with embedding": p.active + p.embedding,
                "without the output head": p.active - p.lm_head}[convention]  # fmt: skip
        assert _within_card(ours, active), (ours, active)


def test_exaone_card_counts_without_embeddings():
    # "Number of Parameters (without embeddings): 30.95B": total − embedding − lm_head (102,400 × 5,120 each)
    p = count_params(load("exaone-4.0-32b"))
    assert p.total - 2 * 102_400 * 5_120 == pytest.approx(30.95e9, rel=0.002)


# --- vLLM's grouping and blocks, worked by hand (notes on vLLM 0.11–0.20 source) ----------------------------------
def test_nemotron_h_hybrid_blocks(catalog):
    # attention page per token 2·8·128·2 = 4,096 B; Mamba page (fp32 SSM) 61,440 + 4,194,304 = 4,255,744 B
    # block = 16 · ⌈4,255,744 / (16 · 4,096)⌉ = 16 · 65 = 1,040 → page 1,040 · 4,096 = 4,259,840 B
    # groups: 4 attention + 24 Mamba layers, group size 4 → 1 + 6 groups; a block id holds 4 pages
    m = load("nemotron-h-8b-base-8k")
    r = size_pool(Scenario(kv_cache_memory_bytes=50 * GiB, max_model_len=8192), m, catalog.gpus["h100-sxm"])
    assert r.block_size == 1040 and r.page_bytes == 1040 * 4096 and r.kv_groups == 7 and r.layers_per_group == 4
    assert r.num_gpu_blocks == 50 * GiB // (1040 * 4096 * 4) == 3150
    assert r.blocks_per_max_len_request == -(-8192 // 1040) + 6 == 14  # ⌈8,192 / 1,040⌉ + one per Mamba group
    assert r.max_concurrency == pytest.approx(3150 / 14)  # 225.00x
    assert r.state_bytes_per_request == 24 * 1040 * 4096  # 24 Mamba layers, each a padded page


def test_qwen3_next_tp2_fp8_reproduces_its_log(catalog):
    # vllm#26646 (0.11): "Setting attention block size to 1072", "GPU KV cache size: 90,048 tokens", "1.66x" at
    # 215,040. Attention 2·1·256·1 B = 512 B/token; GDN page at TP 2 = 548,864 B → block 16·⌈548,864 / 8,192⌉ = 1,072
    m = load("qwen3-next-80b-a3b-thinking")
    s = Scenario(tensor_parallel_size=2, kv_cache_dtype="fp8", max_model_len=215_040,
                 kv_cache_memory_bytes=338 * 548_864 * 12)  # fmt: skip  # 338 blocks of 12 pages
    r = size_pool(s, m, catalog.gpus["h100-sxm"])
    assert r.block_size == 1072 and r.kv_groups == 4 and r.num_gpu_blocks == 338
    assert r.blocks_per_max_len_request == -(-215_040 // 1072) + 3 == 204
    assert round(r.max_concurrency, 2) == 1.66
    assert r.num_gpu_blocks // r.kv_groups * r.block_size == 90_048  # 0.11–0.19's "GPU KV cache size"


def test_llama4_chunked_layers_with_and_without_the_hybrid_manager(catalog):
    # TP 8: page 16·2·1·128·2 = 8,192 B. L = 131,072, budget 8,192: full group ⌈131,072/16⌉ = 8,192 blocks, three
    # chunked groups ⌈min(8,192 + 8,192, L)/16⌉ = 1,024 each → 11,264; disabled manager: 48 layers in one group
    m = load("llama4-scout-17b-16e-instruct")
    base = dict(tensor_parallel_size=8, max_model_len=131_072, max_num_batched_tokens=8192, kv_cache_memory_bytes=GiB)
    on = size_pool(Scenario(**base), m, catalog.gpus["h100-sxm"])
    off = size_pool(Scenario(**base, disable_hybrid_kv_cache_manager=True), m, catalog.gpus["h100-sxm"])
    assert (on.kv_groups, on.layers_per_group, on.blocks_per_max_len_request) == (4, 12, 8192 + 3 * 1024)
    assert (off.kv_groups, off.layers_per_group, off.blocks_per_max_len_request) == (1, 48, 8192)


def test_deepseek_v32_fp8_layout(catalog):
    # fp8_ds_mla 656 B + indexer 132 B per layer; 61 layers; one group of summed pages, 64-token blocks:
    # 40 GiB / (64 · 61 · 788) = 13,961 blocks → at L = 163,840: 13,961 / 2,560 = 5.45x
    m = load("deepseek-v3.2-exp-partial")
    s = Scenario(tensor_parallel_size=8, kv_cache_dtype="fp8", max_model_len=163_840, kv_cache_memory_bytes=40 * GiB)
    r = size_pool(s, m, catalog.gpus["h200"])
    assert r.block_size == 64 and r.kv_bytes_per_token_per_gpu == 61 * 788
    assert r.num_gpu_blocks == 40 * GiB // (64 * 61 * 788) == 13_961
    assert round(r.max_concurrency, 2) == 5.45


def test_pure_mamba_holds_one_block_per_request(catalog):
    # Falcon-Mamba-7B: 64 Mamba-1 layers of 311,296 B; one group; a block is one request's state in every layer
    m = load("falcon-mamba-7b")
    r = size_pool(Scenario(kv_cache_memory_bytes=10 * GiB), m, catalog.gpus["h100-sxm"])
    assert r.num_gpu_blocks == 10 * GiB // (64 * 311_296) == 538 and r.max_concurrency == 538


def test_minimax_m2_failed_start_arithmetic():
    # spark-vllm-docker#396 (TP 2): "23.25 GiB KV cache is needed" for 196,608 tokens:
    # 62 · 2 · (8/2) · 128 · 2 B = 126,976 B/token; 196,608 · 126,976 B = 23.25 GiB
    m = load("minimax-m2")
    per_token = kv_bytes_per_token(m, kv_bytes_per_element=2, tp=2)
    assert per_token == 126_976 and round(196_608 * per_token / GiB, 2) == 23.25


# --- the reader: unknown types accepted with assumptions, missing fields refused by name -------------------------
def test_unknown_model_type_is_planned_with_its_assumptions_named(catalog):
    cfg = {"model_type": "my_new_llm", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048}  # fmt: skip
    m = model_from_hf_config(cfg)
    assert any("my_new_llm" in a and "model card" in a for a in m.assumptions)
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 4 * 2 * 2 * 64 * 2
    r = evaluate(Scenario(model="custom", custom_model=_encode(m)), catalog)
    assert any("my_new_llm" in n for n in r.notes)


def test_a_config_without_the_fields_that_matter_is_refused_by_name():
    with pytest.raises(InputError, match="vocab_size"):  # the Granite card transcription has no vocabulary size
        load("granite-4.0-h-tiny-card")
    with pytest.raises(InputError, match="ssm_state_size"):
        model_from_hf_config({"model_type": "x", "num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10,
                              "hybrid_override_pattern": "M*", "num_attention_heads": 2})  # fmt: skip


def test_llama4_max_position_embeddings_is_accepted():
    assert load("llama4-scout-17b-16e-instruct").max_position_embeddings == 10_485_760


def test_a_hybrid_shows_its_state_in_json_and_text(catalog):
    from boundary.text import render_text

    r = evaluate(Scenario(model="nemotron-h-8b", gpu="h100-sxm"), catalog)
    assert r.to_dict()["state_bytes_per_request"] == 24 * 1040 * 4096
    assert f"{24 * 1040 * 4096:,} B" in render_text(r)


def test_family_layouts_count_their_parameters_by_hand():
    """Parameters of the families whose config.json the general reader could not read by field names alone, written
    out from their configs (gated MLPs: 3 · hidden · width; attention: hidden · (hidden + 2 · kv · head) + hidden²)."""
    # DBRX: 40 layers, d 6,144, 48 heads (8 KV) of 128, 16 experts of 10,752, top 4, vocab 100,352 untied
    attn, expert = 6144 * (6144 + 2 * 1024) + 6144 * 6144, 3 * 6144 * 10752
    p = count_params(load("dbrx-instruct"))
    assert p.total == pytest.approx(40 * (attn + 16 * expert) + 2 * 100_352 * 6144, rel=1e-3)  # 131.6 B ("132B")
    assert p.active == pytest.approx(40 * (attn + 4 * expert) + 100_352 * 6144, rel=1e-3)  # 35.9 B ("36B")
    # Arctic: 35 layers, d 7,168, 56 heads (8 KV), 128 experts of 4,864, top 2, and the dense residual MLP of 4,864
    attn, expert, router = 7168 * (7168 + 2 * 1024) + 7168 * 7168, 3 * 7168 * 4864, 7168 * 128
    p = count_params(load("arctic-instruct"))
    assert p.total == pytest.approx(35 * (attn + 129 * expert + router) + 2 * 32_000 * 7168, rel=1e-3)
    assert p.active == pytest.approx(35 * (attn + 3 * expert + router) + 32_000 * 7168, rel=1e-3)  # 15.4 B, not 11.7
    # ERNIE-4.5-21B-A3B: layer 0 dense (12,288), layers 1–27 MoE: 64 experts of 1,536 (top 6) + 2 shared
    attn, expert = 2560 * (2560 + 2 * 512) + 2560 * 2560, 3 * 2560 * 1536
    p = count_params(load("ernie-4.5-21b-a3b"))
    assert p.total == pytest.approx(28 * attn + 3 * 2560 * 12288 + 27 * 66 * expert + 103_424 * 2560, rel=1e-3)
    assert _within_card(p.active, "3B")  # "3B activated" (the 21.8 B total the name rounds to 21B)
    # Falcon-40B: 60 layers, d 8,192, 128 heads (8 KV) of 64, MLP 4 · d not gated, vocab 65,024 untied
    attn = 8192 * (8192 + 2 * 512) + 8192 * 8192
    p = count_params(load("falcon-40b"))
    assert p.total == pytest.approx(60 * (attn + 2 * 8192 * 4 * 8192) + 2 * 65_024 * 8192, rel=1e-3)
    # Qwen2-VL-7B's tower from Qwen2VLVisionConfig's defaults: 32 blocks of 1,280 wide, MLP 4 × 1,280 (not gated)
    v = count_params(load("qwen2-vl-7b")).towers
    assert v == pytest.approx(32 * (4 * 1280 * 1280 + 2 * 1280 * 5120), rel=0.08)  # + biases, norms, merger


def test_llama_32_vision_is_refused_by_name():
    """mllama's cross-attention layers keep each request's image KV: refused, naming the field, not planned 10× off."""
    with pytest.raises(InputError) as e:
        load("llama-3.2-90b-vision")
    assert e.value.field == "cross_attention_layers" and "does not model" in e.value.message


def test_non_gated_and_multi_query_families_count_by_hand():
    """MLPs of 2 · hidden · width where the family's is not gated (gpt_bigcode, GPT-J, Nemotron's relu²), one KV head
    where multi_query says so, and the width 4 · hidden where the config leaves it out (GPT-J's n_inner null)."""
    # StarCoder: 40 layers, d 6,144, 48 heads sharing one KV head of 128, MLP 24,576, tied 49,152 vocab, 8,192 positions
    attn = 6144 * (6144 + 2 * 128) + 6144 * 6144
    p = count_params(load("starcoder-15b"))
    assert p.total == pytest.approx(40 * (attn + 2 * 6144 * 24576) + 49_152 * 6144 + 8192 * 6144, rel=2e-3)  # 15.5 B
    # GPT-J-6B: 28 layers, d 4,096, MHA, MLP 4 · 4,096, untied 50,400 vocab
    p = count_params(load("gpt-j-6b"))
    assert p.total == pytest.approx(28 * (4 * 4096 * 4096 + 2 * 4096 * 4 * 4096) + 2 * 50_400 * 4096, rel=2e-3)
    # Minitron-8B (nemotron): 32 layers, d 4,096, 48 heads of 128 (8 KV), relu² MLP 16,384, untied 256,000 vocab
    attn = 4096 * (6144 + 2 * 1024) + 6144 * 4096
    p = count_params(load("minitron-8b"))
    assert p.total == pytest.approx(32 * (attn + 2 * 4096 * 16384) + 2 * 256_000 * 4096, rel=2e-3)  # 8.3 B, not 10.4


def test_a_config_without_a_length_key_takes_max_model_len_as_given(catalog):
    """BLOOM (ALiBi) states no maximum length: vLLM then uses the max_model_len it is given (2,048 without one), so
    the plan does not refuse 8,192, and says what it assumed."""
    m = load("bloom-7b1")
    assert any("takes max_model_len as given" in a for a in m.assumptions)
    s = Scenario(model="custom", custom_model=_encode(m), gpu="h100-sxm", max_model_len=8192)
    assert evaluate(s, catalog).fit.fits


def test_an_audio_tower_is_named_as_not_counted():
    assert any(a.startswith("audio_config (an audio encoder) is not counted") for a in load("qwen2-audio-7b").assumptions)


def test_hunyuan_lists_its_moe_per_layer_and_keeps_a_shared_mlp():
    """Hunyuan-A13B: moe_topk / moe_intermediate_size / num_shared_expert are per-layer lists (vLLM hunyuan_v1.py
    reads layer i's), and use_mixed_mlp_moe adds a shared MLP of intermediate_size × num_shared_expert beside the 64
    experts. 32 layers, d 4,096, 32 heads (8 KV) of 128, experts of 3,072, top 8, tied 128,167 vocab."""
    attn, expert, router = 4096 * (4096 + 2 * 1024) + 4096 * 4096, 3 * 4096 * 3072, 4096 * 64
    p = count_params(load("hunyuan-a13b"))
    assert p.total == pytest.approx(32 * (attn + 65 * expert + router) + 128_167 * 4096, rel=2e-3)  # 80.4 B: "80B"
    assert _within_card(p.active + p.embedding, "13B")  # "13B active", the tied embedding counted once


def test_a_vision_tower_named_by_img_processor_is_counted():
    """Phi-3.5-vision names openai/clip-vit-large-patch14-336 instead of a vision_config: 23 blocks (features from
    layer −2) of 1,024 wide, MLP 4,096: 23 · (4 · 1,024² + 2 · 1,024 · 4,096) = 289 M, plus biases and embeddings."""
    v = count_params(load("phi-3.5-vision")).towers
    assert v == pytest.approx(23 * (4 * 1024 * 1024 + 2 * 1024 * 4096), rel=0.05)


def test_phi_3_small_is_refused_by_name():
    with pytest.raises(InputError) as e:
        load("phi-3-small-8k")
    assert e.value.field == "model_type" and "block-sparse" in e.value.message


def test_mpt_reads_its_attn_config_and_expansion_ratio():
    """MPT-7B: n_heads 32, MLP expansion_ratio 4 × d_model 4,096 (GELU, not gated), tied 50,432 vocab, ALiBi (no
    position table), max_seq_len 2,048: 32 · (4 · 4,096² + 2 · 4,096 · 16,384) + 50,432 · 4,096 = 6.65 B ("6.7B")."""
    m = load("mpt-7b-instruct")
    assert m.max_position_embeddings == 2048 and m.tie_word_embeddings
    assert count_params(m).total == pytest.approx(32 * (4 * 4096**2 + 2 * 4096 * 16384) + 50_432 * 4096, rel=1e-3)


def test_older_layouts_count_as_their_families_do():
    """GPT-2 ties its head and learns 1,024 positions: 12 · (4 · 768² + 2 · 768 · 3,072) + (50,257 + 1,024) · 768
    = 124 M. Qwen-1's intermediate_size is twice its MLP width (vLLM qwen.py: intermediate_size // 2): 24 ·
    (4 · 2,048² + 3 · 2,048 · 5,504) + 2 · 151,936 · 2,048 = 1.84 B. Phi-2 in its first (phi-msft) format: n_inner
    null is 4 · 2,560, not gated: 32 · (4 · 2,560² + 2 · 2,560 · 10,240) + 2 · 51,200 · 2,560 = 2.78 B."""
    assert count_params(load("gpt2")).total == pytest.approx(12 * (4 * 768**2 + 2 * 768 * 3072) + (50_257 + 1024) * 768, rel=3e-3)
    assert count_params(load("qwen-1.8b-chat")).total == pytest.approx(
        24 * (4 * 2048**2 + 3 * 2048 * 5504) + 2 * 151_936 * 2048, rel=3e-3)  # fmt: skip
    assert count_params(load("phi-2-msft")).total == pytest.approx(
        32 * (4 * 2560**2 + 2 * 2560 * 10240) + 2 * 51_200 * 2560, rel=3e-3)  # fmt: skip


@pytest.mark.parametrize("config, word", [
    ({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
      "intermediate_size": 3072, "vocab_size": 30522}, "encoder"),
    ({"model_type": "rwkv5", "hidden_size": 2560, "num_hidden_layers": 32, "vocab_size": 65536}, "RWKV"),
])  # fmt: skip
def test_models_that_are_not_decoders_it_plans_are_refused_by_name(config, word):
    with pytest.raises(InputError) as e:
        model_from_hf_config(config)
    assert e.value.field == "model_type" and word in e.value.message
