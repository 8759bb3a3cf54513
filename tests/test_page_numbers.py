"""The CLI JSON holds every number the page shows: each headline metric on every tab, read back from the page's
formatted text, is found among the Report's numbers (`python -m calc plan --json`) at the precision it was shown.

A shown figure is rounded: "15.1 ms" is any value in [15.05, 15.15) ms. The Report keeps base units, so each
shown unit maps to candidates (ms → s, GiB → B, % → fraction, "k" → ×1,000) and one of them must round to it."""

from __future__ import annotations

import json
import math
import re

import pytest
from test_page_finish import run

from boundary.cli import main as cli_main
from ui.tabs import TABS

NUMBER = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*(k|M)?\s*(ms|µs|s|GiB|MiB|KiB|GB|B|%|×|x|tok/s|tokens/s|req/s)?")
SCALE = {"ms": 1e-3, "µs": 1e-6, "s": 1.0, "GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "GB": 1e9, "B": 1.0, "%": 0.01}
SCENARIOS = [
    {},
    {"request_rate": "20", "gpu_hour_price": "2.5"},
    {"model": "nemotron-h-8b", "gpu": "h100-sxm", "input_len": "8192"},
]


def report_numbers(query: dict) -> list[float]:
    """Every number in the CLI's JSON for the same scenario (flags are the URL's field names in kebab-case)."""
    import contextlib
    import io

    argv = ["plan", "--json"] + [a for k, v in query.items() for a in ("--" + k.replace("_", "-"), v)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(argv) in (0, None)
    found: list[float] = []

    def walk(x):
        if isinstance(x, bool):
            return
        if isinstance(x, (int, float)) and math.isfinite(x):
            found.append(float(x))
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads(out.getvalue()))
    return found


def shown_as(value: float, text: str) -> bool:
    """Whether `value` rounds to `text` (its decimals, or its last significant integer digit)."""
    digits = text.replace(",", "").lstrip("-")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    shown = float(digits) * (-1 if text.startswith("-") else 1)
    half = 0.5 * 10**-decimals
    if decimals == 0 and shown:  # "1,200" may be any of 1,150–1,250: trailing zeros may be rounding
        half = 0.5 * 10 ** (len(digits) - len(digits.rstrip("0")))
    return abs(value - shown) <= half * (1 + 1e-9)


def found(text: str, unit: str | None, mult: str | None, numbers: list[float]) -> bool:
    factor = {"k": 1e3, "M": 1e6, None: 1.0}[mult]
    for v in numbers:
        for scale in {SCALE.get(unit or "", 1.0), 1.0}:
            if shown_as(v / scale / factor, text):
                return True
    return False


@pytest.mark.parametrize("query", SCENARIOS, ids=lambda q: ",".join(f"{k}={v}" for k, v in q.items()) or "default")
def test_every_metric_on_every_tab_is_in_the_report(query):
    numbers = report_numbers(query)
    missing = []
    checked = 0
    for tab in TABS[:5]:
        at = run(query, tab)
        for m in at.metric:
            for match in NUMBER.finditer(str(m.value)):
                text, mult, unit = match.groups()
                checked += 1
                if not found(text, unit, mult, numbers):
                    missing.append((tab, m.label, m.value))
    assert checked >= 10
    assert not missing, missing


def test_the_rounding_rule_by_hand():
    assert shown_as(0.015_08, "0.0151") and not shown_as(0.015_2, "0.0151")
    assert shown_as(7_504, "7,504") and shown_as(1_180, "1,200") and not shown_as(1_300, "1,200")
    assert found("15.1", "ms", None, [0.015_08]) and found("6.41", "GiB", None, [6_884_950_016])
