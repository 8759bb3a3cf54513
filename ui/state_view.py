"""A per-key view of session state for the widgets that only ask about their own key.

Streamlit 1.67's number_input, selectbox and text_input (elements/widgets/*.py) each build the whole filtered
session state, every key with its value presented, to ask one question: does my own key hold None? With this page's
~70 keyed inputs that is ~7,500 look-ups a run, O(widgets × keys): ~20 ms of CPU in a ~100 ms run, and a crowd is
served one run at a time. install() hands those three modules a session state whose `filtered_state` answers `in`
and `[]` for one key, the same answers the full dict gives (tests/test_state_view.py checks it on the page's own
state); everything else goes to Streamlit's object unchanged.
"""

from __future__ import annotations

from typing import Any

_PATCHED = ("number_input", "selectbox", "text_widgets")


class _OneKey:
    """`key in view` and `view[key]` as SessionState.filtered_state answers them, computed for that key only.
    User keys only: the widgets ask with the key they were given, which is never a widget id or internal."""

    def __init__(self, safe) -> None:
        self._safe = safe

    def __contains__(self, key: str) -> bool:
        with self._safe._lock:
            return key in self._safe._state

    def __getitem__(self, key: str) -> Any:
        with self._safe._lock:
            return self._safe._state[key]


class _Session:
    def __init__(self, safe) -> None:
        self._safe = safe

    @property
    def filtered_state(self) -> _OneKey:
        return _OneKey(self._safe)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._safe, name)


def install() -> None:
    """Once per process; idempotent."""
    import importlib

    for name in _PATCHED:
        module = importlib.import_module(f"streamlit.elements.widgets.{name}")
        original = module.get_session_state
        if getattr(original, "_one_key", False):
            continue

        def get_session_state(original=original) -> _Session:
            return _Session(original())

        get_session_state._one_key = True
        module.get_session_state = get_session_state


def read(keys, safe=None) -> dict[str, Any]:
    """{key: value} for the user keys among `keys` that session state holds, the values `st.session_state[key]`
    gives: under one lock, in one pass. Through the proxy every `key in st.session_state` is a failed or successful
    `[]` (Mapping.__contains__), each with its own context look-up, key check and lock: the page reads ~70 fields
    three times a run, ~6 % of a crowd's CPU. `safe`: the session's SafeSessionState (default: this run's)."""
    from streamlit.runtime.state.session_state_proxy import get_session_state

    safe = safe if safe is not None else get_session_state()
    safe._yield_callback()  # as each proxied access does: a stop request lands here
    with safe._lock:
        state = safe._state
        return {k: state[k] for k in keys if k in state}
