"""The endpoint the clients call (`--endpoint-type openai | openai-chat`): the chat template's front-end time."""

import pytest

from calc.bench import serve
from calc.evaluate import evaluate
from calc.front_end import front_busy_s, front_end_rps, request_overhead_s
from calc.resolve import engine_of
from calc.scenario import Scenario
from calc.scheduler import simulate
from calc.sim_engine import EngineConfig
from calc.sim_stats import Workload


def test_front_end_time_by_hand(catalog):
    engine = catalog.engines["vllm"].model_copy(update={"request_overhead_s": 0.001, "request_token_s": 2e-6,
                                                        "chat_request_s": 0.05, "chat_serial_s": 0.01,
                                                        "harmony_serial_s": 0.004})  # fmt: skip
    s = Scenario(input_len=1000)
    m = catalog.models[s.model]
    assert request_overhead_s(s, engine, m) == pytest.approx(0.001 + 2e-6 * 1000)  # 3 ms
    assert front_busy_s(s, engine, m) == pytest.approx(2e-6 * 1000)  # tokenising, one request at a time: 2 ms
    chat = s.model_copy(update={"endpoint_type": "openai-chat"})
    assert request_overhead_s(chat, engine, m) == pytest.approx(0.001 + 0.05 + 0.01 + 2e-6 * 1000)  # 63 ms
    assert front_busy_s(chat, engine, m) == pytest.approx(0.01 + 2e-6 * 1000)  # and the template: 12 ms
    own = chat.model_copy(update={"frontend_overhead_s": 0.2})  # a measured front end replaces the engine's
    assert request_overhead_s(own, engine, m) == 0.2 and front_busy_s(own, engine, m) == 0.0
    # gpt-oss's chat format is rendered by the openai_harmony library, not a Jinja template: its own serial time
    harmony = catalog.models["gpt-oss-20b"]
    assert harmony.model_type == "gpt_oss" and front_busy_s(chat, engine, harmony) == pytest.approx(0.004 + 2e-6 * 1000)
    assert request_overhead_s(chat, engine, harmony) == pytest.approx(0.001 + 0.05 + 0.004 + 2e-6 * 1000)
    assert front_busy_s(s, engine, harmony) == pytest.approx(2e-6 * 1000)  # the completions endpoint: neither


def test_harmony_chat_rate_is_the_published_one(catalog):
    """GPUStack, gpt-oss-120b on 2 × H100 (vLLM 0.10.2, --async-scheduling): 1,000 chat requests of 127,755 prompt
    tokens in all, sent at once, at 239.21 requests a second — the API server's bound that harmony_serial_s is set
    from: 1 / (harmony_serial_s + request_token_s · 127.755) = 239.2 a second."""
    engine = catalog.engines["vllm"]
    s = Scenario(model="gpt-oss-120b", gpu="h100-sxm", tensor_parallel_size=2, input_len=128,
                 endpoint_type="openai-chat")  # fmt: skip
    busy = front_busy_s(s, engine, catalog.models["gpt-oss-120b"])
    assert busy == pytest.approx(engine.harmony_serial_s + engine.request_token_s * 128)
    assert 1 / (engine.harmony_serial_s + engine.request_token_s * 127.755) == pytest.approx(239.21, rel=2e-3)
    # a Jinja-templated model's chat requests take the API server longer (GPUStack: 44–48 a second)
    assert busy < front_busy_s(s.model_copy(update={"model": "qwen3-8b"}), engine, catalog.models["qwen3-8b"])


def test_gpt_oss_20b_chat_burst_duration(catalog):
    """GPUStack, gpt-oss-20b on one H100 (vLLM 0.11.0, held out): 1,000 chat requests of 128 tokens with 4 output
    tokens each, sent at once, finished in 4.70 s (212.76 requests a second): the API server's pace, not the GPU's
    (128k prompt tokens). Replayed within 15 %."""
    s = Scenario(model="gpt-oss-20b", gpu="h100-sxm", input_len=128, output_len=4, endpoint_type="openai-chat",
                 max_num_seqs=1024, max_num_batched_tokens=8192)  # fmt: skip
    b = serve(evaluate(s, catalog), num_prompts=1000).bench_summary()
    assert b["request_throughput"] == pytest.approx(212.76, rel=0.15)


