"""A router's favourite experts (calc.routing) and the bias-balanced prompts rule (calc.step_inputs.BALANCED_ROUTERS):
hand-computed values, the uniform limit, properties, and what the fitted constants do to the runs that asked for them
(docs/calibration-history.md, 2026-12-04 last session (1))."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.evaluate import evaluate
from calc.loader import load_catalog
from calc.routing import distinct_experts, popularity
from calc.scenario import Scenario
from calc.step_inputs import BALANCED_ROUTERS

CAT = load_catalog()


def test_popularity_by_hand():
    # E = 4, k = 1, s = 1: weights 1, 1/2, 1/3, 1/4 sum to 25/12, so q = 12/25 · (1, 1/2, 1/3, 1/4)
    assert popularity(4, 1, 1.0) == pytest.approx([0.48, 0.24, 0.16, 0.12])
    # E = 4, k = 2, s = 2: c = 2 / (1 + 1/4 + 1/9 + 1/16) = 1.405 would put expert 1 above 1, so it is capped and
    # the other three share the remaining 1: c = 1 / (1/4 + 1/9 + 1/16) = 2.3607
    c = 1 / (1 / 4 + 1 / 9 + 1 / 16)
    assert popularity(4, 2, 2.0) == pytest.approx([1.0, c / 4, c / 9, c / 16])


def test_touched_by_hand():
    # E = 4, k = 1, s = 1, two tokens: Σ 1 − (1 − q)² = 2·Σq − Σq² = 2 − (0.48² + 0.24² + 0.16² + 0.12²) = 1.672,
    # where a uniform router touches 4 · (1 − 0.75²) = 1.75
    assert distinct_experts(experts=4, top_k=1, tokens=2, skew=1.0) == pytest.approx(1.672, rel=1e-4)
    assert distinct_experts(experts=4, top_k=1, tokens=2) == pytest.approx(1.75)
    # capped expert 1 is in every token's k: E = 4, k = 2, s = 2, three tokens: 1 + Σ_{i>1} 1 − (1 − q_i)³
    c = 1 / (1 / 4 + 1 / 9 + 1 / 16)
    want = 1 + sum(1 - (1 - c / d) ** 3 for d in (4, 9, 16))
    assert distinct_experts(experts=4, top_k=2, tokens=3, skew=2.0) == pytest.approx(want, rel=1e-4)


def test_skew_zero_is_uniform_and_the_table_matches_the_sum():
    g = np.geomspace(0.5, 1e5, 200)
    assert distinct_experts(experts=128, top_k=8, tokens=g, skew=0.0) == pytest.approx(128 * (1 - (1 - 8 / 128) ** g))
    for e, k, s in ((128, 8, 0.72), (256, 8, 1.0), (32, 4, 0.3), (8, 2, 2.5)):
        q = popularity(e, k, s)
        with np.errstate(divide="ignore"):
            exact = np.array([np.sum(1 - (1 - q) ** x) for x in g])
        table = distinct_experts(experts=e, top_k=k, tokens=g, skew=s)
        assert table == pytest.approx(exact, rel=1e-4)
        # the simulation's scalar path reads the same table (the search's arrays and the step model agree)
        assert [distinct_experts(experts=e, top_k=k, tokens=float(x), skew=s) for x in g] == pytest.approx(table, rel=1e-12)
        assert distinct_experts(experts=e, top_k=k, tokens=0.0, skew=s) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 3.0), st.floats(1.0, 1e5))
def test_a_skewed_router_touches_k_then_fewer_than_uniform_then_all(skew, g):
    for e, k in ((128, 8), (256, 8), (32, 4), (64, 1)):
        assert popularity(e, k, skew).sum() == pytest.approx(k)
        assert distinct_experts(experts=e, top_k=k, tokens=1.0, skew=skew) == pytest.approx(k, rel=1e-4)
        touched = distinct_experts(experts=e, top_k=k, tokens=g, skew=skew)
        # 1 − (1 − q)^g is concave in q for g ≥ 1: equal shares (uniform) touch the most
        assert touched <= distinct_experts(experts=e, top_k=k, tokens=g) * (1 + 1e-4)
        assert touched <= distinct_experts(experts=e, top_k=k, tokens=g * 1.5, skew=skew) * (1 + 1e-4)
        assert distinct_experts(experts=e, top_k=k, tokens=1e7, skew=skew) == pytest.approx(e, rel=1e-3)


def _step(model, gpu="h100-sxm", tp=1):
    s = Scenario(model=model, gpu=gpu, tensor_parallel_size=tp, input_len=512, output_len=128, max_model_len=4096)
    return evaluate(s, CAT).latency.step


def test_bias_balanced_routers_prefill_each_token_as_a_draw():
    assert {"deepseek_v3", "glm4_moe", "kimi_k2"} <= BALANCED_ROUTERS
    ds, qw = _step("deepseek-v3", "h200", 8), _step("qwen3-30b-a3b")
    assert ds.balanced_router and ds.prefill_routing == 1.0
    assert not qw.balanced_router and qw.prefill_routing == CAT.engines["vllm"].prefill_routing_exponent < 1
    # one 512-token prompt: DeepSeek-V3's 512 draws reach nearly all 256 experts, Qwen3's 512^y far fewer of 128
    e = CAT.engines["vllm"]
    assert ds.experts_touched(512, 512, 1) == pytest.approx(
        distinct_experts(experts=256, top_k=8, tokens=512 ** e.routing_exponent, skew=e.routing_skew))
    y = e.prefill_routing_exponent
    assert qw.experts_touched(512, 512, 1) == pytest.approx(
        distinct_experts(experts=128, top_k=8, tokens=(512 ** y) ** e.routing_exponent, skew=e.routing_skew))


def test_a_small_moe_decode_at_32_in_flight_reads_fewer_experts_than_uniform_routing():
    # Massed Compute's Qwen3-30B-A3B on one RTX PRO 6000 (calibration part; tests/data/benchmarks/massed-compute-
    # qwen3-30b-a3b-rtxpro6000.yaml, vLLM): median ITL 28.14 ms at 32 in flight, 128-token prompts and answers. 32
    # decoding sequences are 32^0.8863 = 21.6 draws; a uniform router touches 128 · (1 − (120/128)^21.6) = 96.3
    # experts a layer (75 %), whose read alone took the step to 38.6 ms (+37 %) before the skew.
    e = CAT.engines["vllm"]
    g = 32**e.routing_exponent
    assert g == pytest.approx(21.6, abs=0.05)
    assert distinct_experts(experts=128, top_k=8, tokens=g) == pytest.approx(96.3, abs=0.1)
    assert distinct_experts(experts=128, top_k=8, tokens=g, skew=e.routing_skew) < 96.3 * 0.9
    s = Scenario(model="qwen3-30b-a3b", gpu="rtx-pro-6000-blackwell", input_len=128, output_len=128, concurrency=32,
                 max_model_len=4096)  # fmt: skip
    step = evaluate(s, CAT).latency.step.step_s(0, 0, 32, 32 * 192.0)  # half-way through the 128 answer tokens
    assert step == pytest.approx(28.14e-3, rel=0.20)


def test_the_decode_formula_says_how_many_experts_a_step_reads():
    """The page's and the CLI's formula for the decode step names the experts read beside uniform routing's count:
    32 requests are 32^0.8863 = 21.6 draws, which uniform top-8 routing spreads over 128 · (1 − (120/128)^21.6) =
    96.2 experts; a dense model has no such line."""
    s = Scenario(model="qwen3-30b-a3b", gpu="h100-sxm", concurrency=32, input_len=128, output_len=128)
    r = evaluate(s, CAT)
    text = r.formulas["Decode step"]
    uniform = 128 * (1 - (120 / 128) ** (32 ** CAT.engines["vllm"].routing_exponent))
    assert uniform == pytest.approx(96.2, abs=0.05)
    assert "of 128 a MoE layer for 32 decoding requests" in text and f"uniform draws would read {uniform:.1f}" in text
    assert f"routed experts read: {r.latency.step.experts_touched(32):.1f}" in text
    assert "routed experts" not in evaluate(Scenario(), CAT).formulas["Decode step"]
