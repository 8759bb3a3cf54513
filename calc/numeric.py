"""Small numerical helpers shared by the model (one bisection for every 'largest value that still fits')."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def largest_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """Largest n in [lo, hi] with pred(n), for pred true up to some point and false after it; lo − 1 when pred(lo)
    is false. O(log(hi − lo)) calls."""
    if not pred(lo):
        return lo - 1
    if pred(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if pred(mid) else (lo, mid)
    return lo


def falling_root(f: Callable, lo, f_lo, hi, f_hi, steps: int):
    """The x in [lo, hi] where f crosses zero, for f(lo) > 0 > f(hi) and one crossing between: `steps` steps of
    regula falsi, Illinois variant (the kept end's value halved when the same end moves twice, so both ends close
    in, superlinearly). Scalars or numpy arrays, elementwise, the same arithmetic either way (so the search over
    arrays and evaluate() over scalars agree to rounding). Returns the last point tried."""
    scalar = np.ndim(lo) == 0 and np.ndim(hi) == 0
    lo, f_lo, hi, f_hi = (np.asarray(v, dtype=float) for v in (lo, f_lo, hi, f_hi))
    x, side = lo, np.zeros(np.shape(lo))
    for _ in range(steps):
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        fx = np.asarray(f(float(x) if scalar else x), dtype=float)
        moves_hi = fx * f_hi > 0  # x lies on hi's side of the root
        f_lo = np.where(moves_hi & (side < 0), f_lo / 2, f_lo)
        f_hi = np.where(~moves_hi & (side > 0), f_hi / 2, f_hi)
        lo, f_lo = np.where(moves_hi, lo, x), np.where(moves_hi, f_lo, fx)
        hi, f_hi = np.where(moves_hi, x, hi), np.where(moves_hi, fx, f_hi)
        side = np.where(moves_hi, -1.0, 1.0)
    return float(x) if scalar else x


ERF_SERIES_BELOW = 3.0
ERF_SERIES_TERMS = 64
ERFC_FRACTION_TERMS = 64


def phi_precise(z):
    """Φ(z) = erfc(−z / √2) / 2 over numpy arrays, to about 1e-14 absolute (math.erfc is the yardstick,
    tests/test_numeric.py). |x| < 3: erf's Taylor series, Σ (−1)ⁿ x²ⁿ⁺¹ / (n! (2n + 1)) · 2 / √π, 64 terms (its
    largest term, about 170 at x = 3, bounds the cancellation); |x| ≥ 3: erfc's continued fraction
    e^(−x²) / √π · 1 / (x + ½ / (x + 1 / (x + 3/2 / (x + …)))), 64 levels from the bottom up. Abramowitz & Stegun
    7.1.5 and 7.1.14."""
    import numpy as np

    x = -np.asarray(z, dtype=float) / math.sqrt(2)
    out = np.empty(x.shape)
    near = np.abs(x) < ERF_SERIES_BELOW
    if near.any():
        v = x[near]
        v2, term, total = v * v, v.copy(), v.copy()
        for n in range(1, ERF_SERIES_TERMS):
            term = term * (-v2) / n
            total = total + term / (2 * n + 1)
        out[near] = 1 - 2 / math.sqrt(math.pi) * total  # erfc = 1 − erf
    far = ~near
    if far.any():
        v = np.abs(x[far])
        t = v.copy()
        for k in range(ERFC_FRACTION_TERMS, 0, -1):
            t = v + (k / 2) / t
        with np.errstate(under="ignore"):
            tail = np.exp(-v * v) / (math.sqrt(math.pi) * t)
        out[far] = np.where(x[far] > 0, tail, 2 - tail)  # erfc(−x) = 2 − erfc(x)
    return out / 2


def percent_text(x: float) -> str:
    """A share in percent with the decimals it needs, never '100%' for one below one: 0.9 → '90%', 0.999 → '99.9%',
    0.8126 → '81.3%', 0.999999999999 → '99.9999999999%' (a quota of 0.9995 read '100%' beside a search's
    '99.95%'). The one formatting of quotas and the shares set against them, in calc's reasons and on every surface."""
    for decimals in range(11):
        text = f"{x * 100:.{decimals}f}"
        exact = float(text) / 100 == x
        close = decimals >= 1 and abs(float(text) / 100 - x) < 5e-4
        if (exact or close) and (x >= 1 or not text.startswith("100")):
            return text + "%"
    return "99.9999999999%" if x < 1 else f"{x * 100:.0f}%"
