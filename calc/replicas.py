"""Capacity of one replica, replicas for a request rate, GPUs and cost (DESIGN.md, Replicas and cost).

capacity  = the highest request rate one replica serves with conformance ≥ quota and within memory
            (throughput at concurrency C by Little's law: C / E2E(C))
replicas  = ⌈request_rate / capacity⌉;  GPUs = replicas · dp · tp · pp   (dp ranks: D × one rank's capacity)
cost per million output tokens = GPUs · price per GPU-hour / (request_rate · output_len · 3600) · 1e6
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from calc import prefill_queue
from calc.cost import cost_per_million_output_tokens
from calc.engine_spec import EngineSpec
from calc.expr import E, eceil
from calc.front_end import front_busy_s, front_end_rps
from calc.goodput import Conformance, conformance, tpot_slo_s
from calc.latency import LatencyResult, graphed_counts, latency
from calc.numeric import largest_true, percent_text
from calc.pool import PoolResult
from calc.prefill_pool import MIN_WAIT_SHARE, PREFILL_LOAD
from calc.scenario import Scenario
from calc.slot_queue import erlang_c_one, late_share_one, queue_service_one
from calc.specs import GPUSpec, ModelSpec
from calc.step_inputs import step_model
from calc.step_time import StepModel, chunk_pairs, prompts_in
from calc.workload import max_requests_at_length, start_refusal


def conformance_of(s: Scenario, lat: LatencyResult) -> Conformance:
    return conformance(
        ttft_s=lat.ttft_s, tpot_s=lat.tpot_s, itl_s=lat.stream_itl_s, spike_s=lat.stream_spike_s,
        output_len=s.output_len, tokens_per_gap=lat.step.accepted_tokens,
        others_prefill=lat.decode_batch > 1 and not s.disaggregated, slo_ttft_s=s.slo_ttft_s, slo_tpot_s=tpot_slo_s(s), sigma=s.latency_sigma,
        throughput_rps=lat.requests_per_s,
    )  # fmt: skip


@dataclass(frozen=True)
class Capacity:
    concurrency: int
    """Requests in flight at the operating point (the latency's batch), ≤ the slots; 0: not even one request meets
    the SLOs."""
    rps: float
    conformance: float
    """Both SLOs kept at the operating point under Poisson arrivals: prompts queueing for prefill and the chance of
    waiting past the TTFT slack for a slot included."""
    limited_by: str
    """'slo' (the SLOs: the latency at one more request in flight, with prompts that arrive together queueing for
    prefill under Poisson arrivals, calc.prefill_queue), 'slots' (the wait for one of the slots costs more of the
    quota: Erlang C), 'graphs' (more in flight would serve fewer requests a second: their steps outgrow vLLM's
    captured CUDA graphs and run eagerly, calc.latency.graphed_counts), 'front-end' (the API server's one request
    at a time: front_end_rps) or 'memory' (not one request of this length fits)."""
    reason: str = ""
    """Why one replica serves nothing, when it does not."""
    slots: int = 0
    """Requests one replica can hold at once: max_num_seqs, or what its KV pool holds at the full length if less."""
    load: float = 0.0
    """Mean busy slots at the capacity (Erlangs): rps · E2E, ≤ concurrency."""
    slot_wait_share: float = 0.0
    """Share of requests that wait for a slot longer than the TTFT SLO leaves (calc.slot_queue.late_share)."""
    prefill_load: float = 0.0
    """Share of the engine's time that prompts' prefills take at the capacity (calc.prefill_queue: u = λ · S)."""
    overcommitted: bool = False
    """vLLM with max_num_seqs above the slots the KV pool holds at the full length, where at the capacity an arrival
    finds every slot busy at least once in a thousand (OVERCOMMIT_SHARE): vLLM admits a request when its prompt
    fits, so such a burst makes the decodes preempt and recompute rather than wait, as this capacity assumes. In
    the scheduler simulation (Llama-3.1-8B, 4,000 + 512 tokens, RTX 5090, 21 slots, 0.60 req/s) max_num_seqs 256
    kept 0–37 % within both SLOs after thousands of preemptions, max_num_seqs 21 kept 96–97 %."""


OVERCOMMIT_SHARE = 1e-3
"""Capacity.overcommitted is said where at least one arrival in a thousand finds every slot busy (Erlang C)."""

LOAD_PRECISION = 128
"""The load between two concurrencies is found to 1/128 of itself (of 1/128 of a slot below one slot): 7 bisection
steps from one slot up, a capacity at most 0.8 % below the exact one."""

RATIO_TOL = 1e-9
"""Replicas = ⌈rate / capacity⌉ with a rate this close above a multiple of the capacity counted as that multiple."""

GRAPH_GAIN = 1e-3
"""Fewer in flight (a CUDA-graph size, calc.latency.graphed_counts) replace the capacity's count only where they
serve at least this much more (0.1 %): below it the two counts tie, and the search's array twin of the step
(calc.search_step), equal to evaluate()'s within rounding, must not break the tie the other way."""


def rank_scenario(s: Scenario) -> Scenario:
    """One data-parallel rank as a scenario of its own: ⌈C / D⌉ in flight, its share of the request rate. Plan it with
    the whole scenario's StepModel (the MoE layers meet every rank's tokens) and pool (each rank's is alike)."""
    rate = s.request_rate / s.data_parallel_size if s.request_rate else None
    return s.derived(data_parallel_size=1, concurrency=s.rank_concurrency, request_rate=rate)


def capacity(s: Scenario, m: ModelSpec, g: GPUSpec, mem: PoolResult, engine: EngineSpec,
             model: StepModel | None = None, *, front_ranks: int = 1) -> Capacity:  # fmt: skip
    """The highest Poisson rate whose conformance meets the quota. At b requests in flight the latency model gives
    the conformance; requests arrive at a ≤ b busy slots' worth (λ = a / E2E(b) per second). Their prompts queue
    behind each other's prefill (calc.prefill_queue: the conformance under Poisson arrivals at λ), and they wait for
    one of the c slots past the TTFT slack with P = C(c, a') · exp(−(c − a') · slack / S), S the E2E at
    queue_top(b) in flight (calc.slot_queue.queue_service) and a' = S · a / E2E(b). By bisection (the conformance
    falls as b or a grows): the largest b whose latency keeps the quota, then the largest b ≤ it that keeps it at a
    load of b with both waits, then the largest a in (b, b + 1) with the latency at b + 1. calc.search_fleet takes
    the same steps over arrays."""
    if s.data_parallel_size > 1:  # one rank, then all: each holds its own slots and its share of the arrivals
        dp = s.data_parallel_size
        one = capacity(rank_scenario(s), m, g, mem, engine, model or step_model(s, m, g, mem, engine), front_ranks=dp)
        return replace(one, concurrency=one.concurrency * dp, rps=one.rps * dp, slots=one.slots * dp,
                       load=one.load * dp)  # fmt: skip
    slots = max_requests_at_length(s, mem, m)
    if slots == 0:
        return Capacity(0, 0.0, 0.0, "memory", start_refusal(s, m, mem) or
                        "not even one request of this length fits in the KV pool")  # fmt: skip
    model = model or step_model(s, m, g, mem, engine)
    seen: dict[int, tuple] = {}

    def at(c: int) -> tuple:
        if c not in seen:
            t = s.model_copy(update={"concurrency": c})
            lat = latency(t, m, g, mem, engine, model, front_ranks=front_ranks)
            seen[c] = (conformance_of(t, lat), lat)
        return seen[c]

    def queued(c: int, load: float) -> tuple[float, float, float, float]:
        """(conformance under Poisson arrivals with the wait for a slot, the share waiting past the slack for a
        slot, the share other prompts' prefills keep of the closed loop's conformance) at c in flight, load a."""
        conf, lat = at(c)
        service = c / lat.requests_per_s
        full = queue_service_one(c, slots, service, slots / at(slots)[1].requests_per_s)
        busy = load * full / service  # the rate (load / E2E(c)) times the queue's service
        late = late_share_one(slots, busy, s.slo_ttft_s - lat.ttft_s, full)
        poisson = prefill_queue.conformance_one(
            closed=conf.conformance, ttft_s=lat.ttft_s, tpot_s=lat.tpot_s, plain_s=lat.itl_s, work=work,
            rate_rps=load / service, output_len=s.output_len, slo_ttft_s=s.slo_ttft_s, slo_tpot_s=tpot_slo_s(s),
            sigma=s.latency_sigma)  # fmt: skip
        return poisson * (1 - late), late, poisson / conf.conformance if conf.conformance > 0 else 1.0, busy

    work = 0.0 if s.disaggregated else prefill_work_s(s, at(1)[1], model)
    quota = s.conformance_quota
    top = largest_true(lambda c: at(c)[0].conformance >= quota, 1, slots)  # the latency alone
    if top < 1:
        c1, lat1 = at(1)
        waits = (f"; its prompt waits {lat1.prefill_wait_s * 1e3:,.0f} ms of that TTFT for one of the "
                 f"{lat1.prefill_instances:,} prefill instances the whole {s.request_rate or 0:g} req/s keeps busy, and "
                 "more of them would not bring it within the SLO") if lat1.prefill_instances else ""  # fmt: skip
        why = (f"even one request at a time on a {'decode instance' if s.disaggregated else 'replica'} meets both SLOs "
               f"only {percent_text(c1.conformance)} of the time (quota {percent_text(quota)}): TTFT {_ms(lat1.ttft_s)} "
               f"ms vs {_ms(s.slo_ttft_s)} ms (P {percent_text(c1.p_ttft)}), TPOT {_ms(lat1.tpot_s)} ms vs "
               f"{_ms(s.slo_tpot_s)} ms (P {percent_text(c1.p_tpot)}){waits}")  # fmt: skip
        return Capacity(0, 0.0, c1.conformance, "slo", why, slots)
    # with the wait for a slot: at a = c every arrival waits, so ok < slots
    ok = top if queued(top, top)[0] >= quota else largest_true(lambda c: queued(c, c)[0] >= quota, 1, top - 1)
    best, load, limited = ok, float(ok), "slo"
    if ok < top:  # the latency at ok + 1 keeps the quota: Poisson arrivals (a slot, others' prompts) bind
        limited, lo, hi = "slots", float(ok), float(ok + 1)
        while hi - lo > max(lo, 1 / LOAD_PRECISION) / LOAD_PRECISION:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if queued(ok + 1, mid)[0] >= quota else (lo, mid)
        if ok < 1 or lo / (ok + 1) * at(ok + 1)[1].requests_per_s > at(ok)[1].requests_per_s:
            best, load = ok + 1, lo
    if load <= 0:  # only at a conformance equal to the quota to the last digit
        return Capacity(0, 0.0, at(1)[0].conformance, limited, "no load keeps the quota", slots)
    rate = load / best * at(best)[1].requests_per_s
    prompt = s.input_len - at(best)[1].prefix_hit_tokens  # the prompt tokens each request computes
    for k in graphed_counts(best, input_len=prompt, output_len=s.output_len, budget=s.max_num_batched_tokens,
                            graph_tokens=engine.cudagraph_max_tokens, decode_tokens=model.decode_tokens,
                            tokens_per_step=model.accepted_tokens):  # fmt: skip
        k = int(k)  # past the CUDA-graph size fewer in flight can serve more: the best rate within the quota
        if 1 <= k < best and at(k)[1].requests_per_s > rate * (1 + GRAPH_GAIN) and queued(k, k)[0] >= quota:
            best, load, limited, rate = k, float(k), "graphs", at(k)[1].requests_per_s
    front = float(front_end_rps(front_busy_s(s, engine, m) * front_ranks, s.slo_ttft_s - at(best)[1].ttft_s))
    if rate > front:  # one API server renders and tokenises one request at a time
        load, rate, limited = load * front / rate, front, "front-end"
    conf, late, kept, busy = queued(best, load)
    if limited == "slots" and late < 1 - kept:  # other prompts' prefill costs more of the conformance than a slot
        limited = "slo"
    overcommitted = (engine.scheduling == "decode-first" and slots < s.max_num_seqs
                     and erlang_c_one(slots, busy) >= OVERCOMMIT_SHARE)  # fmt: skip
    return Capacity(best, rate, conf, limited, "", slots, load, late, rate * work, overcommitted)


def _ms(seconds: float) -> str:
    """Milliseconds as a refusal quotes them, about three significant digits with separators ('1,250', '17.1', '0.1':
    a 0.1 ms SLO is not '0 ms')."""
    ms = seconds * 1e3
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2g}"


