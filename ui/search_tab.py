"""The "Find a deployment" tab: the search space's inputs (sidebar, URL-bound like every input), the Pareto chart, the
cheapest configurations, aggregated against disaggregated at the same SLOs, and the commands that serve the chosen
one. A click on a point, or a row's link, opens that configuration as the page's scenario.

Hooks (app.py): `search_tab.sidebar()` after the other inputs; `search_tab.LABEL` as a tab; `search_tab.render(…)`.
"""

from __future__ import annotations

import time
from dataclasses import asdict

import streamlit as st

from boundary import fmt
from boundary.search_cells import cells
from boundary.search_text import REPLICA_CHECK_LABEL, blocked_sentence, rate_check_line
from boundary.urlstate import MAX_MESSAGE_SHOWN, plain, query_string
from calc.errors import InputError
from calc.scenario import SEARCH_LISTS, Scenario
from calc.search import search
from calc.search_notes import what_blocks
from calc.search_rows import check, rate_check, row, scenario_of, serve_commands, served_scenario
from ui.search_chart import label, pareto_figure, serving_of
from ui.widgets import SEARCH_SPACE, lazy_group, text_input, widget

LABEL = "Find a deployment"
TOP_ROWS = 15
FRONTIER_CHECKS = 24  # ≤ 50 ms of simulation a point: the re-check stays within a rerun's 1 s bound
LIST_LABELS = {"search_gpus": "GPUs (spec ids, or all)", "search_tensor_parallel_size": "TP sizes",
               "search_pipeline_parallel_size": "PP sizes", "search_dtype": "Weight precisions",
               "search_kv_cache_dtype": "KV-cache precisions", "search_max_num_seqs": "max_num_seqs values",
               "search_max_num_batched_tokens": "max_num_batched_tokens values (empty: this scenario's)",
               "search_gpu_memory_utilization": "gpu_memory_utilization values (empty: this scenario's)"}  # fmt: skip


def sidebar() -> None:
    """The search space and its filters, in the sidebar so they stay bound to the URL whichever tab is open."""
    F = Scenario.model_fields
    box = lazy_group(SEARCH_SPACE)
    if box is None:
        return
    with box:
        for name in SEARCH_LISTS:
            text_input(name, LIST_LABELS[name], help=(F[name].description or "").replace("\n", " "))
        widget("search_disaggregated", "Also try disaggregated serving")
        widget("search_max_gpus", "Max GPUs")
        widget("search_budget_per_hour", "Budget per hour (GPU prices' currency)")


def _open(r, i: int) -> None:
    """Make configuration i the page's scenario (every bound input, hence the URL, follows)."""
    s = served_scenario(r, i)
    for name in Scenario.model_fields:
        value = getattr(s, name)
        st.session_state[name] = "" if value is None and name == "custom_model" else value


def _on_click() -> None:
    state, r = st.session_state.get("search_chart"), st.session_state.get("_search_result")
    points = (state or {}).get("selection", {}).get("points", []) if state else []
    if r is not None and points and points[0].get("customdata") is not None:
        _open(r, int(points[0]["customdata"]))


def _searched(s: Scenario, catalog):
    """(SearchResult, seconds it took). The search finds each configuration's own operating point, so the
    scenario's concurrency — the page's most moved input — does not change it: the session keeps its last result
    per scenario less that field (and per catalog, which tests reload) and moving it does not search again."""
    key = s.model_dump_json(exclude={"concurrency"})
    memo = st.session_state.get("_search_memo")
    if memo is not None and memo[0] == key and memo[1] is catalog:
        return memo[2], memo[3]
    started = time.perf_counter()
    r = search(s, catalog)
    st.session_state["_search_memo"] = (key, catalog, r, time.perf_counter() - started)
    return r, st.session_state["_search_memo"][3]


CONFIG_COLUMN = "configuration (GPU · TP×PP · weights/KV)"


