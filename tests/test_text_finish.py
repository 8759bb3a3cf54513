"""Issue 14 on the command line and in the exports: one formatting layer, a plan that cannot run said plainly, every
input visible in the text and the JSON (or a note saying why not), the Markdown title unescaped."""

from __future__ import annotations

import json
import re

import pytest
from conftest import scenario

from boundary import fmt
from boundary.cli import main
from boundary.markdown import markdown_report
from boundary.text import render_text
from calc.evaluate import evaluate, json_safe
from calc.scenario import Scenario


def plan_text(capsys, *args) -> str:
    assert main(["plan", *args]) == 0
    return capsys.readouterr().out


# --- the formatting layer --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [
    (15.0776, "15.1"), (956.0603, "956"), (8031.2447, "8,031"), (0.000123, "0.000123"), (9.996, "10.0"),
    (8.6e-84, "< 0.000001"), (-3e-9, "> −0.000001"), (1.2e-6, "0.00000120"),  # a goodput of 8.6e-84 req/s is none
])  # fmt: skip
def test_significant_digits_with_separators(value, text):
    assert fmt.sig(value) == text


def test_counts_costs_and_absent_values():
    assert fmt.count(19173961) == "19,173,961" and fmt.count(13336) == "13,336"
    assert fmt.money(0.1234, "EUR") == "0.123 EUR"
    assert fmt.money(None, None).startswith("— (") and fmt.pct(float("inf")).startswith("— (")
    assert fmt.yes_no(True) == "yes" and fmt.yes_no(None) == "—"
    assert fmt.seconds(0.01437) == "14.4 ms" and fmt.seconds(5.325) == "5.33 s" and fmt.size(57_344) == "56.0 KiB"


# --- a plan that cannot run ------------------------------------------------------------------------------------------


def test_the_cli_says_what_is_missing_and_shows_no_latency(capsys):
    out = plan_text(capsys, "--model", "llama-3.1-70b")
    assert "inf%" not in out and "-111" not in out and "−111" not in out  # the 'pool occupancy inf%'
    assert "cannot run" in out and "What is missing (per GPU)" in out and "short" in out
    assert "Smallest changes that fit" in out and "tensor_parallel_size=8" in out
    for absent in ("TTFT", "TPOT", "per million output tokens", "req/s per replica", "Predicted `vllm bench serve"):
        assert absent not in out, absent
    assert "No latency, SLO, cost or benchmark figures: the engine cannot start" in out


def test_the_markdown_export_of_a_plan_that_cannot_run(catalog):
    md = markdown_report(evaluate(scenario(model="llama-3.1-70b"), catalog))
    assert "cannot run" in md and "What is missing" in md and "TTFT" not in md and "Cost per million" not in md


def test_the_markdown_title_is_not_backslash_escaped(catalog):
    md = markdown_report(evaluate(scenario(), catalog), "http://localhost:8501/")
    assert md.splitlines()[0] == "# Capacity plan: Qwen2.5-7B-Instruct on NVIDIA GeForce RTX 4090"
    assert "\\," not in md.splitlines()[2] and "\\(" not in md.splitlines()[2]  # the verdict line reads cleanly


def test_cli_text_has_no_unfinished_numbers(capsys):
    out = plan_text(capsys, "--request-rate", "20", "--gpu-hour-price", "2")
    for line in out.splitlines():
        if line.startswith("note:"):
            continue
        assert not re.search(r"(?<![\w.,=/-])\d{5,}(?![\w,])", line), line
        assert not re.search(r"\b(None|True|False|nan|inf)\b", line), line


# --- every input visible, or a note says why not --------------------------------------------------------------------