def test_gpustack_qwen3_8b_chat_ttft_at_concurrency_1(catalog):
    """GPUStack, vLLM v0.11.0, one H100, Qwen3-8B, `vllm bench serve --backend openai-chat`, ShareGPT prompts
    (232.6 tokens in, 220.6 out on average), max concurrency 1: median TTFT 60.38 ms, median TPOT 7.22 ms
    (tests/data/benchmarks/gpustack-qwen3-8b-h100-latency.yaml; a calibration run)."""
    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=233, output_len=221, concurrency=1,
                 endpoint_type="openai-chat")  # fmt: skip
    b = serve(evaluate(s, catalog), num_prompts=20, max_concurrency=1).bench_summary()
    assert b["median_ttft_ms"] == pytest.approx(60.38, rel=0.15)


def test_the_chat_endpoint_adds_its_front_end_time_to_ttft_and_its_chunks_to_each_step(catalog):
    """One request at a time: the chat endpoint's front end (chat_request_s + chat_serial_s) lands on the first token
    alone, and each streamed chat chunk (chat_stream_token_s, one running request) on every decode step."""
    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=233, output_len=221, concurrency=1)
    chat = s.model_copy(update={"endpoint_type": "openai-chat"})
    plain_b, chat_b = (serve(evaluate(x, catalog), num_prompts=10, max_concurrency=1).bench_summary()
                       for x in (s, chat))  # fmt: skip
    e = catalog.engines["vllm"]
    extra_ms = (e.chat_request_s + e.chat_serial_s) * 1e3  # its prompt step has no decoding request to stream
    assert chat_b["median_ttft_ms"] - plain_b["median_ttft_ms"] == pytest.approx(extra_ms, rel=1e-6)
    assert chat_b["median_tpot_ms"] - plain_b["median_tpot_ms"] == pytest.approx(e.chat_stream_token_s * 1e3, rel=1e-6)
    assert evaluate(chat, catalog).latency.ttft_s > evaluate(s, catalog).latency.ttft_s


