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
from calc.parallel_rules import accepted_tp_sizes, tp_check
from calc.scenario import Scenario, split_list
from calc.sglang_defaults import SGLANG_NO_TPU, sglang_runs_on
from calc.weights import weight_format

MAX_CONFIGS = 50_000
"""The most configurations one search evaluates; a larger space is refused, naming its lists and its count.

Measured 2026-12-02 on this 2-core host (time.process_time, 3–4 runs each; tracemalloc peak). Llama-3.2-1B on
every shipped GPU × TP 1,2,4,8 × PP 1,2,3 × four weight precisions × two KV × N max_num_seqs × both modes, on the
costliest path (latency_sigma 0, quota 0.9999999, a request rate): 46,464 configurations 0.36–0.39 s and 24 MB
(the page's whole Find-tab rerun 0.56–0.58 s); 97,152 0.88–0.96 s (the rerun 1.12–1.19 s). The old cap,
1,000,000, let 946,176 through: 7.6–8.5 s and 462 MB (10 s and 510 MB by the CLI). tests/test_cost_bound.py
times a space just under the cap."""


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
    left_out: tuple[str, ...] = ()
    """GPUs of the list the engine cannot run on, each with why (SGLang on TPUs)."""


def _values(s: Scenario, field: str, kind, default) -> tuple:
    """The list in `field` (validated by the Scenario), as typed values without repeats; `default` when empty."""
    items = split_list(getattr(s, field))
    return tuple(dict.fromkeys(kind(x) for x in items)) if items else (default,)


def space_of(s: Scenario, gpu_ids) -> Space:
    """The Scenario's search lists as a Space; InputError (naming search_gpus) for a GPU that is not shipped."""
    wanted = split_list(s.search_gpus)
    if "all" in wanted and len(wanted) > 1:  # 'all,h100-sxm' searched all, silently
        raise InputError("search_gpus", "'all' searches every shipped GPU: give it alone, or a list of GPU ids")
    if "all" in wanted:
        gpus = tuple(gpu_ids)
    else:
        unknown = [g for g in wanted if g not in gpu_ids]
        if unknown:
            raise InputError("search_gpus", f"unknown gpu '{unknown[0]}'; shipped: {', '.join(sorted(gpu_ids))}")
        gpus = tuple(dict.fromkeys(wanted))
    left_out = ()
    if s.engine == "sglang":  # its package has no TPU backend (sgl-jax is another project, with another CLI)
        tpus = [g for g in gpus if not sglang_runs_on(gpu_ids[g])]
        if tpus and len(tpus) == len(gpus):
            raise InputError("search_gpus", f"{', '.join(tpus)}: {SGLANG_NO_TPU}; search them with the vllm engine")
        gpus, left_out = tuple(g for g in gpus if g not in tpus), tuple(f"{g}: {SGLANG_NO_TPU}" for g in tpus)
    return Space(gpus=gpus, left_out=left_out, tensor_parallel_sizes=_values(s, "search_tensor_parallel_size", int, 1),
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


def grid(space: Space, s: Scenario, m, node_gpus: tuple[int | None, ...] = ()) -> Grid:
    """`node_gpus`: each searched GPU's GPUSpec.node_gpus (aligned with space.gpus); a (TP, PP) group larger than its
    node is left out for that GPU and named in `refused`."""
    parallel, refused = [], list(space.left_out)
    for tp in space.tensor_parallel_sizes:
        for pp in space.pipeline_parallel_sizes:
            problem = tp_check(s.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp}), m)
            (refused.append(f"TP {tp}, PP {pp}: {problem}") if problem else parallel.append((tp, pp)))
    if not parallel:  # nothing to search: name the list and what this model accepts
        raise InputError("search_tensor_parallel_size", f"no size tried starts ({refused[0]}); this model accepts "
                         f"tensor_parallel_size {accepted_tp_sizes(s, m)}")  # fmt: skip
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
        raise _too_large(n, shape, space)
    idx = [a.ravel() for a in np.indices(shape, dtype=np.intp)]
    limits = [(i, k) for i, k in enumerate(node_gpus) if k is not None]
    if limits:  # groups larger than a node of that GPU: across nodes, not modelled
        group = np.array([tp * pp for tp, pp in parallel])
        limit = np.full(len(space.gpus), np.inf)
        alike: dict[tuple, list[str]] = {}  # one note for every GPU that leaves out the same sizes (26 said one thing)
        for i, k in limits:
            limit[i] = k
            over = tuple(f"{tp}×{pp}" for tp, pp in parallel if tp * pp > k)
            if over:
                alike.setdefault((k, over), []).append(space.gpus[i])
        for (k, over), ids in alike.items():
            refused.append(f"{', '.join(ids)}: TP × PP {', '.join(over)} left out: one node holds {k:,} "
                           f"GPU{'s' * (k != 1)} (node_gpus), and a group across nodes is not modelled")  # fmt: skip
        keep = group[idx[1]] <= limit[idx[0]]
        if not keep.any():  # every GPU tried holds fewer a node than every group tried
            raise InputError("search_tensor_parallel_size", f"no size tried fits a node ({refused[-1]}); try "
                             f"tensor and pipeline sizes whose product is at most {max(k for _, k in limits):,}")  # fmt: skip
        idx = [a[keep] for a in idx]
    return Grid(space, tuple(parallel), dtypes, *idx, refused=tuple(refused))


SIZE_NAMES = ("search_gpus", "(search_tensor_parallel_size, search_pipeline_parallel_size) pairs", "search_dtype",
              "search_kv_cache_dtype", "search_max_num_seqs", "search_max_num_batched_tokens",
              "search_gpu_memory_utilization")  # fmt: skip
"""What each dimension of the grid's shape counts (the second: the (TP, PP) pairs the model accepts)."""


def _too_large(n: int, shape: tuple[int, ...], space: Space) -> InputError:
    """The refusal of a space over MAX_CONFIGS: its count and every list that multiplies it; the field is the longest
    list (`…: 946,176 configurations = 22 search_gpus × … × 24 search_max_num_seqs × 2 modes …; at most 50,000 …`)."""
    factors = [f"{k:,} {name}" for k, name in zip(shape, SIZE_NAMES, strict=True) if k > 1]
    factors += ["2 modes (search_disaggregated)"] if space.disaggregated else []
    longest = max(zip(shape, SIZE_NAMES, strict=True))[1]
    if longest == SIZE_NAMES[1]:  # the pairs: the longer of the two lists
        tp, pp = len(space.tensor_parallel_sizes), len(space.pipeline_parallel_sizes)
        longest = "search_tensor_parallel_size" if tp >= pp else "search_pipeline_parallel_size"
    return InputError(longest, f"{n:,} configurations = {' × '.join(factors) or '1'}; at most {MAX_CONFIGS:,} "
                               "(a search's cost bound): shorten these lists")
