"""poolside's Laguna (model_type laguna; vLLM models/laguna.py) from its config.json: query heads per layer, a gate per
query head, a sigmoid router with a bias, one shared expert, 30 of 40 layers sliding over 512 tokens — its parameters
against the Hub's count, its KV cache and attention work by hand, and the layouts it refuses by name.

Configs: tests/data/hf_configs/laguna-xs.2-partial/ (SOURCE.md: verbatim up to sliding_window, the layer lists
inferred) and laguna-s-2.1/ (complete). Every expected number is written out below.
"""

import json

import pytest
from test_any_model import CONFIGS, load

from calc.errors import InputError
from calc.hf_config import model_from_hf_config
from calc.kv_cache import kv_bytes_per_token
from calc.params import count_params
from calc.work import attention_flop_per_context_token

SLUG = "laguna-xs.2-partial"


def _cfg() -> dict:
    return json.loads((CONFIGS / SLUG / "config.json").read_text())


def test_laguna_xs2_counts_the_hubs_33_442_617_088_parameters():
    """H 2,048, d 128, 8 KV heads. A full layer (48 heads): q 2,048 · 6,144 + k, v 2 · 2,048 · 1,024 + o 6,144 · 2,048
    + g_proj 2,048 · 48 + q/k norms 2 · 128 = 29,458,688; a sliding one (64 heads): 37,880,064. Layer 0 is a dense MLP
    of 8,192: 3 · 2,048 · 8,192. Layers 1–39: 256 experts and a shared one of 512 (3 · 2,048 · 512 each), router
    2,048 · 256 + its bias 256. Untied embedding and lm_head 100,352 · 2,048 each; two norms a layer and the final one.
    Total 33,442,617,088: the Hub's safetensors total for poolside/Laguna-XS.2 (SOURCE.md)."""
    p = count_params(load(SLUG))
    full = 2048 * 6144 + 2 * 2048 * 1024 + 6144 * 2048 + 2048 * 48 + 2 * 128
    slide = 2048 * 8192 + 2 * 2048 * 1024 + 8192 * 2048 + 2048 * 64 + 2 * 128
    assert (full, slide) == (29_458_688, 37_880_064) and p.attention == 10 * full + 30 * slide
    expert = 3 * 2048 * 512
    assert p.experts == 39 * 256 * expert and p.active_experts == 39 * 8 * expert
    assert p.dense_mlp == 3 * 2048 * 8192 + 39 * (expert + 2048 * 256 + 256)
    assert p.embedding == p.lm_head == 100_352 * 2048
    assert p.total == 33_442_617_088


def test_laguna_xs2_keeps_one_page_size_and_slides_30_of_its_40_layers():
    """Every layer keeps 8 KV heads of 128: 2 · 8 · 128 · 2 B = 4,096 B a token a layer, 163,840 B over 40 layers
    (vLLM's page per token); the 30 sliding layers keep their last 512 tokens (SlidingWindowSpec), so a context of
    C tokens holds 10 · 4,096 · C + 30 · 4,096 · min(C, 512) bytes. Attention work per context token: 2 · (48 · 10 +
    64 · 30) · (128 + 128) = 1,228,800 FLOP (the sliding layers with their own 64 query heads)."""
    m = load(SLUG)
    assert m.layer_types.count("sliding_attention") == 30 and m.sliding_window == 512
    assert (m.num_attention_heads, m.swa_num_attention_heads, m.use_head_wise_attn_gate) == (48, 64, True)
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 40 * 2 * 8 * 128 * 2 == 163_840
    assert attention_flop_per_context_token(m) == 2 * (48 * 10 + 64 * 30) * (128 + 128) == 1_228_800


def test_laguna_reads_its_moe_layers_as_vllm_does():
    """vLLM's laguna.py makes a layer MoE where i ∉ mlp_only_layers and (i + 1) % decoder_sparse_step == 0, with its
    LagunaConfig's defaults [0] and 1, and ignores mlp_layer_types ('dense' / 'sparse', which this reader's own
    vocabulary calls dense / moe): a config that states only mlp_layer_types is read the same way."""
    cfg = {k: v for k, v in _cfg().items() if k not in ("mlp_only_layers", "decoder_sparse_step")}
    cfg["mlp_layer_types"] = ["dense"] + ["sparse"] * 39
    m = model_from_hf_config(cfg, name="laguna")
    assert m.plan.count("ffn:moe") == 39 and m.plan.count("ffn:dense") == 1
    assert count_params(m).total == 33_442_617_088


