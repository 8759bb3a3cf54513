"""Figure builders without Streamlit: every chart has a title, axis titles and the current-point marker; labels
sit at their lines, the memory bar stays within the GPU, the throughput sweep within the pool."""

import math

import plotly.graph_objects as go
import pytest
from conftest import scenario

import charts
from calc.evaluate import evaluate
from calc.units import GiB


@pytest.fixture(scope="module")
def figures(catalog):
    return {name: f.figure for name, f in all_charts(evaluate(scenario(request_rate=20), catalog)).items()}


SCENARIOS = ({}, {"request_rate": 20}, {"model": "llama-3.1-70b"}, {"model": "nemotron-h-8b", "gpu": "h100-sxm"},
             {"kv_cache_memory_bytes": 30 * GiB}, {"model": "deepseek-v3", "gpu": "h200", "tensor_parallel_size": 8})


def all_charts(r) -> dict:
    c = r.curves
    return {
        "memory": charts.memory_breakdown(r),
        "occupancy": charts.occupancy(r, c.occupancy_vs_length),
        "concurrency_vs_context": charts.concurrency_vs_context(r, c.concurrency_vs_context),
        "roofline": charts.roofline(r),
        "decode": charts.decode_vs_context(r, c.decode_vs_context),
        "throughput": charts.throughput_vs_concurrency(r, c.concurrency_sweep),
        "breakdown": charts.latency_breakdown(r),
        "chunk": charts.chunk_spike(r),
        "swap": charts.swap_ratio(r),
        "fanout": charts.fanout(r),
        "cdf": charts.latency_cdf(r),
    }


@pytest.mark.parametrize("kw", SCENARIOS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_every_chart_is_already_what_plotly_validation_makes_of_it(catalog, kw):
    """The page sends each spec to the browser without building plotly's object model: so each must be valid (a
    wrong property raises here) and exactly what validation would send (nothing added, coerced or dropped)."""
    for name, f in all_charts(evaluate(scenario(**kw), catalog)).items():
        spec = f.to_dict()
        assert go.Figure(spec).to_dict() == spec, name


def test_titles_and_axis_units(figures):
    for name, f in figures.items():
        assert f.layout.title.text, name
        assert "(" in f.layout.xaxis.title.text, f"{name}: x axis names its unit"
        if name not in ("memory", "breakdown"):
            assert "(" in f.layout.yaxis.title.text, f"{name}: y axis names its unit"


def test_current_point_is_marked(figures):
    for name, f in figures.items():
        assert any(getattr(t.marker, "symbol", None) == "star" for t in f.data), name


def test_the_parity_label_sits_on_its_line(figures):
    """Issue 14: on the swap chart's log axis the 'parity' label sat at 10 while its line was at 1."""
    f = figures["swap"]
    line = next(sh for sh in f.layout.shapes if sh.y0 == sh.y1)
    label = next(a for a in f.layout.annotations if a.text.startswith("parity"))
    assert f.layout.yaxis.type == "log" and line.y0 == 1 and label.y == math.log10(1)


def test_the_throughput_sweep_stops_where_the_pool_does(catalog):
    """Issue 14: the chart ran to C = 256 when the pool held 14–83 requests of this length."""
    for kw in ({}, {"input_len": 4096}, {"max_num_seqs": 1024}):
        r = evaluate(scenario(**kw), catalog)
        f = charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep)
        held = r.fit.max_concurrency_at_length
        xs = [x for t in f.data if t.name == "throughput" for x in t.x]
        assert max(xs) <= max(2, held), (kw, max(xs), held)
        assert 10 ** f.layout.xaxis.range[1] <= 1.2 * max(2, held, r.scenario.concurrency) + 1e-9
        assert any(a.text.startswith(f"pool holds {held:,}") for a in f.layout.annotations)
    # where max_num_seqs, not the pool, is the limit, the line says so (DeepSeek-V3 on 8 × H200 holds 542 of 256)
    r = evaluate(scenario(model="deepseek-v3", gpu="h200", tensor_parallel_size=8), catalog)
    held = r.memory.num_gpu_blocks // r.memory.blocks_per_request(r.scenario.request_len)
    assert r.fit.max_concurrency_at_length == r.scenario.max_num_seqs == 256 < 2 * 256 < held
    f = charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep)
    assert any(a.text == "max_num_seqs 256" for a in f.layout.annotations)


