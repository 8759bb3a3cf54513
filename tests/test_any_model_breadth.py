"""Any model from the Hub, from a breadth audit of 30 unshipped configs (2026-12-05): non-gated MLPs named by their
activation, the layouts refused by name (LongCat-Flash, Phi-4-mini-flash, BitNet, encoder-decoders, omni models'
nested thinker), 2- and 3-bit GPTQ, and the notes for what is not counted. Configs are written inline with the fields
that size them (Apertus-8B: transformers' ApertusConfig defaults; the others from their Hub config.json); every
expected number is written out."""

import pytest

from calc.errors import InputError
from calc.hf_config import model_from_hf_config
from calc.params import count_params
from calc.weights import weight_format, weights_bytes

LLAMA8B = dict(model_type="llama", num_hidden_layers=32, hidden_size=4096, intermediate_size=14336,
               num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
               torch_dtype="bfloat16")  # fmt: skip


def refused(cfg: dict) -> InputError:
    with pytest.raises(InputError) as e:
        model_from_hf_config(cfg)
    return e.value


def test_an_activation_without_a_gate_means_two_projections():
    """Apertus-8B (hidden_act xielu) and Arcee AFM-4.5B (relu2) have up and down projections only; they were
    counted as SwiGLU (+35 %, +37 %). Apertus: embeddings and lm_head 2 · 131,072 · 4,096 = 1,073,741,824; attention
    32 · 4,096 · (4,096 + 2 · 1,024 + 4,096) = 1,073,741,824 + 268,435,456 = 1,342,177,280; MLP 32 · 2 · 4,096 ·
    21,504 = 5,637,144,576: 8,053,063,680 besides the norms (the card: 8.05 B)."""
    apertus = dict(model_type="apertus", hidden_act="xielu", num_hidden_layers=32, hidden_size=4096,
                   intermediate_size=21504, num_attention_heads=32, num_key_value_heads=8, vocab_size=131072,
                   max_position_embeddings=65536)  # fmt: skip
    p = count_params(model_from_hf_config(apertus))
    assert 2 * 131072 * 4096 + 32 * 4096 * (4096 + 2 * 1024 + 4096) + 32 * 2 * 4096 * 21504 == 8_053_063_680
    assert p.total - p.norms == 8_053_063_680
    gated = count_params(model_from_hf_config({**apertus, "hidden_act": "silu"}))
    assert gated.total - p.total == 32 * 4096 * 21504  # the gate a SwiGLU would add
    afm = dict(model_type="arcee", hidden_act="relu2", num_hidden_layers=36, hidden_size=2560, intermediate_size=18432,
               num_attention_heads=20, num_key_value_heads=4, head_dim=128, vocab_size=128004,
               max_position_embeddings=65536)  # fmt: skip
    q = count_params(model_from_hf_config(afm))
    assert q.dense_mlp == 36 * 2 * 2560 * 18432
    unknown = model_from_hf_config({**afm, "model_type": "arcee_next"})  # an unknown type says which MLP it read
    assert any("MLPs without a gate (its hidden_act)" in a for a in unknown.assumptions)


@pytest.mark.parametrize("model_type, words", [
    ("longcat_flash", "two MLA attentions and two MLPs in each layer"),
    ("phi4flash", "shares one full-attention layer's KV"),
    ("bitnet", "vLLM has no model class for it"),
])  # fmt: skip
def test_layouts_not_modelled_are_refused_by_name(model_type, words):
    """LongCat-Flash was planned at 3,251 B parameters (560 B) and half its KV; Phi-4-mini-flash refused on its
    standard mamba_dt_rank 'auto'; BitNet got a `vllm serve` command vLLM cannot run."""
    e = refused({**LLAMA8B, "model_type": model_type, "mamba_dt_rank": "auto"})
    assert e.field == "model_type" and words in str(e)


def test_encoder_decoders_are_refused_and_an_omni_thinker_is_planned():
    """T5 and Whisper asked for num_attention_heads; given it, T5 would have been planned as a decoder. Qwen3-Omni
    keeps its language model in thinker_config.text_config (the refusal named three top-level fields): it is now
    planned as the thinker vLLM serves (tests/test_qwen3_towers.py has the real config)."""
    assert refused({"model_type": "t5", "is_encoder_decoder": True, "d_model": 2048, "num_layers": 24,
                    "num_heads": 32, "vocab_size": 32128}).field == "is_encoder_decoder"  # fmt: skip
    assert refused({"model_type": "whisper", "d_model": 1280, "vocab_size": 51866}).field == "is_encoder_decoder"
    m = model_from_hf_config({"model_type": "qwen3_omni_moe", "thinker_config": {"text_config": {**LLAMA8B}}})
    assert (m.num_hidden_layers, m.hidden_size, m.num_key_value_heads) == (32, 4096, 8)


def test_gptq_at_two_and_three_bits_is_sized_at_its_bits():
    """A 3-bit GPTQ checkpoint was planned as int4. Bytes per weight: 3 / 8 + (16-bit scale + zero point) / 128 =
    0.40625; Llama-3.1-8B's linear layers (32 · (4,096 · 6,144 + 4,096 · 4,096 + 3 · 4,096 · 14,336) = 6,979,321,856)
    at that, the two 128,256 × 4,096 tables at 2 bytes."""
    linear = 32 * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336)
    assert linear == 6_979_321_856
    for bits in (2, 3):
        m = model_from_hf_config({**LLAMA8B, "quantization_config": {"quant_method": "gptq", "bits": bits,
                                                                      "group_size": 128}})  # fmt: skip
        f = weight_format(m, "auto")
        assert f.linear_bytes == bits / 8 + 4 / 128 and f.label == f"int{bits} (gptq)"
        p = count_params(m)
        tables = 2 * 128256 * 4096
        assert weights_bytes(p, f) == pytest.approx(linear * (bits / 8 + 4 / 128) + (tables + p.norms) * 2.0)


def test_a_quantization_it_does_not_size_and_towers_it_does_not_count_are_said():
    """aqlm, hqq, torchao and quark were planned at 16 bits with a word in the header only; Phi-4-multimodal's image
    and audio encoders and LoRA adapters (embd_layer, audio_processor, vision_lora, speech_lora) were dropped
    silently."""
    m = model_from_hf_config({**LLAMA8B, "quantization_config": {"quant_method": "aqlm"}})
    assert any("quant_method 'aqlm' is not a format this planner sizes" in a and "weights_memory_bytes" in a
               for a in m.assumptions)  # fmt: skip
    mm = model_from_hf_config({**LLAMA8B, "model_type": "phi4mm", "embd_layer": {"image_embd_layer": {}},
                               "audio_processor": {"config": {}}, "vision_lora": {"r": 256}})  # fmt: skip
    assert any(a.startswith("embd_layer, audio_processor, vision_lora (image or audio encoders") for a in mm.assumptions)
    assert not any("not a format" in a for a in model_from_hf_config(
        {**LLAMA8B, "quantization_config": {"quant_method": "awq", "bits": 4}}).assumptions)  # fmt: skip