def prefill_work_s(s: Scenario, alone: LatencyResult, model: StepModel) -> float:
    """S of calc.prefill_queue: min(prefill alone, L · T_B / B), T_B one step of the budget's B prompt tokens; L the
    prompt tokens computed, after the h a prefix-cache hit spares (each attends to them as well)."""
    B, h = s.max_num_batched_tokens, alone.prefix_hit_tokens  # noqa: N806 - the formula's name
    L = s.input_len - h  # noqa: N806
    return float(prefill_queue.work_s(alone.prefill_terms.total_s, L, model.step_s(B, chunk_pairs(B, h), 0, 0, float(prompts_in(B, L))), B))


@dataclass(frozen=True)
class Fleet:
    capacity: Capacity
    replicas: int | None
    """None when no request rate is set, or one replica cannot meet the SLOs at all."""
    gpus: int | None
    """replicas × the GPUs of one; without a request rate, one replica's (priced on its own, as a search row counts
    it); None where one replica cannot meet the SLOs at a rate."""
    headroom: float | None
    """Capacity of the fleet over the requested rate, minus one."""
    price_per_gpu_hour: float | None
    cost_per_hour: float | None
    cost_per_million_output_tokens: float | None
    currency: str | None
    """Currency of every cost above: the scenario's own price's, else the GPU spec's reference price's."""
    prefill_instances: int | None = None
    """Disaggregated: prefill instances (each of tp · pp GPUs) for the rate's prompt tokens."""
    decode_instances: int | None = None
    """Disaggregated: decode instances for its output tokens (one when no request_rate is set)."""
    formulas: dict = field(default_factory=dict, repr=False, compare=False)
    """The numbers above that are set, as the calc.expr formulas they were computed with (keys: field names)."""
    cost_at_capacity_per_million: float | None = None
    """Without a request rate: one replica's cost per million output tokens at its capacity (the most it serves
    within the SLOs), beside the cost at the scenario's own throughput, which may miss them."""


