"""calc.step_time.StepModel.terms and calc.latency's closed forms over arrays of configurations.

The per-rank quantities come from the scalar code: calc.step_inputs.step_model once per distinct (TP, weight
precision, KV dtype) for what does not depend on the GPU, and calc.step_inputs.gpu_rates once per (GPU, matmul
precision) for what does. The arithmetic below repeats StepModel.terms and calc.latency.latency operation for
operation and in the same order, so an entry equals the scalar result (tests/test_search_parity.py holds them to
1e-9 on random configurations; exact zeros the scalar adds are skipped, which changes no bit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from types import SimpleNamespace

import numpy as np

from calc.engine_cycle import idle_launch_s
from calc.expert_parallel import expected_max_normal
from calc.front_end import front_busy_s, request_overhead_s
from calc.pool import kv_bytes_per_element
from calc.precision_support import served_format
from calc.prefill_queue import work_s
from calc.resolve import engine_of, override_gpu
from calc.routing import distinct_experts
from calc.scenario import Scenario
from calc.search_space import Grid
from calc.step_inputs import allreduce_link, expert_compute_share, fp8_moe_s, gpu_rates, step_model
from calc.step_time import chunk_pairs, prompts_in
from calc.weights import weight_format


@dataclass(frozen=True)
class _PoolInputs:
    """What step_model reads from a PoolResult (the rest of the pool does not enter the step time)."""

    params: object
    weight_format: object
    kv_bytes_per_element: float


@dataclass(frozen=True)
class Consts:
    """What every configuration shares: the model, the engine and the scenario's lengths."""

    gcs: float
    """The routed experts' share: gemm_compute_share × moe_compute_share (1 under an mfu override)."""
    allreduces: float
    """All-reduces per step: 2 × blocks (one per sublayer)."""
    arb: float
    step_overhead_s: float
    layer_overhead_s: float
    """StepModel.launch_s with CUDA graphs (without under enforce_eager)."""
    layer_overhead_eager_s: float
    """StepModel.launch_s without: steps of more than cudagraph_max_tokens tokens have no captured graph."""
    cudagraph_max_tokens: int
    prompt_steps_eager: bool
    """StepModel.prompt_steps_eager: every step that carries prompt tokens runs without a graph."""
    compile_s: float
    """StepModel.compile_s: added to every step that carries prompt tokens."""
    per_seq_s: float
    experts: int
    routing: float
    """The engine's routing_exponent: n tokens touch experts like n^routing uniform draws."""
    prefill_routing: float
    """StepModel.prefill_routing: a prompt's m tokens count as m^prefill_routing of those draws."""
    skew: float
    """The engine's routing_skew (calc.routing: 0 is uniform routing)."""
    top_k: int
    moe_layers: int
    caps: tuple[float, ...]
    state: bool
    """Some layer keeps a per-request state (Mamba, linear attention): its read and write-back enter each step."""
    mixed: bool
    lagged: bool
    """SGLang's overlap schedule with outputs past the first token (calc.latency: the step in flight is waited)."""
    N: int
    ctx: float
    front_s: float
    front_queue_s: float
    idle_launch_s: float = 0.0
    """calc.engine_cycle.idle_launch_s: added at b ≤ 1."""
    rate: float | None = None
    """The scenario's request rate (disaggregated: prompts queue for a prefill instance)."""
    front_busy_s: float = 0.0
    """The front end's CPU time per request, one at a time (calc.latency.front_busy_s)."""
    expert_parallel: bool = False
    """Whole experts spread over the TP group (the scenario's enable_expert_parallel, a MoE model): a step waits for
    its busiest GPU (calc.expert_parallel; rows 'rk' and 'zep')."""
    pipelined: bool = False
    """Some configuration has pipeline stages (row 'pp'): its step is calc.pipeline_round.pipeline_round's, a micro-batch a stage."""


