"""--kv-cache-dtype auto for a checkpoint with FP8 KV scales: which format, which engine, from which release
(calc.resolve.CHECKPOINT_KV_SINCE, read in each release's wheel). KV bytes per token are Qwen3-4B's: 2 (K, V) × 36
layers × 8 KV heads × 128 = 73,728 elements, 73,728 B in FP8 and 147,456 B at 16 bits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.scenario import Scenario

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
FP8_BYTES, BF16_BYTES = 2 * 36 * 8 * 128, 2 * 2 * 36 * 8 * 128
PER_TENSOR = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
LLM_COMPRESSOR = {"quant_method": "compressed-tensors", "kv_cache_scheme": PER_TENSOR,
                  "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}}  # fmt: skip


def kv_bytes(catalog, q: dict, engine: str, version: str, config: str = "qwen3-4b") -> int:
    raw = json.loads((CONFIGS / config / "config.json").read_text())
    m = model_from_hf_config(raw | {"quantization_config": q}, name="x")
    s = Scenario(model="custom", custom_model=encode_custom_model(m), gpu="h100-sxm", engine=engine,
                 engine_version=version)  # fmt: skip
    return evaluate(s, catalog).memory.kv_bytes_per_token


@pytest.mark.parametrize("engine, version, expected", [
    ("vllm", "0.14.0", BF16_BYTES), ("vllm", "0.15.0", FP8_BYTES), ("vllm", "latest", FP8_BYTES),
    ("sglang", "0.5.18", BF16_BYTES), ("sglang", "0.5.19", FP8_BYTES)])  # fmt: skip
def test_an_llm_compressor_kv_scheme_is_fp8_from_the_release_that_reads_it(catalog, engine, version, expected):
    """vLLM's Attention layer sets fp8 for any kv_cache_scheme from 0.15.0 (vllm#30141); SGLang's compressed-tensors
    config names it kv_cache_quant_algo from 0.5.19. Before: the scales load unused, the cache is 16-bit."""
    assert kv_bytes(catalog, LLM_COMPRESSOR, engine, version) == expected


def test_sglang_takes_only_a_static_per_tensor_scheme_and_vllm_any(catalog):
    """SGLang 0.5.19+ warns "only static symmetric per-tensor FP8 scales are supported" and keeps 16 bits for a
    per-head scheme; vLLM serves that one in FP8 too."""
    per_head = LLM_COMPRESSOR | {"kv_cache_scheme": PER_TENSOR | {"strategy": "attn_head"}}
    assert kv_bytes(catalog, per_head, "sglang", "latest") == BF16_BYTES
    assert kv_bytes(catalog, per_head, "vllm", "latest") == FP8_BYTES


def test_vllms_mla_layers_keep_their_16_bit_cache_under_an_llm_compressor_scheme(catalog):
    """The override is in vLLM's Attention, not MLAAttention: an MLA model's latent cache stays 16-bit under 'auto'.
    DeepSeek-V2 (tests/data/hf_configs/deepseek-v2): 60 layers × (512 + 64) elements × 2 B = 69,120 B a token."""
    assert kv_bytes(catalog, LLM_COMPRESSOR, "vllm", "latest", config="deepseek-v2") == 60 * (512 + 64) * 2


def test_an_fp8_checkpoints_kv_algo_is_sglangs_alone(catalog):
    """quant_method fp8 with kv_cache_quant_algo FP8: SGLang's Fp8Config reads it from 0.5.18; vLLM's Fp8Config reads
    no KV field (16-bit, scales dropped)."""
    q = {"quant_method": "fp8", "kv_cache_quant_algo": "FP8"}
    assert kv_bytes(catalog, q, "sglang", "0.5.18") == FP8_BYTES
    assert kv_bytes(catalog, q, "sglang", "0.5.17") == BF16_BYTES
    assert kv_bytes(catalog, q, "vllm", "latest") == BF16_BYTES


def test_modelopt_kv_scales_from_vllm_014_and_sglang_053(catalog):
    """vLLM 0.13.0's arg_utils passes 'auto' on (16-bit); 0.14.0 resolves it (vllm#29980). SGLang 0.5.2: 16-bit;
    0.5.3: configure_kv_cache_dtype. The note names the engine and the release."""
    q = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
    assert [kv_bytes(catalog, q, "vllm", v) for v in ("0.13.0", "0.14.0")] == [BF16_BYTES, FP8_BYTES]
    assert [kv_bytes(catalog, q, "sglang", v) for v in ("0.5.2", "0.5.3")] == [BF16_BYTES, FP8_BYTES]
    raw = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text())
    m = model_from_hf_config(raw | {"quantization_config": q}, name="x")
    r = evaluate(Scenario(model="custom", custom_model=encode_custom_model(m), gpu="h100-sxm", engine="sglang"), catalog)
    assert any("SGLang 0.5.3 and later" in n and "ModelOpt's kv_cache_quant_algo" in n for n in r.notes)


def test_a_scheme_vllm_would_not_serve_is_not_read_as_fp8():
    """vLLM's compressed-tensors KV scheme must be 8-bit symmetric floats; an int8 or asymmetric one is not an FP8
    cache."""
    raw = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text())
    for kv in (PER_TENSOR | {"type": "int"}, PER_TENSOR | {"symmetric": False}, PER_TENSOR | {"num_bits": 4}):
        q = LLM_COMPRESSOR | {"kv_cache_scheme": kv}
        assert model_from_hf_config(raw | {"quantization_config": q}, name="x").quantization_config.kv_cache_quant_algo is None


@pytest.mark.parametrize("version, per_layer", [("0.10.2", 576 * 2 + 132), ("0.11.0", 656 + 132), ("0.11", 656 + 132),
                                                ("0.11.1", 576 * 2 + 132), ("latest", 576 * 2 + 132)])  # fmt: skip
def test_deepseek_v32s_auto_cache_is_fp8_ds_mla_under_vllm_0_11_0_alone(catalog, version, per_layer):
    """vllm#25988 (in 0.11.0): "For DeepseekV3.2, we use a custom fp8 format as default (i.e. "auto")"; from 0.11.1
    'auto' is bf16 again. Per layer and token: fp8_ds_mla's 656 B, else (512 + 64) × 2 B, plus the indexer's 132 B;
    61 layers."""
    s = Scenario(model="deepseek-v3.2-exp", gpu="h200", tensor_parallel_size=8, engine_version=version)
    r = evaluate(s, catalog)
    assert r.memory.kv_bytes_per_token == 61 * per_layer
    assert any("fp8_ds_mla for DeepSeek-V3.2 under vLLM 0.11.0" in n for n in r.notes) == (per_layer == 656 + 132)
