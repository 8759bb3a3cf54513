"""The long fuzz run: the boundary properties of tests/properties.py with many examples each (default 10,000),
reporting examples, rejections and failures per boundary, and the slowest example of each. Every example must finish
under the cost bound of tests/properties.py (1 s of CPU, +200 MB peak memory): a slower one is a failure. The default test suite runs the same properties with
FUZZ_EXAMPLES (40) examples.

    python scripts/fuzz.py [EXAMPLES] [NAME]   # NAME: only the boundaries whose name contains it ("valid scenarios")
"""

from __future__ import annotations

import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from scripts import usage  # noqa: E402

if __name__ == "__main__":  # --help and a bad option are answered before the imports below (Streamlit warns on them)
    ARGV = usage.args(__doc__)
    EXAMPLES = usage.number(ARGV[0], "EXAMPLES", int) if ARGV else 10_000
    ONLY = ARGV[1] if len(ARGV) > 1 else ""
import properties as P  # noqa: E402
import properties_hostile as H  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BOUNDARIES = {
    "scenario fields": (P.scenario_data(), P.check_scenario),
    "valid scenarios": (P.valid_scenario_data(), P.check_scenario),
    "a tab's rerun (valid scenarios)": (P.tab_case(), P.check_tab),
    "URL query strings": (P.query_params(), P.check_query),
    "user text as Markdown": (st.text(max_size=200), P.check_plain),
    "model config.json": (P.config_bytes(), P.check_config),
    "CLI argument lists": (P.cli_args, P.check_cli),
    "pasted vLLM logs": (H.log_text(), H.check_log),
    "spec YAML files": (H.spec_yaml(), H.check_spec_yaml),
    "CLI special files": (H.special_files, H.check_special_file),
    "malformed model fields": (H.malformed_model(), H.check_malformed_model),
}
# check name -> its cost-bound key in P.SLOWEST
SLOW_KEY = {"check_scenario": "scenario", "check_tab": "a tab's rerun", "check_query": "URL query", "check_plain": "Markdown",
            "check_config": "config.json", "check_cli": "CLI", "check_log": "vLLM log",
            "check_spec_yaml": "spec YAML file", "check_special_file": "CLI special files",
            "check_malformed_model": "malformed model"}  # fmt: skip


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


def main(n: int = 10_000, only: str = "") -> int:
    failed, slowest = 0, []
    print(f"{'boundary':24s} {'examples':>9s} {'valid':>8s} {'rejected':>9s} {'failures':>9s} {'time':>7s} {'slowest':>8s}")
    for name, (strategy, check) in BOUNDARIES.items():
        if only not in name:
            continue
        t = time.time()
        c = run(name, strategy, check, n)
        failed += c["failures"]
        slow_s, example = P.SLOWEST.get(SLOW_KEY[check.__name__], (0.0, ""))
        print(f"{name:24s} {c['examples']:9,d} {c['valid']:8,d} {c['rejected']:9,d} {c['failures']:9,d} {time.time() - t:6.0f}s"
              f" {slow_s * 1000:6.0f}ms", flush=True)  # fmt: skip
        slowest.append((name, slow_s, example))
    print(f"\nSlowest example per boundary (CPU; the bound is {P.CPU_BOUND_S:.0f} s and +{P.RSS_BOUND_BYTES / 1e6:.0f} MB):")
    for name, slow_s, example in slowest:
        print(f"  {name:24s} {slow_s * 1000:7.1f} ms  {example[:110]}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(EXAMPLES, ONLY))
