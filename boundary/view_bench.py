"""The predicted `vllm bench serve` run as finished text: its table, what it says beyond the table (throughput,
work cap, preemptions, the queue, the lockstep of fixed lengths) and both held-out bands (split from boundary.view,
which holds the headline and the memory and latency sections)."""

from __future__ import annotations

from boundary import fmt
from boundary.view import Section, Table
from boundary.view_bands import NO_BAND, band


def benchmark_table(r) -> Table:
    """The predicted `vllm bench serve` summary: mean / median / p99 per latency, then throughputs."""
    d = r.benchmark.bench_summary()

    def ms(v):
        return fmt.missing("nothing completed") if v is None else fmt.ms_value(v)

    rows = [[name, ms(d[f"mean_{k}_ms"]), ms(d[f"median_{k}_ms"]), ms(d[f"p99_{k}_ms"])]
            for name, k in (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("E2E latency", "e2el"))]  # fmt: skip
    return Table(["metric", "mean", "median", "p99"], rows)


def benchmark_lines(r) -> list[str]:
    b, s = r.benchmark, r.scenario
    if not b.completed:
        return [f"nothing to time: {b.none_completed_reason(s.max_num_batched_tokens, s.input_len, s.output_len)}"]
    d = b.bench_summary()
    out = [f"request throughput {fmt.rate(d['request_throughput'], 'req/s')}, output throughput "
           f"{fmt.rate(d['output_throughput'], 'tokens/s')} ({fmt.count(b.completed)} of "
           f"{fmt.count(r.benchmark_prompts)} requests in {fmt.seconds(d['duration'])})"]  # fmt: skip
    if d["max_output_tokens_per_s"] is not None:  # the tool's own peaks: one-second buckets from the first send
        out[0] += (f"; the tool's peaks (per second): {fmt.count(d['max_output_tokens_per_s'])} output tokens/s, "
                   f"{fmt.count(d['max_concurrent_requests'])} concurrent requests (each counts in every second it touches)")  # fmt: skip
    if b.stopped_early:
        out.append("the simulation stopped at its work cap (tiny chunks or very long prompts take a step each, thousands "
                   "running make each step long): "
                   "figures over the requests completed by then")  # fmt: skip
    if b.preemptions:
        out.append(f"{fmt.count(b.preemptions)} preemptions: the KV pool ran out and "
                   + ("SGLang retracted those requests (recomputed when readmitted)" if s.engine == "sglang"
                      else "vLLM recomputed those requests"))  # fmt: skip
    steady = r.benchmark_steady_p99_ttft_s
    if steady is not None and d["p99_ttft_ms"] is not None and d["p99_ttft_ms"] / 1e3 > WAVE_RATIO * steady:
        out.append(f"p99 TTFT {fmt.ms(d['p99_ttft_ms'] / 1e3)} is the first wave's: the tool starts its "
                   f"{s.concurrency:,} clients together, so their prompts wait for each other's prefill; past the "
                   f"first {s.concurrency:,} requests the p99 is {fmt.ms(steady)} (the SLOs tab's shares are for "
                   "requests spread in time, as traffic is)")  # fmt: skip
    c, dp = s.rank_concurrency, s.data_parallel_size  # one rank's share against its own caps
    rank = f" on each of {dp} ranks" if dp > 1 else ""
    if c > s.max_num_seqs:
        out.append(f"max_num_seqs {s.max_num_seqs:,} < C = {c:,}{rank}: the rest queue (TTFT includes it)")
    ratio = d["median_ttft_ms"] / 1e3 / r.latency.ttft_s if r.latency.ttft_s > 0 else 0.0
    held = r.fit.max_concurrency_at_length // dp
    if held < c <= s.max_num_seqs:  # the pool, not the lockstep, says why
        tpot = d["median_tpot_ms"] / 1e3 / r.latency.tpot_s if r.latency.tpot_s > 0 else 0.0
        line = (f"the KV pool holds {fmt.count(held)} of the {c:,} requests{rank} at their full length: the "
                f"estimates run {fmt.count(held)} and queue the rest for room; the engine admits a request when its "
                "prompt fits and preempts when the decodes run out of blocks")  # fmt: skip
        churn = ratio < 1 / LOCKSTEP_RATIO or tpot > LOCKSTEP_RATIO
        out.append(line + (", so here requests start sooner and decode slower" if churn else "")
                   + f" (median TTFT {fmt.ratio(ratio, 2)} the estimate, TPOT {fmt.ratio(tpot, 2)})")  # fmt: skip
    elif 1 < c <= s.max_num_seqs and ratio > LOCKSTEP_RATIO and not s.disaggregated:  # the queue says why beyond
        varied = r.benchmark_varied.bench_summary()["median_ttft_ms"] / 1e3
        out.append(f"median TTFT {fmt.ratio(ratio, 2)} the estimate: with every prompt and every output the same length (the "
                   f"tool's default), {LOCKSTEP_WORDS} and their successors' prompts are prefilled together; "
                   f"with lengths ±30 % (`--random-range-ratio 0.3`), out of step as traffic is, the simulated median "
                   f"is {fmt.ms(varied)} against the estimate's {fmt.ms(r.latency.ttft_s)}")
    tpot = d["median_tpot_ms"] / 1e3 / r.latency.tpot_s if r.latency.tpot_s > 0 and d["median_tpot_ms"] else 1.0
    if 1 < c <= min(s.max_num_seqs, held) and tpot < 1 / TPOT_LOCKSTEP_RATIO and not s.disaggregated:
        varied = r.benchmark_varied.bench_summary()["median_tpot_ms"] / 1e3
        out.append(f"median TPOT {fmt.ratio(tpot, 2)} the estimate: with every prompt and every output the same length, "
                   f"{LOCKSTEP_WORDS} and their successors' prompts are prefilled between their decode steps, not "
                   f"among them, so most steps only decode; the estimate's steps carry the arriving prompts as traffic "
                   f"spread in time does (with lengths ±30 %, the simulated median is {fmt.ms(varied)} against the "
                   f"estimate's {fmt.ms(r.latency.tpot_s)})")  # fmt: skip
    return out


