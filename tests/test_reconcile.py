"""Reconciling real vLLM startup logs (tests/data/vllm_logs, sources in each file's header and INDEX.md).

Reference numbers are copied from the log lines themselves (cited by file) or computed in the test from the
architecture, never taken from the program's output. Rounding: a logged "X.XX GiB" means X ± 0.005 GiB.
"""

import json
import math
import re
from pathlib import Path

import pytest

from boundary.cli import main
from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.errors import InputError
from calc.units import GiB

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "vllm_logs"
QWEN3_14B = LOGS / "qwen3-14b" / "config.json"


def log(name: str):
    return parse_log((LOGS / name).read_text())


def run_json(capsys, *args) -> dict:
    assert main(["reconcile", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _catalog():
    from calc.loader import load_catalog

    return load_catalog()


def blocks_at(gib: float, bytes_per_block: float) -> int:
    return math.floor(gib * GiB / bytes_per_block)


# --- reconciliation of each real log -------------------------------------------------------------------------------


def test_lmcache_1739_qwen3_14b(capsys):
    d = run_json(capsys, LOGS / "lmcache-1739-qwen3-14b.log", "--model", QWEN3_14B)
    # Qwen3-14B: 2 (K,V) × 8 KV heads × 128 × 2 B × 40 layers = 163,840 B/token; 16-token blocks
    per_block = 16 * 2 * 8 * 128 * 2 * 40
    lo, hi = blocks_at(6.505, per_block), blocks_at(6.515, per_block)  # "Available KV cache memory: 6.51 GiB"
    assert lo <= 42_656 // 16 <= hi  # "GPU KV cache size: 42,656 tokens"
    assert lo <= d["predicted"]["num_gpu_blocks"] <= hi
    assert d["logged"]["kv_cache_tokens"] == 42_656 and d["logged"]["max_concurrency"] == 1.30
    assert d["matches"]["num_gpu_blocks"] and d["matches"]["kv_cache_tokens"] and d["matches"]["max_concurrency"]
    assert round(d["predicted"]["num_gpu_blocks"] / (32_768 // 16), 2) == 1.30  # concurrency = blocks / ⌈L / 16⌉
    assert d["gpu_assumed"] is True  # the excerpt names no GPU: said, not silent
    assert d["calibration"] == {"kv_cache_memory_bytes": 42_656 // 16 * per_block}  # the logged blocks, exactly


@pytest.mark.parametrize(
    "name, logged_blocks, max_len, logged_conc, gib",
    [("vllm-10517-llama-3.1-8b-rtx3090-v0-20k.log", 1952, 20_000, 1.56, 3.81),
     ("vllm-10517-llama-3.1-8b-rtx3090-v0-29k.log", 1478, 29_000, 0.82, 2.89)],
)  # fmt: skip
def test_v0_llama_rtx3090(capsys, name, logged_blocks, max_len, logged_conc, gib):
    d = run_json(capsys, LOGS / name)
    per_block = 16 * 2 * 8 * 128 * 2 * 32  # Llama-3.1-8B: 128 KiB/token → 2 MiB per 16-token block
    assert blocks_at(gib - 0.005, per_block) <= logged_blocks <= blocks_at(gib + 0.005, per_block)
    assert d["logged"]["num_gpu_blocks"] == logged_blocks
    assert d["matches"]["num_gpu_blocks"] and d["matches"]["max_concurrency"] and d["matches"]["num_cpu_blocks"]
    assert round(logged_blocks * 16 / max_len, 2) == logged_conc  # V0: blocks · block_size / max_model_len
    assert d["gpu"] == "rtx-3090"
    cal = d["calibration"]
    assert cal["weights_memory_bytes"] == pytest.approx(14.9888 * GiB)  # "Loading model weights took 14.9888 GB"
    # "non_torch_memory=0.35GiB", within its rounding: it takes the rest of the two-decimal figures' rounding, so the
    # calibrated pool is the logged block count (tests/test_reconcile_inference.py)
    assert abs(cal["non_torch_memory_bytes"] / GiB - 0.35) <= 0.005
    # 23.58 GiB · 0.90 − peak torch − non-torch = the logged kv_cache_size, within its rounding
    assert cal["memory_gib"] == 23.58 and cal["gpu_memory_utilization"] == 0.90
    assert abs(d["calibrated"]["kv_cache_memory_bytes"] / GiB - gib) < 0.01


def test_v0_29k_start_failure_tokens():
    rec_rows = {r.key for r in reconcile(log("vllm-10517-llama-3.1-8b-rtx3090-v0-29k.log"), _catalog()).rows}
    assert "kv_cache_tokens" not in rec_rows  # V0 prints no "GPU KV cache size"; 23,648 = 1478 · 16 is in the error
    assert log("vllm-10517-llama-3.1-8b-rtx3090-v0-29k.log").first("seq_len_error_tokens").value == 1478 * 16


def test_17469_qwen3_30b_a3b_tp4_v085(capsys):
    d = run_json(capsys, LOGS / "vllm-17469-qwen3-30b-a3b-4xa10.log")
    assert d["scenario"]["tensor_parallel_size"] == 4  # from 4 worker ranks, said in the notes
    assert any("4 worker ranks" in n for n in d["notes"])
    assert d["logged"]["kv_cache_tokens"] == 198_784 and d["logged"]["max_concurrency"] == 24.27  # both lines
    assert d["predicted"]["num_gpu_blocks"] == 198_784 // 16 == 12_424 and d["matches"]["max_concurrency"]
    assert round(d["predicted"]["num_gpu_blocks"] / (8192 // 16), 2) == 24.27
    # the pool these blocks imply, per rank: TP4 keeps 1 of 4 KV heads → 2 × 1 × 128 × 2 B × 48 layers = 24,576 B/token
    assert d["calibration"]["kv_cache_memory_bytes"] == 12_424 * 16 * 24_576
    assert d["calibration"]["weights_memory_bytes"] == pytest.approx(14.2474 * GiB)


def test_25350_fp8_kv_hypothesis(capsys):
    """The excerpt does not name its model; 48 layers × 4 KV heads × 128 at 1 byte (Qwen3-30B-A3B, fp8) is the
    hypothesis of INDEX.md. With it every logged number, including the failed start's, reproduces."""
    path = LOGS / "vllm-25350-fp8-kv.log"
    with pytest.raises(InputError) as e:
        reconcile(parse_log(path.read_text()), _catalog())
    assert e.value.field == "model"
    d = run_json(capsys, path, "--model", "qwen3-30b-a3b", "--kv-cache-dtype", "fp8")
    per_block = 16 * 2 * 4 * 128 * 1 * 48  # 49,152 B/token
    assert blocks_at(10.545, per_block) <= 230_528 // 16 <= blocks_at(10.555, per_block)
    assert all(d["matches"][k] for k in ("num_gpu_blocks", "kv_cache_tokens", "max_concurrency"))
    # "(10.12 GiB KV cache is needed" for 221,000 tokens: ceil(221000 / 16) · 16 · 49,152 B
    assert math.ceil(221_000 / 16) * 16 * 49_152 / GiB == pytest.approx(10.12, abs=0.005)
    assert d["matches"]["kv_needed_bytes"] and d["matches"]["estimated_max_model_len"]  # "… is 122080"
    # without the flag: the log states no KV dtype and only fp8 explains its blocks, so it is inferred, said, and
    # carried in the calibration; the fixes then count 10.12 GiB per request, not the bf16 20.23
    inferred = run_json(capsys, path, "--model", "qwen3-30b-a3b")
    assert inferred["scenario"]["kv_cache_dtype"] == "fp8" and inferred["calibration"]["kv_cache_dtype"] == "fp8"
    assert inferred["matches"] == d["matches"] and inferred["notes"][0].startswith("kv_cache_dtype=fp8 inferred")
    assert not any("kv_cache_dtype=fp8" in f or "20.23 GiB" in f for f in inferred["fixes"])
    # a dtype given (or stated by the log) is kept, and the explanation names the other one
    d16 = run_json(capsys, path, "--model", "qwen3-30b-a3b", "--kv-cache-dtype", "auto")
    assert not d16["matches"]["num_gpu_blocks"]
    assert "fp8" in next(r["explanation"] for r in d16["rows"] if r["key"] == "num_gpu_blocks")


def test_pr20665_deepseek_v2_lite_tp2_pp2(capsys):
    d = run_json(capsys, LOGS / "vllm-pr20665-deepseek-v2-lite-pp.log")
    assert d["gpu"] == "l4"  # "device_name=NVIDIA_L4" in the MoE config path
    assert (d["scenario"]["tensor_parallel_size"], d["scenario"]["pipeline_parallel_size"]) == (2, 2)
    # MLA: (512 + 64) × 2 B per layer, not split by TP; PP stage 0 holds 14 of 27 layers, stage 1 holds 13
    stage0, stage1 = 16 * 1152 * 14, 16 * 1152 * 13
    # the engine keeps the fewest blocks: stage 0 at 12.13 GiB (ranks 0, 1) vs stage 1 at 11.33 GiB (ranks 2, 3)
    assert blocks_at(12.13, stage0) < blocks_at(11.33, stage1)
    assert blocks_at(12.125, stage0) <= 807_792 // 16 <= blocks_at(12.135, stage0)
    assert d["predicted"]["num_gpu_blocks"] == blocks_at(12.13, stage0)
    assert all(d["matches"][k] for k in ("num_gpu_blocks", "kv_cache_tokens", "max_concurrency"))
    assert round(d["predicted"]["num_gpu_blocks"] / (1024 // 16), 2) == pytest.approx(788.86, abs=0.5)


def test_pp_stages_without_rank_prefixes_keep_their_own_memory(capsys, tmp_path):
    # The same lines with the "(VllmWorker rank=N pid=…)" prefixes stripped: the log no longer says which worker
    # is which stage. Charging 11.33 GiB to the 14-layer stage would give 11.33 GiB / (16 · 1,152 · 14) = 47,144
    # blocks; vLLM sizes each worker from its own memory and layers and keeps the minimum (stage 0's 50,473).

    text = (LOGS / "vllm-pr20665-deepseek-v2-lite-pp.log").read_text()
    bare = tmp_path / "pp.log"
    bare.write_text(re.sub(r"^\(VllmWorker rank=\d+ pid=\d+\) ", "", text, flags=re.M))
    d = run_json(capsys, bare, "--gpu", "l4", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2")
    stage0 = 16 * 1152 * 14
    assert blocks_at(11.33, stage0) == 47_144
    assert d["predicted"]["num_gpu_blocks"] == blocks_at(12.13, stage0) == 50_473
    assert d["matches"]["kv_cache_tokens"] and d["matches"]["max_concurrency"]


def test_pr4650_deepseek_v2_lite_pre_mla_v0(capsys):
    d = run_json(capsys, LOGS / "vllm-pr4650-deepseek-v2-lite-v0.log", "--gpu", "a100-80gb-sxm")
    # vLLM 0.5.0.post1 (config line) predates MLA: 16 KV heads × head_size 256 × 2 (K,V) × 2 B × 27 layers
    per_block = 16 * 2 * 16 * 256 * 2 * 27
    assert 4 * GiB // per_block == 606  # "# CPU blocks: 606" = 4 GiB swap space / block bytes
    assert d["matches"]["num_cpu_blocks"]
    assert d["logged"]["num_gpu_blocks"] == 5549
    assert d["calibration"]["kv_cache_memory_bytes"] == 5549 * per_block


def test_26646_hybrid_model_needs_a_model():
    with pytest.raises(InputError) as e:
        reconcile(log("vllm-26646-qwen3-next-fp8-kv.log"), _catalog())
    assert e.value.field == "model" and "--model" in e.value.message


def test_tp_ranks_with_different_memory_take_the_minimum(catalog):
    """A synthetic V1 0.10 log of Llama-3.1-8B at TP=4 whose ranks report slightly different pools."""
    # TP4 keeps 8 / 4 = 2 KV heads: 2 × 2 × 128 × 2 B × 32 layers = 32,768 B/token → 0.5 MiB per 16-token block
    per_block = 16 * 32_768
    blocks = blocks_at(11.51, per_block)  # the smallest rank
    text = "\n".join(
        ["INFO 08-01 10:00:00 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: "
         "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, dtype=torch.bfloat16, max_seq_len=8192, "
         "tensor_parallel_size=4, pipeline_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto"]
        + [f"(VllmWorker rank={r} pid={100 + r}) INFO 08-01 10:00:10 [gpu_worker.py:276] Available KV cache memory: "
           f"{gib} GiB" for r, gib in enumerate((11.55, 11.51, 11.53, 11.52))]
        + [f"INFO 08-01 10:00:11 [kv_cache_utils.py:849] GPU KV cache size: {blocks * 16:,} tokens",
           f"INFO 08-01 10:00:11 [kv_cache_utils.py:853] Maximum concurrency for 8,192 tokens per request: "
           f"{blocks / 512:.2f}x"]
    )  # fmt: skip
    rec = reconcile(parse_log(text), catalog, {"gpu": "l40s"})
    assert rec.scenario.model == "llama-3.1-8b" and rec.scenario.tensor_parallel_size == 4
    assert rec.predicted["num_gpu_blocks"] == blocks
    assert rec.logged["kv_cache_memory_bytes"] == 11.51 * GiB
    assert all(rec.matches[k] for k in ("num_gpu_blocks", "kv_cache_tokens", "max_concurrency"))
    # adopted as the whole blocks the log counts, not the two-decimal GiB figure (issue 14: 3 blocks off)
    assert rec.calibration == {"kv_cache_memory_bytes": blocks * per_block}
