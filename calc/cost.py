"""Cost per million output tokens: what the GPUs cost in an hour over the output tokens they serve in it.

    cost per million output tokens = cost per hour / (requests/s · output_len · 3600 s/h) · 10⁶

One expression for every caller: the fleet (calc.replicas, as a calc.expr formula whose text names each term) and
the search (calc.search, over numpy arrays).
"""

from __future__ import annotations

import numpy as np

from calc.expr import E
from calc.units import HOUR_S

TOKENS_PER_MILLION = 1e6


def cost_per_million_output_tokens(cost_per_hour, requests_per_s, output_len):
    """[currency per 10⁶ output tokens]. Floats, numpy arrays (a zero rate gives inf or nan, without a warning) or
    calc.expr E's (then the hour and the million are named in the formula's text too)."""
    hour_s, million = HOUR_S, TOKENS_PER_MILLION
    if isinstance(cost_per_hour, E):
        hour_s, million = E(HOUR_S, "s/h"), E(TOKENS_PER_MILLION, "tokens per million")
    with np.errstate(divide="ignore", invalid="ignore"):
        return cost_per_hour / (requests_per_s * output_len * hour_s) * million
