"""Data-parallel attention (Scenario.data_parallel_size, docs/data-parallel.md): D ranks of T GPUs, each with its own
pool and scheduler; a MoE model's routed experts span all D · T GPUs."""

import math
import statistics
from pathlib import Path

import pytest
from conftest import scenario

from boundary.log_fields import log_scenario_fields
from boundary.vllm_log import parse_log
from calc import bench
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.search import search
from calc.units import GiB
from calc.weights import weight_format, weights_bytes_per_stage

LOGS = Path(__file__).parent / "data" / "vllm_logs"


def test_deepseek_v3_dp8_against_tp8_by_hand(catalog):
    """DeepSeek-V3 on eight H200s, TP 8 against DP 8 × TP 1 with expert parallelism. From its config.json: 256 routed
    experts in 61 − 3 = 58 MoE layers, each 3 matrices of 7,168 × 2,048, so 256 · 58 · 3 · 7,168 · 2,048 =
    653.9 B routed parameters of the 671 B; the other ~17 B (attention, dense layers, shared experts, embeddings) are
    copied on every rank at DP 8 and split eight ways at TP 8."""
    m = catalog.models["deepseek-v3"]
    p = m.params
    assert p.experts == 256 * 58 * 3 * 7168 * 2048
    f = weight_format(m, "auto")
    tp8 = weights_bytes_per_stage(m, p, f, tp=8, pp=1)[0]
    dp8 = weights_bytes_per_stage(m, p, f, tp=1, pp=1, dp=8)[0]
    experts = p.experts * f.expert_bytes
    whole = weights_bytes_per_stage(m, p, f, tp=1, pp=1)[0]  # one GPU holding everything
    rest = whole - experts - p.norms * 2.0  # norms are whole on every GPU either way
    assert dp8 - tp8 == pytest.approx(rest * (1 - 1 / 8), rel=1e-9)  # the experts' 1/8 a GPU is the same
    assert 14 * GiB < dp8 - tp8 < 17 * GiB  # 7/8 of ~17 B parameters, fp8 with bf16 embeddings
    t8 = evaluate(scenario(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, max_model_len=16384), catalog)
    d8 = evaluate(scenario(model="deepseek-v3", gpu="h200", data_parallel_size=8, enable_expert_parallel=True,
                           max_model_len=16384), catalog)  # fmt: skip
    # MLA's latent is whole on every GPU at TP 8; at DP 8 each GPU holds only its own rank's requests
    assert d8.memory.kv_bytes_per_token_per_gpu == t8.memory.kv_bytes_per_token_per_gpu
    assert d8.memory.kv_cache_memory_bytes == pytest.approx(t8.memory.kv_cache_memory_bytes - (dp8 - tp8)
                                                            - (d8.memory.non_torch_bytes - t8.memory.non_torch_bytes)
                                                            + (t8.memory.cudagraph_bytes - d8.memory.cudagraph_bytes)
                                                            - (d8.memory.activation_bytes - t8.memory.activation_bytes),
                                                            rel=1e-9)  # fmt: skip
    server_tokens = 8 * d8.memory.kv_cache_tokens
    assert server_tokens > 4 * t8.memory.kv_cache_tokens  # the several-fold capacity DP attention is used for
    assert d8.scenario.gpus_per_replica == t8.scenario.gpus_per_replica == 8


def test_published_qwen3_235b_dp2_tp8_ep_weights_per_device(catalog):
    """vllm-ascend#4661: Qwen3-235B-A22B (bf16) at --data-parallel-size 2 --tensor-parallel-size 8
    --enable-expert-parallel: 'Loading model weights took 28.7522 GB' on each device ('Local/global number of
    experts: 8/128'). The routed experts over all 16 devices, the rest over the rank's 8, gives it within 3 %; the
    experts over the TP group alone would be twice that."""
    text = (LOGS / "vllm-ascend-4661-qwen3-235b-dp2-tp8-ep.log").read_text()
    assert "Loading model weights took 28.7522 GB" in text and "Local/global number of experts: 8/128" in text
    m = catalog.models["qwen3-235b-a22b"]
    f = weight_format(m, "auto")
    per_device = weights_bytes_per_stage(m, m.params, f, tp=8, pp=1, dp=2)[0] / GiB
    assert per_device == pytest.approx(28.7522, rel=0.03)
    assert weights_bytes_per_stage(m, m.params, f, tp=8, pp=1)[0] / GiB > 50


