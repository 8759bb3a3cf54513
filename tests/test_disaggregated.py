"""Disaggregated serving (Scenario.disaggregated): prefill and decode on separate instances of one configuration."""

from math import ceil

import pytest
from conftest import scenario

from calc.evaluate import evaluate
from calc.pool import kv_link_bytes_per_s, transfer_s
from calc.units import HOUR_S

BASE = dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=2000, output_len=500, concurrency=32)


def test_ttft_is_prefill_alone_plus_the_kv_transfer_plus_one_decode_step(catalog):
    lat = evaluate(scenario(**BASE, disaggregated=True, queue_s=0.01), catalog).latency
    parts = lat.request_overhead_s + 0.01 + lat.prefill_s + lat.kv_transfer_s + lat.itl_s
    assert lat.ttft_s == pytest.approx(parts, rel=1e-12)
    assert "KV transfer" in lat.formulas["ttft_s"].symbolic() and lat.formulas["ttft_s"].value == lat.ttft_s


def test_the_transfer_is_the_prompts_kv_over_the_link(catalog):
    r = evaluate(scenario(**BASE, disaggregated=True, kv_transfer_gb_per_s=50), catalog)
    # Llama-3.1-8B: 2 (K,V) × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B per token, on one GPU
    assert r.latency.kv_transfer_s == pytest.approx(2000 * 131_072 / 50e9)


def test_without_a_link_the_kv_crosses_the_gpus_own_nvlink(catalog):
    r = evaluate(scenario(**BASE, disaggregated=True), catalog)
    assert kv_link_bytes_per_s(r.scenario, r.gpu) == 450e9  # H100 NVLink 4, per direction
    assert transfer_s(r.memory, 2000, 450e9) == pytest.approx(2000 * 131_072 / 450e9)
    assert r.latency.kv_transfer_s == pytest.approx(2000 * 131_072 / 450e9)


def test_tpot_is_a_plain_decode_step_and_beats_the_mixed_one(catalog):
    dis = evaluate(scenario(**BASE, disaggregated=True), catalog).latency
    agg = evaluate(scenario(**BASE), catalog).latency
    assert dis.tpot_s == dis.itl_s  # no prompt rides on a decode instance's steps
    assert agg.tpot_s > agg.itl_s  # vLLM mixes the arriving prompts into the decode steps
    assert dis.tpot_s < agg.tpot_s


def test_a_decode_instance_holds_each_request_for_its_output_steps(catalog):
    lat = evaluate(scenario(**BASE, disaggregated=True), catalog).latency
    assert lat.requests_per_s == pytest.approx(32 / (500 * lat.tpot_s))


def test_prefill_and_decode_instances_for_the_rate(catalog):
    r = evaluate(scenario(**BASE, disaggregated=True, request_rate=20, tensor_parallel_size=2), catalog)
    fl, lat = r.fleet, r.latency
    prefill = ceil(20 * lat.prefill_s / (2 / 3))  # prefill instances at most 2/3 busy: a prompt waits ≤ 1 prefill
    decode = ceil(20 / fl.capacity.rps)
    assert (fl.prefill_instances, fl.decode_instances) == (prefill, decode)
    assert fl.replicas == prefill + decode and fl.gpus == (prefill + decode) * 2
    price = catalog.gpus["h100-sxm"].price_per_gpu_hour
    assert fl.cost_per_million_output_tokens == pytest.approx(price * fl.gpus / (20 * 500 * HOUR_S) * 1e6)
    assert fl.currency == "USD"


def test_without_a_rate_one_decode_instance_and_its_prefill(catalog):
    r = evaluate(scenario(**BASE, disaggregated=True), catalog)
    fl = r.fleet
    assert fl.replicas is None and fl.decode_instances == 1
    assert fl.prefill_instances == max(1, ceil(r.latency.requests_per_s * r.latency.prefill_s / (2 / 3)))
    assert fl.cost_per_hour == pytest.approx(fl.price_per_gpu_hour * (fl.prefill_instances + 1))


def test_aggregated_scenarios_are_unchanged(catalog):
    r = evaluate(scenario(**BASE, request_rate=20), catalog)
    assert r.fleet.prefill_instances is None and r.fleet.decode_instances is None
    assert r.latency.requests_per_s == pytest.approx(32 / r.latency.e2e_s)


