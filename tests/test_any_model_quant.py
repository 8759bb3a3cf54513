"""Any model from the Hub, its quantization: checkpoints that keep it outside config.json (ModelOpt's
hf_quant_config.json) and those that give a format per module (MIXED_PRECISION). Every expected number is written
out below; configs in tests/data/hf_configs/<slug>/ with their SOURCE.md."""

import json

import pytest
from test_any_model import CONFIGS

from calc.errors import InputError
from calc.params import count_params
from calc.units import GiB


def test_a_modelopt_checkpoints_hf_quant_config_beside_its_config_is_read(tmp_path, catalog):
    """nvidia's NVFP4 checkpoints: config.json has no quantization_config; hf_quant_config.json says quant_algo
    NVFP4, which vLLM reads (modelopt_fp4). Ling-lite-1.5, 16.80 B parameters of which the embedding and the head
    (2 × 126,464 × 2,048 = 518,004,736) stay 16-bit: (16.80e9 − 0.518e9) × (0.5 + 1/16) + 0.518e9 × 2 bytes."""
    from calc.loader import load_model_file
    from calc.weights import NVFP4_BYTES, weight_format, weights_bytes

    folder = tmp_path / "Ling-lite-NVFP4"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "ling-lite-1.5" / "config.json").read_text())
    plain = load_model_file(folder / "config.json")
    assert any(a.startswith("the name says NVFP4") for a in plain.assumptions)
    (folder / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16}}))
    m = load_model_file(folder / "config.json")
    assert not any(a.startswith("the name says") for a in m.assumptions)
    p = count_params(m)
    tables = 2 * 126_464 * 2_048
    assert p.embedding + p.lm_head == tables
    expected = (p.total - tables) * NVFP4_BYTES + tables * 2  # the norms (2 B each, ~0.1 M) are within the 0.1 %
    got = weights_bytes(p, weight_format(m, "auto"))
    assert got == pytest.approx(expected, rel=0.001)
    (folder / "hf_quant_config.json").write_text("[1]")
    with pytest.raises(InputError, match="hf_quant_config.json"):
        load_model_file(folder / "config.json")


def test_a_modelopt_mixed_precision_checkpoint_keeps_its_experts_at_four_bits(catalog):
    """nvidia/Qwen3.6-35B-A3B-NVFP4: quant_algo MIXED_PRECISION, each module its format (quantized_layers): routed
    experts W4A16_NVFP4 (0.5 + 1/16 byte a weight), attention and linear attention FP8; the planner read it as fp8
    throughout (34.06 GiB). Weights: experts × 0.5625 + the other linear layers × 1 (+ FP8's block-scale share) +
    the tables and the vision tower at 2 bytes."""
    from calc.loader import load_model_file
    from calc.weights import FP8_BLOCK_SCALE_OVERHEAD, NVFP4_BYTES, weight_format, weights_bytes

    m = load_model_file(CONFIGS / "qwen3.6-35b-a3b-nvfp4" / "config.json")
    f = weight_format(m, "auto")
    assert (f.expert_bytes, f.linear_bytes) == (NVFP4_BYTES, 1 + FP8_BLOCK_SCALE_OVERHEAD) and "mixed" in f.label
    # the audit's count from the planner's parameter groups: experts 32.21 B × 0.5625 = 18.12 GB, shared experts
    # 0.08 GB, linear attention and attention in fp8 1.20 GB, embedding + head 2.03 GB and vision 0.89 GB at 2 bytes:
    # 22.3 GB = 20.8 GiB
    assert weights_bytes(count_params(m), f) / GiB == pytest.approx(20.8, rel=0.02)


def test_a_negative_or_zero_bit_width_is_refused_by_name():
    from calc.hf_config import model_from_hf_config

    base = json.loads((CONFIGS / "internlm2_5-7b" / "config.json").read_text())
    for bits in (-4, 0, "four", True):
        with pytest.raises(InputError) as e:
            model_from_hf_config(base | {"quantization_config": {"quant_method": "gptq", "bits": bits}})
        assert e.value.field == "quantization_config.bits"


