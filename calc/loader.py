"""The one module that reads files: our spec YAML and raw Hugging Face config.json files.

YAML goes through `yaml.safe_load`; every failure becomes an InputError naming the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from calc.errors import InputError, describe
from calc.specs import SUPPORTED_MODEL_TYPES, GPUSpec, ModelSpec

T = TypeVar("T", bound=BaseModel)

ROOT = Path(__file__).resolve().parent.parent
HARDWARE_DIR = ROOT / "hardware_specs"
MODEL_DIR = ROOT / "model_specs"
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


def load_catalog(hardware_dir: Path = HARDWARE_DIR, model_dir: Path = MODEL_DIR):
    from calc.catalog import Catalog  # local import: catalog has no I/O of its own

    return Catalog(gpus=load_specs(hardware_dir, GPUSpec), models=load_specs(model_dir, ModelSpec))


# --- Hugging Face config.json ---------------------------------------------------------------------------------

_ALIASES = {"experts_per_token": "num_experts_per_tok", "dtype": "torch_dtype"}
_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text", "opt")  # HF PretrainedConfig default tie=True for these


def _quantization(q: Any) -> dict | None:
    if not isinstance(q, dict):
        raise InputError("quantization_config", "expected an object with quant_method")
    method = q.get("quant_method")
    out: dict[str, Any] = {"quant_method": method}
    if method in ("awq", "gptq", "bitsandbytes"):
        bits = q.get("bits", q.get("w_bit", 4 if method != "bitsandbytes" else (4 if q.get("load_in_4bit") else 8)))
        out["bits"] = bits
    if method == "mxfp4":
        out["experts_only"] = True  # gpt-oss: modules_to_not_convert = attention, router, embeddings, lm_head
    return out


def model_from_hf_config(config: Any, name: str | None = None, source: str = "uploaded config.json") -> ModelSpec:
    """Build a ModelSpec from a parsed config.json (multimodal `text_config` unwrapped; cosmetic keys dropped)."""
    if not isinstance(config, dict):
        raise InputError("config.json", "expected a JSON object")
    cfg = dict(config)
    text = cfg.get("text_config")
    if isinstance(text, dict):  # Gemma-3, Llava…: the language model lives in text_config
        outer = {k: cfg[k] for k in ("architectures", "torch_dtype", "quantization_config") if k in cfg}
        cfg = {**outer, **text}
        cfg.setdefault("model_type", "gemma3_text" if config.get("model_type") == "gemma3" else None)
        defaults = cfg.pop("_defaults_from_Gemma3TextConfig", None)
        if isinstance(defaults, dict):
            for k, v in defaults.items():
                cfg.setdefault(k, v)
        if cfg.get("model_type") == "gemma3_text":
            cfg.setdefault("vocab_size", 262208)  # Gemma3TextConfig defaults (transformers)
            cfg.setdefault("max_position_embeddings", 131072)
            cfg.setdefault("sliding_window_pattern", 6)
    for old, new in _ALIASES.items():
        if old in cfg and new not in cfg:
            cfg[new] = cfg.pop(old)
    if "sliding_window_size" in cfg and cfg.get("sliding_window") is None:
        cfg["sliding_window"] = cfg["sliding_window_size"]
    if isinstance(cfg.get("torch_dtype"), str):
        cfg["torch_dtype"] = (cfg["torch_dtype"].split() or [""])[0]
    if cfg.get("tie_word_embeddings") is None:
        cfg["tie_word_embeddings"] = cfg.get("model_type") in _TIED_BY_DEFAULT
    if "quantization_config" in cfg and cfg["quantization_config"] is not None:
        cfg["quantization_config"] = _quantization(cfg["quantization_config"])
    keep = set(ModelSpec.model_fields) - {"name", "hf_id", "source"}
    data = {k: v for k, v in cfg.items() if k in keep and v is not None}
    hf_id = config.get("_name_or_path") if isinstance(config.get("_name_or_path"), str) else None
    data["name"] = name or hf_id or str(cfg.get("model_type") or "custom model")
    data["hf_id"] = hf_id
    data["source"] = source
    if "model_type" not in data:
        raise InputError("model_type", "missing: config.json must name its model_type")
    if data["model_type"] not in SUPPORTED_MODEL_TYPES:
        raise InputError(
            "model_type",
            f"'{str(data['model_type'])[:60]}' is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}",
        )
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as e:
        raise InputError("config.json", describe(e)) from None


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
