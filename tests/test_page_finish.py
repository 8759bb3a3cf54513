"""Issue 14 (and the presentation parts of issues 11 and 12), each defect as the page showed it, with AppTest:
finished numbers in every tab, a plan that cannot run, paired sliders and boxes on one URL field, pickers that keep
spec ids in the link, the log calibration to the block, and the sections that used to be dead or hidden."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import field, open_group_of, page_tables
from streamlit.testing.v1 import AppTest
from test_app import run as app_run

from boundary import view_fleet
from boundary.markdown import md_text
from ui.tabs import TABS

APP = str(Path(__file__).resolve().parent.parent / "app.py")
CURRENCIES = r"(USD|EUR|GBP|CHF|JPY|CNY|INR|KRW|CAD|AUD|SGD)"


def run(query: dict | None = None, tab: str | None = None) -> AppTest:
    at = app_run(query, tab)
    assert not at.exception, at.exception
    return at


def cells(at: AppTest) -> list[str]:
    """Every table cell and header, unescaped (tables are Markdown-escaped for st.table)."""
    out = []
    for df in page_tables(at):
        out += [str(c) for c in df.columns] + [str(v) for v in df.to_numpy().ravel()]
    return [c.replace("\\", "") for c in out]


def shown(at: AppTest) -> list[str]:
    """What a reader sees as text (code blocks excluded: they hold machine-readable field=value lines)."""
    texts = [f"{m.label}: {m.value}" for m in at.metric] + cells(at)
    for kind in (at.markdown, at.caption, at.info, at.warning, at.error, at.success):
        texts += [e.value.replace("\\", "") for e in kind]
    return texts


UNFINISHED = [
    (re.compile(r"(?<![\w.,=/:#?&-])\d{5,}(?![\w,])"), "an integer of five or more digits without separators"),
    (re.compile(r"(?<![\w.,=/:#?&-])\d[\d,]*\.\d{4,}"), "a decimal with four or more decimals"),
    (re.compile(r"\b(None|True|False|nan|NaN|inf)\b"), "None / True / False / nan / inf"),
    (re.compile(r"(?<![\w×])-\d[\d,.]*\s*(GiB|MiB|KiB|B)\b"), "a negative size"),
]


def unfinished(texts: list[str]) -> list[tuple[str, str]]:
    bad = []
    for text in texts:
        for rx, what in UNFINISHED:
            m = rx.search(text)
            if m and not (what.startswith("a decimal") and len(re.sub(r"\D", "", m.group()).lstrip("0")) < 5):
                bad.append((what, text[:200]))
    return bad


# --- every number finished -----------------------------------------------------------------------------------------


def test_the_scan_catches_the_issues_examples_and_passes_finished_ones():
    for raw in ("15.0776", "956.0603", "8031.2447", "19173961", "13336", "None", "True", "KV cache -61.72 GiB"):
        assert unfinished([raw]), raw
    for done in ("8,031", "15.1 ms", "0.0583 ms", "131.42 GiB", "p99.95", "29.85 ms", "19,173,961 tokens", "6.25×"):
        assert not unfinished([done]), done


PIN_C8 = "eyJjb25jdXJyZW5jeSI6OH0"  # base64url of {"concurrency":8}


@pytest.mark.parametrize("tab", TABS[:5])
@pytest.mark.parametrize("query", [
    {"request_rate": "20"},
    {"pin": PIN_C8, "concurrency": "32", "gpu_hour_price": "2", "currency": "EUR"},
    {"model": "llama-3.1-70b"},  # the weights do not fit
    {"model": "nemotron-h-8b", "gpu": "h100-sxm", "gpu_hour_price": "2.5", "currency": "EUR"},
])  # fmt: skip
def test_every_tab_shows_finished_numbers(query, tab):
    """The issue's 15.0776, 956.0603, 8031.2447, 19173961, 13336, 'None', 'True' and -61.72 GiB, on any tab."""
    at = run(query, tab)
    assert unfinished(shown(at)) == []


@pytest.mark.parametrize("tab", ["SLOs & replicas", "Latency"])
def test_every_cost_has_its_currency(tab):
    at = run({"request_rate": "20", "gpu_hour_price": "3", "currency": "CHF"}, tab)
    # a tile names its currency in the label ('Cost / M output tokens (CHF)'), a table cell beside the number
    costs = [f"{m.value} {unit[1]}" if (unit := re.search(r"\(([A-Z]{3})\)$", m.label)) else m.value
             for m in at.metric if "Cost" in m.label]
    for t in page_tables(at):
        for col in t.columns:
            if "cost" in str(col).lower():
                costs += [str(v).replace("\\", "") for v in t[col]]
    costs += [line for text in shown(at) for line in text.split(";") if "per hour" in line]
    assert costs and all(re.search(rf"\d {CURRENCIES}\b|—", c) for c in costs), costs
    assert any("CHF" in c for c in costs)


