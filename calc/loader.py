"""The one module that reads files: our spec YAML and raw Hugging Face config.json files.

Every file is size-capped and checked to be a regular file before it is read. YAML goes through a SafeLoader that
also refuses aliases and duplicate keys; every failure becomes an InputError naming the file, its line where YAML
gives one, and the field. A broken spec file is skipped (Catalog.problems), never fatal to the others.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from calc.errors import InputError, describe
from calc.hf_config import model_from_hf_config
from calc.scenario import SpecId
from calc.specs import GPUSpec, ModelSpec

T = TypeVar("T", bound=BaseModel)

ROOT = Path(__file__).resolve().parent.parent
HARDWARE_DIR = ROOT / "hardware_specs"
MODEL_DIR = ROOT / "model_specs"
ENGINE_DIR = ROOT / "engine_specs"
ERRORS_FILE = ROOT / "tests" / "data" / "benchmarks" / "errors.json"
"""Held-out error of the latency estimates, written by scripts/calibrate.py report."""
MAX_ERRORS_BYTES = 1_000_000
MAX_CONFIG_BYTES = 1_000_000  # upload cap for a config.json: real ones are a few kB
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def read_capped(path: Path | str, limit: int, field: str | None = None) -> bytes:
    """A regular file's bytes, refused BEFORE reading when it is anything else or larger than `limit`.

    Opened non-blocking (a FIFO with no writer would wait forever) and checked with fstat on that same descriptor
    (no race with a file swapped in between); at most limit + 1 bytes are read, in case the file grows meanwhile.
    """
    name = field or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise InputError(name, f"cannot read '{path}' ({e.strerror or type(e).__name__})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((k for test, k in _KINDS if test(info.st_mode)), "not a file")
            raise InputError(name, f"'{path}' is not a regular file ({kind})")
        if info.st_size > limit:
            raise InputError(name, f"'{path}' is {info.st_size:,} bytes; the limit is {limit:,}")
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        try:
            raw = f.read(limit + 1)
        except OSError as e:
            raise InputError(name, f"cannot read '{path}' ({e.strerror or type(e).__name__})") from None
    if len(raw) > limit:
        raise InputError(name, f"'{path}' is over {limit:,} bytes, the limit")
    return raw


# --- spec YAML --------------------------------------------------------------------------------------------------

MAX_SPEC_BYTES = 64_000  # a spec file is ~1.5 kB; pure-Python YAML reads 64 kB in well under 0.1 s
MAX_SPEC_NESTING = 20  # flow brackets; 30,000 of them cost 0.5 s before a RecursionError (libyaml segfaults)
SPEC_ID = TypeAdapter(SpecId)  # a file stem is a spec id: the rule the CLI and links apply to `model` and `gpu`


class _SpecLoader(yaml.SafeLoader):
    """safe_load, stricter. No aliases: a 1 kB "billion laughs" expands to gigabytes once anything walks it, and spec
    files need none. No duplicate keys (YAML keeps the last, silently). No integers past Python's digit limit."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"aliases (*{event.anchor}) are not allowed in spec files",
                                              event.start_mark)  # fmt: skip
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key '{key_node.value[:60]}'",
                                                            key_node.start_mark)  # fmt: skip
                seen.add(key_node.value)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(None, None, f"number too long ({len(node.value):,} characters)",
                                                    node.start_mark) from None  # fmt: skip


_SpecLoader.add_constructor("tag:yaml.org,2002:int", _SpecLoader.construct_yaml_int)


