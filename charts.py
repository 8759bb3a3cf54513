"""Plotly figure builders: pure functions from Report data to figure specs. Every chart has a title, axis units and
a marker for the scenario's current point. No Streamlit here, so the builders are tested on their own.

Each builder returns a `Chart`: the figure as plotly's own JSON dict, already in the form plotly's validation would
give it (tests/test_charts.py checks every builder on several scenarios: `go.Figure(spec).to_dict() == spec`). The
page hands it to Streamlit as it is; building and validating plotly's object model instead cost 2–4 ms a chart and
a deep copy on every rerun, 15 % of the server's CPU under a crowd. `Chart.figure` is the validated `go.Figure`.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.basedatatypes import BaseFigure

from boundary import fmt
from calc.tails import P_SLOW, p_any_slow
from calc.units import GiB
from chart_layout import FOOT_LEGEND, log_ticks, wrap_title  # noqa: F401  (re-exported for ui/ and tests)

# the default template, as go.Figure().to_dict() writes it into every figure (Streamlit's theme is applied on top)
_TEMPLATE = go.Figure().to_dict()["layout"]["template"]


class Chart(BaseFigure):
    """A figure spec (plotly JSON). A BaseFigure only so that st.plotly_chart takes its `to_dict()` as already
    validated; `.figure`, `.data` and `.layout` read the validated go.Figure (built on each access: for tests)."""

    def __init__(self, spec: dict) -> None:  # BaseFigure.__init__ is skipped on purpose: it builds the object model
        object.__setattr__(self, "_spec", spec)

    def to_dict(self) -> dict:
        return self._spec

    @property
    def figure(self) -> go.Figure:
        return go.Figure(self._spec)

    @property
    def data(self):
        return self.figure.data

    @property
    def layout(self):
        return self.figure.layout

    def __repr__(self) -> str:
        return f"Chart({self._spec['layout'].get('title', {}).get('text', '')!r})"


def spec(traces: list[dict], layout: dict) -> Chart:
    """A Chart of these traces and this layout, with the template plotly's validation would write into it."""
    return Chart(dict(data=traces, layout={**layout, "template": _TEMPLATE}))


CURRENT = dict(symbol="star", size=16, color="#d62728", line=dict(width=1, color="black"))


def _line(x, y, name, **kw) -> dict:
    return dict(type="scatter", x=list(x), y=list(y), mode=kw.pop("mode", "lines"), name=name, **kw)


def _here(x, y, name="this scenario") -> dict:
    return dict(type="scatter", x=[x], y=[y], mode="markers", marker=CURRENT, name=name)


def _hline(y, text, *, log: bool = False, side: str = "right") -> tuple[dict, dict]:
    """A dashed horizontal line and its label at the same height, at the `side` end (where the data are not: a
    rising line crosses the right end). Plotly places shapes on a log axis by value but annotations by
    log10(value): the label takes the logarithm, or it floats a decade off its line."""
    shape = dict(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y, line=dict(dash="dash", color="gray"))
    note = dict(xref="paper", x=1 if side == "right" else 0, y=math.log10(y) if log else y, text=text,
                showarrow=False, xanchor=side, yanchor="bottom")  # fmt: skip
    return shape, note


def _vline(x, text, *, color="gray", log: bool = False, dash="dot", anchor="left") -> tuple[dict, dict]:
    """A vertical line across the plot and its label at the top, on the `anchor` side of it (log: see _hline)."""
    shape = dict(type="line", yref="paper", y0=0, y1=1, x0=x, x1=x, line=dict(dash=dash, color=color))
    note = dict(yref="paper", y=1, x=math.log10(x) if log else x, text=text, showarrow=False,
                xanchor="right" if anchor == "left" else "left", yanchor="bottom",
                font=dict(size=11, color=color))  # fmt: skip
    return shape, note


