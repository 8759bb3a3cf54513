"""Numerical helpers of calc.numeric."""


def test_phi_precise_is_math_erfc_to_1e_13():
    """calc.numeric.phi_precise against math.erfc over ±40 σ and random points: the search decides near its quota
    with it, so its error bounds what is left to the scalar (PRECISE_MARGIN 1e-12)."""
    import math

    import numpy as np

    from calc.numeric import phi_precise

    z = np.concatenate([np.linspace(-40, 40, 40_001), np.random.default_rng(0).normal(0, 5, 20_000), [0.0, -3.0 * math.sqrt(2)]])
    expected = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in z])
    assert np.max(np.abs(phi_precise(z) - expected)) < 1e-13
    assert phi_precise(np.array([0.0]))[0] == 0.5  # the series at 0 is 0 exactly
    # and the A&S approximation it replaces near the quota misses by up to 7.5e-8
    from calc.search_capacity import phi_approx

    assert 1e-8 < np.max(np.abs(phi_approx(z) - expected)) < 1.5e-7
