"""Reconciling real vLLM startup logs (tests/data/vllm_logs, sources in each file's header and INDEX.md).

Reference numbers are copied from the log lines themselves (cited by file) or computed in the test from the
architecture, never taken from the program's output. Rounding: a logged "X.XX GiB" means X ± 0.005 GiB.
"""

import json
import math
import re
import subprocess
import sys
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
    assert cal["non_torch_memory_bytes"] == pytest.approx(0.35 * GiB)  # "non_torch_memory=0.35GiB"
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
    import re

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


# --- the command line ----------------------------------------------------------------------------------------------


def test_json_keys_scripts_depend_on(capsys):
    d = run_json(capsys, LOGS / "lmcache-1739-qwen3-14b.log", "--model", QWEN3_14B, "--gpu", "h100-sxm")
    for key in ("logged", "predicted", "rows", "scenario", "calibration", "matches", "notes"):
        assert key in d
    for key in ("kv_cache_memory_bytes", "num_gpu_blocks", "kv_cache_tokens", "max_concurrency"):
        assert key in d["logged"] and key in d["predicted"]
    assert d["gpu_assumed"] is False and d["scenario"]["max_model_len"] == 32_768


def test_text_output_names_the_assumed_gpu(capsys):
    assert main(["reconcile", str(LOGS / "lmcache-1739-qwen3-14b.log"), "--model", str(QWEN3_14B)]) == 0
    out = capsys.readouterr().out
    assert "ASSUMED" in out and "GPU KV cache size" in out and "residual" in out