def step_arrays(s: Scenario, m, catalog, grid: Grid, params, hit=0.0) -> tuple[Consts, dict[str, np.ndarray]]:
    """The step model of every configuration: shared constants, and one row per per-configuration quantity
    (rows 'kb<i>'/'af<i>' per attention kind: KV bytes and attention FLOP per context token; 'Lp', 'hit', 'pairs':
    the prompt tokens computed, those `hit` found cached (calc.prefix_hit.hit_array), their attention pairs)."""
    sp, engine = grid.space, engine_of(s, catalog)
    tps = sorted({tp for tp, _ in grid.parallel})
    rep_gpu = catalog.gpus[sp.gpus[0]]

    def model_at(tp: int, d: int, k: int):
        t = s.model_copy(update={"tensor_parallel_size": tp, "dtype": grid.dtypes[d], "kv_cache_dtype": sp.kv_cache_dtypes[k]})
        return step_model(t, m, rep_gpu, _PoolInputs(params, weight_format(m, grid.dtypes[d]), kv_bytes_per_element(t)), engine)

    # the weights' precision does not enter the KV reads, nor the KV dtype the rest: one model per (TP, precision)
    # at the first KV dtype, and the KV reads of the others from one model per (TP, KV dtype)
    base = {(ti, d): model_at(tp, d, 0) for ti, tp in enumerate(tps) for d in range(len(grid.dtypes))}
    kv_read = {(ti, k): (base[ti, 0] if k == 0 else model_at(tp, 0, k)).kv_read
               for ti, tp in enumerate(tps) for k in range(len(sp.kv_cache_dtypes))}  # fmt: skip
    rates, moe_share, fp8_moe = {}, np.empty((len(sp.gpus), len(grid.dtypes))), np.zeros((len(sp.gpus), len(grid.dtypes)))
    ars = np.empty((len(sp.gpus), len(tps), 4))  # calc.step_inputs.AllReduceLink per (GPU, TP)
    for gi, gid in enumerate(sp.gpus):
        for d, dt in enumerate(grid.dtypes):
            cd = served_format(weight_format(m, dt), dt, catalog.gpus[gid].arch).compute_dtype
            g = override_gpu(s, catalog.gpus[gid], cd) if gid == s.gpu else catalog.gpus[gid]
            rates[gi, d] = gpu_rates(s, g, cd)
            moe_share[gi, d] = 1.0 if s.mfu is not None else expert_compute_share(engine, cd, g)
            fp8_moe[gi, d] = fp8_moe_s(engine, m.plan.count("ffn:moe"), g.arch, cd)
        ars[gi] = [allreduce_link(g, tp, engine) for tp in tps]  # PCIe, the bridge, or past it
    one = base[0, 0]
    tp_of = np.array([tp for tp, _ in grid.parallel])[grid.par]
    pp_of = np.array([pp for _, pp in grid.parallel])[grid.par]
    tpi = np.searchsorted(tps, tp_of)
    shape, kinds = (len(tps), len(grid.dtypes)), len(one.kv_read)
    keys = list(product(*map(range, shape)))
    sm = {name: np.array([getattr(base[key], name) for key in keys]).reshape(shape)
          for name in ("dense_weight_bytes", "gemm_flop_per_token", "logits_flop_per_token", "expert_bytes",
                       "expert_flop_per_token", "state_bytes_per_seq", "weight_share", "expert_weight_share",
                       "weight_half_tokens", "expert_half_tokens")}  # fmt: skip
    kvshape = (len(tps), len(sp.kv_cache_dtypes))
    kb = np.array([[b for b, _ in kv_read[key]] for key in product(*map(range, kvshape))]).reshape(*kvshape, kinds)
    af = np.array([[f for f, _ in base[ti, 0].attention_flop] for ti in range(len(tps))]).reshape(len(tps), kinds)
    fsum = np.array([sum(f for f, _ in base[ti, 0].attention_flop) for ti in range(len(tps))])
    rshape = (len(sp.gpus), len(grid.dtypes))
    rkeys = list(product(*map(range, rshape)))
    rt = {name: np.array([getattr(rates[key], name) for key in rkeys]).reshape(rshape)
          for name in ("effective_bandwidth_bytes_per_s", "effective_flop_per_s")}  # fmt: skip
    ar = ars[grid.gpu, tpi]
    ix, gx = (tpi, grid.dtype), (grid.gpu, grid.dtype)
    bw, fl = rt["effective_bandwidth_bytes_per_s"][gx], rt["effective_flop_per_s"][gx]
    mbu_over, mfu_over = s.mbu is not None, s.mfu is not None
    share = 1.0 if mbu_over else sm["weight_share"][ix]
    attn_bw = 1.0 if mbu_over else engine.attention_bandwidth_share
    rows = {"Wt": sm["dense_weight_bytes"][ix] / (bw * share), "fl": fl, "gf": sm["gemm_flop_per_token"][ix],
            "lf": sm["logits_flop_per_token"][ix], "bwa": bw * attn_bw, "flacs": fl * engine.attention_compute_share,
            "hd": sm["weight_half_tokens"][ix], "F": fsum[tpi], "latx": np.where(tp_of > 1, ar[:, 0], 0.0), "arc": 2 * (tp_of - 1) / tp_of,
            "link": ar[:, 1], "arslow": ar[:, 2], "arsmall": ar[:, 3], "budget": np.array(sp.max_num_batched_tokens, dtype=float)[grid.budget]}  # fmt: skip
    if one.experts:  # rows a dense model does not need stay out of every gather
        moe = 1.0 if mbu_over else sm["expert_weight_share"][ix]
        rows |= {"EB": sm["expert_bytes"][ix], "bwm": bw * moe, "eft": sm["expert_flop_per_token"][ix],
                 "he": sm["expert_half_tokens"][ix], "gcm": moe_share[gx], "f8": fp8_moe[gx]}
        if s.enable_expert_parallel:
            rows |= {"rk": tp_of.astype(float), "zep": np.array([expected_max_normal(int(t)) for t in tps])[tpi]}
    if (pp_of > 1).any():
        rows["pp"] = pp_of.astype(float)
    state = bool(sm["state_bytes_per_seq"].any())
    if state:
        rows |= {"sps": sm["state_bytes_per_seq"][ix], "bw": bw}
    for i in range(kinds):
        rows[f"kb{i}"], rows[f"af{i}"] = kb[tpi, grid.kv, i], af[tpi, i]
    L, N = s.input_len, s.output_len
    c = Consts(gcs=1.0 if mfu_over else engine.gemm_compute_share,
               allreduces=2 * one.blocks,
               arb=one.allreduce_bytes_per_token, step_overhead_s=engine.step_overhead_s,
               layer_overhead_s=one.launch_s(s.enforce_eager), layer_overhead_eager_s=one.launch_s(True),
               cudagraph_max_tokens=engine.cudagraph_max_tokens, prompt_steps_eager=one.prompt_steps_eager,
               compile_s=one.compile_s,
               per_seq_s=engine.per_sequence_s + one.stream_s, experts=one.experts, routing=engine.routing_exponent,
               prefill_routing=one.prefill_routing, skew=engine.routing_skew, top_k=one.top_k, moe_layers=one.moe_layers,
               caps=tuple(cap for _, cap in one.kv_read), state=state, mixed=engine.scheduling == "decode-first",
               lagged=engine.scheduling == "prefill-first" and engine.overlap_schedule and N > 1,
               N=N, ctx=L + N / 2, front_s=request_overhead_s(s, engine, m),
               front_queue_s=request_overhead_s(s, engine, m) + s.queue_s, rate=s.request_rate,
               idle_launch_s=idle_launch_s(s, engine),
               front_busy_s=front_busy_s(s, engine, m), expert_parallel=bool(s.enable_expert_parallel and one.experts),
               pipelined=bool((pp_of > 1).any()))  # fmt: skip
    h = np.broadcast_to(np.asarray(hit, dtype=float), rows["budget"].shape)
    rows |= {"hit": h, "Lp": L - h, "pairs": chunk_pairs(L - h, h)}  # calc.engine_cycle.cycle's prompt
    v = SimpleNamespace(**rows)
    steps = np.ceil(v.Lp / np.maximum(1, v.budget))
    rows["alone"] = step_total(c, v, v.Lp / steps, v.pairs / steps, 0, 0.0, scale=steps)
    rows["base"] = c.front_queue_s + rows["alone"]
    rows["dec1"] = step_total(c, v, 0, 0, 1, 1 * c.ctx)
    budget_step = step_total(c, v, v.budget, chunk_pairs(v.budget, h), 0, 0.0, pseqs=prompts_in(v.budget, v.Lp))
    rows["work"] = work_s(rows["alone"], v.Lp, budget_step, v.budget)  # calc.replicas.prefill_work_s
    return c, rows