def test_a_burst_of_chat_requests_queues_at_the_front_end():
    """Three requests sent together, 12 ms of front-end CPU each, one at a time, then 10 ms steps of one prompt and
    its one output token: they reach the idle engine at 12, 24 and 36 ms and get their tokens at 22, 34 and 46 ms.
    Without the front end's CPU all three share one 10 ms step."""
    cfg = dict(max_num_seqs=256, max_num_batched_tokens=2048, num_gpu_blocks=10**6, block_size=16,
               blocks_for=lambda t: -(-t // 16))  # fmt: skip
    w = Workload(input_len=100, output_len=1, num_prompts=3)
    step = lambda *_: 0.010  # noqa: E731
    served = simulate(EngineConfig(**cfg, request_serial_s=0.012), w, step)
    assert sorted(served.ttft_s) == pytest.approx([0.022, 0.034, 0.046])
    assert sorted(simulate(EngineConfig(**cfg), w, step).ttft_s) == pytest.approx([0.010] * 3)


def test_the_front_ends_capacity_by_hand():
    """M/D/1: busy b, slack s → ρ = 2s / (b + 2s), λ = ρ / b. b = 20 ms, s = 100 ms: ρ = 0.2 / 0.22 = 0.909…,
    45.45 requests/s; no slack, no rate; no CPU, no cap. Arrays as scalars."""
    assert front_end_rps(0.020, 0.100) == pytest.approx((0.2 / 0.22) / 0.020)
    assert front_end_rps(0.020, -0.5) == 0.0 and front_end_rps(0.0, 0.1) == float("inf")
    assert list(front_end_rps([0.02, 0.01], [0.1, 0.1])) == pytest.approx([45.4545, (0.2 / 0.21) / 0.01], rel=1e-4)
    # a longer slack admits more, never past one request per busy time
    assert front_end_rps(0.02, 0.1) < front_end_rps(0.02, 1.0) < 1 / 0.02


def test_chat_capacity_is_capped_by_the_front_end(catalog):
    """A small model on a big GPU serves short chat requests faster than one API server takes them: the capacity
    is the front end's (the SLO's slack kept), and the page says so."""
    from boundary.view import capacity_text

    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=128, output_len=16, concurrency=64,
                 slo_ttft_s=1.0, slo_tpot_s=0.1, endpoint_type="openai-chat")  # fmt: skip
    r = evaluate(s, catalog)
    cap = r.fleet.capacity
    busy = front_busy_s(s, r.engine, r.model)
    slack = s.slo_ttft_s - evaluate(s.model_copy(update={"concurrency": cap.concurrency}), catalog).latency.ttft_s
    assert cap.limited_by == "front-end" and cap.rps == pytest.approx((2 * slack / (busy + 2 * slack)) / busy)
    plain = evaluate(s.model_copy(update={"endpoint_type": "openai"}), catalog).fleet.capacity
    assert plain.rps > cap.rps and plain.limited_by != "front-end"
    assert "one request at a time" in capacity_text(r)


def test_requests_in_the_engine_by_hand():
    """E2E(k) = 0.1 s + 0.005 s · k with k in the engine, busy = 0.02 s per request at the API server: bound at 64
    in flight (64 · 0.02 = 1.28 s > E2E(64) = 0.42 s), k = 0.1 / (0.02 − 0.005) = 6.67 (E2E 0.1333 s = 6.67 · 0.02).
    At 4 in flight it keeps up (0.08 s < 0.12 s): k = 4. A request that takes less than busy alone: k = 1."""
    from calc.front_end import in_engine

    def e2e(k):
        return 0.1 + 0.005 * k

    assert in_engine(e2e, 64, 0.02, e2e(64)) == pytest.approx(0.1 / 0.015, rel=1e-9)
    assert in_engine(e2e, 4, 0.02, e2e(4)) == 4 and in_engine(e2e, 64, 0.0, e2e(64)) == 64
    assert in_engine(lambda k: 0.01 + 0.001 * k, 64, 0.02, 0.074) == 1.0
    # convex E2E (a step that grows with the batch), bound at 200 (4 s > 0.5 s): 1e-5 k² − 0.02 k + 0.1 = 0 at
    # k = (0.02 − √(0.02² − 4e-6)) / 2e-5 = 5.0126
    k = in_engine(lambda k: 0.1 + 1e-5 * k * k, 200, 0.02, 0.1 + 1e-5 * 200**2)
    assert k == pytest.approx((0.02 - (0.02**2 - 4e-6) ** 0.5) / 2e-5, rel=1e-9)


def test_where_the_api_server_binds_the_closed_form_follows_the_simulation(catalog):
    """Qwen3-8B on an H100, 64 chat requests of 128 + 16 tokens in a closed loop: the API server (23 ms a request)
    sets the pace, so a few requests are in the engine and the rest wait for it. The scheduler simulation plays
    that out; the closed form must give its TPOT and rate within 10 % and 2 % (before calc.front_end.in_engine it
    stepped all 64: TPOT 31.6 ms against 7.6 ms), and TTFT within 10 %."""
    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=128, output_len=16, concurrency=64,
                 endpoint_type="openai-chat")  # fmt: skip
    r = evaluate(s, catalog)
    lat, busy = r.latency, front_busy_s(s, r.engine, r.model)
    sim = serve(r, num_prompts=1000, max_concurrency=64).bench_summary()
    assert lat.decode_batch < 16
    assert lat.tpot_s * 1e3 == pytest.approx(sim["mean_tpot_ms"], rel=0.10)
    assert lat.requests_per_s == pytest.approx(sim["request_throughput"], rel=0.02)
    assert lat.ttft_s * 1e3 == pytest.approx(sim["mean_ttft_ms"], rel=0.10)
    # Little's law at the API server's pace: each of the 64 cycles in 64 · busy, so the rate is 1 / busy
    assert lat.requests_per_s == pytest.approx(1 / busy, rel=1e-9) and lat.e2e_s == pytest.approx(64 * busy, rel=1e-9)
    assert dict(lat.e2e_parts)["waiting for the API server"] > 0