def test_compare_rows_are_human_labels_with_units():
    import base64

    pin = base64.urlsafe_b64encode(json.dumps({"concurrency": 8}).encode()).decode().rstrip("=")
    at = run({"pin": pin, "concurrency": "32"}, "Compare & export")
    table = next(t for t in page_tables(at) if "A (pinned)" in t.columns)
    labels = [q.replace("\\", "") for q in table["quantity"]]
    assert not [q for q in labels if re.search(r"_s\b|_rps|_per_|^[a-z_]+$", q)], labels
    assert "TTFT (estimate)" in labels and "Cost / M output tokens" in labels
    ttft = table[[q.replace("\\", "") == "TTFT (estimate)" for q in table["quantity"]]]
    assert str(ttft.iloc[0, 1]).endswith(" ms") and str(ttft.iloc[0, 2]).endswith(" ms")


# --- a plan that cannot run ----------------------------------------------------------------------------------------


def test_a_model_whose_weights_do_not_fit_says_what_is_missing_and_shows_no_latency():
    # Llama-3.1-70B in bf16 on an RTX 4090: 70.6e9 parameters × 2 B ≫ 0.9 × 23.68 GiB
    at = run({"model": "llama-3.1-70b"})
    labels = {m.label for m in at.metric}
    assert not labels & {"TTFT (estimate)", "TPOT (estimate)", "End-to-end", "Within both SLOs", "Cost / M output tokens"}
    kv = next(m for m in at.metric if m.label == "Available KV cache")
    assert kv.value == "none" and "short" in kv.delta
    missing = next(md.value for md in at.markdown if md.value.startswith("**What is missing"))
    assert "weights" in missing and "short" in missing
    assert any("No latency, SLO, cost or benchmark figures" in c.value for c in at.caption)
    fixes = next(t for t in page_tables(at) if "change" in t.columns)
    assert len(fixes) >= 1
    for tab in ("Latency", "SLOs & replicas", "Beyond the GPU"):
        at2 = run({"model": "llama-3.1-70b"}, tab)
        assert any("Nothing to show here" in i.value for i in at2.info), tab
        assert not [t for t in page_tables(at2) if "metric" in t.columns], tab


def test_a_suggestion_that_also_raises_max_model_len_says_so():
    # 16 × (8,192 + 256) tokens with max_model_len 8,192: every fix must also raise max_model_len to 8,448
    at = run({"input_len": "8192"})
    fixes = next(t for t in page_tables(at) if "change" in t.columns)
    changes = [c.replace("\\", "") for c in fixes["change"]]
    assert any(c.startswith("fp8 KV cache") for c in changes)
    assert all("max_model_len=8448" in c for c in changes), changes


def test_replicas_say_at_which_concurrency_they_were_sized():
    at = run({"request_rate": "20"})
    reps = next(m for m in at.metric if m.label == "Replicas / GPUs")
    assert re.search(r"at \d[\d,.]* requests in flight per replica", reps.help)
    assert "not the scenario's 16" in reps.help or " 16 requests in flight" in reps.help


# --- controls --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, slider_value", [("input_len", 4096), ("output_len", 1024), ("concurrency", 64),
                                                ("request_rate", 5.0), ("memory_gib", 48.0),
                                                ("memory_bandwidth_gb_per_s", 2000.0), ("peak_tflop_per_s", 500.0)])  # fmt: skip
def test_a_slider_and_its_number_box_share_one_url_field(name, slider_value):
    at = open_group_of(run(), name)
    at.select_slider(key=f"{name}__slider").set_value(slider_value).run()
    assert not at.exception
    assert at.session_state[name] == slider_value
    assert at.number_input(key=name).value == slider_value
    assert float(at.query_params[name]) == slider_value
    exact = int(slider_value) + 3 if isinstance(slider_value, int) else slider_value + 0.5
    at.number_input(key=name).set_value(exact).run()
    assert not at.exception and at.select_slider(key=f"{name}__slider").value == exact


def test_token_sliders_step_like_a_log_scale():
    at = run()
    opts = at.select_slider(key="input_len__slider").options
    assert opts[0] == "128" and opts[-1] == "128k" and "1k" in opts and len(opts) < 30
    conc = at.select_slider(key="concurrency__slider").options
    assert conc[0] == "1" and conc[-1] == "1k" and len(conc) < 30


