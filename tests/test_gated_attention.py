"""Qwen3-Next's and Qwen3.5/3.6's attention gates its output with values q_proj also produces: vLLM's
Qwen3NextAttention sizes q_proj at num_heads · head_dim · (1 + attn_output_gate), the gate on by default
(qwen3_next.py `getattr(config, "attn_output_gate", True)`), and Qwen3.5's configs state it true. The printed module
tree of Qwen3.6-27B reads "q_proj: Linear(in_features=5120, out_features=12288)" for 24 heads of 256
(tests/data/hf_configs/qwen3.6-27b/SOURCE.md's copy)."""

from __future__ import annotations

import json
from pathlib import Path

from calc.hf_config import model_from_hf_config
from calc.params import attention_params

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def test_a_qwen36_27b_attention_layer_by_hand():
    """q_proj 5,120 · 24 · 256 · 2 = 62,914,560 (12,288 outputs), k_proj and v_proj 5,120 · 4 · 256 each, o_proj
    6,144 · 5,120, q_norm and k_norm 256 each: 104,858,112."""
    m = model_from_hf_config(json.loads((CONFIGS / "qwen3.6-27b" / "config.json").read_text()))
    assert attention_params(m) == 5120 * 12_288 + 2 * 5120 * 1024 + 6144 * 5120 + 2 * 256 == 104_858_112


def test_the_gate_is_on_by_default_for_qwen3_next_and_off_when_a_config_says_so():
    """Property: Qwen3-Next's config names no gate, and gets it; a config with attn_output_gate false loses
    hidden · heads · head_dim a full-attention layer (Qwen3-Next-80B: 12 layers · 2,048 · 16 · 256 = 100,663,296)."""
    raw = json.loads((CONFIGS / "qwen3-next-80b-a3b-thinking" / "config.json").read_text())
    on = model_from_hf_config(raw)
    off = model_from_hf_config(raw | {"attn_output_gate": False})
    assert on.attn_output_gate is None and off.attn_output_gate is False
    assert on.params.total - off.params.total == 12 * 2048 * 16 * 256 == 100_663_296
