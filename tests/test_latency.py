"""Roofline floors and estimates: DESIGN.md's numbers, the seed report's measurements, and properties."""


import numpy as np
import pytest
from conftest import VLLM_0_11, scenario

from calc.curves import decode_vs_context
from calc.engine_cycle import e2e_s
from calc.evaluate import evaluate
from calc.latency import chunk_from_itl, chunk_step_s, latency
from calc.params import count_params
from calc.pool import size_pool
from calc.roofline import attention_crossover_tokens, compute_time_s, mbu, memory_time_s, ridge_flop_per_byte
from calc.tails import itl_summary
from calc.work import attention_flop_per_context_token, block_flop_per_token, streamed_weight_bytes


def setup(catalog, **kw):
    s = scenario(**kw)
    m, g = catalog.models[s.model], catalog.gpus[s.gpu]
    return s, m, g, size_pool(s, m, g)


def lat_of(catalog, s, m, g, mem):
    return latency(s, m, g, mem, catalog.engines[s.engine])


# --- hand-computed -----------------------------------------------------------------------------------------------
def test_prefill_compute_floor_57ms():
    assert compute_time_s(flop=2 * 7e9 * 2048, peak_flop_per_s=1e15, efficiency=0.5) == pytest.approx(0.0573, abs=1e-4)


def test_decode_bandwidth_floor_4_7ms():
    assert memory_time_s(bytes_moved=14e9, bandwidth_bytes_per_s=3e12) == pytest.approx(4.67e-3, abs=1e-5)


def test_e2e_composition_and_rates():
    total = e2e_s(ttft_s=0.350, tpot_s=0.025, output_len=200)
    assert total == pytest.approx(0.350 + 199 * 0.025) == pytest.approx(5.325)
    assert 1 / 0.025 == pytest.approx(40) and 200 / total == pytest.approx(37.6, abs=0.05)
    # the second system ends at the same instant but streams faster after a blank screen
    assert e2e_s(ttft_s=2.340, tpot_s=0.015, output_len=200) == pytest.approx(5.325)


def test_mean_tpot_hides_a_stall():
    s = itl_summary([0.020] * 200 + [2.0])
    assert s.mean_s == pytest.approx(0.02985, abs=1e-5) and s.max_s == 2.0


def test_attention_crossover_53k_for_a_7b_mha_model(catalog):
    assert attention_crossover_tokens(params=7e9, num_layers=32, attn_width=4096) == pytest.approx(53_406, rel=1e-3)
    llama2 = catalog.models["llama-2-7b"]
    own = attention_crossover_tokens(params=count_params(llama2).total, num_layers=32, attn_width=4096)
    assert own == pytest.approx(53_000, rel=0.1)


# --- published: the seed report ------------------------------------------------------------------------------
def test_ridge_point_rtx_4090(catalog):
    g = catalog.gpus["rtx-4090"]
    ridge = ridge_flop_per_byte(
        peak_flop_per_s=g.peak_flop_per_s("bf16"), bandwidth_bytes_per_s=g.memory_bandwidth_bytes_per_s
    )
    assert ridge == pytest.approx(163.9, abs=0.05)


def test_flops_per_token_and_attention_term(catalog):
    m = catalog.models["qwen2.5-7b-instruct"]
    assert block_flop_per_token(count_params(m)) == pytest.approx(13.05e9, rel=1e-3)
    assert attention_flop_per_context_token(m) == 4 * 3584 * 28 == 401_408


def test_five_decode_floors_of_the_report(catalog):
    s, m, g, mem = setup(catalog)
    rows = [(384, 15.39, 14.37), (640, 14.60, 14.56), (1152, 15.28, 15.03), (2176, 15.03, 15.89), (4224, 14.85, 17.60)]
    pts = decode_vs_context(s, lat_of(catalog, s, m, g, mem), points=[(c, b) for c, b, _ in rows])
    for p, (_, _, floor_ms) in zip(pts, rows, strict=True):
        assert p.floor_s * 1e3 == pytest.approx(floor_ms, abs=0.01)


