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


@dataclass(frozen=True)
class ModelSummary:
    """What a model picker shows beside a name: its size and what its weights take at their own precision."""

    params_total: float
    params_active: float
    weights_bytes: float
    """All weights at the checkpoint's own precision (dtype auto), every GPU together."""
    weights_label: str


def model_summary(m: ModelSpec) -> ModelSummary:
    from calc.params import count_params
    from calc.weights import weight_format, weights_bytes

    p = count_params(m)
    f = weight_format(m, "auto")
    return ModelSummary(p.total, p.active, weights_bytes(p, f), f.label)
