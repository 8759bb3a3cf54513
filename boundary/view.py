"""The Report as labelled, finished text: every section the page, the CLI text and the Markdown export show, built
once here (formatting through boundary.fmt; no arithmetic beyond choosing what to say). The page lays these out as
metrics and tables, the CLI and the export as aligned text — so they cannot disagree.

Strings here may carry user text (a custom model's name) only in `title()`; surfaces that render Markdown escape
that one with boundary.urlstate.plain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from boundary import fmt
from boundary.view_bands import NO_BAND, band, band_short
from boundary.view_measured import calibration_lines
from boundary.view_verdict import missing_lines, no_latency_reason, verdict  # noqa: F401  (re-exported: view.verdict)
from calc.expert_parallel import expert_ranks
from calc.front_end import front_busy_s
from calc.latency import READER_TOKENS_PER_S
from calc.sglang_hybrid import running_limit
from calc.workload import max_requests_at_length


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    align: str = ""
    """As text, 'l' or 'r' per column (default: the first left-aligned, the others right-aligned)."""

    @property
    def alignment(self) -> str:
        """'l' or 'r' per column: `align`, or the first column left-aligned and the others right-aligned."""
        return self.align or "l" + "r" * (len(self.columns) - 1)

    def text(self, indent: str = "  ") -> str:
        """Aligned columns (a last left-aligned column, such as an explanation, is not padded)."""
        widths = [max(len(str(c)), *(len(r[i]) for r in self.rows)) if self.rows else len(str(c))
                  for i, c in enumerate(self.columns)]  # fmt: skip
        align = self.alignment

        def line(cells) -> str:
            out = [f"{c:{'<' if a == 'l' else '>'}{w}}" for c, w, a in zip(cells, widths, align, strict=True)]
            return (indent + "  ".join(out)).rstrip()

        return "\n".join([line(self.columns), *(line(r) for r in self.rows)])


@dataclass(frozen=True)
class Metric:
    label: str
    value: str
    help: str = ""
    short: str = ""
    """How much is missing, shown under the value (a shortfall, in red)."""
    band: str = ""
    """The held-out error band, shown under the value ('± 29% held-out error')."""


@dataclass(frozen=True)
class Section:
    title: str
    rows: list[tuple[str, str]] = field(default_factory=list)
    """(label, value) pairs: aligned text in the CLI, a two-column table on the page."""
    extra: list[str] = field(default_factory=list)
    """Text lines after the rows (the CLI prints them as they are)."""

    @property
    def lines(self) -> list[str]:
        return _aligned(self.rows) + self.extra

    def table(self) -> Table:
        return Table(["quantity", "value"], [[k.strip(), v] for k, v in self.rows])


# --- the headline ------------------------------------------------------------------------------------------------


NO_SINGLE_CHANGE = ("No single change on this GPU fits (fp8 KV, more tensor-parallel GPUs, fp8 weights, a larger GPU, "
                    "fewer requests, a shorter max_model_len were tried): a search over GPUs, TP × PP and precisions "
                    "together may find a deployment")

def layout(r) -> str:
    """'TP=1 DP=8 EP=8 PP=1': how the plan's GPUs divide the model (the title, bench's header)."""
    s, ranks = r.scenario, expert_ranks(r.scenario, r.model)
    ep = f" EP={ranks}" if ranks > 1 else ""
    dp = f" DP={s.data_parallel_size}" if s.data_parallel_size > 1 else ""
    dcp = f" DCP={s.decode_context_parallel_size}" if s.decode_context_parallel_size > 1 else ""
    return f"TP={s.tensor_parallel_size}{dcp}{dp}{ep} PP={s.pipeline_parallel_size}"


def title(r) -> str:
    s, m = r.scenario, r.memory
    return (f"{r.model_name} on {r.gpu_name} ({layout(r)}, weights {m.weight_format.label}, KV {s.kv_cache_dtype}, "
            f"{r.engine.label})")  # fmt: skip


def kv_available(r) -> str:
    m = r.memory
    if m.kv_cache_memory_bytes < 0:
        return f"none ({fmt.gib(-m.kv_cache_memory_bytes)} short)"
    return fmt.gib(m.kv_cache_memory_bytes)


def memory_metrics(r) -> list[Metric]:
    s, m, f = r.scenario, r.memory, r.fit
    short = r.shortfall
    kv_short = -m.kv_cache_memory_bytes if m.kv_cache_memory_bytes < 0 else short.start_missing_bytes
    d = s.data_parallel_size
    rank = f"; one of the {d} data-parallel ranks' (the server holds {d} such pools)" if d > 1 else ""
    unplanned = f.planner_limit  # the planner's own limit, not the engine's refusal
    out = [
        Metric("Available KV cache", fmt.gib(m.kv_cache_memory_bytes) if m.kv_cache_memory_bytes >= 0 else "none",
               ("per GPU; SGLang's KV pool (its 'KV Cache is allocated … K size + V size')" if s.engine == "sglang"
                else "per GPU; vLLM's 'Available KV cache memory'") + (f" — {fmt.gib(kv_short)} short" if kv_short else ""),
               f"{fmt.gib(kv_short)} short" if kv_short else ""),
        Metric("KV cache (tokens)" + ("/rank" if d > 1 else ""), fmt.compact(m.kv_cache_tokens),
               (f"SGLang's 'max_total_num_tokens': {fmt.tokens(m.kv_cache_tokens)} = {kv_tokens_formula(r)}"
                if s.engine == "sglang" else
                f"vLLM's 'GPU KV cache size': {fmt.tokens(m.kv_cache_tokens)} = {kv_tokens_formula(r)}") + rank),
        Metric(f"Max conc. @ {fmt.count(s.max_model_len)}" + ("/rank" if d > 1 else ""), f"{m.max_concurrency:,.2f}x",
               "vLLM's 'Maximum concurrency for max_model_len tokens per request'" + rank),
        Metric("Fit at this length" + (" (all ranks)" if d > 1 else ""),
               fmt.missing("not planned") if unplanned else fmt.count(f.max_concurrency_at_length),
               "most requests of input_len + output_len held at once (capped by max_num_seqs)"
               + (f", summed over the {d} data-parallel ranks (the tiles marked /rank are one rank's)" if d > 1 else "")),
        Metric((f"Longest @ {s.max_num_seqs:,} running" if s.rank_concurrency > s.max_num_seqs else
                f"Longest @ C={s.rank_concurrency:,}") + ("/rank" if s.data_parallel_size > 1 else ""),
               f"{fmt.count(f.longest_request_at_concurrency)} tok"
               if short.engine_starts else fmt.missing("not planned") if unplanned else "none",
               "longest prompt + output each of the requests running at once can have (concurrency, at most max_num_seqs)" + ("" if short.engine_starts else
               " — none: the engine does not start")),
        Metric("Pool used", fmt.pct(f.pool_fraction, 0) if m.num_gpu_blocks and short.engine_starts else "none",
               "blocks the requests running at once take / blocks in the pool" + ("" if m.num_gpu_blocks else
               " — there is no KV cache"), f"{fmt.count(short.workload_missing_blocks)} blocks short"
               if short.workload_missing_blocks and m.num_gpu_blocks else ""),
    ]  # fmt: skip
    return out


def state_line(r) -> str:
    """Hybrid models: the per-request state, which no token count shows; '' for pure attention."""
    m, s = r.memory, r.scenario
    if not m.state_bytes_per_request:
        return ""
    return (f"State per request: {fmt.size(m.state_bytes_per_request)} on each GPU (Mamba / linear-attention layers, "
            f"whatever the length) — {fmt.gib(r.shortfall.state_used_bytes)} for the "
            f"{min(s.rank_concurrency, s.max_num_seqs):,} requests running, beside "
            f"{fmt.gib(r.shortfall.kv_used_bytes)} of attention KV")  # fmt: skip


MEMORY_FORMULAS = ("KV bytes per token", "Available KV cache memory", "GPU blocks", "Maximum concurrency", "Fits")


def formulas(r) -> dict[str, str]:
    """The formulas to expand: memory only when latency cannot happen (no_latency_reason)."""
    f = dict(r.formulas)
    avail = r.memory.kv_cache_memory_bytes
    if avail < 0 and "Available KV cache memory" in f:  # the arithmetic stays; what it means is said
        f["Available KV cache memory"] += f"\n→ no KV cache: {fmt.gib(-avail)} short"
    return f if r.serves else {k: v for k, v in f.items() if k in MEMORY_FORMULAS}


NO_GAP = "one output token: no gap between tokens, and vllm bench serve leaves TPOT out"


def _tile_time(t: float) -> str:
    """A headline tile's latency: milliseconds as the tables show them, seconds from 10 s on ('347,725 ms' was cut
    to '347,725 …' in a tile's width)."""
    return fmt.seconds(t) if t >= 10 else fmt.ms(t)


