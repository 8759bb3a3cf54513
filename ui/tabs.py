"""The detail tabs. Tabs are lazy (on_change="rerun"): only the open tab builds its charts. Every table and sentence
comes from boundary.view (formatted once for the page, the CLI text and the exports)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pandas as pd
import streamlit as st

import charts
from boundary import fmt, view, view_bench, view_compare, view_fleet, view_measured, view_memory
from boundary.markdown import curves_csv, markdown_report, md_table, md_text
from boundary.search_text import REPLICA_CHECK_LABEL
from boundary.sglang_log import has_vllm_lines, is_sglang_log
from boundary.urlstate import MAX_MESSAGE_SHOWN, plain, query_string
from boundary.vllm_log import MAX_LOG_CHARS
from calc.evaluate import evaluate, json_safe

MODEL_CHECKS = ("num_gpu_blocks", "kv_cache_tokens", "max_concurrency", "kv_needed_bytes")
"""Reconciled figures that follow from the model's KV bytes per token: one that misses marks another model's log."""
PASTE_CHARS = 400_000  # the log box's limit: a parse of this much stays well under the cost bound
TABS = ["Memory", "Latency", "Beyond the GPU", "SLOs & replicas", "Compare & export", "Check a vLLM log"]


def frame(t: view.Table) -> pd.DataFrame:
    """st.table renders every cell as Markdown ('# GPU blocks' would be a heading): cells are escaped as text."""
    return pd.DataFrame([[md_text(c) for c in row] for row in t.rows], columns=[md_text(c) for c in t.columns])


def table(t: view.Table) -> None:
    """A small static table of finished strings, as Markdown (boundary.markdown.md_table: cheaper than st.table)."""
    st.markdown(md_table(t))
    if t.note:
        st.caption(t.note)


def _cannot(r) -> bool:
    """Say why this tab has nothing that can happen; True when so."""
    why = view.no_latency_reason(r)
    if why:
        st.info(f"Nothing to show here: {why}. The headline says what is missing and the smallest changes that fit.",
                icon=":material/block:")  # fmt: skip
    return bool(why)


def memory_tab(r) -> None:
    m = r.memory
    st.plotly_chart(charts.memory_breakdown(r), key="chart_mem")
    if m.num_gpu_blocks:
        a, b = st.columns(2)
        a.plotly_chart(charts.occupancy(r, r.curves.occupancy_vs_length), key="chart_occupancy")
        b.plotly_chart(charts.concurrency_vs_context(r, r.curves.concurrency_vs_context), key="chart_conc_ctx")
    else:
        st.info("No KV cache on this GPU: no occupancy or concurrency curves.", icon=":material/block:")
    cols = st.columns(3)
    for col, sec in zip(cols, (view_memory.memory_section(r), view_memory.kv_section(r), view_memory.workload_section(r)), strict=True):
        with col:
            st.markdown(f"**{sec.title}**")
            table(sec.table())
    groups = f"{fmt.plural(m.kv_groups, 'group')}, {fmt.plural(m.layers_per_group, 'layer')} per group" + (
        f", {m.padding_layers:,} padding layers" if m.padding_layers else "")  # fmt: skip
    counts = (f"{fmt.params(m.params.total)} total, {fmt.params(m.params.active)} active per token in the matmuls "
              "(a model card's active count adds the embedding, a lookup)" if m.params.experts
              else f"{fmt.params(m.params.total)} ({fmt.params(m.params.active)} in the per-token matmuls: the "
                   "embedding is a lookup)")  # fmt: skip
    st.caption(f"Parameters: {counts}; weights "
               f"{fmt.gib(m.weights_bytes)} in all ({plain(m.weight_format.label)}); KV layout: {groups}.")  # fmt: skip


def latency_tab(r) -> None:
    if _cannot(r):
        return
    s = r.scenario
    a, b = st.container(key="latency_tables").columns(2)  # keyed: app.py's CSS stacks these two sooner than others
    with a:
        st.markdown("**Floors and estimates** (floors are roofline lower bounds; estimates the step-time model)")
        table(view.phases_table(r))
        sec = view.latency_section(r)
        st.caption(sec.title)
        table(sec.table())
    with b:
        server = " against an SGLang server" if s.engine == "sglang" else ""
        st.markdown(f"**Predicted `vllm bench serve`**{server} at C = {s.concurrency:,}, {r.benchmark_prompts:,} "
                    f"prompts of {s.input_len:,} + {s.output_len:,} tokens"
                    + (f", the first {s.shared_len:,} of each prompt shared (`--random-prefix-len`)" if s.shared_len else "")
                    + " (scheduler simulation"
                    + ("; one aggregated engine: disaggregated serving is not simulated)" if s.disaggregated else ")"))  # fmt: skip
        table(view_bench.benchmark_table(r))
        for line in view_bench.benchmark_lines(r):
            if view_bench.LOCKSTEP_WORDS in line:  # why this table's TTFT is not the headline's: said where it is seen
                st.info(fmt.sentence(line) + " The headline's TTFT and TPOT and their shares within the SLOs are the estimate's, for "
                        "requests spread in time as traffic is; this table is what the tool prints at fixed lengths.",
                        icon=":material/info:")  # fmt: skip
            else:
                st.caption(line)
        st.caption(fmt.sentence(view_bench.benchmark_band_line(r)))
    if r.benchmark.completed:  # nothing completed: no distribution to draw (the caption above says why)
        st.plotly_chart(charts.latency_cdf(r), key="chart_cdf")
    a, b = st.columns(2)
    a.plotly_chart(charts.roofline(r), key="chart_roofline")
    b.plotly_chart(charts.decode_vs_context(r, r.curves.decode_vs_context), key="chart_decode_ctx")
    a, b = st.columns(2)
    a.plotly_chart(charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep), key="chart_thr")
    b.plotly_chart(charts.chunk_spike(r), key="chart_chunk")
    st.plotly_chart(charts.latency_breakdown(r), key="chart_breakdown")
    cal = view_measured.calibration_lines(r)
    if cal:
        st.info("\n".join(f"- {x}" for x in cal))


def beyond_tab(r) -> None:
    if _cannot(r):
        return
    st.plotly_chart(charts.swap_ratio(r), key="chart_swap")
    lines = view_fleet.beyond_lines(r)
    st.markdown("\n".join(f"- {x}" for x in lines[:2]))
    st.markdown("**Where a spilled prefix cache is worth keeping** (reload the prompt's KV vs recompute it)")
    table(view_fleet.tiers_table(r))
    st.markdown("**Prefix reuse**\n" + "\n".join(f"- {x}" for x in lines[2:]))
    st.warning(r.prefix.tenant_note, icon="🔒")


def slo_tab(r, link_base: str = "") -> None:
    if _cannot(r):
        return
    a, b = st.columns(2)
    a.plotly_chart(charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep), key="goodput")
    b.plotly_chart(charts.fanout(r), key="chart_fanout")
    on = bool(r.fleet.replicas) and not r.scenario.disaggregated and st.toggle(REPLICA_CHECK_LABEL, key="slo_replica_check")
    lines = view_fleet.slo_lines(r, replica_check=_replica_check(r) if on else None)
    st.markdown("**SLOs, replicas and cost**\n" + "\n".join(f"- {x}" for x in lines))
    cap = r.fleet.capacity
    if cap.overcommitted:  # the cure is one flag: a link to the same scenario with it
        slots = cap.slots // r.scenario.data_parallel_size  # max_num_seqs is each data-parallel rank's
        capped = query_string(r.scenario.model_copy(update={"max_num_seqs": slots}))
        st.markdown(f"[Open this scenario with max_num_seqs={slots:,}]({link_base}?{capped}) (the same capacity; "
                    "bursts then wait in vLLM's queue instead of preempting)")  # fmt: skip
    st.markdown("**Tails: what averages hide**\n" + "\n".join(f"- {x}" for x in view_fleet.tails_lines(r)))
    st.markdown("**Simulation** (the seed's log-normal model, seeded)")
    table(view_fleet.simulation_table(r))
    st.caption("A larger batch raises throughput while goodput falls: +60 % requests served, −15 % served well.")
    aggregated = " — each as one aggregated engine, not disaggregated as set" if r.scenario.disaggregated else ""
    st.markdown(f"**GPU options for this model** (each GPU at the smallest TP that serves, or a larger one while it serves for less; cost where a price is known{aggregated})")
    specs = hash((r.model, r.engine, tuple(r.other_gpus.items())))  # the catalog can be reloaded (tests do)
    table(gpu_options_table(f"{r.scenario.model_dump_json(exclude={'concurrency'})} {specs}", r))


def _replica_check(r):
    """Report.replica_check, kept per session by scenario and specs: a rerun that changes neither (an expander, a
    chart) does not simulate again."""
    memo = st.session_state.setdefault("_replica_checks", {})
    key = (r.scenario, r.model, r.gpu, r.engine)
    if key not in memo:
        if len(memo) > 16:
            memo.clear()
        memo[key] = r.replica_check
    return memo[key]


@st.cache_data(max_entries=64, show_spinner=False)
def gpu_options_table(key: str, _r) -> view.Table:
    """The GPU options of a scenario, kept per scenario less its concurrency (and per specs): each option's
    capacity searches its own concurrency, so moving that input, the page's most moved, leaves the table as it
    was (tests/test_slo.py), and its ~60 capacity searches were two thirds of the tab's rerun."""
    return view_fleet.gpu_options_table(_r)


