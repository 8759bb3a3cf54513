"""The seed report's measured series (seeds/002: Qwen2.5-7B-Instruct on one RTX 4090, vLLM with chunked prefill,
16 concurrent requests of L + 256 tokens, --ignore-eos, budget 2,048, max_num_seqs 128), replayed through the
step-time model and the scheduler simulation. The seed's own words are quoted beside each number."""

import pytest

from calc import bench
from calc.evaluate import evaluate
from calc.scenario import Scenario

LENGTHS = (256, 512, 1024, 2048, 4096)
ITL_P50_MS = (16.47, 16.76, 17.23, 18.23, 20.26)  # "实测 ITL p50"
PREFILL_MS = (229.4, 281.7, 360.5, 547.1, 804.4)  # "prefill 墙钟" at C = 16


def seed_run(catalog, L: int, c: int = 16):
    s = Scenario(input_len=L, output_len=256, concurrency=c, max_num_seqs=128, max_num_batched_tokens=2048,
                 kv_cache_memory_bytes=6_884_950_016)  # fmt: skip  # "Available KV cache memory: 6.41 GiB"
    r = evaluate(s, catalog)
    return r, bench.serve(r, num_prompts=160, max_concurrency=c)  # "每档 160 条请求"


@pytest.fixture(scope="module")
def runs(catalog):
    return {L: seed_run(catalog, L) for L in LENGTHS}


def test_itl_at_the_five_prompt_lengths(runs):
    for L, measured in zip(LENGTHS, ITL_P50_MS, strict=True):
        predicted = runs[L][1].bench_summary()["median_itl_ms"]
        assert predicted == pytest.approx(measured, rel=0.10), L


def test_ttft_growth_with_prompt_length(runs):
    # "TTFT p50 297.5 → 1047.4 ms (3.5×); TTFT p99 390.3 → 6027.1 ms (15.4×)"
    for L, p50, p99 in ((256, 297.5, 390.3), (4096, 1047.4, 6027.1)):
        res = runs[L][1]
        ttft = res.ttft_s[res.ttft_s == res.ttft_s] * 1e3
        import numpy as np

        assert float(np.median(ttft)) == pytest.approx(p50, rel=0.25), L
        assert float(np.percentile(ttft, 99)) == pytest.approx(p99, rel=0.25), L


def test_prefill_slowdown_under_load(catalog, runs):
    # "同样 1024 个 token 的 prefill：C=1 时 93.5 ms，C=16 时 360.5 ms … 3.9 倍"
    alone = seed_run(catalog, 1024, c=1)[1]
    loaded = runs[1024][1]
    p1, p16 = float(alone.prefill_s[0]), float(sorted(loaded.prefill_s)[len(loaded.prefill_s) // 2])
    assert p1 * 1e3 == pytest.approx(93.5, rel=0.25)
    assert p16 / p1 == pytest.approx(3.9, rel=0.25)


def test_mfu_and_mbu_of_the_report(catalog):
    # "L=256: MFU 14.3 %, MBU 82.1 %" from 23.55 TF/s and 827.7 GB/s; the model's decode step at L = 256 reads the
    # weights and 16 contexts of 384 tokens: its bytes per second against 1,008 GB/s is the MBU it predicts
    r, res = seed_run(catalog, 256)
    lat = r.latency
    step = res.bench_summary()["median_itl_ms"] / 1e3
    mbu = (lat.decode.bytes_moved / step) / 1.008e12
    assert mbu == pytest.approx(0.821, abs=0.08)
