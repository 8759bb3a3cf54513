"""Turning validation failures into one line that names the field and what is allowed."""

from __future__ import annotations

from pydantic import ValidationError


class InputError(ValueError):
    """Bad input at a boundary (YAML, config.json, URL, CLI, JSON). `field` names the offending input."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _allowed(err: dict) -> str:
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        return f" (allowed: {ctx['expected']})"
    return ""


MAX_NAME = 60  # a field name or key as echoed back: attacker-chosen keys can be 50 kB
MAX_MESSAGE = 300


def short(text: object, limit: int = MAX_NAME) -> str:
    """One line of at most `limit` characters (a key, a value, a message echoed back)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def describe(exc: ValidationError, prefix: str = "") -> str:
    """First error of a pydantic ValidationError as 'field: message (allowed …)'; extra errors are counted.
    Compact: names and the message are cut, the input is never echoed (it may be a huge document)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = ".".join(short(p) for p in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return short(f"{prefix}{loc + ': ' if loc else ''}{msg}{_allowed(first)}{more}", MAX_MESSAGE)


def first_field(exc: ValidationError) -> str:
    loc = exc.errors(include_url=False)[0]["loc"]
    return str(loc[0]) if loc else "input"