def compare_tab(r, catalog, pinned, link_base) -> None:
    from ui.state import pin_current, unpin

    s = r.scenario
    a, b = st.columns(2)
    a.button("Pin this scenario as A", on_click=pin_current, args=(s,), key="pin_btn")
    ra = None
    if pinned is not None:
        b.button("Unpin", on_click=unpin, key="unpin_btn")
        try:
            ra = evaluate(pinned, catalog)
        except ValueError as e:  # InputError and pydantic's: a pin from an old or edited link
            st.warning(f"The pinned scenario cannot be planned — {plain(e, MAX_MESSAGE_SHOWN)}", icon=":material/warning:")
    if ra is not None:
        st.caption("Inputs that differ: " + view_compare.changed_inputs(pinned, s, plain))
        styled = frame(view_compare.compare_table(ra, r)).style.apply(
            lambda row: ["background-color: #fff3cd" if row["differs"] else ""] * len(row), axis=1)
        st.table(styled, hide_index=True)
    st.markdown("**Export**")
    c1, c2, c3 = st.columns(3)
    check = st.session_state.get("_replica_checks", {}).get((r.scenario, r.model, r.gpu, r.engine))  # if it was run
    c1.download_button("Markdown report", markdown_report(r, link_base, check, pinned=ra), file_name="capacity-plan.md",
                       mime="text/markdown", on_click="ignore")  # fmt: skip  # a download changes nothing: no rerun
    # (which would also replace the other buttons' files while the browser may still be fetching one)
    data = r.to_dict() | {"replica_check": asdict(check) if check else None}  # as `calc plan --json`
    c2.download_button("JSON report", json.dumps(json_safe(data), indent=2, default=str), file_name="capacity-plan.json",
                       mime="application/json", on_click="ignore")  # fmt: skip
    if s.request_rate and check is None:
        c1.caption("The replica count's simulated check is in the exports once it has run (SLOs & replicas tab).")
    csv_button(r, c3)