def latency_metrics(r) -> list[Metric]:
    """TTFT, TPOT, E2E, conformance, replicas or capacity, cost — only when they can happen (see no_latency_reason)."""
    s, lat, fl = r.scenario, r.latency, r.fleet
    out = [
        Metric("TTFT (estimate)", _tile_time(lat.ttft_s), f"{band(r, 'ttft') or r.bands_withheld or NO_BAND}; prefill floor {fmt.ms(lat.prefill.floor_s)}",
               band=band_short(r, "ttft")),
        Metric("TPOT (estimate)", _tile_time(lat.tpot_s) if s.output_len > 1 else fmt.missing(NO_GAP), f"{band(r, 'tpot') or r.bands_withheld or NO_BAND}; decode-step floor {fmt.ms(lat.decode.floor_s)}",
               band=band_short(r, "tpot")),
        Metric("End-to-end", fmt.seconds(lat.e2e_s), "TTFT + (output_len − 1) × TPOT"),
        Metric("Within both SLOs", fmt.pct(r.conformance.conformance),
               "share of requests meeting the TTFT and TPOT SLOs (goodput / throughput) at this scenario's "
               "concurrency, a closed loop as `vllm bench serve --max-concurrency` runs; the replica count counts "
               "Poisson arrivals (queues for prefill and for a slot)"),
    ]  # fmt: skip
    if fl.replicas is not None:
        split = (f" ({fl.prefill_instances:,} prefill + {fl.decode_instances:,} decode instances)"
                 if s.disaggregated and fl.prefill_instances is not None else "")  # fmt: skip
        out.append(Metric("Replicas / GPUs", f"{fmt.compact(fl.replicas)} / {fmt.compact(fl.gpus)}", capacity_text(r) + split))
    elif s.request_rate:
        out.append(Metric("Replicas / GPUs", fmt.missing("SLOs not met"), fl.capacity.reason or "no replica count"))
    else:
        out.append(Metric("Capacity per replica", fmt.rate(fl.capacity.rps, "req/s") if fl.capacity.rps > 0 else
                          fmt.missing("SLOs not met"), capacity_text(r) + "; set a request rate for replicas"))  # fmt: skip
    cost = fl.cost_per_million_output_tokens
    label = "Cost / M output tokens"
    value = fmt.money(cost, fl.currency) if cost is not None else fmt.missing(cost_reason(r, short=True))
    if cost is not None and fl.currency and math.isfinite(cost):  # the currency in the label: a tile has room for
        label, value = f"{label} ({fl.currency})", fmt.sig(cost)  # a few characters ('0.0889 USD' was cut short)
    missed = outside_slos(r)  # priced at a load that misses the quota: say so under the number, not only in its help
    out.append(Metric(label, value,
                      "price per GPU-hour × GPUs / output tokens per hour" + (
                          f" at {fmt.rate(s.request_rate, 'req/s')}" if s.request_rate
                          else " at this scenario's own throughput") + missed,
                      short=f"at {fmt.pct(r.conformance.conformance)} within SLOs" if missed else ""))  # fmt: skip
    return out