def test_a_modelopt_checkpoints_fp8_kv_scales_make_auto_an_fp8_cache(catalog):
    """nvidia/Llama-3.1-70B-Instruct-FP8 (hf_quant_config.json: kv_cache_quant_algo FP8): vLLM 0.14 and later resolve
    --kv-cache-dtype auto to fp8_e4m3 (vllm#29980), earlier releases keep the 16-bit cache. KV bytes per token:
    2 (K, V) × 80 layers × 8 KV heads × 128 × 1 byte = 163,840 from 0.14, × 2 bytes = 327,680 before; at 8 in flight
    on one H100 SXM the FP8 pool holds them where the 16-bit one (half the blocks) does not. SGLang resolves it alike."""
    from calc.custom import encode_custom_model
    from calc.evaluate import evaluate
    from calc.loader import load_model_file
    from calc.scenario import Scenario
    from calc.search import search

    m = load_model_file(CONFIGS / "llama-3.1-70b-instruct-fp8-modelopt" / "config.json")
    assert m.quantization_config.kv_cache_quant_algo == "fp8"
    base = Scenario(model="custom", custom_model=encode_custom_model(m), gpu="h100-sxm", concurrency=8)
    new = evaluate(base, catalog)
    old = evaluate(base.model_copy(update={"engine_version": "0.13.0"}), catalog)
    assert new.memory.kv_bytes_per_token == 2 * 80 * 8 * 128 * 1
    assert old.memory.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2
    assert new.fit.max_concurrency_at_length >= 8 > old.fit.max_concurrency_at_length
    assert any(n.startswith("kv_cache_dtype auto is FP8 for this checkpoint") for n in new.notes)
    assert new.scenario.kv_cache_dtype == "fp8" and "--kv-cache-dtype fp8" in new.to_dict()["serve_command"]
    sglang = evaluate(base.model_copy(update={"engine": "sglang"}), catalog)  # configure_kv_cache_dtype: the same
    assert sglang.memory.kv_bytes_per_token == 2 * 80 * 8 * 128 * 1
    rows = search(base.model_copy(update={"request_rate": 1.0, "search_gpus": "h100-sxm"}), catalog)
    assert rows.grid.space.kv_cache_dtypes == ("fp8",)  # 'auto' is fp8 for it: listed and served as such
    assert any(n.startswith("kv_cache_dtype auto is FP8 for this checkpoint") and n.endswith("listed as fp8")
               for n in rows.notes)  # fmt: skip


def test_smollm3_ties_its_head_by_default():
    """HuggingFaceTB/SmolLM3-3B's config.json leaves tie_word_embeddings out; SmolLM3Config ties by default. Per layer
    2,048 × (2,048 + 2 × 512) + 2,048 × 2,048 attention + 3 × 2,048 × 11,008 MLP = 78,118,912 (norms aside), × 36,
    plus one 128,256 × 2,048 table: 3.075 B, the card's 3.08 B (untied: 3.338 B)."""
    from calc.loader import load_model_file

    m = load_model_file(CONFIGS / "smollm3-3b" / "config.json")
    assert m.tie_word_embeddings
    per_layer = 2048 * (2048 + 2 * 512) + 2048 * 2048 + 3 * 2048 * 11008
    assert count_params(m).total == pytest.approx(36 * per_layer + 128_256 * 2048, rel=0.001)


@pytest.mark.parametrize("q, why", [({"quant_method": "gptq", "group_size": 128}, "gptq needs its bit width"),
                                    ({"quant_method": "awq", "w_bit": 3}, "AWQ weights are 4 or 8 bits"),
                                    ({"quant_method": "gptq", "bits": 5}, "GPTQ weights are 2, 3, 4 or 8 bits")])  # fmt: skip
def test_a_gptq_or_awq_config_vllm_refuses_is_refused_by_name(q, why):
    """vLLM's GPTQConfig.from_config reads `bits` (get_from_keys raises without it); AWQConfig takes 4 bits, AWQ-Marlin
    4 or 8; GPTQ kernels 2, 3, 4 or 8."""
    from calc.hf_config import model_from_hf_config

    config = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text()) | {"quantization_config": q}
    with pytest.raises(InputError, match=why) as e:
        model_from_hf_config(config, name="x")
    assert e.value.field == "quantization_config.bits"


