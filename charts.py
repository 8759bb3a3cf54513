"""Plotly figure builders: pure functions from Report data to go.Figure. Every chart has a title, axis units and
a marker for the scenario's current point. No Streamlit here, so the builders are tested on their own."""

from __future__ import annotations

import plotly.graph_objects as go

from calc.units import GiB

CURRENT = dict(symbol="star", size=16, color="#d62728", line=dict(width=1, color="black"))
LAYOUT = dict(height=380, margin=dict(l=60, r=20, t=60, b=50), legend=dict(orientation="h", y=-0.22))


def _fig(title: str, x: str, y: str, **kw) -> go.Figure:
    f = go.Figure()
    f.update_layout(title=title, xaxis_title=x, yaxis_title=y, **LAYOUT, **kw)
    return f


def memory_breakdown(r) -> go.Figure:
    m = r.memory
    parts = [
        ("weights", m.weights_bytes_per_gpu),
        ("activation peak", m.activation_bytes),
        ("non-torch", m.non_torch_bytes),
        ("CUDA graphs", m.cudagraph_bytes),
        (
            "KV cache pool",
            max(0.0, m.kv_cache_memory_bytes) if not m.kv_cache_memory_from_flag else m.kv_cache_memory_bytes,
        ),
        ("headroom (1 − utilization)", m.headroom_bytes),
    ]
    f = _fig(f"GPU memory per device: {m.total_memory_bytes / GiB:.2f} GiB", "memory (GiB)", "")
    for name, b in parts:
        f.add_bar(y=["per GPU"], x=[b / GiB], name=f"{name} {b / GiB:.2f} GiB", orientation="h")
    f.update_layout(barmode="stack", height=300, legend=dict(orientation="h", y=-0.6))
    return f


def occupancy(r, pts) -> go.Figure:
    s, fit = r.scenario, r.fit
    f = _fig(
        f"KV pool occupancy at {s.concurrency} concurrent requests (output {s.output_len} tokens)",
        "prompt + output length (tokens)",
        "share of the KV pool (%)",
    )
    f.add_scatter(x=[p.request_tokens for p in pts], y=[p.pool_fraction * 100 for p in pts], mode="lines",
                  name=f"{s.concurrency} × blocks(L) / pool")  # fmt: skip
    f.add_hline(y=100, line_dash="dash", line_color="gray", annotation_text="pool full: vLLM preempts")
    f.add_scatter(x=[fit.request_tokens], y=[min(fit.pool_fraction, 10) * 100], mode="markers", marker=CURRENT,
                  name="this scenario")  # fmt: skip
    return f


def concurrency_vs_context(r, pts) -> go.Figure:
    s = r.scenario
    f = _fig("Maximum concurrency vs max_model_len (vLLM's startup line)", "max_model_len (tokens)",
             "max concurrency (requests)", xaxis_type="log", yaxis_type="log")  # fmt: skip
    f.add_scatter(x=[p.max_model_len for p in pts], y=[p.max_concurrency for p in pts], mode="lines", name="pool")
    f.add_scatter(x=[s.max_model_len], y=[max(r.memory.max_concurrency, 1e-3)], mode="markers", marker=CURRENT,
                  name="this scenario")  # fmt: skip
    return f


def roofline(r) -> go.Figure:
    lat = r.latency
    P, B = lat.peak_flop_per_s, lat.bandwidth_bytes_per_s
    xs = [0.5, lat.ridge_flop_per_byte, max(1e5, lat.prefill.intensity_flop_per_byte * 4)]
    ys = [min(x * B, P) / 1e12 for x in xs]
    f = _fig(f"Roofline ({lat.compute_dtype}, per GPU): ridge {lat.ridge_flop_per_byte:.0f} FLOP/byte",
             "arithmetic intensity (FLOP/byte)", "attainable (TFLOP/s)", xaxis_type="log", yaxis_type="log")  # fmt: skip
    f.add_scatter(x=xs, y=ys, mode="lines", name="roofline (peak)", line=dict(color="black"))
    f.add_scatter(x=[lat.ridge_flop_per_byte] * 2, y=[ys[0], P / 1e12], mode="lines", name="ridge point",
                  line=dict(dash="dot", color="gray"))  # fmt: skip
    for name, ph in (("prefill", lat.prefill), ("decode step", lat.decode)):
        achieved = ph.flop / ph.estimate_s / 1e12
        f.add_scatter(x=[ph.intensity_flop_per_byte], y=[achieved], mode="markers+text", text=[name],
                      textposition="top center", marker=CURRENT if name == "decode step" else dict(size=14),
                      name=f"{name} (estimate)")  # fmt: skip
    return f