@pytest.mark.parametrize("disaggregated", [False, True])
def test_the_breakdown_shown_is_the_end_to_end_latency(catalog, disaggregated):
    # the chart's stacked bars and the text's TTFT rows read LatencyResult.e2e_parts: they must add up to E2E
    import charts

    r = evaluate(scenario(**BASE, disaggregated=disaggregated, queue_s=0.01), catalog)
    lat = r.latency
    assert sum(v for _, v in lat.e2e_parts) == pytest.approx(lat.e2e_s, rel=1e-12)
    assert sum(v for _, v in lat.e2e_parts[:-1]) == pytest.approx(lat.ttft_s, rel=1e-12)
    bars = [t for t in charts.latency_breakdown(r).data if t.type == "bar"]
    assert sum(b.x[0] for b in bars) == pytest.approx(lat.e2e_s, rel=1e-12)
    assert any("KV" in b.name for b in bars) == disaggregated


@pytest.mark.parametrize("disaggregated", [False, True])
@pytest.mark.parametrize("tp", [1, 2])
def test_the_replicas_formula_ends_on_the_fleets_numbers(catalog, disaggregated, tp):
    r = evaluate(scenario(**BASE, request_rate=20, disaggregated=disaggregated, tensor_parallel_size=tp), catalog)
    fl = r.fleet
    replicas, gpus = r.formulas["Replicas"].split("\nGPUs = ")
    assert replicas.endswith(f"\n= {fl.replicas:,}") and gpus.endswith(f"\n= {fl.gpus:,}")
    assert gpus.endswith(f"= {fl.replicas:,} × {tp} × 1\n= {fl.gpus:,}")
    if disaggregated:  # the headline's instances: x prefill + y decode, not ⌈rate / capacity⌉ alone
        assert f"\n= {fl.prefill_instances} + {fl.decode_instances}\n" in replicas
    cost = r.formulas["Cost per million output tokens"]
    assert cost.endswith(f"= {fl.cost_per_million_output_tokens:.4g} USD")
    assert f"= {fl.cost_per_hour:,.4g} / (20 × 500 × 3,600)" in cost


def test_with_a_rate_a_prompt_waits_for_its_prefill_instance(catalog):
    """Qwen2.5-7B fp8 on RTX 4090s at 10 req/s, 1,024-token prompts of 75.6 ms: sized at full load, one prefill
    instance would be 76 % busy and a prompt would wait ρ·S / (2(1 − ρ)) = 0.756 × 75.6 / 0.488 ≈ 117 ms on average
    (Poisson arrivals, deterministic service), which TTFT did not show. At most 2/3 busy: ⌈0.756 / (2/3)⌉ = 2
    instances, ρ = 0.378, W = 0.378 × 75.6 ms / (2 × 0.622) ≈ 23 ms, in TTFT and in its breakdown. (With the
    constants before 2026-12-02's refit the prompt took 85.8 ms: 86 % busy alone, a 260 ms wait.)"""
    s = scenario(gpu="rtx-4090", dtype="fp8", kv_cache_dtype="fp8", max_num_seqs=32, concurrency=32,
                 disaggregated=True, request_rate=10)  # fmt: skip
    r = evaluate(s, catalog)
    lat = r.latency
    x = 10 * lat.prefill_s
    assert 2 / 3 < x < 1 and r.fleet.prefill_instances == 2  # one instance would hold, more than 2/3 busy
    rho = x / 2
    wait = rho * lat.prefill_s / (2 * (1 - rho))
    assert dict(lat.e2e_parts)["waiting for a prefill instance"] == pytest.approx(wait)
    assert lat.ttft_s == pytest.approx(lat.request_overhead_s + wait + lat.prefill_s + lat.kv_transfer_s + lat.itl_s)
    alone = evaluate(s.model_copy(update={"request_rate": None}), catalog).latency  # a closed loop: no open queue
    assert "waiting for a prefill instance" not in dict(alone.e2e_parts)


