"""The command line: in-process through `boundary.cli.main` (exit status, stdout, stderr), and once as a whole
process to check the entry point itself."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import VLLM_0_11

from boundary.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse's own exits (usage errors, --help)
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_entry_point_runs_as_a_process():
    p = subprocess.run([sys.executable, "-m", "calc", "plan", "--json"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["kv_bytes_per_token"] == 57_344


def test_plan_json_reproduces_the_seed_pool(capsys):
    code, out, err = run(capsys, "plan", "--model", "qwen2.5-7b-instruct", "--gpu", "rtx-4090",
                         "--kv-cache-memory-bytes", "6884950016", "--max-model-len", "8192", "--json")  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    for key in ("kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "weights_bytes_per_gpu", "kv_cache_memory_bytes",
                "num_gpu_blocks", "kv_cache_tokens", "max_concurrency", "fits"):  # fmt: skip
        assert key in d
    assert d["kv_bytes_per_token"] == 57_344
    assert (d["num_gpu_blocks"], d["kv_cache_tokens"], round(d["max_concurrency"], 2)) == (7504, 120_064, 14.66)


def test_plan_json_holds_formulas_as_text_not_python_reprs(capsys):
    code, out, err = run(capsys, "plan", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert "E(value=" not in out
    assert "formulas" not in d["memory"] and "formulas" not in d["latency"]
    assert d["formulas"]["KV bytes per token"].endswith("= 2 × 28 × 4 × 128 × 2\n= 57,344 B")  # DESIGN.md, Qwen2.5-7B


def test_plan_text_shows_the_verdict(capsys):
    code, out, _ = run(capsys, "plan")
    assert code == 0 and "fits" in out and "available kv cache memory" in out.lower()


def test_plan_from_a_config_json(capsys, tmp_path):
    cfg = {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "intermediate_size": 18944,
           "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
           "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", "--model", str(tmp_path / "config.json"), "--json")
    assert code == 0, err
    assert json.loads(out)["kv_bytes_per_token"] == 57_344


def test_models_and_gpus_list(capsys):
    assert "qwen2.5-7b-instruct" in run(capsys, "models")[1]
    assert "h100-sxm" in run(capsys, "gpus")[1]


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
def test_bad_input_exits_2_with_one_line(capsys, args, field):
    code, _, err = run(capsys, "plan", *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in err


def test_bench_prints_the_tools_keys(capsys):
    code, out, err = run(capsys, "bench", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-concurrency", "4",
                         "--random-input-len", "512", "--random-output-len", "64", "--num-prompts", "40", "--json")  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
                "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "request_throughput",
                "output_throughput", "total_token_throughput"):  # fmt: skip
        assert d[key] > 0, key
    assert d["completed"] == 40
    # Little's law on the closed loop: 4 requests in flight, each taking the mean end-to-end time
    assert d["request_throughput"] == pytest.approx(4 / (d["mean_e2el_ms"] / 1e3), rel=0.15)
    code, out, _ = run(capsys, "bench", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--batch-size", "8",
                       "--input-len", "512", "--output-len", "64", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["avg_latency"] > 0


def test_bench_of_a_plan_vllm_cannot_serve_says_why_instead_of_zeros(capsys):
    """Llama-3.1-405B's bf16 weights (~811 GB) on one 16 GB T4: vLLM would not start, so there is no latency."""
    where = ("--model", "llama-3.1-405b", "--gpu", "t4")
    code, out, _ = run(capsys, "bench", *where, "--batch-size", "4", "--json")
    d = json.loads(out)
    assert code == 0 and d["avg_latency"] is None and "cannot run" in d["not_served"] and "weights" in d["not_served"]
    code, out, _ = run(capsys, "bench", *where, "--batch-size", "4")
    assert out.startswith("not served: ") and "Avg latency" not in out
    code, out, _ = run(capsys, "bench", *where, "--max-concurrency", "4", "--num-prompts", "20", "--json")
    d = json.loads(out)
    assert d["completed"] == 0 and "cannot run" in d["not_served"]
    assert d["mean_ttft_ms"] is None and d["output_throughput"] is None  # null, not a 0 ms a script would believe
    code, out, _ = run(capsys, "bench", *where, "--max-concurrency", "4", "--num-prompts", "20")
    assert out.startswith("not served: ") and "TTFT" not in out
    code, out, _ = run(capsys, "bench", "--max-concurrency", "4", "--num-prompts", "20", "--json")
    assert json.loads(out)["not_served"] is None and json.loads(out)["completed"] == 20


