"""SLOs, tails, the seed's simulation, GPU options, KV beyond the GPU and the smallest changes that fit, as finished
text (split from boundary.view, which holds the headline and the memory and latency sections)."""

from __future__ import annotations

from dataclasses import asdict

from boundary import fmt
from boundary.search_text import rate_check_line
from boundary.view import Table, capacity_text, cost_reason, outside_slos
from calc.pool import MEASURED_MEMORY
from calc.tails import quantile_label


def _strict_why(r) -> str:
    """Why the strict variant is what it is: a chunk step over the SLO (calc.goodput.conformance), or the gaps' odds."""
    s, lat = r.scenario, r.latency
    spike, plain, tau = lat.stream_spike_s, lat.stream_itl_s, lat.step.accepted_tokens  # the streamed chunks' gaps
    if lat.decode_batch > 1 and not s.disaggregated and spike > s.slo_tpot_s:
        return (f"a step that carries another request's prefill chunk takes {fmt.ms(spike)}, over the SLO, "
                "and a request decoding while another's prompt is prefilled waits through one")  # fmt: skip
    if s.output_len <= 1:
        return "a one-token output has no gap"
    chunked = lat.decode_batch > 1 and not s.disaggregated and spike > plain
    around = (f"the plain step ({fmt.ms(plain)}) or, in the share that makes their mean the TPOT, a step that "
              f"carries another request's prefill chunk ({fmt.ms(spike)})") if chunked else "the plain step"
    gaps = f"{s.output_len - 1:,} gaps" if tau == 1 else \
        f"{(s.output_len - 1) / tau:,.0f} gaps (chunks of {tau:.2f} tokens, a speculative step each)"  # fmt: skip
    return (f"each of the {gaps} log-normal with σ = {s.latency_sigma:g} around {around}: a long "
            "output has that many chances to exceed it")  # fmt: skip


def slo_lines(r, *, replica_check=None) -> list[str]:
    """`replica_check`: the replica count's simulated check to say under it (calc.replica_check.RateCheck), if any."""
    s, c, fl = r.scenario, r.conformance, r.fleet
    out = [f"P(TTFT ≤ {fmt.seconds(s.slo_ttft_s)}) = {fmt.pct(c.p_ttft)} · P(TPOT ≤ {fmt.seconds(s.slo_tpot_s)}) = "
           f"{fmt.pct(c.p_tpot)} → conformance {fmt.pct(c.conformance)}; goodput "
           + (f"{fmt.rate(r.goodput_rps, 'req/s', alike=(r.latency.requests_per_s,))} of "
              f"{fmt.rate(r.latency.requests_per_s, 'req/s')}"
              if r.goodput_rps >= 1e-3 * r.latency.requests_per_s else  # '< 0.000001 req/s' read as a measurement
              f"none of {fmt.rate(r.latency.requests_per_s, 'req/s')} (fewer than 1 in 1,000 requests meet both SLOs)"),
           f"strict variant (every inter-token gap ≤ SLO): {fmt.pct(c.strict_conformance)} ({_strict_why(r)})",
           f"capacity: {capacity_text(r)}"]  # fmt: skip
    if fl.replicas is not None:
        split = (f" ({fl.prefill_instances:,} prefill + {fl.decode_instances:,} decode instances)"
                 if getattr(s, "disaggregated", False) and getattr(fl, "prefill_instances", None) is not None else "")  # fmt: skip
        out.append(f"{fmt.rate(s.request_rate, 'req/s')} → {fmt.plural(fl.replicas, 'replica')}{split} × "
                   f"{fmt.plural(s.gpus_per_replica, 'GPU')} = {fmt.plural(fl.gpus, 'GPU')}, capacity "
                   + (f"{fmt.pct(fl.headroom, 0)} above the rate" if fl.headroom < 10 else
                      f"{fmt.sig(1 + fl.headroom)}× the rate")
                   + (", at most: near the prefill instances' sizing load their queue leaves the decode instances "
                      "less of the TTFT SLO; not simulated (the benchmark runs one aggregated engine)" if split else ""))  # fmt: skip
        if (lo := r.looser_quota) is not None and lo.replicas is not None and lo.replicas <= FLAT_QUOTA * fl.replicas:
            out.append(f"the quota sits on a flat stretch of the conformance curve: at {fmt.pct(s.conformance_quota - 0.01, 0)} "
                       f"instead of {fmt.pct(s.conformance_quota, 0)} the same rate needs {fmt.plural(lo.replicas, 'replica')} "
                       f"({fmt.plural(lo.gpus, 'GPU')}"
                       + (f", {fmt.money(lo.cost_per_million_output_tokens, lo.currency)} per million output tokens"
                          if lo.cost_per_million_output_tokens is not None else "") + "): weigh the quota before sizing to it")  # fmt: skip
        if replica_check is not None:
            out.append(rate_check_line(asdict(replica_check)).strip())
    elif s.request_rate:
        out.append(f"no replica count for {fmt.rate(s.request_rate, 'req/s')}: {fl.capacity.reason}")
    if fl.cost_per_hour is not None:
        out.append(f"cost: {fmt.money(fl.cost_per_hour, fl.currency)} per hour, "
                   f"{fmt.money(fl.cost_per_million_output_tokens, fl.currency)} per million output tokens "
                   f"({fmt.money(fl.price_per_gpu_hour, fl.currency)} per GPU-hour{_price_origin(r)})"
                   + (", at the scenario's own throughput, outside the SLOs" if fl.capacity.rps <= 0 else "")
                   + (outside_slos(r) or _own_and_capacity(r)))  # fmt: skip
    else:
        out.append("cost: " + fmt.missing(cost_reason(r)))
    return out



