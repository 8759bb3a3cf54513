"""The Report's goodput, replicas, cost and swap/recompute figures, through the path the page and the CLI use
(evaluate() → Report → to_dict()): each by hand and against the seeds."""

import math

import pytest
from conftest import scenario

from calc.engine_cycle import prefill_terms
from calc.evaluate import evaluate
from calc.units import KiB

SEED_ROWS = [  # seeds/000 "Misurare in venti righe": batch 16 and batch 64, printed to the digit
    ("batch 16", 20.0, 18.5, 0.925, 0.035),
    ("batch 64", 32.0, 15.8, 0.494, 0.334),
]


# --- goodput ---------------------------------------------------------------------------------------------------
def test_goodput_when_the_slos_are_the_medians(catalog):
    # log-normal around the estimate: P(X ≤ median) = ½ for each promise, so conformance ¼ and goodput ¼ of throughput
    base = evaluate(scenario(), catalog).latency
    r = evaluate(scenario(slo_ttft_s=base.ttft_s, slo_tpot_s=base.tpot_s), catalog)
    d = r.to_dict()
    assert d["conformance"] == pytest.approx(0.5 * 0.5, rel=1e-9)
    assert d["goodput_rps"] == pytest.approx(0.25 * r.latency.requests_per_s, rel=1e-9)


def test_goodput_without_spread_is_all_or_nothing(catalog):
    # σ = 0: every request at the estimate; SLOs 10 % above it keep all, 10 % below it keep none
    base = evaluate(scenario(latency_sigma=0), catalog).latency
    keep = evaluate(scenario(latency_sigma=0, slo_ttft_s=base.ttft_s * 1.1, slo_tpot_s=base.tpot_s * 1.1), catalog)
    lose = evaluate(scenario(latency_sigma=0, slo_ttft_s=base.ttft_s * 0.9, slo_tpot_s=base.tpot_s * 1.1), catalog)
    assert keep.to_dict()["goodput_rps"] == pytest.approx(keep.latency.requests_per_s)
    assert lose.to_dict()["goodput_rps"] == 0


def test_goodput_simulation_rows_of_the_seed(catalog):
    rows = evaluate(scenario(), catalog).to_dict()["simulation"]
    for (name, rps, good, conf, over), row in zip(SEED_ROWS, rows, strict=False):
        assert row["name"] == name and round(row["requests_per_s"], 1) == rps and round(row["goodput_rps"], 1) == good
        assert round(row["conformance"], 3) == conf and round(row["ttft_over_slo"], 3) == over
        assert row["goodput_rps"] == pytest.approx(row["requests_per_s"] * row["conformance"])


# --- replicas and cost -----------------------------------------------------------------------------------------
def test_replicas_and_gpus_by_hand(catalog):
    d = evaluate(scenario(request_rate=7.3, tensor_parallel_size=2, gpu_hour_price=1.5, currency="EUR"),
                 catalog).to_dict()  # fmt: skip
    cap = d["capacity_rps_per_replica"]
    assert d["replicas"] == math.ceil(7.3 / cap)  # ⌈request_rate / capacity⌉
    assert d["gpus"] == d["replicas"] * 2 * 1  # replicas × tp × pp
    assert d["cost_per_million_output_tokens"] == pytest.approx(d["gpus"] * 1.5 / (7.3 * 256 * 3600) * 1e6)
    assert d["currency"] == "EUR"  # the scenario's own price, in its own currency


def test_cost_of_one_replica_without_a_rate_uses_the_spec_price(catalog):
    r = evaluate(scenario(gpu="h100-sxm", model="llama-3.1-8b"), catalog)
    d = r.to_dict()
    per_hour = catalog.gpus["h100-sxm"].price_per_gpu_hour  # the reference price in the spec (USD)
    tokens_per_hour = r.latency.requests_per_s * 256 * 3600
    assert d["cost_per_million_output_tokens"] == pytest.approx(per_hour / tokens_per_hour * 1e6)
    assert d["currency"] == "USD"


# --- swap vs recompute -----------------------------------------------------------------------------------------
def test_swap_time_by_hand(catalog):
    # Qwen2.5-7B: 57,344 B per token; a 1,280-token context over a 25 GB/s link, one way: 1,280 · 57,344 / 25e9
    d = evaluate(scenario(host_link_gb_per_s=25), catalog).to_dict()
    assert d["swap_s"] == pytest.approx(1280 * 57_344 / 25e9, rel=1e-9)
    assert d["swap_recompute_ratio"] == pytest.approx(d["recompute_s"] / d["swap_s"], rel=1e-9)


@pytest.mark.parametrize("model, kv_bytes, seed_ratio", [("llama-2-7b", 512 * KiB, 1.3)])
def test_swap_recompute_ratio_of_the_seed_through_the_report(catalog, model, kv_bytes, seed_ratio):
    # seeds/000 "Quando la memoria finisce": 7e9 parameters, 25 GB/s, 5e14 FLOP/s effective, 512 KiB/token → 1.3.
    # Through the Report: Llama-2-7B (6.7e9, 512 KiB/token MHA), host 25 GB/s, peak 1,000 TFLOP/s × mfu 0.5, at a
    # 2,048-token context (above the knee, below the 53k attention crossover, where the closed form holds)
    s = scenario(model=model, gpu="h100-sxm", host_link_gb_per_s=25, peak_tflop_per_s=1000, mfu=0.5,
                 input_len=1792, output_len=256, max_model_len=4096, max_num_batched_tokens=4096)  # fmt: skip
    r = evaluate(s, catalog)
    d = r.to_dict()
    assert d["kv_bytes_per_token"] == kv_bytes
    # the Report's recompute is the step model's prefill: the seed's compute plus the engine's named fixed costs
    # (launches, step overhead), which the closed form leaves out; without them the seed's ratio comes back
    terms = prefill_terms(r.latency.step, 2048, budget=s.max_num_batched_tokens)[0]
    assert d["recompute_s"] == pytest.approx(terms.total_s, rel=1e-9)
    compute_only = (terms.total_s - terms.overhead_s) / d["swap_s"]
    assert compute_only == pytest.approx(seed_ratio, rel=0.2)
    assert d["swap_recompute_ratio"] >= compute_only