def _table(r, idx, gpu_names, link_base: str) -> list[dict]:
    rows = []
    for i in idx:
        x = cells(row(r, i))
        # the cost first: the list is ranked by it, and a narrow page scrolls the last columns away
        rows.append({CONFIG_COLUMN: label(r, i, gpu_names, short=True), "cost / M output tokens": x["cost"],
                     "cost / hour": x["cost_per_hour"], "GPUs": x["gpus"], "replicas": x["replicas"], "TTFT": x["ttft"],
                     "TPOT": x["tpot"], "in flight": x["concurrency"], "tokens/s per user": x["user"],
                     "tokens/s per GPU": x["per_gpu"], "open": f"{link_base}?{query_string(served_scenario(r, i))}"})  # fmt: skip
    return rows


def render(s: Scenario, catalog, link_base: str) -> None:
    try:
        r, seconds = _searched(s, catalog)
    except InputError as e:
        text = str(e)
        names = {**LIST_LABELS, "search_disaggregated": "Also try disaggregated serving"}
        for field, shown in sorted(names.items(), key=lambda kv: -len(kv[0])):  # the sidebar's names for them
            text = text.replace(field, f"'{shown.split(' (')[0]}'")
        st.warning(f"The search space cannot be searched — {plain(text, MAX_MESSAGE_SHOWN)}", icon=":material/warning:")
        return
    st.session_state["_search_result"] = r
    names = {gid: g.name for gid, g in catalog.gpus.items()}
    rate = f"{s.request_rate:g} req/s" if s.request_rate else "one replica (set a request rate to size a fleet)"
    st.caption(f"{r.configs_evaluated:,} configurations of {plain(r.model_name)} evaluated in {fmt.ms(seconds)} for {rate}, "
               f"{s.input_len:,} in / {s.output_len:,} out, TTFT ≤ {fmt.seconds(s.slo_ttft_s)} and TPOT ≤ {fmt.seconds(s.slo_tpot_s)} "
               f"for {fmt.quota(s.conformance_quota)} of requests; {int(r.eligible.sum()):,} meet them.")  # fmt: skip
    for note in r.notes:
        st.caption(f"note: {plain(note, MAX_MESSAGE_SHOWN)}")
    if r.cheapest is None:
        counts = r.why_counts()
        first = next(iter(counts), "")
        if counts.get(first) == r.configs_evaluated:  # one reason rules out the whole space: it is the answer
            st.error(f"No configuration of the search space can serve: {first}.", icon=":material/block:")
        else:
            st.error(blocked_sentence(what_blocks(r), s.model_dump()), icon=":material/block:")
        for why, n in counts.items():
            st.caption(f"{n:,} of {r.configs_evaluated:,}: {why}")
        return
    if counts := r.why_counts():  # what the filters and SLOs rule out, as the CLI's why_not_counts
        with st.expander(f"Why the other {sum(counts.values()):,} configurations are not listed"):
            st.markdown("\n".join(f"- {n:,} of {r.configs_evaluated:,}: {plain(why)}" for why, n in counts.items()))
    top = r.top(TOP_ROWS)
    chosen = st.selectbox("Chosen configuration", top, format_func=lambda i: label(r, i, names), key="search_choice")
    _chosen(r, chosen, names, catalog)
    st.plotly_chart(pareto_figure(r, names, chosen), key="search_chart", on_select=_on_click,
                    selection_mode="points")  # fmt: skip
    st.markdown("**The cheapest configurations that meet the SLOs**")
    st.dataframe(_table(r, top, names, link_base), hide_index=True,
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open")})  # fmt: skip
    st.markdown("**Aggregated against disaggregated serving, at the same SLOs** (the cheapest of each)")
    best = [i for dis in (False, True) for i in r.top(1, disaggregated=dis)]
    st.dataframe(_table(r, best, names, link_base), hide_index=True,
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open")})  # fmt: skip
    if st.toggle("Re-check the frontier with the scheduler simulation", key="search_check_frontier"):
        _frontier_checks(r, names, catalog)


def _chosen(r, i: int, names, catalog) -> None:
    d = row(r, i)
    x = cells(d)
    c = st.columns(5)
    c[0].metric("Cost / M output tokens", x["cost"])
    c[1].metric("GPUs", x["gpus"], help=f"{fmt.money(d['price_per_gpu_hour'], d['currency'])} per GPU-hour")
    if r.disaggregated[i] and d["prefill_instances"] is not None:
        c[2].metric("Prefill : decode instances", f"{fmt.count(d['prefill_instances'])} : {fmt.count(d['decode_instances'])}")
    else:
        if d["replicas"] is None:  # the reason in the help: a metric's value has room for a few characters only
            c[2].metric("Replicas", "—", help="Set a request rate to size a fleet: without one, one replica is priced at "
                        "its own capacity.")  # fmt: skip
        else:
            c[2].metric("Replicas", x["replicas"])
    c[3].metric("TTFT", x["ttft"])
    c[4].metric("TPOT", x["tpot"])
    st.caption(f"{plain(label(r, i, names))}; {d['concurrency']:,} requests in flight per "
               f"{'decode instance' if r.disaggregated[i] else 'replica'}. Serve it with:")  # fmt: skip
    for role, cmd in serve_commands(r, i):
        if role:
            st.caption(plain(role))
        st.code(cmd, language="bash", wrap_lines=True)
    st.button("Open this configuration as the page's scenario", on_click=_open, args=(r, i), key="search_open")
    chk = _check(r, i, catalog)
    if chk is None:
        st.caption("The scheduler simulation serves one aggregated engine: a disaggregated deployment is not re-checked.")
    else:
        st.caption(f"Scheduler simulation at {chk.max_concurrency:,} in flight ({chk.num_prompts:,} requests, lengths "
                   f"±{chk.range_ratio:.0%}): median TTFT "
                   f"{_simulated(chk.simulated_ttft_s, chk.ttft_s, chk.ttft_ratio, 'no request completed')}, TPOT "
                   f"{_simulated(chk.simulated_tpot_s, chk.tpot_s, chk.tpot_ratio, 'one-token outputs have no TPOT')}"
                   " (the tiles are the closed forms, for requests spread in time; the simulation's clients send "
                   "their next request as one ends).")  # fmt: skip
    if r.scenario.request_rate and not r.disaggregated[i] and st.toggle(
            REPLICA_CHECK_LABEL, key="search_rate_check"):  # fmt: skip
        rc = _check(r, i, catalog, rate_check)
        if rc is not None:
            line = rate_check_line(asdict(rc)).strip()
            st.caption(fmt.sentence(line))


def _simulated(value_s: float, closed_s: float, ratio: float | None, why_none: str) -> str:
    """'129 ms against the tile's 60.4 ms', or why there is no figure."""
    if ratio is None:
        return fmt.missing(why_none)
    return f"{fmt.ms(value_s)} against the tile's {fmt.ms(closed_s)}"


def _check(r, i: int, catalog, kind=check):
    """A simulation check of configuration i (`check`, or `rate_check`), kept per session by its Scenario (a
    rerun that does not change the configuration does not simulate it again)."""
    memo = st.session_state.setdefault("_search_checks", {})
    key = (kind.__name__, scenario_of(r, i))
    if key not in memo:
        if len(memo) > 64:
            memo.clear()
        memo[key] = kind(r, i, catalog)
    return memo[key]


def _frontier_checks(r, names, catalog) -> None:
    """The frontier's first FRONTIER_CHECKS points (by tokens/s per user) re-checked by the scheduler simulation."""
    rows = []
    for i in r.frontier[:FRONTIER_CHECKS]:
        chk = _check(r, i, catalog)
        rows.append({"configuration": label(r, i, names), "serving": serving_of(r, i),
                     "TTFT closed form": fmt.ms(float(r.ttft_s[i])), "TPOT closed form": fmt.ms(float(r.tpot_s[i])),
                     "TTFT simulated": fmt.ms(chk.simulated_ttft_s) if chk else "not simulated",
                     "TPOT simulated": (fmt.ms(chk.simulated_tpot_s) if chk.tpot_ratio is not None else
                                        fmt.missing("one-token outputs")) if chk else "not simulated"})  # fmt: skip
    st.dataframe(rows, hide_index=True)
    if len(r.frontier) > FRONTIER_CHECKS:
        st.caption(f"The first {FRONTIER_CHECKS} of the frontier's {len(r.frontier):,} points, by tokens/s per user, "
                   "are re-checked (a bound on one rerun's cost); choose another to check it above.")
