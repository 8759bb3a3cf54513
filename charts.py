"""Plotly figure builders: pure functions from Report data to go.Figure. Every chart has a title, axis units and
a marker for the scenario's current point. No Streamlit here, so the builders are tested on their own.

Figures are assembled as one dict and validated once (`go.Figure(dict)`): about 1 ms each, against 4–7 ms for
trace-by-trace `add_*` calls — the difference decides whether a slider rerun stays under 50 ms.
"""

from __future__ import annotations

import plotly.graph_objects as go

from calc.tails import p_any_slow
from calc.units import GiB

CURRENT = dict(symbol="star", size=16, color="#d62728", line=dict(width=1, color="black"))


def _line(x, y, name, **kw) -> dict:
    return dict(type="scatter", x=list(x), y=list(y), mode=kw.pop("mode", "lines"), name=name, **kw)


def _here(x, y, name="this scenario") -> dict:
    return dict(type="scatter", x=[x], y=[y], mode="markers", marker=CURRENT, name=name)


def _hline(y, text) -> tuple[dict, dict]:
    shape = dict(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y, line=dict(dash="dash", color="gray"))
    note = dict(xref="paper", x=1, y=y, text=text, showarrow=False, xanchor="right", yanchor="bottom")
    return shape, note


def _fig(title, x_title, y_title, traces, *, height=380, shapes=(), notes=(), **layout) -> go.Figure:
    for axis in ("xaxis", "yaxis"):  # log axes: label the decades only (plotly's 2/5 minor labels read as data)
        if layout.get(axis, {}).get("type") == "log":
            layout[axis] = {"dtick": 1, **layout[axis]}
    lay = dict(
        title=dict(text=title),
        xaxis=dict(title=dict(text=x_title), **layout.pop("xaxis", {})),
        yaxis=dict(title=dict(text=y_title), **layout.pop("yaxis", {})),
        height=height,
        margin=dict(l=60, r=20, t=60, b=50),
        legend=layout.pop("legend", dict(orientation="h", y=-0.25)),
        shapes=list(shapes),
        annotations=list(notes),
        **layout,
    )
    return go.Figure(dict(data=traces, layout=lay))


def _stacked(title, x_title, label, parts) -> go.Figure:
    bars = [dict(type="bar", y=[label], x=[v], name=f"{n} {v:.2f}", orientation="h") for n, v in parts]
    return _fig(title, x_title, "", bars, height=300, barmode="stack", legend=dict(orientation="h", y=-0.6))


def memory_breakdown(r) -> go.Figure:
    m = r.memory
    parts = [
        ("weights", m.weights_bytes_per_gpu),
        ("activation peak", m.activation_bytes),
        ("non-torch", m.non_torch_bytes),
        ("CUDA graphs", m.cudagraph_bytes),
        ("KV cache pool", max(0.0, m.kv_cache_memory_bytes)),
        ("headroom (1 − utilization)", m.headroom_bytes),
    ]
    return _stacked(f"GPU memory per device: {m.total_memory_bytes / GiB:.2f} GiB (legend in GiB)", "memory (GiB)",
                    "per GPU", [(n, b / GiB) for n, b in parts])  # fmt: skip


def occupancy(r, pts) -> go.Figure:
    s, fit = r.scenario, r.fit
    shape, note = _hline(100, "pool full: vLLM preempts")
    return _fig(
        f"KV pool occupancy at {s.concurrency} concurrent requests (output {s.output_len} tokens)",
        "prompt + output length (tokens)",
        "share of the KV pool (%)",
        [_line([p.request_tokens for p in pts], [p.pool_fraction * 100 for p in pts], f"{s.concurrency} × blocks(L) / pool"),
         _here(fit.request_tokens, min(fit.pool_fraction, 10) * 100)],
        shapes=[shape], notes=[note],
    )  # fmt: skip


def concurrency_vs_context(r, pts) -> go.Figure:
    s = r.scenario
    return _fig(
        "Maximum concurrency vs max_model_len (vLLM's startup line)",
        "max_model_len (tokens)",
        "max concurrency (requests)",
        [_line([p.max_model_len for p in pts], [p.max_concurrency for p in pts], "this pool"),
         _here(s.max_model_len, max(r.memory.max_concurrency, 1e-3))],
        xaxis=dict(type="log"), yaxis=dict(type="log"),
    )  # fmt: skip


