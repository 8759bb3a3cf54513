"""vLLM's nvfp4 KV cache (--kv-cache-dtype nvfp4): per head and token, head_size / 2 bytes of 4-bit values and
head_size / 16 FP8 block scales for K and for V (vllm/utils/torch_utils.py nvfp4_kv_cache_full_dim: "head_size // 2 +
head_size // 16"), 9/16 of a byte an element. Where vLLM serves it (its FlashInfer backend, read in the 0.20–0.34
wheels): from 0.21 on SM 10.x (trtllm-gen), from 0.32 also on SM 8.x, 9.x and 12.x through FA2 — not at head size 64
or with sinks there; never for MLA. vllm#49011 (vLLM 0.25.1, an RTX 5090): "Currently `--kv-cache-dtype nvfp4` is
hard-wired to the SM100 trtllm-gen path and rejected on SM120"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.scenario import Scenario
from calc.search import search


def plan(catalog, **kw):
    return evaluate(Scenario(**{"model": "llama-3.1-8b", "gpu": "b200", **kw}), catalog)


def test_bytes_per_token_by_hand(catalog):
    """Llama-3.1-8B: 32 layers · 8 KV heads · 2 (K, V) · (128 / 2 + 128 / 16) B = 32 · 8 · 2 · 72 = 36,864 B a token,
    against fp8's 32 · 8 · 2 · 128 = 65,536; blocks of 16 tokens: ⌊pool / (16 · 36,864)⌋."""
    nv, f8 = plan(catalog, kv_cache_dtype="nvfp4").memory, plan(catalog, kv_cache_dtype="fp8").memory
    assert nv.kv_bytes_per_token == 32 * 8 * 2 * (128 // 2 + 128 // 16) == 36_864
    assert f8.kv_bytes_per_token == 32 * 8 * 2 * 128
    assert nv.num_gpu_blocks == int(nv.kv_cache_memory_bytes // (16 * 36_864))


def test_the_pool_holds_16_9_of_fp8s_tokens(catalog):
    """Property: the same memory, 1 / 0.5625 = 1.78× the fp8 cache's tokens (to a block)."""
    nv, f8 = plan(catalog, kv_cache_dtype="nvfp4").memory, plan(catalog, kv_cache_dtype="fp8").memory
    assert nv.kv_cache_memory_bytes == f8.kv_cache_memory_bytes
    assert nv.num_gpu_blocks == pytest.approx(f8.num_gpu_blocks * 16 / 9, abs=1)


@pytest.mark.parametrize("gpu, version, refused", [
    ("b200", "0.21.0", ""), ("b300", "latest", ""),
    ("b200", "0.20.0", "before 0.21"),
    ("rtx-5090", "0.25.1", "only on SM 10.x GPUs (B200, B300) before vLLM 0.32"),  # vllm#49011
    ("h100-sxm", "0.31.0", "before vLLM 0.32"),
    ("h100-sxm", "0.32.0", ""), ("rtx-5090", "latest", ""), ("a100-80gb-sxm", "0.34.0", ""),
    ("t4", "latest", "NVIDIA T4 is turing"), ("mi300x", "latest", "is cdna3"),
])  # fmt: skip
def test_where_vllm_serves_it(catalog, gpu, version, refused):
    r = plan(catalog, gpu=gpu, kv_cache_dtype="nvfp4", engine_version=version)
    assert (refused in r.memory.dtype_refusal) if refused else r.memory.dtype_refusal == ""
    assert r.fit.fits == (not refused)


def test_mla_fa2_head_64_sinks_and_sglang_are_refused(catalog):
    assert "no MLA backend" in plan(catalog, model="deepseek-v3", tensor_parallel_size=8,
                                    kv_cache_dtype="nvfp4").memory.dtype_refusal  # fmt: skip
    on_h100 = plan(catalog, model="gpt-oss-120b", gpu="h100-sxm", kv_cache_dtype="nvfp4").memory.dtype_refusal
    assert "refuses head size 64 and attention sinks" in on_h100
    assert plan(catalog, model="gpt-oss-120b", kv_cache_dtype="nvfp4").memory.dtype_refusal == ""  # SM 10.x takes it
    assert "SGLang has no nvfp4" in plan(catalog, engine="sglang", kv_cache_dtype="nvfp4").memory.dtype_refusal


def test_the_page_says_it_and_the_serve_command_passes_it(catalog):
    r = plan(catalog, kv_cache_dtype="nvfp4")
    assert any(n.startswith("kv_cache_dtype nvfp4: 0.5625 B an element") for n in r.notes)
    assert "--kv-cache-dtype nvfp4" in r.to_dict()["serve_command"]


def test_advice_offers_it_where_vllm_serves_it(catalog):
    """Llama-3.1-70B at 131,072 tokens on one B200 does not start; nvfp4 is among the changes that fit (5,637 → about
    5,637 · 2 · 16 / 9 ≈ 20,000 blocks), and not on an H100 under vLLM 0.25."""
    r = plan(catalog, model="llama-3.1-70b", max_model_len=131_072, concurrency=64)
    assert any(s.change.startswith("nvfp4 KV cache") and s.fits and s.num_gpu_blocks > 19_000 for s in r.suggestions)
    h = plan(catalog, model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=2, max_model_len=131_072,
             concurrency=64, engine_version="0.25.0")  # fmt: skip
    assert h.suggestions and not any(s.change.startswith("nvfp4") for s in h.suggestions)


def test_the_search_leaves_it_out_where_refused(catalog):
    """Under vLLM 0.25 an H100's nvfp4 configurations cannot serve (their reason counted); the B200's can."""
    s = Scenario(model="llama-3.1-8b", search_gpus="b200,h100-sxm", search_kv_cache_dtype="nvfp4",
                 search_tensor_parallel_size="1", search_dtype="auto", engine_version="0.25.0")  # fmt: skip
    r = search(s, catalog)
    gpu = np.array(r.grid.space.gpus)[np.tile(r.grid.gpu, len(r.why) // r.grid.size)]
    assert (r.why[gpu == "h100-sxm"] == 15).all() and (r.why[gpu == "b200"] == 0).any()
    assert "KV-cache precision" in next(iter(r.why_counts()))


@pytest.mark.parametrize("kv, version, gpu, expected", [
    ("NVFP4", "0.19.0", "b200", 2 * 2 * 36 * 8 * 128),           # 0.19 maps FP8 alone: the 16-bit cache
    ("NVFP4", "0.21.0", "b200", 2 * 36 * 8 * (64 + 8)),          # nvfp4: 41,472 B
    ({"num_bits": 4, "type": "float"}, "latest", "b200", 2 * 36 * 8 * (64 + 8)),
    ("FP8", "0.21.0", "b200", 2 * 36 * 8 * 128)])  # fmt: skip
def test_a_modelopt_checkpoints_nvfp4_kv_scales_make_auto_nvfp4_from_vllm_020(catalog, kv, version, gpu, expected):
    """vLLM's get_kv_cache_quant_algo_string maps ModelOpt's kv_cache_quant_algo "NVFP4" (or a 4-bit float
    kv_cache_scheme) to nvfp4 from 0.20.0 (MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP). Qwen3-4B: 2 · 36 layers · 8 KV heads
    · (128 / 2 + 128 / 16) = 41,472 B a token against 73,728 in FP8 and 147,456 at 16 bits."""
    raw = json.loads((Path(__file__).parent / "data" / "hf_configs" / "qwen3-4b" / "config.json").read_text())
    key = "kv_cache_scheme" if isinstance(kv, dict) else "kv_cache_quant_algo"
    q = {"quant_method": "modelopt", "quant_algo": "NVFP4", key: kv}
    m = model_from_hf_config(raw | {"quantization_config": q}, name="x")
    s = Scenario(model="custom", custom_model=encode_custom_model(m), gpu=gpu, engine_version=version)
    r = evaluate(s, catalog)
    assert r.memory.kv_bytes_per_token == expected
    if expected == 2 * 36 * 8 * 72:
        assert any("kv_cache_dtype auto is NVFP4 for this checkpoint" in n for n in r.notes)


def test_a_refused_nvfp4_cache_is_offered_fp8_and_a_served_one_is_not(catalog):
    """On an RTX 4090 under vLLM 0.25 nvfp4 does not start: fp8 is the change that fits (5,177 blocks at 65,536
    tokens); on a B200 a served nvfp4 cache is never offered the larger fp8 one."""
    r = plan(catalog, gpu="rtx-4090", kv_cache_dtype="nvfp4", engine_version="0.25.0", max_model_len=65_536)
    assert any(s.change.startswith("fp8 KV cache") and s.fits for s in r.suggestions)
    b = plan(catalog, model="llama-3.1-70b", kv_cache_dtype="nvfp4", max_model_len=131_072, concurrency=64,
             input_len=100_000)  # 64 requests of 100,256 tokens do not fit one B200 with nvfp4 either
    assert b.suggestions and not any("fp8 KV cache" in s.change for s in b.suggestions)
