"""User text never becomes Markdown: links, pins and custom models carrying Markdown/HTML render as literal text
in every warning and caption, and the Markdown export's code spans and fences survive backticks."""

import base64
import json
import re
import zlib

import pytest
from streamlit.testing.v1 import AppTest
from test_app import pin, run

from boundary.markdown import code_span, fence, markdown_report
from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.specs import ModelSpec

EVIL = (
    "[x](https://evil.example/a) ![i](https://evil.example/i.png) <img src=https://evil.example/p.png> www.evil.example"
)
UNESCAPED = re.compile(r"(?<!\\)(\]\(|!\[|<img|<a |https?://|www\.)")
QWEN = {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "intermediate_size": 18944,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
        "name": "Qwen"}  # fmt: skip


def packed(data: dict) -> str:
    """A custom_model parameter as the planner encodes one, from any dict (valid or not)."""
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def rendered(at: AppTest) -> list[str]:
    """The page's text as Streamlit renders it, escapes kept (test_page_finish.shown strips them to read numbers;
    here they are what is checked)."""
    return [e.value for kind in (at.warning, at.error, at.info, at.caption, at.markdown) for e in kind]


def test_custom_models_that_echo_their_text_stay_literal():
    for bad in ({**QWEN, "model_type": EVIL[:60]}, {**QWEN, EVIL: 1}, {**QWEN, "name": EVIL[:120]}):
        at = run({"model": "custom", "custom_model": packed(bad)})
        assert not at.exception
        for text in rendered(at):
            assert not UNESCAPED.search(text), text


def test_a_pin_with_markdown_keys_or_a_custom_model_warns_as_text():
    evil_keys = pin({EVIL: 1, "concurrency": 8})
    evil_custom = pin({"model": "custom", "custom_model": EVIL})
    for p in (evil_keys, evil_custom, "garbage!!", pin({"model": "custom", "custom_model": packed({"x": 1})})):
        at = run({"pin": p}, tab="Compare & export")
        assert not at.exception, p
        for text in rendered(at):
            assert not UNESCAPED.search(text), text


def test_a_pinned_custom_model_in_the_inputs_that_differ_is_text():
    """custom_model is free text while model is not 'custom': the pin plans, and the caption names it without its
    text (an encoded config.json was printed whole there: a page audit, 2026-12-06)."""
    at = run({"pin": pin({"custom_model": EVIL, "concurrency": 8})}, tab="Compare & export")
    assert not at.exception
    differ = next(c.value for c in at.caption if c.value.startswith("Inputs that differ"))
    assert "custom_model: an uploaded config" in differ and "evil" not in differ and not UNESCAPED.search(differ), differ


def ticks_around(text: str) -> tuple[int, str]:
    run_ = re.match(r"`+", text).group()
    inner = text[len(run_) : -len(run_)]
    assert text.endswith(run_) and not text.endswith("`" + run_)
    return len(run_), inner


def test_code_spans_and_fences_outlast_any_backticks_inside():
    for inner in ("plain", "a ` b", "``x``", "`edge`", "```fence```", "````"):
        n, got = ticks_around(code_span(inner))
        assert got.strip(" ") == inner and max(map(len, re.findall("`+", inner)), default=0) < n
        lines = fence(inner).split("\n")
        assert (
            lines[1] == inner
            and lines[0] == lines[2]
            and len(lines[0]) > max(map(len, re.findall("`+", inner)), default=2)
        )


def test_the_markdown_export_survives_a_model_name_full_of_backticks(catalog):
    name = "evil ``` ```` `x` name"
    s = Scenario(model="custom", custom_model=encode_custom_model(ModelSpec.model_validate({**QWEN, "name": name})))
    md = markdown_report(evaluate(s, catalog), "http://localhost:8501/")
    numbers = md.split("## Numbers\n\n")[1].split("\n\n## Formulas")[0]
    opening = numbers.split("\n")[0]
    assert set(opening) == {"`"} and len(opening) >= 5 and numbers.endswith("\n" + opening)
    assert name in numbers  # verbatim inside the fence, not escaped
    command = next(ln for ln in md.splitlines() if ln.startswith("Command line: "))
    n, inner = ticks_around(command.removeprefix("Command line: "))
    assert "python -m calc plan" in inner


def test_a_markdown_table_keeps_every_cell_inert():
    from boundary.markdown import md_table
    from boundary.view import Table

    t = Table(["quantity", "value"], [["# GPU blocks", "1,478"], ["a | b", "[x](http://e.vil)"]])
    assert md_table(t).splitlines() == [
        "| quantity | value |",
        "|:---|---:|",
        "| \\# GPU blocks | 1,478 |",  # not a heading
        "| a \\| b | \\[x\\](http:\u200b//e.vil) |",  # the pipe stays in its cell; no link
    ]


@pytest.mark.parametrize("path", ["/p)[Click here to verify](https:evil.example", "/a)![EVIL](https:evil.example",
                                  "/x<img src=https:evil.example>", "/p%29[x](https:evil.example"])  # fmt: skip
def test_the_pages_own_address_cannot_open_a_link_in_its_markdown(path):
    """Streamlit serves the page under any path, and the page puts its own address into Markdown links (the
    suggestions' 'open' column, the max_num_seqs link): a path that closes the link and opens another must arrive
    percent-encoded, with no ( ) [ ] < > ! left to parse."""
    from boundary.urlstate import page_base

    base = page_base(f"http://127.0.0.1:8501{path}?concurrency=1000")
    assert base.startswith("http://127.0.0.1:8501/") and not any(c in base for c in "()[]<>! ")
    assert page_base("http://127.0.0.1:8501/planner/?model=x") == "http://127.0.0.1:8501/planner/"
    assert page_base("http://127.0.0.1:8501?model=x") == "http://127.0.0.1:8501/"  # the root's slash, before '?'

    assert page_base("javascript:alert(1)") == ""


def test_the_report_carries_the_pinned_comparison(catalog):
    """The A/B table a reviewer built on the page travels in the Markdown export: A's link, the inputs that differ,
    and every compared figure of both (Llama-3.1-70B at 10 req/s, concurrency 16 pinned, 64 current)."""
    from boundary.markdown import markdown_report
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    base = dict(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, request_rate=10)
    a, b = evaluate(Scenario(**base), catalog), evaluate(Scenario(**base, concurrency=64), catalog)
    md = markdown_report(b, "http://host/", pinned=a)
    assert "## Compared with A (pinned)" in md and "Inputs that differ: concurrency: 16 → 64" in md
    assert "`http://host/?model=llama-3.1-70b&gpu=h100-sxm&tensor_parallel_size=4&request_rate=10`" in md
    assert f"| {a.latency.ttft_s * 1e3:,.0f} ms | {b.latency.ttft_s * 1e3:,.0f} ms | yes |" in md
    assert "## Compared" not in markdown_report(b, "http://host/")
