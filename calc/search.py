"""Find the deployment: every configuration of the search space (GPU × TP × PP × weight and KV precisions ×
max_num_seqs × max_num_batched_tokens × gpu_memory_utilization × aggregated | disaggregated) evaluated at once over
numpy arrays, then the Pareto frontier of tokens/s per user against tokens/s per GPU, the best configuration per
GPU and the cheapest that meets the SLOs.

Each aggregated configuration is what `evaluate()` gives for its Scenario (`SearchResult.scenario_of(i)`: the
configuration with `concurrency` at its operating point), entry for entry: the pool (calc.search_pool), the
latency closed forms (calc.search_step, calc.search_capacity), capacity, replicas and cost (this module, as
calc.replicas.fleet). The operating point is the capacity concurrency: the most requests in flight that keep the
conformance quota (1 when none does). Disaggregated: x prefill and y decode instances of the configuration,
prefill sized for the rate's prompt tokens (one prompt after another: L_in / prefill time tokens/s per instance),
decode for its output tokens (b / (output_len · TPOT) requests/s per instance, at its capacity b).

    tokens/s per user = 1 / TPOT     tokens/s per GPU = output tokens/s of one replica (or x:y unit) / its GPUs
    replicas = ⌈rate / capacity⌉     cost per million output tokens = price · GPUs / (rate · output_len · 3600) · 1e6
Without request_rate: one replica (one decode instance and its share of prefill), costed at its own throughput.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from calc.catalog import Catalog
from calc.cost import cost_per_million_output_tokens
from calc.errors import InputError
from calc.params import count_params
from calc.pool import kv_link_bytes_per_s, transfer_s
from calc.precision_support import checkpoint_dtype, dtype_refusal, unsupported
from calc.prefix_hit import hit_array
from calc.resolve import (
    base_model,
    checkpoint_kv,
    checkpoint_kv_note,
    default_context,
    for_other_gpu,
    override_gpu,
    override_model,
)
from calc.scenario import Scenario
from calc.search_capacity import Rows, Slo, prefill_pool_arrays
from calc.search_fleet import serve_mode
from calc.search_notes import (
    cheapest_in_one_currency,
    currency_notes,
    derived_price_note,
    estimated_price,
    extrapolation_note,
    low_ridge_note,
    price_notes,
    prices,
    quality_note,
)
from calc.search_pool import PoolArrays, kv_refused, pool_arrays
from calc.search_space import Grid, grid, space_of
from calc.search_step import step_arrays
from calc.specs import ModelSpec
from calc.workload import budget_refused

WHY = ("", "no memory is left for the KV cache", "the engine refuses to start: one max_model_len request does not fit",
       "a request is longer than max_model_len", "not even one request at a time keeps the quota's share of requests (conformance_quota) within the SLOs",
       "uses more GPUs than the limit (max GPUs)", "costs more per hour than the budget per hour",
       "vLLM refuses to start: max_model_len exceeds the model's maximum (max_position_embeddings, rope scaling)",
       "vLLM refuses to start: kv_cache_memory_bytes and the weights exceed the GPU's memory",
       "vLLM has no kernel for these weights on this GPU (its quantization support table)",
       "vLLM refuses to start: max_num_batched_tokens is below max_num_seqs",
       "vLLM refuses to start: bf16 needs a GPU of compute capability 8.0 or more (serve fp16, or auto)",
       "SGLang runs out of memory at its first large step: its activation peak and CUDA graphs exceed the rest of the "
       "GPU that --mem-fraction-static leaves",
       "SGLang cannot run a request: its Mamba state slots // ratio is 0",
       "vLLM 0.14–0.15 refuse to start: their check compares one max_model_len request's KV over the whole model with "
       "one pipeline stage's pool (vllm#32105)",
       "the engine has no kernel for this KV-cache precision here (nvfp4: vLLM 0.21+ on SM 10.x, 0.32+ on SM 8.x–12.x, "
       "no MLA; fp8 for an MLA model on SM 7.x, 8.x, 12.x, where Triton MLA is vLLM's only backend)")  # fmt: skip
CANNOT_SERVE = (1, 2, 3, 7, 8, 9, 10, 11, 12, 13, 14, 15)
"""The WHY entries of a configuration the engine would not serve at all (a row's `fits` is false), whatever the SLOs;
12, SGLang's out-of-memory first step, among them: it starts, and does not last."""


@dataclass(frozen=True)
class SearchResult:
    """Arrays over the configurations (the grid's, aggregated; then the same again disaggregated when searched)."""

    scenario: Scenario
    grid: Grid
    model_name: str
    hf_id: str | None
    currencies: tuple[str, ...]
    """Currency of each GPU of the space (the scenario's own for its GPU when it sets gpu_hour_price)."""
    pool: PoolArrays
    disaggregated: np.ndarray
    concurrency: np.ndarray
    """Operating point: requests in flight per replica (per decode instance), the capacity concurrency (1 if 0)."""
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    requests_per_s: np.ndarray
    """Throughput of one replica (one decode instance) at the operating point."""
    capacity_rps: np.ndarray
    """Requests/s one replica (one decode instance) serves within the SLOs at the quota; 0 when none."""
    tokens_per_s_per_user: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    replicas: np.ndarray
    """Replicas (prefill + decode instances when disaggregated) for request_rate; 0 where there is no deployment."""
    prefill_instances: np.ndarray
    decode_instances: np.ndarray
    gpus: np.ndarray
    price_per_gpu_hour: np.ndarray
    cost_per_hour: np.ndarray
    cost_per_million_output_tokens: np.ndarray
    why: np.ndarray
    """Index into WHY: 0 when the configuration fits, meets the SLOs and passes the filters."""
    frontier: tuple[int, ...]
    """Pareto-optimal configurations (tokens/s per user, tokens/s per GPU), fastest per user first."""
    cheapest: int | None
    best_per_gpu: dict[str, int]
    notes: tuple[str, ...] = field(default=())
    model: ModelSpec | None = field(default=None, repr=False, compare=False)
    """The model searched (its overrides applied): what moves a measured memory override to each configuration."""
    multimodal: bool = False
    """The checkpoint has a vision or audio tower (`model` has none under language_model_only)."""
    estimated_prices: frozenset = field(default=frozenset())
    """GPU ids whose price is their spec's estimate, not a published rate (calc.search_notes.estimated_price)."""
    archs: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Each GPU id's architecture (its serve command's flags: calc.serve_command.kv_cache_flag)."""

    @cached_property
    def requantized(self) -> np.ndarray:
        """Whether each configuration stores the weights in another format than the checkpoint's own (dtype not
        'auto'): at an equal cost the lists prefer the checkpoint's own."""
        return requantized(self.grid, len(self.disaggregated) // self.grid.size)

    @cached_property
    def conformance(self) -> np.ndarray:
        """P(TTFT ≤ slo_ttft_s) · P(TPOT ≤ slo_tpot_s) at the operating point (computed on first access)."""
        return Slo(self.scenario).conformance(self.ttft_s, self.tpot_s)

    @property
    def goodput_rps(self) -> np.ndarray:
        """Requests/s of one replica served within both SLOs: throughput × conformance."""
        return self.requests_per_s * self.conformance

    def conformance_at(self, i: int) -> float:
        """conformance[i] alone: a row's figure without the whole space's (a scalar Φ per configuration)."""
        return float(Slo(self.scenario).conformance(self.ttft_s[i: i + 1], self.tpot_s[i: i + 1])[0])

    def why_not(self, i: int) -> str:
        return self._reason(int(self.why[i]))

    def _reason(self, k: int) -> str:
        """WHY[k], naming the engine searched where the refusal is the engine's own and both engines refuse alike."""
        if self.scenario.engine == "sglang" and k == 9:  # the table is vLLM's, taken for SGLang's kernels too
            return "no kernel for these weights on this GPU (vLLM's quantization support table, taken for SGLang's)"
        return WHY[k].replace("vLLM", "SGLang") if k in (7, 11) and self.scenario.engine == "sglang" else WHY[k]

    def why_counts(self) -> dict[str, int]:
        """How many configurations each reason rules out, the commonest first (empty when none is ruled out)."""
        counts = np.bincount(self.why, minlength=len(WHY))
        order = sorted(range(1, len(WHY)), key=lambda k: -counts[k])
        return {self._reason(k): int(counts[k]) for k in order if counts[k]}

    @property
    def configs_evaluated(self) -> int:
        return len(self.ttft_s)

    @property
    def eligible(self) -> np.ndarray:
        return self.why == 0

    def base(self, i: int) -> int:
        """The grid entry of configuration i (the same for its aggregated and disaggregated forms)."""
        return int(i) % self.grid.size

    def currency(self, i: int) -> str:
        return self.currencies[self.grid.gpu[self.base(i)]]

    def top(self, n: int = 10, *, disaggregated: bool | None = None) -> list[int]:
        """The n cheapest eligible configurations (ties: fewer GPUs, then more tokens/s per user), of one serving
        mode when `disaggregated` is given; of configurations that serve the same (served_key), or that differ only
        in a max_num_seqs their operating point never reaches (the same numbers), the first."""
        mask = self.eligible if disaggregated is None else self.eligible & (self.disaggregated == disaggregated)
        out: list[int] = []
        seen: set[tuple] = set()
        order = by_cost(self.cost_per_million_output_tokens, self.gpus, self.tokens_per_s_per_user, mask,
                        self.requantized).tolist()  # fmt: skip
        if len(set(self.currencies)) > 1 and order:  # costs are not converted: the first's currency, then the others
            cur = [self.currencies[self.grid.gpu[self.base(i)]] for i in order]
            order = [i for _, i in sorted(zip((c != cur[0] for c in cur), order, strict=True), key=lambda x: x[0])]
        for i in order:
            key = self.served_key(i)
            alike = (*key[:4], *key[5:], float(self.ttft_s[i]), float(self.tpot_s[i]), int(self.gpus[i]),
                     int(self.concurrency[i]))  # fmt: skip
            if key not in seen and alike not in seen:
                seen.update((key, alike))
                out.append(i)
                if len(out) == n:
                    break
        return out

    def served_seqs(self, i: int) -> int:
        """The max_num_seqs configuration i is served with: under vLLM at most what the KV pool holds at the full
        length, since vLLM admits a request when its prompt fits and above that a burst preempts
        (calc.replicas.Capacity.overcommitted); the capacity, found at the slots the pool holds, is the same. Under
        SGLang at most a hybrid's state slots // ratio (calc.sglang_hybrid), which it runs whatever it is asked."""
        g, b = self.grid, self.base(i)
        seqs = int(g.space.max_num_seqs[g.seqs[b]])
        held = int(self.pool.max_concurrency_at_length[b])
        if held < 1:  # a configuration that cannot start: shown as tried
            return seqs
        if self.scenario.engine == "sglang":  # a hybrid's state slots cap it, as the plan runs it
            return min(seqs, int(self.pool.running_cap[b]))
        return min(seqs, held)

    def served_key(self, i: int) -> tuple:
        """What configuration i deploys: its grid entry with max_num_seqs as served, and its serving mode. Entries
        that differ only in a max_num_seqs above what the pool holds serve the same and show the same numbers."""
        g, b = self.grid, self.base(i)
        return (int(g.gpu[b]), int(g.par[b]), int(g.dtype[b]), int(g.kv[b]), self.served_seqs(i), int(g.budget[b]),
                int(g.util[b]), bool(self.disaggregated[i]))  # fmt: skip


def search(s: Scenario, catalog: Catalog) -> SearchResult:
    """Every configuration of the scenario's search space (search_gpus × TP × PP × dtypes × max_num_seqs × …),
    evaluated as arrays: per configuration TTFT and TPOT (s), tokens/s per user and per GPU, replicas, GPUs and cost
    at the request rate, and why it is out (SearchResult; calc.search_rows.row(result, i) gives one as the CLI's JSON
    row, result.cheapest the cheapest that meets the SLOs). InputError names the search field that is wrong."""
    if s.gpu not in catalog.gpus:  # its price and overrides are the scenario's GPU's: a name that is none is a typo
        raise InputError("gpu", f"unknown gpu '{s.gpu}'; shipped: {', '.join(sorted(catalog.gpus))}")
    base = base_model(s, catalog)
    model = override_model(s, base)
    s = default_context(s, model)
    dp_note: tuple[str, ...] = ()
    if s.data_parallel_size > 1:  # the search's array twin of the step model has no data-parallel ranks
        dp_note = (f"data_parallel_size {s.data_parallel_size} is not searched: every configuration has one attention "
                   "rank (open one, then set data_parallel_size on the plan to compare)",)  # fmt: skip
        s = s.model_copy(update={"data_parallel_size": 1})
    if s.decode_context_parallel_size > 1:  # its array twin splits no request's tokens over GPUs
        dp_note += (f"decode_context_parallel_size {s.decode_context_parallel_size} is not searched: every "
                    "configuration keeps each request's tokens on every tensor-parallel GPU (open one, then set it on "
                    "the plan to compare)",)  # fmt: skip
        s = s.model_copy(update={"decode_context_parallel_size": 1})
    if s.speculative_method != "none":  # its draft's layers and weights are the plan's (calc.speculative), not the arrays'
        dp_note += (f"speculative_method {s.speculative_method} is not searched: every configuration is sized and timed "
                    "without a draft (open one, then set it on the plan to see its memory and, with "
                    "draft_acceptance_rate, its speed; measured weights, if given, keep the draft's)",)  # fmt: skip
        s = s.model_copy(update={"speculative_method": "none", "draft_acceptance_rate": None,  # none of its fields
                                 "num_speculative_tokens": Scenario.model_fields["num_speculative_tokens"].default})
    sp = space_of(s, catalog.gpus)
    auto_is = checkpoint_kv(s.model_copy(update={"kv_cache_dtype": "auto"}), model).kv_cache_dtype
    if "auto" in sp.kv_cache_dtypes and auto_is != "auto":
        # 'auto' is the checkpoint's KV precision (its scales, calc.resolve.CHECKPOINT_KV_SINCE): listed as such
        sp = replace(sp, kv_cache_dtypes=tuple(dict.fromkeys(auto_is if k == "auto" else k for k in sp.kv_cache_dtypes)))
        dp_note += (f"{checkpoint_kv_note(s, model)}: its configurations are listed as {auto_is}",)
    gpus = {gid: _planned_gpu(s, catalog, gid) for gid in sp.gpus}
    g = grid(sp, s, model, tuple(gpus[gid].node_gpus for gid in sp.gpus))
    pool = pool_arrays(s, model, gpus, g)
    hit = hit_array(s, pool.block_size, pool.state_bytes_per_request)  # the shared prompt's cached tokens
    consts, rows = step_arrays(s, model, catalog, g, count_params(model), hit)
    link = np.array([[kv_link_bytes_per_s(s, gpus[x], t * p) for t, p in g.parallel] for x in sp.gpus])[g.gpu, g.par]
    kv_read = [(rows[f"kb{i}"], cap) for i, cap in enumerate(consts.caps)]  # per kind: calc.latency's model.kv_read
    rows["transfer"] = transfer_s(pool, s.input_len, link, kv_read)
    rows["pinst"], rows["pwait"] = prefill_pool_arrays(s, rows)  # disaggregated: the prefill instances and their wait
    table, slo = Rows(rows), Slo(s)
    held = pool.max_concurrency_at_length
    modes = [False, True] if sp.disaggregated else [False]
    parts = [serve_mode(s, consts, table, slo, held, dis) for dis in modes]
    tp = np.array([t for t, _ in g.parallel])[g.par]
    pp = np.array([p for _, p in g.parallel])[g.par]
    gpr = np.tile(tp * pp, len(modes))
    price_g, currencies = prices(s, catalog, sp.gpus)
    price = np.tile(price_g[g.gpu], len(modes))
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    gpus_used = np.where(cat["units"] > 0, cat["units"] * gpr, 0)
    per_hour = price * gpus_used
    rate = cat["rate"]
    per_m = np.where(gpus_used > 0, cost_per_million_output_tokens(per_hour, rate, s.output_len), np.nan)
    why = _why(s, pool, model.max_len_limit)
    # the checkpoint's own format under "auto": an MXFP4 or FP8 checkpoint needs its kernel whatever the flag says
    kernel = np.array([[bool(unsupported(checkpoint_dtype(d, model), gpus[gid].arch)) for d in g.dtypes]
                       for gid in sp.gpus])  # fmt: skip
    why = np.where((why == 0) & kernel[g.gpu, g.dtype], 9, why)
    no_start = np.array([[bool(dtype_refusal(d, gpus[gid].arch)) for d in g.dtypes] for gid in sp.gpus])
    why = np.where((why == 0) & no_start[g.gpu, g.dtype], 11, why)  # what is left of dtype_refusal: bf16 below 8.0
    why = np.where((why == 0) & kv_refused(s, model, gpus, sp)[g.gpu, g.kv], 15, why)
    seqs, budget = np.array(sp.max_num_seqs)[g.seqs], np.array(sp.max_num_batched_tokens)[g.budget]
    why = np.where((why == 0) & budget_refused(s.engine, budget, seqs), 10, why)
    why = np.tile(why, len(modes))
    why = np.where((why == 0) & (cat["ok"] < 1), 4, why)
    if s.search_max_gpus is not None:
        why = np.where((why == 0) & (gpus_used > s.search_max_gpus), 5, why)
    if s.search_budget_per_hour is not None:
        why = np.where((why == 0) & (per_hour > s.search_budget_per_hour), 6, why)
    user = 1 / cat["tpot"]
    per_gpu = cat["thr"] * s.output_len / (gpr * cat["share"])
    ok = why == 0
    notes = currency_notes(currencies, g.gpu, ok) + price_notes(s, sp.gpus)
    gpu_of = np.tile(g.gpu, len(modes))
    cheap_first = cheapest_per_group(per_m, gpus_used, user, ok, gpu_of, len(sp.gpus), requantized(g, len(modes)))
    cheapest = cheapest_in_one_currency(cheap_first, np.array(currencies, dtype=object)[gpu_of], ok)
    notes += derived_price_note(s, catalog, sp.gpus[gpu_of[cheapest]] if cheapest is not None else None)
    notes += low_ridge_note(catalog, sp.gpus[gpu_of[cheapest]] if cheapest is not None else None)
    if cheapest is not None:
        notes += extrapolation_note(s, catalog, float(np.maximum(cat["ok"], 1)[cheapest]))
        notes += quality_note(model, g.dtypes[g.dtype[int(cheapest) % g.size]])
    return SearchResult(
        scenario=s, grid=g, model_name=model.name, hf_id=model.hf_id, currencies=currencies, pool=pool,
        disaggregated=np.repeat(np.array(modes), g.size), concurrency=np.maximum(cat["ok"], 1), ttft_s=cat["ttft"],
        tpot_s=cat["tpot"], requests_per_s=cat["thr"], capacity_rps=cat["cap"], tokens_per_s_per_user=user, tokens_per_s_per_gpu=per_gpu,
        replicas=cat["units"], prefill_instances=cat["prefill"], decode_instances=cat["decode"], gpus=gpus_used,
        price_per_gpu_hour=price, cost_per_hour=per_hour, cost_per_million_output_tokens=per_m, why=why,
        frontier=pareto(user, per_gpu, ok), cheapest=cheapest,
        best_per_gpu=dict(zip((sp.gpus[x] for x in gpu_of[cheap_first]), cheap_first.tolist(), strict=True)),
        notes=dp_note + notes + tuple(g.refused), model=model, multimodal=bool(base.vision_config or base.audio_config),
        estimated_prices=frozenset(gid for gid in sp.gpus if estimated_price(s, catalog, gid)),
        archs={gid: catalog.gpus[gid].arch for gid in sp.gpus},
    )  # fmt: skip


def _why(s: Scenario, pool: PoolArrays, positions: int) -> np.ndarray:
    why = np.zeros(len(pool.num_gpu_blocks), dtype=np.int8)
    why[pool.sglang_short] = 12  # the pool fits; the server would not last
    why[pool.running_cap == 0] = 13
    why[pool.max_concurrency < 1] = 2
    why[pool.num_gpu_blocks == 0] = 1
    if s.request_len > s.max_model_len:  # every configuration alike, memory or not: the one reason to name
        why[:] = 3
    if pool.whole_model_refused is not None:
        why[pool.whole_model_refused] = 14
    why[pool.pool_beyond_gpu] = 8
    if s.max_model_len > positions:  # whatever the memory: calc.workload.fit_workload's refusal
        why[:] = 7
    return why


def _planned_gpu(s: Scenario, catalog: Catalog, gid: str):
    """The GPU's memory and links as the scenario plans them: its own GPU with its overrides, the others from their
    specs (the peak, which follows the matmul precision, is calc.search_step's)."""
    return override_gpu(for_other_gpu(s, gid), catalog.gpus[gid], "bf16")


def pareto(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> tuple[int, ...]:
    """Indices (where mask) that no other point beats on both x and y, by descending x (ties: higher y first)."""
    idx = np.flatnonzero(mask)
    if not idx.size:
        return ()
    idx = idx[np.argsort(-x[idx] - 1j * y[idx], kind="stable")]  # complex keys sort by x, then y: one pass
    ys = y[idx]
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(ys)[:-1]))
    return tuple(int(i) for i in idx[ys > best_before])