# field: (value, baseline) — a value that should change the plan of that baseline
CHANGES = {
    "tensor_parallel_size": ("2", {}), "pipeline_parallel_size": ("2", {}), "data_parallel_size": ("2", {}),
    "dtype": ("fp8", {}),
    "kv_cache_dtype": ("fp8", {}), "gpu_memory_utilization": ("0.85", {}), "block_size": ("32", {}),
    "max_model_len": ("16384", {}), "max_num_seqs": ("8", {}), "engine": ("sglang", {}), "engine_version": ("0.8", {}),
    "max_num_batched_tokens": ("4096", {}), "enforce_eager": ("true", {}), "estimate_cudagraphs": ("false", {}),
    "kv_cache_memory_bytes": ("3000000000", {}), "weights_memory_bytes": ("15000000000", {}),
    "activation_memory_bytes": ("2000000000", {}), "non_torch_memory_bytes": ("300000000", {}),
    "cudagraph_memory_bytes": ("900000000", {}), "input_len": ("2048", {}), "output_len": ("512", {}),
    "concurrency": ("32", {}), "request_rate": ("20", {}), "mfu": ("0.3", {}), "mbu": ("0.5", {}),
    "queue_s": ("0.05", {}), "endpoint_type": ("openai-chat", {}), "frontend_overhead_s": ("0.07", {}), "measured_itl_s": ("0.02", {}),
    "measured_prefill_s": ("0.1", {}), "measured_itl_p99_s": ("0.06", {"measured_itl_s": "0.02"}),
    "measured_running_batch": ("15.39", {}), "kv_transfer_gb_per_s": ("50", {}), "slo_ttft_s": ("0.2", {}),
    "slo_tpot_s": ("0.02", {}), "conformance_quota": ("0.5", {}), "latency_sigma": ("0.5", {}),
    "sim_ttft_median_s": ("0.3", {}), "sim_tpot_median_s": ("0.03", {}), "sim_window_s": ("20", {}),
    "gpu_hour_price": ("2.5", {}), "currency": ("EUR", {"gpu_hour_price": "2"}), "fanout": ("10", {}),
    "chain_calls": ("5", {}), "turns": ("8", {}), "tokens_per_turn": ("300", {}), "shared_prefix_len": ("512", {}),
    "document_len": ("4096", {}), "document_queries": ("3", {}), "host_link_gb_per_s": ("25", {}),
    "ssd_gb_per_s": ("5", {}), "network_gb_per_s": ("25", {}), "host_cache_gib": ("32", {}),
    "ssd_cache_gib": ("512", {}), "remote_cache_gib": ("1024", {}), "swap_overlap": ("false", {}),
    "memory_gib": ("20", {}), "memory_bandwidth_gb_per_s": ("2000", {}), "peak_tflop_per_s": ("300", {}),
    "scaleup_link_gb_per_s": ("50", {}), "num_hidden_layers": ("24", {}), "num_key_value_heads": ("2", {}),
    "head_dim": ("64", {}), "disaggregated": ("true", {}),
    "disable_hybrid_kv_cache_manager": ("true", {"model": "gemma-3-27b", "gpu": "h100-sxm"}),
    "mamba_ssm_cache_dtype": ("float16", {"model": "nemotron-h-8b", "gpu": "h100-sxm"}),
    "enable_expert_parallel": ("true", {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "tensor_parallel_size": "4"}),
    "enable_prefix_caching": ("true", {"model": "qwen3-next-80b-a3b", "gpu": "h200"}),
    "decode_context_parallel_size": ("8", {"model": "deepseek-v3", "gpu": "h200", "tensor_parallel_size": "8"}),
    "speculative_method": ("mtp", {"model": "glm-4.5-air", "gpu": "h200", "tensor_parallel_size": "2"}),
    "num_speculative_tokens": ("5", {"model": "qwen3-next-80b-a3b", "gpu": "h200", "speculative_method": "ngram"}),
    "language_model_only": ("true", {"model": "qwen3-vl-30b-a3b-instruct", "gpu": "h100-sxm"}),
    "draft_acceptance_rate": ("0.6", {"model": "glm-4.5-air", "gpu": "h200", "tensor_parallel_size": "2",
                                      "speculative_method": "mtp"}),
}  # fmt: skip
SEARCH_SPACE = {name for name in Scenario.model_fields if name.startswith("search_")}
"""The search space of `python -m calc search` and the Find a deployment tab (tests/test_cli_search.py), not of a plan."""
NO_EFFECT_HERE = {"disable_hybrid_kv_cache_manager": "true", "mamba_ssm_cache_dtype": "float32",
                  "currency": "EUR", "measured_itl_p99_s": "0.06"}  # fmt: skip


