"""Layout of a chart that reads on any width: titles wrapped at spaces, legends at the figure's foot, log axes with
their ticks written out (charts.py's builders and ui/search_chart.py use them)."""

from __future__ import annotations

import math

from boundary import fmt

TITLE_LINE = 46
"""Characters a chart title's line holds in a half-width column at 900 px: longer titles break there (plotly cuts a
title at the figure's edge, never wrapping it)."""


def wrap_title(title: str, width: int = TITLE_LINE) -> str:
    """The title broken into lines of at most `width` characters at spaces (plotly's <br>); the text is the caller's
    own (spec names, numbers), never raw user input."""
    lines, line = [], ""
    for word in title.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line])


FOOT_LEGEND = dict(orientation="h", yref="container", y=0, yanchor="bottom")
"""Legends at the figure's foot, not the plot's: a narrow page wraps one a row an entry, and plotly drew it over the
axis title at y = −0.25 of the plot (its margin grows to hold one at the foot instead)."""


def log_ticks(values) -> dict:
    """Ticks for a log axis over `values`: 1-2-5 steps where it spans under two decades, else the decades, each
    written out with separators (plotly's own mix bare mantissas, '5, 2, 100', with '10k')."""
    pos = [v for v in values if v > 0]
    if not pos:
        return {}
    lo, hi = math.floor(math.log10(min(pos))), math.ceil(math.log10(max(pos)))
    def within(steps):
        return [m * 10.0**k for k in range(lo, hi + 1) for m in steps if min(pos) / 1.01 <= m * 10.0**k <= max(pos) * 1.01]

    ticks = within((1,)) if hi - lo > 2 else within((1, 2, 5))
    if len(ticks) < 3:  # decades too few inside the range (16 … 2,869 holds 100 and 1,000): 1-2-5 steps
        ticks = within((1, 2, 5))
    if len(ticks) < 3:  # a narrow range: four ticks from end to end, two significant digits each
        a, b = min(pos), max(pos)
        ticks = sorted({float(fmt.sig(a * (b / a) ** (i / 3), 2).replace(",", "")) for i in range(4)})
    return dict(tickvals=ticks, ticktext=[f"{t:,.0f}" if t == round(t) else fmt.sig(t, 2) for t in ticks])
