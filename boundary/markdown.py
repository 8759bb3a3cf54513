"""Exports for a design document: a Markdown report and CSV of the curves (plain text builders, no I/O)."""

from __future__ import annotations

import csv
import io
import re

from boundary.text import render_text
from boundary.urlstate import ZWSP, cli_command, query_string
from boundary.view import formulas, verdict
from boundary.view_compare import changed_inputs, compare_table


def _ticks(text: str, at_least: int) -> str:
    """A backtick run longer than any inside `text` (CommonMark: a code span or fence ends at an equal run)."""
    return "`" * max(at_least, max(map(len, re.findall("`+", text)), default=0) + 1)


def code_span(text: str) -> str:
    """`text` as inline code, whatever backticks it holds ("a ` b" → ``a ` b``)."""
    ticks = _ticks(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""  # CommonMark strips one space each side
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str) -> str:
    """`text` as a fenced code block, whatever backtick runs its lines hold."""
    ticks = _ticks(text, 3)
    return f"{ticks}\n{text}\n{ticks}"


MD_ACTIVE = set("\\`*_[]<>!#|~$&{}")
"""Characters that can start Markdown or HTML inline syntax; '.', '-', '(' and ',' cannot in mid-line text."""


def md_text(text: object, limit: int = 400) -> str:
    """User text as inert Markdown that still reads cleanly in the raw file: one line, only the characters that can
    form syntax escaped ('Qwen2.5-7B-Instruct' stays as it is), autolinks broken with a zero-width space."""
    s = " ".join(str(text).splitlines())
    if len(s) > limit:
        s = s[:limit] + "…"
    s = s.replace("://", ":" + ZWSP + "//").replace("@", "@" + ZWSP)
    s = re.sub(r"(?i)(w)(ww\.)", "\\1" + ZWSP + "\\2", s)
    s = "".join("\\" + ch if ch in MD_ACTIVE else ch for ch in s)
    return re.sub(r"^(\s*)([-+=]|\d+[.)])(?=\s|$)", lambda m: m.group(1) + "\\" + m.group(2), s)  # no list or heading


def md_table(t) -> str:
    """A view.Table as a GitHub-flavoured Markdown table, every cell inert text (md_text escapes '|' as well); the
    columns aligned as `t.alignment` says (as in the text output). The page draws its static
    tables this way: st.table converts a DataFrame to Arrow on every rerun, 7 ms a run for the Memory tab's three."""
    rule = "|" + "|".join(":---" if a == "l" else "---:" for a in t.alignment) + "|"

    def row(cells) -> str:
        return "| " + " | ".join(md_text(c) for c in cells) + " |"

    return "\n".join([row(t.columns), rule, *map(row, t.rows)])


def markdown_report(r, link_base: str = "", check=None, pinned=None) -> str:
    """The plan as Markdown; `check`: the replica count's simulated check where it was run (calc plan runs it);
    `pinned`: the Report pinned as A on the page, compared with this one (B) in a section of its own."""
    s = r.scenario
    link = f"Scenario link: {code_span(f'{link_base}?{query_string(s)}')}" if link_base else \
        f"Scenario query: {code_span(f'?{query_string(s)}')}"  # fmt: skip
    lines = [
        f"# Capacity plan: {md_text(r.model_name)} on {md_text(r.gpu_name)}",
        "",
        f"**Verdict:** {md_text(verdict(r))}",
        "",
        link,
        "",
        f"Command line: {code_span(cli_command(s))}",
        "",
        "## Numbers",
        "",
        fence(render_text(r, check=check)),
        "",
    ]
    if pinned is not None:
        a_link = f"{link_base}?{query_string(pinned.scenario)}"
        lines += ["## Compared with A (pinned)", "", f"A: {code_span(a_link)}", "",
                  f"Inputs that differ: {changed_inputs(pinned.scenario, s, md_text)}", "",
                  md_table(compare_table(pinned, r)), ""]  # fmt: skip
    lines += [
        "## Formulas",
        "",
    ]
    for name, text in formulas(r).items():
        lines += [f"**{md_text(name)}**", "", fence(text), ""]
    lines += ["## Caveats", "", "- Floors are roofline lower bounds; estimates scale them by the stated mfu/mbu.",
              "- Activation, non-torch and CUDA-graph memory are estimates unless set from a vLLM log.",
              f"- {r.prefix.tenant_note}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def curves_csv(tables: dict[str, list]) -> str:
    """Several lists of dataclass points in one CSV: a `curve` column names the table."""
    buf = io.StringIO()
    w = csv.writer(buf)
    for name, points in tables.items():
        if not points:
            continue
        cols = list(vars(points[0]))
        w.writerow(["curve", *cols])
        for p in points:
            w.writerow([name, *(getattr(p, c) for c in cols)])
        w.writerow([])
    return buf.getvalue()