def test_the_prefill_count_by_hand():
    """1.73 instances' worth of 173 ms prompts: ⌈1.73 / (2/3)⌉ = 3 at most 2/3 busy, where a prompt waits
    ρ·S / (2(1 − ρ)) = 0.577 × 173 / 0.847 ≈ 118 ms; for a wait of at most w = 113.6 ms it takes
    ⌈x (S + 2w) / (2w)⌉ = ⌈1.73 × 400.2 / 227.2⌉ = ⌈3.047⌉ = 4 (ρ = 0.4325, W ≈ 65.9 ms). A wait budget under 2 % of
    a prefill (3.46 ms here) buys nothing; without one, the 2/3 rule."""
    from calc.prefill_pool import prefill_count, prefill_wait_s

    assert prefill_count(1.73, 0.173) == 3
    assert prefill_wait_s(1.73, 0.173, 3) == pytest.approx(0.5767 * 0.173 / (2 * 0.4233), rel=1e-3)
    assert prefill_count(1.73, 0.173, 0.1136) == 4
    wait = prefill_wait_s(1.73, 0.173, 4)
    assert wait == pytest.approx(0.4325 * 0.173 / (2 * 0.5675), rel=1e-3) and wait <= 0.1136
    assert prefill_count(1.73, 0.173, 0.003) == 3 and prefill_count(1.73, 0.173, -1.0) == 3


@pytest.mark.parametrize("rate", [1, 3, 5, 10, 20, 40])
def test_prefill_instances_are_added_until_the_ttft_slo_holds(catalog, rate):
    """Llama-3.1-70B at TP 4 on H100s, 2,000-token prompts, disaggregated: at 10 req/s the 2/3 rule's three prefill
    instances left a 119 ms wait and one request at a time within the 500 ms TTFT SLO 89 % of the time (quota 90 %),
    so 'no replica count' at any rate from 10 up. The count the SLO needs serves every rate, and the fleet's
    prefill instances are the ones the TTFT's wait was computed at."""
    s = scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, input_len=2000, output_len=500,
                 concurrency=1, disaggregated=True, request_rate=rate)  # fmt: skip
    r = evaluate(s, catalog)
    assert r.fleet.replicas is not None and r.fleet.capacity.rps > 0
    assert r.fleet.prefill_instances == r.latency.prefill_instances >= ceil(rate * r.latency.prefill_s / (2 / 3))
    assert r.conformance.conformance >= s.conformance_quota


def test_where_no_prefill_count_helps_the_refusal_says_so(catalog):
    s = scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, input_len=2000, output_len=500,
                 concurrency=1, disaggregated=True, request_rate=10, slo_ttft_s=0.25)  # fmt: skip
    cap = evaluate(s, catalog).fleet.capacity
    assert cap.rps == 0 and "keeps busy, and more of them would not bring it within the SLO" in cap.reason


def test_the_page_says_the_capacity_is_a_decode_instances_and_how_the_replicas_split(catalog):
    """Six replicas at 4.62 req/s 'per replica' read as 27.7 req/s of room; one of them was a prefill instance."""
    from boundary.view import latency_metrics

    r = evaluate(scenario(model="llama-3.1-8b", gpu="b200", disaggregated=True, request_rate=10.0), catalog)
    tile = next(m for m in latency_metrics(r) if m.label == "Replicas / GPUs")
    fl = r.fleet
    assert fl.replicas == fl.prefill_instances + fl.decode_instances
    assert "per decode instance" in tile.help and "per replica" not in tile.help
    assert tile.help.endswith(f"({fl.prefill_instances:,} prefill + {fl.decode_instances:,} decode instances)")


def test_the_disaggregated_headroom_is_the_rate_the_same_instances_are_sized_for(catalog):
    """The headroom says how much more traffic the fleet carries at most: just above rate × (1 + headroom) the plan
    sizes more prefill instances, just below it the same ones (it was measured at their saturation, 1 / prefill each,
    where their queue has no bound; their count is sized for 2/3 of that, or less where the TTFT SLO's wait budget
    sets it). The decode instances may need more before that edge (the queue eats the TTFT SLO): the text says so."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    base = Scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, disaggregated=True,
                    request_rate=10, input_len=2000, output_len=500)  # fmt: skip
    f = evaluate(base, catalog).fleet
    edge = 10 * (1 + f.headroom)
    below = evaluate(base.model_copy(update={"request_rate": edge * 0.999}), catalog).fleet
    above = evaluate(base.model_copy(update={"request_rate": edge * 1.001}), catalog).fleet
    assert below.prefill_instances == f.prefill_instances < above.prefill_instances
    # 4 instances of a 173 ms prefill saturate at 4 / 0.173 = 23 req/s (the old headroom, capped by the decode
    # instances: 54 %); sized for the SLO's wait they carry 13 req/s
    assert f.headroom < 0.35
