"""No traceback on any page path: the shipped Streamlit config hides error details, a garbage pin warns once the
Compare tab opens, and the heavy libraries are imported before any session code runs."""

import ast
import tomllib
from pathlib import Path

import pytest
from test_app import pin, run

ROOT = Path(__file__).resolve().parent.parent


def test_the_streamlit_config_hides_error_details_and_the_developer_menu():
    from streamlit.config import ShowErrorDetailsConfigOptions

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == ShowErrorDetailsConfigOptions.NONE.value == "none"
    assert config["client"]["toolbarMode"] == "minimal"
    assert config["browser"]["gatherUsageStats"] is False


def test_the_streamlit_config_skips_the_forced_collection_after_every_run():
    """A full gc.collect() after each run walked every live session: 38 % of the server's CPU at 40 sessions."""
    from streamlit import config as st_config

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    assert "runner.postScriptGC" in st_config._config_options_template  # still an option of the pinned Streamlit


@pytest.mark.parametrize(
    "value",
    ["garbage!!", "", "=" * 40, pin([1, 2]), pin({"model": "no-such-model"}), pin({"gpu": "h900"}),
     pin({"concurrency": "9" * 5000}), pin({"model": "custom", "custom_model": "x"}),
     pin({"model": "llama-3.1-8b", "tensor_parallel_size": 3}), "[" * 5000],
)  # fmt: skip
def test_a_garbage_pin_warns_when_the_compare_tab_opens(value):
    at = run({"pin": value}, "Compare & export")
    assert not at.exception, at.exception
    assert any("pin" in w.value.lower() for w in at.warning), [w.value for w in at.warning]


def test_numpy_pandas_and_plotly_are_imported_before_any_session_code():
    """Several sessions starting together on a cold server raced on `partially initialized module 'numpy'`."""
    body = ast.parse((ROOT / "app.py").read_text()).body
    first_call = next(i for i, node in enumerate(body) if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)))
    imported = {alias.name.split(".")[0] for node in body[:first_call] if isinstance(node, ast.Import)
                for alias in node.names}  # fmt: skip
    assert {"numpy", "pandas", "plotly"} <= imported


def test_a_paste_past_the_limit_is_cut_and_says_so():
    """Streamlit's box with max_chars dropped a longer paste whole and kept showing the last log's results (a page
    audit, 2026-12-06): the paste now comes in and is cut at 400,000 characters with a warning."""
    from ui.tabs import PASTE_CHARS

    at = run(tab="Check a vLLM log")
    log = "INFO Available KV cache memory: 6.41 GiB\n"
    at.text_area(key="vllm_log_text").set_value(log * (450_000 // len(log) + 1)).run()
    assert not at.exception and PASTE_CHARS == 400_000
    assert any("first 400,000 characters" in w.value and "cut" in w.value for w in at.warning), [w.value for w in at.warning]
    at.text_area(key="vllm_log_text").set_value(log * 10).run()
    assert not any("cut" in w.value for w in at.warning)


def test_a_link_of_999_rejected_parameters_is_cleaned_in_one_step():
    """Found by hand (2026-12-02): each rejected key was deleted from st.query_params on its own, and each deletion
    sent the rest of the query string to the browser: 999 unknown keys of 480 characters (a 500 kB link, under
    Streamlit's 512 kB and 1,000-parameter limits) cost 2.4 s of CPU and 250 MB of messages. One replacement now."""
    import time

    run()  # the first AppTest run of a process imports and scans components (~1.5 s): not the link's cost
    query = {f"k{i}_" + "x" * 480: "v" for i in range(997)} | {"concurrency": "32", "pin": "garbage"}  # 999 in all
    t = time.process_time()
    at = run(query)
    cpu = time.process_time() - t
    assert not at.exception and cpu < 1.0, cpu
    assert dict(at.query_params) == {"concurrency": "32", "pin": "garbage"}  # the valid value and the pin stay


def test_a_link_of_many_rejected_parameters_lists_the_first_and_counts_the_rest():
    from ui.state import SHOWN_LINK_WARNINGS

    at = run({f"k{i}": "v" for i in range(50)} | {"concurrency": "nan"})
    said = next(w.value for w in at.warning if w.value.startswith("Part of the link was not taken as given"))
    lines = said.splitlines()[1:]
    assert len(lines) == SHOWN_LINK_WARNINGS and "k0" in lines[0], lines
    assert lines[-1] == "- … and 42 more parameters or values ignored", lines[-1]


def test_a_spec_id_in_the_hubs_capitals_is_read_lower_case():
    """`?model=Llama-3.1-8B&gpu=H100-SXM` (typed from the Hub's or a datasheet's spelling) plans Llama-3.1-8B on an
    H100, with a line saying how each was read, instead of the default model and a regex."""
    from boundary.urlstate import validate_query
    from calc.loader import load_catalog

    cat = load_catalog()
    values, warnings = validate_query({"model": ["Llama-3.1-8B"], "gpu": ["H100-SXM"]}, known_models=cat.models,
                                      known_gpus=cat.gpus)  # fmt: skip
    assert values == {"model": "llama-3.1-8b", "gpu": "h100-sxm"}
    assert warnings == ["model: 'Llama-3.1-8B' read as 'llama-3.1-8b' (spec ids are lower-case)",
                        "gpu: 'H100-SXM' read as 'h100-sxm' (spec ids are lower-case)"]  # fmt: skip
