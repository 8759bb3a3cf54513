"""Boundary properties shared by the default test suite (few examples) and scripts/fuzz.py (10,000 each).

Each check takes one generated input and returns "valid" or "rejected"; anything else — an uncaught exception,
a rejection that does not name the field, a non-finite number in a Report — raises AssertionError.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import resource
import tempfile
import time
from functools import cache, wraps
from pathlib import Path
from typing import Literal, get_args, get_origin

from hypothesis import strategies as st
from pydantic import ValidationError

from boundary.cli import main as cli_main
from boundary.reconcile import reconcile
from boundary.urlstate import plain, validate_query
from boundary.vllm_log import parse_log
from calc.custom import encode_custom_model
from calc.errors import InputError, describe
from calc.evaluate import evaluate, json_safe
from calc.loader import load_catalog, load_spec_file, parse_config_json
from calc.scenario import Scenario, field_bounds
from calc.specs import GPUSpec

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
    from calc.pool import tp_check
    from calc.scenario import Scenario

    # vLLM's own divisibility rules (pure Mamba models have no attention heads to divide)
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if tp_check(Scenario(tensor_parallel_size=t), m) is None]
    data["tensor_parallel_size"] = draw(st.sampled_from(tps))
    data["pipeline_parallel_size"] = draw(st.sampled_from([p for p in (1, 2, 3, 4) if p <= m.num_hidden_layers]))
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


@bounded("config.json")
def check_config(raw: bytes) -> str:
    try:
        m = parse_config_json(raw)
    except InputError as e:
        assert e.field and "\n" not in str(e), e
        return "rejected"
    s = Scenario(model="custom", custom_model=encode_custom_model(m))
    try:
        r = evaluate(s, catalog())
    except InputError as e:
        assert e.field, e
        return "rejected"
    _finite(json_safe(r.to_dict()))
    return "valid"


@bounded("CLI")
def _cli(argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of the CLI in-process."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv, catalog=catalog())
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


def check_cli(argv: list[str]) -> str:
    code, text = _cli(["plan", *argv])
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


# --- the hostile classes of issue 16: pasted logs, spec files, special files ------------------------------------
LOG_DIR = Path(__file__).resolve().parent / "data" / "vllm_logs"
LOG_LINES = [
    "Loading model weights took 14.9888 GB", "Available KV cache memory: 5.98 GiB", "# GPU blocks: 1478",
    "PyTorch activation peak memory takes 1.40GiB", "non_torch_memory takes 0.20GiB", "GPU KV cache size: 567,978 tokens",
    "Graph capturing finished in 3 secs, took 0.22 GiB", "Maximum concurrency for 131,072 tokens per request: 4.33x",
    "Initializing a V1 LLM engine (v0.10.1) with config: model='Qwen/Qwen3-14B', max_seq_len=8192, "
    "tensor_parallel_size=1, gpu_memory_utilization=0.9", "Available KV cache memory: -3.21 GiB",
]  # fmt: skip


@st.composite
def log_text(draw):
    """A real-looking log with hostile edits: digit runs where numbers go, giant lines, Markdown, many lines."""
    lines = draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=12))
    out = []
    for line in lines:
        edit = draw(st.integers(0, 5))
        if edit == 0:
            run = "9" * draw(st.sampled_from([50, 4_400, 20_000]))
            line = line.replace("1", run, 1) if "1" in line else run + line
        elif edit == 1:
            line = line + draw(NASTY_TEXT)
        elif edit == 2:
            line = line * draw(st.sampled_from([2, 100, 3_000]))
        out.append(line)
    repeat = draw(st.sampled_from([1, 1, 1, 50, 5_000]))
    return "\n".join(out * repeat)


@bounded("vLLM log")
def check_log(text: str) -> str:
    try:
        log = parse_log(text)
    except InputError as e:
        assert e.field and "\n" not in str(e), e
        return "rejected"
    try:
        r = reconcile(log, catalog())
    except InputError as e:
        assert e.field and "\n" not in str(e), e
        return "rejected"
    json.dumps(r.to_dict(), default=str)
    return "valid"


GOOD_GPU_YAML = (LOG_DIR.parent.parent.parent / "hardware_specs" / "l4.yaml").read_text()
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@st.composite
def spec_yaml(draw):
    """A shipped GPU spec edited the ways people and attackers edit: a field to junk, duplicate keys, alias bombs,
    deep nesting, Markdown in the name, huge numbers, bytes that are not UTF-8."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return BOMB.encode()
    if kind == 1:
        return ("x: " + "[" * draw(st.sampled_from([10, 100, 10_000])) + "]" * 10).encode()
    if kind == 2:
        return (GOOD_GPU_YAML + "\n" + GOOD_GPU_YAML.splitlines()[0] + "\n").encode()  # a duplicate key
    if kind == 3:
        return draw(st.binary(max_size=300))
    lines = GOOD_GPU_YAML.splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    if ":" in lines[i] and not lines[i].lstrip().startswith("#"):
        key = lines[i].split(":", 1)[0]
        value = draw(st.one_of(NASTY_TEXT, st.text(max_size=20))).replace("\n", " ")
        lines[i] = f"{key}: {json.dumps(value)}"
    return "\n".join(lines).encode()


@bounded("spec YAML file")
def check_spec_yaml(raw: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "gpu.yaml"
        path.write_bytes(raw)
        try:
            load_spec_file(path, GPUSpec)
        except InputError as e:
            assert e.field == "gpu.yaml" and "\n" not in str(e) and len(str(e)) < 1_000, e
            return "rejected"
    return "valid"


SPECIAL = ["/dev/zero", "/dev/urandom", "/dev/null", "/", "/proc/self/mem", "/nonexistent/x.json", "{fifo}", "{dir}"]
special_files = st.tuples(st.sampled_from(["plan --model", "plan --gpu", "reconcile", "bench --model"]),
                          st.sampled_from(SPECIAL))  # fmt: skip


@bounded("CLI special files")
def check_special_file(case: tuple[str, str]) -> str:
    """A device, a FIFO, a directory or a missing path where the CLI wants a file: exit 2, one line, no blocking."""
    cmd, target = case
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        path = target.format(fifo=fifo, dir=d)
        return check_cli_argv([*cmd.split(), path])


def check_cli_argv(argv: list[str]) -> str:
    code, text = _cli(argv)
    assert code == 2 and len(text.strip().splitlines()) == 1 and "Traceback" not in text, (argv, code, text)
    return "rejected"