def fleet(s: Scenario, g: GPUSpec, cap: Capacity, *, throughput_rps: float, prefill_s: float = 0.0,
          prefill_instances: int = 0, prefill_wait_budget_s: float = math.inf) -> Fleet:
    """`prefill_s`: one prompt's prefill alone (sizes the prefill instances of a disaggregated deployment);
    `prefill_instances`: the count the TTFT's wait for one assumed (LatencyResult.prefill_instances), where set."""
    price = s.gpu_hour_price or g.price_per_gpu_hour
    currency = (s.currency if s.gpu_hour_price else g.price_currency) if price else None
    rate = s.request_rate
    if s.disaggregated:
        return _disaggregated(s, cap, price, currency, throughput_rps=throughput_rps, prefill_s=prefill_s,
                              prefill_instances=prefill_instances, wait_budget_s=prefill_wait_budget_s)  # fmt: skip
    if rate is None:  # cost at the scenario's own throughput, one replica
        per_hour = price * s.gpus_per_replica if price else None
        f = _cost(s, per_hour, throughput_rps, currency)
        at_cap = _value(_cost(s, per_hour, cap.rps, currency), "cost_per_million_output_tokens") if cap.rps > 0 else None
        return Fleet(cap, None, s.gpus_per_replica, None, price, per_hour, _value(f, "cost_per_million_output_tokens"),
                     currency, formulas=f, cost_at_capacity_per_million=at_cap)  # fmt: skip  # one replica's GPUs
    if cap.rps <= 0:
        return Fleet(cap, None, None, None, price, None, None, currency)
    f = {"replicas": eceil(E(rate, "request_rate") / E(cap.rps, "capacity per replica"), RATIO_TOL)}
    replicas, gpus = _gpus(s, f)
    per_hour = price * gpus if price else None
    f |= _cost(s, per_hour, rate, currency)
    return Fleet(cap, replicas, gpus, replicas * cap.rps / rate - 1, price, per_hour,
                 _value(f, "cost_per_million_output_tokens"), currency, formulas=f)  # fmt: skip