def _decades(traces, key: str) -> float:
    """log10(max / min) of the positive values the traces plot on axis `key` ('x' or 'y'); 0 when there are none."""
    values = [v for t in traces for v in (t.get(key) or ()) if isinstance(v, (int, float)) and v > 0]
    return math.log10(max(values) / min(values)) if values else 0.0


def _fig(title, x_title, y_title, traces, *, height=380, shapes=(), notes=(), **layout) -> Chart:
    for axis in ("xaxis", "yaxis"):  # log axes: label the decades only (plotly's 2/5 minor labels read as data)
        if layout.get(axis, {}).get("type") == "log":
            if _decades(traces, axis[0]) >= 1:  # within one decade plotly's own ticks are all there is to read
                layout[axis] = {"dtick": 1, **layout[axis]}
        else:  # linear axes: thousands separated, like every other number on the page
            layout[axis] = {"tickformat": ",~r", **layout.get(axis, {})}
    title = wrap_title(title)
    lay = dict(
        title=dict(text=title),
        xaxis=dict(title=dict(text=x_title), **layout.pop("xaxis", {})),
        yaxis=dict(title=dict(text=y_title), **layout.pop("yaxis", {})),
        height=height,
        margin=dict(l=60, r=20, t=60 + 30 * title.count("<br>"), b=50),  # a wrapped title clears the labels (24 px a line did not)
        legend=layout.pop("legend", FOOT_LEGEND),
        **layout,
    )
    for axis in ("xaxis", "yaxis"):  # None means "plotly's default": plotly's JSON leaves the key out
        lay[axis] = {k: v for k, v in lay[axis].items() if v is not None}
    if shapes:  # likewise empty lists
        lay["shapes"] = list(shapes)
    if notes:
        lay["annotations"] = list(notes)
    return spec(traces, lay)


PART_COLORS = {"weights": "#1f77b4", "activation": "#ff7f0e", "non-torch": "#7f7f7f", "in use before": "#7f7f7f",
               "CUDA graphs": "#9467bd", "KV cache pool": "#2ca02c", "headroom": "#d9d9d9", "free": "#d9d9d9",
               "Mamba state pool": "#bcbd22"}  # fmt: skip
"""One colour a part, whatever the engine's profile lists (SGLang's has other parts in another order)."""


def _part_color(name: str) -> str:
    return next((c for key, c in PART_COLORS.items() if name.startswith(key)), "#17becf")


