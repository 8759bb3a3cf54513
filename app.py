"""LLM serving capacity planner — the Streamlit page.

Top-down: specs → link check → Scenario (from the widgets' state, or the link on a first run) → evaluate() → the
headline, drawn before anything else → the sidebar widgets (each keyed by its Scenario field; URL-bound, or, in a
closed group, not drawn and held by the session, ui/held.py) → the rest of the headline and the open tab. No
arithmetic here beyond formatting; every number comes from calc/.
"""

import gc
import time

# Imported before any session code: sessions that start together on a cold server otherwise import these in
# parallel script threads and one of them sees "partially initialized module 'numpy'".
import numpy  # noqa: F401
import pandas  # noqa: F401
import plotly.graph_objects  # noqa: F401
import streamlit as st

from boundary.urlstate import MAX_MESSAGE_SHOWN, page_base, plain
from calc.catalog import model_summary
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.loader import load_catalog
from calc.resolve import resolve
from calc.scenario import Scenario
from ui import held, search_tab, state, state_view, tabs, upkeep
from ui.headline import headline_rest, headline_top
from ui.widgets import HELD_GROUPS, current_values, gpu_options, model_options, sidebar_rest, sidebar_specs

st.set_page_config(page_title="LLM serving capacity planner", page_icon="🧮", layout="wide")
# Headline tiles size their text to their column (cqi: 1 % of its width), so six a row keep their units on a
# laptop's screen ('57.02 GiB' was cut to '57.02 …' at 1,280 px). A constant style, no user text.
st.html("""<style>
[data-testid="stColumn"]:has(> div [data-testid="stMetric"]) { container-type: inline-size; }
@media (max-width: 1100px) {  /* six a row would leave ~90 px a tile beside the sidebar: three a row instead */
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] > div [data-testid="stMetric"]) { flex-wrap: wrap; }
  [data-testid="stColumn"]:has(> div [data-testid="stMetric"]) { flex: 1 1 calc(33% - 1rem); min-width: calc(33% - 1rem); }
}
[data-testid="stMetricValue"] { font-size: clamp(1.1rem, 21cqi, 2.25rem); }
[data-testid="stMetricLabel"] p { font-size: clamp(0.7rem, 9.5cqi, 0.875rem); white-space: normal; }
[data-testid="stMetricDelta"] { font-size: clamp(0.65rem, 8.5cqi, 0.875rem); }
@container (max-width: 170px) { [data-testid="stMetricLabel"] { min-height: 2.6em; align-items: flex-start; } }
/* Tables and charts side by side stack when the page is narrow (an 800 px window beside the sidebar drew three
   tables over one another, and cut chart titles); a table still wider than its column scrolls inside it. */
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] :is(table, .stPlotlyChart)) { flex-wrap: wrap; }
[data-testid="stColumn"]:has(table) { min-width: min(100%, 17rem); }
[data-testid="stColumn"]:has(.stPlotlyChart) { min-width: min(100%, 24rem); }
[data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
/* the Latency tab's two wide tables (five columns, and the benchmark's four of "4,068 ms"): side by side only where
   each gets 26rem, stacked at 1,024 px (a page audit found numbers cut and wrapped there) */
.st-key-latency_tables [data-testid="stColumn"] { min-width: min(100%, 26rem); }
/* seven tabs need ~690 px: narrower, they wrap onto a second row rather than hide the last behind a scroll arrow */
@media (max-width: 1300px) { [role="tablist"] { flex-wrap: wrap; row-gap: 0.25rem; } }
</style>""")


@st.cache_resource
def catalog():
    """Parse the spec YAML once per process, with what the pickers list (sorted, labelled); calc/ is fast enough
    to stay uncached."""
    cat = load_catalog()
    summaries = {sid: model_summary(m) for sid, m in cat.models.items()}
    return cat, (model_options(cat, summaries), gpu_options(cat))


@st.cache_resource
def once_per_process() -> bool:
    """Streamlit runs a full gc.collect() after every script run (runner.postScriptGC): under a crowd that was half
    the server's CPU, most of it re-walking the imported libraries and the catalog, which live as long as the process.
    gc.freeze() moves them out of the collector's way, once; what sessions create is still collected. Then the
    per-key state view for the widgets (ui/state_view.py) and the thread that releases dropped sessions (ui/upkeep.py)."""
    gc.collect()
    gc.freeze()
    state_view.install()
    upkeep.start()
    return True


def fallback(scenario: Scenario, error: InputError, cat) -> tuple[Scenario, str]:
    """What the page shows instead of a scenario that cannot be planned, and how it says so: the scenario with the
    field named in the error at its default, which is what its link opens too (an uploaded config.json whose heads
    TP does not divide shows that model at TP 1, not the model before it); else the session's last valid one; on a
    fresh link, which has none, the defaults."""
    if error.field in Scenario.model_fields:
        default = Scenario.model_fields[error.field].default
        try:
            near = scenario.model_copy(update={error.field: default})
            evaluate(near, cat)
            return near, f"this scenario with {error.field} at its default ({default}), as its link opens it"
        except InputError:
            pass
    last = st.session_state.get("_last_good")
    if last is not None:
        return last, "the last valid one"
    return Scenario(), "the default scenario"


