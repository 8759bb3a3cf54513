"""The vectorised search against the scalar evaluate(): each configuration, opened as its Scenario, must show the
same pool, latency, replicas and cost. The expected numbers are evaluate()'s on the same points — that is the test."""

import math

import numpy as np
import pytest
from conftest import VLLM_0_11

from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.search import search
from calc.search_rows import row, scenario_of

# dense, MoE, MLA, sliding-window, Mamba hybrids, a pure state model, a multimodal model, per-kind query heads
MODELS = ["llama-3.1-8b", "qwen2.5-7b-instruct", "qwen3-30b-a3b", "mixtral-8x7b-v0.1", "deepseek-v2-lite",
          "gemma-3-27b", "gemma-2-9b", "gpt-oss-20b", "nemotron-h-8b", "jamba-1.5-mini", "falcon-mamba-7b",
          "qwen2.5-vl-7b-instruct", "laguna-xs.2"]  # fmt: skip
REL = 1e-9


def _pick(rng, options, k) -> str:
    return ",".join(str(x) for x in rng.choice(options, size=k, replace=False))


def random_scenario(rng, model: str, catalog) -> Scenario:
    gpus = sorted(catalog.gpus)
    return Scenario(
        model=model, gpu=str(rng.choice(gpus)), engine=str(rng.choice(["vllm", "sglang"])),
        input_len=int(rng.integers(64, 4000)), output_len=int(rng.integers(1, 1000)),
        max_model_len=min(int(rng.choice([8192, 32768])), catalog.models[model].max_position_embeddings),  # vLLM starts
        request_rate=float(rng.uniform(0.5, 40)) if rng.random() < 0.7 else None,
        slo_ttft_s=float(rng.uniform(0.3, 3)), slo_tpot_s=float(rng.uniform(0.02, 0.15)),
        latency_sigma=float(rng.choice([0.0, 0.2, 0.35, 0.6])), conformance_quota=float(rng.uniform(0.5, 0.99)),
        gpu_hour_price=float(rng.uniform(0.5, 5)) if rng.random() < 0.3 else None,
        memory_gib=float(rng.uniform(20, 200)) if rng.random() < 0.2 else None,
        kv_transfer_gb_per_s=float(rng.uniform(5, 400)) if rng.random() < 0.3 else None,
        memory_bandwidth_gb_per_s=float(rng.uniform(500, 5000)) if rng.random() < 0.15 else None,
        peak_tflop_per_s=float(rng.uniform(100, 2000)) if rng.random() < 0.15 else None,
        scaleup_link_gb_per_s=float(rng.uniform(20, 900)) if rng.random() < 0.15 else None,
        mbu=float(rng.uniform(0.5, 0.95)) if rng.random() < 0.15 else None,
        mfu=float(rng.uniform(0.3, 0.8)) if rng.random() < 0.15 else None,
        enforce_eager=bool(rng.random() < 0.15), estimate_cudagraphs=bool(rng.random() < 0.85),
        enable_expert_parallel=bool(rng.random() < 0.3),
        block_size=int(rng.choice([16, 16, 32, 64])), queue_s=float(rng.choice([0.0, 0.0, 0.05])),
        disable_hybrid_kv_cache_manager=bool(rng.random() < 0.15),
        mamba_ssm_cache_dtype=str(rng.choice(["auto", "auto", "float32", "bfloat16"])),
        weights_memory_bytes=float(rng.uniform(5e9, 60e9)) if rng.random() < 0.08 else None,
        activation_memory_bytes=float(rng.uniform(1e8, 3e9)) if rng.random() < 0.08 else None,
        kv_cache_memory_bytes=float(rng.uniform(1e9, 60e9)) if rng.random() < 0.08 else None,
        frontend_overhead_s=float(rng.uniform(0, 0.05)) if rng.random() < 0.15 else None,
        search_gpus=_pick(rng, gpus, 5), search_tensor_parallel_size=_pick(rng, [1, 2, 4, 8], 3),
        search_pipeline_parallel_size=_pick(rng, [1, 2, 3, 4], 2), search_dtype=_pick(rng, ["auto", "bf16", "fp8", "int8", "int4"], 3),
        search_kv_cache_dtype=_pick(rng, ["auto", "fp8"], int(rng.integers(1, 3))),
        search_max_num_seqs=_pick(rng, [1, 4, 16, 48, 128, 256, 1024], 3),
        search_max_num_batched_tokens=_pick(rng, [512, 2048, 8192, 16384], 2),
        search_gpu_memory_utilization=_pick(rng, [0.5, 0.8, 0.9, 0.95], 2),
        endpoint_type=str(rng.choice(["openai", "openai-chat"])),  # the chat endpoint's one-at-a-time front end
    )  # fmt: skip


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == pytest.approx(b, rel=REL, abs=0)


