"""ui.state_view answers `in` and `[]` as Streamlit's full filtered session state does, on the page's own state."""

import pytest
from streamlit.elements.widgets import number_input, selectbox, text_widgets

from calc.scenario import Scenario
from tests.test_app import NON_DEFAULT, run
from ui import state_view
from ui.state_view import _OneKey


@pytest.mark.parametrize("query", [{}, NON_DEFAULT], ids=["defaults", "every-field-changed"])
def test_the_view_gives_the_full_states_answers(query):
    safe = run(query).session_state._state
    full = safe._state.filtered_state  # Streamlit's own: every key, presented
    view = _OneKey(safe)
    if not query:  # the case the widgets ask about is there (every field set, no key holds None: the uploader of
        assert any(v is None for v in full.values())  # several files holds [] when empty)
    for key, value in full.items():
        assert key in view and view[key] == value, key
    for key in [*Scenario.model_fields, "nope", "upload"]:
        assert (key in view) == (key in full), key


def test_the_widgets_that_build_the_full_state_get_the_view():
    state_view.install()
    state_view.install()  # idempotent: one wrapper, not two
    for module in (number_input, selectbox, text_widgets):
        assert module.get_session_state._one_key
        assert not getattr(module.get_session_state.__defaults__[0], "_one_key", False)


@pytest.mark.parametrize("query", [{}, NON_DEFAULT], ids=["defaults", "every-field-changed"])
def test_one_pass_reads_what_the_proxy_reads(query):
    safe = run(query).session_state._state
    full = safe._state.filtered_state
    keys = [*Scenario.model_fields, "_link_values", "nope", "upload"]
    assert state_view.read(keys, safe) == {k: full[k] for k in keys if k in full}
    assert list(state_view.read(Scenario.model_fields, safe)) == [k for k in Scenario.model_fields if k in full]