def _plan(catalog, data: dict):
    r = evaluate(Scenario.model_validate(data), catalog)
    d = json_safe(r.to_dict())
    d.pop("scenario")
    return render_text(r), json.dumps(d, sort_keys=True, default=str)


def test_the_table_names_every_field():
    assert set(CHANGES) | {"model", "gpu", "custom_model"} | SEARCH_SPACE == set(Scenario.model_fields)


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_every_input_changes_the_cli_text_and_the_json(catalog, field):
    """Issue 14: --fanout and --sim-* changed nothing in the CLI; every field must show in the text and the JSON."""
    value, base = CHANGES[field]
    base = {"request_rate": "20", **base} if field != "request_rate" else base
    text0, json0 = _plan(catalog, base)
    text1, json1 = _plan(catalog, {**base, field: value})
    assert text1 != text0, f"{field}: the CLI text does not change"
    assert json1 != json0, f"{field}: the JSON does not change"


@pytest.mark.parametrize("field", sorted(NO_EFFECT_HERE))
def test_an_input_without_effect_here_says_why(catalog, field):
    r = evaluate(Scenario.model_validate({field: NO_EFFECT_HERE[field]}), catalog)
    assert any(n.startswith(field) for n in r.notes), r.notes
    assert any(line.startswith(f"note: {field}") for line in render_text(r).splitlines())


def test_the_cli_text_has_the_sections_the_page_has(capsys):
    out = plan_text(capsys, "--request-rate", "20")
    for head in ("Predicted `vllm bench serve --max-concurrency 16", "SLOs, replicas and cost", "Tails (what averages hide)",
                 "Simulation (", "Beyond the GPU"):  # fmt: skip
        assert head in out, head
    assert "p99.95" in out and "hedging" in out and "chain of 20 sequential calls" in out and "29.85 ms" in out
    assert re.search(r"at \d[\d,.]* requests in flight per replica", out)


def test_a_fractional_measured_batch_reproduces_the_seeds_floor(capsys):
    # 15.39 running at a 384-token context: floor 14.37 ms, 87.2 % of the measured 16.47 ms ITL p50
    out = plan_text(capsys, "--input-len", "256", "--measured-running-batch", "15.39", "--measured-itl-s", "0.01647")
    assert "at the measured 15.39 running: floor 14.4 ms is 87.2% of the measured ITL 16.5 ms" in out


def test_the_report_json_carries_the_benchmark_summary(catalog):
    d = json_safe(evaluate(scenario(concurrency=8), catalog).to_dict())
    b = d["benchmark"]
    assert b["num_prompts"] == 200 and b["max_concurrency"] == 8  # max(200, 10 · 8)
    for key in ("mean_ttft_ms", "median_tpot_ms", "p99_itl_ms", "mean_e2el_ms", "request_throughput",
                "output_throughput"):  # fmt: skip
        assert key in b
    assert b["completed"] == 200
    assert d["shortfall"]["serves"] is True


