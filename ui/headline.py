"""The headline: the verdict and its numbers first (drawn before anything else on the page), then what is missing,
the smallest changes that fit, notes, formulas, link and command line. Text comes from boundary.view."""

from __future__ import annotations

from urllib.parse import quote

import streamlit as st

from boundary import fmt, view, view_fleet
from boundary.urlstate import cli_command, plain, query_string
from calc.engine_defaults import server_defaults
from calc.evaluate import sglang_rest_short_bytes
from calc.serve_command import joined, plan_serve_commands
from ui.widgets import lazy_expander

SGLANG_FLAGS = {"max_num_batched_tokens": "--chunked-prefill-size", "max_num_seqs": "--max-running-requests"}


def _metrics(items: list[view.Metric]) -> None:
    for col, x in zip(st.columns(len(items)), items, strict=True):
        value, why_missing = fmt.split_missing(x.value)
        if x.band or why_missing:
            col.metric(x.label, value, help=x.help or None, delta=x.band or why_missing, delta_color="off",
                       delta_arrow="off")  # fmt: skip
        else:
            col.metric(x.label, value, help=x.help or None, delta=x.short or None, delta_color="red",
                       delta_arrow="off")


def headline_top(r) -> None:
    """The verdict and the headline numbers: all a reader needs from a link, so it is drawn first."""
    st.markdown(f"#### {plain(view.title(r), 400)}")
    ok = r.fit.fits
    if ok and sglang_rest_short_bytes(r.scenario, r.memory):  # it fits the pool, and the server would not last
        st.warning(view.verdict(r), icon=":material/warning:")
    else:
        (st.success if ok else st.error)(view.verdict(r), icon=":material/check_circle:" if ok else ":material/block:")
    _metrics(view.memory_metrics(r))
    if view.state_line(r):
        st.caption(view.state_line(r))
    why = view.no_latency_reason(r)
    if why:
        st.caption(f"No latency, SLO, cost or benchmark figures: {why}.")
        return
    _metrics(view.latency_metrics(r))


FORMULAS, SHARE = "_open formulas", "_open share"  # session-state keys of the two expanders (True while open)


def headline_rest(r, link_base: str, given=None) -> None:
    """`given`: the scenario as the inputs hold it, which the Share box links to (the Report's may carry what the
    engine runs of it: SGLang's cap on a hybrid's running requests, a checkpoint's KV precision)."""
    s = r.scenario
    missing = view.missing_lines(r)
    if missing:
        st.markdown("**What is missing (per GPU)**\n" + "\n".join(f"- {x}" for x in missing))
    if r.suggestions:
        st.markdown("**Smallest changes that fit** (each link opens that scenario)")
        from ui.tabs import frame

        t = frame(view_fleet.suggestions_table(r))
        t["link"] = [f"[open]({link_base}?{query_string(s.model_copy(update=x.fields))})" for x in r.suggestions]
        st.table(t, hide_index=True)
    elif not r.fit.fits:
        st.caption(view.NO_SINGLE_CHANGE + " (the **Find a deployment** tab)")
    if r.serves and not r.fit.fits:
        st.caption(view.unfit_note(r))
    if s.request_rate and r.fleet.replicas is None and r.serves:
        st.caption(f"No replica count: {plain(r.fleet.capacity.reason, 400)}")
    if s.shared_prefix_len:
        p = r.prefix
        st.caption(f"With the shared {s.shared_len:,}-token system prompt stored once: "
                   f"{p.max_concurrency_with_sharing:,} requests of this length fit ({p.max_concurrency_without_sharing:,} "
                   f"without sharing); {p.blocks_saved:,} blocks saved at C = {s.rank_concurrency:,}"
                   + (" (each data-parallel rank's pool)." if s.data_parallel_size > 1 else "."))  # fmt: skip
    if r.notes:
        st.info("**Notes and assumptions**\n" + "\n".join(f"- {plain(n, 600)}" for n in r.notes), icon=":material/info:")
    if own := server_defaults(s, r.gpu, bool(r.model.routed_experts), r.memory.pool_token_capacity, r.memory.running_slots):  # the note above says what they change; one click plans them
        server = "vllm serve's" if s.engine == "vllm" else "SGLang's"
        flags = SGLANG_FLAGS if s.engine == "sglang" else {}  # the server's own names for the limits
        st.markdown(f"[Open this scenario with {server} own batch limits on this GPU]"
                    f"({link_base}?{query_string(s.model_copy(update=own))}) "
                    f"({', '.join(f'{flags.get(k, k)} {v:,}' for k, v in own.items())})")  # fmt: skip
    if formulas := lazy_expander("Show the formulas (with this scenario's numbers)", FORMULAS):  # ~20 elements
        with formulas:
            for name, text in view.formulas(r).items():
                st.markdown(f"**{plain(name)}**")
                st.code(text, language=None, wrap_lines=True)
    if share := lazy_expander("Share: link and command line", SHARE):
        with share:
            st.caption("The address bar already holds this scenario; copy it or this link:")
            # the address bar's open tab and pinned comparison, which a reader should land on too
            extra = [f"{k}={quote(v)}" for k in ("pin", "tab") if (v := st.query_params.get(k))]
            shared = given or s
            query = "&".join(x for x in (query_string(shared), *extra) if x)
            st.code(f"{link_base}?{query}" if query else link_base, language=None, wrap_lines=True)
            st.code(cli_command(shared), language="bash", wrap_lines=True)
            st.caption("The server this scenario describes:")
            st.code(joined(plan_serve_commands(r)), language="bash", wrap_lines=True)