def test_once_bound_each_request_more_in_flight_adds_one_busy_time(catalog):
    """Past the bound the engine's share stays put, so TTFT grows by busy per request in flight and TPOT not at
    all (linearity); below it nothing waits for the API server."""
    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=128, output_len=16, endpoint_type="openai-chat")
    lat = {c: evaluate(s.model_copy(update={"concurrency": c}), catalog).latency for c in (1, 100, 200)}
    busy = front_busy_s(s, engine_of(s, catalog), catalog.models["qwen3-8b"])
    assert lat[200].ttft_s - lat[100].ttft_s == pytest.approx(100 * busy, rel=1e-6)
    assert lat[200].tpot_s == pytest.approx(lat[100].tpot_s, rel=1e-6)
    assert "waiting for the API server" not in dict(lat[1].e2e_parts) and lat[1].decode_batch == 1


def test_the_latency_section_says_how_many_are_in_the_engine(catalog):
    """The same 64 chat requests: the Latency section names the requests in the engine and why the rest wait; at
    one in flight there is no such row."""
    from boundary import view

    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=128, output_len=16, concurrency=64,
                 endpoint_type="openai-chat")  # fmt: skip
    r = evaluate(s, catalog)
    row = dict(view.latency_section(r).rows)["  in the engine"]
    assert row.startswith(f"{r.latency.decode_batch:.1f} of the 64 in flight") and "API server" in row
    alone = evaluate(s.model_copy(update={"concurrency": 1}), catalog)
    assert "  in the engine" not in dict(view.latency_section(alone).rows)


def test_completions_streams_cost_less_than_chat_chunks_as_published_runs_say(catalog):
    """IOG Foundation's Llama-3-8B-Instruct on one H100 PCIe, vLLM 0.8.5, 200 ShareGPT prompts at 32 req/s on
    /v1/completions (calibration part; tests/data/benchmarks/iog-…yaml): median TPOT 16.32 ms, ITL 14.02 ms, some 60
    requests running. Their steps leave at most ~22 µs a running request beyond the weights, the KV and the launches,
    where GPUStack's chat bursts need some 100 µs: the chat endpoint's chunks carry the difference. The replay comes
    within 35 %; served on the chat endpoint instead, the same run decodes slower."""
    from boundary.bench_check import predict
    from boundary.bench_data import load_runs

    run = next(r for r in load_runs(catalog)[0] if r.id == "iog-meta-llama-3-8b-instruct-1xh100-pcie-qps32")
    assert run.scenario.endpoint_type == "openai" and run.measured["median_tpot_ms"] == pytest.approx(16.32, abs=0.005)
    plain = predict(run, catalog)["tpot"] * 1e3
    assert plain == pytest.approx(16.32, rel=0.35)
    from dataclasses import replace

    chat = replace(run, scenario=run.scenario.model_copy(update={"endpoint_type": "openai-chat"}))
    e = catalog.engines["vllm"]
    assert e.chat_stream_token_s > e.stream_token_s and predict(chat, catalog)["tpot"] * 1e3 > plain + 1.0


def test_a_chat_plan_on_a_release_without_chat_runs_says_its_chunk_cost_is_carried_over(catalog):
    """chat_stream_token_s was fitted on vLLM 0.8–0.13's chat bursts; the 0.14+ release's per-request costs on
    completions runs only. A chat plan on the latest release says so; one on 0.11, where it was fitted, does not."""
    from calc.evaluate import evaluate

    def chunk_notes(**kw):
        r = evaluate(Scenario(endpoint_type="openai-chat", **kw), catalog)
        return [n for n in r.notes if "streamed chat chunk" in n]

    latest = chunk_notes()
    assert len(latest) == 1 and "vLLM 0.8–0.13's chat bursts" in latest[0] and "vLLM 0.14 and later" in latest[0]
    assert f"{catalog.engines['vllm'].chat_stream_token_s * 1e6:,.0f} µs" in latest[0]
    assert chunk_notes(engine_version="0.11.0") == []
    assert not [n for n in evaluate(Scenario(), catalog).notes if "streamed chat chunk" in n]  # completions