def outside_slos(r) -> str:
    """Where the cost is priced at the scenario's own throughput and that load misses the SLOs' quota: the quota
    missed and the cost within the SLOs, at capacity (nothing otherwise)."""
    fl, s, c = r.fleet, r.scenario, r.conformance
    if s.request_rate or fl.cost_at_capacity_per_million is None or c.conformance >= s.conformance_quota:
        return ""
    return (f"; at {s.concurrency:,} in flight only {fmt.pct(c.conformance)} of requests meet both SLOs (quota "
            f"{fmt.quota(s.conformance_quota)}): within them, at capacity ({fmt.rate(fl.capacity.rps, 'req/s')}), "
            f"{fmt.money(fl.cost_at_capacity_per_million, fl.currency)} per million output tokens")


def cost_reason(r, *, short: bool = False) -> str:
    """Why a plan has no cost: no price to multiply, or no replica count to multiply it by (short: for a tile)."""
    fl, s = r.fleet, r.scenario
    if fl.price_per_gpu_hour is None:
        return "no price: set gpu_hour_price"
    if s.request_rate and fl.replicas is None:
        return "no replica count: " + ("SLOs not met" if short else fl.capacity.reason or "the SLOs are not met")
    return "nothing served"

PREFILL_LOAD_SHOWN = 0.05  # below it the queue for prefill moves the capacity by under a percent or so