@pytest.mark.parametrize(("change", "field"), [
    ({"gating": "per-element"}, "gating"),
    ({"gating": 2}, "gating"),
    ({"num_attention_heads_per_layer": [48] * 39 + [56]}, "num_attention_heads_per_layer"),
    ({"num_attention_heads_per_layer": [48] * 39}, "num_attention_heads_per_layer"),
    ({"num_attention_heads_per_layer": ["48"] * 40}, "num_attention_heads_per_layer"),
])  # fmt: skip
def test_laguna_layouts_it_cannot_plan_are_refused_by_name(change, field):
    """A gate per element (hidden → heads · head_dim) and more than one head count among the full (or the sliding)
    layers are not modelled; a malformed list is refused, naming the field."""
    with pytest.raises(InputError) as e:
        model_from_hf_config({**_cfg(), **change})
    assert e.value.field == field


def test_without_a_gate_laguna_has_no_g_proj():
    """gating false: 10 · 2,048 · 48 + 30 · 2,048 · 64 = 4,915,200 parameters fewer."""
    gated, plain = (count_params(model_from_hf_config({**_cfg(), "gating": g})) for g in (True, False))
    assert gated.total - plain.total == 10 * 2048 * 48 + 30 * 2048 * 64 == 4_915_200


@pytest.mark.parametrize(("spec", "slug", "total"), [
    ("laguna-xs.2", SLUG, 33_442_617_088), ("laguna-s-2.1", "laguna-s-2.1", 117_561_977_600)])
def test_the_shipped_laguna_specs_are_the_configs_read(catalog, spec, slug, total):
    """model_specs/laguna-*.yaml hold the fields the reader makes of each config.json: the same model."""
    shipped, read = catalog.models[spec], load(slug)
    assert count_params(shipped).total == count_params(read).total == total
    assert (shipped.layer_types, shipped.swa_num_attention_heads, shipped.use_head_wise_attn_gate) == \
        (read.layer_types, read.swa_num_attention_heads, read.use_head_wise_attn_gate)
    assert shipped.plan.ffns == read.plan.ffns


def test_laguna_s21_counts_the_hubs_117_561_977_600_parameters():
    """The complete Laguna-S-2.1 config (gating "per-head", mlp_layer_types dense / sparse, 48 query heads on its 12
    full layers and 72 on its 36 sliding ones). H 3,072, d 128, 8 KV heads: a full layer q 3,072 · 6,144 + k, v
    2 · 3,072 · 1,024 + o 6,144 · 3,072 + g_proj 3,072 · 48 + norms 256 = 44,187,904; a sliding one (9,216 query wide,
    72 gates) 63,136,000. Layer 0: a dense MLP of 12,288. Layers 1–47: 256 experts and a shared one of 1,024
    (3 · 3,072 · 1,024 each), top-10, router 3,072 · 256 + its bias. Untied 100,352 · 3,072 embedding and lm_head.
    Total 117,561,977,600: the Hub's num_parameters for poolside/Laguna-S-2.1 (SOURCE.md)."""
    p = count_params(load("laguna-s-2.1"))
    full = 3072 * 6144 + 2 * 3072 * 1024 + 6144 * 3072 + 3072 * 48 + 2 * 128
    slide = 3072 * 9216 + 2 * 3072 * 1024 + 9216 * 3072 + 3072 * 72 + 2 * 128
    assert (full, slide) == (44_187_904, 63_136_000) and p.attention == 12 * full + 36 * slide
    expert = 3 * 3072 * 1024
    assert p.experts == 47 * 256 * expert and p.active_experts == 47 * 10 * expert
    assert p.dense_mlp == 3 * 3072 * 12288 + 47 * (expert + 3072 * 256 + 256)
    assert p.total == 117_561_977_600