def test_a_max_model_len_beyond_the_models_positions_is_a_plan_that_cannot_run(capsys, catalog):
    """vLLM refuses to start when max_model_len exceeds max_position_embeddings (Llama-3.1-8B: 131,072), whatever
    the pool holds: no latency, no benchmark, null figures in the JSON, the model's limit as the fix, and a search
    that recommends nothing and says why."""
    where = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-model-len", "300000", "--input-len", "25000",
             "--output-len", "100", "--request-rate", "1")  # fmt: skip
    out = plan_text(capsys, *where)
    assert ("cannot run — vLLM refuses to start: max_model_len 300,000 exceeds the model's maximum, "
            "max_position_embeddings 131,072") in out  # fmt: skip
    assert "max_model_len=131072 (the model's maximum)" in out  # the first of the smallest changes
    for absent in ("TTFT", "TPOT", "per million output tokens", "Predicted `vllm bench serve"):
        assert absent not in out, absent
    assert main(["plan", *where, "--json"], catalog=catalog) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["shortfall"]["engine_starts"] is False and d["ttft_s"] is None and d["latency"] is None
    assert d["prefill_floor_s"] > 0  # the hardware's floor stays
    assert main(["bench", *where[:6], "--random-input-len", "25000", "--random-output-len", "100", "--max-concurrency",
                 "1", "--num-prompts", "5", "--json"], catalog=catalog) == 0  # fmt: skip
    b = json.loads(capsys.readouterr().out)
    assert b["median_ttft_ms"] is None and "max_position_embeddings" in b["not_served"]
    assert main(["search", *where[:2], "--gpus", "h100-sxm", *where[4:], "--json"], catalog=catalog) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["cheapest"] is None and s["configs_meeting_slo"] == 0
    assert s["why_not_counts"] == {"vLLM refuses to start: max_model_len exceeds the model's maximum (max_position_embeddings, rope scaling)":
                                   s["configs_evaluated"]}  # fmt: skip


def test_a_pool_the_gpu_cannot_hold_is_refused_by_the_search_too(capsys, catalog):
    """kv_cache_memory_bytes of 1 PB on a 24 GB card: the plan says vLLM cannot allocate it (issue 16), and the search
    rules out every configuration for it rather than recommending one."""
    assert main(["search", "--kv-cache-memory-bytes", str(10**15), "--gpus", "rtx-4090", "--json"], catalog=catalog) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cheapest"] is None and d["why_not_counts"] == {
        "vLLM refuses to start: kv_cache_memory_bytes and the weights exceed the GPU's memory": d["configs_evaluated"]}
    # 5 GB beside Llama-3.1-8B's 16 GB of bf16 weights fits a 24 GB card: nothing refused for it
    assert main(["search", "--model", "llama-3.1-8b", "--kv-cache-memory-bytes", str(5 * 10**9), "--gpus", "rtx-4090",
                 "--json"], catalog=catalog) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["cheapest"] is not None


def test_the_default_context_follows_a_shorter_model_as_vllm_does(capsys, catalog):
    """max_model_len left at its default (8,192) is 'not set': Llama-2-7B (4,096 positions) is planned at 4,096, as
    `vllm serve` without --max-model-len runs it, and says so; set beyond it, vLLM refuses to start."""
    r = evaluate(Scenario(model="llama-2-7b"), catalog)
    assert r.scenario.max_model_len == 4096 and r.shortfall.engine_starts
    assert r.notes[0].startswith("max_model_len 4,096: the model's own maximum")
    assert not evaluate(Scenario(model="llama-2-7b", max_model_len=16384), catalog).shortfall.engine_starts
    assert evaluate(Scenario(model="llama-3.1-8b"), catalog).scenario.max_model_len == 8192  # 131,072: untouched


def test_the_blocks_formula_of_a_pool_the_weights_overrun_is_zero(catalog):
    """Llama-3.1-70B on one RTX 4090: 23.68 × 0.9 − 131.42 − … = −111.68 GiB available; the formula showed
    −22,873 blocks beside a headline of 0."""
    r = evaluate(scenario(model="llama-3.1-70b"), catalog)
    text = r.formulas["GPU blocks"]
    assert r.memory.num_gpu_blocks == 0 and text.startswith("max(0, floor(") and text.endswith("= 0 blocks")


def test_a_missing_cost_says_whether_the_price_or_the_replica_count_is_missing(capsys, catalog):
    """Llama-3.1-70B on two H100s at 2,000 + 500 tokens meets the SLOs at no load, so no replica count exists for
    10 req/s; the H100's price (3.2 USD per GPU-hour) is known, so 'no price' was the wrong reason."""
    r = evaluate(Scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=2, input_len=2000,
                          output_len=500, request_rate=10), catalog)  # fmt: skip
    assert r.fleet.replicas is None and r.fleet.price_per_gpu_hour is not None
    text = plan_text(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tensor-parallel-size", "2",
                     "--input-len", "2000", "--output-len", "500", "--request-rate", "10")  # fmt: skip
    assert "cost: — (no replica count: " in text and "no price" not in text


