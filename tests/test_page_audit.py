"""What a page audit of 2026-12-06 found and the page now does: a benchmark's opening burst named beside its p99
TTFT, capacity beside a closed loop that meets the quota, a rejected upload said on the page, a rate shown as typed."""

import pytest
from test_page_finish import run

from calc.evaluate import evaluate
from calc.scenario import Scenario


def test_a_first_wave_p99_ttft_is_named(catalog):
    """The benchmark table's p99 TTFT at C = 128 (4 s) sat beside an SLO tab at 100 % within 500 ms: the tool starts
    its C clients together, and 128 prompts of 1,024 tokens at 2,048 a step are 64 prefill steps before the last first
    token — the opening burst, not steady traffic (a page audit, 2026-12-06)."""
    from boundary.view_bench import benchmark_lines

    r = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", concurrency=128, request_rate=40), catalog)
    d = r.benchmark.bench_summary()
    steady = r.benchmark_steady_p99_ttft_s
    assert steady is not None and steady < d["p99_ttft_ms"] / 1e3 / 2
    assert 128 * 1024 / 2048 * r.latency.step.step_s(2048, 0, 0, 0) < d["p99_ttft_ms"] / 1e3  # 64 prefill steps
    (line,) = [x for x in benchmark_lines(r) if "first wave" in x]
    assert line.startswith("p99 TTFT ") and "past the first 128 requests the p99 is" in line
    one = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", concurrency=1), catalog)
    assert not [x for x in benchmark_lines(one) if "first wave" in x]

def test_capacity_below_a_closed_loop_that_meets_the_quota_says_why(catalog):
    """At 128 in flight the headline read 'Within both SLOs 91.3 %' beside a capacity of '126 requests … the most that
    keeps 90 %': both right (a closed loop vs arrivals at random), said only in a tooltip (a page audit, 2026-12-06)."""
    from boundary.view import capacity_text

    r = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", concurrency=128), catalog)
    assert r.fleet.capacity.concurrency < 128 <= r.scenario.concurrency and r.conformance.conformance >= 0.9  # the case
    assert "where a closed loop of 128 clients meets both SLOs" in capacity_text(r)
    low = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", concurrency=8), catalog)
    assert "closed loop of" not in capacity_text(low)

def test_a_slider_shows_a_rate_as_its_box_does():
    from ui.widgets import _slider_label

    assert [_slider_label(v, "unset") for v in (40.0, 0.5, 1000.0, 40.5, None, 2048)] == \
        ["40", "0.5", "1,000", "40.5", "unset", "2k"]  # fmt: skip


def test_a_rejected_upload_is_said_on_the_page_too():
    """A config.json that is not valid JSON was named only in the sidebar, between two inputs, while the page kept the
    previous model as if the upload had worked (a page audit, 2026-12-06)."""
    at = run()
    at.session_state["upload_error"] = "config.json: not valid JSON (Expecting value: line 1 column 1 (char 0))"
    at.run()
    main = [w.value.replace("\\", "") for w in at.main.warning]  # Markdown-escaped (boundary.urlstate.plain)
    assert any(v.startswith("The uploaded config.json was not used (the sidebar says why): config.json: not valid")
               for v in main), main  # fmt: skip
    assert any("The uploaded config.json was not used" in w.value for w in at.sidebar.warning)



def test_a_planner_limit_is_not_an_empty_fit(catalog):
    """SGLang with speculation: the planner does not plan it (calc.speculative), which the tiles showed as a fit of 0
    and no longest request beside a 403,296-token pool (a page audit, 2026-12-06)."""
    from boundary import view

    r = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", engine="sglang", speculative_method="ngram"), catalog)
    assert view.verdict(r).startswith("16 × 1,280 tokens: not planned — speculative decoding is planned under vLLM")
    tiles = {m.label: m.value for m in view.memory_metrics(r)}
    assert tiles["Fit at this length"] == tiles["Longest @ C=16"] == "— (not planned)"


def test_the_defaults_note_counts_tokens_as_the_tile_does(catalog):
    """A hybrid layout (Llama 4: 12 full + 36 chunked layers, four groups to a block id): the vLLM defaults note
    quoted blocks × block_size, four times the "KV cache (tokens)" tile beside it."""
    scout = evaluate(Scenario(model="llama-4-scout-17b-16e", gpu="h100-sxm", tensor_parallel_size=4), catalog)
    (note,) = [n for n in scout.notes if n.startswith("vllm serve on this GPU")]
    assert f"rather than {scout.memory.kv_cache_tokens:,} " in note
    assert f"{scout.memory.pool_token_capacity:,}" not in note


