"""Session state around the URL: validate an incoming link once per session, keep the last good scenario,
and carry a pinned scenario for comparison."""

from __future__ import annotations

import base64
import json
import time

import streamlit as st
from pydantic import ValidationError

from boundary.urlstate import PAGE_PARAMS, url_text, validate_query, whole_number_text
from calc.errors import describe
from calc.scenario import Scenario
from ui import state_view


def check_link_once(catalog) -> None:
    """On a session's first run: drop malformed or stale parameters from the URL (before the bound widgets read
    it) and remember a warning for each."""
    if st.session_state.get("_link_checked"):
        return
    st.session_state["_link_checked"] = True
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    values, warnings = validate_query(params, known_models=catalog.models, known_gpus=catalog.gpus)
    rejected = {k for k in params if k not in values and k not in PAGE_PARAMS}
    # a spec id read case-insensitively ('Llama-3.1-8B' → 'llama-3.1-8b') goes back into the link as read
    recased = {k: [values[k]] for k in ("model", "gpu") if k in values and params.get(k, [""])[-1] != values[k]}
    recased |= {k: [url_text(values[k])] for k in values if k in params and whole_number_text(params[k][-1] or "")}
    if rejected or recased:  # nothing is bound yet on a session's first run; one message for the whole query, not one a key
        # (each deletion sent the rest of the query string: 999 rejected keys of a 500 kB link were 2.4 s of CPU and
        # 250 MB sent to the browser)
        st.query_params.from_dict({k: recased.get(k, v) for k, v in params.items() if k not in rejected})
        _reseed_from_current_url()
    st.session_state["_link_warnings"] = warnings
    st.session_state["_link_values"] = values


def values_now() -> dict:
    """The Scenario fields as the widgets will hold them, before the widgets are drawn (so the headline can be
    drawn first): their session state once they exist, a closed group's held values (ui/held.py), the validated
    link on a session's first run."""
    held = state_view.read(("_link_values", "_held", *Scenario.model_fields))
    seeded = {**held.pop("_link_values", {}), **held.pop("_held", {})}
    return {k: held[k] if k in held else seeded[k] for k in Scenario.model_fields if k in held or k in seeded}


def _reseed_from_current_url() -> None:
    """Bound widgets seed themselves from the URL the page was opened with, not from st.query_params; make that
    the cleaned URL, so a widget never parses a rejected value (Streamlit 1.67 crashes on `?document_len=inf`:
    OverflowError escapes its int parsing)."""
    from streamlit.runtime.state.session_state_proxy import get_session_state

    with get_session_state().query_params() as qp:
        qp.set_initial_query_params_from_current()


# Streamlit drops a whole query string longer than this or with more parameters (sanitize_query_string in
# streamlit/runtime/state/query_params.py, 1.67) before the script sees it: only the browser still has the link.
DROPPED_LINK_CHARS, DROPPED_LINK_PARAMS = 512 * 1024, 1000
_DROPPED_LINK_JS = """<script>
const q = window.parent.location.search;
if (q.length > MAX_CHARS || q.split("&").length > MAX_PARAMS) {
  const box = window.parent.document.createElement("div");
  box.setAttribute("role", "alert");
  box.style.cssText = "position:fixed;top:3.5rem;left:50%;transform:translateX(-50%);z-index:1000;max-width:44rem;"
    + "padding:.75rem 1rem;border-radius:.5rem;background:#fff8e1;color:#5d4037;border:1px solid #ffb300;"
    + "font:14px sans-serif";
  box.textContent = "This link has " + q.split("&").length.toLocaleString() + " parameters and "
    + q.length.toLocaleString() + " characters; Streamlit reads at most SHOWN_PARAMS parameters and SHOWN_CHARS characters, so the "
    + "page opened with the defaults instead. A planner link needs a few dozen parameters at most.";
  window.parent.document.body.appendChild(box);
}
</script>"""
for _name, _value in (("SHOWN_PARAMS", f"{DROPPED_LINK_PARAMS:,}"), ("SHOWN_CHARS", f"{DROPPED_LINK_CHARS:,}"),
                      ("MAX_CHARS", str(DROPPED_LINK_CHARS)), ("MAX_PARAMS", str(DROPPED_LINK_PARAMS))):  # fmt: skip
    _DROPPED_LINK_JS = _DROPPED_LINK_JS.replace(_name, _value)


def warn_if_link_dropped() -> None:
    """On a session's first run with no parameters: let the browser say so if it holds a link Streamlit dropped
    (the server never sees it). Constant text only; the script reads the link's size, never its content."""
    if st.session_state.get("_link_size_checked") or len(st.query_params):
        return
    st.session_state["_link_size_checked"] = True
    with st.sidebar:
        st.iframe(_DROPPED_LINK_JS, height=1)  # an HTML string: embedded as-is, same origin (our constant text only)


SHOWN_LINK_WARNINGS = 10


def link_warnings() -> list[str]:
    """What the link check said, the first SHOWN_LINK_WARNINGS of it and a count of the rest: a link may hold 999
    rejected parameters, whose 166 kB of warnings were sent again on every rerun."""
    said = st.session_state.get("_link_warnings", [])
    if len(said) <= SHOWN_LINK_WARNINGS:
        return said
    rest = len(said) - SHOWN_LINK_WARNINGS + 1
    return [*said[: SHOWN_LINK_WARNINGS - 1], f"… and {rest:,} more parameters or values ignored"]


def scenario_from_widgets(values: dict) -> tuple[Scenario, str | None]:
    """The Scenario of the current widget values, or the last good one with the reason it was kept."""
    try:
        s = Scenario.model_validate(values)
    except ValidationError as e:
        return st.session_state.get("_last_good", Scenario()), describe(e)
    return s, None


def remember(s: Scenario) -> None:
    st.session_state["_last_good"] = s


def encode_pin(s: Scenario) -> str:
    raw = json.dumps(s.changed(), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_pin(text: str) -> tuple[Scenario | None, str | None]:
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if not isinstance(data, dict):
            raise ValueError
        return Scenario.model_validate(data), None
    except ValidationError as e:
        return None, "pin: " + describe(e)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, "pin: not a scenario pinned by this planner"


def pin_current(s: Scenario) -> None:
    st.query_params["pin"] = encode_pin(s)


def unpin() -> None:
    if "pin" in st.query_params:
        del st.query_params["pin"]


FIRST_PAINT_PAUSE_S = 0.25
RERUN_PAINT_PAUSE_S = 0.06


def let_the_headline_paint() -> float:
    """Hold the rest of the run back for a moment, once the headline's elements are sent.

    The browser applies the elements of a run as they arrive, but a burst is laid out in one commit, and plotly
    draws synchronously inside it: a headline sent together with the charts is painted only when the last chart
    is drawn (scripts/benchmark.py: 3.3× a toy page from a link, 1.6× after an input change). A short pause after
    the headline gives it a commit and a paint of its own: a session's first run (page load from a link, when the
    browser also compiles the charts' code) waits longer than a rerun. The charts arrive that much later."""
    first = not st.session_state.get("_painted")
    st.session_state["_painted"] = True
    pause = FIRST_PAINT_PAUSE_S if first else RERUN_PAINT_PAUSE_S
    time.sleep(pause)
    return pause