def decode_vs_context(r, pts) -> go.Figure:
    lat = r.latency
    f = _fig(f"Decode step at {lat.decode_batch} running sequences", "context per sequence (tokens)",
             "step time (ms)")  # fmt: skip
    f.add_scatter(x=[p.context for p in pts], y=[p.floor_s * 1e3 for p in pts], name="floor (bandwidth/compute)")
    f.add_scatter(
        x=[p.context for p in pts], y=[p.estimate_s * 1e3 for p in pts], name=f"estimate (mbu {r.scenario.mbu:g})"
    )
    f.add_scatter(x=[lat.decode_context], y=[lat.decode.estimate_s * 1e3], mode="markers", marker=CURRENT,
                  name="this scenario")  # fmt: skip
    return f


def throughput_vs_concurrency(r, pts) -> go.Figure:
    s = r.scenario
    f = _fig("Throughput, goodput and per-user rate vs concurrency", "concurrent requests",
             "output tokens/s (all users)", xaxis_type="log")  # fmt: skip
    f.add_scatter(x=[p.concurrency for p in pts], y=[p.output_tokens_per_s for p in pts], name="throughput")
    f.add_scatter(x=[p.concurrency for p in pts], y=[p.goodput_rps * s.output_len for p in pts],
                  name="goodput (within both SLOs)")  # fmt: skip
    f.add_scatter(x=[p.concurrency for p in pts], y=[p.per_user_tokens_per_s for p in pts], name="per user (tok/s)",
                  yaxis="y2", line=dict(dash="dot"))  # fmt: skip
    f.add_scatter(x=[s.concurrency], y=[r.latency.output_tokens_per_s], mode="markers", marker=CURRENT,
                  name="this scenario")  # fmt: skip
    f.update_layout(yaxis2=dict(title="per-user tokens/s", overlaying="y", side="right"))
    return f


def latency_breakdown(r) -> go.Figure:
    s, lat = r.scenario, r.latency
    prefill_wait = lat.ttft_s - s.queue_s - s.frontend_overhead_s - lat.prefill.estimate_s
    parts = [("queue", s.queue_s), ("prefill", lat.prefill.estimate_s), ("decode steps the chunks ride on", prefill_wait),
             ("front-end", s.frontend_overhead_s), (f"{s.output_len - 1} × TPOT", (s.output_len - 1) * lat.tpot_s)]  # fmt: skip
    f = _fig(f"End-to-end {lat.e2e_s:.2f} s = TTFT {lat.ttft_s * 1e3:.0f} ms + (N−1) × TPOT {lat.tpot_s * 1e3:.1f} ms",
             "time (s)", "")  # fmt: skip
    for name, t in parts:
        f.add_bar(y=["request"], x=[t], name=f"{name} {t:.3f} s", orientation="h")
    f.update_layout(barmode="stack", height=300, legend=dict(orientation="h", y=-0.6))
    return f


def chunk_spike(r) -> go.Figure:
    lat = r.latency
    steps = ["plain decode step", f"step + {min(lat.chunk_tokens, r.scenario.input_len):,}-token chunk"]
    f = _fig(f"Chunked prefill: a {r.scenario.input_len:,}-token prompt takes {lat.prefill_steps} step(s)", "",
             "step time (ms)")  # fmt: skip
    f.add_bar(x=steps, y=[lat.itl_s * 1e3, lat.chunk_step_s * 1e3], name="ITL")
    f.add_hline(y=r.scenario.slo_tpot_s * 1e3, line_dash="dash", annotation_text="TPOT SLO")
    f.add_scatter(x=[steps[1]], y=[lat.chunk_step_s * 1e3], mode="markers", marker=CURRENT, name="this scenario")
    return f


def swap_ratio(r) -> go.Figure:
    off = r.offload
    f = _fig("Recompute time / swap time vs context (> 1: swapping wins)", "context (tokens)", "recompute / swap",
             xaxis_type="log", yaxis_type="log")  # fmt: skip
    f.add_scatter(x=[p.context for p in off.curve], y=[p.ratio for p in off.curve], name="ratio (one way)")
    f.add_hline(y=1, line_dash="dash", annotation_text="parity")
    ys = [p.ratio for p in off.curve]
    f.add_scatter(x=[off.attention_crossover_tokens] * 2, y=[min(ys + [1]) , max(ys + [1])], mode="lines",
                  name="attention crossover", line=dict(dash="dot", color="gray"))  # fmt: skip
    f.add_scatter(x=[r.scenario.request_len], y=[off.swap_recompute_ratio], mode="markers", marker=CURRENT,
                  name="this scenario")  # fmt: skip
    return f


def fanout(r) -> go.Figure:
    from calc.tails import p_any_slow

    ns = list(range(1, 101))
    f = _fig("Fan-out: P(at least one slow call) vs parallel calls", "parallel calls", "P(any call beyond its p99) (%)")
    f.add_scatter(x=ns, y=[p_any_slow(p_slow=0.01, fanout=n) * 100 for n in ns], name="p99 per call")
    n = r.scenario.fanout
    f.add_scatter(x=[n], y=[p_any_slow(p_slow=0.01, fanout=n) * 100], mode="markers", marker=CURRENT,
                  name="this scenario")  # fmt: skip
    return f
