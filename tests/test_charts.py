"""Figure builders without Streamlit: every chart has a title, axis titles and the current-point marker."""

import pytest
from conftest import scenario

import charts
from calc.evaluate import evaluate


@pytest.fixture(scope="module")
def figures(catalog):
    s = scenario(request_rate=20)
    r = evaluate(s, catalog)
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
    }


def test_titles_and_axis_units(figures):
    for name, f in figures.items():
        assert f.layout.title.text, name
        assert f.layout.xaxis.title.text or name in ("chunk",), name
        if name not in ("memory", "breakdown"):
            assert "(" in f.layout.yaxis.title.text, f"{name}: y axis names its unit"


def test_current_point_is_marked(figures):
    for name, f in figures.items():
        if name in ("memory", "breakdown"):
            continue  # a single stacked bar is the current scenario
        assert any(getattr(t.marker, "symbol", None) == "star" for t in f.data), name