def _per_gpu_gib(f) -> float:
    return sum(t.x[0] for t in f.data if t.type == "bar" and t.y[0] == "per GPU")


def test_the_memory_bar_is_the_gpu(catalog):
    """Issue 14: with a logged pool set, weights + estimates + the pool + headroom ran past the GPU."""
    for kw in ({}, {"kv_cache_memory_bytes": 6_884_950_016}, {"kv_cache_memory_bytes": 3e9}):
        r = evaluate(scenario(**kw), catalog)
        assert _per_gpu_gib(charts.memory_breakdown(r)) == pytest.approx(r.memory.total_memory_bytes / GiB), kw


def test_a_pool_or_weights_beyond_the_gpu_say_by_how_much(catalog):
    r = evaluate(scenario(kv_cache_memory_bytes=30 * GiB), catalog)  # 30 GiB on a 23.68 GiB card
    assert "over the usable memory" in charts.memory_breakdown(r).layout.title.text.replace("<br>", " ")
    r = evaluate(scenario(model="llama-3.1-70b"), catalog)
    f = charts.memory_breakdown(r)
    assert "the weights alone are" in f.layout.title.text.replace("<br>", " ")
    assert all(t.x[0] >= 0 for t in f.data if t.type == "bar")  # no negative pool drawn


def test_a_hybrid_models_state_is_in_the_memory_chart(catalog):
    """Issue 12: the per-request state of a hybrid model (Nemotron-H) in the memory chart."""
    r = evaluate(scenario(model="nemotron-h-8b", gpu="h100-sxm"), catalog)
    f = charts.memory_breakdown(r)
    state = next(t for t in f.data if t.name.startswith("state of the requests"))
    assert state.x[0] * GiB == pytest.approx(16 * r.memory.state_bytes_per_request)
    assert "per request" in f.layout.title.text.replace("<br>", " ")


def test_the_latency_cdf_marks_medians_and_p99s(figures):
    f = figures["cdf"]
    assert f.layout.xaxis.type == "log" and "ms" in f.layout.xaxis.title.text
    names = [t.name for t in f.data]
    assert any(n.startswith("TTFT median") for n in names) and any(n.startswith("ITL p99") for n in names)


def test_the_capacity_sits_on_the_throughput_chart(catalog):
    """The rate the replica count divides by, as output tokens/s at its concurrency: on the throughput curve where
    the SLOs bind at a whole number in flight (256-token prompts here: 55), below it where the wait for a free slot
    binds (fewer than that many busy on average) or the SLOs bind between two counts (768 + 256 tokens: 24.75 in
    flight on average, the latency of 25, with the 2026-12-03 constants)."""
    for kw, on_curve in (({"input_len": 256}, True), ({"input_len": 768}, False),
                         ({"model": "llama-3.1-8b", "gpu": "h100-sxm", "input_len": 512, "output_len": 512,
                           "max_num_seqs": 16}, False)):  # fmt: skip
        r = evaluate(scenario(**kw), catalog)
        cap = r.fleet.capacity
        f = charts.throughput_vs_concurrency(r, r.curves.concurrency_sweep)
        (d,) = [t for t in f.data if t.name.startswith("capacity:")]
        assert d.x[0] == cap.concurrency and d.y[0] == pytest.approx(cap.rps * r.scenario.output_len)
        at = r.scenario.model_copy(update={"concurrency": cap.concurrency})
        curve = evaluate(at, catalog).latency.output_tokens_per_s
        assert (d.y[0] == pytest.approx(curve)) is on_curve and d.y[0] <= curve * (1 + 1e-9)


def test_log_axes_carry_whole_tick_labels(catalog):
    """The concurrency-vs-max_model_len chart's log axes: labels written out with separators, 1-2-5 within two
    decades, the decades beyond (plotly's own were bare mantissas, '5, 2, 100, 5', beside '10k')."""
    assert charts.log_ticks([128, 300_000]) == {"tickvals": [1e3, 1e4, 1e5], "ticktext": ["1,000", "10,000", "100,000"]}
    assert charts.log_ticks([1.5, 40])["ticktext"] == ["2", "5", "10", "20"]
    r = evaluate(scenario(), catalog)
    f = charts.concurrency_vs_context(r, r.curves.concurrency_vs_context)
    assert f.layout.yaxis.ticktext and all("," in t or len(t) < 4 for t in f.layout.xaxis.ticktext)
