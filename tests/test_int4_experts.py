"""Checkpoints whose routed experts alone are 4-bit integers (Kimi-K2-Thinking's native INT4): the experts at their
group's bytes (a 16-bit scale per 32 weights, symmetric), everything else at 16 bits; the same read from an uploaded
config.json's compressed-tensors block. By hand, as data (the spec and a config), and as properties."""

import json
from pathlib import Path

import pytest

from calc.hf_config import model_from_hf_config
from calc.model_spec import QuantizationConfig
from calc.params import count_params
from calc.weights import INT4_GROUP_BYTES, int_bytes, weight_format, weights_bytes

KIMI = Path(__file__).parent / "data" / "hf_configs" / "kimi-k2-instruct" / "config.json"


def test_kimi_k2_thinking_keeps_its_int4_experts_at_group_32_and_the_rest_at_16_bits(catalog):
    """60 MoE layers × 384 experts × 3 projections × 7,168 × 2,048 = 1,014,686,023,680 routed-expert weights at
    0.5 + 2/32 = 0.5625 byte (570.8 GB); the other 11.7 B parameters (MLA attention, the shared expert, the dense
    first layer, embeddings and head) at 2 bytes: about 594 GB in all, 74.3 GB (69.2 GiB) a GPU at TP 8."""
    m = catalog.models["kimi-k2-thinking"]
    f = weight_format(m, "auto")
    assert (f.linear_bytes, f.expert_bytes) == (2.0, 0.5 + 2 / 32)
    assert f.label == "int4 experts (compressed-tensors), bf16 rest"
    p = count_params(m)
    assert p.experts == 60 * 384 * 3 * 7168 * 2048 == 1_014_686_023_680
    total = weights_bytes(p, f)
    assert total == pytest.approx(p.experts * 0.5625 + (p.total - p.experts) * 2.0, rel=1e-12)
    assert 590e9 < total < 598e9
    assert catalog.models["kimi-k2-instruct"].hf_id != m.hf_id and m.max_position_embeddings == 262_144


def upload(quantization: dict):
    cfg = json.loads(KIMI.read_text()) | {"quantization_config": quantization}
    return model_from_hf_config(cfg, name="moonshotai/Kimi-K2-Thinking")


def block(weights: dict, ignore=None) -> dict:
    q = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": weights, "targets": ["Linear"]}}}
    return q if ignore is None else q | {"ignore": ignore}


def test_an_uploaded_compressed_tensors_block_gives_group_symmetry_and_experts_only():
    """The config.json's own fields: config_groups' 4-bit weights carry group_size and symmetric; an ignore list
    that leaves out attention and the dense / shared MLPs quantizes the routed experts alone."""
    ignore = ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:model[.]layers[.]0[.]mlp.*"]
    m = upload(block({"num_bits": 4, "group_size": 32, "symmetric": True}, ignore))
    assert m.quantization_config == QuantizationConfig(quant_method="compressed-tensors", bits=4, experts_only=True,
                                                       group_size=32, symmetric=True)  # fmt: skip
    assert (weight_format(m, "auto").linear_bytes, weight_format(m, "auto").expert_bytes) == (2.0, 0.5625)
    every = upload(block({"num_bits": 4, "group_size": 32, "symmetric": True}))  # no ignore list: every linear
    assert not every.quantization_config.experts_only and weight_format(every, "auto").linear_bytes == 0.5625
    attention_only = upload(block({"num_bits": 4}, ["re:.*self_attn.*"]))  # a dense model's MLPs stay quantized
    assert not attention_only.quantization_config.experts_only
    assert weight_format(attention_only, "auto").expert_bytes == INT4_GROUP_BYTES


@pytest.mark.parametrize("group", ["32", True, 3, 1 << 20, None, 32.0])
def test_a_malformed_group_size_is_ignored_not_trusted(group):
    """A group size that is not a whole number of 8–4,096 weights (a string, a bool, a float) plans the default
    group of 128 instead of failing or dividing by it."""
    m = upload(block({"num_bits": 4, "group_size": group}))
    assert m.quantization_config.group_size is None
    assert weight_format(m, "auto").expert_bytes == INT4_GROUP_BYTES


def test_int4_bytes_by_hand_and_as_properties():
    """AWQ's default, group 128 with a scale and a zero point: 0.5 + 4/128; symmetric group 32: 0.5 + 2/32.
    Larger groups and no zero point cost less; all stay above half a byte."""
    q = QuantizationConfig
    assert int_bytes(q(quant_method="awq")) == INT4_GROUP_BYTES == 0.5 + 4 / 128
    assert int_bytes(q(quant_method="compressed-tensors", group_size=32, symmetric=True)) == 0.5 + 2 / 32
    sizes = [int_bytes(q(quant_method="gptq", group_size=g)) for g in (16, 32, 64, 128, 1024)]
    assert sizes == sorted(sizes, reverse=True) and min(sizes) > 0.5
    for g in (32, 128):
        assert int_bytes(q(quant_method="gptq", group_size=g, symmetric=True)) < int_bytes(q(quant_method="gptq", group_size=g))