def memory_breakdown(r) -> Chart:
    """Two bars in GiB per GPU: where the GPU's memory goes (vLLM's profile), and what the workload takes of the KV
    pool (attention KV, and the per-request state of hybrid models). Lines at the usable and the total memory, so a
    plan that does not fit shows by how much; a star at the workload's end."""
    m, s, sf = r.memory, r.scenario, r.shortfall
    per_gpu, load = "per GPU", _running(s)
    kv = max(0.0, m.kv_cache_memory_bytes)
    if m.kv_cache_memory_from_flag:
        parts = [("weights, activations, non-torch, CUDA graphs (the rest of the usable memory)", max(0.0, sf.rest_of_usable_bytes)),
                 ("KV cache pool (set by kv_cache_memory_bytes)", kv)]
    elif s.engine == "sglang":  # its fraction of what is free before loading; activations and graphs in the rest
        rest = m.total_memory_bytes - m.non_torch_bytes - m.requested_memory_bytes
        need = m.activation_bytes + m.cudagraph_bytes
        outside = min(need, rest)
        label = "activation peak + CUDA graphs (outside the fraction)" + (
            f", {fmt.gib(need - rest)} short of the {fmt.gib(need)} they need" if need > rest else "")
        parts = [("in use before loading", m.non_torch_bytes), ("weights", m.weights_bytes_per_gpu),
                 (f"Mamba state pool ({m.state_slots:,} requests)", m.state_pool_bytes), ("KV cache pool", kv),
                 (label, outside)]  # fmt: skip
    else:
        parts = [("weights", m.weights_bytes_per_gpu), ("activation peak", m.activation_bytes), ("non-torch", m.non_torch_bytes),
                 ("CUDA graphs", m.cudagraph_bytes if m.cudagraph_subtracted else 0.0), ("KV cache pool", kv)]  # fmt: skip
    if sf.rest_of_usable_bytes >= 0 and m.kv_cache_memory_bytes >= 0:  # the parts fill the usable memory exactly
        free = m.headroom_bytes - (m.non_torch_bytes + outside if s.engine == "sglang" and not m.kv_cache_memory_from_flag else 0.0)
        label = "free (the rest, less activations and graphs)" if s.engine == "sglang" and not m.kv_cache_memory_from_flag \
            else "headroom (1 − gpu_memory_utilization)"  # fmt: skip
        parts.append((label, free if free > 2**20 else 0.0))  # not a rounding's MiB
    bars = [dict(type="bar", y=[per_gpu], x=[b / GiB], name=f"{n}: {fmt.gib(b)}", orientation="h",
                 marker=dict(color=_part_color(n))) for n, b in parts if b > 0]  # fmt: skip
    use = [("KV of the requests", sf.kv_used_bytes), ("state of the requests (Mamba / linear attention)", sf.state_used_bytes),
           ("free in the pool", sf.pool_free_bytes)]  # fmt: skip
    use_colors = {"KV": "#17becf", "state": "#bcbd22", "free": "#2ca02c"}  # the pool's parts: the KV pool's green, hatched
    bars += [dict(type="bar", y=[load], x=[b / GiB], name=f"{n}: {fmt.gib(b)}", orientation="h",
                  marker=dict(color=use_colors[n.split()[0]], **(dict(pattern=dict(shape="/")) if n.startswith("free") else {})))
             for n, b in use if b > 0]  # fmt: skip
    held = m.kv_cache_memory_bytes > 0 and m.num_gpu_blocks > 0  # a pool to take a share of, or none at all
    bars.append(dict(type="scatter", y=[load], x=[sf.pool_used_bytes / GiB], mode="markers", marker=CURRENT,
                     name=f"this scenario: {fmt.gib(sf.pool_used_bytes)} "
                          + ("of the pool" if held else "needed, and no KV pool to hold it")))  # fmt: skip
    usable_end = sf.usable_bytes + (m.non_torch_bytes if s.engine == "sglang" else 0.0)  # SGLang's starts past what was in use
    lines = [_vline(usable_end / GiB, f"usable {fmt.gib(sf.usable_bytes)}"),
             _vline(m.total_memory_bytes / GiB, f"GPU {fmt.gib(m.total_memory_bytes)}", color="black", dash="solid",
                    anchor="right")]
    title = f"GPU memory per device, GiB: {fmt.gib(m.total_memory_bytes)} in all"
    if sf.weights_over_bytes > 0:
        title += f" — the weights alone are {fmt.gib(sf.weights_over_bytes)} over the usable memory"
    elif m.kv_cache_memory_bytes < 0:
        title += f" — {fmt.gib(-m.kv_cache_memory_bytes)} short before any KV cache"
    elif sf.rest_of_usable_bytes < 0:
        title += f" — the set pool is {fmt.gib(-sf.rest_of_usable_bytes)} over the usable memory"
    if m.state_bytes_per_request:
        title += f"; state {fmt.size(m.state_bytes_per_request)} per request"
    return _fig(title, "memory per GPU (GiB)", "", bars, height=420, barmode="stack",
                shapes=[a for a, _ in lines], notes=[b for _, b in lines],
                legend=FOOT_LEGEND, yaxis=dict(categoryorder="array", categoryarray=[load, per_gpu]))  # fmt: skip


