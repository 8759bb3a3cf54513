"""The endpoint the clients call (`--endpoint-type openai | openai-chat`): the chat template's front-end time."""

import pytest

from calc.bench import serve
from calc.evaluate import evaluate
from calc.latency import front_busy_s, request_overhead_s
from calc.replicas import front_end_rps
from calc.scenario import Scenario
from calc.scheduler import simulate
from calc.sim_engine import EngineConfig
from calc.sim_stats import Workload


def test_front_end_time_by_hand(catalog):
    engine = catalog.engines["vllm"].model_copy(update={"request_overhead_s": 0.001, "request_token_s": 2e-6,
                                                        "chat_request_s": 0.05, "chat_serial_s": 0.01})  # fmt: skip
    s = Scenario(input_len=1000)
    m = catalog.models[s.model]
    assert request_overhead_s(s, engine, m) == pytest.approx(0.001 + 2e-6 * 1000)  # 3 ms
    assert front_busy_s(s, engine, m) == pytest.approx(2e-6 * 1000)  # tokenising, one request at a time: 2 ms
    chat = s.model_copy(update={"endpoint_type": "openai-chat"})
    assert request_overhead_s(chat, engine, m) == pytest.approx(0.001 + 0.05 + 0.01 + 2e-6 * 1000)  # 63 ms
    assert front_busy_s(chat, engine, m) == pytest.approx(0.01 + 2e-6 * 1000)  # and the template: 12 ms
    own = chat.model_copy(update={"frontend_overhead_s": 0.2})  # a measured front end replaces the engine's
    assert request_overhead_s(own, engine, m) == 0.2 and front_busy_s(own, engine, m) == 0.0
    # gpt-oss's chat format is rendered by the openai_harmony library, not a Jinja template: no template CPU
    harmony = catalog.models["gpt-oss-20b"]
    assert harmony.model_type == "gpt_oss" and front_busy_s(chat, engine, harmony) == pytest.approx(2e-6 * 1000)
    assert request_overhead_s(chat, engine, harmony) == pytest.approx(0.001 + 0.05 + 2e-6 * 1000)


def test_gpustack_qwen3_8b_chat_ttft_at_concurrency_1(catalog):
    """GPUStack, vLLM v0.11.0, one H100, Qwen3-8B, `vllm bench serve --backend openai-chat`, ShareGPT prompts
    (232.6 tokens in, 220.6 out on average), max concurrency 1: median TTFT 60.38 ms, median TPOT 7.22 ms
    (tests/data/benchmarks/gpustack-qwen3-8b-h100-latency.yaml; a calibration run)."""
    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=233, output_len=221, concurrency=1,
                 endpoint_type="openai-chat")  # fmt: skip
    b = serve(evaluate(s, catalog), num_prompts=20, max_concurrency=1).bench_summary()
    assert b["median_ttft_ms"] == pytest.approx(60.38, rel=0.15)


def test_the_chat_endpoint_adds_its_time_to_ttft_only(catalog):
    s = Scenario(model="qwen3-8b", gpu="h100-sxm", input_len=233, output_len=221, concurrency=1)
    chat = s.model_copy(update={"endpoint_type": "openai-chat"})
    plain_b, chat_b = (serve(evaluate(x, catalog), num_prompts=10, max_concurrency=1).bench_summary()
                       for x in (s, chat))  # fmt: skip
    extra_ms = (catalog.engines["vllm"].chat_request_s + catalog.engines["vllm"].chat_serial_s) * 1e3
    assert chat_b["median_ttft_ms"] - plain_b["median_ttft_ms"] == pytest.approx(extra_ms, rel=1e-6)
    assert chat_b["median_tpot_ms"] == pytest.approx(plain_b["median_tpot_ms"], rel=1e-9)
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
