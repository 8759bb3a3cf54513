"""Exports for a design document: a Markdown report and CSV of the curves (plain text builders, no I/O)."""

from __future__ import annotations

import csv
import io

from boundary.text import render_text, verdict
from boundary.urlstate import cli_command, plain, query_string
from calc.formulas import formulas


def markdown_report(r, link_base: str = "") -> str:
    s = r.scenario
    lines = [
        f"# Capacity plan: {plain(r.model_name)} on {plain(r.gpu_name)}",
        "",
        f"**Verdict:** {verdict(r)}",
        "",
        f"Scenario link: `{link_base}?{query_string(s)}`" if link_base else f"Scenario query: `?{query_string(s)}`",
        "",
        f"Command line: `{cli_command(s)}`",
        "",
        "## Numbers",
        "",
        "```",
        render_text(r),
        "```",
        "",
        "## Formulas",
        "",
    ]
    for name, text in formulas(r).items():
        lines += [f"**{name}**", "", "```", text, "```", ""]
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