def test_itl_slope_per_context_token(catalog):
    s, m, g, mem = setup(catalog)
    a, b = decode_vs_context(s, lat_of(catalog, s, m, g, mem), points=[(1000, 16), (2000, 16)])
    slope_ms_per_token = (b.floor_s - a.floor_s) * 1e3 / 1000
    assert slope_ms_per_token == pytest.approx(16 * 57_344 / 1.008e12 * 1e3, rel=1e-6)
    assert slope_ms_per_token == pytest.approx(0.00091, abs=0.000005)


def test_prefill_and_decode_intensities(catalog):
    m = catalog.models["qwen2.5-7b-instruct"]
    p = count_params(m)
    s, _, _, mem = setup(catalog)
    weights = streamed_weight_bytes(m, p, mem.weight_format, tokens=1)
    assert weights == pytest.approx(14.14e9, rel=1e-3)  # all weights but the embedding lookup
    assert 256 * block_flop_per_token(p) / weights == pytest.approx(236, abs=1)
    assert 4096 * block_flop_per_token(p) / weights == pytest.approx(3780, abs=5)
    decode_16 = 16 * block_flop_per_token(p) / (weights + 16 * 384 * 57_344)  # 209 GFLOP / 14.5 GB
    assert 12 <= decode_16 <= 15


def test_chunk_step_66ms_and_its_inverse():
    step = chunk_step_s(decode_step_s=20.26e-3, chunk_tokens=512, flop_per_token=13.05e9, effective_flop_per_s=146.3e12)
    assert step == pytest.approx(0.066, abs=0.0005)
    assert chunk_from_itl(itl_p50_s=20.26e-3, itl_p99_s=step, effective_flop_per_s=146.3e12,
                          flop_per_token=13.05e9) == pytest.approx(512)  # fmt: skip


def test_mbu_from_measured_bandwidth():
    assert mbu(bytes_moved=827.7e9, time_s=1.0, bandwidth_bytes_per_s=1008e9) == pytest.approx(0.821, abs=0.001)


def test_calibrated_mbu_from_a_measured_itl(catalog):
    # L = 256 point: context 384, ITL p50 16.47 ms; floor 14.37 ms → 87.2 % (at 15.39 running; 16 here)
    s, m, g, mem = setup(catalog, input_len=256, output_len=256, measured_itl_s=16.47e-3)
    assert lat_of(catalog, s, m, g, mem).calibrated_mbu == pytest.approx(0.872, abs=0.005)


# --- properties ------------------------------------------------------------------------------------------------
def test_mfu_over_mbu_is_intensity_over_ridge(catalog):
    s, m, g, mem = setup(catalog)
    lat = lat_of(catalog, s, m, g, mem)
    for ph in (lat.prefill, lat.decode):
        assert ph.mfu_at_estimate / ph.mbu_at_estimate == pytest.approx(
            ph.intensity_flop_per_byte / lat.ridge_flop_per_byte
        )
    assert lat.prefill.compute_bound and not lat.decode.compute_bound


def test_floors_never_exceed_estimates_and_grow_with_load(catalog):
    steps = []
    for c in (1, 2, 4, 8, 16, 64, 256):
        s, m, g, mem = setup(catalog, concurrency=c)
        lat = lat_of(catalog, s, m, g, mem)
        assert lat.decode.floor_s <= lat.decode.estimate_s and lat.prefill.floor_s <= lat.prefill.estimate_s
        steps.append(lat.decode.estimate_s)
    assert steps == sorted(steps)