def test_bench_answers_for_every_shipped_model_and_every_shipped_gpu(capsys, catalog):
    """Every model on an H200 and Llama-3.1-8B on every GPU (the full 53 × 22 product ran in 24 s, all exit 0): the
    tool's keys, and a reason wherever nothing could be served."""
    pairs = [(m, "h200") for m in catalog.models] + [("llama-3.1-8b", g) for g in catalog.gpus]
    for model, gpu in pairs:
        code = main(["bench", "--model", model, "--gpu", gpu, "--max-concurrency", "2", "--num-prompts", "4",
                     "--random-input-len", "256", "--random-output-len", "16", "--json"], catalog=catalog)  # fmt: skip
        out = capsys.readouterr()
        assert code == 0, (model, gpu, out.err)
        d = json.loads(out.out)
        assert {"median_ttft_ms", "median_tpot_ms", "p99_itl_ms", "output_throughput"} <= d.keys(), (model, gpu)
        assert (d["completed"] == 4 and d["median_tpot_ms"] > 0) or d["not_served"], (model, gpu)


def test_bench_text_is_laid_out_like_the_tool(capsys):
    # the labels and order of vLLM v0.10+'s summary (a published one: tests/data/benchmarks/gpustack-qwen3-8b-h100-latency.yaml)
    code, out, _ = run(capsys, "bench", "--max-concurrency", "2", "--num-prompts", "10")
    assert code == 0
    labels = [line if line[0] in "=-" else line[:40].strip() for line in out.splitlines()[1:14]]
    assert labels == ["============ Serving Benchmark Result ============", "Successful requests:", "Failed requests:",
                      "Maximum request concurrency:", "Benchmark duration (s):", "Total input tokens:",
                      "Total generated tokens:", "Request throughput (req/s):", "Output token throughput (tok/s):",
                      "Peak output token throughput (tok/s):", "Peak concurrent requests:",
                      "Total Token throughput (tok/s):", "---------------Time to First Token----------------"]
    assert "Maximum request concurrency:             2" in out
    for line in ("Median TTFT (ms):", "P99 ITL (ms):"):
        assert line in out
    code, out, _ = run(capsys, "bench", "--request-rate", "4", "--num-prompts", "10")
    assert "Request rate configured (RPS):           4.00" in out and "Maximum request concurrency" not in out


def test_bench_takes_the_tools_default_rate_inf(capsys):
    # vllm bench serve's --request-rate defaults to inf (every prompt at once) and scripts pass it as typed: it was
    # refused as "not a finite number"
    flags = ("--num-prompts", "20", "--random-input-len", "100", "--random-output-len", "20", "--json")
    code, out, _ = run(capsys, "bench", *flags)
    for typed in ("inf", "INF", "infinity"):
        code2, out2, _ = run(capsys, "bench", *flags, "--request-rate", typed)
        assert (code, code2) == (0, 0) and json.loads(out2) == json.loads(out)
    assert json.loads(out)["request_rate"] is None  # no pace: not a number a script would read as one


def test_bench_json_has_the_tools_peak_and_count_keys(capsys):
    code, out, _ = run(capsys, "bench", "--max-concurrency", "2", "--num-prompts", "10", "--random-input-len", "100",
                       "--random-output-len", "20", "--json")  # fmt: skip
    d = json.loads(out)
    assert (d["failed"], d["total_input_tokens"], d["total_output_tokens"]) == (0, 10 * 100, 10 * 20)
    assert 2 <= d["max_concurrent_requests"] <= 10 and 0 < d["max_output_tokens_per_s"] <= 10 * 20


