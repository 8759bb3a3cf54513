import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.loader import load_catalog  # noqa: E402
from calc.scenario import Scenario  # noqa: E402

VLLM_0_11 = "0.11.0"
"""engine_version for a test whose scenario was chosen to show a mechanism under vLLM's costs before asynchronous
scheduling (0.8–0.13: per-sequence CPU work on every step), which the newer releases hide."""


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


def scenario(**kw) -> Scenario:
    """Factory with the defaults of DESIGN.md (the seed's Qwen2.5-7B on an RTX 4090)."""
    return Scenario(**kw)


def page_tables(at) -> list:
    """Every table the page drew, as DataFrames of its (Markdown-escaped) cells: st.table elements and the Markdown
    tables ui.tabs.table writes (boundary.markdown.md_table)."""
    import re

    import pandas as pd

    out = [t.value for t in at.table]
    for m in at.markdown:
        lines = [line for line in m.value.splitlines() if line.startswith("|")]
        if len(lines) >= 2 and re.fullmatch(r"\|(:?-+:?\|)+", lines[1]):
            head, *rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines[:1] + lines[2:]]
            out.append(pd.DataFrame(rows, columns=head))
    return out


def field(at, name: str):
    """A Scenario field's value on the page after a run: its input's state where the run drew it, else what the
    session holds for a closed sidebar group (ui/held.py), else the default."""
    if name in at.session_state:
        return at.session_state[name]
    held = at.session_state["_held"] if "_held" in at.session_state else {}
    return held.get(name, Scenario.model_fields[name].default)


def open_group_of(at, name: str):
    """Open the lazy sidebar group that holds field `name` (ui/held.py) and rerun; a field of an always-drawn
    group needs nothing."""
    from ui.held import open_key
    from ui.widgets import HELD_GROUPS

    group = next((g for g, names in HELD_GROUPS.items() if name in names), None)
    if group is not None:
        at.session_state[open_key(group)] = True
        at.run()
    return at
