"""Spec files fail alone: a folder of broken YAML next to good files loads the good ones and names each bad one (with
its line where YAML gives one), each within 0.2 s of CPU; the page warns once, the CLI says so on stderr."""

import shutil
import time
from pathlib import Path

import pytest
import yaml

from boundary.cli import main
from calc.errors import InputError
from calc.loader import MAX_SPEC_BYTES, load_catalog, load_spec_file
from calc.specs import GPUSpec

ROOT = Path(__file__).resolve().parent.parent
GOOD_GPU = (ROOT / "hardware_specs" / "h100-sxm.yaml").read_text()
GOOD = yaml.safe_load(GOOD_GPU)
BUDGET_S = 0.2


def gpu_yaml(**changes) -> str:
    return yaml.safe_dump({**GOOD, **changes}, sort_keys=False)


def line_of(text: str, key: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(key + ":"))


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def slip(key: str, value) -> tuple[str, int]:
    """A good spec with one field changed, and that field's line."""
    text = gpu_yaml(**{key: value})
    return text, line_of(text, key)


TB, MIB, FLOPS, PFLOPS = (slip("memory_bandwidth_gb_per_s", 3.35), slip("memory_gib", 81559),
                          slip("bf16_tflop_per_s", 989.4e12), slip("fp16_tflop_per_s", 0.9894))  # fmt: skip
EXTRA, TYPE, HUGE = slip("memory_gb", 80), slip("tdp_w", "lots"), slip("tdp_w", 1)
HUGE = (HUGE[0].replace("tdp_w: 1", "tdp_w: " + "9" * 5000), HUGE[1])
LAST_LINE = len(GOOD_GPU.splitlines()) + 1
# name → (file content, words the message must hold, its line or None)
BROKEN: dict[str, tuple[str | bytes, tuple[str, ...], int | None]] = {
    "bad-yaml": ("name: x\nvendor: [unclosed\n", ("YAML",), 3),
    "tab-indent": ("name: x\n\tvendor: nvidia\n", ("YAML",), 2),
    "alias-bomb": (BOMB, ("aliases",), 2),
    "duplicate-key": (GOOD_GPU + "name: again\n", ("duplicate key 'name'",), LAST_LINE),
    "bandwidth-in-tb": (TB[0], ("3.35 looks like TB/s", "50–20,000 GB/s"), TB[1]),
    "memory-in-mib": (MIB[0], ("81559 looks like MiB", "1–1,024 GiB"), MIB[1]),
    "flops-in-flops": (FLOPS[0], ("looks like FLOP/s", "TFLOP/s"), FLOPS[1]),
    "flops-in-pflops": (PFLOPS[0], ("looks like PFLOP/s",), PFLOPS[1]),
    "unknown-field": (EXTRA[0], ("memory_gb", "Extra inputs"), EXTRA[1]),
    "wrong-type": (TYPE[0], ("tdp_w",), TYPE[1]),
    "huge-number": (HUGE[0], ("number too long",), HUGE[1]),
    "huge-key": (GOOD_GPU + "? " + "k" * 50_000 + "\n: 1\n", ("Extra inputs",), None),
    "empty": ("", ("empty",), None),
    "comments-only": ("# nothing here\n", ("empty",), None),
    "a-list": ("- name: x\n- vendor: nvidia\n", ("mapping",), None),
    "a-scalar": ("just text\n", ("mapping",), None),
    "ten-mb": (b"# padding\n" * 1_048_576, ("bytes", "limit"), None),
    "H100 SXM": (GOOD_GPU, ("spec id",), None),
    "non-utf8": (GOOD_GPU.encode() + b"notes: caf\xe9\n", ("UTF-8",), LAST_LINE),
    "nul-byte": (b"\x00" + GOOD_GPU.encode(), ("YAML", "#x0000"), None),  # found by the fuzzer: crashed the loader
    "deep-nesting": ("a: " + "[" * 30_000 + "]" * 30_000 + "\n", ("nested",), None),
}  # fmt: skip


@pytest.fixture(scope="module")
def spec_dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("specs")
    hw, models = base / "hardware_specs", base / "model_specs"
    shutil.copytree(ROOT / "hardware_specs", hw)
    shutil.copytree(ROOT / "model_specs", models)
    for name, (text, _, _) in BROKEN.items():
        path = hw / f"{name}.yaml"
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    (models / "broken-model.yaml").write_text("name: M\nmodel_type: llama\nnum_hidden_layers: -1\n")
    return hw, models


def test_good_files_load_and_each_bad_one_is_named(spec_dirs):
    hw, models = spec_dirs
    start = time.process_time()
    cat = load_catalog(hw, models)
    assert time.process_time() - start < BUDGET_S * (len(BROKEN) + 2)
    shipped = {p.stem for p in (ROOT / "hardware_specs").glob("*.yaml")}
    models_shipped = {p.stem for p in (ROOT / "model_specs").glob("*.yaml")}
    assert set(cat.gpus) == shipped and "broken-model" not in cat.models and set(cat.models) == models_shipped
    assert len(cat.problems) == len(BROKEN) + 1
    for name, (_, words, line) in BROKEN.items():
        said = next(p for p in cat.problems if p.startswith(f"hardware_specs/{name}.yaml: "))
        assert all(w in said for w in words), said
        assert len(said) < 400 and "\n" not in said, said
        if line is not None:
            assert f"line {line}:" in said, said


@pytest.mark.parametrize("name", sorted(set(BROKEN) - {"H100 SXM"}))  # a bad id is the folder's concern
def test_each_broken_file_is_refused_quickly(spec_dirs, name):
    path = spec_dirs[0] / f"{name}.yaml"
    start = time.process_time()
    with pytest.raises(InputError):
        load_spec_file(path, GPUSpec)
    assert time.process_time() - start < BUDGET_S


def test_the_limits_leave_room_for_real_files():
    assert max(p.stat().st_size for p in (ROOT / "hardware_specs").glob("*.yaml")) * 10 < MAX_SPEC_BYTES


def test_the_cli_says_which_files_it_skipped_and_goes_on(spec_dirs, capsys, monkeypatch):
    import calc.loader

    monkeypatch.setattr(calc.loader, "HARDWARE_DIR", spec_dirs[0])
    monkeypatch.setattr(calc.loader, "MODEL_DIR", spec_dirs[1])
    assert main(["gpus"]) == 0
    out, err = capsys.readouterr()
    assert "h100-sxm" in out
    lines = err.splitlines()
    assert len(lines) == len(BROKEN) + 1 and all(ln.startswith("warning: skipped ") for ln in lines)


def test_the_page_warns_once_listing_the_skipped_files(spec_dirs, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import calc.loader

    monkeypatch.setattr(calc.loader, "HARDWARE_DIR", spec_dirs[0])
    monkeypatch.setattr(calc.loader, "MODEL_DIR", spec_dirs[1])
    st.cache_resource.clear()  # the page caches its catalog per process
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    try:
        at.run()
    finally:
        st.cache_resource.clear()
    assert not at.exception
    skipped = [w.value for w in at.warning if "skipped" in w.value]
    assert len(skipped) == 1 and "alias\\-bomb" in skipped[0] and "broken\\-model" in skipped[0]