def test_text_output_is_the_pages_table(capsys, catalog):
    from boundary.cli import build_parser
    from boundary.cli_reconcile import flags_from_args, read_log
    from boundary.view_compare import reconcile_table

    argv = ["reconcile", str(LOGS / "lmcache-1739-qwen3-14b.log"), "--model", str(QWEN3_14B)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    args = build_parser().parse_args(argv)
    page = reconcile_table(reconcile(parse_log(read_log(args.logfile)), catalog, flags_from_args(args)))
    assert page.text(indent="") in out
    # "GPU KV cache size: 42,656 tokens" (the log): within the rounding of 6.51 GiB; the assumed GPU's memory is not
    blocks = next(ln for ln in out.splitlines() if ln.startswith("GPU KV cache size"))
    assert "42,656 tokens" in blocks and " yes " in blocks
    assert " no " in next(ln for ln in out.splitlines() if ln.startswith("Available KV cache memory"))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "calc", "reconcile", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize(
    "args, field",
    [(["NOT_A_LOG"], "log"), (["/nonexistent/vllm.log"], "logfile"),
     ([LOGS / "vllm-26646-qwen3-next-fp8-kv.log"], "--model"),
     ([LOGS / "lmcache-1739-qwen3-14b.log", "--model", "no-such-model"], "--model"),
     ([LOGS / "lmcache-1739-qwen3-14b.log", "--max-model-len", "-1"], "--max-model-len")],
)  # fmt: skip
def test_cli_bad_input_exits_2_with_one_line(tmp_path, args, field):
    if args == ["NOT_A_LOG"]:
        args = [tmp_path / "notes.txt"]
        args[0].write_text("just some text\nwith no vLLM lines at all\n")
    p = cli(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"error: {field}")
    assert "Traceback" not in p.stderr


def _catalog():
    from calc.loader import load_catalog

    return load_catalog()


def test_gemma3_1b_sliding_window_hybrid_v013(capsys):
    d = run_json(capsys, LOGS / "eole-gemma-3-1b-v0.13.log", "--model", LOGS / "gemma-3-1b" / "config.json")
    # 1 KV head × 256 × 2 (K,V) × 2 B = 1,024 B per layer and token; 16-token pages; 22 sliding + 4 full layers
    # group by the smaller kind: 4 layers per group → 1 full + ⌈22/4⌉ = 6 sliding groups ("Add 2 padding layers")
    per_block = 16 * 1024 * 4
    lo, hi = blocks_at(25.385, per_block), blocks_at(25.395, per_block)  # "Available KV cache memory: 25.39 GiB"
    assert lo <= d["predicted"]["num_gpu_blocks"] <= hi
    # 0.13 prints num_blocks // groups × block_size: "GPU KV cache size: 950,864 tokens"
    assert lo // 7 * 16 <= 950_864 <= hi // 7 * 16
    # per request at 2,048 tokens, budget 8,192, window 512: 128 full + 6 × (⌈min(511 + 8192, 2048)/16⌉ + 1) = 902
    blocks_per_request = 2048 // 16 + 6 * (2048 // 16 + 1)
    assert round(lo / blocks_per_request, 2) <= 461.21 <= round(hi / blocks_per_request, 2)
    assert d["logged"]["max_concurrency"] == 461.21 and d["matches"]["max_concurrency"]
    assert d["logged"]["kv_cache_tokens"] == 950_864 and d["matches"]["kv_cache_tokens"]


def test_a_wrapped_v1_failed_start_is_read_and_its_max_seq_len_adopted(capsys):
    """vLLM ≥ 0.2x words the failed start "… max seq len (196608), 23.25 GiB KV cache is needed, which is larger
    than the available KV cache memory (22.5 GiB)" (no parenthesis before the GiB), here wrapped over two quoted
    lines. Read as one: max_model_len 196,608, and at TP 2 the KV a request needs reproduces (MiniMax-M2: 62 layers
    × 2 × 8 KV heads / 2 × 128 × 2 B per token = 126,976 B; ⌈196,608 / 16⌉ × 16 tokens = 23.25 GiB)."""
    d = run_json(capsys, LOGS / "spark-396-minimax-m2.7-awq-tp2-kv-short.log", "--model", "minimax-m2", "--gpu",
                 "rtx-4090", "--tensor-parallel-size", "2")  # fmt: skip
    needed = next(r for r in d["rows"] if r["key"] == "kv_needed_bytes")
    assert d["scenario"]["max_model_len"] == 196_608 and needed["logged"] == pytest.approx(23.25 * GiB)
    assert 196_608 * 126_976 / GiB == pytest.approx(23.25, abs=0.005) and d["matches"]["kv_needed_bytes"]


def test_the_command_a_reconciliation_prints_reproduces_the_log(capsys, tmp_path):
    """`reproduce the log:` carries the log's own settings (TP from its four ranks) with the calibration: run as
    printed, `calc plan` holds the logged 12,424 blocks (vllm#17469, four A10s)."""
    import shlex

    assert main(["reconcile", str(LOGS / "vllm-17469-qwen3-30b-a3b-4xa10.log"), "--model", "qwen3-30b-a3b",
                 "--gpu", "a10"]) == 0  # fmt: skip
    line = next(x for x in capsys.readouterr().out.splitlines() if "reproduce the log:" in x)
    argv = shlex.split(line.split("python -m calc ", 1)[1])
    assert "--tensor-parallel-size" in argv and main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_gpu_blocks"] == 12_424


def test_a_log_from_a_bigger_gpu_is_flagged(capsys):
    """eole's Gemma-3-1B log reports 25.39 GiB available for the KV cache: more than an RTX 4090's whole 23.68 GiB,
    so it cannot have run there; the reconciliation says so first rather than explain the gap as overheads."""
    assert main(["reconcile", str(LOGS / "eole-gemma-3-1b-v0.13.log"), "--model",
                 str(LOGS / "gemma-3-1b" / "config.json"), "--gpu", "rtx-4090"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "warning: WRONG GPU? the log's available KV cache memory (25.39 GiB) is more than the whole" in out
    assert out.index("WRONG GPU?") < out.index("quantity")


def test_an_impossible_logged_weight_is_ignored_by_name_with_its_range(capsys, catalog, tmp_path):
    # 'Model loading took 1000000.0 GiB' is above weights_memory_bytes' 10¹⁵-byte bound: the reconciliation printed a
    # raw pydantic ValidationError (the page the same); now the value is left out of the calibration and said in a note
    text = (LOGS / "vllm-17469-qwen3-30b-a3b-4xa10.log").read_text()
    big = re.sub(r"Model loading took [0-9.]+ GiB", "Model loading took 1000000.0 GiB", text)
    rec = reconcile(parse_log(big), catalog)
    assert "weights_memory_bytes" not in rec.calibration
    assert ("ignored the log's 'Model loading took' (1,000,000.00 GiB): weights_memory_bytes allows ≥ 0 GiB, "
            "≤ 931,323 GiB") in rec.notes  # fmt: skip
    path = tmp_path / "big.log"
    path.write_text(big)
    assert main(["reconcile", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "ValidationError" not in out + err and "ignored the log's 'Model loading took'" in out


def test_log_numbers_are_ascii_digits_only():
    # Python's \d and float() read '٦.٤١' (Arabic-Indic digits) as 6.41; vLLM prints ASCII digits only
    assert parse_log("INFO Available KV cache memory: 6.41 GiB").first("available_kv_gib").value == 6.41
    for line in ("INFO Available KV cache memory: ٦.٤١ GiB", "INFO Available KV cache memory: 6.٤١ GiB",
                 "INFO # GPU blocks: ٧٥٠٤", "INFO Maximum concurrency for 8192 tokens per request: ٢.٥x"):  # fmt: skip
        try:
            p = parse_log(line)
        except InputError:
            continue  # no recognised value at all
        assert not any(p.get(k) for k in ("available_kv_gib", "num_gpu_blocks", "max_concurrency")), line


@pytest.mark.parametrize("device, spec", [
    ("NVIDIA H200 NVL", "h200-nvl"), ("NVIDIA H200", "h200"), ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell-workstation"), ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("NVIDIA H20", "h20"), ("NVIDIA H20-3e", "h20-3e"), ("NVIDIA H800", "h800"),  # nvidia-smi names (OGKM README)
    ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"), ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),  # nvidia-smi names
])  # fmt: skip
def test_a_device_name_picks_its_own_variant(catalog, device, spec):
    """nvidia-smi's names (Massed Compute's nvidia-smi.txt: 'NVIDIA H200 NVL', 'NVIDIA RTX PRO 6000 Blackwell Server
    Edition'): the PCIe H200 NVL is not the SXM H200, whose name it contains."""
    from boundary.log_names import detect_gpu

    text = f"INFO device: {device}\nINFO # GPU blocks: 1000, # CPU blocks: 0\n"
    assert detect_gpu(parse_log(text), catalog, None)[0] == spec


def test_a_logged_total_prefers_the_part_whose_capacity_was_measured(catalog):
    """139.80 GiB is the H200's PyTorch total; the H20-3e and H200 NVL copy it (their `derived` lists): a log that
    names no device and totals 139.80 GiB reads as the H200, the others named beside it."""
    from boundary.log_names import detect_gpu

    gid, how = detect_gpu(parse_log("INFO # GPU blocks: 1000, # CPU blocks: 0\n"), catalog, 139.80)
    assert gid == "h200" and "h20-3e" in how and "h200-nvl" in how


def test_a_logged_expert_parallel_flag_reaches_the_scenario():
    """vLLM prints the flags it was started with ("non-default args: {…}"): an expert-parallel server's log plans
    expert parallelism (calc.expert_parallel), a log without the flag leaves it off."""
    from boundary.log_fields import log_scenario_fields

    line = ("INFO 11-02 10:00:00 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-30B-A3B', "
            "'tensor_parallel_size': 4, 'enable_expert_parallel': True}")  # fmt: skip
    fields, _ = log_scenario_fields(parse_log(line))
    assert fields["enable_expert_parallel"] is True and fields["tensor_parallel_size"] == 4
    fields, _ = log_scenario_fields(parse_log(line.replace(", 'enable_expert_parallel': True", "")))
    assert "enable_expert_parallel" not in fields


def test_a_calibration_is_whole_bytes_on_every_line(capsys):
    """'Model loading took 14.25 GiB'-style figures times 2^30 carry fractions of a byte: the calibration line and the
    'reproduce the log' command printed 15,298,029,263 and 15298029263.2576 for one log. Every logged log's
    calibration is whole bytes, and the text prints each the same on both lines."""
    seen = 0
    for path in sorted(LOGS.glob("*.log")):
        code, out = main(["reconcile", str(path), "--json"]), capsys.readouterr().out
        if code != 0:  # a log that needs --model: not this test's concern
            continue
        cal = json.loads(out).get("calibration") or {}
        seen += any(k.endswith("_bytes") for k in cal)
        for k, v in cal.items():
            if k.endswith("_bytes"):
                assert float(v).is_integer(), (path.name, k, v)
    assert seen >= 5


def test_a_negative_predicted_pool_says_what_it_means(capsys):
    """LMCache#1739's Qwen3-14B log on the assumed RTX 4090: the plan leaves nothing for the KV cache (−7.1 GiB);
    the table says the weights and overheads exceed the GPU rather than print a bare negative figure."""
    assert main(["reconcile", str(LOGS / "lmcache-1739-qwen3-14b.log"), "--model", str(QWEN3_14B)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Available KV cache memory"))
    assert "-7.125 GiB (nothing left for the KV cache: the weights and overheads exceed this GPU's memory)" in row


def test_a_modelopt_checkpoints_log_is_reconciled_with_its_fp8_kv(catalog):
    """nvidia/Llama-3.1-70B-Instruct-FP8 under vLLM 0.13 with kv_cache_dtype=auto: its hf_quant_config.json's FP8 KV
    scales make the cache fp8, so 20.10 GiB hold 20.10 GiB / (16 × 2 × 80 layers × 8 heads × 128 × 1 B) = 8,232
    blocks — the log's count matches with no fp8 to infer and no kv_cache_dtype=fp8 to suggest."""
    from pathlib import Path

    config = Path(__file__).parent / "data/hf_configs/llama-3.1-70b-instruct-fp8-modelopt/config.json"
    per_block = 16 * 2 * 80 * 8 * 128 * 1
    blocks = int(20.10 * GiB // per_block)
    text = "\n".join(
        ["INFO 12-20 10:00:00 [core.py:74] Initializing a V1 LLM engine (v0.13.0) with config: "
         "model='nvidia/Llama-3.1-70B-Instruct-FP8', speculative_config=None, dtype=torch.bfloat16, max_seq_len=8192, "
         "tensor_parallel_size=1, pipeline_parallel_size=1, quantization=modelopt, enforce_eager=False, "
         "kv_cache_dtype=auto",
         "INFO 12-20 10:00:10 [gpu_worker.py:276] Available KV cache memory: 20.10 GiB",
         f"INFO 12-20 10:00:11 [kv_cache_utils.py:849] GPU KV cache size: {blocks * 16:,} tokens"])  # fmt: skip
    from calc.custom import encode_custom_model
    from calc.loader import load_model_file

    custom = encode_custom_model(load_model_file(config))
    rec = reconcile(parse_log(text), catalog, {"gpu": "h100-sxm", "model": "custom", "custom_model": custom})
    assert rec.scenario.kv_cache_dtype == "fp8"
    assert rec.predicted["num_gpu_blocks"] == blocks and rec.matches["num_gpu_blocks"]
    assert any(n.startswith("kv_cache_dtype auto is FP8 for this checkpoint") for n in rec.notes)
    assert not any(n.startswith("kv_cache_dtype=fp8 inferred") for n in rec.notes)
