"""SGLang's overlap schedule hides the scheduler's work on a batch (reading the request, forming and launching the
prompt batch) behind the step in flight; with no step in flight the GPU waits for it: EngineSpec.idle_launch_s
(docs/calibration-history.md (20)) — by hand, as properties of the simulation and the closed forms, and against the
published runs whose pattern it carries."""

import numpy as np
import pytest
from conftest import scenario
from test_scheduler import MS, const_10ms, engine, workload

from calc.evaluate import evaluate
from calc.latency import IDLE_LAUNCH
from calc.scheduler import simulate


def test_one_client_by_hand():
    """test_scheduler's overlap case (3 requests of 100 + 5 tokens, 10 ms steps, 2 ms of front end) with 3 ms of
    idle launch: the first arrives at 2 ms to an idle engine, launch 2 → 5 ms, prefill to 15 ms (TTFT 15 ms), decodes
    to 55 ms. Its successor, sent at 55 ms, waits for the step launched with the finished request in it (55 → 65 ms),
    which the scheduler waits on too: launch 65 → 68 ms, prefill to 78 ms, TTFT 78 − 55 = 23 ms = 20 + 3."""
    w = workload(num_prompts=3, max_concurrency=1)
    r = simulate(engine(engine="sglang", request_overhead_s=2 * MS, overlap_schedule=True, idle_launch_s=3 * MS), w,
                 const_10ms)  # fmt: skip
    assert r.ttft_s.tolist() == pytest.approx([15 * MS, 23 * MS, 23 * MS])
    assert r.e2e_s.tolist() == pytest.approx([55 * MS, 63 * MS, 63 * MS])
    assert r.bench_summary()["mean_tpot_ms"] == pytest.approx(10)  # decode steps never wait for it


def test_a_burst_pays_it_once():
    """Four prompts at once, one prompt step for all (400 ≤ 2,048 tokens): every first token 3 ms later, not 12."""
    w = workload(num_prompts=4)
    base = dict(engine="sglang", request_overhead_s=2 * MS, overlap_schedule=True)
    plain = simulate(engine(**base), w, const_10ms).ttft_s
    idle = simulate(engine(**base, idle_launch_s=3 * MS), w, const_10ms).ttft_s
    assert (idle - plain).tolist() == pytest.approx([3 * MS] * 4)


def test_only_the_overlap_schedule_carries_it():
    """Without the overlap schedule (vLLM, or SGLang's --disable-overlap-schedule) the scheduler's work is in the
    step time already: the constant changes nothing."""
    w = workload(num_prompts=3, max_concurrency=1)
    for kw in (dict(engine="vllm"), dict(engine="sglang")):
        plain = simulate(engine(**kw, request_overhead_s=2 * MS), w, const_10ms).ttft_s
        idle = simulate(engine(**kw, request_overhead_s=2 * MS, idle_launch_s=3 * MS), w, const_10ms).ttft_s
        assert idle.tolist() == pytest.approx(plain.tolist())


def test_hidden_under_load():
    """Eight clients with lengths ±50 %: a request mostly arrives while others decode, so its batch is formed behind
    the step in flight. No first token is delayed by more than the constant, and the median one by far less."""
    w = workload(num_prompts=200, max_concurrency=8, output_len=40, range_ratio=0.5, seed=5)
    base = dict(engine="sglang", request_overhead_s=2 * MS, overlap_schedule=True)
    plain = simulate(engine(**base), w, const_10ms).ttft_s
    idle = simulate(engine(**base, idle_launch_s=3 * MS), w, const_10ms).ttft_s
    assert np.max(idle - plain) <= 3 * MS + 1e-9
    assert abs(np.median(idle) - np.median(plain)) < 1 * MS


def _sglang(catalog, concurrency, engine="sglang", version="0.5.14", **kw):
    return evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm", engine=engine, engine_version=version,
                             input_len=128, output_len=128, concurrency=concurrency, **kw), catalog)  # fmt: skip


def test_closed_form_at_one_request(catalog):
    """At one request in flight the first token carries it, by name; at eight it is hidden; vLLM has none."""
    spec = catalog.engines["sglang"].at("0.5.14")
    assert spec.overlap_schedule and spec.idle_launch_s > 0
    one, eight = _sglang(catalog, 1).latency, _sglang(catalog, 8).latency
    parts = dict(one.e2e_parts)
    assert parts[IDLE_LAUNCH] == pytest.approx(spec.idle_launch_s)
    assert sum(parts.values()) == pytest.approx(one.e2e_s)
    assert IDLE_LAUNCH in one.formulas["ttft_s"].text()
    assert IDLE_LAUNCH not in dict(eight.e2e_parts)
    assert catalog.engines["vllm"].idle_launch_s == 0.0
    assert IDLE_LAUNCH not in dict(_sglang(catalog, 1, engine="vllm", version="0.11.0").latency.e2e_parts)


def test_closed_form_matches_the_simulation_at_one_request(catalog):
    """Fixed lengths at one client: the closed form's first token (front end hidden in the extra step, the launch,
    the prompt step) is the simulation's median within 3 %."""
    from calc import bench

    r = _sglang(catalog, 1)
    sim = bench.serve(r, num_prompts=20, max_concurrency=1)
    assert np.median(sim.ttft_s) == pytest.approx(r.latency.ttft_s, rel=0.03)


def _massed_one_client(catalog):
    from boundary.bench_data import load_runs
    from calc.engine_spec import version_tuple

    return [r for r in load_runs(catalog)[0] if r.id.startswith("massed-") and r.scenario.engine == "sglang"
            and r.max_concurrency == 1 and version_tuple(r.scenario.engine_version) >= (0, 5, 10)]  # fmt: skip


def test_the_constant_is_the_calibration_runs_median_gap(catalog):
    """Measured, not fitted (history (21)): over the calibration part's runs of SGLang 0.5.10 and later at one
    client, the median of (median TTFT − the planned prompt step at the mean prompt − median TPOT)."""
    gaps = []
    for r in _massed_one_client(catalog):
        if r.part != "calibration":
            continue
        L = round(r.scenario.input_len)
        prompt_s = evaluate(r.scenario, catalog).latency.step.terms(L, L * (L + 1) / 2, 0, 0).total_s
        gaps.append((r.measured["median_ttft_ms"] - r.measured["median_tpot_ms"]) / 1e3 - prompt_s)
    assert len(gaps) == 11
    assert catalog.engines["sglang"].idle_launch_s == pytest.approx(np.median(gaps), abs=1e-5)


@pytest.mark.parametrize("run_id, measured_ms", [
    ("massed-nemotron-nano-8b-h100-sglang-c1", 23.24),  # calibration part
    ("massed-deepseek-r1-distill-llama-8b-h100-sglang-c1", 22.74),  # held out
    ("massed-deepseek-r1-distill-llama-8b-rtxpro6000-sglang-c1", 25.55),  # held out
    ("massed-qwen3-32b-rtxpro6000-sglang-c1", 98.15),  # held out
])  # fmt: skip
def test_published_one_client_first_tokens(catalog, run_id, measured_ms):
    """Massed Compute's SGLang 0.5.14 / 0.5.15 runs at one client (random prompts of ~74 tokens), replayed: each
    median first token within 10 % (8 B models planned +20 … +25 % before the term and the refit)."""
    from boundary.bench_check import check

    (run,) = [r for r in _massed_one_client(catalog) if r.id == run_id]
    assert run.measured["median_ttft_ms"] == pytest.approx(measured_ms, abs=0.01)
    (c,) = check([run], catalog)
    assert abs(c.error("ttft")) < 0.10
