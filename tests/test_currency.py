"""Every cost printed carries its currency, and no table shows 'None' (the issue's price criteria)."""

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calc.scenario import Scenario
from ui.search_tab import LABEL
from ui.state import encode_pin
from ui.tabs import TABS

ROOT = Path(__file__).resolve().parent.parent


def test_every_shipped_gpu_has_a_price_with_currency_date_and_source(catalog):
    for gid, g in catalog.gpus.items():
        assert g.price_per_gpu_hour > 0 and g.price_currency and g.price_date and g.price_source, gid


def test_the_plan_text_prints_costs_with_their_currency():
    p = subprocess.run([sys.executable, "-m", "calc", "plan", "--gpu", "h100-sxm", "--request-rate", "5"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    line = next(x for x in p.stdout.splitlines() if "per million output tokens" in x)
    assert "USD per hour" in line and "USD per million" in line


def test_a_users_own_price_prints_in_its_currency():
    p = subprocess.run([sys.executable, "-m", "calc", "plan", "--gpu", "h100-sxm", "--request-rate", "5",
                        "--gpu-hour-price", "2.5", "--currency", "EUR"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert "2.50 EUR per hour" in p.stdout


@pytest.mark.parametrize("tab", [*TABS, LABEL])
@pytest.mark.parametrize("query", [{}, {"request_rate": "20", "gpu": "h100-sxm"}, {"pin": encode_pin(Scenario(concurrency=8))}])
def test_no_table_shows_none_and_costs_carry_a_currency(tab, query):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.session_state["tab"] = tab
    at.run()
    assert not at.exception
    for df in at.dataframe:
        table = df.value
        if hasattr(table, "data"):  # a Styler
            table = table.data
        assert not table.isna().any().any(), (tab, table)
        assert not table.astype(str).isin(["None", "nan"]).any().any(), (tab, table)
        for col in (c for c in table.columns if "cost" in str(c).lower()):
            # a price that is the spec's own estimate says so after its currency
            assert all(v == "—" or str(v).removesuffix(" (estimate)").endswith(("USD", "EUR")) for v in table[col]), (tab, col)
    for m in at.metric:  # a tile names the currency in its label (room for a few characters in its value)
        if "cost" in m.label.lower():
            assert m.value == "—" or m.label.endswith("(USD)") or m.value.removesuffix(" (estimate)").endswith("USD"), \
                (m.label, m.value)  # fmt: skip


def test_a_reference_price_says_its_date_and_range(capsys):
    """hardware_specs/h100-sxm.yaml: 3.20 USD typical, seen 2.40–6.88 USD, dated 2026-11; the cost line names them
    and asks for a quote; a scenario's own price gets no such words."""
    from boundary.cli import main

    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--request-rate", "5"]) == 0
    cost = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("cost:"))
    assert "reference price of 2026-11, seen from 2.40 USD to 6.88 USD" in cost and "gpu_hour_price" in cost
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--request-rate", "5",
                 "--gpu-hour-price", "2.1"]) == 0  # fmt: skip
    cost = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("cost:"))
    assert "reference price" not in cost