def _running(s) -> str:
    """'16 requests', '256 running of 2,000' (max_num_seqs: the rest wait and hold no blocks), ' a rank' with DP."""
    c = s.rank_concurrency
    text = f"{c:,} requests" if c <= s.max_num_seqs else f"{s.max_num_seqs:,} running of {c:,}"
    return text + (" a rank" if s.data_parallel_size > 1 else "")


def occupancy(r, pts) -> Chart:
    s, fit = r.scenario, r.fit
    full = "pool full: SGLang retracts requests" if s.engine == "sglang" else "pool full: vLLM preempts"
    shape, note = _hline(100, full, side="left")  # the occupancy rises to the right
    return _fig(
        f"KV pool occupancy at {_running(s)} (output {s.output_len:,} tokens)",
        "prompt + output length (tokens)",
        "share of the KV pool (%)",
        [_line([p.request_tokens for p in pts], [p.pool_fraction * 100 for p in pts], f"{min(s.rank_concurrency, s.max_num_seqs)} × blocks(L) / pool"),
         _here(fit.request_tokens, min(fit.pool_fraction, 10) * 100, "this scenario" if fit.pool_fraction <= 10 else
               f"this scenario: {fmt.pct(fit.pool_fraction, 0)}, off the scale (drawn at its top)")],
        shapes=[shape], notes=[note],
        # up to a little past full, or past the scenario: the line may leave the top where lengths run far beyond
        yaxis=dict(range=[0, max(120.0, 1.15 * min(fit.pool_fraction, 10) * 100)]),
    )  # fmt: skip


def concurrency_vs_context(r, pts) -> Chart:
    s = r.scenario
    xs, ys = [p.max_model_len for p in pts], [p.max_concurrency for p in pts]
    here = max(r.memory.max_concurrency, 1e-3)
    return _fig(
        "Maximum concurrency vs max_model_len" + (" (vLLM's startup line)" if s.engine == "vllm" else ""),
        "max_model_len (tokens)",
        "max concurrency (requests)",
        [_line(xs, ys, "this pool"), _here(s.max_model_len, here)],
        xaxis=dict(type="log", dtick=None, **log_ticks([*xs, s.max_model_len])),
        yaxis=dict(type="log", dtick=None, **log_ticks([*ys, here])),
    )  # fmt: skip


def roofline(r) -> Chart:
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
        t.update(mode="markers+text", text=[name], textposition="bottom center")  # under the roof, off its line
        if name == "prefill":
            t["marker"] = dict(size=14, color="#1f77b4")
        traces.append(t)
    return _fig(f"Roofline ({lat.compute_dtype}, per GPU): ridge {lat.ridge_flop_per_byte:.0f} FLOP/byte",
                "arithmetic intensity (FLOP/byte)", "attainable (TFLOP/s)", traces,
                xaxis=dict(type="log", **log_ticks([x for t in traces for x in t["x"]])),
                yaxis=dict(type="log", **log_ticks([y for t in traces for y in t["y"]])))  # fmt: skip


def decode_vs_context(r, pts) -> Chart:
    lat = r.latency
    x = [p.context for p in pts]
    return _fig(
        f"Decode step at {fmt.plural(lat.decode_batch, 'running sequence')}"
        + (" a rank" if r.scenario.data_parallel_size > 1 else ""), "context per sequence (tokens)", "step time (ms)",
        [_line(x, [p.floor_s * 1e3 for p in pts], "floor (bandwidth/compute)"),
         _line(x, [p.estimate_s * 1e3 for p in pts], "estimate (step model)"),
         _here(lat.decode_context, lat.decode.estimate_s * 1e3)],
    )  # fmt: skip