def test_a_failed_start_of_another_model_offers_no_fixes_or_reproduction():
    """vllm#32105 (GLM-4.7-FP8 at PP 8 on A100s, a failed start) held against the page's Qwen2.5-7B: its 'KV needed
    for one 202,752-token request' does not follow from Qwen2.5-7B's bytes per token, yet the tab said the pool was
    reproduced and listed fixes for Qwen2.5-7B on an RTX 4090 (a page audit, 2026-12-06)."""
    from pathlib import Path

    from test_app import run as run_app

    log = (Path(__file__).parent / "data/vllm_logs/vllm-32105-glm-4.7-fp8-pp8-a100-fail.log").read_text()
    at = run_app(tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(log)
    at.run()
    assert not at.exception
    assert any("another model" in w.value or "not a shipped model" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not any("reproduces" in i.value for i in at.info) and not any("To make it fit" in m.value for m in at.markdown)
    assert not any(b.key == "adopt_btn" for b in at.button)


def test_a_log_whose_pool_and_weights_exceed_this_gpu_is_flagged_and_not_adopted():
    """LMCache#1739's Qwen3-14B (config uploaded) on the page's RTX 4090: 6.51 GiB of KV beside 27.5 GiB of weights
    cannot share a 23.68 GiB card, and Adopt gave 'cannot run' (a page audit, 2026-12-06)."""
    from pathlib import Path

    from test_app import run as run_app

    data = Path(__file__).parent / "data/vllm_logs"
    at = run_app(tab="Check a vLLM log")
    at.file_uploader(key="upload").upload("config.json", (data / "qwen3-14b/config.json").read_bytes(),
                                          "application/json").run()  # fmt: skip
    at.text_area(key="vllm_log_text").input((data / "lmcache-1739-qwen3-14b.log").read_text())
    at.run()
    assert not at.exception
    assert any(w.value.startswith("WRONG GPU") for w in at.warning), [w.value for w in at.warning]
    assert not any(b.key == "adopt_btn" for b in at.button)


def test_the_beyond_tab_says_what_a_hybrid_without_prefix_caching_reuses(catalog):
    """Qwen3-Next on two H200s (prefix caching off, vLLM's default for a hybrid): the tab said 13,750 → 2,500 prefill
    tokens (5.5× fewer) beside a last-turn TTFT that did not move; a 0 GiB tier was 'worth keeping' (a page audit,
    2026-12-06). 10 turns of 250 tokens prefill 250 · (1 + 2 + … + 10) = 13,750 tokens without reuse."""
    from boundary.view_fleet import beyond_lines, tiers_table

    assert 250 * sum(range(1, 11)) == 13_750
    r = evaluate(Scenario(model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2, ssd_cache_gib=0), catalog)
    lines = beyond_lines(r)
    assert any(x.startswith("no prefix is reused here") for x in lines)
    assert any("13,750 prefill tokens, none reused" in x for x in lines)
    assert r.prefix.document_ttft_repeat_s == r.prefix.document_ttft_first_s
    ssd = next(row for row in tiers_table(r).rows if row[0] == "local NVMe SSD")
    assert ssd[4] == "no room (0 GiB)" and ssd[5] == "0 tokens"
    on = evaluate(Scenario(model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2, enable_prefix_caching=True),
                  catalog)  # fmt: skip
    assert on.prefix.conversation_tokens_with_reuse == 250 * 10 and not on.prefix.reuse_note


def test_a_shared_prompt_saves_blocks_per_rank_and_says_so(catalog):
    """At DP 2 × TP 4 and 64 in flight each rank holds 32: the line said C = 64 beside one rank's 992 blocks
    (32 · 32 − 32 for a 512-token prompt of 32 blocks shared by 32 requests)."""
    from boundary.view_fleet import beyond_lines

    r = evaluate(Scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, data_parallel_size=2,
                          concurrency=64, shared_prefix_len=512), catalog)  # fmt: skip
    assert r.prefix.blocks_saved == 32 * 32 - 32 == 992
    assert any("992 blocks saved at C=32 (each data-parallel rank's pool)" in x for x in beyond_lines(r))


def test_the_swap_chart_marks_this_scenario_on_its_own_curve(catalog):
    """Without swap overlap the curve counts a swap out and back; the star was the one-way ratio, twice as high."""
    import charts

    r = evaluate(Scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, swap_overlap=False), catalog)
    spec = charts.swap_ratio(r).to_dict()
    star = next(t for t in spec["data"] if t.get("name") == "this scenario")
    assert star["y"][0] == pytest.approx(r.offload.swap_recompute_ratio_both_ways, rel=1e-12)  # recompute / (2 · one way)


