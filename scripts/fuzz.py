"""The long fuzz run: the boundary properties of tests/properties.py with many examples each (default 10,000),
reporting examples, rejections and failures per boundary. The default test suite runs the same properties with
FUZZ_EXAMPLES (40) examples.

    python scripts/fuzz.py [EXAMPLES]
"""

from __future__ import annotations

import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import properties as P  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BOUNDARIES = {
    "scenario fields": (P.scenario_data(), P.check_scenario),
    "valid scenarios": (P.valid_scenario_data(), P.check_scenario),
    "URL query strings": (P.query_params(), P.check_query),
    "user text as Markdown": (st.text(max_size=200), P.check_plain),
    "model config.json": (P.config_bytes(), P.check_config),
    "CLI argument lists": (P.cli_args, P.check_cli),
}


def run(name: str, strategy, check, n: int) -> Counter:
    counts: Counter = Counter()

    @settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def prop(x):
        counts["examples"] += 1
        counts[check(x)] += 1

    try:
        prop()
    except Exception:  # noqa: BLE001 - a failing property is reported, and the next boundary still runs
        counts["failures"] += 1
        traceback.print_exc()
    return counts


def main(n: int = 10_000) -> int:
    failed = 0
    print(f"{'boundary':24s} {'examples':>9s} {'valid':>8s} {'rejected':>9s} {'failures':>9s} {'time':>7s}")
    for name, (strategy, check) in BOUNDARIES.items():
        t = time.time()
        c = run(name, strategy, check, n)
        failed += c["failures"]
        print(f"{name:24s} {c['examples']:9,d} {c['valid']:8,d} {c['rejected']:9,d} {c['failures']:9,d} {time.time() - t:6.0f}s",
              flush=True)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