@pytest.mark.parametrize("model", MODELS)
def test_search_equals_evaluate_on_random_configurations(catalog, model):
    rng = np.random.default_rng(MODELS.index(model))
    points = deployed = 0
    for _ in range(2):
        s = random_scenario(rng, model, catalog)
        r = search(s, catalog)
        # every configuration that a replica can serve, and a sample of the rest
        served = np.flatnonzero(r.gpus > 0)
        k = min(8, served.size)
        picks = np.concatenate([rng.choice(served, size=k, replace=False),
                                rng.choice(r.configs_evaluated, size=12 - k, replace=False)])  # fmt: skip
        for i in picks:
            d, rep = row(r, int(i)), evaluate(scenario_of(r, int(i)), catalog)
            m, lat, fl = rep.memory, rep.latency, rep.fleet
            where = f"{model} config {i}: {scenario_of(r, int(i)).changed()}"
            points += 1
            assert d["num_gpu_blocks"] == m.num_gpu_blocks, where
            assert close(d["max_concurrency"], m.max_concurrency), where
            assert d["max_concurrency_at_length"] == rep.fit.max_concurrency_at_length, where
            assert close(d["ttft_s"], lat.ttft_s) and close(d["tpot_s"], lat.tpot_s), where
            if d["gpus"] is None:  # no deployment: the Report has no replica count either
                assert fl.replicas is None, where
                continue
            assert d["replicas"] == fl.replicas, where
            assert d["prefill_instances"] == fl.prefill_instances and d["decode_instances"] == fl.decode_instances
            assert close(d["cost_per_million_output_tokens"], fl.cost_per_million_output_tokens), where
            assert d["currency"] == fl.currency, where
            assert close(d["capacity_rps_per_replica"], fl.capacity.rps), where
            assert close(d["conformance"], rep.conformance.conformance), where
            deployed += 1
    assert points == 2 * 12 and deployed >= 4


def test_two_hundred_points_at_least():
    assert len(MODELS) * 2 * (8 + 4) >= 200


def test_no_rate_costs_one_replica_at_its_own_throughput(catalog):
    s = Scenario(model="llama-3.1-8b", search_gpus="h100-sxm,l40s", search_max_num_seqs="64")
    r = search(s, catalog)
    i = r.cheapest
    rep = evaluate(scenario_of(r, i), catalog)
    assert row(r, i)["replicas"] is None and rep.fleet.replicas is None
    assert math.isclose(row(r, i)["cost_per_million_output_tokens"], rep.fleet.cost_per_million_output_tokens, rel_tol=REL)


def sized_as_evaluate(catalog, s: Scenario, seed: int, k: int = 24) -> list:
    """The Capacity of k configurations that the search deploys, each checked against evaluate() of it."""
    r = search(s, catalog)
    caps = []
    for i in np.random.default_rng(seed).choice(np.flatnonzero(r.gpus > 0), size=k, replace=False):
        fl = evaluate(scenario_of(r, int(i)), catalog).fleet
        d = row(r, int(i))
        assert close(d["capacity_rps_per_replica"], fl.capacity.rps) and d["replicas"] == fl.replicas
        assert d["concurrency"] == fl.capacity.concurrency
        caps.append(fl.capacity)
    return caps