def throughput_vs_concurrency(r, pts) -> Chart:
    """From one request in flight to as many as the pool holds at this length (the sweep stops there): a line
    marks that limit, the star is the scenario (beyond the line when it does not fit), and a diamond the capacity
    the replica count divides by (Poisson arrivals, the wait for a free slot counted: below the curve where the
    slots bind, since fewer than that many are busy on average)."""
    s, f, cap = r.scenario, r.fit, r.fleet.capacity
    x = [p.concurrency for p in pts]
    limit, dp = f.max_concurrency_at_length, s.data_parallel_size  # the server's: every data-parallel rank's
    capped = limit >= s.max_num_seqs * dp  # the pool holds more: max_num_seqs is the limit
    seqs = f"max_num_seqs {s.max_num_seqs:,}" + (f" × {dp} ranks" if dp > 1 else "")
    shape, note = _vline(max(limit, 1), seqs if capped else f"pool holds {limit:,} at this length", log=True)
    capacity = ([dict(type="scatter", x=[cap.concurrency], y=[cap.rps * s.output_len], mode="markers",
                      marker=dict(symbol="diamond", size=12, color="#2ca02c", line=dict(width=1, color="black")),
                      name=f"capacity: {fmt.rate(cap.rps, 'req/s')} {'a decode instance' if s.disaggregated else 'a replica'} "
                           f"({fmt.quota(s.conformance_quota)} within SLOs)")] if cap.rps > 0 else [])  # fmt: skip
    return _fig(
        "Throughput, goodput and per-user rate vs concurrency", "concurrency (requests in flight)",
        "output tokens/s (all users)",
        [_line(x, [p.output_tokens_per_s for p in pts], "throughput"),
         _line(x, [p.goodput_rps * s.output_len for p in pts], "goodput (within both SLOs)"),
         _line(x, [p.per_user_tokens_per_s for p in pts], "per user (tokens/s, right axis)", yaxis="y2", line=dict(dash="dot")),
         *capacity, _here(s.concurrency, r.latency.output_tokens_per_s)],
        shapes=[shape], notes=[note],
        xaxis=dict(type="log", range=[0, math.log10(max(2, limit, s.concurrency) * 1.2)],
                   **log_ticks([1, max(2, limit, s.concurrency)])),
        yaxis2=dict(title=dict(text="per-user tokens/s"), overlaying="y", side="right", tickmode="auto",
                    tickformat=",~r"),
    )  # fmt: skip


def latency_breakdown(r) -> Chart:
    lat = r.latency
    bars = [dict(type="bar", y=["request"], x=[v], name=f"{n}: {fmt.seconds(v)}", orientation="h")
            for n, v in lat.e2e_parts if v]  # fmt: skip
    bars.append(dict(type="scatter", y=["request"], x=[lat.e2e_s], mode="markers", marker=CURRENT,
                     name=f"this scenario: {fmt.seconds(lat.e2e_s)} end to end"))  # fmt: skip
    return _fig(f"End-to-end {fmt.seconds(lat.e2e_s)} = TTFT {fmt.ms(lat.ttft_s)} + (N − 1) × TPOT {fmt.ms(lat.tpot_s)}",
                "time (s)", "", bars, height=300, barmode="stack")  # fmt: skip


def chunk_spike(r) -> Chart:
    lat, s = r.latency, r.scenario
    steps = ["plain decode step", f"step + {min(lat.chunk_tokens, s.input_len):,}-token chunk"]
    shape, note = _hline(s.slo_tpot_s * 1e3, "TPOT SLO", side="left")  # above the plain step, not the chunk's bar
    return _fig(
        f"Chunked prefill: a {s.input_len:,}-token prompt takes {fmt.plural(lat.prefill_steps, 'step')}", "engine step (one forward pass)",
        "step time (ms)",
        [dict(type="bar", x=steps, y=[lat.stream_itl_s * 1e3, lat.stream_spike_s * 1e3], name="inter-token latency (ms)"),
         _here(steps[1], lat.stream_spike_s * 1e3)],
        shapes=[shape], notes=[note],
    )  # fmt: skip


