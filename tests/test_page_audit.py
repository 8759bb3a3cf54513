"""What a page audit of 2026-12-06 found and the page now does: a benchmark's opening burst named beside its p99
TTFT, capacity beside a closed loop that meets the quota, a rejected upload said on the page, a rate shown as typed."""

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