def step_total(c: Consts, v, pt, pairs, ds, dctx, scale=None, pseqs=1):
    """StepModel.terms(pt, pairs, ds, dctx, pseqs).total_s (each term × `scale` first when given, as
    latency.scaled); with pipeline stages, calc.pipeline_round.pipeline_round's: the heavy micro-batch and k − 1 light ones of d / k
    decodes each, k = min(pp, d)."""
    if not c.pipelined:
        return _one_batch(c, v, pt, pairs, ds, dctx, scale, pseqs)
    p = v.pp
    k = np.maximum(1.0, np.minimum(p, ds))  # at least one micro-batch, none of less than one request
    heavy = _one_batch(c, v, pt, pairs, ds / k, dctx / k, scale, pseqs, seq=False)
    seq = ds * c.per_seq_s if scale is None else ds * c.per_seq_s * scale
    if not np.any(pt):  # decode only: every micro-batch is the heavy one's twin, and k ≤ p
        return heavy + seq
    light = _one_batch(c, v, 0, 0, np.maximum(ds / k, 1.0), dctx / k, scale, 1, seq=False)  # k = 1 (no light one): finite
    return np.maximum(heavy, (heavy + (k - 1) * light) / p) + seq


def _one_batch(c: Consts, v, pt, pairs, ds, dctx, scale=None, pseqs=1, seq=True):
    """One batch through every stage: StepModel._parts summed (without the per-sequence term when `seq` is False)."""
    n = ds + pt
    ramp = n / (n + v.hd) * c.gcs
    gemm = n * v.gf + (ds + (np.asarray(pt) > 0)) * v.lf
    out = [np.maximum(v.Wt, gemm / (v.fl * ramp))]
    if c.experts:
        draws = ds + pseqs * (np.asarray(pt) / pseqs) ** c.prefill_routing
        touched = distinct_experts(experts=c.experts, top_k=c.top_k, tokens=draws ** c.routing, skew=c.skew) * c.moe_layers
        per_expert = n * c.top_k * c.moe_layers / touched
        busy_bytes = busy_tokens = 1.0
        if c.expert_parallel:  # calc.expert_parallel, per configuration's TP size (z = 0 at TP 1: both 1)
            per = c.experts / v.rk
            q = np.clip(touched / c.moe_layers / c.experts, 1e-12, 1.0)
            busy_bytes = np.minimum(per, per * q + v.zep * np.sqrt(per * q * (1.0 - q))) / (per * q)
            busy_tokens = np.minimum(v.rk, 1.0 + v.zep * np.sqrt((v.rk - 1) / np.maximum(n * c.top_k, 1.0)))
        out.append(np.maximum(touched * v.EB * busy_bytes / v.bwm,
                              n * v.eft * busy_tokens / (v.fl * per_expert / (per_expert + v.he) * v.gcm)))
        out.append(v.f8)  # StepModel.fp8_moe_s (0 but for FP8 experts on CDNA3)
    if c.caps:
        dsa = np.asarray(ds)
        avg = np.divide(dctx, ds, out=np.zeros(np.broadcast(dctx, dsa).shape), where=dsa > 0) if np.ndim(ds) else \
            (dctx / ds if ds else 0.0)  # fmt: skip
        kvb = sum(getattr(v, f"kb{i}") * (avg if math.isinf(cap) else np.minimum(avg, cap)) for i, cap in enumerate(c.caps))
        da = sum(getattr(v, f"af{i}") * (avg if math.isinf(cap) else np.minimum(avg, cap)) for i, cap in enumerate(c.caps))
        out.append(np.maximum(ds * kvb / v.bwa, ds * da / v.flacs))
        out.append(pairs * v.F / v.flacs)
    if c.state:
        out.append(2 * ds * v.sps / v.bw)
    comm = v.arc * n * c.arb
    out.append(c.allreduces * (v.latx + comm / v.link + v.arslow * np.minimum(comm, v.arsmall)))
    graphless = np.asarray(n) > c.cudagraph_max_tokens
    if c.prompt_steps_eager:
        graphless = graphless | (np.asarray(pt) > 0)
    layer_s = np.where(graphless, c.layer_overhead_eager_s, c.layer_overhead_s)
    out += [c.step_overhead_s, layer_s if np.ndim(layer_s) else float(layer_s)]
    if c.compile_s:
        out.append(np.where(np.asarray(pt) > 0, c.compile_s, 0.0))
    out += [ds * c.per_seq_s] if seq else []
    if scale is not None:
        out = [t * scale for t in out]
    total = out[0]
    for t in out[1:]:
        total = total + t
    return total
