"""The verdict, headline metrics with their formulas, the smallest changes that fit, link and CLI."""

from __future__ import annotations

import streamlit as st

from boundary.text import verdict
from boundary.urlstate import cli_command, plain, query_string
from calc.formulas import formulas
from calc.units import GiB


def headline(r, link_base: str) -> None:
    s, m, f, lat, fl = r.scenario, r.memory, r.fit, r.latency, r.fleet
    st.markdown(f"#### {plain(r.model_name)} on {plain(r.gpu_name)} · TP {s.tensor_parallel_size} · PP "
                f"{s.pipeline_parallel_size} · weights {plain(m.weight_format.label)} · KV {s.kv_cache_dtype}")  # fmt: skip
    box = st.success if f.fits else st.error
    box(verdict(r), icon=":material/check_circle:" if f.fits else ":material/block:")
    c = st.columns(6)
    c[0].metric("Available KV cache", f"{m.kv_cache_memory_bytes / GiB:.2f} GiB", help="per GPU; vLLM's log line")
    c[1].metric(
        "KV cache (tokens)",
        f"{m.kv_cache_tokens:,}",
        help=f"vLLM's 'GPU KV cache size': {m.num_gpu_blocks:,} blocks × {m.block_size}",
    )
    c[2].metric(
        f"Max conc. @ {s.max_model_len:,}",
        f"{m.max_concurrency:.2f}x",
        help="vLLM's 'Maximum concurrency for max_model_len tokens per request'",
    )
    c[3].metric(
        "Fit at this length",
        f"{f.max_concurrency_at_length:,}",
        help="most requests of input_len + output_len held at once",
    )
    c[4].metric(
        f"Longest @ C={s.concurrency}",
        f"{f.longest_request_at_concurrency:,}",
        help="longest prompt + output each request can have",
    )
    c[5].metric("Pool used", f"{f.pool_fraction:.0%}" if f.pool_fraction != float("inf") else "—")
    c = st.columns(6)
    c[0].metric(
        "TTFT (estimate)", f"{lat.ttft_s * 1e3:,.0f} ms", help=f"prefill floor {lat.prefill.floor_s * 1e3:.1f} ms"
    )
    c[1].metric(
        "TPOT (estimate)", f"{lat.tpot_s * 1e3:.1f} ms", help=f"decode-step floor {lat.decode.floor_s * 1e3:.2f} ms"
    )
    c[2].metric("End-to-end", f"{lat.e2e_s:.2f} s")
    c[3].metric(
        "Within both SLOs",
        f"{r.conformance.conformance:.1%}",
        help="share of requests meeting TTFT and TPOT SLOs (goodput / throughput)",
    )
    if fl.replicas is not None:
        c[4].metric(
            "Replicas / GPUs", f"{fl.replicas} / {fl.gpus}", help=f"capacity {fl.capacity.rps:.2f} req/s per replica"
        )
    elif s.request_rate:
        c[4].metric("Replicas / GPUs", "—", help="one replica cannot meet the SLOs at the quota")
    else:
        c[4].metric(
            "Capacity (req/s)",
            f"{fl.capacity.rps:.2f}",
            help="per replica, at the conformance quota; set a request rate for replicas",
        )
    cost = fl.cost_per_million_output_tokens
    c[5].metric(
        "Cost / M output tok",
        f"{cost:.3f} {fl.currency}" if cost is not None else "—",
        help="price per GPU-hour × GPUs / output tokens per hour; set a price if the GPU spec has none",
    )
    if s.request_rate and fl.replicas is None and fl.capacity.reason:
        st.caption(f"• no replica count: {fl.capacity.reason}")
    if not f.fits:
        for reason in f.reasons:
            st.caption(f"• {reason}")
        if r.suggestions:
            st.markdown("**Smallest changes that fit**")
            rows = [{"change": x.change, "GPU blocks": x.num_gpu_blocks, "requests at this length": x.max_concurrency_at_length,
                     "pool used": f"{x.pool_fraction:.0%}", "link": f"{link_base}?{query_string(s.model_copy(update=x.fields))}"}
                    for x in r.suggestions]  # fmt: skip
            st.dataframe(rows, hide_index=True, column_config={"link": st.column_config.LinkColumn("open")})
    with st.expander("Show the formulas (with this scenario's numbers)"):
        for name, text in formulas(r).items():
            st.markdown(f"**{name}**")
            st.code(text, language=None, wrap_lines=True)
    for note in r.notes:
        st.caption(f"note: {plain(note)}")
    with st.expander("Share: link and command line"):
        st.caption("The address bar already holds this scenario; copy it or this link:")
        st.code(f"{link_base}?{query_string(s)}", language=None, wrap_lines=True)
        st.code(cli_command(s), language="bash", wrap_lines=True)