def _own_and_capacity(r) -> str:
    """Without a rate the cost is the scenario's own throughput's: said, with the cost at capacity beside it (the
    page's tile and the JSON carry both)."""
    fl, s = r.fleet, r.scenario
    if s.request_rate or fl.capacity.rps <= 0 or fl.cost_at_capacity_per_million is None:
        return ""
    return (f", at this scenario's own throughput ({fmt.rate(r.latency.requests_per_s, 'req/s')}); at its capacity "
            f"within the SLOs ({fmt.rate(fl.capacity.rps, 'req/s')}), {fmt.money(fl.cost_at_capacity_per_million, fl.currency)} "
            "per million output tokens")


FLAT_QUOTA = 0.8  # a point of quota that saves a fifth of the replicas or more: worth saying beside the count


def _price_origin(r) -> str:
    """Where a reference price comes from, for a reader who will be asked: ", H100's reference price of 2026-11, seen
    from 2.40 USD to 6.88 USD; set gpu_hour_price to a quote" (nothing where the scenario sets its own price)."""
    g = r.gpu
    if r.scenario.gpu_hour_price is not None or not g.price_date:
        return ""
    seen = (f", seen from {fmt.money(g.price_low_per_gpu_hour, g.price_currency)} to "
            f"{fmt.money(g.price_high_per_gpu_hour, g.price_currency)}"
            if g.price_low_per_gpu_hour and g.price_high_per_gpu_hour else "")  # fmt: skip
    return f", {g.name}'s reference price of {g.price_date}{seen} (hardware_specs); set gpu_hour_price to a quote"


def _itl_line(r) -> str:
    """Mean against max inter-token gap of one request: the max is a step carrying another request's prompt only where
    one can ride (others in flight, not a decode instance); a one-token output has no gap."""
    t, s, lat = r.tails, r.scenario, r.latency
    if s.output_len <= 1:
        return "mean vs max ITL over one request: a one-token output has no gap"
    chunked = lat.decode_batch > 1 and not s.disaggregated and t.itl_max_s > lat.stream_itl_s
    why = ("a step that carries another request's prefill chunk; steps that carry several prompts' chunks take longer "
           "still, as the predicted benchmark's p99 ITL shows") if chunked else \
        "no other request's prompt rides on its steps" + (": a decode instance" if s.disaggregated else "")  # fmt: skip
    mean = "the TPOT estimate" if lat.step.accepted_tokens == 1 else \
        f"the TPOT estimate × {lat.step.accepted_tokens:.2f}, a speculative step's chunk"  # fmt: skip
    return f"mean vs max ITL over one request: mean {fmt.ms(t.itl_mean_s)} ({mean}), max {fmt.ms(t.itl_max_s)} ({why})"