@pytest.mark.parametrize("args, flag", [(["--max-concurrency", "0"], "--max-concurrency"),
                                        (["--num-prompts", "x"], "--num-prompts"),
                                        (["--engine", "trt"], "--engine"),
                                        # plan's --concurrency was silently dropped; a latency batch with serve's
                                        # flags printed the batch alone
                                        (["--concurrency", "64"], "--concurrency"),
                                        (["--batch-size", "8", "--max-concurrency", "4"], "--batch-size"),
                                        (["--batch-size", "8", "--request-rate", "4"], "--batch-size"),
                                        # vllm bench latency has no load or report flags: they were ignored
                                        (["--batch-size", "8", "--num-prompts", "77"], "--num-prompts"),
                                        (["--batch-size", "8", "--random-range-ratio", "0.5"], "--random-range-ratio"),
                                        (["--batch-size", "8", "--goodput", "ttft:1"], "--goodput"),
                                        (["--batch-size", "8", "--metric-percentiles", "50"], "--metric-percentiles"),
                                        (["--batch-size", "8", "--seed", "3"], "--seed"),
                                        (["--batch-size", "8", "--burstiness", "0.2"], "--burstiness"),
                                        # paced gaps without a pace: it was reported as used and did nothing
                                        (["--burstiness", "0.5", "--max-concurrency", "8"], "--burstiness"),
                                        # argparse took a prefix for the flag it abbreviates
                                        (["--max-conc", "4"], "--max-conc")])  # fmt: skip
def test_bench_bad_input_names_the_flag(capsys, args, flag):
    code, _, err = run(capsys, "bench", *args)
    assert code == 2 and flag in err and len(err.strip().splitlines()) == 1



@pytest.mark.parametrize("args, flag", [(["--num-prompts", "١٠٠"], "--num-prompts"),  # Arabic-Indic digits
                                        (["--max-concurrency", "1_6"], "--max-concurrency"),
                                        (["--seed", " 5"], "--seed"), (["--batch-size", "٣"], "--batch-size"),
                                        (["--random-range-ratio", "٠.٥"], "--random-range-ratio"),
                                        (["--random-range-ratio", "0_5"], "--random-range-ratio")])  # fmt: skip
def test_bench_numbers_are_ascii_digits_only(capsys, args, flag):
    # Python's int() and float() take these; no benchmark tool's flag means them
    code, _, err = run(capsys, "bench", *args)
    assert code == 2 and err.startswith(f"error: {flag}: expected ") and "ASCII digits" in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("typed", ["--random-input-len", "--input-len", "--random-output-len", "--output-len"])
def test_a_length_error_names_the_flag_typed(capsys, typed):
    # --random-input-len and --input-len set the same Scenario field; the error names the one on the command line
    code, _, err = run(capsys, "bench", "--num-prompts", "4", typed, "-5")
    assert code == 2 and err.startswith(f"error: {typed}: "), err

def test_plan_checks_its_replica_count_in_the_simulation(capsys):
    """With a request rate, the text follows the replicas line with the simulated share (calc.replica_check), and
    the JSON carries it as replica_check (null without a rate)."""
    code, out, _ = run(capsys, "plan", "--request-rate", "20")
    assert code == 0
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if "20.0 req/s →" in x)
    assert lines[at + 1].strip().startswith("one replica simulated at its share of the rate (")
    code, out, _ = run(capsys, "plan", "--request-rate", "20", "--json")
    rc = json.loads(out)["replica_check"]
    assert set(rc) == {"replicas", "rate_per_replica_rps", "num_prompts", "within_slo", "quota", "replicas_meeting_quota",
                       "preemptions", "fewer_within_slo"}  # fmt: skip
    assert rc["rate_per_replica_rps"] == pytest.approx(20 / rc["replicas"])
    # where the count meets the quota, one replica fewer is simulated too (a count above the simulation's need)
    assert (rc["fewer_within_slo"] is not None) == (rc["within_slo"] >= rc["quota"] and rc["replicas"] > 1)
    code, out, _ = run(capsys, "plan", "--json")
    assert json.loads(out)["replica_check"] is None


