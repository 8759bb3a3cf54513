"""The shipped specs, loaded once, and resolution of scenario ids against them."""

from __future__ import annotations

from dataclasses import dataclass

from calc.accuracy import Accuracy
from calc.engine_spec import EngineSpec
from calc.specs import GPUSpec, ModelSpec


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, GPUSpec]
    models: dict[str, ModelSpec]
    engines: dict[str, EngineSpec]
    problems: tuple[str, ...] = ()
    """Spec files skipped, one line each: 'hardware_specs/x.yaml: line 3: …'."""
    accuracy: Accuracy | None = None
    """Held-out error of the latency estimates (tests/data/benchmarks/errors.json); None when absent."""
