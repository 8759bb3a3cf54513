"""The "Find a deployment" tab with Streamlit's AppTest: it renders, names the cheapest deployment with its serve
command, and opening that configuration makes the page show the same TTFT, TPOT, replicas and cost."""

import pytest
from conftest import field
from test_app import run as app_run

from boundary import fmt
from calc.loader import load_catalog
from calc.scenario import Scenario
from calc.search import search
from calc.search_rows import row
from ui.search_chart import pareto_figure
from ui.search_tab import LABEL

DONE_WHEN = {"model": "llama-3.1-70b", "request_rate": "10", "input_len": "2000", "output_len": "500",
             "slo_ttft_s": "0.5", "slo_tpot_s": "0.05"}  # fmt: skip


def run(query: dict):
    return app_run(query, LABEL)


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_the_tab_names_the_cheapest_and_opening_it_shows_the_same_numbers(catalog):
    at = run(DONE_WHEN)
    assert not at.exception
    best = row(r := search(Scenario.model_validate(DONE_WHEN), catalog), r.cheapest)
    shown = metrics(at)
    estimate = " (estimate)" if best["price_estimated"] else ""  # a spec's own price estimate says so
    assert shown["Cost / M output tokens"] == fmt.money(best["cost_per_million_output_tokens"], best["currency"]) + estimate
    assert shown["TTFT"] == fmt.ms(best["ttft_s"]) and shown["TPOT"] == fmt.ms(best["tpot_s"])
    assert any(c.value.startswith("vllm serve meta-llama/Llama-3.1-70B") for c in at.code)
    next(b for b in at.button if b.key == "search_open").click()
    at.run()
    assert not at.exception
    for name in ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype", "max_num_seqs",
                 "concurrency", "disaggregated"):  # fmt: skip
        assert field(at, name) == best[name], name
    page = metrics(at)  # the page's own headline, from evaluate() of the opened scenario
    assert page["TTFT (estimate)"] == shown["TTFT"] and page["TPOT (estimate)"] == shown["TPOT"]
    assert page["Replicas / GPUs"] == f"{best['replicas']} / {best['gpus']}"
    # the headline's tile names the currency in its label (six tiles a row leave room for a few characters)
    cur = best["currency"]
    assert f"{page[f'Cost / M output tokens ({cur})']} {cur}{estimate}" == shown["Cost / M output tokens"]


def test_tables_link_each_configuration_and_show_no_none():
    at = run(DONE_WHEN)
    top, modes = at.dataframe[-2].value, at.dataframe[-1].value
    assert all(link.startswith("?") and "model=llama-3.1-70b" in link for link in top["open"])
    from ui.search_tab import CONFIG_COLUMN

    assert list(modes[CONFIG_COLUMN].str.contains("disaggregated")) == [False, True]
    for table in (top, modes):
        assert not table.isin(["None", "nan"]).any().any() and table.notna().all().all()
        assert all(c.endswith((" USD", " USD (estimate)")) for c in table["cost / M output tokens"])


def test_a_bad_search_list_in_the_link_warns_and_keeps_the_default():
    at = run({"search_tensor_parallel_size": "1,<b>2</b>"})
    assert not at.exception
    assert any("search\\_tensor\\_parallel\\_size" in w.value for w in at.warning)
    assert field(at, "search_tensor_parallel_size") == "1,2,4,8"


def test_a_search_space_with_an_unknown_gpu_warns_in_the_tab():
    at = run({"search_gpus": "h100-sxm,h900"})
    assert not at.exception
    assert any("h900" in w.value for w in at.warning)


def test_nothing_meeting_the_slos_says_so():
    at = run({"model": "llama-3.1-405b", "search_gpus": "rtx-4090", "search_tensor_parallel_size": "1"})
    assert not at.exception and any("No configuration" in e.value for e in at.error)


def test_the_chart_has_a_point_per_configuration_shown(catalog):
    r = search(Scenario.model_validate(DONE_WHEN), catalog)
    fig = pareto_figure(r, {g: s.name for g, s in catalog.gpus.items()}, r.cheapest)
    ids = [i for t in fig.data for i in t.customdata]
    assert set(r.frontier) <= set(ids) and r.cheapest in ids
    assert fig.layout.xaxis.title.text == "tokens/s per user (1 / TPOT)"
    assert all("per M output tokens" in t for tr in fig.data for t in tr.text)