def test_where_the_slots_bind_the_search_sizes_as_evaluate(catalog):
    """Few slots (max_num_seqs 1–8) at a request rate: the capacity is the wait for a free slot's (Erlang C), found
    by the search's bisection over arrays and by calc.replicas.capacity's over scalars; they must agree."""
    s = Scenario(model="llama-3.1-8b", request_rate=20.0, search_max_num_seqs="1,2,4,8",
                 search_gpus="h100-sxm,l40s,rtx-4090,a100-80gb-sxm")  # fmt: skip
    assert sum(c.limited_by == "slots" for c in sized_as_evaluate(catalog, s, 0)) >= 12


def test_where_prompts_queue_for_prefill_the_search_sizes_as_evaluate(catalog):
    """Long prompts and short outputs at a request rate: the capacity counts prompts queueing behind each other's
    prefill under Poisson arrivals (calc.prefill_queue), over arrays in the search and over scalars in
    calc.replicas.capacity; they must agree, and the queue must be what lowers the capacity for most."""
    s = Scenario(model="llama-3.1-8b", input_len=6000, output_len=64, request_rate=10.0, slo_ttft_s=2.0,
                 search_gpus="h100-sxm,l40s,rtx-5090,a100-80gb-sxm", search_max_num_seqs="16,64,256")  # fmt: skip
    # the sample exercises the queue (fp8 on the A100 is refused since it has no kernel there: 11 of 24 now)
    assert sum(c.prefill_load > 0.2 for c in sized_as_evaluate(catalog, s, 1)) >= 10


def test_where_the_cuda_graphs_bind_the_search_sizes_as_evaluate(catalog):
    """Short requests, many slots and a loose TPOT SLO: past vLLM's 512-token CUDA graphs more in flight serve fewer
    requests a second, so the capacity is the rate at the largest count whose steps keep their graphs where that is
    higher (calc.latency.graphed_counts), over arrays in the search and over scalars in calc.replicas.capacity; they
    must agree, and the graphs must be what bounds several."""
    s = Scenario(model="llama-3.1-8b", input_len=128, output_len=128, request_rate=50.0, slo_tpot_s=0.1,
                 search_gpus="h100-sxm,h200,b200", search_max_num_seqs="1024,4096",
                 search_max_num_batched_tokens="4096,8192", engine_version=VLLM_0_11)  # fmt: skip
    assert sum(c.limited_by == "graphs" for c in sized_as_evaluate(catalog, s, 2)) >= 3


def test_a_graph_size_must_serve_materially_more_in_both(catalog, monkeypatch):
    """Fewer in flight at a CUDA-graph size replace the capacity's count only where they serve GRAPH_GAIN (0.1 %)
    more, in calc.replicas.capacity and the search alike, so a near-tie cannot be broken one way by evaluate() and
    the other by the search's array twin. With a margin no gain reaches (×2), neither picks a graph size and the two
    still agree; at the shipped margin the same configurations are graph-bound (the test above)."""
    import calc.replicas
    import calc.search_fleet

    assert calc.replicas.GRAPH_GAIN == calc.search_fleet.GRAPH_GAIN == 1e-3
    monkeypatch.setattr(calc.replicas, "GRAPH_GAIN", 1.0)
    monkeypatch.setattr(calc.search_fleet, "GRAPH_GAIN", 1.0)
    s = Scenario(model="llama-3.1-8b", input_len=128, output_len=128, request_rate=50.0, slo_tpot_s=0.1,
                 search_gpus="h100-sxm,h200,b200", search_max_num_seqs="1024,4096",
                 search_max_num_batched_tokens="4096,8192", engine_version=VLLM_0_11)  # fmt: skip
    assert not any(c.limited_by == "graphs" for c in sized_as_evaluate(catalog, s, 2))


