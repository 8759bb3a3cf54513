"""FP8 routed experts on CDNA3 (MI300X) under SGLang: the step term of their kernels' own time (EngineSpec.
rocm_fp8_moe_layer_s, docs/calibration-history.md (22)) — by hand, against the published runs it is measured on and
judged by, and the plan's note."""

from dataclasses import replace

import pytest
from conftest import scenario

from boundary.bench_check import check
from boundary.bench_data import load_runs
from calc.evaluate import evaluate
from calc.scenario import Scenario


@pytest.fixture(scope="module")
def runs(catalog):
    return load_runs(catalog)[0]


def test_fp8_expert_kernel_time_on_cdna3_by_hand(catalog):
    """MiniMax-M2 (62 layers, all MoE, FP8 checkpoint) on four MI300X under SGLang: at 0.2 ms a MoE layer the step
    carries 62 · 0.2 = 12.4 ms of FP8 expert kernel time, on a decode step and a prompt step alike, the same with CUDA
    graphs off (kernel time, not launches); it is linear in the constant, named in the terms, and absent on an H100,
    in bf16 and under vLLM."""
    def step(**over):
        base = dict(model="minimax-m2", gpu="mi300x", tensor_parallel_size=4, engine="sglang")
        s = evaluate(scenario(**(base | over)), catalog).latency.step
        return replace(s, fp8_moe_s=s.fp8_moe_s / s.engine.rocm_fp8_moe_layer_s * 0.2e-3 if s.fp8_moe_s else 0.0)

    m = step()
    assert m.moe_layers == 62 and m.fp8_moe_s == pytest.approx(12.4e-3)
    assert m.terms(0, 0, 1, 1000).fp8_moe_s == pytest.approx(12.4e-3)
    assert m.terms(1000, 1000 * 1001 / 2, 0, 0).fp8_moe_s == pytest.approx(12.4e-3)
    assert replace(m, eager=True).terms(0, 0, 1, 1000).fp8_moe_s == pytest.approx(12.4e-3)
    t = m.terms(0, 0, 8, 8000)
    assert t.total_s - replace(m, fp8_moe_s=0.0).terms(0, 0, 8, 8000).total_s == pytest.approx(12.4e-3)
    assert "FP8 expert kernels (CDNA3)" in t.expr().text()
    assert m.step_s(0, 0, 8, 8000) == t.total_s
    for over in ({"gpu": "h100-sxm"}, {"dtype": "bf16"}, {"engine": "vllm"}):
        assert evaluate(scenario(**(dict(model="minimax-m2", gpu="mi300x", tensor_parallel_size=4, engine="sglang")
                                    | over)), catalog).latency.step.fp8_moe_s == 0.0, over  # fmt: skip


def test_the_rocm_fp8_moe_note_quotes_what_the_published_runs_say(runs, catalog):
    """FP8 routed experts on MI300X under SGLang (the SGLang cookbook's MiniMax-M2 at TP 4 and DeepSeek-V3.1 at TP 8,
    0.5.7): without the FP8 experts' kernel time (rocm_fp8_moe_layer_s, history (22)) they decode 2.1–2.8× slower than
    replayed with one request in flight; with it 0.8–1.2× at 1–100, where its bf16 runs on the same GPUs (Llama-4
    Scout and Maverick at TP 8, ERNIE-4.5 on one card) come within −38 … +34 %. SGLang 0.4.2's DeepSeek-R1 (dstack)
    stays 1.2–1.6× slower, its first tokens 2.2–3.4× later. A plan of FP8 experts on a CDNA3 GPU under SGLang says
    so; vLLM, bf16 experts and NVIDIA GPUs get no such note (nor the term)."""
    from dataclasses import replace

    mi = [r for r in runs if r.scenario.gpu == "mi300x" and r.id.startswith("sglcb-") and r.scenario.data_parallel_size == 1]
    fp8 = [r for r in mi if r.scenario.dtype == "fp8"]
    bf16 = [r for r in mi if r.scenario.dtype == "auto" and "kimi-linear" not in r.id]  # bf16 checkpoints
    assert len(fp8) == 12 and len(bf16) == 15
    sglang = catalog.engines["sglang"]
    without = replace(catalog, engines=catalog.engines | {"sglang": sglang.model_copy(update={"rocm_fp8_moe_layer_s": 0.0})})
    alone = [c.measured["tpot"] / c.predicted["tpot"] for r, c in zip(fp8, check(fp8, without), strict=True)
             if r.id.endswith("-c1")]  # fmt: skip
    assert len(alone) == 4 and 2.05 < min(alone) and max(alone) < 2.85, alone
    ratios = [c.measured["tpot"] / c.predicted["tpot"] for c in check(fp8, catalog)]
    assert 0.8 < min(ratios) and max(ratios) < 1.2, ratios
    errors = [c.error("tpot") for c in check(bf16, catalog)]
    assert -0.40 < min(errors) and max(errors) < 0.36
    old = [r for r in runs if r.id.startswith("dstack-dsr1-mi300x-sglang-")]  # SGLang 0.4.2.post4, DeepSeek-R1, TP 8
    assert len(old) == 9 and {r.max_concurrency for r in old} == {4, 8, 16, 32, 64, 128}
    slow = [(c.measured["tpot"] / c.predicted["tpot"], c.measured["ttft"] / c.predicted["ttft"]) for c in check(old, catalog)]
    assert 1.15 < min(t for t, _ in slow) and max(t for t, _ in slow) < 1.65, slow
    assert 2.15 < min(f for _, f in slow) and max(f for _, f in slow) < 3.45, slow
    note = "FP8 experts on AMD Instinct under SGLang"

    def plan(**over):
        base = {"model": "minimax-m2", "gpu": "mi300x", "tensor_parallel_size": 4, "engine": "sglang"}
        return evaluate(Scenario(**(base | over)), catalog)

    text = next(n for n in plan().notes if n.startswith(note))  # dtype auto: the published FP8 checkpoint
    assert "2.1–2.8× slower" in text and "0.8–1.2× the plan" in text and "1.2–1.6× slower than this at 4–128" in text
    assert f"{sglang.rocm_fp8_moe_layer_s * 1e3:.3f} ms a MoE layer" in text
    assert plan().latency.step.fp8_moe_s == pytest.approx(62 * sglang.rocm_fp8_moe_layer_s)  # MiniMax-M2: 62 MoE layers
    for over in ({"engine": "vllm"}, {"gpu": "h100-sxm", "tensor_parallel_size": 8}, {"dtype": "bf16"}):
        assert not any(n.startswith(note) for n in plan(**over).notes), over
        assert plan(**over).latency.step.fp8_moe_s == 0.0, over