@pytest.mark.parametrize("field", ["num_key_value_heads", "vocab_size", "hidden_size"])
def test_a_count_given_as_true_is_refused(field):
    """`"num_key_value_heads": true` was read as 1 (an eighth of Qwen3-4B's KV cache); a count is a whole number."""
    from calc.hf_config import model_from_hf_config

    config = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text()) | {field: True}
    with pytest.raises(InputError, match="not true or false"):
        model_from_hf_config(config, name="x")


@pytest.mark.parametrize("kv", [{"kv_cache_quant_algo": "FP8"},
                                {"kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}},
                                {"quantization": {"kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}}}])  # fmt: skip
def test_modelopt_fp8_kv_scales_are_read_in_every_layout_vllm_reads(kv):
    """vLLM's get_kv_cache_quant_algo_string: kv_cache_quant_algo "FP8", or kv_cache_scheme {dynamic false, 8 bits,
    float}, at the top of a modelopt quantization_config or under its "quantization"; a dynamic scheme is not it."""
    from calc.hf_config import model_from_hf_config

    config = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text())
    q = {"quant_method": "modelopt", "quant_algo": "FP8"} | kv
    assert model_from_hf_config(config | {"quantization_config": q}, name="x").quantization_config.kv_cache_quant_algo == "fp8"
    dynamic = {"quant_method": "modelopt", "quant_algo": "FP8",
               "kv_cache_scheme": {"dynamic": True, "num_bits": 8, "type": "float"}}  # fmt: skip
    assert model_from_hf_config(config | {"quantization_config": dynamic}, name="x").quantization_config.kv_cache_quant_algo is None


def test_a_compressed_tensors_nvfp4_checkpoint_is_four_bit_floats_not_int4():
    """llm-compressor's NVFP4 scheme (RedHatAI/Qwen3-8B-NVFP4: format nvfp4-pack-quantized, weights {num_bits 4,
    type float, strategy tensor_group, group_size 16}) was sized as int4 with a 16-bit scale per 16 (0.625 B a
    weight; an audit's hand count 5.96 GiB against 6.36 for Qwen3-8B). Here Qwen3-4B's config with that block: the
    linear layers at 0.5 + 1/16 B, the tables and norms at 2."""
    from calc.hf_config import model_from_hf_config
    from calc.weights import NVFP4_BYTES, weight_format, weights_bytes

    cfg = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                  "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                      "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                                      "symmetric": True, "dynamic": False}}}, "ignore": ["lm_head"]}  # fmt: skip
    m = model_from_hf_config(cfg)
    f = weight_format(m, "auto")
    assert (f.linear_bytes, f.expert_bytes) == (NVFP4_BYTES, NVFP4_BYTES) == (0.5625, 0.5625) and "nvfp4" in f.label
    p = count_params(m)
    linear, rest = p.attention + p.dense_mlp, p.embedding + p.lm_head + p.norms
    assert weights_bytes(p, f) == pytest.approx(linear * 0.5625 + rest * 2.0, rel=1e-12)


def test_two_families_vllm_cannot_plan_as_configured_are_refused_by_name():
    """An audit: Ring-mini-linear-2.0 (bailing_moe_linear: lightning attention in 16 of 20 layers, softmax every
    layer_group_size-th) was planned as 20 layers of full attention (40,960 B a token, 5× its 8,192); RecurrentGemma,
    which vLLM does not serve, as a 4.75 B plain decoder (published 2.68 B)."""
    from calc.hf_config import model_from_hf_config

    base = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text())
    for model_type, says in (("bailing_moe_linear", "layer_group_size"), ("recurrent_gemma", "no model class")):
        with pytest.raises(InputError) as e:
            model_from_hf_config(base | {"model_type": model_type})
        assert e.value.field == "model_type" and says in e.value.message
