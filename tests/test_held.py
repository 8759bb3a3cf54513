"""The sidebar's closed groups are not drawn (ui/held.py): their fields still come from the link, stay in it, and
keep what was set while the group was open or by an Apply button."""

from conftest import field
from test_app import run

from ui.held import open_key
from ui.widgets import GROUPS, HELD

ENGINE = "Engine (server flags)"


def toggle_group(at, group: str, open_: bool):
    at.session_state[open_key(group)] = open_
    return at.run()


def test_a_closed_groups_fields_come_from_the_link_and_stay_in_it():
    link = {"max_model_len": "4096", "mfu": "0.5", "enforce_eager": "true", "engine": "sglang", "turns": "3"}
    at = run(link)
    assert not at.exception and not at.warning
    keys = {w.key for w in (*at.number_input, *at.toggle, *at.selectbox, *at.slider)}
    assert not keys & HELD  # nothing of the closed groups was drawn
    assert {name: field(at, name) for name in link} == {"max_model_len": 4096, "mfu": 0.5, "enforce_eager": True,
                                                        "engine": "sglang", "turns": 3}  # fmt: skip
    summary = next(c.value for c in at.sidebar.caption if c.value.startswith("Set in the closed groups"))
    for name, value in link.items():  # escaped Markdown: every punctuation mark carries a backslash
        assert f"{name} = {value}" in summary.replace("\\", "")
    at.number_input(key="concurrency").set_value(32).run()  # an input of the open Workload group
    assert {k: at.query_params[k] for k in link} == link


def test_a_groups_inputs_start_from_the_held_values_and_write_the_link():
    at = run({"max_model_len": "4096", "enforce_eager": "true"})
    toggle_group(at, ENGINE, True)
    assert at.number_input(key="max_model_len").value == 4096 and at.toggle(key="enforce_eager").value is True
    drawn = {w.key for w in (*at.number_input, *at.toggle, *at.selectbox, *at.slider, *at.text_input)}
    assert {name for name, _ in GROUPS[ENGINE]} <= drawn
    at.number_input(key="max_model_len").set_value(2048).run()
    at.toggle(key="enforce_eager").set_value(False).run()  # back to the default: the parameter goes
    assert dict(at.query_params) == {"max_model_len": "2048"}
    toggle_group(at, ENGINE, False)
    at.number_input(key="concurrency").set_value(8).run()
    assert dict(at.query_params) == {"max_model_len": "2048"}  # (a bound input's own parameter is the browser's to write)
    assert field(at, "max_model_len") == 2048 and field(at, "enforce_eager") is False
    toggle_group(at, ENGINE, True)
    assert at.number_input(key="max_model_len").value == 2048


def test_a_value_set_by_a_callback_does_not_come_back_after_the_input_changed_it():
    """Streamlit keeps a value set through st.session_state after its input is gone; carry() removes it, or the
    first value would return when the group closes."""
    at = run()
    at.session_state["max_model_len"] = 4096  # what an Apply button's callback does
    at.run()
    assert dict(at.query_params) == {"max_model_len": "4096"}
    toggle_group(at, ENGINE, True)
    assert at.number_input(key="max_model_len").value == 4096
    at.number_input(key="max_model_len").set_value(2048).run()
    toggle_group(at, ENGINE, False)
    at.run()
    assert field(at, "max_model_len") == 2048 and dict(at.query_params) == {"max_model_len": "2048"}


def test_the_formulas_and_share_boxes_fill_only_when_opened():
    from ui.headline import FORMULAS, SHARE

    at = run({"concurrency": "32", "max_model_len": "4096"})
    assert not any("python -m calc plan" in c.value for c in at.code)
    at.session_state[SHARE] = True
    at.session_state[FORMULAS] = True
    at.run()
    codes = [c.value for c in at.code]
    assert "?max_model_len=4096&concurrency=32" in codes  # the link (no base under AppTest), fields in Scenario order
    assert any(c.startswith("python -m calc plan") and "--max-model-len 4096" in c for c in codes)
    assert any(c.startswith("vllm serve Qwen/Qwen2.5-7B-Instruct") and "--max-model-len 4096" in c for c in codes)
    assert len(codes) > 5  # the formulas, each a code block


def test_every_held_field_of_a_full_link_stays_in_the_link_as_given():
    """The link contract for every field of the closed groups: after runs that do not draw them, each query
    parameter still reads as the value the link gave (same text, or the same number written without '.0')."""
    from test_app import NON_DEFAULT

    at = run(NON_DEFAULT)
    at.number_input(key="concurrency").set_value(48).run()
    held = {k: v for k, v in NON_DEFAULT.items() if k in HELD}
    assert len(held) > 50
    for name, text in held.items():
        got = at.query_params[name]
        assert got == text or float(got) == float(text), (name, got, text)


def test_the_share_box_links_the_inputs_not_what_sglang_runs_of_them():
    """A user audit: Qwen3-Next at TP 2 under SGLang runs 133 of the 256 requests asked (its Mamba state slots);
    the plan says so, but the Share box's link and command pinned max_num_seqs=133, which the user never set and
    which a later change of TP would have kept."""
    from ui.headline import SHARE

    at = run({"model": "qwen3-next-80b-a3b", "gpu": "h200", "tensor_parallel_size": "2", "engine": "sglang"})
    at.session_state[SHARE] = True
    at.run()
    codes = [c.value for c in at.code]
    link = next(c for c in codes if c.startswith("?"))
    assert "tensor_parallel_size=2" in link and "max_num_seqs" not in link
    assert not any("--max-num-seqs" in c for c in codes if c.startswith("python -m calc plan"))
