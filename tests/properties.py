"""Boundary properties shared by the default test suite (few examples) and scripts/fuzz.py (10,000 each).

Each check takes one generated input and returns "valid" or "rejected"; anything else — an uncaught exception,
a rejection that does not name the field, a non-finite number in a Report — raises AssertionError.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import resource
import time
from functools import cache, wraps
from typing import Literal, get_args, get_origin

from hypothesis import strategies as st
from pydantic import ValidationError

from boundary.cli import main as cli_main
from boundary.urlstate import plain, validate_query
from calc.custom import encode_custom_model
from calc.errors import InputError, describe
from calc.evaluate import evaluate, json_safe
from calc.loader import load_catalog, parse_config_json
from calc.scenario import Scenario, field_bounds
from ui import search_tab, tabs  # imported here, not in check_tab: an import is not a rerun's cost

logging.getLogger("streamlit").setLevel(logging.ERROR)  # bare mode (check_tab) warns on every element

# The cost bound of issue 16: no single input may take more than this much CPU or grow the process by this much.
CPU_BOUND_S = 1.0
RSS_BOUND_BYTES = 200e6
SLOWEST: dict[str, tuple[float, str]] = {}  # boundary -> (CPU seconds, the example), for scripts/fuzz.py


def _peak_rss_bytes() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def bounded(name: str):
    """Wrap a check: the example must finish under CPU_BOUND_S of CPU and must not raise the process's peak resident
    memory by more than RSS_BOUND_BYTES; the slowest example per boundary is kept in SLOWEST."""

    def wrap(check):
        @wraps(check)
        def run(x):
            rss, t = _peak_rss_bytes(), time.process_time()
            out = check(x)
            cpu, grew = time.process_time() - t, _peak_rss_bytes() - rss
            if cpu > SLOWEST.get(name, (-1.0, ""))[0]:
                SLOWEST[name] = (cpu, repr(x)[:160])
            assert cpu < CPU_BOUND_S, f"{name}: {cpu:.2f} s of CPU for {repr(x)[:200]}"
            assert grew < RSS_BOUND_BYTES, f"{name}: +{grew / 1e6:.0f} MB for {repr(x)[:200]}"
            return out

        return run

    return wrap

FIELDS = sorted(Scenario.model_fields)


@cache
def catalog():
    return load_catalog()


# --- strategies ------------------------------------------------------------------------------------------------
NASTY_TEXT = st.sampled_from([
    "", " ", "nan", "NaN", "inf", "-inf", "1e309", "-1", "0", "1.5", "true", "false", "None", "null", "[]", "{}",
    "<script>alert(1)</script>", "![img](http://example.invalid/x.png)", "[link](javascript:alert(1))",
    "**bold**", ":material/home:", "$x^2$", "\u202e\u0000", "9" * 40, "x" * 10_000, "16", "8192", "0.9",
    "9" * 5_000, "1" + "0" * 400, "1e308", "0." + "0" * 3_000 + "1", "`", "```", "<img src=x onerror=alert(1)>",
    "[x](https://evil.example)", "https://evil.example", "/dev/zero", "&amp;", "%00", "\n" * 50,
])  # fmt: skip
ANY_VALUE = st.one_of(
    NASTY_TEXT,
    st.text(max_size=40),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)


def field_value(name: str, *, in_range_only: bool = False):
    """Mostly in-range values for `name` (from the Scenario's own bounds), sometimes anything at all."""
    info = Scenario.model_fields[name]
    default = info.default
    choices = {
        "model": st.sampled_from(sorted(catalog().models) + ["nope"]),
        "gpu": st.sampled_from(sorted(catalog().gpus) + ["h900"]),
        "dtype": st.sampled_from(["auto", "bf16", "fp16", "fp8", "int8", "int4", "int3"]),
        "kv_cache_dtype": st.sampled_from(["auto", "fp8", "fp4"]),
        "block_size": st.sampled_from([8, 16, 32, 64, 128, 256, 17, "16"]),
        "tensor_parallel_size": st.sampled_from([1, 1, 2, 2, 4, 8, 16, 64, 3, 0, 65]),
        "pipeline_parallel_size": st.sampled_from([1, 1, 1, 2, 3, 4, 8, 0]),
        "concurrency": st.one_of(st.integers(1, 2048), st.just(1_000_000)),
        "max_num_seqs": st.one_of(st.integers(1, 1024), st.just(65_536)),
        "input_len": st.integers(1, 200_000),
        "output_len": st.integers(1, 20_000),
        "max_model_len": st.one_of(st.integers(1, 300_000), st.just(1)),
        "max_num_batched_tokens": st.integers(1, 100_000),
        "gpu_memory_utilization": st.floats(0.01, 1.0),
        "custom_model": st.one_of(st.just(encode_custom_model(catalog().models["llama-3.2-1b"])), st.text(max_size=30)),
    }
    literal = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
    if name in choices:
        base = choices[name]
    elif literal:
        base = st.sampled_from(literal)
    elif isinstance(default, bool):
        base = st.booleans()
    elif isinstance(default, str):  # comma-separated search lists: their default is valid
        base = st.just(default)
    elif isinstance(default, int) or "int" in str(info.annotation):
        lo, hi = field_bounds(name)
        base = st.integers(int(lo or 0), int(min(hi or 100_000, 100_000)))
    else:
        lo, hi = field_bounds(name)
        base = st.floats(
            float(lo or 0),
            float(min(hi or 1e6, 1e6)),
            allow_nan=False,
            exclude_min=_exclusive(info, "gt"),
            exclude_max=_exclusive(info, "lt"),
        )
    if in_range_only:
        return base
    return st.one_of(*[base] * 9, ANY_VALUE)  # mostly in range, so most scenarios get evaluated


def _exclusive(info, attr: str) -> bool:
    """Whether the field's bound is strict (gt/lt), from its constraints."""
    metas = list(info.metadata) + [m for a in get_args(info.annotation) for m in getattr(a, "__metadata__", ())]
    return any(getattr(m, attr, None) is not None for m in metas)


@st.composite
def scenario_data(draw, in_range_only: bool = False):
    names = draw(st.lists(st.sampled_from(FIELDS), max_size=6, unique=True))
    return {n: draw(field_value(n, in_range_only=in_range_only)) for n in names}


@st.composite
def valid_scenario_data(draw):
    """In-range values only, with specs and parallelism vLLM accepts for the model: exercises 'valid → a Report'
    across whole ranges (1-token contexts, concurrency up to max_num_seqs, TP up to 64, utilization 0.01–1)."""
    data = draw(scenario_data(in_range_only=True))
    data["model"] = draw(st.sampled_from(sorted(catalog().models)))
    data["gpu"] = draw(st.sampled_from(sorted(catalog().gpus)))
    m = catalog().models[data["model"]]
    from calc.parallel_rules import tp_check
    from calc.scenario import Scenario

    # vLLM's own divisibility rules (pure Mamba models have no attention heads to divide)
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if tp_check(Scenario(tensor_parallel_size=t), m) is None]
    data["tensor_parallel_size"] = draw(st.sampled_from(tps))
    data["pipeline_parallel_size"] = draw(st.sampled_from([p for p in (1, 2, 3, 4) if p <= m.num_hidden_layers]))
    dp, group = data.get("data_parallel_size", 1), data.get("data_parallel_size", 1) * data["tensor_parallel_size"]
    sliced = m.routed_experts and not data.get("enable_expert_parallel") and m.expert_ffn_size % group
    if dp > 1 and (data.get("disaggregated") or sliced):  # the two data-parallel rules calc.evaluate enforces
        data["data_parallel_size"] = 1
    for k in ("custom_model", "num_hidden_layers", "num_key_value_heads", "head_dim", "dtype", "kv_cache_dtype"):
        data.pop(k, None)
    data.pop("block_size", None) if data.get("block_size") == 17 else None
    if data.get("model") == "nope":
        data.pop("model")
    return data


