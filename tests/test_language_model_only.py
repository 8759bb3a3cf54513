"""--language-model-only (vLLM 0.17+; before, --limit-mm-per-prompt with 0 for every modality): a multimodal
checkpoint served for text loads no vision or audio tower (interfaces.py _mark_tower_model skips a tower whose
modalities all have limit 0) and profiles no encoder batch (profile_run: an encoder budget of 0)."""

from __future__ import annotations

import pytest

from calc.evaluate import evaluate
from calc.overheads import activation_peak_bytes
from calc.scenario import Scenario


def plan(catalog, **kw):
    return evaluate(Scenario(**{"model": "qwen3-vl-30b-a3b-instruct", "gpu": "h100-sxm", **kw}), catalog)


def test_the_tower_is_neither_loaded_nor_profiled(catalog):
    """Qwen3-VL-30B-A3B: the weights fall by exactly the tower's parameters at 2 B (its published total 31,070,754,032
    less the text model's is the tower: tests/test_qwen3_towers.py), and the activation peak is the language model's
    dummy forward alone (no 65,536-position image)."""
    both, text = plan(catalog).memory, plan(catalog, language_model_only=True).memory
    tower = both.params.towers
    assert tower > 0 and text.params.towers == 0
    assert both.weights_bytes_per_gpu - text.weights_bytes_per_gpu == pytest.approx(tower * 2.0, rel=1e-12)
    assert both.encoder_profile is not None and text.encoder_profile is None
    m = catalog.models["qwen3-vl-30b-a3b-instruct"]
    lm_only = activation_peak_bytes(m.model_validate(m.model_dump() | {"vision_config": None}),
                                    max_num_batched_tokens=2048, max_num_seqs=256, tp=1)  # fmt: skip
    assert text.activation_bytes == pytest.approx(lm_only) and text.activation_bytes < both.activation_bytes
    assert text.num_gpu_blocks > both.num_gpu_blocks


def test_the_serve_command_by_release_and_the_note(catalog):
    r = plan(catalog, language_model_only=True)
    assert r.to_dict()["serve_command"].endswith("--language-model-only")
    assert any(n.startswith("language_model_only: the vision and audio towers are neither loaded") for n in r.notes)
    old = plan(catalog, language_model_only=True, engine_version="0.15.0").to_dict()["serve_command"]
    assert """--limit-mm-per-prompt '{"image": 0, "video": 0, "audio": 0}'""" in old
    text = plan(catalog, model="llama-3.1-8b", language_model_only=True)
    assert any(n == "language_model_only: no effect here: the model has no vision or audio tower" for n in text.notes)
    # a text model: no flag at all (vLLM before 0.17 refuses --limit-mm-per-prompt for one: "`limit_mm_per_prompt` is
    # only supported for multimodal models", vllm config.py _init_multimodal_config; vllm-project/vllm#21120)
    for version in ("0.15.0", "0.17.0"):
        cmd = plan(catalog, model="llama-3.1-8b", language_model_only=True, engine_version=version).to_dict()["serve_command"]
        assert "--limit-mm-per-prompt" not in cmd and "--language-model-only" not in cmd


def test_the_search_rows_commands_follow_the_checkpoint(catalog):
    from calc.search import search
    from calc.search_rows import serve_commands

    for model, has in (("qwen3-vl-30b-a3b-instruct", True), ("llama-3.1-8b", False)):
        r = search(Scenario(model=model, gpu="h100-sxm", language_model_only=True, search_gpus="h100-sxm"), catalog)
        i = r.cheapest
        assert i is not None
        cmd = " ".join(c for _, c in serve_commands(r, i))
        assert ("--language-model-only" in cmd) is has
