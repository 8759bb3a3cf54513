"""A scenario as a link and as a command line; an incoming query string validated field by field.

Only fields that differ from the defaults appear. A malformed or stale parameter is dropped with a warning that
names it and the default used instead; it never raises.
"""

from __future__ import annotations

import math
import re
import shlex
from urllib.parse import urlencode

from pydantic import ValidationError

from boundary.args import bounds_text
from calc.errors import describe
from calc.scenario import Scenario

PAGE_PARAMS = ("pin", "tab")  # page state that is not a Scenario field: the pinned scenario, the open tab
MAX_SHOWN = 160
MAX_MESSAGE_SHOWN = 400  # our own messages, which may quote user input
ZWSP = "\u200b"


def plain(text: object, limit: int = MAX_SHOWN) -> str:
    """Text that may carry user input made inert for a Markdown renderer (st.markdown, st.warning, captions…):
    one line, truncated to `limit`, every ASCII punctuation backslash-escaped (so `![img](http://…)`,
    `[link](javascript:…)`, `<script>`, `:icon:` and `$math$` stay literal text)."""
    s = " ".join(str(text).splitlines())
    if len(s) > limit:
        s = s[:limit] + "…"
    # GitHub-flavoured autolinks (http://…, www.…, a@b.c) form even from escaped text: a zero-width space breaks them
    s = s.replace("://", ":" + ZWSP + "//").replace("@", "@" + ZWSP)
    s = re.sub(r"(?i)(w)(ww\.)", "\\1" + ZWSP + "\\2", s)
    return "".join("\\" + ch if (ch.isascii() and not ch.isalnum() and ch != " ") else ch for ch in s)


def _default(name: str):
    return Scenario.model_fields[name].default


def _default_text(name: str) -> str:
    """'16', 'rtx-4090'; 'unset' for an optional field (the sidebar's word), never 'None'."""
    d = _default(name)
    return "unset" if d is None else repr(d)


def validate_query(params: dict[str, list[str]], *, known_models=(), known_gpus=()) -> tuple[dict, list[str]]:
    """Per-field validation of a query string (every value as a list, repeated keys allowed).

    Returns (valid values as typed Scenario data, warnings). A field that fails alone is dropped; the rest must
    also hold together (custom_model with model=custom), else the offending field is dropped too.
    """
    values: dict = {}
    warnings: list[str] = []
    for key, raw in params.items():
        if key in PAGE_PARAMS:
            continue
        if key not in Scenario.model_fields:
            warnings.append(f"unknown parameter '{key}' was ignored")
            continue
        if len(raw) > 1:
            warnings.append(f"{key} appeared {len(raw)} times; the last value was used")
        value = raw[-1] if raw else ""
        if value == "" and _default(key) is None:
            continue
        known = {"model": known_models, "gpu": known_gpus}.get(key, ())
        if value not in known and value.lower() in known:  # 'Llama-3.1-8B' typed from the Hub's spelling
            warnings.append(f"{key}: '{value}' read as '{value.lower()}' (spec ids are lower-case)")
            value = value.lower()
        parsed = _parse(key, value)
        whole = whole_number_text(value)
        if isinstance(parsed, str) and whole is not None and not isinstance(again := _parse(key, whole), str):
            warnings.append(f"{key}: '{value[:20]}' read as {int(whole):,}")  # '1e3' where a whole number is wanted
            parsed = again
        if isinstance(parsed, str):
            warnings.append(f"{parsed} — '{value}' ignored, using the default ({_default_text(key)})")
            continue
        values[key] = getattr(parsed, key)
    for key, known in (("model", known_models), ("gpu", known_gpus)):
        if key in values and known and values[key] not in known and values[key] != "custom":
            warnings.append(f"{key}: unknown spec '{values.pop(key)}' — using the default ({_default_text(key)})")
    if values.get("model") == "custom" and not values.get("custom_model"):
        warnings.append("model: 'custom' needs a custom_model parameter — using the default model")
        values.pop("model")
    return values, warnings


def whole_number_text(value: str) -> str | None:
    """'1e3' → '1000': a whole number written with an exponent (a link typed by hand), else None."""
    if len(value) > 20 or "e" not in value.lower():
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return str(int(x)) if math.isfinite(x) and x.is_integer() and abs(x) < 1e15 else None


def _parse(key: str, value: str) -> Scenario | str:
    """The Scenario with this one field set, or the error text."""
    extra = {"custom_model": "x"} if key == "model" else {}
    try:
        return Scenario.model_validate({key: value} | extra)
    except ValidationError as e:
        text, bounds = describe(e), bounds_text(key)  # the range, as the command line's errors give it
        return f"{text} (allowed: {bounds})" if bounds and "allowed" not in text else text


def query_string(s: Scenario) -> str:
    return urlencode({k: url_text(v) for k, v in s.changed().items()})


def url_text(v) -> str:
    """A field's value as the link and the command line write it: true/false, whole floats without '.0'."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def cli_command(s: Scenario) -> str:
    """The equivalent `python -m calc plan …` call (model and gpu always named)."""
    parts = ["python", "-m", "calc", "plan", "--model", s.model, "--gpu", s.gpu]
    for k, v in s.changed().items():
        if k in ("model", "gpu"):
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            parts.append(flag if v else "--no-" + k.replace("_", "-"))
        else:
            parts += [flag, url_text(v)]
    return " ".join(shlex.quote(p) for p in parts)


def page_base(url: str | None) -> str:
    """The page's own address without its query, safe to put in a Markdown link: the browser's path is whatever the
    visitor opened (Streamlit serves the page under any path), so every character outside an ordinary path is
    percent-encoded: a path like `/p)[Click](https:evil.example` cannot close the link and open another."""
    from urllib.parse import quote, urlsplit

    if not url:
        return ""
    parts = urlsplit(url.split("?")[0].split("#")[0])
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ""
    netloc = quote(parts.netloc, safe=":@.-_~[]")
    return f"{parts.scheme}://{netloc}{quote(parts.path or '/', safe='/-._~%')}"  # 'host?x' → 'host/?x'