# --- checks ----------------------------------------------------------------------------------------------------
def _finite(x) -> None:
    if isinstance(x, float):
        assert math.isfinite(x), x
    elif isinstance(x, dict):
        for v in x.values():
            _finite(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _finite(v)


@bounded("scenario")
def check_scenario(data: dict) -> str:
    try:
        s = Scenario.model_validate(data)
    except ValidationError as e:
        text = describe(e)
        assert any(text.startswith(n) for n in data) or "custom_model" in text, text
        return "rejected"
    try:
        r = evaluate(s, catalog())
    except InputError as e:
        assert e.field in Scenario.model_fields, e
        return "rejected"
    d = json_safe(r.to_dict())
    _finite(d)
    json.dumps(d, default=str, allow_nan=False)
    return "valid"


TAB_NAMES = ("Memory", "Latency", "Beyond the GPU", "SLOs & replicas", "Find a deployment")


@st.composite
def tab_case(draw):
    """A valid scenario and the tab open for its rerun (each tab computes its own figures: a benchmark simulation,
    a CDF, GPU options — none of which the Report's JSON holds)."""
    return draw(valid_scenario_data()), draw(st.sampled_from(TAB_NAMES))


@cache
def warm_tabs() -> None:
    """Each tab drawn once on the default scenario, untimed: a process's first draw imports and caches what every
    later one reuses (0.5–0.7 s on this host), which is start-up, not the cost of an input."""
    r = evaluate(Scenario(), catalog())
    for draw in (tabs.memory_tab, tabs.latency_tab, tabs.beyond_tab, tabs.slo_tab):
        draw(r)
    search_tab.render(Scenario(), catalog(), "http://localhost:8501/")


@bounded("a tab's rerun")
def check_tab(case: tuple[dict, str]) -> str:
    """That tab's own drawing code (ui.tabs, Streamlit in bare mode: nothing is sent) on the scenario's Report."""
    data, tab = case
    s = Scenario.model_validate(data)
    if tab == "Find a deployment":
        search_tab.render(s, catalog(), "http://localhost:8501/")
        return "valid"
    try:
        r = evaluate(s, catalog())
    except InputError as e:  # the page falls back to the last scenario it planned and says why (app.fallback)
        assert e.field in Scenario.model_fields, e
        return "rejected"
    draw = {"Memory": tabs.memory_tab, "Latency": tabs.latency_tab, "Beyond the GPU": tabs.beyond_tab,
            "SLOs & replicas": tabs.slo_tab}  # fmt: skip
    draw[tab](r)
    return "valid"


@bounded("URL query")
def check_query(params: dict[str, list[str]]) -> str:
    values, warnings = validate_query(params, known_models=catalog().models, known_gpus=catalog().gpus)
    s = Scenario.model_validate(values)  # what survives always forms a Scenario
    for w in warnings:
        assert isinstance(w, str)
    for k in params:
        if k not in values and k != "pin" and (params[k] and params[k][-1] != ""):
            assert any(k in w for w in warnings) or k in values, (k, warnings)
    assert s is not None
    return "rejected" if warnings else "valid"


@bounded("Markdown")
def check_plain(text: str) -> str:
    out = plain(text)
    assert "://" not in out.replace("\\", "") and "www." not in out.replace("\\", "")  # no autolink can form
    for i, ch in enumerate(out):  # every ASCII punctuation is escaped, so Markdown/HTML cannot form
        if ch.isascii() and not ch.isalnum() and ch not in " \\":
            assert out[i - 1] == "\\", (text, out)
    return "valid"


def one_line_rejection(e: InputError, field: str | None = None) -> str:
    """A refusal names its field (or the one expected) in one line."""
    assert (e.field == field if field else e.field) and "\n" not in str(e) and len(str(e)) < 1_000, e
    return "rejected"


@bounded("config.json")
def check_config(raw: bytes) -> str:
    try:
        m = parse_config_json(raw)
    except InputError as e:
        return one_line_rejection(e)
    s = Scenario(model="custom", custom_model=encode_custom_model(m))
    try:
        r = evaluate(s, catalog())
    except InputError as e:
        assert e.field, e
        return "rejected"
    _finite(json_safe(r.to_dict()))
    return "valid"


@bounded("CLI")
def run_cli(argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of the CLI in-process."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv, catalog=catalog())
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


def check_cli(argv: list[str]) -> str:
    code, text = run_cli(["plan", *argv])
    assert code in (0, 2), (argv, code, text)
    assert "Traceback" not in text, text
    if code == 2:
        assert len(text.strip().splitlines()) == 1, text
        return "rejected"
    return "valid"


# --- generators for the other boundaries ---------------------------------------------------------------------
@st.composite
def query_params(draw):
    """Mostly real fields with plausible text values; sometimes junk keys, repeats and hostile text."""
    out: dict[str, list[str]] = {}
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 9)) < 8:
            key = draw(st.sampled_from(FIELDS))
            vals = draw(st.lists(field_value(key).map(lambda v: "true" if v is True else "false" if v is False else str(v)),
                                 min_size=1, max_size=2))  # fmt: skip
        else:
            key = draw(st.one_of(st.sampled_from(["pin", "zzz", ""]), st.text(max_size=12)))
            vals = draw(st.lists(st.one_of(NASTY_TEXT, st.text(max_size=30)), min_size=1, max_size=3))
        out[key] = vals
    return out