def _disaggregated(s: Scenario, cap: Capacity, price, currency, *, throughput_rps: float, prefill_s: float,
                   prefill_instances: int = 0, wait_budget_s: float = math.inf) -> Fleet:
    """x = max(1, ⌈rate · prefill / (2/3)⌉) prefill instances, the fewest at which a prompt waits at most one
    prefill on average, or the more the TTFT SLO needs (calc.prefill_pool; TTFT carries that wait when a rate is
    set: `prefill_instances`), and y = ⌈rate / capacity⌉ decode instances; without a rate, one decode instance at its
    own throughput and the prefill it needs. Replicas = x + y instances of tp · pp GPUs."""
    rate = s.request_rate
    if rate is not None and cap.rps <= 0:
        return Fleet(cap, None, None, None, price, None, None, currency)
    served = rate if rate is not None else throughput_rps
    load = E(served, "request_rate" if rate is not None else "requests/s") * E(prefill_s, "prefill", unit="ms")
    f = {"prefill_instances": eceil(load / E(PREFILL_LOAD, "highest load"))}
    if prefill_instances > f["prefill_instances"].value:  # the TTFT SLO's count (calc.prefill_pool.prefill_count)
        f["prefill_instances"] = E(prefill_instances, "prefill instances the TTFT SLO needs")
    prefill = max(1, int(f["prefill_instances"].value))  # = the count the TTFT's wait was computed at
    if rate is None:
        decode = 1
    else:
        f["decode_instances"] = eceil(E(rate, "request_rate") / E(cap.rps, "capacity per decode instance"), RATIO_TOL)
        decode = int(f["decode_instances"].value)
        f["replicas"] = f["prefill_instances"].named("prefill") + f["decode_instances"].named("decode")
        _gpus(s, f)
    per_hour = price * (prefill + decode) * s.gpus_per_replica if price else None
    f |= _cost(s, per_hour, served, currency)
    per_m = _value(f, "cost_per_million_output_tokens")
    if rate is None:  # no fleet to size: one replica (its GPUs, as a search row counts them) priced on its own
        one = (prefill + decode) * s.gpus_per_replica if s.disaggregated and prefill is not None and decode is not None \
            else s.gpus_per_replica  # fmt: skip
        return Fleet(cap, None, one, None, price, per_hour, per_m, currency, prefill, decode, formulas=f)
    # what the prefill instances carry at the load they were sized for, not at saturation (where their queue grows
    # without bound): each PREFILL_LOAD / prefill, or less where the TTFT SLO's wait budget w set their count,
    # 2w / (prefill + 2w) (calc.prefill_pool.prefill_count, inverted): the rate at which the plan adds one
    load = PREFILL_LOAD
    if math.isfinite(wait_budget_s) and wait_budget_s >= MIN_WAIT_SHARE * prefill_s:
        load = min(load, 2 * wait_budget_s / (prefill_s + 2 * wait_budget_s))
    headroom = min(decode * cap.rps, prefill * load / prefill_s) / rate - 1
    return Fleet(cap, prefill + decode, (prefill + decode) * s.gpus_per_replica, headroom, price, per_hour, per_m,
                 currency, prefill, decode, formulas=f)  # fmt: skip


