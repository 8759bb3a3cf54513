"""Qwen3-VL's vision tower and Qwen3-Omni's thinker, counted to the parameter.

Qwen3-Omni: vLLM serves the thinker (text model, vision and audio encoders) and drops the talker and code2wav; the
config is Qwen/Qwen3-Omni-30B-A3B-Instruct's (tests/data/hf_configs/qwen3-omni-30b-a3b-instruct/SOURCE.md), the
published total its model.safetensors.index.json's 35,259,818,545 parameters. Qwen3-VL's tower (the thinker's too)
has a learned position table and a merger per deepstack level beside the last one: without them Qwen3-VL-30B-A3B
counted 94.7 M parameters (189 MB) short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc.errors import InputError
from calc.hf_config import model_from_hf_config
from calc.kv_cache import kv_bytes_per_token
from calc.loader import load_catalog
from calc.params import audio_params, count_params, vision_params

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
CONFIG = CONFIGS / "qwen3-omni-30b-a3b-instruct" / "config.json"


def lin(i: int, o: int, bias: bool = True) -> int:
    return i * o + (o if bias else 0)


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(CONFIG.read_text())


@pytest.fixture(scope="module")
def thinker(raw):
    return model_from_hf_config(raw, name="Qwen3-Omni-30B-A3B-Instruct")


def test_the_thinker_is_planned_with_its_text_models_kv_geometry(thinker):
    """thinker_config.text_config: 48 layers, 4 KV heads of 128 → 2 · 48 · 4 · 128 · 2 B = 98,304 B a token; 65,536
    positions; 128 experts, 8 a token; the talker's 20 layers and its KV are not vLLM's."""
    assert thinker.num_hidden_layers == 48 and thinker.num_key_value_heads == 4 and thinker.head_dim == 128
    assert kv_bytes_per_token(thinker, kv_bytes_per_element=2) == 2 * 48 * 4 * 128 * 2 == 98_304
    assert thinker.max_position_embeddings == 65_536
    assert thinker.num_experts == 128 and thinker.num_experts_per_tok == 8
    assert any("talker and code2wav" in a for a in thinker.assumptions)


def test_an_omni_config_without_a_name_is_called_by_its_own_model_type(raw):
    """Uploaded without _name_or_path, the plan was titled by its thinker's text model, 'qwen3_omni_moe_text'; its
    size follows (the thinker's total, counted by hand below)."""
    assert model_from_hf_config(raw).name == f"qwen3_omni_moe ({count_params(model_from_hf_config(raw, name='x')).total / 1e9:.2f} B parameters)"


def test_text_vision_and_audio_count_by_hand(thinker):
    """Text: per layer q 2,048 → 32 · 128, k and v → 4 · 128, o back, q/k norms of 128, 128 experts of 3 · 2,048 ·
    768 and a router, two norms; embeddings and an untied head of 152,064 · 2,048; a final norm.
    Vision (Qwen3-VL's ViT, 27 blocks of 1,152, MLP 4,304 not gated): patch 3 · 2 · 16² · 1,152 + bias, 48² learned
    positions, the merger (LayerNorm over 1,152; 4,608 → 4,608 → 2,048 with biases) and 3 deepstack mergers
    (LayerNorm over 4,608).
    Audio: 32 Whisper-style blocks of 1,280 (MLP 5,120), three 3×3 convolutions of 480 channels, 480 · 16 → 1,280,
    a final LayerNorm, 1,280 → 1,280 → 2,048."""
    H, hd = 2048, 128
    attn = lin(H, 32 * hd, False) + 2 * lin(H, 4 * hd, False) + lin(32 * hd, H, False) + 2 * hd
    layer = attn + 128 * 3 * H * 768 + H * 128 + 2 * H
    text = 48 * layer + H + 2 * 152_064 * H
    d, ff, m = 1152, 4304, 1152 * 4
    block = 4 * d + lin(d, 3 * d) + lin(d, d) + lin(d, ff) + lin(ff, d)
    merger = lin(m, m) + lin(m, 2048)
    vision = 3 * 2 * 16 * 16 * d + d + 48 * 48 * d + 27 * block + 2 * d + merger + 3 * (2 * m + merger)
    a, aff, c = 1280, 5120, 480
    audio = (32 * (4 * lin(a, a) + 4 * a + lin(a, aff) + lin(aff, a)) + (9 * c + c) + 2 * (9 * c * c + c)
             + c * 16 * a + 2 * a + lin(a, a) + lin(a, 2048))  # fmt: skip
    p = count_params(thinker)
    assert vision_params(thinker) == vision and audio_params(thinker) == audio
    assert p.total - p.towers == text
    assert p.total == text + vision + audio


def test_thinker_plus_talker_and_code2wav_is_the_published_total(raw, thinker):
    """The talker (20 MoE layers of 1,024: 128 experts of 384, a shared expert of 768 and its gate; two 2,048 → 2,048
    → 1,024 projections from the thinker; a codec head), its 5-layer code predictor (15 embeddings and heads of
    2,048 codes), and code2wav (worked out from its config as transformers' module tree builds it) are what vLLM
    leaves on disk: with them the planner's thinker makes the index's total exactly."""
    tk = raw["talker_config"]
    tt, cp = tk["text_config"], tk["code_predictor_config"]
    h, hd = tt["hidden_size"], tt["head_dim"]
    attn = lin(h, tt["num_attention_heads"] * hd, False) + 2 * lin(h, tt["num_key_value_heads"] * hd, False) + \
        lin(tt["num_attention_heads"] * hd, h, False) + 2 * hd  # fmt: skip
    moe = tt["num_experts"] * 3 * h * tt["moe_intermediate_size"] + h * tt["num_experts"] + \
        3 * h * tt["shared_expert_intermediate_size"] + h  # fmt: skip
    th = tk["thinker_hidden_size"]
    talker = tt["num_hidden_layers"] * (attn + moe + 2 * h) + h + 2 * tt["vocab_size"] * h + 2 * (lin(th, th) + lin(th, h))
    ch, chd, groups = cp["hidden_size"], cp["head_dim"], cp["num_code_groups"] - 1
    cattn = lin(ch, cp["num_attention_heads"] * chd, False) + 2 * lin(ch, cp["num_key_value_heads"] * chd, False) + \
        lin(cp["num_attention_heads"] * chd, ch, False) + 2 * chd  # fmt: skip
    talker += cp["num_hidden_layers"] * (cattn + 3 * ch * cp["intermediate_size"] + 2 * ch) + ch + \
        2 * groups * cp["vocab_size"] * ch  # fmt: skip
    c = raw["code2wav_config"]
    ch, ci, dd = c["hidden_size"], c["intermediate_size"], c["decoder_dim"]
    code2wav = c["num_hidden_layers"] * (4 * ch * ch + 3 * ch * ci + 4 * ch) + ch + \
        c["num_quantizers"] * c["codebook_size"] * ch  # fmt: skip
    code2wav += sum(ch * ch * r + ch + 8 * ch + 2 * ch + lin(ch, 4 * ch) + lin(4 * ch, ch) + ch
                    for r in c["upsampling_ratios"])  # fmt: skip
    dec, width = ch * dd * 7 + dd, dd
    for r in c["upsample_rates"]:
        half = width // 2
        dec += 2 * width + width * half * 2 * r + half + 3 * (half * half * 8 + 6 * half)
        width = half
    code2wav += dec + 2 * width + width * 7 + 1
    assert count_params(thinker).total + talker + code2wav == 35_259_818_545


def test_a_thinker_without_a_text_model_is_refused_by_field():
    with pytest.raises(InputError) as e:
        model_from_hf_config({"model_type": "qwen3_omni_moe", "thinker_config": {"text_config": "none"}})
    assert e.value.field == "thinker_config.text_config"


def load(name: str):
    return model_from_hf_config(json.loads((CONFIGS / name / "config.json").read_text()))


def test_qwen3_vl_counts_are_the_published_ones():
    """Qwen3-VL-30B-A3B-Instruct: "paramCount": 31070754032 in a fine-tuning provider's model catalogue (stored code
    index, the entry "Qwen 3 VL 30B A3B Instruct"); Qwen3-VL-2B-Instruct: 2,127,532,032, what its model.safetensors
    header holds at revision 89644892 (a public review script counts it and asserts the number). The tower's share
    by hand for the 30B (the Omni thinker's tower has the same shape): see test_text_vision_and_audio_count_by_hand."""
    assert count_params(load("qwen3-vl-30b-a3b-instruct")).total == 31_070_754_032
    assert count_params(load_catalog().models["qwen3-vl-30b-a3b-instruct"]).total == 31_070_754_032  # the shipped spec
    assert count_params(load("qwen3-vl-2b-shape")).total == 2_127_532_032


def test_a_trimmed_qwen3_vl_vision_config_takes_the_class_defaults():
    """The stored Qwen3-VL-235B-A22B config is trimmed to 9 vision keys (no positions, no deepstack) and says patch 14.
    With Qwen3VLVisionConfig's 2,304 positions and deepstack at [8, 16, 24] filled in, the only gap to the catalogue's
    235,670,022,896 is that patch size: 3 · 2 · (16² − 14²) · 1,152 = 414,720 weights of the patch embedding."""
    m = load("qwen3-vl-235b-a22b-thinking")
    assert m.vision_config.num_position_embeddings == 2304 and m.vision_config.deepstack_visual_indexes == (8, 16, 24)
    assert count_params(m).total + 3 * 2 * (16**2 - 14**2) * 1152 == 235_670_022_896


def test_the_towers_count_in_each_gpus_weights_split_over_tp(thinker):
    """What vLLM loads at TP 1 is the thinker in bf16: 31,719,205,488 · 2 B = 59.08 GiB. At TP 2 everything halves,
    the towers too, but the layers' two RMSNorms and the final one, whole on each rank: 48 · 2 · 2,048 + 2,048 =
    198,656 weights, so half of 63,438,410,976 B plus 198,656 · 2 B / 2."""
    from calc.weights import weight_format, weights_bytes_per_stage

    p = count_params(thinker)
    one = weights_bytes_per_stage(thinker, p, weight_format(thinker, "auto"), tp=1, pp=1)[0]
    assert one == 31_719_205_488 * 2
    assert round(one / 2**30, 2) == 59.08
    two = weights_bytes_per_stage(thinker, p, weight_format(thinker, "auto"), tp=2, pp=1)[0]
    assert two == 63_438_410_976 / 2 + (48 * 2 * 2048 + 2048) * 2 / 2
