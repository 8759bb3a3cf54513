"""ShareGPT's request lengths (calc/length_shapes.py): the shapes come from the shipped pool of first-two-message
pairs under each client's filter, a replay draws them, and the benchmark data and the CLI use them."""

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

DATA = Path(__file__).parent / "data" / "sharegpt"


def pool() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prompt, reply, opens with gpt) of every pair in the shipped prefix of ShareGPT_V3_unfiltered_cleaned_split."""
    with (DATA / "sharegpt_v3_first_pairs.csv").open() as f:
        rows = list(csv.DictReader(f))
    return (np.array([int(r["prompt_tokens"]) for r in rows]), np.array([int(r["reply_tokens"]) for r in rows]),
            np.array([r["first_from"] == "gpt" for r in rows]))  # fmt: skip


def filters(p: np.ndarray, o: np.ndarray) -> dict[str, np.ndarray]:
    # vllm/benchmarks/datasets.py is_valid_sequence: both ≥ 4, prompt ≤ 1,024, prompt + reply ≤ 2,048;
    # sglang.bench_serving without --sharegpt-context-len: both ≥ 2
    return {"sharegpt": (p >= 4) & (o >= 4) & (p <= 1024) & (p + o <= 2048), "sharegpt-sglang": (p >= 2) & (o >= 2)}


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Rank correlation (ties ranked by their order: the counts here are large, the ties' effect below 0.01)."""
    ra, rb = np.argsort(np.argsort(a, kind="stable")), np.argsort(np.argsort(b, kind="stable"))
    return float(np.corrcoef(ra, rb)[0, 1])


def shape(x: np.ndarray, mean: float, bins: int = 40) -> list[float]:
    """Equal-count bins of the sorted lengths, each bin's mean over `mean` (the whole pool's)."""
    x = np.sort(x.astype(float))
    edges = np.round(np.linspace(0, len(x), bins + 1)).astype(int)
    return [x[a:b].mean() / mean for a, b in zip(edges[:-1], edges[1:], strict=True)]


def test_the_shapes_are_the_pool_under_each_clients_filter():
    p, o, gpt = pool()
    assert len(p) == 17_400  # the entries with two messages or more among the prefix's 17,671
    keep = filters(p, o)
    assert keep["sharegpt"].sum() == 15_822 and keep["sharegpt-sglang"].sum() == 17_387
    for name, k in keep.items():
        human, first_gpt = DATASETS[name]
        assert first_gpt.weight == pytest.approx(gpt[k].mean(), abs=1e-4) and human.weight + first_gpt.weight == 1
        for part, sel in ((human, k & ~gpt), (first_gpt, k & gpt)):
            assert shape(p[sel], p[k].mean()) == pytest.approx(part.prompt, abs=6e-5)
            assert shape(o[sel], o[k].mean()) == pytest.approx(part.reply, abs=6e-5)
    vllm = keep["sharegpt"]
    assert SHAREGPT_MEAN_TOKENS == pytest.approx((p[vllm].mean(), o[vllm].mean()), abs=0.05)


def test_the_human_part_is_nanoflows_whole_file():
    """The prefix's pairs that open with a human message, against Nanoflow's trace of every such conversation of the
    whole file (LLaMA tokenizer, vLLM's filter: mean 110.6, median 31, so median / mean 0.28)."""
    p, o, gpt = pool()
    k = filters(p, o)["sharegpt"] & ~gpt
    with (DATA / "nanoflow_sharegpt.csv").open() as f:
        rows = list(csv.DictReader(f))
    np_, no = np.array([int(r["ContextTokens"]) for r in rows]), np.array([int(r["GeneratedTokens"]) for r in rows])
    nk = filters(np_, no)["sharegpt"]
    assert nk.sum() == 52_157 and np_[nk].mean() == pytest.approx(110.6, abs=0.05) and np.median(np_[nk]) == 31
    assert np.median(p[k]) / p[k].mean() == pytest.approx(31 / 110.6, abs=0.02)
    assert np.percentile(p[k], 90) / p[k].mean() == pytest.approx(np.percentile(np_[nk], 90) / 110.6, rel=0.1)


def test_the_pool_gives_the_means_published_runs_print():
    """vllm bench serve's 1,000 ShareGPT prompts print 214.5–219.2 tokens a request in GPUStack's runs
    (tests/data/benchmarks/gpustack-*.yaml, e.g. Qwen3-14B 217,393 tokens): inside the 5–95 % range of the means of
    1,000 pairs drawn from the pool. The human-first trace alone (mean 110.6) could not print them."""
    p, o, _ = pool()
    v = p[filters(p, o)["sharegpt"]]
    rng = np.random.default_rng(0)
    means = [rng.choice(v, 1000, replace=False).mean() for _ in range(500)]
    lo, hi = np.percentile(means, [5, 95])
    assert lo < 214.5 and 219.2 < hi and hi - lo < 30


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_a_dataset_averages_one_and_its_shapes_rise(name):
    parts = DATASETS[name]
    assert sum(part.weight for part in parts) == 1
    for attr in ("prompt", "reply"):
        assert sum(part.weight * np.mean(getattr(part, attr)) for part in parts) == pytest.approx(1.0, abs=2e-4)
        for part in parts:
            bins = getattr(part, attr)
            assert len(bins) == 40 and list(bins) == sorted(bins)


def test_long_prompts_come_with_short_replies():
    """A third of the pairs open with an answer (a long prompt) and end with the human's next message (a short
    reply): the pool's Spearman −0.41; the draws keep it, and the median prompt is 108 of a 221.1 mean."""
    rng = np.random.default_rng(0)
    prompts, replies = draw(DATASETS["sharegpt"], 221.1, 198.9, 20_000, rng)
    assert prompts.mean() == pytest.approx(221.1, rel=0.03) and replies.mean() == pytest.approx(198.9, rel=0.03)
    assert np.median(prompts) / prompts.mean() == pytest.approx(108 / 221.1, abs=0.05)
    assert spearman(prompts, replies) < -0.3
    p, o, _ = pool()
    k = filters(p, o)["sharegpt"]
    assert spearman(p[k], o[k]) == pytest.approx(-0.41, abs=0.01)
    assert prompts.max() <= 1024  # the client's cap, at the pool's own mean


def test_a_replay_draws_the_datasets_lengths_around_the_stated_means():
    w = Workload(input_len=215, output_len=194, num_prompts=5_000, dataset="sharegpt")
    prompt, out, ready = workload_arrays(w)
    assert prompt.mean() == pytest.approx(215, rel=0.05) and out.mean() == pytest.approx(194, rel=0.05)
    top = max(max(part.prompt) for part in DATASETS["sharegpt"])
    assert prompt.min() >= 1 and prompt.max() <= round(215 * top) and not ready.any()
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
    # 400 draws around the means 221.1 / 198.9: the printed throughputs carry them (total − output = input tokens)
    per_request_out = out["output_throughput"] / out["request_throughput"]
    per_request_in = (out["total_token_throughput"] - out["output_throughput"]) / out["request_throughput"]
    assert per_request_out == pytest.approx(198.9, rel=0.1) and per_request_in == pytest.approx(221.1, rel=0.1)


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
