"""The step model's kernel terms for MoE and quantized weights: the experts a batch of tokens reaches, the fused-MoE
and FP8 grouped GEMMs' shares, 4-bit weight-only kernels' one-tile half point, and the experts a plain decode step
reads under load — by hand, against the simulation, and as properties."""

from dataclasses import replace

import numpy as np
import pytest
from conftest import scenario

from calc.evaluate import evaluate


def test_distinct_experts_by_hand():
    from calc.routing import distinct_experts

    # 8 experts, top-2: one token visits 2; two tokens 8 · (1 − (6/8)²) = 3.5; a long prompt visits all 8
    assert distinct_experts(experts=8, top_k=2, tokens=1) == pytest.approx(2.0)
    assert distinct_experts(experts=8, top_k=2, tokens=2) == pytest.approx(3.5)
    assert distinct_experts(experts=8, top_k=2, tokens=np.array([1, 2, 10_000])) == pytest.approx([2.0, 3.5, 8.0])


def test_a_routing_exponent_below_one_touches_fewer_experts_by_hand(catalog):
    """Qwen3-30B-A3B (128 experts, top-8). Uniform routing: 32 tokens touch 128 · (1 − (120/128)^32) = 111.8 experts
    a layer. With x = 0.8 they pick like 32^0.8 = 2^4 = 16 draws: 128 · (1 − (120/128)^16) = 82.4. One token still
    reads its 8; 10^6 tokens still reach all 128. (Uniform draws, routing_skew 0: tests/test_routing.py has the
    skew.)"""
    r = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm"), catalog)
    step = r.latency.step
    uniform, skewed = (replace(step, engine=step.engine.model_copy(update={"routing_exponent": x, "routing_skew": 0.0}))
                       for x in (1.0, 0.8))  # fmt: skip
    assert uniform.experts_touched(32) == pytest.approx(128 * (1 - (120 / 128) ** 32))
    assert skewed.experts_touched(32) == pytest.approx(128 * (1 - (120 / 128) ** 16))
    assert skewed.experts_touched(1) == pytest.approx(8) and skewed.experts_touched(1e6) == pytest.approx(128)
    counts = [replace(step, engine=step.engine.model_copy(update={"routing_exponent": x})).experts_touched(32)
              for x in (0.5, 0.75, 1.0)]  # fmt: skip (the shipped skew: monotone all the same)
    assert counts == sorted(counts) and counts[0] < counts[-1]  # more skew, fewer experts
    assert skewed.terms(0, 0, 32, 32 * 200).experts_s < uniform.terms(0, 0, 32, 32 * 200).experts_s


def test_a_prompts_tokens_favour_the_same_experts_by_hand(catalog):
    """Qwen3-30B-A3B (128 experts, top-8), routing exponent x = 1 and uniform draws (skew 0) for the arithmetic. A 64-token prompt prefilled
    alone, prefill exponent y = 0.5: 64^0.5 = 8 draws, 128 · (1 − (120/128)^8) = 128 · (1 − 0.59673) = 51.6 experts
    a layer, where 64 independent requests would reach 128 · (1 − (120/128)^64) = 126.8. Two prompts of 32 tokens in
    one step: 2 · 32^0.5 = 11.31 draws, 128 · (1 − 0.9375^11.31) = 66.3. Beside 4 decoding sequences the draws add:
    4 + 8 = 12, 128 · (1 − 0.9375^12) = 68.9. At y = 1 the prefill is n tokens of independent draws again."""
    r = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm"), catalog)
    step = r.latency.step

    def at(y):
        return replace(step, engine=step.engine.model_copy(update={"routing_exponent": 1.0, "prefill_routing_exponent": y,
                                                                   "routing_skew": 0.0}))  # fmt: skip

    local = at(0.5)
    assert local.experts_touched(64, 64, 1) == pytest.approx(128 * (1 - (120 / 128) ** 8))
    assert local.experts_touched(64, 64, 1) == pytest.approx(51.6, abs=0.05)
    assert local.experts_touched(64, 64, 2) == pytest.approx(128 * (1 - (120 / 128) ** (2 * 32 ** 0.5)))
    assert local.experts_touched(64, 64, 2) == pytest.approx(66.3, abs=0.05)
    assert local.experts_touched(4 + 64, 64, 1) == pytest.approx(128 * (1 - (120 / 128) ** 12))
    assert at(1.0).experts_touched(64, 64, 1) == pytest.approx(128 * (1 - (120 / 128) ** 64))
    # decoding sequences are one draw each whatever y is; more locality, fewer experts; a step's time follows
    assert local.experts_touched(8) == at(1.0).experts_touched(8)
    counts = [at(y).experts_touched(128, 128, 1) for y in (0.3, 0.6, 0.9, 1.0)]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    assert local.terms(64, 64 * 65 / 2, 0, 0.0).experts_s < at(1.0).terms(64, 64 * 65 / 2, 0, 0.0).experts_s
    assert local.step_s(64, 64 * 65 / 2, 0, 0.0, 2) > local.step_s(64, 64 * 65 / 2, 0, 0.0, 1)
    # a full budget's prompts, for the closed forms and the search: 8,192 tokens of 1,000-token prompts are 8; a
    # budget shorter than one prompt carries a chunk of one
    from calc.step_time import prompts_in

    assert prompts_in(8192, 1000) == 8 and prompts_in(512, 1000) == 1
    assert prompts_in(np.array([8192, 512]), 1000).tolist() == [8, 1]