def test_pickers_group_by_family_with_size_memory_and_price_and_keep_ids_in_the_link():
    at = run()
    models = at.selectbox(key="model__pick").options
    assert all("›" in o for o in models) and any(o.startswith("Qwen › Qwen2.5-7B-Instruct") and "params" in o
                                                  and "GiB" in o for o in models)  # fmt: skip
    families = [o.split(" › ")[0] for o in models]
    assert families == sorted(families, key=families.index) and len(set(families)) > 5  # grouped: each family once
    assert [f for i, f in enumerate(families) if i and f != families[i - 1]] == list(dict.fromkeys(families))[1:]
    gpus = at.selectbox(key="gpu__pick").options
    assert any(o.startswith("NVIDIA › NVIDIA H100 SXM 80GB") and "GiB" in o and "USD/h" in o for o in gpus)
    at.selectbox(key="gpu__pick").select("h100-sxm").run()
    assert not at.exception and field(at, "gpu") == "h100-sxm" and at.query_params["gpu"] == "h100-sxm"
    assert "H100" in next(md.value for md in at.markdown if md.value.startswith("####"))


def test_a_link_sets_the_pickers():
    at = run({"model": "llama-3.1-8b", "gpu": "l40s"})
    assert at.selectbox(key="model__pick").value == "llama-3.1-8b"
    assert at.selectbox(key="gpu__pick").value == "l40s"


# --- calibration from a log ------------------------------------------------------------------------------------------

SEED_LOG = """\
INFO 10-03 16:22:10 [core.py:77] Initializing a V1 LLM engine (v0.10.1) with config: model='Qwen/Qwen2.5-7B-Instruct', max_seq_len=8192, dtype=torch.bfloat16, tensor_parallel_size=1, pipeline_parallel_size=1
INFO 10-03 16:22:17 [gpu_worker.py:298] Available KV cache memory: 6.41 GiB
INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 120,064 tokens
INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for 8,192 tokens per request: 14.66x
"""


