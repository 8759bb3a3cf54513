"""What audits of 2026-12-06 found in configs new to the planner: a config that names no checkpoint, Granite 4.0's
dense checkpoints (0 experts), LFM2-MoE's and AFMoE's dense first layers, a ModelOpt NVFP4 ignore list, Kimi-K2.5's
MoonViT."""

from __future__ import annotations

import json

import pytest
from test_any_model import CONFIGS, load

from calc.hf_config import model_from_hf_config
from calc.kv_cache import kv_bytes_per_token
from calc.params import count_params


def test_a_config_without_a_checkpoint_name_is_called_by_its_type_and_size():
    """Qwen3-4B's config.json names no checkpoint (no _name_or_path), and every Qwen3 is model_type 'qwen3': a link
    titled 'qwen3' does not say which was planned. Its size, by hand (hidden 2,560, 36 layers, 32 / 8 heads of 128,
    MLP 9,728, tied 151,936 × 2,560 embeddings): per layer q 2,560 · 4,096, k and v 2,560 · 1,024, o 4,096 · 2,560,
    q/k norms 2 · 128, MLP 3 · 2,560 · 9,728, two norms 2 · 2,560 → 100,930,816; × 36 + 388,956,160 + 2,560 =
    4,022,468,096. A name given (the upload's file name, a Hub id) is kept as it is."""
    cfg = json.loads((CONFIGS / "qwen3-4b" / "config.json").read_text())
    assert "_name_or_path" not in cfg
    layer = 2560 * 4096 + 2 * 2560 * 1024 + 4096 * 2560 + 2 * 128 + 3 * 2560 * 9728 + 2 * 2560
    assert layer * 36 + 151_936 * 2560 + 2560 == 4_022_468_096
    assert model_from_hf_config(cfg).name == "qwen3 (4.02 B parameters)"
    assert model_from_hf_config(cfg, name="Qwen3-4B").name == "Qwen3-4B"
    assert model_from_hf_config({**cfg, "_name_or_path": "Qwen/Qwen3-4B"}).name == "Qwen/Qwen3-4B"


def test_a_dense_granite_4_config_with_zero_experts_is_planned_dense():
    """Granite 4.0's dense checkpoints (granite-4.0-micro) say "num_local_experts": 0, "num_experts_per_tok": 0, which
    the planner refused ("num_local_experts: more than 0"). vLLM builds GraniteMoeHybrid's routed block only for
    num_local_experts > 0: each layer's MLP is the shared one, of shared_intermediate_size. By hand (hidden 2,560,
    40 attention layers of 40 heads of 64, 8 KV heads, MLP 8,192 gated, tied 100,352-token embeddings): per layer
    2 · 2,560² + 2 · 2,560 · 512 + 3 · 2,560 · 8,192 + 2 · 2,560 = 78,648,320; × 40 + 100,352 · 2,560 + 2,560 =
    3,402,836,480 (IBM's card: 3 B dense, 3.4 B on the Hub)."""
    cfg = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "vocab_size": 100_352,
           "hidden_act": "silu", "max_position_embeddings": 131_072, "hidden_size": 2560, "num_hidden_layers": 40,
           "num_attention_heads": 40, "num_key_value_heads": 8, "intermediate_size": 8192,
           "shared_intermediate_size": 8192, "num_local_experts": 0, "num_experts_per_tok": 0,
           "layer_types": ["attention"] * 40, "position_embedding_type": "rope", "tie_word_embeddings": True,
           "torch_dtype": "bfloat16"}
    layer = 2 * 2560**2 + 2 * 2560 * 512 + 3 * 2560 * 8192 + 2 * 2560
    assert layer == 78_648_320 and layer * 40 + 100_352 * 2560 + 2560 == 3_402_836_480
    m = model_from_hf_config(cfg, name="granite-4.0-micro")
    assert count_params(m).total == 3_402_836_480 and not m.routed_experts
    assert kv_bytes_per_token(m, kv_bytes_per_element=2) == 2 * 40 * 8 * 64 * 2  # 81,920 B: every layer attends
    assert model_from_hf_config({**cfg, "num_local_experts": 64, "num_experts_per_tok": 6}).routed_experts == 64


@pytest.mark.parametrize("name, total, active", [
    ("lfm2-8b-a1b-partial", 8.3e9, 1.5e9),  # LiquidAI's card: 8.3 B total, 1.5 B active
    ("trinity-mini", 26e9, 3e9),  # Arcee's Trinity report: 26 B, 3 B active
    ("trinity-nano-preview", 6e9, 1e9)])  # fmt: skip  # 6 B, 1 B active
def test_dense_first_layers_and_a_period_of_full_attention_are_read(name, total, active):
    """LFM2-MoE and Arcee's AFMoE put a dense MLP in their first num_dense_layers layers (vLLM lfm2_moe.py, transformers'
    afmoe: `layer_idx < num_dense_layers`), which was read as MoE everywhere (LFM2-8B-A1B 9.09 B, Trinity-Mini 27.4 B,
    an audit of 2026-12-06); AFMoE's attention has a sigmoid output gate and q/k norms; an AFMoE config without
    layer_types slides every layer but each global_attn_every_n_layers-th (AfmoeConfig fills them so), where every one
    slid. Totals within 3 % of the published ones."""
    m = load(name)
    p = count_params(m)
    assert abs(p.total / total - 1) < 0.03, p.total
    assert p.active < 1.6 * active
    if m.model_type == "afmoe":
        g = json.loads((CONFIGS / name / "config.json").read_text()).get("global_attn_every_n_layers", 4)
        slid = [i for i, t in enumerate(m.layer_types) if "sliding" in str(t)]
        assert len(slid) == m.num_hidden_layers - m.num_hidden_layers // g and all((i + 1) % g for i in slid)
    assert not any("not one this planner knows" in a for a in m.assumptions)


def test_a_modelopt_nvfp4_ignore_list_keeps_attention_and_shared_experts_16_bit():
    """nvidia/Kimi-K2.6-NVFP4 (ModelOpt, quant_algo NVFP4) ignores self_attn, shared_experts and the dense layer 0 in
    an `ignore` list shaped as compressed-tensors': vLLM loads those unquantized. Planned all NVFP4 they were ~9.4 B
    parameters at 0.5625 B instead of 2 (an audit of 2026-12-06): now only the routed experts are 4-bit."""
    from calc.weights import weight_format

    m = load("kimi-k2.6-nvfp4")
    assert m.quantization_config.experts_only
    f = weight_format(m, "auto")
    assert f.linear_bytes == 2.0 and f.expert_bytes < 0.6 and "experts" in f.label


def test_kimi_k2_5s_moonvit_is_counted_from_its_vt_fields():
    """Kimi-K2.5's vision_config names its MoonViT vt_hidden_size 1,152, vt_intermediate_size 4,304, 27 layers: the
    planner did not read them and left the tower out (an audit of 2026-12-06). MoonViT is about 400 M parameters
    (Kimi-VL's report: "MoonViT (400M)"); counted as a ViT of those sizes, within 10 % of it."""
    m = load("kimi-k2.5")
    from calc.params import vision_params

    assert abs(vision_params(m) / 400e6 - 1) < 0.10
    assert not any("vision tower" in a and "not counted" in a for a in m.assumptions)