def csv_button(r, container) -> None:
    c = r.curves
    data = curves_csv({"decode_vs_context": c.decode_vs_context, "concurrency_sweep": c.concurrency_sweep,
                       "occupancy_vs_length": c.occupancy_vs_length, "swap_vs_context": r.offload.curve})  # fmt: skip
    container.download_button("CSV of the curves", data, file_name="capacity-curves.csv", mime="text/csv",
                              on_click="ignore")  # fmt: skip


def log_tab(r, catalog) -> None:
    """Paste a vLLM startup log: our prediction beside every logged number, and an offer to calibrate."""
    from boundary.reconcile import reconcile
    from boundary.vllm_log import parse_log
    from calc.errors import InputError

    s = r.scenario
    if s.engine == "sglang":
        st.info("A pasted SGLang log is checked by SGLang's arithmetic (its pool's tokens, weights and pool against "
                "this scenario); a pasted vLLM log is planned as vLLM (its pool is vLLM's arithmetic, not SGLang's).",
                icon=":material/info:")  # fmt: skip
    st.caption("Paste the engine's startup lines (from 'Initializing … engine' to 'Maximum concurrency'). The "
               "log's own settings win; where it is silent (TP, PP, dtypes, max_model_len, …) this scenario's "
               "apply, and the GPU (unless the log names its device or a memory this GPU does not have) and, if "
               "the log does not name a shipped model, the model come from this scenario. A link does not carry "
               "the paste (a log is too long for an address): share the log itself beside it, or the "
               "`python -m calc reconcile LOGFILE` line.")  # fmt: skip
    # no max_chars: Streamlit's box drops a longer paste whole (not cut) and keeps the last text without a word; the
    # paste comes in whole (bounded by server.maxMessageSize) and is cut here, where the page can say so
    text = st.text_area("vLLM startup log", key="vllm_log_text", height=220)
    if not text.strip():
        return
    if len(text) > PASTE_CHARS:
        text = text[:PASTE_CHARS]
        st.warning(f"Only the first {PASTE_CHARS:,} characters of the paste are read: the rest was cut. The startup "
                   "lines come first, so what is left usually reconciles; for a whole log, `python -m calc reconcile "
                   f"LOGFILE` reads a file of up to {MAX_LOG_CHARS:,} bytes.", icon=":material/content_cut:")  # fmt: skip
    flags = {"gpu": s.gpu} | ({"model": s.model, "custom_model": s.custom_model} if s.model == "custom" else {})
    if is_sglang_log(text) and not has_vllm_lines(text):
        _sglang_log(text, s, catalog, flags)
        return
    defaults = {k: v for k, v in s.changed().items() if k in LOG_GAPS}  # where the log is silent, this scenario's
    named, fell_back, log, theirs = "", False, None, None
    try:
        log = parse_log(text)
        if (theirs := log_gpu(log, catalog, s.gpu)) is not None:  # the log's own device wins, as its settings do
            flags.pop("gpu")
        rec = reconcile(log, catalog, flags, defaults)
    except InputError as e:
        if e.field == "model" and s.model != "custom" and log is not None:
            try:
                rec = reconcile(log, catalog, flags | {"model": s.model}, defaults)
                fell_back, named = True, str(log.config.get("model") or "").strip()
            except ValueError as e2:
                st.warning(f"Cannot reconcile this log — {plain(view_compare.page_note(str(e2)), MAX_MESSAGE_SHOWN)}")
                return
        else:
            st.warning(f"Cannot reconcile this log — {plain(view_compare.page_note(str(e)), MAX_MESSAGE_SHOWN)}")
            return
    except ValueError as e:  # a pydantic error reconcile did not foresee: still a message, not a traceback
        st.warning(f"Cannot reconcile this log — {plain(type(e).__name__)}: {plain(e, MAX_MESSAGE_SHOWN)}")
        return
    if rec.gpu_assumed:
        st.warning(f"GPU assumed: {plain(rec.gpu_name)} — the log does not say; pick the GPU in the sidebar.")
    elif theirs is not None:
        st.info(f"The log ran on {plain(rec.gpu_name)} ({plain(rec.gpu_source, 160)}), not on this scenario's "
                f"{plain(r.gpu.name)}: reconciled on the log's GPU; adopting sets it too.")  # fmt: skip
    st.markdown(f"**{plain(rec.model_name)}** on **{plain(rec.gpu_name)}**")
    # held against this scenario's model, a log is another model's when its pool (or a failed start's KV need) does
    # not follow from this model's KV bytes per token: no calibration or fix comes of it (the same rule whether the
    # log names its model or not)
    checks = [rec.matches[k] for k in MODEL_CHECKS if rec.matches.get(k) is not None]
    foreign = fell_back and any(ok is False for ok in checks)
    wrong_gpu = any(n.startswith("WRONG GPU?") for n in rec.notes)
    if rec.failure:
        st.error(plain(rec.failure.message[0].upper() + rec.failure.message[1:]), icon=":material/block:")
        if not foreign:
            st.markdown("**To make it fit:**\n" + "\n".join(f"- {plain(fix)}" for fix in rec.failure.fixes))
    full = view_compare.reconcile_table(rec)  # its explanations under it: six columns scroll at 1,024 px
    table(view.Table(full.columns[:-1], [r[:-1] for r in full.rows], align=full.alignment[:-1]))
    if why := [f"- **{md_text(r[0])}**: {md_text(r[-1])}" for r in full.rows if r[-1] not in (fmt.DASH, "agrees")]:
        st.markdown("\n".join(why))
    for note in map(view_compare.page_note, rec.notes):  # the sidebar's field names, not the command line's flags
        if note.startswith("WRONG GPU?"):
            st.warning(plain(note, MAX_MESSAGE_SHOWN), icon=":material/warning:")
        else:
            st.caption(f"note: {plain(note, MAX_MESSAGE_SHOWN)}")
    if foreign:
        whose = f"of {plain(named, 120)}, which is not a shipped model" if named else "probably of another model"
        st.warning(f"The logged KV cache does not follow from the logged memory with {plain(s.model)}'s KV bytes "
                   f"per token: the log is {whose}. Pick that model (or upload its config.json) in the sidebar, then "
                   "paste the log again; calibrating this model from it would not reproduce it.",
                   icon=":material/warning:")  # fmt: skip
    elif fell_back:
        said = f"is of {plain(named, 120)}, not a shipped model" if named else "names no shipped model"
        how = ("whose pool it reproduces" if checks else "which it cannot confirm: it logs no block count, size or "
               "concurrency that would follow from the model's KV bytes per token")  # fmt: skip
        st.info(f"The log {said}; reconciled as {plain(s.model)} (this scenario's model), {how}.")
    if rec.calibration and not foreign and wrong_gpu:
        st.caption("No calibration offered: the log ran on another GPU than this one (the warning above). Pick it in "
                   "the sidebar, then paste the log again.")  # fmt: skip
    elif rec.calibration and not foreign:
        st.markdown("**Calibrate this scenario from the log** (the overrides travel in the link; with them, the "
                    "log's own settings — TP, PP, max_model_len, … — that reproduce its pool):")  # fmt: skip
        st.code(view_compare.calibration_text(rec.adopted), language=None, wrap_lines=True)
        if (mml := rec.adopted.get("max_model_len")) is not None and mml < s.request_len:
            st.caption(f"Adopting sets the log's max_model_len {mml:,}, shorter than this scenario's requests "
                       f"({s.request_len:,} tokens): the plan will then say they do not fit; shorten input_len or "
                       "output_len after adopting.")  # fmt: skip
        st.button("Adopt the logged overheads", on_click=_adopt, args=(rec.adopted | {"gpu": rec.scenario.gpu},),
                  key="adopt_btn")  # fmt: skip