LOCKSTEP_RATIO = 1.3  # beyond the held-out TTFT error, the gap is the fixed lengths' lockstep, worth a word
TPOT_LOCKSTEP_RATIO = 1.15  # a TPOT that far below the estimate (its held-out median error is ~8 %): the same
WAVE_RATIO = 2.0  # a p99 TTFT twice the steady one's: the benchmark's opening burst sets it, worth a word
LOCKSTEP_WORDS = "requests finish together"


def random_lengths(s) -> str:
    """The prompt's flags of vllm bench serve's random dataset: --random-input-len, after --random-prefix-len's
    shared tokens where the scenario has a shared system prompt (the tool's input length excludes its prefix)."""
    if not s.shared_len:
        return f"--random-input-len {s.input_len}"
    return f"--random-prefix-len {s.shared_len} --random-input-len {s.input_len - s.shared_len}"


def benchmark_section(r) -> Section:
    s = r.scenario
    head = (f"Predicted `vllm bench serve --max-concurrency {s.concurrency} --num-prompts {r.benchmark_prompts} "
            f"{random_lengths(s)} --random-output-len {s.output_len}` "
            + ("against an SGLang server " if s.engine == "sglang" else "") + "(scheduler simulation"
            + ("; one aggregated engine: disaggregated serving is not simulated)" if s.disaggregated else ")"))  # fmt: skip
    lines = [*benchmark_lines(r), benchmark_band_line(r)]
    return Section(head, [], benchmark_table(r).text().splitlines() + ["", *("  " + x for x in lines)])


def benchmark_band_line(r) -> str:
    """Both bands, since the page shows the two side by side: the simulation's under its table, the estimates'."""
    if not r.error_bands and not r.benchmark_error_bands:
        return f"held-out error: {r.bands_withheld or NO_BAND}"

    def bands(simulated: bool) -> str:
        shown = [(name, band(r, m, simulated=simulated)) for m, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"))]
        return ", ".join(f"{name} {b}" for name, b in shown if b) or "none recorded"

    return f"held-out error of this simulation: {bands(True)}; of the estimates (closed form): {bands(False)}"
