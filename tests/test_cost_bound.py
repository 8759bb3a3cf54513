"""No input costs one rerun more than about a second of CPU or 200 MB: the worst known inputs, each timed."""

import json
import time
import tracemalloc

import pytest
from conftest import VLLM_0_11

from boundary.view_bench import benchmark_lines
from calc.custom import encode_custom_model
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.scenario import Scenario

CPU_S, PEAK_BYTES = 1.0, 200e6


def bounded(fn):
    """Run twice: timed (CPU seconds), then traced (peak Python memory; tracing slows a run several-fold)."""
    t = time.process_time()
    out = fn()
    cpu = time.process_time() - t
    tracemalloc.start()
    try:
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cpu < CPU_S and peak < PEAK_BYTES, (cpu, peak)
    return out


def deep_model(layers: int):
    cfg = {"model_type": "llama", "num_hidden_layers": layers, "hidden_size": 512, "num_attention_heads": 8,
           "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 32000, "max_position_embeddings": 4096}  # fmt: skip
    return model_from_hf_config(cfg)


def test_ten_million_layers_are_refused_at_once():
    with pytest.raises(InputError, match="num_hidden_layers"):
        bounded(lambda: deep_model(10**7))


def test_the_deepest_allowed_model_plans_within_the_bound(catalog):
    # 1,024 layers (the cap; the deepest published decoder has 126): the whole Report, every lazy section
    s = Scenario(model="custom", custom_model=encode_custom_model(deep_model(1024)), request_rate=10)
    bounded(lambda: evaluate(s, catalog).to_dict())


def test_a_huge_slo_simulation_is_sampled(catalog):
    # request_rate × sim_window_s requests would be 10⁷ × 3,600: the simulation draws at most 20,000
    s = Scenario(model="llama-3.2-1b", gpu="b200", request_rate=1e7, sim_window_s=3600)
    rows = bounded(lambda: evaluate(s, catalog).simulation)
    assert "sampled" in rows[-1].name


def test_the_largest_benchmark_simulation_is_bounded(catalog):
    from calc import bench

    r = evaluate(Scenario(model="llama-3.2-1b", gpu="h100-sxm", input_len=128, output_len=64), catalog)
    res = bounded(lambda: bench.serve(r, num_prompts=10**9, max_concurrency=64))
    assert res.completed == bench.MAX_SIM_PROMPTS  # capped, whatever was asked


def test_a_benchmark_that_preempts_every_step_is_bounded(catalog):
    # 200 requests of 100,000 output tokens, all running at once on a 1B model: the KV pool runs out and every
    # scheduling decision re-prefills a preempted request. 2.0 s of CPU at the old 40,000-decision cap; 0.6–0.7 s at
    # 15,000 with the lean step_s. Then the Latency tab's CDF percentiles over ~15,000 segments (1.6 s rank by rank,
    # before point masses were searched apart). CPU only: the traced run takes 10 s (its peak, by hand: 6 MB).
    s = Scenario(model="llama-3.2-1b", gpu="b200", input_len=16, output_len=100_000, concurrency=1024)
    t = time.process_time()
    r = evaluate(s, catalog)
    dist = r.benchmark_distribution
    assert time.process_time() - t < CPU_S
    assert r.benchmark.stopped_early and len(dist.itl_s) == len(dist.quantiles)


def test_a_long_link_value_is_refused_quickly():
    from boundary.urlstate import validate_query

    values, warnings = bounded(lambda: validate_query({"custom_model": ["A" * 400_000], "concurrency": ["9" * 5000]}))
    assert "custom_model" not in values and "concurrency" not in values and len(warnings) == 2


def test_a_one_token_budget_is_simulated_within_the_bound(catalog):
    # found by scripts/fuzz.py: 200 prompts of 1,024 tokens under a 1-token budget are 205,000 scheduling steps
    # (9 s of CPU); the simulation stops at its work cap and says so
    s = Scenario(model="aya-23-8b", gpu="a10", max_num_batched_tokens=1, max_num_seqs=1)
    r = evaluate(s, catalog)
    res = bounded(lambda: r.benchmark)
    assert res.stopped_early and 0 < res.completed < r.benchmark_prompts
    assert "work cap" in " ".join(benchmark_lines(r))


def test_a_link_asking_a_million_in_flight_is_simulated_within_the_bound(catalog):
    # `?concurrency=1000000` on the seed scenario: max(200, 10·C) prompts would be 10⁷; the page simulates at most
    # MAX_SIM_PROMPTS, says so in its header, and the pool preempts throughout (0.86 s of CPU at 10,000 prompts)
    from calc import bench

    r = evaluate(Scenario(concurrency=1_000_000), catalog)
    assert r.benchmark_prompts == bench.MAX_SIM_PROMPTS == 5_000
    res = bounded(lambda: r.benchmark)
    assert res.preemptions > 0 and res.completed == 5_000


@pytest.mark.parametrize("kw", [dict(), dict(request_rate=20.0), dict(input_len=4000, output_len=64, request_rate=5.0),
                                dict(conformance_quota=0.9999999), dict(conformance_quota=0.9999999, request_rate=20.0)])
def test_a_search_without_latency_spread_is_within_the_bound(catalog, kw):
    # latency_sigma = 0 makes Φ a step, and the search's capacity first sent every configuration near its quota to
    # the scalar one by one: 0.8–1.1 s of CPU for the default space (found while adding calc.prefill_queue). The
    # array form now takes σ = 0 itself. A quota of 0.9999999 put nearly every configuration within the A&S Φ's
    # 1e-6 of it (0.72 s): those are decided again with calc.numeric.phi_precise, and only ties to 1e-12 go to the
    # scalar.
    from calc.search import search

    bounded(lambda: search(Scenario(latency_sigma=0.0, **kw), catalog))


def test_a_search_at_its_size_cap_is_within_the_bound(catalog):
    # GPUs × 12 (TP, PP) pairs × 4 weight formats × 2 KV × k max_num_seqs × 2 modes, k the most under the cap (24
    # GPUs: 10, 46,080 configurations) on the costliest path (σ = 0 and a quota of 0.9999999): 0.36–0.39 s of CPU and
    # 24 MB at 48,576; twice as many took 0.9 s
    from calc.search import search
    from calc.search_space import MAX_CONFIGS

    unit = len(catalog.gpus) * 12 * 4 * 2 * 2  # one more max_num_seqs value adds this many to the cap's count
    k = MAX_CONFIGS // unit
    s = Scenario(model="llama-3.2-1b", search_gpus="all", search_pipeline_parallel_size="1,2,3",
                 search_dtype="auto,fp8,int8,int4", search_max_num_seqs=",".join(str(i) for i in range(1, k + 1)),
                 latency_sigma=0.0, conformance_quota=0.9999999, request_rate=20.0)  # fmt: skip
    r = bounded(lambda: search(s, catalog))
    assert MAX_CONFIGS - unit < k * unit <= MAX_CONFIGS  # the largest space under the cap
    pairs = sum(tp * pp <= (g.node_gpus or tp * pp) for g in catalog.gpus.values() for tp in (1, 2, 4, 8)
                for pp in (1, 2, 3))  # fmt: skip
    assert r.configs_evaluated == k * pairs * 4 * 2 * 2  # less the (TP, PP) pairs beyond a node (node_gpus)


def test_a_search_over_its_size_cap_is_refused_before_any_work(catalog):
    # the reviewer's space: 946,176 configurations took 10 s of CPU and 510 MB when the cap was 1,000,000
    from calc.search import search

    s = Scenario(search_gpus="all", search_tensor_parallel_size="1,2,4,7,14,28",
                 search_pipeline_parallel_size=",".join(str(i) for i in range(1, 29)), search_dtype="auto,fp8,int8,int4",
                 search_max_num_seqs=",".join(str(i) for i in range(1, 25)))  # fmt: skip
    with pytest.raises(InputError) as e:
        bounded(lambda: search(s, catalog))
    assert e.value.field == "search_pipeline_parallel_size"
    gpus = len(catalog.gpus)
    assert e.value.message.startswith(f"{gpus * 112 * 4 * 2 * 24 * 2:,} configurations = {gpus} search_gpus × 112 "
                                      "(search_tensor_parallel_size, search_pipeline_parallel_size) pairs × 4 "
                                      "search_dtype × 2 search_kv_cache_dtype × 24 search_max_num_seqs × 2 modes "
                                      "(search_disaggregated); at most 50,000")  # fmt: skip


def test_thousands_running_at_once_are_simulated_within_the_bound(catalog):
    # the reviewer's `calc bench … --random-input-len 1 --random-output-len 8000 --max-concurrency 65536
    # --num-prompts 5000` on a 1B model: 5,000 running, the pool preempting every decision, each decision's work
    # growing with them. 0.9 s of CPU at the 15,000-decision cap alone; the request-decision cap stops it at 0.4 s
    from calc import bench

    s = Scenario(model="llama-3.2-1b", gpu="b200", max_num_seqs=65536, max_num_batched_tokens=65536, input_len=1,
                 output_len=8000, concurrency=65536)  # fmt: skip
    r = evaluate(s, catalog)
    t = time.process_time()
    res = bench.serve(r, num_prompts=5000, max_concurrency=65536)
    assert time.process_time() - t < CPU_S
    assert res.stopped_early and 0 < res.completed < 5000


def test_a_link_with_a_million_in_flight_and_no_budget_limit_is_within_the_bound(catalog):
    # the page's Latency tab for the reviewer's link (max_num_seqs and the budget 65,536, 1 → 4,096 tokens, C = 10⁶,
    # 10⁷ req/s): the Latency tab took 1.2–1.4 s of CPU; 0.3 s for the benchmark and its CDF at the request-decision cap
    s = Scenario(model="llama-3.2-1b", gpu="b200", max_num_seqs=65536, max_num_batched_tokens=65536, input_len=1,
                 output_len=4096, concurrency=1_000_000, request_rate=10_000_000)  # fmt: skip
    t = time.process_time()
    r = evaluate(s, catalog)
    dist = r.benchmark_distribution
    assert time.process_time() - t < CPU_S
    assert r.benchmark.stopped_early and len(dist.itl_s) == len(dist.quantiles)


def test_a_replica_check_far_short_of_its_count_stays_within_the_bound(catalog):
    """The check simulates the count's own replica over 3,000 requests, then + 4 replicas over 1,000, and bisects
    + 1 … + 3 only where + 4 meets the quota. One of 3,000 and four of 1,000, tried in turn, took 1.5 s of CPU on a
    slower host (0.46 + 4 × 0.26 s); a count fifty times too small now runs two and stays under the second's bound."""
    import time

    from calc.replica_check import replica_check

    r = evaluate(Scenario(model="llama-3.2-1b", gpu="b200", request_rate=1e5, input_len=1, output_len=8000,
                          max_num_seqs=65536, max_num_batched_tokens=65536, engine_version=VLLM_0_11), catalog)  # fmt: skip
    t = time.process_time()
    rc = replica_check(r, max(1, r.fleet.replicas // 50))
    assert time.process_time() - t < 1.0 and rc.replicas_meeting_quota is None and rc.num_prompts == 3000


@pytest.mark.parametrize("family", [
    {"model_type": "bamba", "attn_layer_indices": [2000] * 160_000 + [0]},
    {"model_type": "lfm2", "full_attn_idxs": [2000] * 160_000 + [0], "conv_L_cache": 3},
    {"model_type": "kimi_linear", "num_hidden_layers": 4096,  # refused for its depth, after reading the list
     "linear_attn_config": {"full_attn_layers": [0] * 150_000, "num_heads": 8, "head_dim": 64}},
])  # fmt: skip
def test_a_config_json_listing_its_layer_indices_is_read_within_the_bound(family):
    # found by hand (2026-12-02): each layer was looked up in the config's list, layers × entries. A 1 MB config.json
    # of 1,024 layers listing 160,000 attention indices took 2.2–2.9 s of CPU; Kimi-Linear's 4,096 layers against
    # 150,000 entries 9 s, before its depth was refused. The list is now read once into a set.
    from calc.loader import parse_config_json

    cfg = {"num_hidden_layers": 1024, "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8,
           "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096, "mamba_n_heads": 8,
           "mamba_d_head": 64, "mamba_d_state": 16, "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 1} | family  # fmt: skip

    def read():
        try:
            return parse_config_json(json.dumps(cfg))
        except InputError as e:
            return e

    out = bounded(read)
    if family["model_type"] == "kimi_linear":
        assert isinstance(out, InputError) and "num_hidden_layers" in str(out)
    else:
        assert out.plan.count("full_attention") == 1, out


def test_the_replica_check_bisects_for_the_fewest_extra_replicas(catalog, monkeypatch):
    """+ 4 first, then a bisection of + 1 … + 3: the same fewest count as trying + 1, + 2, … in turn, in at most
    four simulations. A stand-in share that rises with the replicas (0.5 at 10 replicas, + 0.15 a replica; quota
    0.9): 10 → 0.50, 11 → 0.65, 12 → 0.80, 13 → 0.95 meets: 13, found by 10, 14, 12, 13."""
    from calc import replica_check as rc_mod

    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", request_rate=10.0), catalog)
    tried = []

    def share(report, rate_rps, n):
        replicas = round(10.0 / rate_rps)
        tried.append(replicas)
        return 0.5 + 0.15 * (replicas - 10), 0

    monkeypatch.setattr(rc_mod, "_within_slo", share)
    rc = rc_mod.replica_check(r, 10)
    assert rc.replicas_meeting_quota == 13 and tried == [10, 14, 12, 13]
    tried.clear()
    monkeypatch.setattr(rc_mod, "_within_slo", lambda report, rate_rps, n: (tried.append(round(10.0 / rate_rps)), (0.2, 0))[1])
    assert rc_mod.replica_check(r, 10).replicas_meeting_quota is None and tried == [10, 14]  # far short: two runs