def test_a_rate_of_exactly_n_capacities_needs_n_replicas(catalog):
    """rate = 100 × capacity is 100.00000000000001 capacities in floating point: 100 replicas, not 101."""
    cap = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog).fleet.capacity.rps
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", request_rate=100 * cap), catalog)
    assert r.fleet.replicas == 100
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", request_rate=100 * cap * 1.001), catalog)
    assert r.fleet.replicas == 101


def test_pipeline_parallelism_says_its_speed_is_not_modelled(catalog):
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", pipeline_parallel_size=2), catalog)
    assert any(n.startswith("pipeline_parallel_size 2: memory is split") for n in r.notes)
    assert not any("pipeline_parallel_size" in n for n in evaluate(Scenario(model="llama-3.1-8b"), catalog).notes)


def test_bench_help_says_what_its_request_rate_does(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--request-rate R Poisson arrivals at R requests/s" in text and "sets replicas" not in text


def test_a_token_budget_below_max_num_seqs_is_a_refusal_as_vllm_gives_it(capsys, catalog):
    """vLLM's SchedulerConfig raises 'max_num_batched_tokens (128) must be greater than or equal to max_num_seqs
    (256)': the plan said it fits, and the search recommended `vllm serve … --max-num-batched-tokens 16`."""
    r = evaluate(Scenario(max_num_batched_tokens=128), catalog)  # max_num_seqs 256 by default
    assert not r.shortfall.engine_starts and "must be at least max_num_seqs (256)" in r.fit.reasons[0]
    assert evaluate(Scenario(max_num_batched_tokens=128, engine="sglang"), catalog).shortfall.engine_starts
    assert main(["search", "--max-num-batched-tokens", "16,2048", "--max-num-seqs", "256", "--gpus", "h100-sxm",
                 "--json"], catalog=catalog) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert "--max-num-batched-tokens 2048" in d["cheapest"]["serve_command"]
    assert d["why_not_counts"]["vLLM refuses to start: max_num_batched_tokens is below max_num_seqs"] >= 1


@pytest.mark.parametrize(("quota", "text"), [(0.9, "90%"), (0.999, "99.9%"), (0.999999999999, "99.9999999999%"),
                                             (0.8126183245862828, "81.3%")])  # fmt: skip
def test_a_quota_below_one_never_reads_as_100_percent(quota, text):
    """`calc search --conformance-quota 0.999999999999` said 'for 100% of requests'."""
    assert fmt.quota(quota) == text


def test_the_plan_states_a_quota_as_the_search_does(capsys):
    """A quota of 0.9995: the plan said 'the most that keeps 100% within both SLOs' where the search says 99.95%."""
    text = plan_text(capsys, "--gpu", "h100-sxm", "--request-rate", "2", "--conformance-quota", "0.9995")
    assert "keeps 99.95% within both SLOs" in text and "keeps 100%" not in text
    text = plan_text(capsys, "--gpu", "h100-sxm", "--request-rate", "2", "--conformance-quota", "0.999999999999")
    assert "(quota 99.9999999999%)" in text and "quota 100%" not in text


def test_a_precision_without_a_kernel_is_a_refusal_in_the_plan_as_in_the_search(catalog):
    """fp8 weights on a T4 (Turing, compute capability 7.5): vLLM 'The quantization method fp8 is not supported for
    the current GPU. Minimum capability: 80'. The plan said fits, and suggested fp8 on a T4; the search excluded it."""
    r = evaluate(Scenario(gpu="t4", model="qwen2.5-7b-instruct", dtype="fp8"), catalog)
    assert not r.serves and r.fit.reasons[0] == ("vLLM refuses to start: no fp8 weight kernel on turing accelerators "
                                                 "(vLLM's quantization table)")  # fmt: skip
    r = evaluate(Scenario(gpu="t4", model="qwen2.5-7b-instruct", concurrency=64, input_len=4000), catalog)
    assert r.suggestions and not any(x.fields.get("dtype") == "fp8" for x in r.suggestions)
    sg = evaluate(Scenario(gpu="t4", model="llama-3.2-1b", dtype="bf16", engine="sglang"), catalog)
    assert sg.fit.reasons[0].startswith("SGLang refuses to start: Bfloat16")


def test_a_budget_below_max_num_seqs_gets_changes_that_carry_the_budget_fix(catalog):
    """max_num_batched_tokens 128 under max_num_seqs 256 refuses to start; 100 requests of 1,280 tokens do not fit an
    RTX 4090 either, so each change that fits also raises the budget to 256, the least vLLM accepts."""
    r = evaluate(Scenario(max_num_batched_tokens=128, concurrency=100), catalog)
    assert r.suggestions and all(x.fields["max_num_batched_tokens"] == 256 for x in r.suggestions)
    assert all(x.change.endswith("+ max_num_batched_tokens=256") for x in r.suggestions)
    fixed = evaluate(Scenario(max_num_batched_tokens=128), catalog)  # 16 requests fit once vLLM starts
    assert [(x.change, x.fields) for x in fixed.suggestions] == [
        ("max_num_batched_tokens=256 (what vLLM needs to start)", {"max_num_batched_tokens": 256})]


def test_a_precision_without_a_kernel_gets_the_checkpoints_own_or_a_gpu_that_has_one(catalog):
    """fp8 weights on a T4: Llama-3.2-1B fits once served in its own precision (dtype=auto, fp16 there); Llama-3.1-8B
    (16 GB in 16 bits, 14.75 GiB card) needs more, and an A10 (Ampere, 22.14 GiB: fp8 weight-only through Marlin)
    serves its fp8 as set."""
    small = evaluate(Scenario(model="llama-3.2-1b", gpu="t4", dtype="fp8"), catalog)
    assert [x.fields for x in small.suggestions] == [{"dtype": "auto"}]
    big = evaluate(Scenario(model="llama-3.1-8b", gpu="t4", dtype="fp8"), catalog)
    assert all(x.fields.get("dtype") == "auto" or x.fields.get("gpu") == "a10" for x in big.suggestions)
    assert any(x.change == "gpu=a10 (22.14 GiB), dtype=fp8 kept" and "dtype" not in x.fields for x in big.suggestions)


# --- from the 2026-12-05 user audits -------------------------------------------------------------------------------
def test_a_tensor_parallel_size_the_model_refuses_names_the_sizes_it_accepts(capsys):
    """Qwen2.5-7B: 28 query heads, 4 KV heads. TP t passes when 28 % t == 0 and t and 4 divide one another:
    1, 2, 4 (divide 4) and 28 (4 divides it); 7 and 14 divide 28 but neither divides nor is divided by 4."""
    assert main(["plan", "--tensor-parallel-size", "3"]) == 2
    assert capsys.readouterr().err.strip().endswith("this model accepts 1, 2, 4, 28")


def test_a_plan_that_cannot_run_carries_no_speed_notes(catalog):
    """The TPOT-extrapolation note sat on a page that shows no TPOT (Llama-3.1-70B on two H100s, 64 requests of
    33,792 tokens, max_model_len 65,536: vLLM cannot start); with short requests the plan runs and the note is back
    (Llama-3.1-8B on one H100: 64 in flight, past the 32 the fixed costs were fitted on)."""
    kw = dict(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=2, concurrency=64)
    stuck = evaluate(Scenario(**kw, input_len=32_768, output_len=1_024, max_model_len=65_536), catalog)
    runs = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", concurrency=64), catalog)
    assert not stuck.serves and not any("fitted on runs of at most" in n for n in stuck.notes)
    assert runs.serves and any("fitted on runs of at most" in n for n in runs.notes)


def test_a_rate_far_below_capacity_reads_as_a_multiple(capsys):
    """1e-6 req/s against one replica's capacity of ~2.8 req/s: '…× the rate', not a percentage with nine digits."""
    text = plan_text(capsys, "--request-rate", "0.000001")
    assert re.search(r"capacity [\d,]+× the rate", text) and "% above the rate" not in text
    assert "% above the rate" in plan_text(capsys, "--request-rate", "2")


def test_a_quantized_checkpoint_in_a_serve_command_is_a_shell_variable(catalog):
    """The search's int4 pick printed `vllm serve 'an INT4 (AWQ or GPTQ) checkpoint of …'`, which no shell runs."""
    from calc.search import search
    from calc.search_rows import serve_commands

    s = Scenario(model="llama-3.1-8b", search_gpus="a100-80gb-sxm", search_dtype="int4",
                 search_tensor_parallel_size="1", search_pipeline_parallel_size="1", search_disaggregated=False)  # fmt: skip
    r = search(s, catalog)
    comment, cmd = serve_commands(r, r.top(1)[0])[0][1].splitlines()[-2:]
    assert comment.startswith("# CHECKPOINT={an INT4 (AWQ or GPTQ) checkpoint of meta-llama/Llama-3.1-8B")
    assert cmd.startswith('vllm serve "$CHECKPOINT" --tensor-parallel-size 1')


def test_vllms_own_batch_defaults_on_a_large_gpu_are_named(catalog):
    """vLLM's arg_utils: `vllm serve` on a GPU of 70 GiB or more that is not an A100 starts with an 8,192-token step
    and 1,024 sequences; the planner's defaults (DESIGN: 2,048 and 256) are a server started with those flags. The
    note says so with the KV cache vLLM's own defaults leave: fewer tokens, the larger step's activations taking room."""
    h100 = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog)
    (note,) = [n for n in h100.notes if n.startswith("vllm serve on this GPU")]
    theirs = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", max_num_batched_tokens=8192, max_num_seqs=1024),
                      catalog).memory.kv_cache_tokens  # fmt: skip
    assert f"{theirs:,} tokens of KV cache rather than {h100.memory.kv_cache_tokens:,}" in note
    assert theirs < h100.memory.kv_cache_tokens and "8,192" in note and "1,024" in note
    for quiet in (dict(gpu="a100-80gb-sxm"), dict(gpu="rtx-4090"), dict(gpu="h100-sxm", max_num_seqs=512),
                  dict(gpu="h100-sxm", engine="sglang")):  # fmt: skip
        r = evaluate(Scenario(model="llama-3.1-8b", **quiet), catalog)
        assert not any(n.startswith("vllm serve on this GPU") for n in r.notes), quiet