def test_a_skewed_routing_reaches_the_search_too(catalog):
    """The routing exponents and the fused-MoE compute share (engine_specs) enter the vectorised step as they enter
    evaluate()'s: an MoE model with x = 0.8, y = 0.5 and a share of 0.5 in both engines, the same TTFT, TPOT and
    replicas at every searched point that deploys."""
    from dataclasses import replace

    engines = {n: e.model_copy(update={"routing_exponent": 0.8, "prefill_routing_exponent": 0.5, "moe_compute_share": 0.5})
               for n, e in catalog.engines.items()}  # fmt: skip
    skewed = replace(catalog, engines=engines)
    rng = np.random.default_rng(11)
    s = random_scenario(rng, "qwen3-30b-a3b", skewed)
    r = search(s, skewed)
    served = np.flatnonzero(r.gpus > 0)
    assert served.size >= 4
    moved = 0
    for i in served[:8]:
        d = row(r, int(i))
        rep = evaluate(scenario_of(r, int(i)), skewed)
        assert close(d["tpot_s"], rep.latency.tpot_s) and d["replicas"] == rep.fleet.replicas
        assert close(d["ttft_s"], rep.latency.ttft_s)
        moved += rep.latency.tpot_s != evaluate(scenario_of(r, int(i)), catalog).latency.tpot_s
    assert moved >= 1  # the step moved somewhere


def test_a_bridged_pair_reaches_the_search_too(catalog):
    """H100 PCIe's NVLink bridge joins two cards: the search's TP 4 and 8 all-reduce over PCIe, as evaluate()'s do;
    the same TTFT at every TP (prefill of 8,000 tokens, where the all-reduces' bytes count)."""
    s = Scenario(model="llama-3.1-70b", gpu="h100-pcie", input_len=8000, max_model_len=16384, request_rate=2.0, slo_ttft_s=10.0,
                 search_gpus="h100-pcie,l40s", search_tensor_parallel_size="1,2,4,8", search_pipeline_parallel_size="1",
                 search_dtype="bf16,fp8", search_kv_cache_dtype="auto", search_max_num_seqs="64")  # fmt: skip
    r = search(s, catalog)
    seen = set()
    for i in np.flatnonzero(r.gpus > 0):
        sc = scenario_of(r, int(i))
        rep = evaluate(sc, catalog)
        assert close(row(r, int(i))["ttft_s"], rep.latency.ttft_s), sc.changed()
        seen.add((sc.gpu, sc.tensor_parallel_size))
    assert {("h100-pcie", 4), ("h100-pcie", 8)} <= seen


def served_as_evaluated(r, catalog):
    """Each configuration of search r that serves, opened as its Scenario, after checking that its TTFT and TPOT are
    evaluate()'s: (scenario, report) pairs."""
    for i in np.flatnonzero(r.gpus > 0):
        sc = scenario_of(r, int(i))
        rep, d = evaluate(sc, catalog), row(r, int(i))
        assert close(d["ttft_s"], rep.latency.ttft_s) and close(d["tpot_s"], rep.latency.tpot_s), sc.changed()
        yield sc, rep


