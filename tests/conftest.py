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
