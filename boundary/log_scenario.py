"""The Scenario a vLLM startup log describes: its engine arguments (boundary.log_fields), the model and GPU it names
or implies, vLLM's own defaults where it states none, and the flags that fill gaps or override it."""

from __future__ import annotations

from pydantic import ValidationError

from boundary.log_fields import log_scenario_fields
from boundary.log_names import detect_gpu, match_model
from boundary.vllm_log import VllmLog
from calc.catalog import Catalog
from calc.engine_defaults import default_budget
from calc.engine_spec import version_tuple
from calc.errors import InputError, describe, first_field
from calc.scenario import Scenario


def build_scenario(log: VllmLog, catalog: Catalog, flags: dict,
                   defaults: dict | None = None) -> tuple[Scenario, str, bool, list[str]]:  # fmt: skip
    """The Scenario the log describes; `flags` (validated Scenario fields) fill gaps and override the log;
    `defaults` (the page's scenario) only fill what the log does not state.

    Returns (scenario, where the GPU came from, whether it was assumed, notes)."""
    given = version_tuple(flags.get("engine_version") or "") if flags.get("engine", "vllm") == "vllm" else None
    data, notes = log_scenario_fields(log, given)
    if "tensor_parallel_size" not in data and "pipeline_parallel_size" not in data and len(log.workers) > 1:
        tp, pp = _split_from_ranks(log)
        data |= {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}
        notes.append(f"assumed tensor_parallel_size={tp}, pipeline_parallel_size={pp} from {len(log.workers)} worker "
                     "ranks; pass --tensor-parallel-size / --pipeline-parallel-size if the split differs")  # fmt: skip
    for k, v in (defaults or {}).items():
        data.setdefault(k, v)
    if "model" not in flags:
        names = [n for n in (log.config.get("model"), log.config.get("served_model_name")) if n]
        hint = log.header.get("model", "").split(" ")[0]
        names += [hint] if "/" in hint else []
        ids = [match_model(n, catalog) for n in names]
        if not any(ids):
            said = f"names model '{names[0]}', which is not a shipped spec" if names else "does not name its model"
            raise InputError("model", f"the log {said}; pass --model ID (see `python -m calc models`) or --model "
                                      "PATH to a config.json")  # fmt: skip
        data["model"] = next(i for i in ids if i)
    gpu_source, assumed = "--gpu", False
    if "gpu" not in flags:
        total = log.first("total_memory_gib")
        gpu_id, gpu_source = detect_gpu(log, catalog, total.value if total else None)
        assumed = gpu_id is None
        data["gpu"] = gpu_id or Scenario.model_fields["gpu"].default
        if assumed:
            gpu_source = "ASSUMED (the log names no device; pass --gpu)"
    total, gpu_id = log.first("total_memory_gib"), flags.get("gpu", data.get("gpu"))
    spec_gib = catalog.gpus[gpu_id].memory_gib if gpu_id in catalog.gpus else None
    if total and spec_gib and abs(total.value - spec_gib) > 0.005:
        data["memory_gib"] = total.value
        notes.append(f"memory_gib={total.value} from the log's total GPU memory (spec: {spec_gib} GiB)")
    if log.engine == "V1" and (log.version_tuple or (0, 10)) >= (0, 10) and gpu_id in catalog.gpus:
        # what the server started with where the log does not say: vLLM's own defaults for this GPU
        # (calc.engine_defaults; 70 GiB or more, not an A100: 8,192 tokens and 1,024 sequences), not the planner's
        budget, seqs = default_budget("vllm", catalog.gpus[gpu_id].memory_gib, gpu_id)
        for name, value in (("max_num_batched_tokens", budget), ("max_num_seqs", seqs)):
            if name not in data and name not in flags and name not in (defaults or {}) and \
                    value != Scenario.model_fields[name].default:  # the planner's own needs no line
                data[name] = value
                notes.append(f"{name}={value:,}: vLLM's default on this GPU, which the log does not state")
    data |= flags
    dcp, tp = data.get("decode_context_parallel_size", 1), data.get("tensor_parallel_size", 1)
    if dcp > 1 and tp % dcp and "decode_context_parallel_size" not in flags:
        raise InputError("tensor_parallel_size", f"the log runs decode context parallelism {dcp} (its 'Multiplying the "
                         f"GPU KV cache size' line or engine arguments) but states no tensor_parallel_size it divides: "
                         "pass --tensor-parallel-size")  # fmt: skip
    if "max_model_len" not in data:
        notes.append(f"max_model_len is not in the log: using {Scenario.model_fields['max_model_len'].default} "
                     "(pass --max-model-len)")  # fmt: skip
    for _ in range(len(data) + 1):
        try:
            return Scenario.model_validate(data), gpu_source, assumed, notes
        except ValidationError as e:
            name = first_field(e)
            if name in flags or name not in data:
                raise InputError(name, describe(e)) from None
            notes.append(f"ignored the log's {name}={data.pop(name)!r} ({describe(e)})")
    raise InputError("log", "could not build a scenario from the log")  # pragma: no cover


def _split_from_ranks(log: VllmLog) -> tuple[int, int]:
    """(tp, pp) guessed from worker ranks: consecutive ranks 0..n−1 whose Available memory falls into k equal runs
    of one value each look like k pipeline stages (rank = pp_rank · tp + tp_rank); otherwise all ranks are TP."""
    n = len(log.workers)
    by_rank = {m.rank: m.value for m in log.get("available_kv_gib") if m.rank is not None}
    if sorted(by_rank) != list(range(n)):
        return n, 1
    runs = [1]
    for r in range(1, n):
        runs[-1:] = [runs[-1] + 1] if by_rank[r] == by_rank[r - 1] else [runs[-1], 1]
    return (n // len(runs), len(runs)) if len(runs) > 1 and len(set(runs)) == 1 else (n, 1)
