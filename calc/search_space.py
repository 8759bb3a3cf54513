"""The space calc.search evaluates: the Scenario's search_* lists, checked against the model and the shipped GPUs,
and the grid of their combinations as flat index arrays (one entry per configuration, one array per dimension).

Configurations vLLM refuses to start (a TP size that does not divide the heads, more stages than layers) are left
out of the grid and counted in `Grid.refused`; a weight precision that is the checkpoint's own ("auto" = bf16 for a
bf16 checkpoint, fp8 for DeepSeek-V3) is tried once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calc.errors import InputError
from calc.pool import tp_check
from calc.scenario import Scenario, split_list
from calc.weights import weight_format

LIST_FIELDS = ("search_gpus", "search_tensor_parallel_size", "search_dtype", "search_kv_cache_dtype",
               "search_max_num_seqs", "search_max_num_batched_tokens", "search_gpu_memory_utilization")  # fmt: skip
MAX_CONFIGS = 1_000_000  # ~1.5 s and ~0.5 GB of arrays on one core: a larger space is refused, naming the lists


@dataclass(frozen=True)
class Space:
    gpus: tuple[str, ...]
    tensor_parallel_sizes: tuple[int, ...]
    pipeline_parallel_sizes: tuple[int, ...]
    dtypes: tuple[str, ...]
    kv_cache_dtypes: tuple[str, ...]
    max_num_seqs: tuple[int, ...]
    max_num_batched_tokens: tuple[int, ...]
    gpu_memory_utilizations: tuple[float, ...]
    disaggregated: bool


def _values(s: Scenario, field: str, kind, default) -> tuple:
    """The list in `field` (validated by the Scenario), as typed values without repeats; `default` when empty."""
    items = split_list(getattr(s, field))
    return tuple(dict.fromkeys(kind(x) for x in items)) if items else (default,)


def space_of(s: Scenario, gpu_ids) -> Space:
    """The Scenario's search lists as a Space; InputError (naming search_gpus) for a GPU that is not shipped."""
    wanted = split_list(s.search_gpus)
    if "all" in wanted:
        gpus = tuple(gpu_ids)
    else:
        unknown = [g for g in wanted if g not in gpu_ids]
        if unknown:
            raise InputError("search_gpus", f"unknown gpu '{unknown[0]}'; shipped: {', '.join(sorted(gpu_ids))}")
        gpus = tuple(dict.fromkeys(wanted))
    return Space(gpus=gpus, tensor_parallel_sizes=_values(s, "search_tensor_parallel_size", int, 1),
                 pipeline_parallel_sizes=_values(s, "search_pipeline_parallel_size", int, 1),
                 dtypes=_values(s, "search_dtype", str, "auto"),
                 kv_cache_dtypes=_values(s, "search_kv_cache_dtype", str, "auto"),
                 max_num_seqs=_values(s, "search_max_num_seqs", int, s.max_num_seqs),
                 max_num_batched_tokens=_values(s, "search_max_num_batched_tokens", int, s.max_num_batched_tokens),
                 gpu_memory_utilizations=_values(s, "search_gpu_memory_utilization", float, s.gpu_memory_utilization),
                 disaggregated=s.search_disaggregated)  # fmt: skip


@dataclass(frozen=True)
class Grid:
    """Every configuration of a Space that vLLM would start, as one index per dimension (arrays of equal length)."""

    space: Space
    parallel: tuple[tuple[int, int], ...]
    """The (tensor_parallel_size, pipeline_parallel_size) pairs the model accepts."""
    dtypes: tuple[str, ...]
    """The weight precisions tried (the checkpoint's own format once)."""
    gpu: np.ndarray
    par: np.ndarray
    dtype: np.ndarray
    kv: np.ndarray
    seqs: np.ndarray
    budget: np.ndarray
    util: np.ndarray
    refused: tuple[str, ...]
    """Why the (TP, PP) pairs left out were refused, one line each."""

    @property
    def size(self) -> int:
        return len(self.gpu)


FOUR_BIT_BYTES = 0.7
"""Bytes per weight below which a checkpoint is already 4-bit (MXFP4 0.53, NVFP4 0.56, AWQ/GPTQ int4 0.52)."""


def grid(space: Space, s: Scenario, m) -> Grid:
    parallel, refused = [], []
    for tp in space.tensor_parallel_sizes:
        for pp in space.pipeline_parallel_sizes:
            problem = tp_check(s.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp}), m)
            (refused.append(f"TP {tp}, PP {pp}: {problem}") if problem else parallel.append((tp, pp)))
    formats: dict[tuple, str] = {}
    native = weight_format(m, "auto")
    four_bit = min(native.linear_bytes, native.expert_bytes) < FOUR_BIT_BYTES  # gpt-oss (MXFP4), NVFP4, AWQ …
    for d in space.dtypes:
        if four_bit and d != "auto" and "auto" in space.dtypes:
            continue  # a 4-bit checkpoint requantized is no smaller: its own format is the one to serve
        f = weight_format(m, d)
        formats.setdefault((f.linear_bytes, f.expert_bytes, f.compute_dtype), d)
    dtypes = tuple(formats.values())
    shape = (len(space.gpus), len(parallel), len(dtypes), len(space.kv_cache_dtypes), len(space.max_num_seqs),
             len(space.max_num_batched_tokens), len(space.gpu_memory_utilizations))  # fmt: skip
    n = int(np.prod(shape)) * (2 if space.disaggregated else 1)
    if n > MAX_CONFIGS:
        longest = max(zip(shape, LIST_FIELDS, strict=True))[1]
        raise InputError(longest, f"{n:,} configurations; at most {MAX_CONFIGS:,}: shorten this list or the others")
    idx = [a.ravel() for a in np.indices(shape, dtype=np.intp)]
    return Grid(space, tuple(parallel), dtypes, *idx, refused=tuple(refused))
