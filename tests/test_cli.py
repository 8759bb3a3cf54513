"""The command line, run as a user would: a whole process, its stdout, its exit status."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    return subprocess.run([sys.executable, "-m", "calc", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_plan_json_reproduces_the_seed_pool():
    p = run("plan", "--model", "qwen2.5-7b-instruct", "--gpu", "rtx-4090", "--kv-cache-memory-bytes", "6884950016",
            "--max-model-len", "8192", "--json")  # fmt: skip
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    for key in ("kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "weights_bytes_per_gpu", "kv_cache_memory_bytes",
                "num_gpu_blocks", "kv_cache_tokens", "max_concurrency", "fits"):  # fmt: skip
        assert key in d
    assert d["kv_bytes_per_token"] == 57_344
    assert (d["num_gpu_blocks"], d["kv_cache_tokens"], round(d["max_concurrency"], 2)) == (7504, 120_064, 14.66)


def test_plan_text_shows_the_verdict():
    p = run("plan")
    assert p.returncode == 0 and "fits" in p.stdout and "Available KV cache memory".lower() in p.stdout.lower()


def test_plan_from_a_config_json(tmp_path):
    cfg = {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "intermediate_size": 18944,
           "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
           "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    p = run("plan", "--model", str(tmp_path / "config.json"), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["kv_bytes_per_token"] == 57_344


def test_models_and_gpus_list():
    assert "qwen2.5-7b-instruct" in run("models").stdout
    assert "h100-sxm" in run("gpus").stdout


@pytest.mark.parametrize(
    "args, field",
    [
        (["--max-model-len", "-1"], "--max-model-len"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--concurrency", "many"], "--concurrency"),
        (["--kv-cache-dtype", "int3"], "--kv-cache-dtype"),
        (["--gpu", "h900"], "gpu"),
        (["--model", "llama-3.1-8b", "--tensor-parallel-size", "3"], "tensor_parallel_size"),
        (["--no-such-flag", "1"], "no-such-flag"),
        (["--model", "/nonexistent/config.json"], "config.json"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, field):
    p = run("plan", *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in p.stderr