def test_fp8_experts_reach_the_search_too(catalog):
    """The FP8 fused-MoE share (engine_specs' fp8_moe_compute_share) applies per GPU and precision: Qwen3-30B-A3B in
    fp8 on an H100 (FP8 tensor cores) takes it, bf16 not (nor an A100, where fp8 is refused); the search's TTFT and TPOT
    equal evaluate()'s at every configuration served, with 4,000-token prompts whose chunks make the experts' FLOPs
    bind."""
    s = Scenario(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=4000, output_len=200, request_rate=2.0,
                 slo_ttft_s=10.0, search_gpus="h100-sxm,a100-80gb-sxm", search_tensor_parallel_size="1,2",
                 search_pipeline_parallel_size="1", search_dtype="bf16,fp8", search_kv_cache_dtype="auto",
                 search_max_num_seqs="64")  # fmt: skip
    seen = {(sc.gpu, sc.dtype) for sc, _ in served_as_evaluated(search(s, catalog), catalog)}
    assert {("h100-sxm", "fp8"), ("h100-sxm", "bf16"), ("a100-80gb-sxm", "bf16")} <= seen


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_where_the_api_server_binds_the_search_sizes_as_evaluate(catalog, engine):
    """Short chat requests and a loose TTFT SLO: at the capacity more requests are in flight than the API server
    renders in their own time (b · busy > E2E(b)), so fewer are in the engine (calc.front_end.in_engine, a root
    found over arrays in the search and over scalars in evaluate()); TTFT, TPOT, capacity and replicas must agree,
    and most operating points must be bound."""
    s = Scenario(model="qwen3-8b", engine=engine, endpoint_type="openai-chat", input_len=128, output_len=16,
                 request_rate=100.0, slo_ttft_s=3.0, slo_tpot_s=0.1, search_gpus="h100-sxm,l40s,a100-80gb-sxm",
                 search_max_num_seqs="256,1024", search_kv_cache_dtype="auto")  # fmt: skip
    r = search(s, catalog)
    bound = 0
    for i in np.flatnonzero(r.gpus > 0):
        sc, d = scenario_of(r, int(i)), row(r, int(i))
        rep = evaluate(sc, catalog)
        assert close(d["ttft_s"], rep.latency.ttft_s) and close(d["tpot_s"], rep.latency.tpot_s), sc.changed()
        assert d["replicas"] == rep.fleet.replicas and close(d["capacity_rps_per_replica"], rep.fleet.capacity.rps)
        bound += rep.latency.decode_batch < min(sc.concurrency, sc.max_num_seqs)
    assert bound >= 4


def test_fp8_experts_kernel_time_on_cdna3_reaches_the_search_too(catalog):
    """SGLang's FP8 experts' kernel time on CDNA3 (rocm_fp8_moe_layer_s, history (22)) per GPU and precision: Qwen3-
    30B-A3B in fp8 on an MI300X carries it, bf16 there and fp8 on an H100 not; the search's TTFT and TPOT equal
    evaluate()'s at every configuration served, at one request (its idle launch too) and at 16."""
    for rate, c in ((None, 1), (1.0, 16)):
        s = Scenario(model="qwen3-30b-a3b", gpu="mi300x", engine="sglang", input_len=1000, output_len=200,
                     concurrency=c, request_rate=rate, search_gpus="mi300x,h100-sxm", search_tensor_parallel_size="1,2",
                     search_pipeline_parallel_size="1", search_dtype="bf16,fp8", search_kv_cache_dtype="auto",
                     search_max_num_seqs="64")  # fmt: skip
        carried = {(sc.gpu, sc.dtype) for sc, rep in served_as_evaluated(search(s, catalog), catalog)
                   if rep.latency.step.fp8_moe_s}  # fmt: skip
        assert carried == {("mi300x", "fp8")}


def test_an_sglang_hybrid_runs_its_state_slots_in_the_search_as_in_the_plan(catalog):
    """Nemotron-H-8B under SGLang 0.5.14 at a small --mem-fraction-static: its state slots // 5 bind below every
    max_num_seqs tried above them, and each configuration, opened as its Scenario, shows what the search showed."""
    s = Scenario(model="nemotron-h-8b", gpu="l40s", engine="sglang", engine_version="0.5.14", request_rate=2.0,
                 search_gpus="l4,l40s,h100-sxm", search_tensor_parallel_size="1,2", search_max_num_seqs="16,64,256",
                 search_gpu_memory_utilization="0.5,0.9", search_dtype="bf16", search_kv_cache_dtype="auto")  # fmt: skip
    r = search(s, catalog)
    capped = 0
    for i in range(r.configs_evaluated):
        d, rep = row(r, i), evaluate(scenario_of(r, i), catalog)
        cap = rep.memory.state_slots // 5
        if not cap:  # no room for the weights, or for one running request
            continue
        assert d["max_concurrency_at_length"] == rep.fit.max_concurrency_at_length <= max(cap, 1)
        assert close(d["ttft_s"], rep.latency.ttft_s) and close(d["tpot_s"], rep.latency.tpot_s)
        capped += d["max_num_seqs"] > cap
    assert capped >= 4


