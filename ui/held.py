"""The inputs of the sidebar's closed groups: drawn only while their group is open, held by the session and written
to the link by hand meanwhile.

Why: the page drew all ~70 inputs on every rerun, though a reader has one group open at most. Each input is a
message to the browser and a wake-up of the server's event loop: the sidebar was ~44 % of a run's server time
(py-spy, 40 sessions), and a crowd is served one run at a time. But Streamlit 1.67 forgets an input that a run does
not draw: its session-state value and, for an input bound to the URL (`bind="query-params"`), its query parameter
(checked with AppTest). So the fields of the lazy groups (ui/widgets.HELD_GROUPS: the closed GROUPS, Spec
overrides, the search space) are not bound: this module keeps their values in
st.session_state["_held"] and sets or clears their query parameters itself, in the text the share link uses
(boundary.urlstate.url_text), so a link still carries every field that differs from its default.
"""

from __future__ import annotations

import streamlit as st

from boundary.urlstate import plain, url_text
from calc.scenario import Scenario
from ui import state_view

KEY = "_held"


def open_key(group: str) -> str:
    """The session-state key of a lazy group's expander (True while open)."""
    return f"_open {group}"


def fields(groups: dict[str, list[tuple[str, str]]], lazy: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """{group: its field names} for the lazy groups."""
    return {g: tuple(name for name, _ in groups[g]) for g in lazy}


def carry(lazy: dict[str, tuple[str, ...]]) -> dict:
    """At a run's start: the held values, seeded from the validated link on a session's first run, then updated
    from the inputs the previous run drew (an input's state lasts until the end of the first run that does not draw
    it) and from values a callback set (Apply buttons). A closed group's keys then leave session state: a value
    set by a callback would otherwise outlive the input (Streamlit keeps it) and come back when the group closes."""
    held = st.session_state.get(KEY)
    if held is None:
        link = st.session_state.get("_link_values", {})
        held = st.session_state[KEY] = {k: link[k] for names in lazy.values() for k in names if k in link}
    for group, names in lazy.items():
        now = state_view.read(names)
        held.update(now)
        if now and not st.session_state.get(open_key(group)):
            for name in now:
                del st.session_state[name]
    return held


def value(name: str):
    """The field's value while its input is not drawn: the held one, else the default."""
    return st.session_state.get(KEY, {}).get(name, Scenario.model_fields[name].default)


def publish(lazy: dict[str, tuple[str, ...]]) -> None:
    """After the sidebar is drawn: the held values (updated from the inputs this run drew) into the link, one query
    parameter per field that differs from its default, none for the others; only what changed is sent."""
    held = st.session_state[KEY]
    names = {name for group in lazy.values() for name in group}
    held.update(state_view.read(names))
    qp = st.query_params
    present = {k: qp[k] for k in qp if k in names}
    for name in names:
        default = Scenario.model_fields[name].default
        v = held.get(name, default)
        text = None if v == default or (v == "" and default is None) else url_text(v)
        if text is None and name in present:
            del qp[name]
        elif text is not None and present.get(name) != text:
            qp[name] = text


SHOWN_ELSEWHERE = ("model", "gpu", "custom_model")  # the pickers show them


def closed_summary(lazy: dict[str, tuple[str, ...]]) -> str | None:
    """'name = value' for each field of a closed group that differs from its default (escaped Markdown), so a
    reader of a shared link sees what it sets without opening every group; None when there is none."""
    held = st.session_state.get(KEY, {})
    parts = [f"{name} = {url_text(held[name])}" for group, names in lazy.items() if not st.session_state.get(open_key(group))
             for name in names if name in held and name not in SHOWN_ELSEWHERE
             and held[name] != Scenario.model_fields[name].default]  # fmt: skip
    return plain(" · ".join(parts), 2000) if parts else None