def test_sglangs_own_chunk_size_on_a_large_gpu_is_named(catalog):
    """SGLang's server_args: --chunked-prefill-size by memory class (2,048 under 35 GiB, 4,096 under 60, 8,192 under
    160, 16,384 above); the plan's prompt chunk is max_num_batched_tokens (2,048 by default). An H100 (79.19 GiB)
    starts SGLang at 8,192, an RTX 4090 (23.68 GiB) at 2,048: a note on the first only, none once the flag is set."""
    h100 = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang"), catalog)
    (note,) = [n for n in h100.notes if n.startswith("SGLang on this GPU")]
    assert "--chunked-prefill-size 8,192" in note and "at 2,048 tokens (max_num_batched_tokens), as a server started with --chunked-prefill-size 2048" in note
    # and its running-request cap from this pool (456,144 tokens): min(456,144 // 2, clamp(⌊456,144 / 8,192 · 512⌋ =
    # 28,509, 2,048, 4,096)) = 4,096 (model_runner max_num_reqs, tp_worker)
    assert h100.memory.pool_token_capacity == 456_144 and min(456_144 // 2, min(max(456_144 * 512 // 8192, 2048), 4096)) == 4096
    assert "--max-running-requests 4,096 when it is not given" in note
    for quiet in (dict(gpu="rtx-4090", max_num_seqs=128), dict(gpu="h100-sxm", max_num_batched_tokens=4096, max_num_seqs=128)):
        r = evaluate(Scenario(model="llama-3.1-8b", engine="sglang", **quiet), catalog)
        assert not any(n.startswith("SGLang on this GPU") for n in r.notes), quiet
