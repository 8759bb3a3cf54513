"""What a design-review pass over the page found (2026-12-06), each now checked: the shorter max_model_len that lets
vLLM start, the cost within the SLOs beside one priced at a load that misses them, one rate unit per sentence and
column, one note for GPUs that leave out the same sizes, log axes with written-out ticks, and where a headline's error
band comes from."""

from __future__ import annotations

import pytest

from boundary import fmt, view
from boundary.view_bands import band_short
from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.search import search


def test_a_max_model_len_vllm_refuses_is_fixed_by_a_shorter_one_first(catalog):
    """Llama-3.1-8B on an RTX 4090 at 131,072 tokens: the pool has 2,588 blocks of 16, a request of that length needs
    8,192, so vLLM refuses to start; the longest it admits is 2,588 × 16 = 41,408 tokens (vLLM's own estimate), where
    8 requests of 2,560 tokens take 8 × 160 = 1,280 of the blocks. That is the first change offered."""
    s = Scenario(model="llama-3.1-8b", gpu="rtx-4090", max_model_len=131_072, concurrency=8, input_len=2048,
                 output_len=512)  # fmt: skip
    r = evaluate(s, catalog)
    assert r.memory.num_gpu_blocks == 2_588 and r.memory.blocks_per_max_len_request == 131_072 // 16
    first = r.suggestions[0]
    assert first.fields["max_model_len"] == 2_588 * 16 == 41_408 and first.fits
    assert first.pool_fraction == pytest.approx(8 * 160 / 2_588)


def test_a_cost_priced_at_a_load_that_misses_the_slos_gives_the_cost_within_them(catalog):
    """Llama-3.1-8B on an L40S at 32 in flight meets both SLOs for about half the requests: the headline's cost is at
    that load; beside it, one replica at its capacity: price × GPUs / (capacity × output_len × 3,600) × 10⁶."""
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="l40s", input_len=2048, output_len=512, concurrency=32), catalog)
    fl = r.fleet
    assert r.conformance.conformance < r.scenario.conformance_quota
    assert fl.cost_at_capacity_per_million == pytest.approx(fl.price_per_gpu_hour / (fl.capacity.rps * 512 * 3600) * 1e6)
    assert fl.cost_at_capacity_per_million > fl.cost_per_million_output_tokens
    said = view.outside_slos(r)
    assert "meet both SLOs" in said and fmt.money(fl.cost_at_capacity_per_million, fl.currency) in said
    within = evaluate(r.scenario.model_copy(update={"concurrency": 1}), catalog)
    assert within.conformance.conformance >= within.scenario.conformance_quota and view.outside_slos(within) == ""


def test_rates_side_by_side_take_one_unit():
    """'5.74 req/min of 0.106 req/s' read as 5.74 of 0.106: beside a larger rate, a small one keeps its unit."""
    assert fmt.rate(0.0956, "req/s", alike=(0.106,)) == "0.0956 req/s"
    assert fmt.rate(0.0956, "req/s") == "5.74 req/min"  # alone, per minute as before
    assert fmt.rate(0.01, "req/s", alike=(0.02,)) == "0.600 req/min"  # 0.02 / s = 1.2 / min: both per minute


def test_gpus_that_leave_out_the_same_sizes_share_one_note(catalog):
    """A default search tried TP × PP 8 × 2 on two dozen GPUs of 8 a node: one note names them all, not one each."""
    r = search(Scenario(model="llama-3.1-70b", request_rate=2.0), catalog)
    eight = [n for n in r.notes if "8×2 left out: one node holds 8 GPUs" in n]
    assert len(eight) == 1 and "h100-sxm" in eight[0] and "a100-80gb-sxm" in eight[0]


def test_log_axes_write_their_ticks_out():
    """Plotly's own log ticks read '1, 2, 5, 10, 2, 5, 100'; each log axis now carries its values written out."""
    from charts import log_ticks

    t = log_ticks([1, 23.1, 80])
    assert t["ticktext"] == ["1", "2", "5", "10", "20", "50"]


def test_the_headline_band_says_its_tail_and_the_help_whose_runs(catalog):
    """'± 7% held-out error' hid the p90 (the badge now '± 7% · p90 ± 20%'); the tile's help says whose runs."""
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="l40s"), catalog)
    b = r.error_bands["tpot"]
    assert band_short(r, "tpot") == f"± {fmt.pct(b.median_abs, 0)} · p90 ± {fmt.pct(b.p90_abs, 0)}"
    tile = next(m for m in view.latency_metrics(r) if m.label == "TPOT (estimate)")
    assert b.scope in tile.help
