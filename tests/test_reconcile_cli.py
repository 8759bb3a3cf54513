"""`calc reconcile` as a command: its JSON keys, its text (the page's table), bad input, and what it prints for real
vLLM startup logs (tests/data/vllm_logs, sources in each file's header and INDEX.md)."""

import json
import re
import subprocess
import sys

import pytest
from test_reconcile import LOGS, QWEN3_14B, ROOT, blocks_at, run_json

from boundary.cli import main
from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.errors import InputError
from calc.units import GiB

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
    """nvidia/Llama-3.1-70B-Instruct-FP8 under vLLM 0.14 with kv_cache_dtype=auto: its hf_quant_config.json's FP8 KV
    scales make the cache fp8, so 20.10 GiB hold 20.10 GiB / (16 × 2 × 80 layers × 8 heads × 128 × 1 B) = 8,232
    blocks — the log's count matches with no fp8 to infer and no kv_cache_dtype=fp8 to suggest."""
    from pathlib import Path

    config = Path(__file__).parent / "data/hf_configs/llama-3.1-70b-instruct-fp8-modelopt/config.json"
    per_block = 16 * 2 * 80 * 8 * 128 * 1
    blocks = int(20.10 * GiB // per_block)
    text = "\n".join(
        ["INFO 12-20 10:00:00 [core.py:74] Initializing a V1 LLM engine (v0.14.0) with config: "
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
