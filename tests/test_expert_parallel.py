"""Expert parallelism (calc.expert_parallel, the Scenario's enable_expert_parallel): a step waits for its busiest GPU."""

import math

import pytest
from conftest import scenario

from calc.evaluate import evaluate
from calc.expert_parallel import bytes_factor, expected_max_normal, tokens_factor


def test_the_expected_largest_of_n_normals_has_its_closed_forms():
    """E[max of 2] = 1/√π, E[max of 3] = 3/(2√π) (order statistics of the normal); none for one GPU."""
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-9)
    assert expected_max_normal(3) == pytest.approx(3 / (2 * math.sqrt(math.pi)), abs=1e-9)
    assert [expected_max_normal(n) for n in (4, 8)] == pytest.approx([1.0294, 1.4236], abs=1e-4)


def test_the_busiest_gpus_experts_by_hand():
    """128 experts over 8 GPUs, 64 touched: 16 a GPU, each touched with q = 0.5; μ = 8, σ = √(16 × 0.25) = 2; the
    busiest holds 8 + 1.4236 × 2 = 10.85, 1.356× the mean. Every expert touched: balanced (1). One touched: the GPU
    that holds it reads it whole, at most its 16."""
    assert bytes_factor(128, 8, 64) == pytest.approx((8 + 1.4236 * 2) / 8, abs=1e-4)
    assert bytes_factor(128, 8, 128) == 1.0
    assert bytes_factor(128, 8, 1) <= 16 / (16 * 1 / 128)  # the cap: all its experts over the mean
    # routed tokens: 32 sequences × top-8 = 256 assignments over 8 GPUs: 1 + 1.4236 × √(7 / 256) = 1.235
    assert tokens_factor(8, 256) == pytest.approx(1 + 1.4236 * math.sqrt(7 / 256), abs=1e-4)


def test_imbalance_fades_as_the_batch_grows():
    """More tokens: more experts touched and more assignments, so the busiest GPU nears the mean."""
    touched = [8, 32, 64, 100, 120, 128]
    factors = [bytes_factor(128, 8, t) for t in touched]
    assert factors == sorted(factors, reverse=True) and factors[-1] == 1.0
    tokens = [tokens_factor(8, a) for a in (8, 64, 512, 4096, 32768)]
    assert tokens == sorted(tokens, reverse=True) and tokens[-1] == pytest.approx(1 + 1.4236 * math.sqrt(7 / 32768), abs=1e-4)


def test_a_plan_with_expert_parallelism_is_slower_at_small_batches_and_alike_at_large(catalog):
    """Qwen3-30B-A3B (128 experts, top-8) on four H100s: at 1 in flight the busiest GPU holds several of the 8
    touched experts whole; at 256 in flight nearly all are touched on every GPU."""

    def tpot(c, ep):
        return evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", tensor_parallel_size=4, concurrency=c,
                                 max_num_seqs=256, enable_expert_parallel=ep), catalog).latency.tpot_s  # fmt: skip

    small, large = tpot(1, True) / tpot(1, False), tpot(256, True) / tpot(256, False)
    assert small > large >= 1.0 and large < 1.05


def test_it_changes_nothing_without_routed_experts_or_at_one_gpu(catalog):
    for kw in (dict(model="llama-3.1-8b", tensor_parallel_size=2), dict(model="qwen3-30b-a3b", tensor_parallel_size=1)):
        on = evaluate(scenario(gpu="h100-sxm", enable_expert_parallel=True, **kw), catalog)
        off = evaluate(scenario(gpu="h100-sxm", **kw), catalog)
        assert on.latency.tpot_s == off.latency.tpot_s
        assert any(n.startswith("enable_expert_parallel changes nothing here") for n in on.notes)


def test_published_pairs_with_and_without_expert_parallelism(catalog):
    """GPUStack served the same model, GPU, engine and 1,000 ShareGPT prompts with and without expert parallelism
    (tests/data/benchmarks/gpustack-*.yaml): median TPOT EP / TP 131.62 / 121.96 = 1.079 (Qwen3-235B-FP8, 4 H100),
    149.37 / 144.84 = 1.031 (GLM-4.6-FP8, 8 A100), 154.84 / 143.39 = 1.080 (Qwen3-235B-FP8, 4 A100), 105.2 / 104.28 =
    1.009 (GLM-4.5-Air-FP8, 4 H100, SGLang). The replays put expert parallelism slower too, by less than 10 %."""
    from boundary.bench_check import replay
    from boundary.bench_data import load_runs

    by_id = {r.id: r for r in load_runs(catalog)[0]}
    pairs = {"gpustack-qwen3-235b-h100x4-vllm-fp8-tp4-ep-sharegpt": 131.62 / 121.96,
             "gpustack-glm46-a100-vllm-ep-sharegpt": 149.37 / 144.84,
             "gpustack-qwen3-235b-a100-vllm-fp8-tp4-ep-sharegpt": 154.84 / 143.39,
             "gpustack-glm45-air-h100-sglang-fp8-tp4-ep-sharegpt": 105.2 / 104.28}  # fmt: skip
    for ep_id, measured in pairs.items():
        ep, tp = by_id[ep_id], by_id[ep_id.replace("-ep-", "-")]
        assert ep.scenario.enable_expert_parallel and not tp.scenario.enable_expert_parallel
        assert ep.measured["median_tpot_ms"] / tp.measured["median_tpot_ms"] == pytest.approx(measured, abs=1e-9)

        def tpot(r):
            return replay(r, catalog, report=evaluate(r.scenario, catalog)).bench_summary()["median_tpot_ms"]

        assert 1.0 <= tpot(ep) / tpot(tp) < 1.10 and 1.0 < measured < 1.10


def test_the_serve_commands_carry_the_flag(catalog):
    from calc.search import search
    from calc.search_rows import serve_commands

    for engine, flag in (("vllm", "--enable-expert-parallel"), ("sglang", "--ep-size")):
        s = scenario(model="qwen3-30b-a3b", gpu="h100-sxm", engine=engine, enable_expert_parallel=True,
                     search_gpus="h100-sxm", search_tensor_parallel_size="2", request_rate=2.0)  # fmt: skip
        r = search(s, catalog)
        i = r.cheapest if r.cheapest is not None else 0
        assert any(flag in cmd for _, cmd in serve_commands(r, i)), engine


def test_the_title_names_the_expert_parallel_group(catalog):
    from boundary.view import title

    on = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", tensor_parallel_size=4, enable_expert_parallel=True), catalog)
    dense = evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm", tensor_parallel_size=4, enable_expert_parallel=True),
                     catalog)  # fmt: skip
    assert "(TP=4 EP=4 PP=1," in title(on) and "EP=" not in title(dense)