def capacity_text(r) -> str:
    """Capacity per replica, saying at which concurrency it was found (not necessarily the scenario's) and what
    bounds it: the SLOs at one more request in flight (with prompts queueing for prefill under Poisson arrivals), or
    the wait for a free slot."""
    s, cap = r.scenario, r.fleet.capacity
    if cap.rps <= 0:
        return f"one replica serves nothing within the SLOs: {cap.reason}"
    quota = fmt.quota(s.conformance_quota)
    if cap.limited_by == "slots":
        held = "max_num_seqs" if cap.slots == s.max_num_seqs * s.data_parallel_size else "what the KV pool holds"
        at = (f"{cap.load:,.1f} of its {cap.slots:,} slots ({held}) busy on average, latency at {cap.concurrency:,} in "
              f"flight; limited by the wait for a free slot: with Poisson arrivals {fmt.pct(cap.slot_wait_share, 1)} "
              f"of requests wait longer than the TTFT SLO leaves (Erlang C), and more traffic would break the "
              f"{quota} quota")  # fmt: skip
    elif cap.limited_by == "front-end":
        busy = front_busy_s(s, r.engine, r.model)
        at = (f"{cap.load:,.1f} requests in flight per replica on average — limited by the API server, which takes one "
              f"request at a time ({fmt.ms(busy)} of CPU each for the chat request and its tokens, at most "
              f"{1 / busy:,.0f} requests/s): more "
              f"traffic would queue there past the TTFT SLO's slack")  # fmt: skip
    elif cap.limited_by == "graphs":
        at = (f"{fmt.plural(cap.concurrency, 'request')} in flight per replica — within the SLOs, and the most whose "
              f"steps keep the engine's captured CUDA graphs: with more in flight the steps run eagerly and serve fewer "
              f"requests a second")  # fmt: skip
    else:
        count = (f"{fmt.plural(cap.concurrency, 'request')} in flight per replica" if cap.load >= cap.concurrency else
                 f"{cap.load:,.1f} requests in flight per replica on average (latency at {cap.concurrency:,})")  # fmt: skip
        at = f"{count} — the most that keeps {quota} within both SLOs (limited by the SLOs)"
        if cap.prefill_load >= PREFILL_LOAD_SHOWN:
            at += (f"; with Poisson arrivals prefills take {fmt.pct(cap.prefill_load, 0)} of the engine's time, so "
                   "prompts that arrive together queue for prefill and stall the decodes, which the capacity counts")  # fmt: skip
    if cap.concurrency != s.concurrency:
        at += f"; not the scenario's {s.concurrency:,} in flight"
        if cap.concurrency < s.concurrency and r.conformance.conformance >= s.conformance_quota:
            # both are right: a closed loop of C clients vs traffic that arrives at random (it queues for prefill)
            at += (f", where a closed loop of {s.concurrency:,} clients meets both SLOs {fmt.pct(r.conformance.conformance)} "
                   "of the time: the capacity counts arrivals at random, whose prompts queue for prefill")  # fmt: skip
    if cap.overcommitted:
        slots, rank = cap.slots // s.data_parallel_size, " each rank's" if s.data_parallel_size > 1 else " the"
        at += (f". max_num_seqs {s.max_num_seqs:,} is above the {slots:,} requests{rank} KV pool holds at this "
               f"length: vLLM admits a request when its prompt fits, so a burst beyond {slots:,} makes the decodes "
               f"preempt and recompute prompts instead of waiting, as this capacity assumes; set "
               f"max_num_seqs={slots:,}")  # fmt: skip
    if getattr(s, "disaggregated", False):  # the capacity is a decode instance's; prefill instances come beside it
        at = at.replace("per replica", "per decode instance")
        return f"{fmt.rate(cap.rps, 'req/s')} per decode instance at {at}"
    return f"{fmt.rate(cap.rps, 'req/s')} per replica at {at}"