def test_sglang_overlap_schedule_in_the_closed_form(catalog):
    """SGLang's overlap schedule (engine_specs/sglang.yaml): alone, a request's successor waits for the decode step
    launched with its predecessor in it, max(0, step − front-end), then for its batch to be launched on the idle GPU
    (idle_launch_s); with others in flight also one whole decode step more (the step decided before it came), where
    without the overlap it waits half a step."""
    def ttft(concurrency: int, overlap: bool):
        s, m, g, mem = setup(catalog, engine="sglang", concurrency=concurrency)
        lat = latency(s, m, g, mem, catalog.engines["sglang"].model_copy(update={"overlap_schedule": overlap}))
        return lat.ttft_s, lat.decode_terms.total_s, lat.request_overhead_s, lat.prefill_terms.total_s

    assert catalog.engines["sglang"].overlap_schedule and not catalog.engines["vllm"].overlap_schedule
    t1, d1, front, pre = ttft(1, True)
    idle = catalog.engines["sglang"].idle_launch_s
    assert t1 == pytest.approx(front + pre + max(0.0, d1 - front) + idle, rel=1e-12)
    assert ttft(1, False)[0] == pytest.approx(front + pre, rel=1e-12)
    t8, d8, front, pre = ttft(8, True)
    assert t8 == pytest.approx(front + pre + d8 + max(0.0, d8 - front), rel=1e-12)
    assert ttft(8, False)[0] == pytest.approx(front + pre + d8 / 2, rel=1e-12)


def test_every_model_and_gpu_reports_the_latency_keys(catalog):
    # every pair plans and gives positive latency figures (the JSON's top-level keys read these same fields)
    for gid in catalog.gpus:
        for mid in catalog.models:
            r = evaluate(scenario(gpu=gid, model=mid), catalog)
            lat = r.latency
            values = (lat.prefill_floor_s, lat.prefill_s, lat.decode_step_floor_s, lat.decode_step_s, lat.ttft_s,
                      lat.tpot_s, lat.e2e_s, lat.ridge_flop_per_byte, lat.prefill.intensity_flop_per_byte,
                      lat.decode.intensity_flop_per_byte)  # fmt: skip
            assert all(v > 0 for v in values), (gid, mid)


@pytest.mark.parametrize("kw", [dict(model="llama-3.2-1b", gpu="b200"),
                                dict(model="deepseek-v3", gpu="h200", tensor_parallel_size=8),
                                dict(model="gemma-3-27b", gpu="h100-sxm", tensor_parallel_size=2, enforce_eager=True)])  # fmt: skip
def test_the_simulations_step_time_is_the_shown_estimate_to_the_last_bit(catalog, kw):
    """step_s (the simulation's, without building the terms) and terms().total_s (the page's) are one float."""
    m = evaluate(scenario(**kw), catalog).latency.step
    rng = np.random.default_rng(7)
    for _ in range(500):
        args = (float(rng.choice([0, rng.integers(1, 8192)])), float(rng.uniform(0, 1e7)), int(rng.integers(0, 512)),
                float(rng.uniform(0, 1e6)))  # fmt: skip
        assert m.step_s(*args) == m.terms(*args).total_s, args


def test_prompts_that_outrun_the_step_budget_wait_for_it(catalog):
    """One-token outputs: every request is a prompt. 52 in flight, 1,024 tokens each, a 2,048-token budget (an A10,
    under 70 GiB: vLLM's API-server default) — each full step prefills 2 prompts, so the loop finishes
    2,048 / 1,024 / T_full requests per second, however many are in flight."""
    s = scenario(model="aya-23-8b", gpu="a10", input_len=1024, output_len=1, concurrency=52)
    r = evaluate(s, catalog)
    assert s.max_num_batched_tokens == 2048
    t_full = r.latency.step.step_s(2048, 2048 * 1024 / 2, 0, 0)  # d = 0 decoders when output_len is 1
    assert r.latency.requests_per_s == pytest.approx(2048 / 1024 / t_full)
    assert r.latency.ttft_s == pytest.approx(52 / r.latency.requests_per_s)  # Little's law: the whole cycle is TTFT
    assert "waiting for the step budget" in dict(r.latency.e2e_parts)