def test_a_short_prompt_alone_reads_fewer_experts_than_the_card_can_stream(catalog):
    """Massed Compute, Qwen3-30B-A3B on one H100 PCIe under vLLM, one request of 128 prompt tokens: first token in
    31.3 ms (tests/data/benchmarks/massed-compute-qwen3-30b-a3b-h100.yaml). Its 48 MoE layers hold 48 · 128 experts
    of 3 · 2048 · 768 bf16 weights = 58.0 GB; at the card's full 2.0 TB/s that is 29.0 ms, and the dense weights,
    the front end and the step's fixed costs come on top: the prompt cannot have read every expert. The shipped
    constants read fewer than all 128 a layer for it, where 128 independent requests would reach all of them."""
    expert_bytes = 48 * 128 * 3 * 2048 * 768 * 2
    assert expert_bytes == pytest.approx(58.0e9, rel=1e-3) and expert_bytes / 2.0e12 == pytest.approx(29.0e-3, rel=1e-3)
    step = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-pcie"), catalog).latency.step
    assert step.engine.prefill_routing_exponent < 1
    assert step.experts_touched(128, 128, 1) < 0.9 * 128 < step.experts_touched(128)


def test_the_fused_moe_compute_share_slows_only_steps_whose_expert_flops_bind(catalog):
    """Qwen3-30B-A3B on an H100: a prefill chunk of 8,192 tokens sends 8,192 · 8 / 128 = 512 tokens through each
    expert, so the experts' time is their FLOPs: at moe_compute_share 0.5 it is twice that at 1. One decoding
    token reads its 8 experts' weights, a bandwidth-bound term that the share does not touch."""
    def step_at(share: float):
        engines = {n: e.model_copy(update={"moe_compute_share": share, "routing_exponent": 1.0})
                   for n, e in catalog.engines.items()}  # fmt: skip
        return evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm"), replace(catalog, engines=engines)).latency.step

    full, half = step_at(1.0), step_at(0.5)
    big = (8192, 8192 * 8193 / 2, 0, 0.0)
    assert full.experts_touched(8192) == pytest.approx(128)
    flop_bound = full.terms(*big).experts_s
    assert half.terms(*big).experts_s == pytest.approx(2 * flop_bound)
    one = (0, 0, 1, 200.0)
    assert half.terms(*one).experts_s == full.terms(*one).experts_s > 0


def test_fp8_experts_on_fp8_tensor_cores_run_at_their_own_share(catalog):
    """The routed experts' matmul share is gemm_compute_share × moe_compute_share, × fp8_moe_compute_share where an
    FP8 checkpoint runs on FP8 tensor cores: Qwen3-30B-A3B in fp8 on an H100 (the block-scaled w8a8 grouped GEMMs),
    not on an A100 (no FP8 units: W8A16 at the 16-bit rate). A compute-bound chunk's experts' time scales by 1 / f."""
    from calc.step_inputs import expert_compute_share

    e = catalog.engines["vllm"]
    assert 0 < e.fp8_moe_compute_share < 1
    h100, a100 = catalog.gpus["h100-sxm"], catalog.gpus["a100-80gb-sxm"]
    base = e.gemm_compute_share * e.moe_compute_share
    assert expert_compute_share(e, "fp8", h100) == pytest.approx(base * e.fp8_moe_compute_share, rel=1e-12)
    assert expert_compute_share(e, "fp8", a100) == expert_compute_share(e, "bf16", h100) == pytest.approx(base)
    step = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", dtype="fp8"), catalog).latency.step
    assert step.expert_compute_share == pytest.approx(base * e.fp8_moe_compute_share)
    big = (8192, 8192 * 8193 / 2, 0, 0.0)
    as_bf16 = replace(step, expert_compute_share=base)
    assert step.terms(*big).experts_s == pytest.approx(as_bf16.terms(*big).experts_s / e.fp8_moe_compute_share)


def test_four_bit_weight_kernels_reach_half_throughput_at_one_tile(catalog):
    """gpt-oss-120b's MXFP4 experts (4.25 bits, 0.53 B a parameter) on an A100: 4-bit weight-only kernels pad a
    step to one 16-row MMA tile, so one decoding token's expert GEMMs run at 1 / (1 + 16) of their rate, not
    1 / (1 + 61); bf16 weights keep the engine's half point. At 16 tokens a tile is half full: 16 / (16 + 16)."""
    from calc.step_inputs import W4A16_TILE_TOKENS, half_tokens

    engine = catalog.engines["vllm"]
    assert W4A16_TILE_TOKENS == 16 and half_tokens(engine, 4.25 / 8) == 16.0 and half_tokens(engine, 0.5) == 16.0
    assert half_tokens(engine, 2.0) == half_tokens(engine, 1.0) == engine.gemm_half_tokens
    step = evaluate(scenario(model="gpt-oss-120b", gpu="a100-80gb-sxm"), catalog).latency.step
    assert step.expert_half_tokens == 16.0
    wide = replace(step, expert_half_tokens=engine.gemm_half_tokens)
    one = (0, 0, 1, 200.0)
    assert step.terms(*one).experts_s < wide.terms(*one).experts_s  # the padded tile no longer sets the step