def tails_lines(r) -> list[str]:
    t, s, ex = r.tails, r.scenario, r.itl_example
    return [
        f"fan-out to {fmt.plural(t.fanout, 'parallel call')}: P(at least one beyond its p99) = {fmt.pct(t.p_any_slow)}; each call "
        f"must meet its {t.per_call_quantile_label} for the answer to meet p99",
        f"hedging: a duplicate sent when a call passes its {quantile_label(t.hedge_quantile)} adds "
        f"{fmt.pct(t.hedge_extra_load, 0)} load and cuts that tail",
        f"a chain of {fmt.plural(t.chain_calls, 'sequential call')}: {fmt.seconds(t.chain_median_s)} at the median end-to-end, "
        f"{fmt.seconds(t.chain_one_slow_s)} with one step at its p99 (σ = {s.latency_sigma:g})",
        _itl_line(r),
        f"the seed's example: 200 gaps of 20 ms and one of 2 s average {fmt.ms(ex.mean_s, 4)} — a fine-looking TPOT over "
        f"a {fmt.seconds(ex.max_s)} freeze; report the max ITL too",
    ]  # fmt: skip


def simulation_table(r) -> Table:
    seed = len(r.simulation) - 1  # the rows before this scenario's are the seed report's worked example
    column = tuple(v for x in r.simulation for v in (x.requests_per_s, x.goodput_rps))  # one unit in both columns
    rows = [[(f"worked example, not this model: {x.name}" if i < seed else x.name),
             fmt.rate(x.requests_per_s, "req/s", alike=column), fmt.rate(x.goodput_rps, "req/s", alike=column), fmt.pct(x.conformance),
             fmt.pct(x.ttft_over_slo), fmt.ms_value(x.ttft_mean_ms),
             f"{fmt.sig(x.ttft_p50_ms)} / {fmt.sig(x.ttft_p95_ms)} / {fmt.sig(x.ttft_p99_ms)} ms",
             f"{fmt.sig(x.tpot_p50_ms)} / {fmt.sig(x.tpot_p95_ms)} / {fmt.sig(x.tpot_p99_ms)} ms"]
            for i, x in enumerate(r.simulation)]  # fmt: skip
    s, mine = r.scenario, r.simulation[-1]
    n = max(1, round(mine.requests_per_s * s.sim_window_s))
    spread = 2 * (r.conformance.conformance * (1 - r.conformance.conformance) / n) ** 0.5  # two standard errors
    return Table(["configuration", "requests", "goodput", "conformant", "TTFT > SLO", "TTFT mean", "TTFT p50 / p95 / p99",
                  "TPOT p50 / p95 / p99"], rows,
                 note=f"log-normal σ = {s.latency_sigma:g}, window {fmt.seconds(s.sim_window_s)}, seeded; first the "
                      "seed report's worked example (a batch of 16 and of 64 at its own rates, whatever model is "
                      f"planned), then this scenario: {fmt.plural(n, 'request')} drawn around the estimates, so "
                      f"its share conformant is the headline's {fmt.pct(r.conformance.conformance)} give or take "
                      f"{fmt.pct(spread, 1)} (two standard errors of the sample)")  # fmt: skip


def _estimated(r, gid: str) -> str:
    """' (estimate)' after a cost priced from a spec's derived price (no published rate; gaudi3, the H20s, H800)."""
    own = gid == r.scenario.gpu and r.scenario.gpu_hour_price is not None
    return " (estimate)" if not own and "price_per_gpu_hour" in r.other_gpus[gid].derived else ""