def test_a_count_above_the_simulations_need_says_one_fewer_would_do(capsys):
    """Llama-3.1-8B on L40S, 20 req/s of 2,000 + 300 tokens, TTFT ≤ 1 s, TPOT ≤ 50 ms: the closed forms' latency spread
    sizes 23 replicas; the simulation keeps the quota at 22 as well (an audit found 15–16 do), and the text says so."""
    from boundary.cli import main

    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "l40s", "--request-rate", "20", "--input-len", "2000",
                 "--output-len", "300", "--slo-ttft-s", "1", "--slo-tpot-s", "0.05"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "one replica simulated" in x)
    assert "meets the 90% quota; 22 would keep" in line and "latency_sigma" in line


def test_a_replica_check_that_overflows_the_pool_says_so(capsys):
    """Llama-3.1-8B at 4,000 + 512 on one RTX 5090 at 0.6 req/s: the pool holds 21 such requests, and Poisson bursts
    overflow it; vLLM then preempts and computes the prompts again, which the simulation plays and the closed forms
    do not count. The check names the preemptions and the replicas that meet the quota."""
    pinned = ("--engine-version", VLLM_0_11)  # at ≥ 0.14's costs the replica drains its bursts in time (97 %)
    code, out, _ = run(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "rtx-5090", "--input-len", "4000",
                       "--output-len", "512", "--slo-ttft-s", "2", "--request-rate", "0.6", "--json", *pinned)  # fmt: skip
    rc = json.loads(out)["replica_check"]
    assert code == 0 and rc["replicas"] == 1 and rc["preemptions"] > 100 and rc["within_slo"] < rc["quota"]
    assert rc["replicas_meeting_quota"] == 2
    code, out, _ = run(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "rtx-5090", "--input-len", "4000",
                       "--output-len", "512", "--slo-ttft-s", "2", "--request-rate", "0.6", *pinned)  # fmt: skip
    assert f"overflowed the KV pool: {rc['preemptions']:,} preemptions in the simulation" in out


@pytest.mark.parametrize("args, shown", [
    (["plan", "--model", "no-such-model"], "--model"), (["plan", "--gpu", "no-such-gpu"], "--gpu"),
    (["plan", "--model", "llama-3.1-70b", "--tensor-parallel-size", "3"], "--tensor-parallel-size"),
    (["bench", "--model", "no-such-model"], "--model"), (["search", "--gpus", "no-such-gpu"], "--gpus"),
])  # fmt: skip
def test_errors_name_the_flag_the_user_typed(capsys, args, shown):
    """Errors raised past validation (resolving the spec ids, the TP rules) name the flag, not the field."""
    code, _, err = run(capsys, *args)
    assert code == 2 and err.startswith(f"error: {shown}: ") and err.count("\n") == 1


def test_help_gives_a_flags_whole_first_paragraph(capsys):
    """A field's help was its docstring's first line, cut mid-sentence ('default: the engine')."""
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "default: the engine spec's calibrated request_overhead_s." in out
    assert "(fractional, e.g. 15.39): the decode floor and the MBU achieved at that batch" in out


def test_bench_percentile_flags_are_the_tools(capsys):
    # vllm bench serve --percentile-metrics ttft,itl --metric-percentiles 50,90,99.9: those sections only, in the
    # tool's order (ttft, tpot, itl, e2el whatever the flag's order), Mean and Median, then P50, P90, P99.9
    code, out, _ = run(capsys, "bench", "--max-concurrency", "4", "--num-prompts", "40", "--percentile-metrics",
                       "itl,ttft", "--metric-percentiles", "50,90,99.9")  # fmt: skip
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("-")]
    assert heads == ["---------------Time to First Token----------------",
                     "---------------Inter-token Latency----------------"]  # fmt: skip
    for metric in ("TTFT", "ITL"):
        for label in ("Mean", "Median", "P50", "P90", "P99.9"):
            assert f"{label} {metric} (ms):" in out
    assert "TPOT" not in out and "E2EL" not in out
    code, out, _ = run(capsys, "bench", "--max-concurrency", "4", "--num-prompts", "40", "--percentile-metrics",
                       "ttft", "--metric-percentiles", "50,90", "--json")  # fmt: skip
    d = json.loads(out)
    assert [k for k in d if k.endswith("_ms")] == ["mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms",
                                                   "p90_ttft_ms"]  # the tool's order (its saved JSON)
    assert d["p50_ttft_ms"] == d["median_ttft_ms"] <= d["p90_ttft_ms"]  # numpy's 50th percentile is the median


