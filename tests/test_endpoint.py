"""The endpoint the clients call (`--endpoint-type openai | openai-chat`): the chat template's front-end time."""

import pytest

from calc.bench import serve
from calc.evaluate import evaluate
from calc.latency import request_overhead_s
from calc.scenario import Scenario


def test_front_end_time_by_hand(catalog):
    engine = catalog.engines["vllm"].model_copy(update={"request_overhead_s": 0.001, "request_token_s": 2e-6,
                                                        "chat_request_s": 0.05})  # fmt: skip
    s = Scenario(input_len=1000)
    assert request_overhead_s(s, engine) == pytest.approx(0.001 + 2e-6 * 1000)  # 3 ms
    chat = s.model_copy(update={"endpoint_type": "openai-chat"})
    assert request_overhead_s(chat, engine) == pytest.approx(0.001 + 0.05 + 2e-6 * 1000)  # 53 ms
    own = chat.model_copy(update={"frontend_overhead_s": 0.2})  # a measured front end replaces the engine's
    assert request_overhead_s(own, engine) == 0.2


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
    extra_ms = catalog.engines["vllm"].chat_request_s * 1e3
    assert chat_b["median_ttft_ms"] - plain_b["median_ttft_ms"] == pytest.approx(extra_ms, rel=1e-6)
    assert chat_b["median_tpot_ms"] == pytest.approx(plain_b["median_tpot_ms"], rel=1e-9)
    assert evaluate(chat, catalog).latency.ttft_s > evaluate(s, catalog).latency.ttft_s