def roofline(r) -> go.Figure:
    lat = r.latency
    P, B = lat.peak_flop_per_s, lat.bandwidth_bytes_per_s
    xs = [0.5, lat.ridge_flop_per_byte, max(1e5, lat.prefill.intensity_flop_per_byte * 4)]
    ys = [min(x * B, P) / 1e12 for x in xs]
    traces = [
        _line(xs, ys, "roofline (peak)", line=dict(color="black")),
        _line([lat.ridge_flop_per_byte] * 2, [ys[0], P / 1e12], "ridge point", line=dict(dash="dot", color="gray")),
    ]
    for name, ph in (("prefill", lat.prefill), ("decode step", lat.decode)):
        t = _here(ph.intensity_flop_per_byte, ph.flop / ph.estimate_s / 1e12, f"{name} (estimate)")
        t.update(mode="markers+text", text=[name], textposition="top center")
        if name == "prefill":
            t["marker"] = dict(size=14, color="#1f77b4")
        traces.append(t)
    return _fig(f"Roofline ({lat.compute_dtype}, per GPU): ridge {lat.ridge_flop_per_byte:.0f} FLOP/byte",
                "arithmetic intensity (FLOP/byte)", "attainable (TFLOP/s)", traces,
                xaxis=dict(type="log"), yaxis=dict(type="log"))  # fmt: skip


def decode_vs_context(r, pts) -> go.Figure:
    lat = r.latency
    x = [p.context for p in pts]
    return _fig(
        f"Decode step at {lat.decode_batch} running sequences", "context per sequence (tokens)", "step time (ms)",
        [_line(x, [p.floor_s * 1e3 for p in pts], "floor (bandwidth/compute)"),
         _line(x, [p.estimate_s * 1e3 for p in pts], "estimate (step model)"),
         _here(lat.decode_context, lat.decode.estimate_s * 1e3)],
    )  # fmt: skip


def throughput_vs_concurrency(r, pts) -> go.Figure:
    s = r.scenario
    x = [p.concurrency for p in pts]
    return _fig(
        "Throughput, goodput and per-user rate vs concurrency", "concurrent requests", "output tokens/s (all users)",
        [_line(x, [p.output_tokens_per_s for p in pts], "throughput"),
         _line(x, [p.goodput_rps * s.output_len for p in pts], "goodput (within both SLOs)"),
         _line(x, [p.per_user_tokens_per_s for p in pts], "per user (tok/s, right axis)", yaxis="y2", line=dict(dash="dot")),
         _here(s.concurrency, r.latency.output_tokens_per_s)],
        xaxis=dict(type="log"), yaxis2=dict(title=dict(text="per-user tokens/s"), overlaying="y", side="right"),
    )  # fmt: skip


def latency_breakdown(r) -> go.Figure:
    s, lat = r.scenario, r.latency
    parts = [("queue", s.queue_s), ("prefill", lat.prefill.estimate_s), ("decode steps the chunks ride on", lat.chunk_riding_s),
             ("front-end", lat.request_overhead_s), (f"{s.output_len - 1} × TPOT", (s.output_len - 1) * lat.tpot_s)]  # fmt: skip
    return _stacked(f"End-to-end {lat.e2e_s:.2f} s = TTFT {lat.ttft_s * 1e3:.0f} ms + (N−1) × TPOT "
                    f"{lat.tpot_s * 1e3:.1f} ms (legend in s)", "time (s)", "request", parts)  # fmt: skip


def chunk_spike(r) -> go.Figure:
    lat, s = r.latency, r.scenario
    steps = ["plain decode step", f"step + {min(lat.chunk_tokens, s.input_len):,}-token chunk"]
    shape, note = _hline(s.slo_tpot_s * 1e3, "TPOT SLO")
    return _fig(
        f"Chunked prefill: a {s.input_len:,}-token prompt takes {lat.prefill_steps} step(s)", "", "step time (ms)",
        [dict(type="bar", x=steps, y=[lat.itl_s * 1e3, lat.chunk_step_s * 1e3], name="inter-token latency"),
         _here(steps[1], lat.chunk_step_s * 1e3)],
        shapes=[shape], notes=[note],
    )  # fmt: skip


def swap_ratio(r) -> go.Figure:
    off = r.offload
    ys = [p.ratio for p in off.curve]
    shape, note = _hline(1, "parity")
    return _fig(
        "Recompute time / swap time vs context (> 1: swapping wins)", "context (tokens)", "recompute / swap (ratio)",
        [_line([p.context for p in off.curve], ys, "ratio"),
         _line([off.attention_crossover_tokens] * 2, [min(ys + [1]), max(ys + [1])], "attention crossover",
               line=dict(dash="dot", color="gray")),
         _here(r.scenario.request_len, off.swap_recompute_ratio)],
        shapes=[shape], notes=[note], xaxis=dict(type="log"), yaxis=dict(type="log"),
    )  # fmt: skip


def fanout(r) -> go.Figure:
    ns = list(range(1, 101))
    n = r.scenario.fanout
    return _fig(
        "Fan-out: P(at least one slow call) vs parallel calls", "parallel calls", "P(any call beyond its p99) (%)",
        [_line(ns, [p_any_slow(p_slow=0.01, fanout=k) * 100 for k in ns], "each call slow 1 % of the time"),
         _here(n, p_any_slow(p_slow=0.01, fanout=n) * 100)],
    )  # fmt: skip
