"""Hostile input classes of issue 16 as fuzz boundaries (pasted vLLM logs, spec YAML files, special files where the
CLI wants a file), sharing tests/properties.py's cost bound and CLI runner."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from properties import NASTY_TEXT, bounded, catalog, one_line_rejection, run_cli

from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.errors import InputError
from calc.loader import load_spec_file
from calc.specs import GPUSpec

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
        return one_line_rejection(e)
    try:
        r = reconcile(log, catalog())
    except InputError as e:
        return one_line_rejection(e)
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
            return one_line_rejection(e, "gpu.yaml")
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
    code, text = run_cli(argv)
    assert code == 2 and len(text.strip().splitlines()) == 1 and "Traceback" not in text, (argv, code, text)
    return "rejected"