def requantized(g: Grid, modes: int) -> np.ndarray:
    """Per configuration (the grid's, once per serving mode): weights stored in another format than the
    checkpoint's own (dtype not 'auto')."""
    return np.tile(np.array([d != "auto" for d in g.dtypes])[g.dtype], modes)


def cheapest_per_group(cost: np.ndarray, gpus: np.ndarray, user: np.ndarray, mask: np.ndarray, group: np.ndarray,
                       groups: int, requantized: np.ndarray | None = None) -> np.ndarray:
    """The by_cost-first entry of each group (a GPU), cheapest first: only entries at their group's lowest cost are
    ordered (the rest cannot come first)."""
    idx = np.flatnonzero(mask & np.isfinite(cost))
    low = np.full(groups, np.inf)
    np.minimum.at(low, group[idx], cost[idx])
    idx = idx[cost[idx] == low[group[idx]]]
    idx = idx[_order(idx, cost, gpus, user, requantized)]
    return idx[np.sort(np.unique(group[idx], return_index=True)[1])]


def by_cost(cost: np.ndarray, gpus: np.ndarray, user: np.ndarray, mask: np.ndarray,
            requantized: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Indices (where mask and priced) from the cheapest per million output tokens; ties: fewer GPUs, then the
    checkpoint's own weights over requantized ones (same cost, no quality risk), then more tokens/s per user."""
    idx = np.flatnonzero(mask & np.isfinite(cost))
    return idx[_order(idx, cost, gpus, user, requantized)]


def _order(idx, cost, gpus, user, requantized):
    keys = (-user[idx],) + ((requantized[idx],) if requantized is not None else ()) + (gpus[idx], cost[idx])
    return np.lexsort(keys)
