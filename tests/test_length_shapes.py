"""ShareGPT's request lengths (calc/length_shapes.py): the shapes come from the shipped trace under each client's
filter, a replay draws them, and the benchmark data and the CLI use them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from boundary.bench_data import load_runs
from boundary.cli import main
from calc.length_shapes import DATASETS, SHAREGPT_MEAN_TOKENS, draw
from calc.sim_stats import Workload, workload_arrays

TRACE = Path(__file__).parent / "data" / "sharegpt" / "nanoflow_sharegpt.csv"


def trace() -> tuple[np.ndarray, np.ndarray]:
    with TRACE.open() as f:
        rows = list(csv.DictReader(f))
    return (np.array([int(r["ContextTokens"]) for r in rows]), np.array([int(r["GeneratedTokens"]) for r in rows]))


def shape(x: np.ndarray, bins: int = 40) -> list[float]:
    """Equal-count bins of the sorted lengths, each bin's mean over the mean."""
    x = np.sort(x.astype(float))
    edges = np.round(np.linspace(0, len(x), bins + 1)).astype(int)
    return [x[a:b].mean() / x.mean() for a, b in zip(edges[:-1], edges[1:], strict=True)]


def test_the_shapes_are_the_trace_under_each_clients_filter():
    p, o = trace()
    assert len(p) == 58_787  # the Nanoflow file's rows (its generator's comment: means 298.798425 / 323.726827)
    assert p.mean() == pytest.approx(298.798425, abs=1e-6) and o.mean() == pytest.approx(323.726827, abs=1e-6)
    # vllm/benchmarks/datasets/utils.py is_valid_sequence: both ≥ 4, prompt ≤ 1,024, prompt + reply ≤ 2,048
    vllm = (p >= 4) & (o >= 4) & (p <= 1024) & (p + o <= 2048)
    sglang = (p >= 2) & (o >= 2)  # sglang.bench_serving without --sharegpt-context-len
    assert vllm.sum() == 52_157 and sglang.sum() == 58_766
    for name, keep in (("sharegpt", vllm), ("sharegpt-sglang", sglang)):
        shape_in, shape_out = DATASETS[name]
        assert shape(p[keep]) == pytest.approx(shape_in, abs=6e-5)
        assert shape(o[keep]) == pytest.approx(shape_out, abs=6e-5)
    assert SHAREGPT_MEAN_TOKENS == pytest.approx((p[vllm].mean(), o[vllm].mean()), abs=0.05)


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_a_shape_averages_one_and_rises(name):
    for bins in DATASETS[name]:
        assert len(bins) == 40 and np.mean(bins) == pytest.approx(1.0, abs=2e-4)
        assert list(bins) == sorted(bins)


def test_prompts_are_skewed_and_replies_less_so():
    """The source's medians: prompts 31 tokens of a 110.6 mean (0.28 ×), replies 288 of 328.3 (0.88 ×)."""
    rng = np.random.default_rng(0)
    prompts = draw(DATASETS["sharegpt"][0], 110.6, 20_000, rng)
    replies = draw(DATASETS["sharegpt"][1], 328.3, 20_000, rng)
    assert prompts.mean() == pytest.approx(110.6, rel=0.03) and replies.mean() == pytest.approx(328.3, rel=0.03)
    assert np.median(prompts) / prompts.mean() == pytest.approx(31 / 110.6, abs=0.03)
    assert np.median(replies) / replies.mean() == pytest.approx(288 / 328.3, abs=0.03)


def test_a_replay_draws_the_datasets_lengths_around_the_stated_means():
    w = Workload(input_len=215, output_len=194, num_prompts=5_000, dataset="sharegpt")
    prompt, out, ready = workload_arrays(w)
    assert prompt.mean() == pytest.approx(215, rel=0.05) and out.mean() == pytest.approx(194, rel=0.05)
    assert prompt.min() >= 1 and prompt.max() <= round(215 * 7.9489) and not ready.any()
    # the random dataset's draws are as they were: the dataset field changes nothing there
    a, b = workload_arrays(Workload(input_len=100, output_len=50, num_prompts=50, range_ratio=0.3)), workload_arrays(
        Workload(input_len=100, output_len=50, num_prompts=50, range_ratio=0.3, dataset="random"))
    assert all((x == y).all() for x, y in zip(a, b, strict=True))


def test_an_unknown_dataset_is_refused_by_name():
    with pytest.raises(ValueError, match="dataset: expected one of random, sharegpt"):
        Workload(input_len=10, output_len=10, num_prompts=1, dataset="sonnet")


def test_sharegpt_runs_are_replayed_with_their_clients_shape(catalog):
    runs, _ = load_runs(catalog)
    by_id = {r.id: r for r in runs}
    assert by_id["gpustack-gptoss20b-h100-vllm-sharegpt"].dataset == "sharegpt"  # vllm bench serve's client
    assert by_id["sglcb-gptoss120b-b200x8-sharegpt-c1"].dataset == "sharegpt-sglang"  # sglang.bench_serving
    assert by_id["sglcb-qwen3-235b-b200x8-in1000-out1000-c1"].dataset == "random"


def test_bench_sharegpt_from_the_cli(capsys):
    code = main(["bench", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--dataset-name", "sharegpt",
                 "--max-concurrency", "8", "--num-prompts", "400", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["completed"] == 400
    # 400 draws around the means 111 / 328: the printed throughputs carry them (total − output = input tokens)
    per_request_out = out["output_throughput"] / out["request_throughput"]
    per_request_in = (out["total_token_throughput"] - out["output_throughput"]) / out["request_throughput"]
    assert per_request_out == pytest.approx(328, rel=0.1) and per_request_in == pytest.approx(111, rel=0.15)


@pytest.mark.parametrize(("args", "flag"), [
    (["--dataset-name", "sonnet"], "--dataset-name"),
    (["--dataset-name", "sharegpt", "--random-input-len", "512"], "--random-input-len"),
    (["--dataset-name", "sharegpt", "--random-output-len", "64"], "--random-output-len"),
    (["--dataset-name", "sharegpt", "--random-range-ratio", "0.5"], "--random-range-ratio"),
])  # fmt: skip
def test_bench_dataset_flags_name_the_flag(capsys, args, flag):
    code = main(["bench", "--num-prompts", "4", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: {flag}:") and err.count("\n") == 1
