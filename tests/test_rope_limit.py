"""How long a request vLLM admits: max_position_embeddings, stretched by a rope_scaling factor except for the su /
longrope / llama3 types, from original_max_position_embeddings for yarn (vLLM's _get_and_verify_max_len; the
copies at tests/data/hf_configs/*/config.json)."""

import json
from pathlib import Path

import pytest

from calc.errors import InputError
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.scenario import Scenario

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def _limit(name: str) -> int:
    return model_from_hf_config(json.loads((CONFIGS / name / "config.json").read_text())).max_len_limit


def test_each_rope_type_as_vllm_reads_it():
    assert _limit("internlm2_5-7b") == 32_768 * 2  # "type": "dynamic", "factor": 2.0
    assert _limit("gemma-3-4b-it") == 131_072  # linear ×8, but vLLM skips Gemma 3's: its 131,072 is already scaled
    assert _limit("deepseek-v2") == 4_096 * 40  # yarn: original_max_position_embeddings × factor = 163,840
    assert _limit("ministral3-3b-reasoning-2512") == 16_384 * 16  # yarn, from its original 16,384
    assert _limit("exaone-4.0-32b") == 131_072  # llama3: max_position_embeddings already holds it
    assert _limit("phi-4-mini-instruct") == 131_072  # longrope
    assert _limit("qwen2-vl-7b") == 32_768  # mrope, read as default: no factor


def test_the_shipped_internlm_starts_at_twice_its_positions_and_not_beyond(catalog):
    ok = evaluate(Scenario(model="internlm2.5-7b", gpu="h100-sxm", max_model_len=65_536, input_len=60_000,
                           output_len=500, concurrency=1), catalog)  # fmt: skip
    assert ok.fit.fits and not ok.fit.refused
    no = evaluate(Scenario(model="internlm2.5-7b", gpu="h100-sxm", max_model_len=65_537, concurrency=1), catalog)
    assert "exceeds the model's maximum, 65,536 (max_position_embeddings 32,768 × its dynamic rope_scaling factor 2)" \
        in no.fit.refused  # fmt: skip


def test_transformers_v5_rope_parameters_per_layer_type_and_a_bad_factor():
    base = json.loads((CONFIGS / "internlm2_5-7b" / "config.json").read_text())
    cfg = {k: v for k, v in base.items() if k != "rope_scaling"}
    cfg["rope_parameters"] = {"full_attention": {"rope_type": "yarn", "factor": 4.0,
                                                 "original_max_position_embeddings": 32_768}}  # fmt: skip
    assert model_from_hf_config(cfg).max_len_limit == 4 * 32_768
    cfg["rope_parameters"] = {"rope_type": "linear", "factor": -4}
    with pytest.raises(InputError, match="rope_scaling.factor"):
        model_from_hf_config(cfg)
