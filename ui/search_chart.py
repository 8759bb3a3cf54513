"""The 'Find a deployment' figure and labels: pure functions from a SearchResult (no Streamlit), so they are tested
on their own. Each point's customdata is its configuration's index in the result (a click opens it)."""

from __future__ import annotations

from boundary import fmt
from boundary.search_cells import serving
from calc.search import pareto
from charts import FOOT_LEGEND, Chart, log_ticks, spec, wrap_title

MAX_BACKGROUND = 200  # the cheapest eligible configurations behind the frontier: 800 cost the browser ~250 ms a rerun
MODE_SYMBOL = {False: "circle", True: "diamond"}
MODE_COLOR = {False: "#1f77b4", True: "#9467bd"}  # blue, purple: apart from the chosen point's red star


# 1-2-5 ticks with whole labels: a frontier often spans less than a decade, where plotly's log ticks label the
# minor digits alone ("2", "5"), which read as data
TICKS = [m * 10**e for e in range(0, 5) for m in (1, 2, 5)]


def serving_of(r, i: int) -> str:
    deployed = r.gpus[i] > 0
    return serving(bool(r.disaggregated[i]), int(r.prefill_instances[i]) if deployed else None,
                   int(r.decode_instances[i]) if deployed else None)  # fmt: skip


def label(r, i: int, gpu_names: dict[str, str], short: bool = False) -> str:
    """'NVIDIA H100 SXM 80GB · TP 2 × PP 1 · fp8 / KV fp8 · max_num_seqs 64 · aggregated'; `short` (a table's
    column, which a narrow page would otherwise scroll its numbers away for): 'h100-sxm · TP 2×1 · fp8/fp8 · seqs
    64 · aggregated'."""
    g, b = r.grid, r.base(i)
    tp, pp = g.parallel[g.par[b]]
    gid = g.space.gpus[g.gpu[b]]
    asked, served = int(g.space.max_num_seqs[g.seqs[b]]), r.served_seqs(i)
    seqs = f"{asked:,}" if served >= asked else f"{asked:,} (served as {served:,})"
    weights, kv = g.dtypes[g.dtype[b]], g.space.kv_cache_dtypes[g.kv[b]]
    if short:
        return f"{gid} · TP {tp}×{pp} · {weights}/{kv} · seqs {seqs} · {serving_of(r, i)}"
    return (f"{gpu_names.get(gid, gid)} · TP {tp} × PP {pp} · {weights} / KV {kv}"
            f" · max_num_seqs {seqs} · {serving_of(r, i)}")  # fmt: skip


def hover(r, i: int, gpu_names: dict[str, str]) -> str:
    reps = f"{fmt.count(int(r.gpus[i]))} GPUs" if r.gpus[i] > 0 else "no deployment"
    cost = fmt.money(float(r.cost_per_million_output_tokens[i]), r.currency(i))
    return (f"{label(r, i, gpu_names)}<br>TTFT {fmt.ms(float(r.ttft_s[i]))} · TPOT {fmt.ms(float(r.tpot_s[i]))} · "
            f"{fmt.count(int(r.concurrency[i]))} in flight<br>{reps} · {cost} per M output tokens")  # fmt: skip


def _points(r, idx, gpu_names, name: str, marker: dict, **kw) -> dict:
    idx = list(idx)
    return dict(type="scatter", x=[float(r.tokens_per_s_per_user[i]) for i in idx],
                y=[float(r.tokens_per_s_per_gpu[i]) for i in idx], customdata=idx,
                text=[hover(r, i, gpu_names) for i in idx], hovertemplate="%{text}<extra></extra>", name=name,
                marker=marker, **kw)  # fmt: skip


def pareto_figure(r, gpu_names: dict[str, str], chosen: int | None = None) -> Chart:
    """Tokens/s per user against tokens/s per GPU: the frontier per serving mode over the cheapest configurations
    that meet the SLOs, and the chosen one starred. (No trace may skip hovering: plotly then selects nothing on a
    click, and a click is how a point opens.) As plotly's validated JSON, like charts.py's figures: building
    plotly's object model was a tenth of the tab's rerun."""
    traces = [_points(r, r.top(MAX_BACKGROUND), gpu_names, "configurations meeting the SLOs", dict(color="#c7c7c7", size=5),
                      mode="markers")]  # fmt: skip
    for dis in (False, True):  # each mode's own frontier, in its own colour on every page: the overall frontier
        # (r.frontier) often holds one mode alone, which left the chosen aggregated point without a line
        front = pareto(r.tokens_per_s_per_user, r.tokens_per_s_per_gpu, r.eligible & (r.disaggregated == dis))
        if front:
            traces.append(_points(r, front, gpu_names, f"Pareto frontier, {'disaggregated' if dis else 'aggregated'}",
                                  dict(size=9, symbol=MODE_SYMBOL[dis], color=MODE_COLOR[dis]), mode="lines+markers",
                                  line=dict(dash="dot", width=1, color=MODE_COLOR[dis])))  # fmt: skip
    if chosen is not None:
        traces.append(_points(r, [chosen], gpu_names, "chosen", dict(symbol="star", size=16, color="#d62728",
                                                                     line=dict(width=1, color="black")), mode="markers"))  # fmt: skip
    title = wrap_title(f"Pareto frontier: {r.configs_evaluated:,} configurations (click a point to open it)")
    layout = dict(title=dict(text=title),  # wrapped: a phone's width cut it at "(click a point to o"
                  xaxis=dict(title=dict(text="tokens/s per user (1 / TPOT)"), type="log",
                             **(log_ticks([x for t in traces for x in t["x"]]) or
                                dict(tickvals=TICKS, ticktext=[f"{t:,}" for t in TICKS]))),
                  yaxis=dict(title=dict(text="output tokens/s per GPU"), tickformat=",~r"), height=460,
                  margin=dict(l=60, r=20, t=60 + 24 * title.count("<br>"), b=50), legend=FOOT_LEGEND)  # fmt: skip
    return spec(traces, layout)
