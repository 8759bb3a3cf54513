"""Continuous-batching simulation (calc/scheduler.py): by hand, against a per-step reference, properties, the seed."""

import math

import numpy as np
import pytest

from calc.bench import batch_latency
from calc.scheduler import simulate
from calc.sim_engine import EngineConfig
from calc.sim_stats import ItlSegments, Workload, eos_hazard, workload_arrays

MS = 1e-3


def const_10ms(prefill_tokens, prefill_pairs, decode_seqs, decode_context, prefill_seqs=1):
    return 10 * MS


def engine(**kw) -> EngineConfig:
    """Defaults: a pool that never binds, blocks of 16 tokens, vLLM's 2,048-token budget."""
    base = dict(max_num_seqs=256, max_num_batched_tokens=2048, num_gpu_blocks=10**6, block_size=16,
                blocks_for=lambda t: -(-t // 16))  # fmt: skip
    return EngineConfig(**(base | kw))


def workload(**kw) -> Workload:
    return Workload(**(dict(input_len=100, output_len=5, num_prompts=1) | kw))


def rtx4090_step(prefill_tokens, prefill_pairs, decode_seqs, decode_context, prefill_seqs=1):
    """The seed's Qwen2.5-7B on an RTX 4090 as a max of linear terms: weights + KV reads at 87 % / 93 % of
    1,008 GB/s, or 13.05 GFLOP per token + 401,408 FLOP per attention pair at 146.3 TFLOP/s."""
    memory_s = 14.14e9 / (0.87 * 1.008e12) + decode_context * 57_344 / (0.93 * 1.008e12)
    compute_s = ((prefill_tokens + decode_seqs) * 13.05e9 + prefill_pairs * 401_408) / 146.3e12
    return max(memory_s, compute_s)


# --- by hand -----------------------------------------------------------------------------------------------
def test_one_request_constant_step():
    s = simulate(engine(), workload(), const_10ms).bench_summary()
    assert s["mean_ttft_ms"] == pytest.approx(10)  # one prefill step of 100 ≤ 2,048 tokens
    assert s["mean_e2el_ms"] == pytest.approx(50)  # + 4 decode steps for tokens 2..5
    assert s["mean_tpot_ms"] == pytest.approx(10)  # (50 − 10) / (5 − 1)
    assert s["median_itl_ms"] == pytest.approx(10) and s["p99_itl_ms"] == pytest.approx(10)


def test_sglang_overlap_schedule_by_hand():
    """SGLang's overlap schedule launches the step after a request's last token with it still in. One client, 3
    requests of 100 + 5 tokens, 10 ms steps, 2 ms of front-end: the first arrives at 2 ms, prefill 2 → 12 ms,
    decodes to 52 ms (e2e 52 ms, its TTFT 12 ms). Its successor is sent at 52 ms and arrives at 54 ms, while the
    step launched at 52 ms with the finished request in it runs to 62 ms: prefill 62 → 72 ms, TTFT 72 − 52 = 20 ms
    = 2 + (10 − 2) + 10, where without the overlap it is 12 ms. Outputs are not delayed: TPOT stays 10 ms."""
    w = workload(num_prompts=3, max_concurrency=1)
    base = dict(engine="sglang", request_overhead_s=2 * MS)
    plain = simulate(engine(**base), w, const_10ms)
    lag = simulate(engine(**base, overlap_schedule=True), w, const_10ms)
    assert plain.ttft_s.tolist() == pytest.approx([12 * MS] * 3)
    assert lag.ttft_s.tolist() == pytest.approx([12 * MS, 20 * MS, 20 * MS])
    assert lag.e2e_s.tolist() == pytest.approx([52 * MS, 60 * MS, 60 * MS])
    assert lag.bench_summary()["median_tpot_ms"] == pytest.approx(10)
    assert lag.bench_summary()["duration"] == pytest.approx((52 + 60 + 60) * MS)


def test_sglang_overlap_schedule_sees_an_arrival_one_step_late():
    """With others decoding, the step after the one a prompt arrives in was decided without it. Two clients, outputs
    of 3–9 tokens (range 0.5, seed 3), 10 ms steps, 2 ms of front-end: each successor arrives 2 ms into a step of the
    other's decodes; without the overlap it waits the 8 ms left and is prefilled (TTFT 2 + 8 + 10 = 20 ms), with it
    one decode step more (30 ms) — calc.latency's closed form: front + (step − front) + step + prefill."""
    w = Workload(input_len=100, output_len=6, num_prompts=6, max_concurrency=2, range_ratio=0.5, seed=3)
    base = dict(engine="sglang", request_overhead_s=2 * MS)
    plain = simulate(engine(**base), w, const_10ms)
    lag = simulate(engine(**base, overlap_schedule=True), w, const_10ms)
    assert plain.ttft_s.tolist() == pytest.approx([12 * MS] * 2 + [20 * MS] * 4)
    assert lag.ttft_s.tolist() == pytest.approx([12 * MS] * 2 + [30 * MS] * 4)
    assert lag.bench_summary()["median_itl_ms"] == pytest.approx(10)


def test_chunked_prefill_takes_three_steps():
    r = simulate(engine(max_num_batched_tokens=40), workload(), const_10ms)
    assert r.ttft_s[0] == pytest.approx(3 * 10 * MS)  # chunks 40 + 40 + 20
    assert r.e2e_s[0] == pytest.approx((3 + 4) * 10 * MS)


def test_closed_loop_by_hand():
    # C = 2, N = 4: both prompts share step 1 (200 ≤ 2,048 tokens), 4 decode steps → both finish at 50 ms; the
    # clients send requests 3 and 4 at 50 ms, which finish at 100 ms.
    s = simulate(engine(), workload(num_prompts=4, max_concurrency=2), const_10ms).bench_summary()
    assert s["completed"] == 4
    assert s["duration"] == pytest.approx(0.100)
    assert s["request_throughput"] == pytest.approx(4 / 0.100)  # 40 req/s
    assert s["output_throughput"] == pytest.approx(4 * 5 / 0.100)  # 200 tok/s
    assert s["total_token_throughput"] == pytest.approx(4 * (100 + 5) / 0.100)  # 4,200 tok/s
    assert s["median_ttft_ms"] == pytest.approx(10) and s["mean_e2el_ms"] == pytest.approx(50)


def test_linear_step_over_a_stretch_is_the_arithmetic_series():
    a, b = 5 * MS, 1e-6  # step = a + b · decode_context
    step = lambda p, pp, n, ctx, *_: a + b * ctx
    r = simulate(engine(), workload(num_prompts=2, output_len=50), step)
    # step 0: both prompts (context 0) → a; decode step j = 1..49: 2 sequences at context 100 + j each
    # Σ (100 + j) for j = 1..49 = 4,900 + 1,225 = 6,125
    series = [a + b * 2 * (100 + j) for j in range(1, 50)]
    assert r.e2e_s[0] == pytest.approx(a + 49 * a + b * 2 * 6125, rel=1e-12)
    assert r.e2e_s[0] == pytest.approx(a + sum(series), rel=1e-12)
    expanded = np.repeat(series, 2)  # each gap seen by both requests
    s = r.bench_summary()
    assert s["mean_itl_ms"] == pytest.approx(expanded.mean() / MS, rel=1e-12)
    assert s["median_itl_ms"] == pytest.approx(np.median(expanded) / MS, rel=1e-9)
    assert s["p99_itl_ms"] == pytest.approx(np.percentile(expanded, 99) / MS, rel=1e-9)


def test_vllm_preemption_by_hand():
    # Blocks of 1 token, a pool of 25: A and B (10 + 10 tokens each, 19 at full length) prefill together at step 0
    # (20 blocks). Decode steps 1, 2 hold 22, 24; step 3 would hold 26 > 25, so B (newest) is preempted after 3
    # tokens: back to the front of the queue, to prefill 10 + 3 tokens again. A decodes alone (steps 3..9, 7 more
    # tokens: done at 100 ms); B cannot come back before (A's 14 + B's 13 > 25), is prefilled at step 10 (110 ms,
    # its 4th token) and needs 6 more steps: done at 170 ms.
    prefilled = []

    def step(p, pp, n, ctx, *_):
        prefilled.append(p)
        return 10 * MS

    cfg = engine(num_gpu_blocks=25, block_size=1, blocks_for=lambda t: t, max_num_batched_tokens=100)
    r = simulate(cfg, workload(input_len=10, output_len=10, num_prompts=2), step)
    assert r.preemptions == 1
    assert sum(prefilled) == 10 + 10 + (10 + 3)
    assert r.ttft_s.tolist() == pytest.approx([0.010, 0.010])
    assert r.e2e_s.tolist() == pytest.approx([0.100, 0.170])
    gaps = [10 * MS] * 9 + [10 * MS] * 2 + [110 * MS - 30 * MS] + [10 * MS] * 6  # B waited 30 → 110 ms
    assert r.bench_summary()["p99_itl_ms"] == pytest.approx(np.percentile(gaps, 99) / MS)
    assert r.bench_summary()["mean_itl_ms"] == pytest.approx(np.mean(gaps) / MS)


def test_prefix_hits_skip_compute_but_count_as_context():
    # step = 1 ms + 0.1 ms per prompt token computed + 1 µs per context token decoded; C = 1, 64 cached tokens
    step = lambda p, pp, n, ctx, *_: 1 * MS + 0.1 * MS * p + 1e-6 * ctx
    r = simulate(engine(prefix_cached_tokens=64), workload(num_prompts=2, output_len=2, max_concurrency=1), step)
    assert r.ttft_s.tolist() == pytest.approx([1 * MS + 100 * 0.1 * MS, 1 * MS + (100 - 64) * 0.1 * MS])
    # the one decode step attends to the whole prompt plus the first token: context 101 for both
    assert (r.e2e_s - r.ttft_s).tolist() == pytest.approx([1 * MS + 101e-6] * 2)


def test_one_token_outputs_have_no_tpot():
    r = simulate(engine(), workload(num_prompts=3, output_len=1), const_10ms)
    assert r.e2e_s.tolist() == pytest.approx([0.010] * 3) and np.isnan(r.tpot_s).all()
    s = r.bench_summary()
    assert s["mean_tpot_ms"] == 0 and s["mean_itl_ms"] == 0 and s["output_throughput"] == pytest.approx(3 / 0.010)


def test_batch_latency_is_one_batch_then_decode():
    lat = batch_latency(engine(), const_10ms, batch_size=8, input_len=100, output_len=5)
    assert lat.latency_s == pytest.approx(0.050)  # 800 ≤ 2,048 tokens: 1 prefill step + 4 decode steps
    out = lat.bench_summary()
    assert out["avg_latency"] == lat.latency_s and set(out["percentiles"]) == {"10", "25", "50", "75", "90", "99"}
    assert all(v == lat.latency_s for v in out["percentiles"].values())
    # 8 × 1,000 tokens with a 2,048 budget: steps carry 2,048, 2,048, 2,048, 1,856 prompt tokens, so the last
    # prompt finishes at step 4 and needs 4 more: 8 steps
    assert batch_latency(engine(), const_10ms, batch_size=8, input_len=1000, output_len=5).latency_s == \
        pytest.approx(0.080)  # fmt: skip


def test_bench_summary_keys_are_vllm_bench_serves():
    # the keys of the published JSON (tests/data/benchmarks/massed-compute-qwen3-32b-h100.yaml, its verbatim line)
    keys = {"completed", "failed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
            "request_goodput", "output_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "total_token_throughput"}
    keys |= {f"{s}_{m}_ms" for s in ("mean", "median", "std", "p99") for m in ("ttft", "tpot", "itl", "e2el")}
    assert set(simulate(engine(), workload(), const_10ms).bench_summary()) == keys


def test_itl_percentiles_are_numpys_on_the_expanded_samples():
    rng = np.random.default_rng(3)
    lo = rng.uniform(0.01, 0.02, 40)
    steps = rng.integers(1, 30, 40)
    hi = np.where(steps > 1, lo + rng.uniform(0, 0.01, 40), lo)
    weight = rng.integers(1, 9, 40)
    values = [np.linspace(a, b, k) for a, b, k in zip(lo, hi, steps, strict=True)]
    segs = ItlSegments(lo, hi, steps, weight, np.array([v.sum() for v in values]))
    expanded = np.concatenate([np.repeat(v, w) for v, w in zip(values, weight, strict=True)])
    assert segs.count == expanded.size and segs.mean_s == pytest.approx(expanded.mean())
    qs = (0, 1, 25, 50, 90, 99, 99.9, 100)
    for q in qs:
        assert segs.percentile_s(q) == pytest.approx(np.percentile(expanded, q), rel=1e-9)
    assert segs.percentiles_s(qs) == pytest.approx(np.percentile(expanded, qs), rel=1e-9)  # all ranks in one pass


def test_itl_percentiles_with_stretches_of_equal_gaps_are_numpys():
    """Point masses (one gap, or k equal gaps: most of a long run's segments) beside progressions, with ties."""
    rng = np.random.default_rng(11)
    lo = np.round(rng.uniform(0.01, 0.02, 60), 3)  # ties between points and progression values
    steps = rng.integers(1, 30, 60)
    hi = np.where(rng.random(60) < 0.5, lo, lo + rng.uniform(0, 0.01, 60))  # half are k equal gaps
    hi = np.where(steps > 1, hi, lo)
    weight = rng.integers(1, 9, 60)
    values = [np.linspace(a, b, k) for a, b, k in zip(lo, hi, steps, strict=True)]
    segs = ItlSegments(lo, hi, steps, weight, np.array([v.sum() for v in values]))
    expanded = np.concatenate([np.repeat(v, w) for v, w in zip(values, weight, strict=True)])
    qs = (0, 1, 10, 33, 50, 66, 90, 99, 99.9, 100)
    assert segs.percentiles_s(qs) == pytest.approx(np.percentile(expanded, qs), rel=1e-9)


def test_a_request_that_cannot_fit_is_not_completed():
    r = simulate(engine(num_gpu_blocks=10), workload(num_prompts=3, range_ratio=0.9, input_len=100, output_len=60,
                                                      seed=1), const_10ms)  # fmt: skip
    too_big = np.array([-(-(p + o - 1) // 16) > 10 for p, o in zip(r.input_lens, r.output_lens, strict=True)])
    assert too_big.any() and r.completed == 3 - too_big.sum()
    assert np.isnan(r.e2e_s[too_big]).all() and np.isfinite(r.e2e_s[~too_big]).all()


def test_workload_is_seeded():
    w = Workload(input_len=1000, output_len=200, num_prompts=500, request_rate=4.0, range_ratio=0.5, seed=7)
    p, o, t = workload_arrays(w)
    p2, o2, t2 = workload_arrays(w)
    assert (p == p2).all() and (o == o2).all() and (t == t2).all()
    assert p.min() >= 500 and p.max() <= 1500 and o.min() >= 100 and o.max() <= 300
    assert t[0] == 0 and np.diff(t).mean() == pytest.approx(1 / 4.0, rel=0.15)  # Poisson at 4 req/s


# --- preemption ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eng", ["vllm", "sglang"])
def test_small_pool_preempts_and_everything_completes(eng):
    # 16 requests of 512 + 256 tokens need 16 × 48 = 768 blocks of 16 at full length; the pool has 300
    cfg = engine(num_gpu_blocks=300, engine=eng)
    r = simulate(cfg, Workload(input_len=512, output_len=256, num_prompts=64, max_concurrency=16), rtx4090_step)
    assert r.preemptions > 0 and r.completed == 64 and np.isfinite(r.e2e_s).all()


# --- properties ------------------------------------------------------------------------------------------------
def test_ttft_median_grows_with_request_rate():
    cfg = engine(num_gpu_blocks=7504, max_num_seqs=128)
    medians = [np.median(simulate(cfg, Workload(input_len=1024, output_len=256, num_prompts=300, request_rate=rate,
                                                seed=5), rtx4090_step).ttft_s) for rate in (0.5, 1, 2, 4, 8, 16)]  # fmt: skip
    assert medians == sorted(medians) and medians[-1] > 2 * medians[0]


@pytest.mark.parametrize("eng", ["vllm", "sglang"])
def test_ttft_median_grows_with_concurrency(eng):
    # lengths ±10 %: with identical lengths and a deterministic step, requests phase-lock into waves and vLLM's
    # median is not monotone (C = 2: both prompts share every 2,048-token step, 186 ms; C = 4: staggered, 93 ms)
    cfg = engine(num_gpu_blocks=7504, max_num_seqs=128, engine=eng)
    medians = [np.median(simulate(cfg, Workload(input_len=1024, output_len=256, num_prompts=200, max_concurrency=c,
                                                range_ratio=0.1), rtx4090_step).ttft_s)
               for c in (1, 2, 4, 8, 16, 32, 64, 128)]  # fmt: skip
    assert medians == sorted(medians) and medians[-1] > 10 * medians[0]


def test_output_throughput_grows_with_concurrency_until_max_num_seqs_binds():
    cfg = engine(max_num_seqs=32)  # the pool never binds
    out = {c: simulate(cfg, Workload(input_len=512, output_len=128, num_prompts=256, max_concurrency=c),
                       rtx4090_step).bench_summary()["output_throughput"] for c in (1, 2, 4, 8, 16, 32, 64)}  # fmt: skip
    grow = [out[c] for c in (1, 2, 4, 8, 16, 32)]
    assert grow == sorted(grow) and out[32] > 10 * out[1]
    assert out[64] == pytest.approx(out[32], rel=0.05)  # 32 running at most: the rest wait


@pytest.mark.parametrize("eng", ["vllm", "sglang"])
def test_no_preemption_once_the_pool_holds_every_running_request(eng):
    # 16 running requests of 512 + 256 tokens hold 16 × ⌈767 / 16⌉ = 16 × 48 = 768 blocks at full length
    w = Workload(input_len=512, output_len=256, num_prompts=64, max_concurrency=16)
    assert [simulate(engine(num_gpu_blocks=b, engine=eng), w, rtx4090_step).preemptions
            for b in (768, 800, 1600, 10**6)] == [0, 0, 0, 0]  # fmt: skip
    assert simulate(engine(num_gpu_blocks=700, engine=eng), w, rtx4090_step).preemptions > 0


def test_more_blocks_fewer_preemptions_approaching_the_fit_point():
    # vLLM, identical lengths: from half the fit point (384 blocks) up, each extra block only delays collisions
    w = Workload(input_len=512, output_len=256, num_prompts=64, max_concurrency=16)
    counts = [simulate(engine(num_gpu_blocks=b), w, rtx4090_step).preemptions for b in range(400, 801, 50)]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1] == 0


def test_a_bigger_pool_can_preempt_more_far_below_the_fit_point():
    """Not a theorem: a smaller pool also admits fewer requests. At 100 blocks vLLM runs 3 at a time and
    preempts less than at 150 blocks, where it admits 4; SGLang's reservation admits only what fits at 100."""
    w = Workload(input_len=512, output_len=256, num_prompts=64, max_concurrency=16)
    vllm = [simulate(engine(num_gpu_blocks=b), w, rtx4090_step).preemptions for b in (100, 150)]
    sglang = [simulate(engine(num_gpu_blocks=b, engine="sglang"), w, rtx4090_step).preemptions for b in (100, 200)]
    assert vllm[0] < vllm[1] and sglang[0] < sglang[1]


def test_engines_agree_when_every_request_arrives_alone():
    w = Workload(input_len=3000, output_len=64, num_prompts=20, max_concurrency=1, range_ratio=0.5, seed=8)
    v = simulate(engine(), w, rtx4090_step)
    s = simulate(engine(engine="sglang"), w, rtx4090_step)
    assert v.bench_summary() == pytest.approx(s.bench_summary(), rel=1e-12)


# --- the seed (measurement report 002: Qwen2.5-7B on an RTX 4090, C = 16, output 256) ---------------------------
SEED_ENGINE = engine(num_gpu_blocks=7504, max_num_seqs=128)  # 120,064 tokens in blocks of 16


def ttft_p50_s(cfg: EngineConfig, input_len: int, c: int = 16, range_ratio: float = 0.0) -> float:
    w = Workload(input_len=input_len, output_len=256, num_prompts=160, max_concurrency=c, range_ratio=range_ratio)
    return float(np.median(simulate(cfg, w, rtx4090_step).ttft_s))


def test_ttft_p50_grows_with_prompt_length_at_c16():
    # lengths ±10 %, so the 16 clients do not phase-lock (identical lengths: 161, 139, 186, 377, 578 ms)
    p50 = [ttft_p50_s(SEED_ENGINE, n, range_ratio=0.1) for n in (256, 512, 1024, 2048, 4096)]
    assert p50 == sorted(p50) and p50[-1] > 10 * p50[0]
    # identical lengths, as measured: 297.5 → 1,047.4 ms (3.5×)
    assert ttft_p50_s(SEED_ENGINE, 4096) > 3 * ttft_p50_s(SEED_ENGINE, 256)


def test_prefill_at_c16_takes_several_times_its_c1_time():
    # identical lengths (the seed's run): the 16 clients finish in waves, so a prompt is scheduled with what budget
    # the step has left and finishes in the steps its wave shares: 186 ms vs 93 ms at L = 1,024 (measured 360.5
    # vs 93.5), 161 vs 23 ms at L = 256, where 8 prompts share each 2,048-token step
    def prefill_median_s(input_len: int, c: int) -> float:
        w = Workload(input_len=input_len, output_len=256, num_prompts=160, max_concurrency=c)
        return float(np.median(simulate(SEED_ENGINE, w, rtx4090_step).prefill_s))

    assert prefill_median_s(1024, 16) > 1.8 * prefill_median_s(1024, 1)
    assert prefill_median_s(256, 16) > 5 * prefill_median_s(256, 1)


# --- speed (timed in scripts/benchmark.py) ---------------------------------------------------------------------
@pytest.mark.parametrize("eng", ["vllm", "sglang"])
def test_a_thousand_requests_finish(eng):
    w = Workload(input_len=1024, output_len=256, num_prompts=1000, max_concurrency=256, range_ratio=0.2)
    r = simulate(engine(num_gpu_blocks=7504, engine=eng), w, rtx4090_step)
    assert r.completed == 1000


@pytest.mark.parametrize("field, kw", [("request_rate", {"request_rate": 0.0}), ("request_rate", {"request_rate": -1.0}),
                                       ("request_rate", {"request_rate": math.nan}), ("range_ratio", {"range_ratio": 1.0})])
def test_a_workload_that_cannot_run_names_its_field(field, kw):
    """0 req/s would never send the second request (and divided by zero drawing its gap): refused by name."""
    with pytest.raises(ValueError, match=field):
        Workload(input_len=128, output_len=16, num_prompts=10, **kw)


def test_eos_hazard_by_hand():
    """One request in ten of 128 tokens ending early: h = 1 − 0.9^(1/128) = 0.000823 leaves (1 − 0.9) / h = 121.5
    tokens decoded on average, 0.949 of 128; the hazard inverts that mean."""
    h = 1 - 0.9 ** (1 / 128)
    assert h == pytest.approx(0.000823, abs=1e-6)
    share = (1 - (1 - h) ** 128) / h / 128
    assert share == pytest.approx(0.949, abs=1e-3)
    assert eos_hazard(128, share) == pytest.approx(h, rel=1e-9)


def test_outputs_ending_at_eos_decode_the_stated_share_and_leave_full_runs_alone():
    """decoded_share < 1 (a run without --ignore-eos): outputs capped at their drawn length, decoding that share
    on average; at 1 the draws are the ones a full-length workload always had."""
    full = Workload(input_len=128, output_len=128, num_prompts=20_000, max_concurrency=32)
    eos = Workload(input_len=128, output_len=128, num_prompts=20_000, max_concurrency=32, decoded_share=0.94)
    p, o, t = workload_arrays(full)
    p2, o2, t2 = workload_arrays(eos)
    assert (o == 128).all() and (p2 == p).all() and (t2 == t).all()
    assert o2.max() == 128 and o2.min() >= 1
    assert o2.mean() / 128 == pytest.approx(0.94, abs=0.01)
    with pytest.raises(ValueError, match="decoded_share"):
        Workload(input_len=128, output_len=128, num_prompts=1, decoded_share=0.0)


def test_a_request_that_can_never_fit_is_a_failed_request():
    # 104 tokens need ⌈104 / 16⌉ = 7 blocks; a pool of 6 never holds one: vLLM answers with an error, which
    # vllm bench serve counts under "Failed requests"; a pool of 7 serves all three
    small = simulate(engine(num_gpu_blocks=6), workload(num_prompts=3), const_10ms).bench_summary()
    assert (small["completed"], small["failed"]) == (0, 3)
    fits = simulate(engine(num_gpu_blocks=7), workload(num_prompts=3), const_10ms).bench_summary()
    assert (fits["completed"], fits["failed"]) == (3, 0)


def test_goodput_counts_the_requests_within_every_slo_by_hand():
    # one request: a 10 ms prefill step gives its first token at 10 ms, four 10 ms decode steps its last at 50 ms;
    # the run lasts 50 ms, so one good request is 1 / 0.050 = 20 req/s
    r = simulate(engine(), workload(), const_10ms)
    assert r.goodput_rps({"ttft": 10}) == pytest.approx(20.0)
    assert r.goodput_rps({"ttft": 10, "tpot": 10, "e2el": 50}) == pytest.approx(20.0)
    assert r.goodput_rps({"ttft": 9.9}) == 0 and r.goodput_rps({"e2el": 49}) == 0 and r.goodput_rps({"tpot": 9}) == 0
    assert r.bench_summary(goodput={"ttft": 10})["request_goodput"] == pytest.approx(20.0)
    assert r.bench_summary()["request_goodput"] is None  # not asked for: null, as the tool writes it


def test_burstiness_shapes_the_gaps_and_keeps_their_mean():
    # vllm bench serve draws gaps from gamma(b, 1 / (rate · b)): mean 1 / rate, squared coefficient of variation 1 / b
    rate = 4.0
    for b in (0.25, 4.0):
        _, _, ready = workload_arrays(workload(num_prompts=40_001, request_rate=rate, burstiness=b))
        gaps = np.diff(ready)
        assert gaps.mean() == pytest.approx(1 / rate, rel=0.03)
        assert gaps.var() / gaps.mean() ** 2 == pytest.approx(1 / b, rel=0.06)
    # b = 1 is Poisson, with the same draws as before burstiness existed (fixed lengths draw nothing first)
    _, _, ready = workload_arrays(workload(num_prompts=5, request_rate=rate))
    assert np.diff(ready) == pytest.approx(np.random.default_rng(0).exponential(1 / rate, 4))


def test_itl_standard_deviation_is_numpys_over_the_expanded_gaps():
    """std_itl_ms as `vllm bench serve` writes it (np.std, population): gaps 1, 2, 3 s once and 5 s twice →
    mean 16 / 5 = 3.2, Σ x² = 1 + 4 + 9 + 25 + 25 = 64, variance 64 / 5 − 3.2² = 2.56, std 1.6 s."""
    seg = ItlSegments(lo_s=np.array([1.0, 5.0]), hi_s=np.array([3.0, 5.0]), steps=np.array([3, 1]),
                      weight=np.array([1, 2]), sum_s=np.array([6.0, 5.0]))  # fmt: skip
    assert seg.mean_s == pytest.approx(3.2) and seg.std_s == pytest.approx(1.6)
    assert seg.std_s == pytest.approx(float(np.std([1, 2, 3, 5, 5])))