def test_the_chart_is_already_what_plotly_validation_makes_of_it(catalog):
    import plotly.graph_objects as go

    for kw in ({}, DONE_WHEN, {"model": "deepseek-v3"}):
        r = search(Scenario.model_validate(kw), catalog)
        spec = pareto_figure(r, {g: s.name for g, s in catalog.gpus.items()}, r.cheapest).to_dict()
        assert go.Figure(spec).to_dict() == spec, kw


def test_one_token_outputs_are_checked_without_a_tpot():
    """Found by the tab fuzzer: output_len 1 has no TPOT in the simulation (vllm bench serve prints 0), and the
    chosen configuration's check divided by it."""
    at = run({"model": "aya-23-8b", "gpu": "a10", "output_len": "1"})
    assert not at.exception
    assert any("one-token outputs have no TPOT" in c.value for c in at.caption)


@pytest.mark.parametrize("tab, query, key, shown", [
    # the chosen configuration, aggregated (the simulation serves one engine)
    (LABEL, DONE_WHEN | {"search_disaggregated": "false"}, "search_rate_check", lambda at: [c.value for c in at.caption]),
    ("SLOs & replicas", {"request_rate": "20"}, "slo_replica_check", lambda at: [m.value for m in at.markdown]),
])  # fmt: skip
def test_a_replica_count_can_be_simulated_at_its_share_of_the_rate(tab, query, key, shown):
    """Off by default (up to four simulations); on, the share within both SLOs against the quota."""
    at = app_run(query, tab)
    assert not any("share of the rate" in x for x in shown(at))
    at.toggle(key=key).set_value(True).run()
    assert not at.exception
    line = next(x for x in shown(at) if "one replica simulated at its share of the rate" in x.lower())
    assert "within both SLOs" in line and "90% quota" in line


def test_moving_concurrency_does_not_search_again():
    """The search finds each configuration's own operating point, so the scenario's concurrency does not change
    it: the tab keeps its result when only that input moves, and searches again when another does."""
    at = run({"request_rate": "10"})
    first = at.session_state["_search_result"]
    at.number_input(key="concurrency").set_value(48).run()
    assert not at.exception and at.session_state["_search_result"] is first
    at.number_input(key="request_rate").set_value(12.0).run()
    assert at.session_state["_search_result"] is not first
    assert at.session_state["_search_result"].scenario.request_rate == 12.0


def test_a_search_space_over_the_cap_in_the_link_warns_on_the_tab():
    # every shipped GPU × 12 (TP, PP) pairs × 4 weight formats × 2 KV × 12 max_num_seqs × 2 modes (24 GPUs: 55,296)
    at = run({"model": "llama-3.2-1b", "search_pipeline_parallel_size": "1,2,3", "search_dtype": "auto,fp8,int8,int4",
              "search_max_num_seqs": ",".join(str(n) for n in range(1, 13))})  # fmt: skip
    assert not at.exception
    (w,) = [w.value for w in at.warning if "cannot be searched" in w.value]
    configs = f"{len(load_catalog().gpus) * 12 * 4 * 2 * 12 * 2:,}".replace(",", "\\,")
    assert f"{configs} configurations" in w and "at most 50\\,000" in w
    assert "max\\_num\\_seqs values" in w and "search\\_" not in w  # the sidebar's names, not the fields'"


def test_the_frontier_recheck_is_bounded_and_says_so(monkeypatch):
    """The frontier re-check simulates at most FRONTIER_CHECKS points a rerun (each ≤ about 50 ms), naming how many it
    left; bounded here at 3 so that the default space's frontier (more than 3 points) exceeds it."""
    import ui.search_tab as tab

    monkeypatch.setattr(tab, "FRONTIER_CHECKS", 3)
    at = run({"request_rate": "10"})
    frontier = len(at.session_state["_search_result"].frontier)
    assert frontier > 3
    at.toggle(key="search_check_frontier").set_value(True).run()
    assert not at.exception
    assert len(at.dataframe[-1].value) == 3
    assert any(f"The first 3 of the frontier's {frontier:,} points" in c.value for c in at.caption)
