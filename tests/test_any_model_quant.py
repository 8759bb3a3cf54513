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
    throughout (33.98 GiB). Weights: experts × 0.5625 + the other linear layers × 1 (+ FP8's block-scale share) +
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
