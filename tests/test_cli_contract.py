"""The command line's contract: every path exits 0, or 2 with ONE stderr line naming the field or file; never a
traceback, never a hang. In-process calls of `boundary.cli.main` (fast), and one whole process for /dev/zero."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boundary.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "data" / "vllm_logs" / "lmcache-1739-qwen3-14b.log"
SUBCOMMANDS = ("plan", "bench", "search", "models", "gpus", "reconcile")


def one_error_line(capsys, argv) -> str:
    start = time.process_time()
    assert main(argv) == 2
    assert time.process_time() - start < 2.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_model_is_refused_before_reading(capsys, device):
    err = one_error_line(capsys, ["plan", "--model", device])
    assert device in err and "not a regular file" in err


def test_a_fifo_as_model_or_log_never_blocks(capsys, fifo):
    assert "not a regular file" in one_error_line(capsys, ["plan", "--model", str(fifo)])
    assert "not a regular file" in one_error_line(capsys, ["reconcile", str(fifo)])


def test_reconcile_refuses_a_device_and_an_oversized_log_before_reading(capsys, tmp_path):
    assert "/dev/zero" in one_error_line(capsys, ["reconcile", "/dev/zero"])
    big = tmp_path / "huge.log"
    with big.open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB on paper, nothing on disk
    err = one_error_line(capsys, ["reconcile", str(big)])
    assert "huge.log" in err and "67,108,864 bytes" in err and "limit" in err


def test_an_oversized_model_file_is_refused(capsys, tmp_path):
    big = tmp_path / "config.json"
    with big.open("wb") as f:
        f.truncate(10 * 2**20)
    err = one_error_line(capsys, ["plan", "--model", str(big)])
    assert "config.json" in err and "10,485,760 bytes" in err


def test_a_directory_is_not_a_file(capsys, tmp_path):
    assert "not a regular file" in one_error_line(capsys, ["plan", "--model", str(tmp_path) + "/"])
    assert "not a regular file" in one_error_line(capsys, ["reconcile", str(tmp_path)])


@pytest.mark.parametrize("flag", ["--concurrency", "--mfu", "--max-model-len", "--block-size", "--request-rate",
                                  "--kv-cache-memory-bytes", "--gpu-memory-utilization"])  # fmt: skip
def test_a_5000_digit_number_names_its_flag(capsys, flag):
    err = one_error_line(capsys, ["plan", flag, "9" * 5000])
    assert err.startswith(f"error: {flag}: number too long")
    assert len(err) < 200


def test_a_5000_digit_number_in_a_config_json_names_the_file(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}")
    err = one_error_line(capsys, ["plan", "--model", str(path)])
    assert "config.json" in err and "9999999999" not in err


def test_every_subcommand_has_help(capsys):
    for argv in ([], *([c] for c in SUBCOMMANDS)):
        with pytest.raises(SystemExit) as e:
            main([*argv, "--help"])
        assert e.value.code == 0, argv
        assert "usage:" in capsys.readouterr().out
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(SUBCOMMANDS)  # a new subcommand joins this test


def test_the_whole_process_refuses_dev_zero_quickly():
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "calc", "plan", "--model", "/dev/zero"], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)  # fmt: skip
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "/dev/zero" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and time.monotonic() - start < 10


@pytest.mark.parametrize("argv, allowed", [
    (["--request-rate", "-5"], "allowed: ≥ 1e-06, ≤ 10,000,000"),  # optional: Annotated[float, Field(...)] | None
    (["--slo-ttft-s", "-1"], "allowed: ≥ 1e-06, ≤ 86,400"),
    (["--concurrency", "0"], "allowed: ≥ 1, ≤ 1,000,000"),
    (["--gpu-memory-utilization", "2"], "allowed: ≥ 0.01, ≤ 1"),
])  # fmt: skip
def test_an_out_of_range_flag_names_its_allowed_range(capsys, argv, allowed):
    err = one_error_line(capsys, ["plan", *argv])
    assert err.startswith(f"error: {argv[0]}: ") and err.rstrip().endswith(allowed), err


def test_a_benchmark_that_completes_nothing_has_null_figures_and_says_why(capsys):
    """A 1-token prefill budget and a 20,000-token prompt: 20,000 steps a prompt, past the simulation's work cap of
    15,000 before the first request finishes. Every key was 0.0 (Mean TTFT 0.00 ms), read as a latency."""
    args = ["bench", "--max-num-batched-tokens", "1", "--max-num-seqs", "1", "--random-input-len", "20000",
            "--max-model-len", "32768"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["completed"] == 0 and d["mean_ttft_ms"] is None and d["output_throughput"] is None
    assert "20,000 prefill steps (20,000 prompt tokens at max_num_batched_tokens 1)" in d["not_served"]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("not served: no request finished within the simulation's work cap")


@pytest.mark.parametrize("value", ["١٦", "¹⁶", "１６"])  # Arabic-Indic, superscript, fullwidth: int() takes the first two
def test_a_block_size_in_other_digits_is_refused_as_every_integer_is(capsys, value):
    from boundary.urlstate import validate_query

    err = one_error_line(capsys, ["plan", "--block-size", value])
    assert err.startswith("error: --block-size: Input should be 8, 16, 32, 64, 128 or 256"), err
    assert err.count("8, 16, 32") == 1  # the choices once, not again as '(allowed: …)'
    values, warnings = validate_query({"block_size": [value]})
    assert values == {} and warnings[0].startswith("block_size: Input should be 8, 16")


def test_a_benchmark_says_what_the_plan_says(capsys):
    """bench printed none of plan's notes: on an H100 `vllm serve` starts with 8,192 / 1,024 where the plan keeps
    2,048 / 256 (a TTFT 17× apart at 512 clients), and SLO or price flags changed nothing without a word."""
    args = ["bench", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-concurrency", "8", "--num-prompts", "16",
            "--queue-s", "5", "--gpu-hour-price", "9"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "note: vllm serve on this GPU (NVIDIA H100 SXM 80GB" in out and "max_num_seqs 1,024" in out
    assert "note: --queue-s, --gpu-hour-price change nothing in a benchmark" in out
    assert main([*args, "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("--queue-s, --gpu-hour-price change nothing") for n in notes)


def test_a_length_no_max_model_len_admits_is_not_offered_one(capsys):
    # Qwen2.5-7B-Instruct: max_position_embeddings 32,768 < 100,000 + 256
    assert main(["bench", "--model", "qwen2.5-7b-instruct", "--random-input-len", "100000", "--max-concurrency", "4"]) == 0
    out = capsys.readouterr().out
    assert "no --max-model-len admits it: 100,256 tokens is more than the model's maximum" in out
    assert "--max-model-len 100256 admits it" not in out


def test_an_sglang_static_batch_names_sglangs_tool(capsys):
    assert main(["bench", "--engine", "sglang", "--batch-size", "2", "--input-len", "64", "--output-len", "16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("predicted static batch under SGLang (`python -m sglang.bench_one_batch --batch-size 2")
    assert "vllm bench latency --batch-size" not in out


@pytest.mark.parametrize("value", ["-1e3", "-inf"])
def test_a_signed_exponent_reaches_the_fields_own_check(capsys, value):
    """argparse took `-1e3` for another flag ("expected one argument"), naming no allowed range."""
    err = one_error_line(capsys, ["plan", "--request-rate", value])
    assert err.startswith("error: --request-rate: ") and err.rstrip().endswith("allowed: ≥ 1e-06, ≤ 10,000,000"), err


def test_search_gpu_alone_searches_that_gpu(capsys):
    assert main(["search", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tensor-parallel-size", "1",
                 "--json"]) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert d["scenario"]["search_gpus"] == "h100-sxm" and set(d["best_per_gpu"]) <= {"h100-sxm"}
    assert any(n.startswith("--gpu h100-sxm without --gpus: that GPU alone is searched") for n in d["notes"])


def test_search_dimensions_take_their_fields_names(capsys):
    # one vocabulary: the link and the JSON's scenario say search_gpus; the flag --search-gpus is --gpus's twin
    assert main(["search", "--model", "llama-3.1-8b", "--search-gpus", "l40s", "--search-tensor-parallel-size", "1",
                 "--json"]) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert d["scenario"]["search_gpus"] == "l40s" and d["scenario"]["search_tensor_parallel_size"] == "1"


def test_reconcile_help_says_the_log_names_model_and_gpu(capsys):
    with pytest.raises(SystemExit):
        main(["reconcile", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: the model the log names)" in out and "(default: the device the log names" in out


def test_an_uncapped_benchmark_does_not_count_plans_clients(capsys):
    """Without --max-concurrency every prompt is sent at once: the refusal named plan's default 16 clients."""
    assert main(["bench", "--model", "qwen2.5-7b-instruct", "--random-input-len", "100000"]) == 0
    assert capsys.readouterr().out.startswith("not served: 100,256 tokens: does not fit")


def test_bench_says_its_request_rate_is_the_tools_not_the_plans(capsys):
    """The same flag, two loads: bench's --request-rate is vllm bench serve's arrivals into one server, plan's the rate
    a fleet serves with its headline at --concurrency (a user audit found TPOT 7.8 ms against 11.5 unexplained)."""
    assert main(["bench", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--request-rate", "5", "--num-prompts", "50",
                 "--json"]) == 0  # fmt: skip
    assert any(n.startswith("--request-rate 5 is vllm bench serve's here") for n in json.loads(capsys.readouterr().out)["notes"])
    assert main(["bench", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-concurrency", "4", "--num-prompts",
                 "20", "--json"]) == 0  # fmt: skip
    assert not any("vllm bench serve's here" in n for n in json.loads(capsys.readouterr().out)["notes"])
