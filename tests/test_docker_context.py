"""The Dockerfile's COPY sources are in the build context: .dockerignore is an allow-list (`*`, then `!path`), and a
COPY of a path it leaves out fails `docker build` with "not found" (engine_specs/ and the error table once were).
The matching is Docker's for these simple patterns: the last pattern that matches a path (itself or a folder above
it) decides, `!` re-including."""

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ignored(path: str, patterns: list[str]) -> bool:
    verdict = False
    for raw in patterns:
        keep = raw.startswith("!")
        pat = raw.removeprefix("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if pat.startswith("**/"):
            hit = any(fnmatch.fnmatch(p, pat[3:]) for p in parts)
        else:
            hit = any(fnmatch.fnmatch(p, pat) and p.count("/") == pat.count("/") for p in prefixes)
        if hit:
            verdict = not keep
    return verdict


def test_every_copied_path_is_in_the_build_context():
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]  # fmt: skip
    sources = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if m := re.match(r"COPY\s+(?!--from)(.+)", line.strip()):
            sources += m.group(1).split()[:-1]  # the last word is the destination
    assert sources, "no COPY line read"
    for src in sources:
        path = src.rstrip("/").replace("[n]", "n")  # errors.jso[n]: copied when present
        assert not _ignored(path, patterns), f"{src} is copied but .dockerignore leaves it out of the context"
        assert (ROOT / path).exists(), src


def test_the_allow_list_still_leaves_the_rest_out():
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]  # fmt: skip
    for path in ("tests/test_app.py", "tests/data/benchmarks/INDEX.md", "docs/speed-history.md", ".git/HEAD",
                 "calc/__pycache__/x.pyc"):  # fmt: skip
        assert _ignored(path, patterns), path
