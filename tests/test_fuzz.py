"""Property-based tests over every boundary (a few examples here; scripts/fuzz.py runs 10,000 per boundary),
plus the numerical properties: monotone where they should be, and honest when nothing fits."""

import os

import properties as P
import properties_hostile as H
import pytest
from conftest import scenario
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calc.evaluate import evaluate

N = int(os.environ.get("FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FUZZ
@given(P.scenario_data())
def test_scenario_boundary(data):
    P.check_scenario(data)


@FUZZ
@given(P.valid_scenario_data())
def test_valid_scenarios_give_a_report(data):
    assert P.check_scenario(data) == "valid"


@FUZZ
@given(P.tab_case())
def test_each_tabs_rerun_is_within_the_cost_bound(case):
    P.warm_tabs()
    assert P.check_tab(case) == "valid"


@FUZZ
@given(P.query_params())
def test_url_boundary(params):
    P.check_query(params)


@FUZZ
@given(st.text(max_size=200))
def test_user_text_is_inert_markdown(text):
    P.check_plain(text)


@FUZZ
@given(P.config_bytes())
def test_config_json_boundary(raw):
    P.check_config(raw)


@FUZZ
@given(P.cli_args)
def test_cli_boundary(argv):
    P.check_cli(argv)


@FUZZ
@given(H.log_text())
def test_pasted_log_boundary(text):
    H.check_log(text)


@FUZZ
@given(H.spec_yaml())
def test_spec_file_boundary(raw):
    H.check_spec_yaml(raw)


@FUZZ
@given(H.malformed_model())
def test_malformed_model_boundary(case):
    H.check_malformed_model(case)


@settings(max_examples=min(N, 16), deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(H.special_files)
def test_special_files_boundary(case):
    H.check_special_file(case)


def test_the_cost_bound_itself_fails_a_slow_example(monkeypatch):
    monkeypatch.setattr(P, "CPU_BOUND_S", 0.01)  # the bound is read at each call; 10⁷ additions take ≈ 0.1 s
    slow = P.bounded("test")(lambda x: sum(range(x)))
    with pytest.raises(AssertionError, match="s of CPU"):
        slow(10**7)


# --- numerical properties ----------------------------------------------------------------------------------------
@settings(max_examples=N, deadline=None, derandomize=True)
@given(st.sampled_from(["qwen2.5-7b-instruct", "llama-3.1-8b", "gemma-3-27b", "deepseek-v2-lite", "gpt-oss-20b"]),
       st.sampled_from(["rtx-4090", "h100-sxm", "l40s", "mi300x"]), st.floats(0.3, 0.95), st.floats(0.0, 0.05))  # fmt: skip
def test_more_memory_never_fewer_blocks(catalog, model, gpu, util, more):
    a = evaluate(scenario(model=model, gpu=gpu, gpu_memory_utilization=util), catalog).memory.num_gpu_blocks
    b = evaluate(scenario(model=model, gpu=gpu, gpu_memory_utilization=util + more), catalog).memory.num_gpu_blocks
    assert b >= a


@settings(max_examples=N, deadline=None, derandomize=True)
@given(st.integers(1, 500), st.integers(0, 500), st.integers(1, 8192))
def test_more_concurrency_never_faster_steps(catalog, c, extra, input_len):
    a = evaluate(scenario(concurrency=c, input_len=input_len, max_num_seqs=1024), catalog).latency.decode.estimate_s
    b = evaluate(
        scenario(concurrency=c + extra, input_len=input_len, max_num_seqs=1024), catalog
    ).latency.decode.estimate_s
    assert b >= a


@settings(max_examples=max(5, N // 4), deadline=None, derandomize=True)
@given(st.floats(0.5, 200), st.floats(0.02, 0.2), st.floats(0.5, 1.0))
def test_stricter_slo_never_fewer_replicas(catalog, rate, tpot, shrink):
    loose = evaluate(scenario(request_rate=rate, slo_tpot_s=tpot), catalog).fleet.replicas
    strict = evaluate(scenario(request_rate=rate, slo_tpot_s=tpot * shrink), catalog).fleet.replicas
    assert (strict or 10**9) >= (loose or 10**9)


def test_cannot_serve_one_request_says_so(catalog):
    r = evaluate(scenario(model="llama-3.1-70b", gpu="rtx-4090", tensor_parallel_size=4, max_model_len=131072), catalog)
    assert not r.fit.fits
    assert any("estimated maximum model length" in x or "exceed the usable memory" in x for x in r.fit.reasons)


def test_sparse_looking_flops_warn(catalog):
    g = catalog.gpus["h100-sxm"]
    bad = g.model_copy(update={"fp8_tflop_per_s": 4 * g.bf16_tflop_per_s})
    assert bad.sparse_warnings and not g.sparse_warnings


@pytest.mark.parametrize("raw", [b"{" * 100_000, b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000])
def test_deeply_nested_json_is_refused_cleanly(raw):
    assert P.check_config(raw) == "rejected"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(P.query_params())
def test_the_page_opens_from_any_link(params):
    """The real page (AppTest) with a generated query string: no exception, whatever the link says."""
    from test_app import run

    at = run({k: v[-1] for k, v in params.items() if k})
    assert not at.exception, at.exception
