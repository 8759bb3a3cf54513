import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.loader import load_catalog  # noqa: E402
from calc.scenario import Scenario  # noqa: E402


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
