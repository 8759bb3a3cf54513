"""SGLang 0.5.2–0.5.15 compile the q/k L2-norm Triton kernel of gated-DeltaNet and KDA layers again for every
prompt-token count a server has not run (`T: tl.constexpr` in sglang/srt/layers/attention/fla/l2norm.py of those
wheels; `do_not_specialize=["T"]` from 0.5.16): the step term `compile_s` (docs/calibration-history.md (18)) — by hand,
against the published run its value comes from, and as properties of the simulation."""

import numpy as np
import pytest
from conftest import scenario

from calc import bench
from calc.evaluate import evaluate

# Qwen3-Next-80B-A3B on eight B200, SGLang 0.5.6, ShareGPT at one request (sglang-cookbook-qwen3-next-b200.yaml,
# calibration part): median TTFT 132.88 ms measured, 30.52 ms planned before the term → 102.36 ms a compile
COMPILE_S = (132.88 - 30.52) / 1e3


def _next(catalog, version, engine="sglang", **kw):
    s = scenario(model="qwen3-next-80b-a3b", gpu="b200", tensor_parallel_size=8, engine=engine, engine_version=version,
                 input_len=338, output_len=216, concurrency=1, **kw)  # fmt: skip
    return evaluate(s, catalog)


def test_the_engine_constant_is_the_published_runs_gap(catalog):
    spec = catalog.engines["sglang"]
    assert spec.qk_l2norm_compile_s == pytest.approx(COMPILE_S, abs=1e-4)
    assert spec.qk_l2norm_fixed_in == "0.5.16"
    assert catalog.engines["vllm"].qk_l2norm_compile_s == 0.0  # vLLM 0.11's l2norm takes T at run time


@pytest.mark.parametrize("version, charged", [("0.5.2", True), ("0.5.6", True), ("0.5.8", True), ("0.5.15.post1", True),
                                              ("0.5.16", False), ("0.5.23", False), ("latest", False)])  # fmt: skip
def test_charged_on_the_releases_whose_kernel_specialises(catalog, version, charged):
    assert _next(catalog, version).latency.step.compile_s == (pytest.approx(COMPILE_S, abs=1e-4) if charged else 0.0)


def test_only_models_whose_prefill_calls_the_kernel(catalog):
    """Mamba-2 (Nemotron-3-Nano) and attention-only models never call it; vLLM's copy does not specialise."""
    for model in ("nemotron-3-nano-30b-a3b", "llama-3.1-8b", "qwen3-30b-a3b"):
        r = evaluate(scenario(model=model, gpu="h100-sxm", engine="sglang", engine_version="0.5.8"), catalog)
        assert r.latency.step.compile_s == 0.0, model
    assert _next(catalog, "0.11.0", engine="vllm").latency.step.compile_s == 0.0


def test_closed_form_adds_it_to_a_prompt_step_once(catalog):
    """0.5.15 and 0.5.16 share every other cost (SGLang's '0.5.10 and later' release): at one request in flight the
    first token differs by exactly one compile, the decode step not at all; the prompt step names the term."""
    old, new = _next(catalog, "0.5.15"), _next(catalog, "0.5.16")
    assert old.latency.ttft_s - new.latency.ttft_s == pytest.approx(COMPILE_S, abs=1e-4)
    assert old.latency.tpot_s == pytest.approx(new.latency.tpot_s)
    assert old.latency.prefill_terms.compile_s == pytest.approx(COMPILE_S, abs=1e-4)
    assert old.latency.decode_terms.compile_s == 0.0
    assert "kernel compile (new prompt length)" in old.latency.prefill_terms.expr().text()


def test_published_first_token_within_a_quarter(catalog):
    """The closed form at the run's mean lengths (338 / 216 tokens) against the 132.88 ms it measured."""
    assert _next(catalog, "0.5.6").latency.ttft_s == pytest.approx(0.13288, rel=0.25)


def test_simulation_compiles_each_count_once(catalog):
    """Fixed lengths, one request at a time: only the first prompt step meets a new count, so the first request's TTFT
    is one compile longer than the rest; after the fix none is. Varied lengths (±50 %) meet a new count nearly every
    time: the median TTFT is about one compile longer than on 0.5.16."""
    old, new = _next(catalog, "0.5.15"), _next(catalog, "0.5.16")
    fixed_old = bench.serve(old, num_prompts=6, max_concurrency=1).ttft_s
    fixed_new = bench.serve(new, num_prompts=6, max_concurrency=1).ttft_s
    assert fixed_old[0] - fixed_old[1] == pytest.approx(COMPILE_S, abs=2e-3)
    assert fixed_old[1:] == pytest.approx(fixed_new[1:], abs=1e-6)
    assert fixed_new[0] == pytest.approx(fixed_new[1], abs=2e-3)
    varied_old = bench.serve(old, num_prompts=40, max_concurrency=1, range_ratio=0.5).ttft_s
    varied_new = bench.serve(new, num_prompts=40, max_concurrency=1, range_ratio=0.5).ttft_s
    assert np.median(varied_old) - np.median(varied_new) == pytest.approx(COMPILE_S, rel=0.1)
