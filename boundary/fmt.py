"""The one formatting layer: every number the page, the CLI text, the Markdown export and the charts show goes
through these functions, so a quantity reads the same everywhere.

Rules: thousands separators on every number of four or more digits; significant digits by quantity (times and
rates 3, memory in GiB 2 decimals, shares 1 decimal of a percent); the unit after every number; every cost with
its currency; a value that does not exist is "—" followed by the reason, never None, NaN, inf or a negative size.
"""

from __future__ import annotations

import math

from calc.numeric import percent_text
from calc.units import GB, GiB, KiB, MiB

DASH = "—"


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def missing(reason: str = "") -> str:
    """'—' with the reason it is absent."""
    return f"{DASH} ({reason})" if reason else DASH


def split_missing(text: str) -> tuple[str, str]:
    """missing()'s text back as ('—', reason); any other text as (text, ''). For a narrow tile, which shows the dash
    as the value and the reason under it rather than cutting '— (SLOs not…' short."""
    if text.startswith(f"{DASH} (") and text.endswith(")"):
        return DASH, text[len(DASH) + 2 : -1]
    return text, ""


SIG_FLOOR = 1e-6
"""sig() writes smaller magnitudes as '< 0.000001': beyond six decimals a figure is noise to a reader."""


def sig(x: float, digits: int = 3) -> str:
    """`digits` significant digits, thousands separated, no exponent: 15.0776 → '15.1', 8031.2447 → '8,031',
    0.000123 → '0.000123'. Integers past the significant digits are kept (19,173,961 stays whole)."""
    if not _finite(x):
        return missing("not finite")
    if x == 0:
        return "0"
    if abs(x) < SIG_FLOOR:  # 8.6e-84 req/s of goodput is none: not 84 zeros
        return f"> −{SIG_FLOOR:.6f}" if x < 0 else f"< {SIG_FLOOR:.6f}"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    text = f"{x:,.{decimals}f}"
    rounded = abs(float(text.replace(",", "")))
    if decimals and rounded and math.floor(math.log10(rounded)) > mag:  # 9.996 → '10.0', not '10.00'
        text = f"{x:,.{decimals - 1}f}"
    return text


def plural(n: int | float, word: str, words: str | None = None) -> str:
    """'1 sequence', '16 sequences', '1,024 requests', '7.5 sequences' (a mean): the count with separators and the
    word it needs."""
    return f"{mean_count(n)} {word if mean_count(n) == '1' else (words or word + 's')}"


def mean_count(n: int | float) -> str:
    """A count that may be a mean: whole with separators, else to one decimal: 64 → '64', 7.46 → '7.5'."""
    if not _finite(n) or abs(n - round(n)) < 0.05:
        return count(n)
    return f"{n:,.1f}"


def count(n: int | float) -> str:
    """A whole number with separators: 19173961 → '19,173,961'."""
    if not _finite(n):
        return missing("not finite")
    return f"{round(n):,}"


def compact(n: float) -> str:
    """A count for a narrow headline tile: exact below a million, then '2.02 M'."""
    if not _finite(n):
        return missing("not finite")
    return count(n) if abs(n) < 1e6 else f"{sig(n / 1e6)} M"


def fixed(x: float, decimals: int) -> str:
    return f"{x:,.{decimals}f}" if _finite(x) else missing("not finite")


def pct(x: float, decimals: int = 1) -> str:
    """A share: 0.925 → '92.5%'."""
    return f"{x * 100:,.{decimals}f}%" if _finite(x) else missing("no pool")


def quota(x: float) -> str:
    """A conformance quota as the user set it: '90%', '99.9%', never '100%' for one below one (calc.numeric)."""
    return percent_text(x)


def ratio(x: float, digits: int = 3) -> str:
    """5.3 → '5.3×'."""
    return f"{sig(x, digits)}×" if _finite(x) else missing("not finite")


def gib(b: float, decimals: int = 2) -> str:
    """Memory as vLLM and nvidia-smi print it: 6.41 GiB."""
    return f"{fixed(b / GiB, decimals)} GiB" if _finite(b) else missing("not finite")


