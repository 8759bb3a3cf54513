"""The one module that reads files: our spec YAML and raw Hugging Face config.json files.

YAML goes through `yaml.safe_load`; every failure becomes an InputError naming the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from calc.errors import InputError, describe
from calc.hf_config import model_from_hf_config
from calc.specs import GPUSpec, ModelSpec

T = TypeVar("T", bound=BaseModel)

ROOT = Path(__file__).resolve().parent.parent
HARDWARE_DIR = ROOT / "hardware_specs"
MODEL_DIR = ROOT / "model_specs"
ENGINE_DIR = ROOT / "engine_specs"
MAX_CONFIG_BYTES = 1_000_000  # upload cap for a config.json: real ones are a few kB


def load_spec_file(path: Path, model: type[T]) -> T:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise InputError(path.name, f"cannot read YAML ({type(e).__name__}: {str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(path.name, "expected a mapping of field: value")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise InputError(path.name, describe(e)) from None


def load_specs(directory: Path, model: type[T]) -> dict[str, T]:
    """Every `*.yaml` in `directory`, keyed by file stem (the spec id)."""
    return {p.stem: load_spec_file(p, model) for p in sorted(directory.glob("*.yaml"))}


def load_catalog(hardware_dir: Path = HARDWARE_DIR, model_dir: Path = MODEL_DIR, engine_dir: Path = ENGINE_DIR):
    from calc.catalog import Catalog  # local import: catalog has no I/O of its own
    from calc.engine_spec import EngineSpec

    return Catalog(gpus=load_specs(hardware_dir, GPUSpec), models=load_specs(model_dir, ModelSpec),
                   engines=load_specs(engine_dir, EngineSpec))  # fmt: skip


# --- Hugging Face config.json (the reader itself is calc.hf_config) -------------------------------------------


def parse_config_json(raw: bytes | str, name: str | None = None) -> ModelSpec:
    """An uploaded config.json, size-capped, to a ModelSpec."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise InputError("config.json", f"file is {len(raw):,} bytes; the limit is {MAX_CONFIG_BYTES:,}")
    try:
        config = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise InputError("config.json", f"not valid JSON ({str(e).splitlines()[0][:120]})") from None
    return model_from_hf_config(config, name=name)


def load_model_file(path: Path) -> ModelSpec:
    """A model YAML of ours or a Hugging Face config.json, chosen by extension."""
    if path.suffix == ".json":
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise InputError(str(path), f"cannot read ({e.strerror})") from None
        return parse_config_json(raw, name=path.parent.name if path.name == "config.json" else path.stem)
    return load_spec_file(path, ModelSpec)