@pytest.mark.parametrize("args, flag", [(["--percentile-metrics", "ttft,latency"], "--percentile-metrics"),
                                        (["--metric-percentiles", "101"], "--metric-percentiles"),
                                        (["--metric-percentiles", ",".join(["50"] * 21)], "--metric-percentiles")])  # fmt: skip
def test_bench_bad_percentile_flags_name_the_flag(capsys, args, flag):
    code, _, err = run(capsys, "bench", *args)
    assert code == 2 and err.startswith(f"error: {flag}: ") and len(err.strip().splitlines()) == 1, err


def test_bench_goodput_and_burstiness_flags_are_the_tools(capsys):
    code, out, _ = run(capsys, "bench", "--request-rate", "2", "--burstiness", "0.5", "--num-prompts", "20",
                       "--goodput", "ttft:100000", "tpot:100000")  # fmt: skip
    assert code == 0
    labels = [line[:40].strip() for line in out.splitlines()]
    assert labels.index("Request goodput (req/s):") == labels.index("Request throughput (req/s):") + 1
    code, out, _ = run(capsys, "bench", "--request-rate", "2", "--num-prompts", "20", "--goodput", "ttft:100000",
                       "--json")  # fmt: skip
    d = json.loads(out)
    assert d["request_goodput"] == pytest.approx(d["request_throughput"])  # 100 s: every request is within it
    assert d["burstiness"] == 1.0
    code, out, _ = run(capsys, "bench", "--request-rate", "2", "--num-prompts", "20", "--json")
    assert json.loads(out)["request_goodput"] is None  # not asked for: null, as the tool writes it
    _, out, _ = run(capsys, "bench", "--request-rate", "2", "--num-prompts", "20")
    assert "Request goodput" not in out


@pytest.mark.parametrize("args, flag", [(["--goodput", "ttft"], "--goodput"), (["--goodput", "itl:5"], "--goodput"),
                                        (["--goodput", "tpot:-3"], "--goodput"), (["--burstiness", "0"], "--burstiness"),
                                        (["--burstiness", "nan"], "--burstiness")])  # fmt: skip
def test_bench_bad_goodput_or_burstiness_names_the_flag(capsys, args, flag):
    code, _, err = run(capsys, "bench", *args)
    assert code == 2 and err.startswith(f"error: {flag}: ") and len(err.strip().splitlines()) == 1, err


def test_no_command_names_the_commands(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plan, bench, search, reconcile, models or gpus" in err


def test_models_and_gpus_list_as_json(capsys, catalog):
    assert main(["models", "--json"], catalog) == 0
    models = json.loads(capsys.readouterr().out)
    assert {m["id"] for m in models} == set(catalog.models)
    llama = next(m for m in models if m["id"] == "llama-3.1-8b")
    assert 8.0e9 < llama["params"] < 8.1e9  # Meta's 8.03 B
    assert main(["gpus", "--json"], catalog) == 0
    gpus = {g["id"]: g for g in json.loads(capsys.readouterr().out)}
    assert set(gpus) == set(catalog.gpus) and gpus["h100-sxm"]["memory_bandwidth_gb_per_s"] == 3350


def test_bench_json_says_when_the_simulation_stopped_early(capsys):
    """8,000-token prompts in 256-token chunks at 256 clients hit the simulation's work cap: the JSON says so (it
    said completed 470 of 5,000 and nothing else)."""
    args = ("bench", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--random-input-len", "8000", "--random-output-len",
            "100", "--max-num-batched-tokens", "256", "--max-model-len", "8448", "--max-concurrency", "256",
            "--num-prompts", "5000", "--json")  # fmt: skip
    code, out, _ = run(capsys, *args)
    d = json.loads(out)
    assert code == 0 and d["stopped_early"] is True and d["completed"] < d["num_prompts"] == 5000
    code, out, _ = run(capsys, "bench", "--max-concurrency", "2", "--num-prompts", "10", "--json")
    assert json.loads(out)["stopped_early"] is False
