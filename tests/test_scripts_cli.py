"""The scripts as a person runs them: --help prints the usage and exits 0, without running anything (a benchmark, a
refit that rewrites engine_specs, a browser); an option a script does not take exits 2 with one line naming it."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ["benchmark", "calibrate", "closed_form", "crowd", "fuzz", "screenshots"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_prints_the_usage_and_runs_nothing(name):
    p = run(f"scripts/{name}.py", "--help")
    assert p.returncode == 0, p.stderr
    assert f"python scripts/{name}.py" in p.stdout and "Traceback" not in p.stderr
    bad = run(f"scripts/{name}.py", "--no-such-option")
    assert bad.returncode == 2 and bad.stderr.startswith(f"{name}.py: unknown option --no-such-option")
    assert bad.stderr.count("\n") == 1  # one line: nothing imported and logged before it (fuzz.py's Streamlit)
    head = subprocess.run(f"{sys.executable} scripts/{name}.py --help | head -1", shell=True, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert head.stdout.startswith(p.stdout.splitlines()[0]) and "Traceback" not in head.stderr  # a closed pipe


@pytest.mark.parametrize("args, named", [
    (("calibrate", "refit"), "unknown command 'refit'"),
    (("calibrate", "fit", "0.5"), "STEP: expected a number above 1"),
    (("calibrate", "fit-only", "gemm_share"), "fit-only: name constants to refit"),
    (("crowd", "--processes"), "--processes: give a count"),
    (("crowd", "forty"), "SESSIONS: expected a number"),
    (("fuzz", "many"), "EXAMPLES: expected a number"),
])  # fmt: skip
def test_a_bad_argument_exits_2_naming_it(args, named):
    p = run(f"scripts/{args[0]}.py", *args[1:])
    assert p.returncode == 2 and named in p.stderr and p.stderr.count("\n") == 1