def test_a_dense_models_ranks_each_hold_the_whole_model(catalog):
    """kuberay#4366: Qwen2.5-0.5B at --data-parallel-size 2 loads 'Model loading took 0.9271 GiB' on both ranks and
    sizes a 10.74 GiB pool on each: a dense model is copied whole. The log's own settings are read back."""
    log = parse_log((LOGS / "kuberay-4366-qwen2.5-0.5b-dp2-t4.log").read_text().split("\n\n", 1)[1])
    fields, _ = log_scenario_fields(log)
    assert fields["data_parallel_size"] == 2 and fields["max_num_batched_tokens"] == 2048
    loads = [w.value for w in log.get("weights_gib")] if log.get("weights_gib") else []
    assert loads == [0.9271, 0.9271]
    one, two = (evaluate(scenario(model="qwen2.5-7b-instruct", data_parallel_size=d), catalog).memory for d in (1, 2))
    assert two.weights_bytes_per_gpu == one.weights_bytes_per_gpu
    assert two.num_gpu_blocks == one.num_gpu_blocks  # ranks that never meet hold no NCCL buffers for each other


def test_dense_ranks_are_replicas_behind_one_server(catalog):
    """Property: with no front-end coupling (the scenario's own front-end time), D ranks of a dense model serving C
    requests are D copies of one serving C / D: the same latencies, D times the throughput and capacity."""
    base = dict(frontend_overhead_s=0.02, request_rate=10.0, engine_version="0.11.0")
    one = evaluate(scenario(concurrency=16, **base), catalog)
    four = evaluate(scenario(concurrency=64, data_parallel_size=4, **base), catalog)
    assert four.latency.tpot_s == pytest.approx(one.latency.tpot_s, rel=1e-12)
    assert four.latency.ttft_s == pytest.approx(one.latency.ttft_s, rel=1e-12)
    assert four.latency.requests_per_s == pytest.approx(4 * one.latency.requests_per_s, rel=1e-12)
    assert four.fit.max_concurrency_at_length == 4 * one.fit.max_concurrency_at_length
    assert four.fleet.capacity.rps == pytest.approx(4 * one.fleet.capacity.rps, rel=1e-12)
    assert four.fleet.capacity.slots == 4 * one.fleet.capacity.slots
    assert four.scenario.gpus_per_replica == 4
    assert four.fleet.gpus == 4 * math.ceil(10.0 / four.fleet.capacity.rps)
    b1 = bench.serve(one, num_prompts=200, max_concurrency=16).bench_summary()
    b4 = bench.serve(four, num_prompts=800, max_concurrency=64).bench_summary()
    assert b4["median_tpot_ms"] == pytest.approx(b1["median_tpot_ms"], rel=1e-12)
    assert b4["request_throughput"] == pytest.approx(4 * b1["request_throughput"], rel=1e-12)
    assert b4["completed"] == 800 and b4["total_output_tokens"] == 4 * b1["total_output_tokens"]


def test_fewer_clients_than_ranks_keep_only_theirs_busy(catalog):
    """One client against four ranks: one rank works, so the throughput is one rank's, not four."""
    kw = dict(frontend_overhead_s=0.02)
    one = evaluate(scenario(concurrency=1, **kw), catalog)
    four = evaluate(scenario(concurrency=1, data_parallel_size=4, **kw), catalog)
    assert four.latency.requests_per_s == pytest.approx(one.latency.requests_per_s, rel=1e-12)
    r1 = bench.serve(one, num_prompts=10, max_concurrency=1).bench_summary()
    r4 = bench.serve(four, num_prompts=10, max_concurrency=1).bench_summary()
    assert r4["request_throughput"] == pytest.approx(r1["request_throughput"], rel=1e-12)


def test_moe_ranks_meet_in_every_moe_layer(catalog):
    """Property: a MoE layer reads its experts once for all D ranks' tokens, so at DP 8 × TP 1 a rank's step costs
    more than one TP-1 server's at the same batch (the other ranks' tokens touch more experts, and they are gathered
    and returned), and the expert bytes a GPU reads fall with D at a fixed server batch."""
    kw = dict(model="qwen3-30b-a3b", gpu="h100-sxm", max_model_len=8192)
    alone = evaluate(scenario(concurrency=8, **kw), catalog).latency.step
    ranks = evaluate(scenario(concurrency=64, data_parallel_size=8, **kw), catalog).latency.step
    d_alone, d_ranks = alone.terms(0, 0, 8, 8 * 1100), ranks.terms(0, 0, 8, 8 * 1100)
    assert d_ranks.allreduce_s > 0 == d_alone.allreduce_s
    assert ranks.experts_touched(8) > alone.experts_touched(8)
    tp8 = evaluate(scenario(concurrency=64, tensor_parallel_size=8, **kw), catalog).latency.step
    # the same 64 tokens a MoE layer: the same experts touched, and 1/8 of each GPU's share either way
    assert ranks.experts_touched(8) == pytest.approx(tp8.experts_touched(64), rel=1e-12)
    assert d_ranks.experts_s == pytest.approx(tp8.terms(0, 0, 64, 64 * 1100).experts_s, rel=0.35)