def test_the_budget_bound_agrees_with_the_simulation_where_it_binds(catalog):
    """Closed form against the scheduler simulation (its check) where prompts saturate the budget: 64 requests of
    2,000 + 20 tokens on an H100 (the closed form said 31.4 req/s before it knew the budget)."""
    from calc import bench

    r = evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm", input_len=2000, output_len=20, concurrency=64), catalog)
    sim = bench.serve(r, num_prompts=640, max_concurrency=64).bench_summary()
    assert r.latency.requests_per_s == pytest.approx(sim["request_throughput"], rel=0.05)
    assert r.latency.ttft_s == pytest.approx(sim["mean_ttft_ms"] / 1e3, rel=0.10)


@pytest.mark.parametrize("c", [1, 4, 16, 64, 256])
def test_no_closed_loop_outruns_its_step_budget(catalog, c):
    """Property: requests/s × (prompt + decode tokens) never exceeds what full steps process, budget / T_full."""
    s = scenario(model="llama-3.1-8b", gpu="h100-sxm", input_len=3000, output_len=50, concurrency=c)
    lat = evaluate(s, catalog).latency
    n_out, L, budget = 50, 3000, s.max_num_batched_tokens
    d = min(c, budget * (n_out - 1) / (L + n_out - 1))
    t_full = lat.step.step_s(budget - d, (budget - d) * L / 2, d, d * (L + n_out / 2))
    assert lat.requests_per_s <= (budget - d) / L / t_full * (1 + 1e-9)


def test_a_new_request_waits_for_the_step_in_flight(catalog):
    """vLLM, 8 in flight, 128 + 1,000 tokens on an A100: a request is sent as its predecessor's last token comes out,
    at a step's end, reaches the scheduler a front-end time later and waits for the rest of the step then running.
    The mean step (TPOT): 8 × 128 / 1,000 = 1.024 prompt tokens arrive per step, in whole prompts of 128, so
    q = 1.024 / 128 = 0.8 % of the steps carry one beside the 8 decodes and the rest only decode."""
    s = scenario(model="llama-3.1-8b", gpu="a100-80gb-sxm", input_len=128, output_len=1000, concurrency=8,
                 engine_version=VLLM_0_11)  # an H100's 8-request step is shorter than the front end: nothing to wait
    lat = evaluate(s, catalog).latency
    ctx = 8 * (128 + 1000 / 2)
    step = 0.008 * lat.step.step_s(128, 128 * 128 / 2, 8, ctx) + 0.992 * lat.step.step_s(0, 0, 8, ctx)
    assert lat.tpot_s == pytest.approx(step)
    assert dict(lat.e2e_parts)["waiting for the step in flight"] == pytest.approx(step - lat.request_overhead_s)
    alone = evaluate(s.model_copy(update={"concurrency": 1}), catalog).latency  # nothing runs between its requests
    assert "waiting for the step in flight" not in dict(alone.e2e_parts)


@pytest.mark.parametrize("kw", [
    dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=128, output_len=1000, concurrency=8),
    dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=1000, output_len=1000, concurrency=128),
    dict(model="qwen2.5-7b-instruct", gpu="rtx-4090", input_len=256, output_len=256, concurrency=4),
    dict(model="llama-3.1-8b", gpu="a10", max_model_len=8192, input_len=256, output_len=128, concurrency=64),
    dict(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, input_len=2000, output_len=256, concurrency=32),
])  # fmt: skip
def test_the_closed_form_ttft_agrees_with_the_simulation_of_varied_lengths(catalog, kw):
    """Closed form against the scheduler simulation with lengths ±30 % (the search's check): within 20 %. Before
    the wait for the step in flight, these five were 24–52 % short (the first: 12.3 ms against 19.5 ms)."""
    from calc import bench

    r = evaluate(scenario(**kw), catalog)
    sim = bench.serve(r, num_prompts=max(400, 6 * kw["concurrency"]), max_concurrency=kw["concurrency"], range_ratio=0.3)
    assert r.latency.ttft_s == pytest.approx(sim.bench_summary()["median_ttft_ms"] / 1e3, rel=0.20)