# --- sections ----------------------------------------------------------------------------------------------------


def kv_tokens_formula(r) -> str:
    """How the release computes the 'GPU KV cache size' it prints (calc.pool.printed_kv_tokens), with the numbers."""
    s, m = r.scenario, r.memory
    dcp = s.decode_context_parallel_size
    if dcp > 1 and m.kv_cache_tokens == m.num_gpu_blocks * m.block_size * dcp:  # vLLM ≤ 0.19 "Multiplying … dcp"
        return f"{fmt.count(m.num_gpu_blocks)} blocks × {fmt.count(m.block_size)} × dcp {dcp}"
    if m.kv_cache_tokens == m.num_gpu_blocks * m.block_size:
        return f"{fmt.count(m.num_gpu_blocks)} blocks × {fmt.count(m.block_size)}"
    if m.kv_groups > 1 and m.kv_cache_tokens == m.num_gpu_blocks // m.kv_groups * m.block_size:
        return (f"⌊{fmt.count(m.num_gpu_blocks)} blocks / {m.kv_groups} KV groups⌋ × {fmt.count(m.block_size)} "
                "(vLLM ≤ 0.19 on a hybrid model)")  # fmt: skip
    return (f"{m.max_concurrency:,.2f} × max_model_len {fmt.count(s.max_model_len)}"
            + (" (its blocks also hold per-request state)" if m.state_bytes_per_request else ""))


def phases_table(r) -> Table:
    lat, s = r.latency, r.scenario
    rows = []
    hit = lat.prefix_hit_tokens
    computed = fmt.tokens(r.scenario.input_len - hit) + (f" ({fmt.count(hit)} more cached)" if hit else "")
    for name, ph in ((f"prefill of {computed}", lat.prefill),
                     (f"decode step, {fmt.plural(lat.decode_batch, 'sequence')}" + (" a rank" if s.data_parallel_size > 1 else "")
                      + (f" (per token: a speculative step / {lat.step.accepted_tokens:.2f})" if lat.step.spec_tokens else ""),
                      lat.decode)):  # fmt: skip
        rows.append([name, fmt.ms(ph.floor_s), fmt.ms(ph.estimate_s), "compute" if ph.compute_bound else "bandwidth",
                     f"{fmt.sig(ph.intensity_flop_per_byte)} FLOP/byte"])  # fmt: skip
    md = r.measured_decode
    if md is not None:
        rows.append([f"decode step at the measured {md.batch:g} running", fmt.ms(md.floor_s), fmt.ms(md.estimate_s),
                     "compute" if md.compute_bound else "bandwidth", f"{fmt.sig(md.intensity_flop_per_byte)} FLOP/byte"])  # fmt: skip
    return Table(["quantity", "floor", "estimate", "bound by", "arithmetic intensity"], rows)