def gpu_options_table(r) -> Table:
    s = r.scenario
    at = "" if s.request_rate else f"; at capacity, where the headline prices its {s.concurrency:,} in flight"
    mine = f" (this plan's GPU; the plan: {_layout(s)}{at})" if (s.data_parallel_size > 1 or s.pipeline_parallel_size > 1) \
        else f" (this plan's GPU{at})"  # fmt: skip
    column = tuple(o.capacity_rps for o in r.gpu_options)  # one unit down the column
    rows = [[r.other_gpus[o.gpu].name + (mine if o.gpu == s.gpu else ""), str(o.tensor_parallel_size),
             fmt.rate(o.capacity_rps, "req/s", alike=column),
             fmt.count(o.replicas) if o.replicas is not None else fmt.missing("set a request rate"),
             fmt.count(o.gpus) if o.gpus is not None else fmt.missing("set a request rate"),
             fmt.money(o.cost_per_million_output_tokens, o.currency)
             + (_estimated(r, o.gpu) if o.cost_per_million_output_tokens is not None else "")] for o in r.gpu_options]  # fmt: skip
    each = "each GPU at tensor parallelism alone (no pipeline or data-parallel ranks)"
    if len({o.currency for o in r.gpu_options if o.cost_per_million_output_tokens is not None}) > 1:
        each += "; costs in different currencies are not converted: each currency's GPUs are ranked apart"
    if r.scenario.request_rate:
        return Table(["GPU", "TP", "capacity per replica", "replicas", "GPUs", "cost / M output tokens"], rows,
                     note=each)  # fmt: skip
    return Table(["GPU", "TP", "capacity per replica", "replicas", "GPUs", "cost / M output tokens at capacity"], rows,
                 note=f"{each}, at its capacity within the SLOs; the headline's cost is this scenario's own, at its "
                      f"{r.scenario.concurrency:,} in flight (set a request rate to price both alike)")  # fmt: skip


def _layout(s) -> str:
    """'TP 1 × DP 8', 'TP 4 × PP 2': the plan's own parallel layout, beside a table that tries TP alone."""
    return " × ".join(f"{k} {v}" for k, v in (("TP", s.tensor_parallel_size), ("PP", s.pipeline_parallel_size),
                                              ("DP", s.data_parallel_size)) if k == "TP" or v > 1)  # fmt: skip


def beyond_lines(r) -> list[str]:
    off, pre, s = r.offload, r.prefix, r.scenario
    return [
        f"preempting a {fmt.count(s.request_len)}-token context: recompute {fmt.ms(off.recompute_s)} vs swap "
        f"{fmt.ms(off.swap_s)} ({'one way' if s.swap_overlap else 'out and back'}) → {off.winner} wins"
        f"{' (host_cache_gib 0: there is no host memory to swap to)' if s.host_cache_gib <= 0 else ''} (recompute / swap "
        f"{fmt.ratio(off.swap_recompute_ratio)} one way, {fmt.ratio(off.swap_recompute_ratio_both_ways)} both ways); "
        "vLLM's V1 engine and SGLang preempt by recomputing only (swapping was V0's), so the swap figure is what a "
        "KV-offloading connector (LMCache-style) would pay",
        (f"the seed's closed form 2·N_p·B_host / (P_eff·m_kv) = {fmt.ratio(off.closed_form_ratio)} one way "
         if off.closed_form_ratio else "the seed's closed form ")
        + f"(valid between the knee ({fmt.tokens(off.knee_tokens)}) and the attention crossover "
        f"({fmt.opt(off.attention_crossover_tokens, fmt.tokens, '')}): {fmt.yes_no(off.closed_form_valid)})",
        *([pre.reuse_note] if pre.reuse_note else []),
        (f"conversation of {fmt.plural(s.turns, 'turn')} × {fmt.tokens(s.tokens_per_turn)}: {fmt.count(pre.conversation_tokens_without_reuse)} "
         f"prefill tokens without reuse, {fmt.count(pre.conversation_tokens_with_reuse)} with ({fmt.ratio(pre.prefix_reuse_saving)} "
         f"fewer); the last turn's prefill {fmt.ms(pre.last_turn_ttft_without_reuse_s)} → {fmt.ms(pre.last_turn_ttft_with_reuse_s)} "
         "(its TTFT less the front end and the queue)"
         if not pre.reuse_note else
         f"conversation of {fmt.plural(s.turns, 'turn')} × {fmt.tokens(s.tokens_per_turn)}: {fmt.count(pre.conversation_tokens_without_reuse)} "
         f"prefill tokens, none reused; the last turn's prefill {fmt.ms(pre.last_turn_ttft_without_reuse_s)}")
        + _past_limit(s.turns * s.tokens_per_turn, s.max_model_len, "its last turn"),
        (f"shared system prompt of {fmt.tokens(s.shared_len)}: {fmt.plural(pre.max_concurrency_with_sharing, 'request')} "
         f"fit ({fmt.count(pre.max_concurrency_without_sharing)} without sharing), {fmt.count(pre.blocks_saved)} blocks saved at "
         f"C={s.rank_concurrency:,}{' (each data-parallel rank' + chr(39) + 's pool)' if s.data_parallel_size > 1 else ''}, "
         f"TTFT {fmt.ms(pre.ttft_saved_per_request_s)} shorter per request" if s.shared_prefix_len else
         "shared system prompt: none (set shared_prefix_len to see the blocks and prefill a shared prompt saves)"),
        (f"document of {fmt.tokens(s.document_len)} asked {s.document_queries:,}×: {fmt.count(pre.document_tokens_without_reuse)} → "
         f"{fmt.count(pre.document_tokens_with_reuse)} prefill tokens; a repeat's prefill {fmt.ms(pre.document_ttft_repeat_s)} vs "
         f"{fmt.ms(pre.document_ttft_first_s)} the first time" if not pre.reuse_note and s.document_queries > 1 else
         f"document of {fmt.tokens(s.document_len)} asked {s.document_queries:,}×: {fmt.count(pre.document_tokens_without_reuse)} "
         f"prefill tokens, every question prefilled whole ({fmt.ms(pre.document_ttft_first_s)})")
        + _past_limit(s.document_len + s.tokens_per_turn, s.max_model_len, "a question"),
    ]  # fmt: skip