@pytest.mark.parametrize("c", [2, 8, 32, 128, 512])
def test_tpot_grows_with_concurrency_and_spreads_prompts_once_every_step_carries_one(catalog, c):
    """Property: TPOT never falls as concurrency grows; once the arriving prompt tokens fill a chunk every step
    (q = 1) it is one step carrying them all, as before the mixture (b = 512: 512 × 2,000 / 100 tokens a step)."""
    base = dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=2000, output_len=100)
    lo = evaluate(scenario(**base, concurrency=c), catalog).latency
    hi = evaluate(scenario(**base, concurrency=c + 1), catalog).latency
    assert hi.tpot_s >= lo.tpot_s
    s = scenario(**base, concurrency=512)
    r = evaluate(s, catalog)
    lat = r.latency
    # the engine holds what its pool holds at 2,100 tokens (the rest wait for room): ⌈2,100 / 16⌉ = 132 blocks each
    b = min(512, s.max_num_seqs, r.memory.num_gpu_blocks // -(-2100 // r.memory.block_size))
    x = min(b * 2000 / 100, s.max_num_batched_tokens - b)  # ≥ one chunk of min(2,000, budget − b): q = 1
    assert x >= min(2000, s.max_num_batched_tokens - b)
    assert lat.tpot_s == pytest.approx(lat.step.step_s(x, x * 2000 / 2, b, b * (2000 + 100 / 2)))


def test_the_benchmark_says_when_fixed_lengths_put_requests_in_lockstep(catalog):
    """Qwen2.5-7B on an RTX 4090, 16 × (1,024 + 256), fixed lengths (the benchmark tool's default): requests that
    start together finish together and their successors' prompts queue together, so the simulated median TTFT is
    over 1.3× the closed form; the section says why and how to see the other case. Alone (C = 1) nothing queues."""
    from boundary.view_bench import benchmark_lines

    r = evaluate(scenario(input_len=1024, output_len=256, concurrency=16), catalog)
    d = r.benchmark.bench_summary()
    assert d["median_ttft_ms"] / 1e3 > 1.3 * r.latency.ttft_s
    line = next(x for x in benchmark_lines(r) if "the same length" in x)
    varied = r.benchmark_varied.bench_summary()["median_ttft_ms"] / 1e3  # lengths ±30 %: out of step
    assert varied == pytest.approx(r.latency.ttft_s, rel=0.15) and f"{varied * 1e3:.0f} ms" in line
    alone = evaluate(scenario(input_len=1024, output_len=256, concurrency=1), catalog)
    assert not any("the same length" in x for x in benchmark_lines(alone))


def test_the_benchmark_blames_the_pool_not_the_lockstep_when_requests_do_not_fit(catalog):
    """Llama-3.1-8B on an A10G, 128 × (200 + 1,000) with max_model_len 4,096: the pool holds 25 such requests
    (1,879 blocks // 75 per request). The estimates run 25 and queue the other 103 for room (TTFT: (128 / 25 − 1)
    E2E(25)); vLLM admits more and preempts, and the section says so, not that fixed lengths march in lockstep."""
    from boundary.view_bench import benchmark_lines

    r = evaluate(scenario(model="llama-3.1-8b", gpu="a10g", input_len=200, output_len=1000, concurrency=128,
                          max_model_len=4096), catalog)  # fmt: skip
    assert r.fit.max_concurrency_at_length == r.memory.num_gpu_blocks // -(-1200 // 16) == 25
    lines = benchmark_lines(r)
    assert r.benchmark.preemptions > 0 and not any("the same length" in x for x in lines)
    assert any("the KV pool holds 25 of the 128 requests at their full length: the estimates run 25" in x for x in lines)
    lat = r.latency
    assert lat.decode_batch == 25
    one = lat.e2e_s / (128 / 25)  # E2E at 25 in the engine: the cycle is 128 / 25 of it
    assert dict(lat.e2e_parts)["waiting in the engine's queue"] == pytest.approx((128 / 25 - 1) * one, rel=1e-9)
    # the rate is the 25's own, within 10 % of the simulation's (which admits more and preempts)
    assert lat.requests_per_s == pytest.approx(25 / one, rel=1e-9)
    assert lat.requests_per_s == pytest.approx(r.benchmark.bench_summary()["request_throughput"], rel=0.10)


def test_beyond_what_the_pool_holds_the_rest_wait_for_room_as_in_the_simulation(catalog):
    """Qwen3-30B-A3B on one H100, 128 requests of 2,000 + 200 tokens in flight: the pool holds 65 at that length,
    so the engine runs 65 and the other 63 wait for room, (128 / 65 − 1) · E2E(65) each. Before, the closed form
    stepped all 128 (TTFT 0.21 s, TPOT 74.5 ms) where the scheduler simulation, which plays the queue and the
    preemptions out, gives about 9.8 s and 50 ms; now within 10 %, and the rate within 5 %."""
    s = scenario(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=2000, output_len=200, concurrency=128)
    r = evaluate(s, catalog)
    lat, held = r.latency, r.memory.num_gpu_blocks // -(-2200 // r.memory.block_size)
    assert held == r.fit.max_concurrency_at_length < 128 and lat.decode_batch == held
    d = r.benchmark.bench_summary()
    assert lat.ttft_s * 1e3 == pytest.approx(d["median_ttft_ms"], rel=0.10)
    assert lat.tpot_s * 1e3 == pytest.approx(d["median_tpot_ms"], rel=0.10)
    assert lat.requests_per_s == pytest.approx(d["request_throughput"], rel=0.05)
    # a property: one request more in flight adds E2E(held) / held to each one's wait, nothing to TPOT
    more = evaluate(s.model_copy(update={"concurrency": 129}), catalog).latency
    assert more.ttft_s - lat.ttft_s == pytest.approx(lat.e2e_s / 128, rel=1e-9) and more.tpot_s == lat.tpot_s


def test_the_page_says_what_the_estimates_do_when_requests_do_not_fit(catalog):
    """The note beside a verdict of 'does not fit' and the Latency section name the requests the pool holds at this
    length (9,004 blocks // ⌈2,200 / 16⌉ = 65) and that the rest wait for room; no line says the estimates assume
    the requests fit."""
    from boundary import text, view

    r = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=2000, output_len=200, concurrency=128), catalog)
    held = r.memory.num_gpu_blocks // -(-2200 // r.memory.block_size)
    assert not r.fit.fits and f"run the {held} requests the KV pool holds" in view.unfit_note(r)
    rows = dict(view.latency_section(r).rows)
    assert rows["  in the engine"].startswith(f"{held} of the 128 in flight")
    report = text.render_text(r)
    assert "assume the requests fit" not in report and f"note: {view.unfit_note(r)}" in report


def test_beyond_max_num_seqs_the_rest_queue_in_the_closed_form_as_in_the_simulation(catalog):
    """Llama-3.1-8B on an H100, 64 clients of 512 + 256 tokens and max_num_seqs 16: the engine runs 16, the other 48
    wait in its queue, 3 × E2E(16) each; the simulation queues them the same way (TTFT within 5 %)."""
    s = scenario(model="llama-3.1-8b", gpu="h100-sxm", input_len=512, output_len=256, concurrency=64, max_num_seqs=16)
    r = evaluate(s, catalog)
    lat, d = r.latency, r.benchmark.bench_summary()
    assert lat.decode_batch == 16
    wait = dict(lat.e2e_parts)["waiting in the engine's queue"]
    assert wait == pytest.approx(3 * (lat.e2e_s - wait), rel=1e-9)  # (64 / 16 − 1) · E2E(16)
    assert lat.ttft_s * 1e3 == pytest.approx(d["median_ttft_ms"], rel=0.05)
    assert lat.requests_per_s == pytest.approx(d["request_throughput"], rel=0.05)
