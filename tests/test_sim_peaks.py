"""The peaks `vllm bench serve` prints (calc/sim_peaks.py): by hand, a published run, and properties."""

import math

import numpy as np
import pytest

from boundary.bench_data import decoded_share, load_runs
from calc import bench
from calc.evaluate import evaluate
from calc.sim_peaks import MAX_BUCKETS, _token_buckets, peaks

nan = math.nan


def test_two_requests_by_hand():
    # A: sent at 0, tokens at 0.5, 1.0, 1.5, 2.0, 2.5 s (5 tokens, TPOT 0.5 s) → vLLM's buckets 1, 2, 2
    #    spread evenly over [0.25, 2.75) at 2 tokens/s → 1.5, 2, 1.5
    # B: sent at 1.2 s, its one token at 1.3 s → bucket 1
    # tokens: bucket 1 holds 2 + 1 = 3; requests: A touches seconds 0–2, B second 1 → 2 at most
    send, first, fin, out = (np.array(x, dtype=float) for x in ([0, 1.2], [0.5, 1.3], [2.5, 1.3], [5, 1]))
    assert peaks(send, first, fin, out) == (pytest.approx(3.0), 2)
    assert _token_buckets(first, fin, out, 3) == pytest.approx([1.5, 3.0, 1.5])


def test_times_count_from_the_first_send_and_unfinished_requests_do_not_count():
    # the same two requests 100 s later, and a third that never finished (it never fit the pool)
    send, first, fin, out = (np.array(x, dtype=float) for x in ([100, 101.2, 100.1], [100.5, 101.3, nan],
                                                                 [102.5, 101.3, nan], [5, 1, 7]))
    assert peaks(send, first, fin, out) == (pytest.approx(3.0), 2)
    assert peaks(send[2:], first[2:], fin[2:], out[2:]) is None


def test_tokens_are_conserved():
    rng = np.random.default_rng(0)
    send = rng.uniform(0, 50, 200)
    first = send + rng.uniform(0.01, 2, 200)
    out = rng.integers(1, 300, 200).astype(float)
    fin = first + (out - 1) * rng.uniform(0.005, 0.05, 200)
    n = int(np.ceil(fin.max() + 0.05)) + 1  # room for the last token's half-gap
    assert _token_buckets(first, fin, out, n).sum() == pytest.approx(out.sum())


def test_a_run_longer_than_the_bucket_cap_has_no_peaks():
    send, first, fin, out = (np.array(x, dtype=float) for x in ([0], [1], [MAX_BUCKETS + 5], [10]))
    assert peaks(send, first, fin, out) is None


def test_a_published_runs_peak_concurrency(catalog):
    # Massed Compute, Qwen3-32B on an H100, vLLM, 160 fixed 128 + 128 requests 32 at a time: the published JSON
    # has max_concurrent_requests 64 — five cohorts of 32, each second where one finishes and the next starts
    # touches both. The simulation's cohorts do the same.
    run = next(r for r in load_runs(catalog)[0] if r.id == "massed-qwen3-32b-h100-vllm-c32")
    res = bench.serve(evaluate(run.scenario, catalog), num_prompts=run.num_prompts, max_concurrency=32,
                      range_ratio=run.range_ratio, decoded_share=decoded_share(run))  # fmt: skip
    assert run.measured["max_concurrent_requests"] == 64
    assert res.peak_concurrent_requests == 64
    # its peak of 832 tokens in a second is 32 decodes of 40.3 ms (the run's TPOT) in a second: 32 / 0.0403 = 794
    # (+5 %); the prediction is the same product at the predicted TPOT
    tpot_s = res.bench_summary()["median_tpot_ms"] / 1e3
    assert res.peak_output_tokens_per_s == pytest.approx(32 / tpot_s, rel=0.05)