def _past_limit(tokens: int, max_model_len: int, what: str) -> str:
    """' (… beyond max_model_len …)' where a prefix-reuse example asks more than the server takes, else ''."""
    if tokens <= max_model_len:
        return ""
    return (f" ({what} is {fmt.tokens(tokens)}, beyond max_model_len {max_model_len:,}: vLLM refuses it; the figures "
            "are the arithmetic, not a served request)")


def tiers_table(r) -> Table:
    rows = [[t.name, fmt.bandwidth(t.bandwidth_bytes_per_s), fmt.ms(t.reload_s), fmt.ms(t.recompute_s),
             "no room (0 GiB)" if not t.capacity_tokens else "no prefix reused" if r.prefix.reuse_note else
             "yes" if t.worth_keeping else "no, recompute",
             fmt.tokens(t.capacity_tokens)] for t in r.offload.tiers]  # fmt: skip
    host = fmt.bandwidth(r.offload.host_bytes_per_s)
    s = r.scenario
    sizes = (f"host_cache_gib {s.host_cache_gib:,g}, ssd_cache_gib {s.ssd_cache_gib:,g}, remote_cache_gib "
             f"{s.remote_cache_gib:,g} per GPU")
    return Table(["tier", "bandwidth", "reload the prompt's KV", "recompute it", "keep it there?", "holds"], rows,
                 note=f"Beyond the host every tier also crosses the GPU's host link ({host}): the SSD and the network "
                      f"count at the lower of their own rate and it. The tiers hold what their sizes give ({sizes}; "
                      "set in Beyond the GPU).")  # fmt: skip


def suggestions_table(r) -> Table:
    """Each fix with every field it changes named (a fix that also raises max_model_len says so)."""
    s = r.scenario
    rows = []
    for x in r.suggestions:
        moved = [k for k in MEASURED_MEMORY if k in x.fields and getattr(s, k) != x.fields[k]]
        extra = [f"{k}={v}" if v is not None else f"{k} back to the spec" for k, v in x.fields.items()
                 if k not in x.change and k not in moved and getattr(s, k) != v]  # fmt: skip
        if moved:  # calc.pool.measured_at: each measurement × its estimate there / here
            w = x.fields.get("weights_memory_bytes")
            extra.append("the measured memory scaled to it" + (f" (weights {fmt.gib(w)} per GPU)" if w else ""))
        label = x.change + (f" + {', '.join(extra)}" if extra else "")
        rows.append([label, fmt.count(x.num_gpu_blocks), fmt.count(x.max_concurrency_at_length), fmt.pct(x.pool_fraction, 0)])
    return Table(["change", "GPU blocks", "requests at this length (≤ max_num_seqs)", "pool used"], rows)
