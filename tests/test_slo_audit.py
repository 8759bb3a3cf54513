"""What an audit of the SLOs, tails and beyond-the-GPU sections (2026-12-06) found, recomputed by hand."""

from conftest import scenario

from calc.evaluate import evaluate


def test_a_wide_fanouts_per_call_quantile_is_never_rounded_to_p100():
    """An audit found 'each call must meet its p100' at 300 and 1,000 parallel calls (two decimals). 0.99^(1/300) =
    0.999966 (tail 0.00335 %, two significant digits rounded down: 0.0033 → p99.9967); 0.99^(1/1000) = 0.99998995
    (tail 0.001005 % → 0.0010 → p99.999); 0.99^(1/200) = 0.99994975 (0.005025 % → 0.0050 → p99.995)."""
    from calc.tails import quantile_label

    assert [quantile_label(0.99 ** (1 / n)) for n in (200, 300, 1000)] == ["p99.995", "p99.9967", "p99.999"]
    assert quantile_label(0.99) == "p99" and quantile_label(0.9995) == "p99.95"


def test_a_quota_on_a_flat_stretch_of_the_conformance_curve_is_said(catalog):
    """An audit: DeepSeek-V3 on 8 H200s at 3 req/s of 4,096 + 1,024 tokens keeps 96.6 % within both SLOs at 1 in
    flight and 88.7–89.9 % from 2 to 16, so the 90 % quota sizes 23 replicas where 89 % sizes 15: said beside the
    count. The seed scenario's count moves by less than a fifth and says nothing."""
    from boundary.view_fleet import slo_lines

    r = evaluate(scenario(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, request_rate=3, input_len=4096,
                          output_len=1024, max_model_len=16384), catalog)  # fmt: skip
    assert r.looser_quota.replicas <= 0.8 * r.fleet.replicas
    assert any(x.startswith("the quota sits on a flat stretch") for x in slo_lines(r))
    seed = evaluate(scenario(request_rate=20), catalog)
    assert not any("flat stretch" in x for x in slo_lines(seed))
