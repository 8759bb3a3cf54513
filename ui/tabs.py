"""The detail tabs. Tabs are lazy (on_change="rerun"): only the open tab builds its charts."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

import charts
from boundary.markdown import curves_csv, markdown_report
from boundary.urlstate import MAX_MESSAGE_SHOWN, plain
from calc.evaluate import evaluate, json_safe
from calc.units import GiB

TABS = ["Memory", "Latency", "Beyond the GPU", "SLOs & replicas", "Compare & export", "Check a vLLM log"]


def memory_tab(r) -> None:
    m = r.memory
    st.plotly_chart(charts.memory_breakdown(r), key="chart_mem")
    a, b = st.columns(2)
    a.plotly_chart(charts.occupancy(r, r.curves.occupancy_vs_length), key="chart_occupancy")
    b.plotly_chart(charts.concurrency_vs_context(r, r.curves.concurrency_vs_context), key="chart_conc_ctx")
    st.caption(f"Parameters: {m.params.total / 1e9:.2f} B total, {m.params.active / 1e9:.2f} B active; weights "
               f"{m.weights_bytes / GiB:.2f} GiB in all ({plain(m.weight_format.label)}). KV: {m.kv_bytes_per_token:,.0f} B "
               f"per token ({m.kv_groups} group(s), {m.layers_per_group} layers per group"
               f"{f', {m.padding_layers} padding layers' if m.padding_layers else ''}).")  # fmt: skip


def latency_tab(r) -> None:
    lat = r.latency
    a, b = st.columns(2)
    a.plotly_chart(charts.roofline(r), key="chart_roofline")
    b.plotly_chart(charts.decode_vs_context(r, r.curves.decode_vs_context), key="chart_decode_ctx")
    a, b = st.columns(2)
    a.plotly_chart(charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep), key="chart_thr")
    b.plotly_chart(charts.chunk_spike(r), key="chart_chunk")
    st.plotly_chart(charts.latency_breakdown(r), key="chart_breakdown")
    rows = [
        {"quantity": "prefill", "floor (ms)": round(lat.prefill.floor_s * 1e3, 2), "estimate (ms)": round(lat.prefill.estimate_s * 1e3, 2),
         "bound by": "compute" if lat.prefill.compute_bound else "bandwidth",
         "intensity (FLOP/byte)": lat.prefill.intensity_flop_per_byte},
        {"quantity": f"decode step ({lat.decode_batch} seqs)", "floor (ms)": lat.decode.floor_s * 1e3,
         "estimate (ms)": lat.decode.estimate_s * 1e3, "bound by": "compute" if lat.decode.compute_bound else "bandwidth",
         "intensity (FLOP/byte)": lat.decode.intensity_flop_per_byte},
    ]  # fmt: skip
    st.dataframe(rows, hide_index=True)
    st.caption(
        f"Streaming {lat.stream_tokens_per_s:.1f} tokens/s (a reader takes 4.5–10); average over the request "
        f"{lat.average_tokens_per_s:.1f} tokens/s, which describes no moment. Throughput {lat.output_tokens_per_s:,.0f} "
        f"output tokens/s; counting prompts {lat.total_tokens_per_s:,.0f} tokens/s, which flatters long prompts. "
        f"Prefill→decode KV transfer of the prompt: {lat.kv_transfer_s * 1e3:.1f} ms vs prefill {lat.prefill.estimate_s * 1e3:.1f} ms."
    )
    if lat.calibrated_mbu or lat.calibrated_mfu or lat.inferred_chunk_tokens:
        st.info(
            (f"Measured ITL → achieved MBU {lat.calibrated_mbu:.1%}. " if lat.calibrated_mbu else "")
            + (f"Measured prefill → achieved MFU {lat.calibrated_mfu:.1%}. " if lat.calibrated_mfu else "")
            + (f"ITL p99 − p50 → chunk ≈ {lat.inferred_chunk_tokens:,.0f} tokens." if lat.inferred_chunk_tokens else "")
        )


def beyond_tab(r) -> None:
    off, pre, s = r.offload, r.prefix, r.scenario
    st.plotly_chart(charts.swap_ratio(r), key="chart_swap")
    st.markdown(
        f"Preempting a {s.request_len:,}-token context: recompute {off.recompute_s * 1e3:.1f} ms vs swap "
        f"{off.swap_s * 1e3:.1f} ms ({'one way' if s.swap_overlap else 'out and back'}) → **{off.winner} wins** "
        f"(ratio {off.swap_recompute_ratio:.2f} one way, {off.swap_recompute_ratio_both_ways:.2f} both ways). Closed "
        f"form valid between the knee ({off.knee_tokens:,.0f} tokens) and the attention crossover "
        f"({off.attention_crossover_tokens:,.0f}): {'yes' if off.closed_form_valid else 'no'}."
    )
    st.dataframe([{"tier": t.name, "bandwidth (GB/s)": round(t.bandwidth_bytes_per_s / 1e9, 1),
                   "reload prefix (ms)": round(t.reload_s * 1e3, 3), "recompute (ms)": round(t.recompute_s * 1e3, 1), "keep it?": "yes" if t.worth_keeping else "no, recompute",
                   "adds (tokens)": round(t.capacity_tokens)} for t in off.tiers], hide_index=True)  # fmt: skip
    a, b = st.columns(2)
    a.metric(f"Conversation of {s.turns} turns × {s.tokens_per_turn}", f"{pre.prefix_reuse_saving:.1f}× fewer prefill tokens",
             help=f"{pre.conversation_tokens_without_reuse:,} without reuse vs {pre.conversation_tokens_with_reuse:,} with")  # fmt: skip
    a.caption(
        f"Last turn TTFT: {pre.last_turn_ttft_without_reuse_s * 1e3:.0f} ms → {pre.last_turn_ttft_with_reuse_s * 1e3:.0f} ms with reuse"
    )
    b.metric(f"Shared prompt of {s.shared_prefix_len:,} tokens", f"{pre.max_concurrency_with_sharing:,} requests fit",
             help=f"{pre.max_concurrency_without_sharing:,} without sharing; {pre.blocks_saved:,} blocks saved at C={s.concurrency}")  # fmt: skip
    b.caption(f"TTFT saved per request: {pre.ttft_saved_per_request_s * 1e3:.1f} ms. Document of {s.document_len:,} tokens "
              f"asked {s.document_queries}×: {pre.document_tokens_without_reuse:,} → {pre.document_tokens_with_reuse:,} "
              f"prefill tokens; repeat TTFT {pre.document_ttft_repeat_s * 1e3:.0f} ms vs {pre.document_ttft_first_s * 1e3:.0f} ms.")  # fmt: skip
    st.warning(pre.tenant_note, icon="🔒")


def slo_tab(r) -> None:
    s, lat, c, fl = r.scenario, r.latency, r.conformance, r.fleet
    a, b = st.columns(2)
    a.plotly_chart(charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep), key="goodput")
    b.plotly_chart(charts.fanout(r), key="chart_fanout")
    st.markdown(
        f"P(TTFT ≤ {s.slo_ttft_s:g} s) = {c.p_ttft:.1%} · P(TPOT ≤ {s.slo_tpot_s:g} s) = {c.p_tpot:.1%} → conformance "
        f"{c.conformance:.1%}, goodput {r.goodput_rps:.2f} of {lat.requests_per_s:.2f} req/s. "
        f"Strict variant (every gap ≤ SLO, max ITL): {c.strict_conformance:.1%}. Capacity of one replica at the "
        f"{s.conformance_quota:.0%} quota: {fl.capacity.rps:.2f} req/s at {fl.capacity.concurrency} in flight "
        f"(limited by {fl.capacity.limited_by})."
    )
    tl = r.tails
    st.caption(f"Fan-out to {tl.fanout}: P(at least one call beyond its p99) = {tl.p_any_slow:.1%}; "
               f"each call must meet its {tl.per_call_quantile_label} for the whole to meet p99.")  # fmt: skip
    st.markdown("**Simulation** (log-normal, seeded; the seed's two configurations, then this scenario)")
    rows = r.simulation
    st.dataframe([{"config": x.name, "req/s": round(x.requests_per_s, 1), "good/s": round(x.goodput_rps, 1),
                   "conformant": f"{x.conformance:.1%}", "TTFT>SLO": f"{x.ttft_over_slo:.1%}", "TTFT mean (ms)": round(x.ttft_mean_ms),
                   "TTFT p50/p95/p99 (ms)": f"{x.ttft_p50_ms:.0f} / {x.ttft_p95_ms:.0f} / {x.ttft_p99_ms:.0f}",
                   "TPOT p50/p95/p99 (ms)": f"{x.tpot_p50_ms:.0f} / {x.tpot_p95_ms:.0f} / {x.tpot_p99_ms:.0f}"} for x in rows],
                 hide_index=True)  # fmt: skip
    st.caption("A larger batch raises throughput while goodput falls: +60 % requests served, −15 % served well.")
    st.markdown("**GPU options for this model** (smallest TP that serves; cost where a price is known)")
    opts = r.gpu_options
    st.dataframe([{"GPU": r.other_gpus[o.gpu].name, "TP": o.tensor_parallel_size, "capacity (req/s)": round(o.capacity_rps, 2),
                   "replicas": _short(o.replicas), "GPUs": _short(o.gpus),
                   "cost / M output tokens": _money(o.cost_per_million_output_tokens, o.currency)}
                  for o in opts], hide_index=True)  # fmt: skip


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
            st.warning(
                f"The pinned scenario cannot be planned — {plain(e, MAX_MESSAGE_SHOWN)}", icon=":material/warning:"
            )
            ra = None
    if ra is not None:
        da, db = json_safe(ra.to_dict()), json_safe(r.to_dict())
        keys = ["model", "gpu", "num_gpu_blocks", "kv_cache_tokens", "max_concurrency", "fits", "ttft_s", "tpot_s", "e2e_s",
                "goodput_rps", "capacity_rps_per_replica", "replicas", "gpus", "cost_per_million_output_tokens"]  # fmt: skip
        rows = [{"quantity": k, "A (pinned)": _short(da.get(k), k, da), "B (current)": _short(db.get(k), k, db),
                 "differs": "◀ ▶" if da.get(k) != db.get(k) else ""} for k in keys]  # fmt: skip
        changed = {
            k: (getattr(pinned, k), getattr(s, k)) for k in type(s).model_fields if getattr(pinned, k) != getattr(s, k)
        }
        st.caption(
            "Inputs that differ: "
            + (", ".join(f"{k}: {plain(va)} → {plain(vb)}" for k, (va, vb) in changed.items()) or "none")
        )
        table = pd.DataFrame(rows)
        st.dataframe(table.style.apply(lambda row: ["background-color: #fff3cd" if row["differs"] else ""] * len(row),
                                       axis=1), hide_index=True, height=35 * (len(rows) + 1) + 3)  # fmt: skip
    st.markdown("**Export**")
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "Markdown report", markdown_report(r, link_base), file_name="capacity-plan.md", mime="text/markdown"
    )
    c2.download_button("JSON report", json.dumps(json_safe(r.to_dict()), indent=2, default=str), file_name="capacity-plan.json",
                       mime="application/json")  # fmt: skip
    csv_button(r, c3)


def _short(v, key: str = "", d: dict | None = None) -> str:
    """A table cell: '—' for no value (never 'None'); a cost carries its currency."""
    if v is None:
        return "—"
    if key.startswith("cost") and d and d.get("currency"):
        return f"{v:,.4g} {d['currency']}"
    return f"{v:,.4g}" if isinstance(v, float) else str(v)


def _money(v: float | None, currency: str | None) -> str:
    return "—" if v is None else f"{v:,.3f} {currency or ''}".rstrip()


def csv_button(r, container) -> None:
    c = r.curves
    data = curves_csv({"decode_vs_context": c.decode_vs_context, "concurrency_sweep": c.concurrency_sweep,
                       "occupancy_vs_length": c.occupancy_vs_length, "swap_vs_context": r.offload.curve})  # fmt: skip
    container.download_button("CSV of the curves", data, file_name="capacity-curves.csv", mime="text/csv")


def log_tab(r, catalog) -> None:
    """Paste a vLLM startup log: our prediction beside every logged number, and an offer to calibrate."""
    from boundary.cli_reconcile import format_value
    from boundary.reconcile import reconcile
    from boundary.vllm_log import parse_log
    from calc.errors import InputError

    s = r.scenario
    st.caption("Paste the engine's startup lines (from 'Initializing … engine' to 'Maximum concurrency'). The "
               "log's own settings win; the GPU and, if the log does not name a shipped model, the model come "
               "from this scenario.")  # fmt: skip
    text = st.text_area("vLLM startup log", key="vllm_log_text", height=220, max_chars=400_000)
    if not text.strip():
        return
    flags = {"gpu": s.gpu} | ({"model": s.model, "custom_model": s.custom_model} if s.model == "custom" else {})
    try:
        rec = reconcile(parse_log(text), catalog, flags)
    except InputError as e:
        if e.field == "model" and s.model != "custom":
            try:
                rec = reconcile(parse_log(text), catalog, flags | {"model": s.model})
                st.info(f"The log names no shipped model; reconciled as {plain(s.model)} (this scenario's model).")
            except ValueError as e2:
                st.warning(f"Cannot reconcile this log — {plain(e2, MAX_MESSAGE_SHOWN)}")
                return
        else:
            st.warning(f"Cannot reconcile this log — {plain(e, MAX_MESSAGE_SHOWN)}")
            return
    except ValueError as e:  # a pydantic error reconcile did not foresee: still a message, not a traceback
        st.warning(f"Cannot reconcile this log — {plain(type(e).__name__)}: {plain(e, MAX_MESSAGE_SHOWN)}")
        return
    if rec.gpu_assumed:
        st.warning(f"GPU assumed: {plain(rec.gpu_name)} — the log does not say; pick the GPU in the sidebar.")
    st.markdown(f"**{plain(rec.model_name)}** on **{plain(rec.gpu_name)}**")
    if rec.failure:
        st.error(plain(rec.failure.message[0].upper() + rec.failure.message[1:]), icon=":material/block:")
        st.markdown("**To make it fit:**\n" + "\n".join(f"- {plain(fix)}" for fix in rec.failure.fixes))
    rows = [{"quantity": x.quantity, "logged": format_value(x.logged, x.unit), "predicted": format_value(x.predicted, x.unit),
             "residual (logged − predicted)": format_value(x.residual, x.unit, signed=True),
             "within rounding": {True: "yes", False: "no", None: ""}[x.matches], "explanation": x.explanation,
             } for x in rec.rows]  # fmt: skip
    st.dataframe(rows, hide_index=True)
    for note in rec.notes:
        st.caption(f"note: {plain(note)}")
    if rec.calibration:
        st.markdown("**Calibrate this scenario from the log** (the overrides travel in the link):")
        st.code(", ".join(f"{k}={v:.0f}" if k.endswith("_bytes") else f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in rec.calibration.items()),
                language=None, wrap_lines=True)  # fmt: skip
        st.button("Adopt the logged overheads", on_click=_adopt, args=(rec.calibration,), key="adopt_btn")


def _adopt(calibration: dict) -> None:
    for k, v in calibration.items():
        if k in st.session_state:
            st.session_state[k] = v