GOOD_CONFIG = {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048, "intermediate_size": 8192,
               "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
               "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}  # fmt: skip
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.floats(allow_nan=False), st.text(max_size=10)),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12,
)  # fmt: skip


@st.composite
def config_bytes(draw):
    kind = draw(st.integers(0, 3))
    if kind == 0:  # random JSON
        return json.dumps(draw(json_values)).encode()
    if kind == 1:  # random bytes
        return draw(st.binary(max_size=200))
    cfg = dict(GOOD_CONFIG)  # a real config with some fields mutated or removed
    for key in draw(st.lists(st.sampled_from(sorted(cfg) + ["head_dim", "sliding_window", "layer_types",
                                                            "num_local_experts", "kv_lora_rank", "text_config"]),
                             max_size=3, unique=True)):  # fmt: skip
        if draw(st.booleans()) and key in cfg:
            del cfg[key]
        else:
            cfg[key] = draw(st.one_of(json_values, st.integers(-5, 100_000)))
    return json.dumps(cfg).encode()


FLAGS = ["--" + f.replace("_", "-") for f in FIELDS] + ["--json", "--bogus", "-x", "--no-enforce-eager", "--model"]
cli_args = st.lists(st.one_of(st.sampled_from(FLAGS), NASTY_TEXT, st.text(max_size=12)), max_size=8)