def _gpus(s: Scenario, f: dict) -> tuple[int, int]:
    """Adds GPUs = replicas · tp · pp (· dp, with data-parallel ranks) to the formulas; returns (replicas, GPUs)."""
    f["gpus"] = (f["replicas"].named("replicas") * E(s.tensor_parallel_size, "tp")
                 * E(s.pipeline_parallel_size, "pp"))  # fmt: skip
    if s.data_parallel_size > 1:
        f["gpus"] = f["gpus"] * E(s.data_parallel_size, "dp")
    return int(f["replicas"].value), int(f["gpus"].value)


def _cost(s: Scenario, per_hour: float | None, served_rps: float, currency: str | None) -> dict:
    """The cost per million output tokens as a formula, when there is a price and a rate served."""
    if not per_hour or not served_rps:
        return {}
    cost = cost_per_million_output_tokens(E(per_hour, f"cost per hour ({currency})"), E(served_rps, "requests/s"),
                                          E(s.output_len, "output_len"))  # fmt: skip
    return {"cost_per_million_output_tokens": cost}


def _value(f: dict, key: str) -> float | None:
    return f[key].value if key in f else None


@dataclass(frozen=True)
class Option:
    gpu: str
    tensor_parallel_size: int
    capacity_rps: float
    replicas: int | None
    gpus: int | None
    cost_per_million_output_tokens: float | None
    currency: str | None