def _sglang_log(text: str, s, catalog, flags: dict) -> None:
    """An SGLang log: its weights, pool and tokens against this scenario's model and GPU under SGLang
    (boundary.sglang_log); the scenario's model where the log names none, its fraction where it runs SGLang."""
    from boundary.sglang_log import check_sglang, parse_sglang_log
    from boundary.sglang_log import table as sglang_table
    from calc.errors import InputError

    flags = flags | {"model": s.model} | ({"gpu_memory_utilization": s.gpu_memory_utilization}
                                           if s.engine == "sglang" else {})  # fmt: skip
    try:
        c = check_sglang(parse_sglang_log(text), catalog, flags)
    except (InputError, ValueError) as e:
        st.warning(f"Cannot check this SGLang log — {plain(view_compare.page_note(str(e)), MAX_MESSAGE_SHOWN)}")
        return
    st.markdown(f"**SGLang log: {plain(c.model_name)}** on **{plain(c.gpu_name)}** (this scenario's model and GPU)")
    table(sglang_table(c))
    for note in map(view_compare.page_note, c.notes):
        st.caption(f"note: {plain(note, MAX_MESSAGE_SHOWN)}")
    st.caption("To plan with the logged figures, set engine sglang and these memory overrides in the sidebar:")
    st.code(view_compare.calibration_text(c.calibration), language=None, wrap_lines=True)


def log_gpu(log, catalog, page_gpu: str) -> str | None:
    """The GPU a pasted log names when it is not the page's: by its device name or fixture header, or by a logged
    total memory the page's GPU does not have (boundary.log_names.detect_gpu); None when it names none or agrees."""
    from boundary.log_names import detect_gpu

    total = log.first("total_memory_gib")
    gid, how = detect_gpu(log, catalog, total.value if total else None)
    if gid is None or gid == page_gpu:
        return None
    if how.startswith("logged total memory") and abs(catalog.gpus[page_gpu].memory_gib - total.value) <= 0.02:
        return None  # the page's GPU has that memory too: nothing says the log ran elsewhere
    return gid


LOG_GAPS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "dtype", "kv_cache_dtype", "max_model_len",
            "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "enforce_eager", "block_size")
"""Engine settings the page's scenario lends a pasted log where the log does not state them."""


def _adopt(calibration: dict) -> None:
    """The logged overrides become the scenario's, also for a field whose sidebar group is closed (ui/held.py
    picks its value up on the next run)."""
    from calc.scenario import Scenario

    for k, v in calibration.items():
        if k in Scenario.model_fields:
            st.session_state[k] = v