def test_an_moe_models_plain_decode_steps_read_only_the_experts_their_tokens_reach(catalog):
    """Qwen3-30B-A3B (128 experts, 8 per token), 8 in flight, 128 + 1,000 tokens on an H100: 99.2 % of the steps
    decode 8 tokens, which reach at most 64 experts per layer; a prompt of 128 tokens reaches nearly all 128. TPOT
    is the mixture of the two steps, below one step carrying the 1.024 prompt tokens spread over it (which would
    read 8 + 1.024 tokens' experts every step), and near the plain decode step the simulation sees."""
    from calc import bench

    s = scenario(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=128, output_len=1000, concurrency=8)
    r = evaluate(s, catalog)
    lat = r.latency
    ctx = 8 * (128 + 1000 / 2)
    plain, spread = lat.step.step_s(0, 0, 8, ctx), lat.step.step_s(1.024, 1.024 * 128 / 2, 8, ctx)
    assert lat.tpot_s == pytest.approx(0.008 * lat.step.step_s(128, 128 * 128 / 2, 8, ctx) + 0.992 * plain)
    assert plain < lat.tpot_s < spread
    sim = bench.serve(r, num_prompts=200, max_concurrency=8, range_ratio=0.3).bench_summary()
    assert lat.tpot_s == pytest.approx(sim["mean_tpot_ms"] / 1e3, rel=0.05)


def test_four_bit_experts_are_read_at_their_own_kernel_share(catalog):
    """Routed experts stored at 4 bits stream at the engine's own 4-bit fused-MoE share, not the dense 4-bit GEMM's
    share × the 16-bit fused-MoE kernel's; 16- and 8-bit experts keep that product. By hand, one decoding token of
    gpt-oss-120b (MXFP4 experts, top-4 of 128 in each of 36 layers) on an H100 reads 4 × 36 = 144 experts, at
    bytes / (achievable bandwidth × share); halving the share doubles that time (memory-bound: one token)."""
    vllm = catalog.engines["vllm"]
    oss = evaluate(scenario(model="gpt-oss-120b", gpu="h100-sxm"), catalog).latency.step
    assert oss.expert_weight_share == vllm.int4_moe_weight_share
    assert vllm.int4_moe_weight_share != pytest.approx(vllm.int4_weight_share * vllm.moe_weight_share)
    bf16 = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm"), catalog).latency.step
    fp8 = evaluate(scenario(model="qwen3-30b-a3b", gpu="h100-sxm", dtype="fp8"), catalog).latency.step
    assert bf16.expert_weight_share == vllm.moe_weight_share
    assert fp8.expert_weight_share == pytest.approx(vllm.fp8_weight_share * vllm.moe_weight_share)
    one = (0, 0, 1, 200.0)
    assert oss.experts_touched(1) * oss.moe_layers == pytest.approx(4 * 36)
    by_hand = 4 * 36 * oss.expert_bytes / (oss.effective_bandwidth_bytes_per_s * vllm.int4_moe_weight_share)
    assert oss.terms(*one).experts_s == pytest.approx(by_hand)
    half = replace(oss, expert_weight_share=oss.expert_weight_share / 2)
    assert half.terms(*one).experts_s == pytest.approx(2 * by_hand)
    sglang = evaluate(scenario(model="gpt-oss-120b", gpu="h100-sxm", engine="sglang"), catalog).latency.step
    assert sglang.expert_weight_share == catalog.engines["sglang"].int4_moe_weight_share


def test_an_awq_moe_at_400_in_flight_replays_near_its_published_decode(catalog):
    """CloudRift's Qwen3-Coder-30B-A3B AWQ on one RTX 4090, vLLM 0.11, 400 in flight, 1,000 / 1,000 tokens
    (tests/data/benchmarks/cloudrift-server-benchmark-rtx-l40s-h200.yaml: "Median TPOT (ms): 29.80"). At the
    dense 4-bit share × the fused-MoE share the replay was 20 % slow; at vLLM's own 4-bit MoE share it is within
    ±12 %."""
    from boundary.bench_check import check
    from boundary.bench_data import load_runs

    (run,) = [r for r in load_runs(catalog)[0] if r.id == "cloudrift-rtx4090x1-qwen3coder30b-tp1pp1-c400-in1000out1000"]
    assert run.measured["median_tpot_ms"] == 29.8
    (c,) = check([run], catalog)
    assert abs(c.error("tpot")) < 0.12