def size(b: float) -> str:
    """Bytes in the largest binary unit that keeps a leading digit: 57,344 B → '56.0 KiB', 7.2e9 → '6.71 GiB'."""
    if not _finite(b):
        return missing("not finite")
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(b) >= scale:
            return f"{sig(b / scale)} {unit}"
    return f"{count(b)} B"


def bytes_exact(b: float) -> str:
    """57,344 B."""
    return f"{count(b)} B"


def seconds(t: float) -> str:
    """A duration in the unit that suits it: 12 µs, 14.4 ms, 5.33 s, 1,234 s."""
    if not _finite(t):
        return missing("not finite")
    a = abs(t)
    if a == 0:
        return "0 ms"
    if a < 1e-3:
        return f"{sig(t * 1e6)} µs"
    if a < 1:
        return f"{sig(t * 1e3)} ms"
    if a < LONG_S:
        return f"{sig(t)} s"
    if a < 48 * 3600:
        return f"{sig(t / 3600)} h"
    return f"{sig(t / 86400)} days"


LONG_S = 10_000.0
"""From 10,000 s on, hours (and from 48 h, days): '313,174 ms' and '5,110,866,982 ms' read as '313 s' and '59.2 days'."""


def ms(t: float, digits: int = 3) -> str:
    """Milliseconds (tables of latencies): 0.0144 → '14.4 ms'; from 100 s on, the unit that suits it (seconds)."""
    if not _finite(t):
        return missing("not finite")
    return f"{sig(t * 1e3, digits)} ms" if abs(t) < 100 else seconds(t)


def ms_value(t_ms: float, digits: int = 3) -> str:
    """A value already in ms (vllm bench serve's keys), as ms() gives it."""
    return ms(t_ms / 1e3, digits) if _finite(t_ms) else missing("not finite")


def rate(x: float, unit: str, digits: int = 3, *, alike: tuple = ()) -> str:
    """'1,134 tok/s', '0.33 req/s'; a request rate below 0.1 a second per minute or per hour ('6.41 req/h', not
    '0.00178 req/s', which a headline tile cuts to '0.00178 r…'). `alike`: the rates shown beside it (a sentence's
    'goodput X of Y', a table's column), which take one unit, the largest's ('5.74 req/min of 0.106 req/s' read as
    5.74 of 0.106)."""
    if not _finite(x):
        return missing("not finite")
    ref = max((abs(v) for v in (x, *alike) if _finite(v)), default=abs(x))
    if unit == "req/s" and 0 < ref < 0.1:
        return f"{sig(x * 60, digits)} req/min" if ref * 60 >= 1 else f"{sig(x * 3600, digits)} req/h"
    return f"{sig(x, digits)} {unit}"


def tokens(n: float) -> str:
    return f"{count(n)} tokens"


def bandwidth(bytes_per_s: float) -> str:
    return f"{sig(bytes_per_s / GB)} GB/s" if _finite(bytes_per_s) else missing("not finite")


def flops(flop_per_s: float) -> str:
    return f"{sig(flop_per_s / 1e12)} TFLOP/s" if _finite(flop_per_s) else missing("not finite")


def params(n: float) -> str:
    """Parameter counts, decimal: 7.62e9 → '7.62 B'; 494e6 → '494 M'."""
    if not _finite(n):
        return missing("not finite")
    return f"{sig(n / 1e9)} B" if n >= 1e9 else f"{sig(n / 1e6)} M"


def money(x: float | None, currency: str | None, digits: int = 3) -> str:
    """Every cost with its ISO currency code: '1.31 USD' (no '$': Markdown renderers read a pair as math)."""
    if x is None or not _finite(x):
        return missing("no price: set gpu_hour_price")
    if not currency:
        return missing("currency unknown")
    return f"{sig(x, digits)} {currency}"


def yes_no(b: bool | None) -> str:
    return {True: "yes", False: "no", None: DASH}[b]


def opt(value, fn, reason: str, *args) -> str:
    """fn(value) when the value exists and is finite, else '— (reason)'."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing(reason)
    return fn(value, *args)


def sentence(text: str) -> str:
    """'held-out error: …' → 'Held-out error: ….' (a line of the CLI's text as a caption on the page)."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