def swap_ratio(r) -> Chart:
    off = r.offload
    ys = [p.ratio for p in off.curve]
    shape, note = _hline(1, "parity (ratio 1)", log=True)
    cross = off.attention_crossover_tokens
    here = off.recompute_s / off.swap_s  # as the curve counts a swap: out and back where it does not overlap
    traces = [_line([p.context for p in off.curve], ys, "ratio"), _here(r.scenario.request_len, here)]
    title = "Recompute time / swap time vs context (> 1: swapping wins)"
    if cross <= 2 * max(p.context for p in off.curve):  # drawn where it falls within the curve's range
        traces.insert(1, _line([cross] * 2, [min(ys + [1]), max(ys + [1])], f"attention crossover ({fmt.tokens(cross)})",
                               line=dict(dash="dot", color="gray")))  # fmt: skip
    elif math.isfinite(cross):  # far beyond max_model_len: named, not drawn (its line stretched the axis 14-fold)
        title += f"; attention crossover at {fmt.tokens(cross)}, beyond max_model_len"
    xs = [p.context for p in off.curve] + [r.scenario.request_len]
    return _fig(title, "context (tokens)", "recompute / swap (ratio)", traces, shapes=[shape], notes=[note],
                xaxis=dict(type="log", **log_ticks(xs)),
                yaxis=dict(type="log", **log_ticks([*ys, 1, here])))  # fmt: skip


def fanout(r) -> Chart:
    ns = list(range(1, 101))
    n = r.scenario.fanout
    return _fig(
        "Fan-out: P(at least one slow call) vs parallel calls", "fan-out (parallel calls per answer)",
        "P(any call beyond its p99) (%)",
        [_line(ns, [p_any_slow(p_slow=P_SLOW, fanout=k) * 100 for k in ns], f"each call slow {P_SLOW * 100:g} % of the time"),
         _here(n, p_any_slow(p_slow=P_SLOW, fanout=n) * 100)],
    )  # fmt: skip


def latency_cdf(r) -> Chart:
    """The predicted benchmark's TTFT and ITL as cumulative distributions (log time axis, ms): stars at the medians,
    diamonds at the p99s, dashed lines at the closed-form estimates."""
    d, lat, s = r.benchmark_distribution, r.latency, r.scenario
    q = list(d.quantiles)
    traces, shapes, notes = [], [], []
    low = min(lat.ttft_s, lat.stream_itl_s)  # the lower estimate's label to the left of its line, the other's to the right
    for name, values, est, color in (("TTFT", d.ttft_s, lat.ttft_s, "#1f77b4"), ("ITL", d.itl_s, lat.stream_itl_s, "#2ca02c")):
        if not values:
            continue
        ms_values = [v * 1e3 for v in values]
        traces.append(_line(ms_values, q, f"{name} (predicted benchmark)", line=dict(color=color)))
        med, p99 = ms_values[q.index(50.0)], ms_values[q.index(99.0)]
        traces.append(dict(_here(med, 50, f"{name} median {fmt.ms_value(med)} (this scenario)")))
        traces.append(dict(type="scatter", x=[p99], y=[99], mode="markers", name=f"{name} p99 {fmt.ms_value(p99)}",
                           marker=dict(symbol="diamond", size=11, color=color, line=dict(width=1, color="black"))))  # fmt: skip
        a, b = _vline(est * 1e3, f"{name} closed form {fmt.ms(est)}", color=color, log=True, dash="dash",
                      anchor="left" if est == low else "right")  # fmt: skip
        shapes.append(a)
        notes.append(b)
    return _fig(f"Predicted latency distribution: {d.requests:,} requests at C = {s.concurrency:,} (CDF)",
                "latency (ms, log scale)", "requests or tokens at or below (%)", traces, shapes=shapes, notes=notes,
                height=480, xaxis=dict(type="log", **log_ticks([x for t in traces for x in t["x"] if isinstance(x, (int, float))])),
                yaxis=dict(range=[0, 101]),
                legend=dict(orientation="h", yref="container", y=0, yanchor="bottom"))  # fmt: skip
