"""The scripts' one command-line rule: -h / --help prints the script's docstring and exits 0; an option the script
does not take, or a positional argument that is not what it expects, exits 2 with one line naming it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def args(doc: str | None, options: tuple[str, ...] = (), *, valued: tuple[str, ...] = ()) -> list[str]:
    """sys.argv[1:] once checked: `options` are flags, `valued` options take the next argument."""
    argv = sys.argv[1:]
    if "-h" in argv or "--help" in argv:
        try:
            print((doc or "").strip(), flush=True)
        except BrokenPipeError:  # `--help | head`: the reader has what it wanted
            sys.stdout = None
        raise SystemExit(0)
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a.startswith("-") and not _number(a):
            if a in valued:
                skip = True
            elif a not in options:
                fail(f"unknown option {a}; allowed: {', '.join((*options, *valued, '--help'))}")
    return argv


def number(text: str, what: str, kind: Callable[[str], float] = float, low: float = 0.0):
    """A positional number, or exit 2 naming it: '1.25' → 1.25 for STEP."""
    try:
        value = kind(text)
    except ValueError:
        fail(f"{what}: expected a number, got {text[:40]!r}")
    if not value > low:
        fail(f"{what}: expected a number above {low:g}, got {text[:40]!r}")
    return value


def fail(message: str) -> None:
    print(f"{Path(sys.argv[0]).name}: {message}", file=sys.stderr)
    raise SystemExit(2)


def _number(a: str) -> bool:
    try:
        float(a)
    except ValueError:
        return False
    return True