def test_refusals_and_the_search(catalog):
    with pytest.raises(InputError) as e:
        evaluate(scenario(data_parallel_size=2, disaggregated=True), catalog)
    assert e.value.field == "data_parallel_size"
    res = search(scenario(model="qwen3-30b-a3b", data_parallel_size=4, search_gpus="h100-sxm"), catalog)
    assert res.scenario.data_parallel_size == 1
    assert any(n.startswith("data_parallel_size 4 is not searched") for n in res.notes)


def test_clients_not_a_multiple_of_the_ranks(catalog):
    """12 clients on 8 ranks: the busiest rank has 2, so the server runs 12 / 2 = 6 ranks' worth of that rank's
    requests; the simulated benchmark and the closed form agree within 3 %, and 16 clients serve more than 12."""
    kw = dict(model="deepseek-r1", gpu="h200", data_parallel_size=8, enable_expert_parallel=True, input_len=1000,
              output_len=1000, max_model_len=16384)  # fmt: skip
    twelve = evaluate(scenario(concurrency=12, **kw), catalog)
    b12 = bench.serve(twelve, num_prompts=120, max_concurrency=12).bench_summary()
    assert b12["completed"] == 120
    assert b12["request_throughput"] == pytest.approx(twelve.latency.requests_per_s, rel=0.03)
    b16 = bench.serve(evaluate(scenario(concurrency=16, **kw), catalog), num_prompts=160, max_concurrency=16)
    assert b16.bench_summary()["request_throughput"] > 1.25 * b12["request_throughput"]


def test_per_rank_caps_and_the_servers_totals_are_named(catalog):
    """max_num_seqs is each rank's: the advice to cap it names a rank's slots; the JSON carries the server's KV."""
    from boundary import view

    # Llama-3.1-8B on RTX 5090s, 4,000 + 512 tokens: each rank's pool holds 21 such requests, below max_num_seqs 256
    kw = dict(model="llama-3.1-8b", gpu="rtx-5090", request_rate=1.2, input_len=4000, output_len=512, slo_ttft_s=5,
              slo_tpot_s=0.1)  # fmt: skip
    one = evaluate(scenario(**kw), catalog)
    r = evaluate(scenario(data_parallel_size=2, **kw), catalog)
    cap = r.fleet.capacity
    assert one.fleet.capacity.overcommitted and cap.overcommitted and cap.slots == 2 * one.fleet.capacity.slots
    assert f"set max_num_seqs={one.fleet.capacity.slots:,}" in view.capacity_text(r)
    d = r.to_dict()
    assert d["kv_cache_tokens_all_ranks"] == 2 * d["kv_cache_tokens"] and d["data_parallel_size"] == 2
    assert any(m.label.startswith("KV cache (tokens)/rank") for m in view.memory_metrics(r))


def test_experts_sliced_over_the_ranks_must_divide(catalog):
    """Qwen3-30B-A3B's experts are 768 wide: sliced over DP 5 × TP 1 they do not divide, which vLLM cannot load;
    whole experts (expert parallelism) spread 128 over 5 GPUs as 25–26."""
    with pytest.raises(InputError) as e:
        evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", data_parallel_size=5), catalog)
    assert e.value.field == "data_parallel_size" and "768" in e.value.message
    notes = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", data_parallel_size=5,
                              enable_expert_parallel=True), catalog).notes  # fmt: skip
    assert any("25–26 of the 128" in n for n in notes)


def test_a_static_batch_is_one_engines(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "calc", "bench", "--data-parallel-size", "2", "--batch-size", "4"],
                       capture_output=True, text=True, cwd=Path(__file__).parent.parent)  # fmt: skip
    assert p.returncode == 2 and "--batch-size" in p.stderr and "data-parallel-size 1" in p.stderr


def test_a_link_out_of_range_names_the_range():
    from boundary.urlstate import _parse

    assert _parse("data_parallel_size", "65").endswith("(allowed: ≥ 1, ≤ 64)")


def test_prefix_reuse_across_ranks_is_named(catalog):
    notes = evaluate(scenario(data_parallel_size=4, turns=8), catalog).notes
    assert any(n.startswith("prefix reuse with 4 data-parallel ranks") and "1 in 4" in n for n in notes)
    assert not any(n.startswith("prefix reuse with") for n in evaluate(scenario(turns=8), catalog).notes)