def test_a_fraction_sglang_would_run_out_of_memory_at_is_ruled_out_as_the_plan_warns(catalog):
    """Under SGLang the activation peak and CUDA graphs live outside --mem-fraction-static: a fraction that leaves
    them no room is ruled out of the search (the plan's warning, calc.evaluate.sglang_rest_short_bytes), and only
    those."""
    from calc.evaluate import sglang_rest_short_bytes

    s = Scenario(model="llama-3.1-8b", gpu="l4", engine="sglang", request_rate=1.0, search_gpus="l4,h100-sxm",
                 search_tensor_parallel_size="1,2", search_gpu_memory_utilization="0.8,0.95,0.98",
                 search_max_num_batched_tokens="2048,16384", search_max_num_seqs="256", search_dtype="bf16",
                 search_kv_cache_dtype="auto")  # fmt: skip
    r = search(s, catalog)
    short = [i for i in range(r.configs_evaluated) if r.why[i] == 12]
    for i in range(r.configs_evaluated):
        rep = evaluate(scenario_of(r, i), catalog)
        if r.why[i] in (0, 4, 12):
            assert (r.why[i] == 12) == (sglang_rest_short_bytes(rep.scenario, rep.memory) > 0), i
    assert len(short) >= 4 and r.cheapest not in short and not row(r, short[0])["fits"]
    assert "SGLang runs out of memory" in row(r, short[0])["why_not"]


@pytest.mark.parametrize("model,caching", [("llama-3.1-8b", False), ("deepseek-v2-lite", False),
                                           ("qwen3-next-80b-a3b", True), ("nemotron-h-8b", False)])  # fmt: skip
def test_a_shared_prompt_reaches_the_search_as_the_plan(catalog, model, caching):
    """A shared system prompt found in the prefix cache spares its tokens' prefill in both (calc.prefix_hit): per
    configuration its block size sets the hit, and a vLLM hybrid without enable_prefix_caching reuses nothing."""
    rng = np.random.default_rng(7)
    base = random_scenario(rng, model, catalog)
    s = base.model_copy(update={"input_len": 3000, "shared_prefix_len": 2000, "enable_prefix_caching": caching,
                                "engine": "vllm", "max_model_len": 8192, "slo_ttft_s": 3.0, "slo_tpot_s": 0.15,
                                "conformance_quota": 0.9, "request_rate": 2.0, "search_kv_cache_dtype": "auto,fp8"})  # fmt: skip
    r = search(s, catalog)
    served = np.flatnonzero(r.gpus > 0)
    assert served.size
    for i in rng.choice(served, size=min(6, served.size), replace=False):
        d, rep = row(r, int(i)), evaluate(scenario_of(r, int(i)), catalog)
        where = f"{model} config {i}: {scenario_of(r, int(i)).changed()}"
        assert close(d["ttft_s"], rep.latency.ttft_s) and close(d["tpot_s"], rep.latency.tpot_s), where
        assert d["replicas"] == rep.fleet.replicas and close(d["capacity_rps_per_replica"], rep.fleet.capacity.rps), where
        hybrid_without = model == "nemotron-h-8b" and not caching
        assert (rep.latency.prefix_hit_tokens == 0) == hybrid_without, where