def test_the_log_tab_names_sidebar_fields_and_an_uploaded_config():
    from boundary.view_compare import changed_inputs, page_note

    assert page_note("max_model_len is not in the log: using 8192 (pass --max-model-len)") == \
        "max_model_len is not in the log: using 8192 (set max_model_len in the sidebar)"
    a, b = Scenario(model="custom", custom_model="eNrtVD1PxDAM"), Scenario(model="qwen3-32b")
    assert changed_inputs(a, b) == "model: custom → qwen3-32b, custom_model: an uploaded config.json → unset"


def test_the_compare_table_marks_a_cost_priced_outside_the_slos(catalog):
    """B at 64 in flight is 45 % cheaper per token at 34 % within the SLOs: the tile said so, the table did not."""
    from boundary.view_compare import compare_table

    a, b = evaluate(Scenario(), catalog), evaluate(Scenario(concurrency=64), catalog)
    cost = next(row for row in compare_table(a, b).rows if row[0].startswith("Cost"))
    assert "within SLOs" not in cost[1] and cost[2].endswith(f"(at {b.conformance.conformance:.1%} within SLOs)")


def test_adopting_a_shorter_max_model_len_is_said_before_the_click():
    """vllm PR 20665's DeepSeek-V2-Lite ran at max_model_len 1,024; the page's requests are 1,024 + 256 tokens."""
    from pathlib import Path

    from test_app import run as run_app

    at = run_app(tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input((Path(__file__).parent / "data/vllm_logs/vllm-pr20665-deepseek-v2-lite-pp.log").read_text())
    at.run()
    assert not at.exception
    assert any("max_model_len 1,024, shorter than this scenario's requests (1,280 tokens)" in c.value.replace("\\", "")
               for c in at.caption)  # fmt: skip


def test_an_sglang_log_pasted_on_the_page_is_checked_as_sglangs():
    """The tab said only 'no vLLM startup lines found' for an SGLang log (a page audit, 2026-12-06): sglang PR #4760's
    Llama-3.1-8B log, held against the page's Llama-3.1-8B on an H100, shows its tokens row and the calibration."""
    from pathlib import Path

    from test_app import run as run_app

    log = (Path(__file__).parent / "data/sglang_logs/sglang-pr4760-llama-3.1-8b-h100.log").read_text()
    at = run_app({"model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": "sglang", "gpu_memory_utilization": "0.88"},
                 tab="Check a vLLM log")  # fmt: skip
    at.text_area(key="vllm_log_text").input(log)
    at.run()
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    assert any("SGLang log" in m.value for m in at.markdown)
    assert any("442,750" in m.value and "KV cache (tokens)" in m.value for m in at.markdown)


def test_a_fixed_length_runs_tpot_below_the_estimate_is_said_why(catalog):
    """A user audit: Llama-3.1-8B on an H200, 4 requests of 100,000 + 1,000 tokens. At fixed lengths the requests
    finish together and their successors' prompts are prefilled between decode steps, so the table's TPOT is
    the plain decode's, well below the estimate's (which carries the arriving prompts in its steps, as traffic spread
    in time does); the text says so with the ±30 % run's median beside it."""
    from boundary.view_bench import benchmark_lines

    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h200", max_model_len=131072, input_len=100_000, output_len=1000,
                          concurrency=4, max_num_batched_tokens=8192), catalog)  # fmt: skip
    median = r.benchmark.bench_summary()["median_tpot_ms"] / 1e3
    assert median < r.latency.tpot_s / 1.15
    assert any(x.startswith("median TPOT ") and "prefilled between their decode steps" in x for x in benchmark_lines(r))