def test_the_lockstep(catalog):
    """Every MoE layer waits for every rank: with a rank's own share q of steps carrying a prompt and 7 busy peers
    alike, 1 − (1 − q)^8 of the steps carry one somewhere (q = 0.1: 1 − 0.9^8 = 0.5695). One rank alone, or a dense
    model's ranks, which never meet: q itself."""
    from calc.engine_cycle import lockstep_share

    assert lockstep_share(0.1, 7) == pytest.approx(1 - 0.9**8) == pytest.approx(0.5695, abs=1e-4)
    assert lockstep_share(0.1, 0.0) == 0.1 and lockstep_share(1.0, 7) == 1.0
    kw = dict(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=2000, output_len=200, frontend_overhead_s=0.02)
    moe = evaluate(scenario(concurrency=64, data_parallel_size=8, **kw), catalog)
    assert moe.latency.step.busy_peers == 7
    # the decode step alone is the same with or without the peers' prompts; the TPOT mixes in more prompt steps
    alone = evaluate(scenario(concurrency=1, data_parallel_size=8, **kw), catalog)
    assert alone.latency.step.busy_peers == 0
    dense = evaluate(scenario(concurrency=64, data_parallel_size=8, **(kw | {"model": "qwen2.5-7b-instruct"})), catalog)
    one = evaluate(scenario(concurrency=8, **(kw | {"model": "qwen2.5-7b-instruct"})), catalog)
    assert dense.latency.step.busy_peers == 0 and dense.latency.tpot_s == pytest.approx(one.latency.tpot_s, rel=1e-12)
    # a burst: once every prompt is in, no rank has prompt steps left and the decodes run at their own pace; in a
    # closed loop prompts keep coming on every rank, and the decodes wait for them
    burst = bench.serve(moe, num_prompts=64)  # all 64 at once, 8 a rank
    assert burst.completed == 64
    assert burst.itl.percentiles_s((50,))[0] == pytest.approx(moe.latency.itl_s, rel=1e-9)
    loop = bench.serve(moe, num_prompts=640, max_concurrency=64)
    assert loop.itl.percentiles_s((50,))[0] > 1.5 * moe.latency.itl_s
    # vLLM's TPOT by hand: 8 decodes a rank, 8 · 2,000 / 200 = 80 prompt tokens a step in 2,000-token chunks, so
    # q = 80 / 2,000 = 0.04 of a rank's steps carry one, and 1 − 0.96^8 of the steps carry one somewhere
    from dataclasses import replace

    from calc.engine_cycle import mixed_tpot_s

    step, args = moe.latency.step, dict(b=8, input_len=2000, output_len=200, budget=2048, context=2100)
    chunk, plain = step.step_s(2000, 2000 * 1000, 8, 8 * 2100), step.step_s(0, 0, 8, 8 * 2100)
    q = 1 - 0.96**8
    assert mixed_tpot_s(step, **args) == pytest.approx(q * chunk + (1 - q) * plain, rel=1e-9)
    lone = replace(step, dp_busy=0.0)  # no busy peers: no lockstep (and their dummy tokens only in the MoE layers)
    chunk, plain = lone.step_s(2000, 2000 * 1000, 8, 8 * 2100), lone.step_s(0, 0, 8, 8 * 2100)
    assert mixed_tpot_s(lone, **args) == pytest.approx(0.04 * chunk + 0.96 * plain, rel=1e-9)


def test_the_data_parallel_note_quotes_the_replay(catalog):
    """The 15 published data-parallel runs replay at the shipped constants (none was fitted on: history, 2026-12-05
    (9)); the plan's note quotes their median throughput and TPOT errors and the throughput's range."""
    from boundary.bench_check import check
    from boundary.bench_data import load_runs
    from calc.evaluate import DP_REPLAY

    dp = [r for r in load_runs(catalog)[0] if r.scenario.data_parallel_size > 1]
    assert len(dp) == 15 and all(r.part == "calibration" for r in dp)
    checks = check(dp, catalog)
    thr = sorted(c.error("throughput") for c in checks if c.error("throughput") is not None)
    tpot = [c.error("tpot") for c in checks if c.error("tpot") is not None]

    def said(x: float) -> str:  # '3 % below', '58 % above'
        return f"{abs(x):.0%} {'above' if x > 0 else 'below'}".replace("%", " %")

    assert f"median {said(statistics.median(thr))} the measured" in DP_REPLAY
    assert f"(−{-thr[0]:.0%} … +{thr[-1]:.0%})".replace("%", " %") in DP_REPLAY
    assert f"its TPOT a median {said(statistics.median(tpot))}" in DP_REPLAY
    note = evaluate(scenario(model="deepseek-v3", gpu="h200", data_parallel_size=8), catalog).notes
    assert any(DP_REPLAY in n for n in note)