def gpu_options(s: Scenario, m: ModelSpec, g_own: GPUSpec, gpus: dict[str, GPUSpec], engine: EngineSpec) -> list[Option]:
    """For the scenario's model, each shipped GPU at the smallest TP (1, 2, 4, 8) that serves, or a larger one while
    it serves for less (cost per million output tokens where priced, else GPUs for the rate, else capacity per GPU:
    Llama-3.1-70B on one B200 holds two requests and needs 114 GPUs for 10 req/s, on two 8), served aggregated with
    one attention rank (calc.search tries disaggregated serving too; neither tries data parallelism): capacity, GPUs
    needed for request_rate (or one replica's capacity when unset) and cost per million output tokens. The scenario's
    own GPU is `g_own` (its overrides applied); the others are priced and sized from their own specs. A TP larger
    than one node of the GPU holds (node_gpus) is not tried, as in the search."""
    from calc.parallel_rules import dcp_check, tp_check
    from calc.pool import size_pool
    from calc.resolve import for_other_gpu
    from calc.sglang_hybrid import as_sglang_runs

    out = []
    for gid, g in gpus.items():
        if gid == s.gpu:
            g = g_own
        best = None
        for tp in (1, 2, 4, 8):
            if not g.node_holds(tp):  # a group across nodes is not modelled (GH200 rented one to a node)
                break
            t = for_other_gpu(s, gid).model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": 1,
                                                         "data_parallel_size": 1, "disaggregated": False})  # fmt: skip
            if dcp_check(t, m):  # a TP the scenario's decode context parallelism does not divide: without it
                t = t.derived(decode_context_parallel_size=1)
            if tp_check(t, m):
                continue
            mem = size_pool(t, m, g)
            t = as_sglang_runs(t, m, mem)  # a hybrid under SGLang runs this pool's cap (calc.sglang_hybrid)
            cap = capacity(t, m, g, mem, engine)
            if cap.rps <= 0:
                if best is None:
                    continue
                break
            fl = fleet(t, g, cap, throughput_rps=cap.rps)
            option = Option(gid, tp, cap.rps, fl.replicas, fl.gpus, fl.cost_per_million_output_tokens, fl.currency)
            if best is not None and _rank(option) >= _rank(best):
                break  # the next TP serves for no less: the last one is this GPU's option
            best = option
        if best is not None:
            out.append(best)
    # costs in another currency than the plan's GPU's are not converted: each currency's options ranked apart, the
    # plan's first
    own = s.currency if s.gpu_hour_price else g_own.price_currency
    return sorted(out, key=lambda o: (o.cost_per_million_output_tokens is None, o.currency != own, o.currency or "",
                                      o.cost_per_million_output_tokens or 0, o.gpus or o.tensor_parallel_size))  # fmt: skip


def _rank(o: Option) -> tuple:
    """What serves for less: cost per million output tokens where priced, else GPUs for the rate, else GPUs per
    request a second of capacity."""
    if o.cost_per_million_output_tokens is not None:
        return (0, o.cost_per_million_output_tokens)
    return (1, o.gpus) if o.gpus is not None else (2, o.tensor_parallel_size / o.capacity_rps)
