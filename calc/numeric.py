"""Small numerical helpers shared by the model (one bisection for every 'largest value that still fits')."""

from __future__ import annotations

from collections.abc import Callable


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
