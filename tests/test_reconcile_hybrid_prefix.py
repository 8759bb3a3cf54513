"""A hybrid model's prefix caching: vLLM's --enable-prefix-caching makes a Gated DeltaNet model's state take 2 blocks
a request (mamba_cache_mode align, vllm#30877: the running state and the one at the last block boundary), not 1.
Two club-3090 logs of Qwen3.6-35B-A3B (NVFP4) on an RTX 5090, vLLM 0.24, prefix caching on, 131,072 tokens: 48
layers, 12 full-attention and 36 GDN (3 groups of 12), 299 and 300 blocks of 2,096 tokens: ⌈131,072 / 2,096⌉ = 63
attention blocks + 3 × 2 state blocks = 69 a request."""

from __future__ import annotations

from pathlib import Path

import pytest

from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.loader import load_model_file
from calc.scenario import Scenario

DATA = Path(__file__).parent / "data"
CONFIG = DATA / "hf_configs" / "qwen3.6-35b-a3b-nvfp4" / "config.json"


def flags() -> dict:
    return {"model": "custom", "custom_model": encode_custom_model(load_model_file(CONFIG))}


@pytest.mark.parametrize("name, blocks, tokens, conc", [
    ("club3090-612-qwen3.6-35b-a3b-nvfp4-rtx5090.log", 299, 567_978, "4.33"),
    ("club3090-652-qwen3.6-35b-a3b-nvfp4-rtx5090.log", 300, 569_878, "4.35")])  # fmt: skip
def test_prefix_caching_logs_reconcile_exactly(catalog, name, blocks, tokens, conc):
    """The log's non-default args say 'enable_prefix_caching': True; read, the pool matches to the token:
    int(blocks / 69 × 131,072) (vLLM 0.20+ prints int(concurrency · L))."""
    assert int(blocks / (63 + 3 * 2) * 131_072) == tokens and f"{blocks / 69:.2f}" == conc
    rec = reconcile(parse_log((DATA / "vllm_logs" / name).read_text()), catalog, flags())
    assert rec.scenario.enable_prefix_caching
    assert rec.predicted["num_gpu_blocks"] == blocks and rec.predicted["kv_cache_tokens"] == tokens
    assert rec.matches["kv_cache_tokens"] and rec.matches["max_concurrency"]


def test_without_prefix_caching_a_state_takes_one_block(catalog):
    """Prefix caching off (a hybrid's default): 299 / (63 + 3) = 4.53x — what the planner said for the log before."""
    log = parse_log((DATA / "vllm_logs" / "club3090-612-qwen3.6-35b-a3b-nvfp4-rtx5090.log").read_text())
    rec = reconcile(log, catalog, flags() | {"enable_prefix_caching": False})
    assert rec.predicted["max_concurrency"] == pytest.approx(299 / 66, abs=0.005) and not rec.matches["max_concurrency"]


def test_the_plan_serves_and_says_align_mode_and_not_before_015(catalog):
    """The plan: 2 blocks a state group under prefix caching from vLLM 0.15, its serve command passes the flag; 0.14
    has no align mode (one block); SGLang keeps its own Mamba pool (unchanged)."""
    m = load_model_file(CONFIG)
    base = Scenario(model="custom", custom_model=encode_custom_model(m), gpu="rtx-5090", max_model_len=131_072,
                    kv_cache_dtype="fp8", max_num_batched_tokens=8192, kv_cache_memory_bytes=int(5.98 * 2**30))  # fmt: skip
    on = evaluate(base.model_copy(update={"enable_prefix_caching": True}), catalog)
    off = evaluate(base, catalog)
    old = evaluate(base.model_copy(update={"enable_prefix_caching": True, "engine_version": "0.14.0"}), catalog)
    assert on.memory.num_gpu_blocks == off.memory.num_gpu_blocks == 299
    assert on.memory.max_concurrency == pytest.approx(299 / 69, abs=1e-9)
    assert off.memory.max_concurrency == old.memory.max_concurrency == pytest.approx(299 / 66, abs=1e-9)
    assert any("2 blocks per state group" in n for n in on.notes)
    assert any("before 0.15 has no align mode" in n for n in old.notes)
    assert "--enable-prefix-caching" in on.to_dict()["serve_command"]