def _yaml_error(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    where = f"line {mark.line + 1}: " if mark is not None else ""
    what = getattr(e, "problem", None) or str(e).splitlines()[0]
    return f"{where}not valid YAML ({what[:160]})"


def _nesting(text: str) -> int:
    depth = peak = 0
    for ch in re.findall(r"[\[\]{}]", text):  # quoted brackets count too: spec files have a handful
        depth += 1 if ch in "[{" else -1
        peak = max(peak, depth)
    return peak


def read_spec_yaml(path: Path, field: str | None = None) -> tuple[Any, dict[str, int]]:
    """(parsed document, line of each top-level key), or InputError(field or file name, 'line N: …')."""
    name = field or path.name
    raw = read_capped(path, MAX_SPEC_BYTES, name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(name, f"line {line}: not UTF-8 (byte {e.start:,})") from None
    if _nesting(text) > MAX_SPEC_NESTING:
        raise InputError(name, f"nested deeper than {MAX_SPEC_NESTING} levels")
    try:
        loader = _SpecLoader(text)  # the reader refuses control characters already here
    except yaml.YAMLError as e:
        raise InputError(name, _yaml_error(e)) from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        raise InputError(name, _yaml_error(e)) from None
    except RecursionError:
        raise InputError(name, "nested too deeply") from None
    finally:
        loader.dispose()
    lines = {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)} \
        if isinstance(node, yaml.MappingNode) else {}  # fmt: skip
    return data, lines


def _line_of(e: ValidationError, lines: dict[str, int]) -> str:
    """'line N: ' of the first error's field, or of the first field a whole-spec check names."""
    first = e.errors(include_url=False)[0]
    key = str(first["loc"][0]) if first["loc"] else next((k for k in lines if k in first["msg"]), None)
    return f"line {lines[key]}: " if key in lines else ""


def load_spec_file(path: Path, model: type[T], field: str | None = None) -> T:
    """One spec file; errors name `field` (default: the file name) and the line."""
    name = field or path.name
    data, lines = read_spec_yaml(path, name)
    if data is None:
        raise InputError(name, "the file is empty: expected a mapping of field: value")
    if not isinstance(data, dict):
        raise InputError(name, f"expected a mapping of field: value, not a {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise InputError(name, _line_of(e, lines) + describe(e)) from None


def load_specs(directory: Path, model: type[T], problems: list[str] | None = None) -> dict[str, T]:
    """Every `*.yaml` in `directory`, keyed by file stem (the spec id). With `problems`, a bad file is skipped and
    described there ('hardware_specs/x.yaml: line 3: …'); without, the first bad file raises."""
    out: dict[str, T] = {}
    for p in sorted(directory.glob("*.yaml")):
        try:
            try:
                SPEC_ID.validate_python(p.stem)
            except ValidationError:
                raise InputError(p.name, "the file name is the spec id: lower-case letters, digits, '.', '_' and "
                                         "'-', at most 64 characters (links and the CLI accept no other)") from None  # fmt: skip
            out[p.stem] = load_spec_file(p, model)
        except InputError as e:
            if problems is None:
                raise
            problems.append(f"{directory.name}/{e}")
    return out


def load_catalog(hardware_dir: Path | None = None, model_dir: Path | None = None, engine_dir: Path | None = None,
                 errors_file: Path | None = None):  # fmt: skip
    """The shipped specs; broken files are skipped and listed in `Catalog.problems`, never fatal."""
    from calc.catalog import Catalog  # local import: catalog has no I/O of its own
    from calc.engine_spec import EngineSpec

    problems: list[str] = []
    gpus = load_specs(hardware_dir or HARDWARE_DIR, GPUSpec, problems)
    models = load_specs(model_dir or MODEL_DIR, ModelSpec, problems)
    engines = load_specs(engine_dir or ENGINE_DIR, EngineSpec, problems)
    accuracy = load_accuracy(errors_file or ERRORS_FILE, problems)
    return Catalog(gpus=gpus, models=models, engines=engines, problems=tuple(problems), accuracy=accuracy)


def load_accuracy(path: Path, problems: list[str] | None = None):
    """The held-out error file (calc.accuracy), or None when it is absent; a broken one is listed in `problems`."""
    from calc.accuracy import accuracy_from_dict

    if not path.exists():
        return None
    try:
        data = json.loads(read_capped(path, MAX_ERRORS_BYTES, path.name))
        return accuracy_from_dict(data)
    except InputError as e:
        msg = str(e)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        msg = f"{path.name}: not the held-out error table scripts/calibrate.py writes ({type(e).__name__})"
    if problems is None:
        raise InputError(path.name, msg)
    problems.append(msg)
    return None


# --- Hugging Face config.json (the reader itself is calc.hf_config) -------------------------------------------


def parse_json(raw: bytes | str, field: str):
    if len(raw) > MAX_CONFIG_BYTES:
        raise InputError(field, f"file is {len(raw):,} bytes; the limit is {MAX_CONFIG_BYTES:,}")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:  # also ints past Python's 4,300-digit limit
        if "integer string conversion" in str(e):
            raise InputError(field, "a number in it is thousands of digits long: no config field needs one") from None
        raise InputError(field, f"not valid JSON ({str(e).splitlines()[0][:120]})") from None


def parse_config_json(raw: bytes | str, name: str | None = None, quant: dict | None = None) -> ModelSpec:
    """An uploaded config.json, size-capped, to a ModelSpec; `quant`: the checkpoint's hf_quant_config.json, if any."""
    config = parse_json(raw, "config.json")
    if isinstance(config, dict) and quant is not None and config.get("quantization_config") is None:
        config = {**config, "quantization_config": modelopt_quantization(quant)}
    return model_from_hf_config(config, name=name)


def modelopt_quantization(q) -> dict:
    """hf_quant_config.json (NVIDIA ModelOpt checkpoints: {"quantization": {"quant_algo": "NVFP4" | "FP8", …}}) as
    the quantization_config vLLM derives from it (quant_method modelopt; NVFP4 served as modelopt_fp4)."""
    quant = q.get("quantization") if isinstance(q, dict) else None
    algo = quant.get("quant_algo") if isinstance(quant, dict) else None
    if not isinstance(algo, str) or not algo:
        raise InputError("hf_quant_config.json", "expected {\"quantization\": {\"quant_algo\": …}} (ModelOpt's layout)")
    out = {"quant_method": "modelopt", "quant_algo": algo[:40]}
    if "quantized_layers" in quant:  # MIXED_PRECISION: a format per module (calc.hf_quant.mixed_precision_algos)
        out["quantized_layers"] = quant["quantized_layers"]
    if isinstance(quant.get("exclude_modules"), list):  # the MTP layers a checkpoint leaves at 16 bits (calc.hf_quant)
        out["exclude_modules"] = quant["exclude_modules"]
    for key in ("kv_cache_quant_algo", "kv_cache_scheme"):  # FP8 KV scales: an FP8 cache under 'auto' (calc.resolve)
        if key in quant:
            out[key] = quant[key]
    return out


def load_model_file(path: Path) -> ModelSpec:
    """A model YAML of ours or a Hugging Face config.json, chosen by extension. Beside a config.json, a ModelOpt
    checkpoint's hf_quant_config.json (which vLLM reads for its quantization) is read too."""
    if path.suffix == ".json":
        raw = read_capped(path, MAX_CONFIG_BYTES, "model")
        quant_path = path.with_name("hf_quant_config.json")
        quant = None
        if path.name == "config.json" and os.path.lexists(quant_path):
            quant = parse_json(read_capped(quant_path, MAX_CONFIG_BYTES, "hf_quant_config.json"), "hf_quant_config.json")
        return parse_config_json(raw, name=path.parent.name if path.name == "config.json" else path.stem, quant=quant)
    return load_spec_file(path, ModelSpec, "model")
