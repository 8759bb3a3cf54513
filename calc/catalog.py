"""The shipped specs, loaded once, and resolution of scenario ids against them."""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine_spec import EngineSpec
from calc.specs import GPUSpec, ModelSpec


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, GPUSpec]
    models: dict[str, ModelSpec]
    engines: dict[str, EngineSpec]
    problems: tuple[str, ...] = ()
    """Spec files skipped, one line each: 'hardware_specs/x.yaml: line 3: …'."""