def main() -> None:
    """One run of the page. Its names are locals, not module globals: Streamlit keeps the last run's script module
    in sys.modules until the next run starts, so globals would hold that run's report, charts and containers
    alive after every session has gone."""
    started = time.perf_counter()
    cat, pickers = catalog()
    once_per_process()
    state.check_link_once(cat)
    held.carry(HELD_GROUPS)
    scenario, kept_because = state.scenario_from_widgets(state.values_now())
    try:
        report = evaluate(scenario, cat)
        plan_error = None
    except InputError as e:
        plan_error = e
        scenario, shown = fallback(scenario, e, cat)
        report = evaluate(scenario, cat)
    state.remember(scenario)
    link_base = page_base(st.context.url)
    # ----------------------------------------------------------------------------- the headline, before anything else
    st.title("LLM serving capacity planner")
    if cat.problems:  # a broken spec file is skipped, never fatal: say which
        items = "\n".join(f"- {plain(p)}" for p in cat.problems)
        st.warning(f"Spec files skipped (the others loaded):\n{items}", icon=":material/warning:")
    if state.link_warnings():
        items = "\n".join(f"- {plain(w)}" for w in state.link_warnings())
        st.warning(f"Part of the link was not taken as given (each line says what was used instead):\n{items}", icon=":material/warning:")
    if st.session_state.get("upload_error"):  # the sidebar has the whole message; the page must not look unchanged
        st.warning(f"The uploaded config.json was not used (the sidebar says why): "
                   f"{plain(st.session_state['upload_error'], 160)}. Showing {plain(report.model_name)}.",
                   icon=":material/warning:")  # fmt: skip
    if kept_because:
        st.warning(f"Input not applied, keeping the last valid scenario — {plain(kept_because, MAX_MESSAGE_SHOWN)}",
                   icon=":material/warning:")  # fmt: skip
    if plan_error:
        st.warning(f"This scenario cannot be planned — {plain(plan_error, MAX_MESSAGE_SHOWN)}. Showing {plain(shown)}.",
                   icon=":material/warning:")  # fmt: skip
    headline_top(report)
    paused_s = state.let_the_headline_paint()
    # ----------------------------------------------------------------------------- the sidebar
    st.sidebar.title("Scenario")
    sidebar_specs(pickers)
    try:
        model_spec, gpu_spec = resolve(Scenario.model_validate({k: v for k, v in current_values().items()
                                                                if k in ("model", "gpu", "custom_model")}), cat)  # fmt: skip
    except (InputError, ValueError):
        model_spec, gpu_spec = None, cat.gpus.get(st.session_state.get("gpu", ""))
    sidebar_rest(model_spec, gpu_spec)
    search_tab.sidebar()
    held.publish(HELD_GROUPS)  # the closed groups' fields into the link, by hand
    drawn, _ = state.scenario_from_widgets(current_values())
    if drawn != scenario and not plan_error and not st.session_state.get("_redrawn"):
        st.session_state["_redrawn"] = True  # the widgets hold other values than the headline used: once, redraw
        st.rerun()
    st.session_state["_redrawn"] = False
    # ----------------------------------------------------------------------------- the rest, charts last
    pinned, pin_error = state.decode_pin(st.query_params["pin"]) if "pin" in st.query_params else (None, None)
    if pin_error:
        st.warning(plain(pin_error, MAX_MESSAGE_SHOWN), icon=":material/warning:")
    headline_rest(report, link_base, scenario)
    labels = [*tabs.TABS, search_tab.LABEL]
    if "tab" in st.query_params and st.query_params["tab"] not in labels:  # Streamlit opens the first one silently
        st.warning(f"tab: no tab is called '{plain(st.query_params['tab'], 40)}'; the tabs are {', '.join(labels)}",
                   icon=":material/warning:")  # fmt: skip
    t = st.tabs([*tabs.TABS, search_tab.LABEL], key="tab", on_change="rerun", bind="query-params")  # a link opens its tab
    draw = (lambda: tabs.memory_tab(report), lambda: tabs.latency_tab(report), lambda: tabs.beyond_tab(report),
            lambda: tabs.slo_tab(report, link_base), lambda: tabs.compare_tab(report, cat, pinned, link_base),
            lambda: tabs.log_tab(report, cat), lambda: search_tab.render(scenario, cat, link_base))  # fmt: skip
    for tab, drawn_here in zip(t, draw, strict=True):
        if tab.open:  # only the open tab is drawn
            with tab:
                drawn_here()

    state.warn_if_link_dropped()
    st.session_state["_script_ms"] = (time.perf_counter() - started - paused_s) * 1e3  # the pause is not work
    st.caption(f"Computed in {st.session_state['_script_ms']:,.1f} ms on the server.")


main()
