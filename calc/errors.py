"""Turning validation failures into one line that names the field and what is allowed."""

from __future__ import annotations

from pydantic import ValidationError


class InputError(ValueError):
    """Bad input at a boundary (YAML, config.json, URL, CLI, JSON). `field` names the offending input."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


UNFORESEEN = (TypeError, ValueError, ArithmeticError, LookupError, AttributeError, RecursionError)
"""What a reader of a user's file may raise on a shape nobody foresaw; the boundary says so in one line (each one
found is then refused by name where it arises: tests/test_malformed_model.py)."""


def unforeseen(exc: BaseException) -> str:
    """One line for an UNFORESEEN error out of reading a user's file: the exception's kind and its first words."""
    return short(f"could not be read ({type(exc).__name__}: {exc})", MAX_MESSAGE)


def _allowed(err: dict) -> str:
    """' (allowed: …)' where pydantic knows the choices and its message does not already list them."""
    ctx = err.get("ctx") or {}
    if "expected" in ctx and str(ctx["expected"]) not in err.get("msg", ""):
        return f" (allowed: {ctx['expected']})"
    return ""


MAX_NAME = 60  # a field name or key as echoed back: attacker-chosen keys can be 50 kB
MAX_MESSAGE = 300


def short(text: object, limit: int = MAX_NAME) -> str:
    """One line of at most `limit` characters (a key, a value, a message echoed back)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


SPEC_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
"""Scenario's SpecId: its regex is no message for a person ('String should match pattern …')."""


def message_of(err: dict) -> str:
    """One pydantic error's message for a person: without pydantic's 'Value error, ', a spec id's rule in words."""
    if err["type"] == "string_pattern_mismatch" and err.get("ctx", {}).get("pattern") == SPEC_ID_PATTERN:
        return "spec ids are lower-case: letters, digits, '.', '_', '-' (llama-3.1-8b)"
    bound = BOUNDS.get(err["type"])
    if bound and isinstance((err.get("ctx") or {}).get(bound[0]), (int, float)):  # 'at most 10,000,000', separated
        v = err["ctx"][bound[0]]
        whole = isinstance(v, int) or (float(v).is_integer() and abs(v) <= 1e15)  # as bounds_text writes them
        return f"{bound[1]} {int(v):,}" if whole else f"{bound[1]} {v:g}"
    return err["msg"].removeprefix("Value error, ")


BOUNDS = {"less_than_equal": ("le", "at most"), "less_than": ("lt", "less than"),
          "greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "more than")}
"""pydantic's range errors in the page's words and number format ('Input should be less than or equal to 10000000')."""


def describe(exc: ValidationError, prefix: str = "") -> str:
    """First error of a pydantic ValidationError as 'field: message (allowed …)'; extra errors are counted.
    Compact: names and the message are cut, the input is never echoed (it may be a huge document)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = ".".join(short(p) for p in first["loc"])
    msg = message_of(first)
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return short(f"{prefix}{loc + ': ' if loc else ''}{msg}{_allowed(first)}{more}", MAX_MESSAGE)


def first_field(exc: ValidationError) -> str:
    loc = exc.errors(include_url=False)[0]["loc"]
    return str(loc[0]) if loc else "input"