def test_adopting_the_logged_pool_reproduces_the_log_to_the_block():
    """Issue 14: adopting landed on 120,016 tokens (kv_cache_memory_bytes=6882685091.84) against the log's 120,064."""
    at = run(tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(SEED_LOG).run()
    next(b for b in at.button if b.key == "adopt_btn").click().run()
    assert not at.exception
    # 120,064 tokens = 7,504 blocks of 16; a block of Qwen2.5-7B is 16 × 57,344 B = 917,504 B
    assert field(at, "kv_cache_memory_bytes") == 7_504 * 917_504
    assert next(m.value for m in at.metric if m.label == "KV cache (tokens)") == "120,064"
    assert float(at.query_params["kv_cache_memory_bytes"]) == 7_504 * 917_504


# --- what used to be dead or hidden ------------------------------------------------------------------------------------


def test_fan_out_hedging_chains_and_the_mean_vs_max_example_are_on_the_slo_tab():
    at = run({"fanout": "20", "chain_calls": "20"}, "SLOs & replicas")
    text = " ".join(shown(at))
    assert "its p99.95 for the answer to meet p99" in text  # 0.99^(1/20) = 0.99950; the issue saw 'p99.9'
    assert "hedging" in text and "5% load" in text  # a duplicate at the p95 re-sends the 5 % slowest
    assert "a chain of 20 sequential calls" in text
    assert "29.85 ms" in text  # (200 × 20 ms + 2 s) / 201 = 29.85 ms


def test_a_shared_system_prompt_shows_in_the_headline():
    at = run({"shared_prefix_len": "512"})
    assert any("shared 512-token system prompt" in c.value for c in at.caption)


def test_measured_itl_p99_alone_says_why_it_is_unused():
    at = run({"measured_itl_p99_s": "0.06"})
    assert any("measured_itl_p99_s is not used without measured_itl_s" in i.value.replace("\\", "") for i in at.info)


def test_a_fractional_measured_batch_is_accepted_from_a_link():
    # the seed: ≈ 15.39 running at a 384-token context (256 + 256 / 2): floor 14.37 ms, 87.2 % of the 16.47 ms ITL
    at = run({"input_len": "256", "measured_running_batch": "15.39", "measured_itl_s": "0.01647"}, "Latency")
    assert field(at, "measured_running_batch") == 15.39 and not at.warning
    info = " ".join(i.value for i in at.info)
    assert "15.39 running" in info and "14.4 ms" in info and "87.2%" in info


# --- issue 11 item 6 and issue 12 ---------------------------------------------------------------------------------------


def test_the_latency_tab_shows_the_predicted_benchmark():
    at = run(tab="Latency")
    bench = next(t for t in page_tables(at) if "median" in t.columns)
    assert list(bench.columns) == ["metric", "mean", "median", "p99"]
    assert [m.replace("\\", "") for m in bench["metric"]] == ["TTFT", "TPOT", "ITL", "E2E latency"]
    assert all(str(v).endswith(" ms") for v in bench[["mean", "median", "p99"]].to_numpy().ravel())
    text = " ".join(shown(at))
    assert "request throughput" in text and "output throughput" in text and "200 of 200 requests" in text


def test_a_hybrid_model_shows_its_state_per_request_and_the_notes():
    at = run({"model": "nemotron-h-8b", "gpu": "h100-sxm"})
    state = next(c.value for c in at.caption if c.value.startswith("State per request"))
    assert "MiB on each GPU" in state
    notes = next(i.value for i in at.info if "Notes and assumptions" in i.value)
    assert "constant state per request" in notes.replace("\\", "")
    kv = next(t for t in page_tables(at) if "value" in t.columns and any(
        "state per request" in str(q) for q in t["quantity"]))  # fmt: skip
    assert len(kv)


def test_a_missing_headline_number_shows_a_dash_and_its_reason_under_it():
    """The tiles are narrow: '— (SLOs not met)' was cut to '— (SLOs…'; the reason now sits under the dash."""
    from boundary.fmt import DASH, missing, split_missing

    assert split_missing(missing("no price: set gpu_hour_price")) == (DASH, "no price: set gpu_hour_price")
    assert split_missing("3.98 USD") == ("3.98 USD", "")
    # a TPOT target of 10 ms is below the bandwidth floor (70.6e9 weights × 2 B / 2 GPUs / 3.35 TB/s ≈ 21 ms a
    # step): no step-time constants can meet it
    at = run({"model": "llama-3.1-70b", "gpu": "h100-sxm", "tensor_parallel_size": "2", "concurrency": "32",
              "request_rate": "5", "slo_tpot_s": "0.01"})  # fmt: skip
    reps = next(m for m in at.metric if m.label == "Replicas / GPUs")
    cost = next(m for m in at.metric if m.label == "Cost / M output tokens")
    assert (reps.value, reps.delta) == (DASH, "SLOs not met")
    assert (cost.value, cost.delta) == (DASH, "no replica count: SLOs not met")  # the H100 has a price


def test_the_gpu_options_table_follows_the_scenario_but_not_its_concurrency():
    """The SLO tab keeps the table per scenario less its concurrency (ui/tabs.py): moving concurrency shows the same
    table a fresh computation gives, and a request rate's change reaches it."""
    from calc.evaluate import evaluate
    from calc.loader import load_catalog
    from calc.scenario import Scenario

    def options(at):
        return next(df for df in page_tables(at) if "capacity per replica" in df.columns)

    at = run({"request_rate": "3"}, "SLOs & replicas")
    first = options(at)
    at.number_input(key="concurrency").set_value(97).run()
    assert not at.exception and options(at).equals(first)
    fresh = view_fleet.gpu_options_table(evaluate(Scenario(request_rate=3, concurrency=97), load_catalog()))
    assert first["GPUs"].tolist() == [md_text(row[4]) for row in fresh.rows]
    at.number_input(key="request_rate").set_value(30.0).run()
    more = options(at)
    assert not at.exception and sorted(more["GPU"]) == sorted(first["GPU"])  # sorted by cost: the order may move
    assert sum(int(x.replace(",", "")) for x in more["GPUs"]) > sum(int(x.replace(",", "")) for x in first["GPUs"])


def test_an_overcommitted_max_num_seqs_gets_a_link_with_the_cure():
    """Llama-3.1-8B at 4,000 + 512 on an RTX 5090 at 0.6 req/s: vLLM's default max_num_seqs (256) is above the 21
    requests the pool holds at that length, so bursts preempt (calc.replicas.Capacity.overcommitted). The SLO tab
    says so and links the same scenario with max_num_seqs=21; that scenario has the same capacity and no warning."""
    q = {"model": "llama-3.1-8b", "gpu": "rtx-5090", "input_len": "4000", "output_len": "512", "slo_ttft_s": "2",
         "request_rate": "0.6"}  # fmt: skip
    at = run(q, "SLOs & replicas")
    text = " ".join(m.value for m in at.markdown)
    assert "set max_num_seqs=21" in text
    link = next(m.value for m in at.markdown if m.value.startswith("[Open this scenario with max_num_seqs=21]"))
    target = link.split("](", 1)[1].split(")", 1)[0]
    assert re.search(r"[?&]max_num_seqs=21(&|$)", target) and "gpu=rtx-5090" in target
    capped = run(q | {"max_num_seqs": "21"}, "SLOs & replicas")
    assert not any("Open this scenario with max_num_seqs" in m.value for m in capped.markdown)
    assert not any("set max_num_seqs=" in m.value for m in capped.markdown)


def test_the_context_box_says_when_a_shorter_model_is_planned_at_its_own_maximum():
    """The box shows the default 8,192, but Llama-2-7B (max_position_embeddings 4,096, reference/models.md) is planned
    at 4,096 (calc.resolve.default_context): the box says so; a model longer than 8,192 gets no such line."""
    at = open_group_of(run({"model": "llama-2-7b"}), "max_model_len")
    assert field(at, "max_model_len") == 8192
    assert any(c.value.startswith("Planned at 4,096: the model's own maximum") for c in at.sidebar.caption)
    at = open_group_of(run({"model": "llama-3.1-8b"}), "max_model_len")
    assert not any(c.value.startswith("Planned at") for c in at.sidebar.caption)


def test_a_headline_latency_of_minutes_is_shown_in_seconds():
    """A 20,000-token prompt under a 1-token budget: TTFT 347,725 ms was cut to '347,725 …' in its tile; from 10 s
    on the tile says seconds (the tables keep milliseconds)."""
    at = run({"max_num_batched_tokens": "1", "max_num_seqs": "1", "concurrency": "1", "input_len": "20000",
              "max_model_len": "32768"})  # fmt: skip (one in flight: no queue for the one slot)
    ttft = next(m for m in at.metric if m.label == "TTFT (estimate)")
    assert re.fullmatch(r"\d{3} s", ttft.value), ttft.value
    assert next(m for m in at.metric if m.label == "TPOT (estimate)").value.endswith(" ms")


def test_the_gpu_options_of_a_disaggregated_plan_say_they_are_aggregated():
    """The table beside a disaggregated plan's 'no replica count' listed aggregated capacities without a word."""
    at = run({"disaggregated": "true", "request_rate": "20"}, "SLOs & replicas")
    assert any("each as one aggregated engine, not disaggregated as set" in m.value for m in at.markdown)
    at = run({"request_rate": "20"}, "SLOs & replicas")
    assert not any("aggregated engine" in m.value for m in at.markdown)


def test_vllms_own_batch_limits_on_a_large_gpu_are_one_click_away():
    """An H100 page at the planner's 2,048 / 256: a note names vLLM's own defaults there, and a link opens the
    scenario with them (max_num_batched_tokens 8,192, max_num_seqs 1,024); an RTX 4090 page has neither."""
    at = run({"model": "llama-3.1-8b", "gpu": "h100-sxm"})
    links = [m.value for m in at.markdown if "vllm serve's own batch limits" in m.value]
    assert len(links) == 1 and "max_num_batched_tokens=8192" in links[0] and "max_num_seqs=1024" in links[0]
    at = run({"model": "llama-3.1-8b", "gpu": "rtx-4090"})
    assert not [m.value for m in at.markdown if "vllm serve's own batch limits" in m.value]


def test_a_small_request_rate_reads_per_minute_or_per_hour():
    """0.00178 req/s (a 70 B model's capacity at an SLO it barely meets) is 0.00178 × 3,600 = 6.41 requests an hour;
    the headline tile cut '0.00178 req/s' to '0.00178 r…'. 0.05 req/s is 0.05 × 60 = 3 a minute; 0.1 and up stay
    per second, other units as they are."""
    from boundary import fmt

    assert fmt.rate(0.00178, "req/s") == "6.41 req/h"
    assert fmt.rate(0.05, "req/s") == "3.00 req/min"
    assert fmt.rate(0.1, "req/s") == "0.100 req/s" and fmt.rate(0.05, "tok/s") == "0.0500 tok/s"


def test_a_small_models_tpot_is_called_a_lower_bound(catalog):
    """The calibration part's smallest fitted model has 7.6 B parameters; Llama-3.2-1B (1.24 B) gets the note that
    names the two smaller published runs, Llama-3.1-8B (8.03 B) does not."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    small = evaluate(Scenario(model="llama-3.2-1b", gpu="h100-sxm"), catalog).notes
    assert any(n.startswith("a 1.2 B-parameter model") and "lower bound" in n for n in small)
    assert not any("B-parameter model" in n for n in evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog).notes)
