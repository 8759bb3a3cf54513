"""The README's "From Python" block runs as printed, and each line with a `# value` comment gives that value (to the
digits shown): the library's entry points and their import paths stay what the README tells a reader."""

import ast
import math
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _block() -> list[str]:
    text = README.read_text()
    section = text[text.index("## From Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1).splitlines()


def _same(got, shown) -> bool:
    if isinstance(shown, tuple):
        return len(got) == len(shown) and all(_same(g, s) for g, s in zip(got, shown, strict=True))
    if isinstance(shown, float):  # as many significant digits as printed
        digits = len(repr(shown).replace(".", "").lstrip("0"))
        return math.isclose(got, shown, rel_tol=0.6 * 10 ** (1 - digits))
    return got == shown


def test_the_python_block_runs_and_prints_what_it_says():
    scope: dict = {}
    checked = 0
    for line in _block():
        code, _, comment = line.partition("  #")
        code = code.strip()
        if not code:
            continue
        try:
            shown = ast.literal_eval(comment.strip()) if comment.strip() else None
        except (ValueError, SyntaxError):
            shown = None  # a comment in words
        if shown is None:
            exec(code, scope)
            continue
        got = eval(code, scope)
        assert _same(got, shown), (code, got, shown)
        checked += 1
    assert checked == 3