def latency_section(r) -> Section:
    s, lat = r.scenario, r.latency
    head = (f"Latency per GPU ({lat.compute_dtype} peak {fmt.flops(lat.peak_flop_per_s)}, "
            f"{fmt.bandwidth(lat.bandwidth_bytes_per_s)}, ridge {fmt.sig(lat.ridge_flop_per_byte)} FLOP/byte, "
            f"{r.engine.label})")  # fmt: skip
    rows = [
        ("TTFT (estimate)", f"{fmt.ms(lat.ttft_s)}  {band(r, 'ttft')}".rstrip()),
        ("  = front-end + queue", f"{fmt.ms(lat.request_overhead_s)} + {fmt.ms(s.queue_s)}"),
        ("  + " + " + ".join(name for name, _ in lat.e2e_parts[2:-1]),
         " + ".join(fmt.ms(v) for _, v in lat.e2e_parts[2:-1])
         + f" ({fmt.plural(lat.prefill_steps, 'step')} of ≤ {fmt.tokens(lat.chunk_tokens)})"),
        *_engine_share_row(r),
        ("TPOT (estimate)", f"{fmt.ms(lat.tpot_s)}  {band(r, 'tpot')}".rstrip() if s.output_len > 1 else fmt.missing(NO_GAP)),
        (("ITL: plain step / with a prefill chunk" if lat.step.accepted_tokens == 1 else
          f"ITL (a chunk of {lat.step.accepted_tokens:.2f} tokens a speculative step): plain step / with a prefill chunk"),
         f"{fmt.ms(lat.stream_itl_s)} / {fmt.ms(lat.stream_spike_s)}") if not s.disaggregated
        else ("ITL (a decode instance: no prompt rides on its steps)", fmt.ms(lat.stream_itl_s)),
        ("end-to-end (estimate)", fmt.seconds(lat.e2e_s)),
        ("streaming rate", f"{fmt.rate(lat.stream_tokens_per_s, 'tokens/s')} (a reader takes in {READER_TOKENS_PER_S[0]:g}–{READER_TOKENS_PER_S[1]:g} tokens/s); average over "
         f"the request {fmt.rate(lat.average_tokens_per_s, 'tokens/s')}, which describes no moment"),
        ("throughput", f"{fmt.rate(lat.requests_per_s, 'req/s')}, {fmt.rate(lat.output_tokens_per_s, 'output tokens/s')} "
         f"({fmt.rate(lat.total_tokens_per_s, 'tokens/s')} counting prompts, which flatters long prompts)"),
        ("prefill → decode KV transfer" + ("" if s.disaggregated else ", were it disaggregated"), f"{fmt.ms(lat.kv_transfer_s)} over {fmt.bandwidth(lat.kv_transfer_link_bytes_per_s)} "
         f"(vs prefill {fmt.ms(lat.prefill.estimate_s)})"),
    ]  # fmt: skip
    if not r.error_bands:
        rows.append(("held-out error", r.bands_withheld or NO_BAND))
    extra = [""] + phases_table(r).text().splitlines() + [f"  {x}" for x in calibration_lines(r)]
    return Section(head, rows, extra)


def unfit_note(r) -> str:
    """What the estimates do where the requests do not all fit the KV pool (calc.latency: the rest wait for room)."""
    s = r.scenario
    held = max_requests_at_length(s, r.memory, r.model)
    pool_holds = r.memory.num_gpu_blocks // r.memory.blocks_per_request(s.request_len) if s.request_len else 0
    run = (f"the {fmt.plural(held, 'request')} the KV pool holds at this length and queue the rest for room"
           if held == pool_holds else f"{fmt.plural(held, 'request')} at once ({running_limit(s, r.memory)}) and "
           "queue the rest")  # fmt: skip
    return f"The estimates run {run}; the predicted benchmark plays the engine's admission and preemptions out."


def _engine_share_row(r) -> list[tuple[str, str]]:
    """Where the KV pool or the API server holds fewer requests in the engine than are in flight, how many and why
    (calc.latency: the rest wait)."""
    s, lat = r.scenario, r.latency
    flight = max(1, s.rank_concurrency)  # one data-parallel rank's share
    if lat.decode_batch >= flight or s.disaggregated:
        return []
    rank = f" on each of the {s.data_parallel_size} ranks" if s.data_parallel_size > 1 else ""
    slots = max_requests_at_length(s, r.memory, r.model) or s.max_num_seqs
    if lat.decode_batch == slots == s.max_num_seqs:
        why = f"max_num_seqs is {s.max_num_seqs:,}, so the rest wait in the engine's queue"
    elif lat.decode_batch == slots:
        why = (f"the KV pool holds {fmt.plural(slots, 'request')} of {fmt.tokens(s.request_len)} at once, so the rest "
               "wait in the engine's queue for room")  # fmt: skip
    else:
        why = (f"the API server takes one request at a time ({fmt.ms(front_busy_s(s, r.engine, r.model))} each), so "
               "the rest wait for it")  # fmt: skip
    return [("  in the engine", f"{fmt.mean_count(lat.decode_batch)} of the {flight:,} in flight{rank} on average; {why}")]


def _aligned(rows: list[tuple[str, str]], width: int = 38) -> list[str]:
    w = max(width, *(len(k) + 2 for k, _ in rows)) if rows else width
    return [f"  {k:<{w}}{v}" for k, v in rows]
