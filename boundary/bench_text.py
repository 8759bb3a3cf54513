"""`python -m calc bench`'s text: the summary laid out as `vllm bench serve` (v0.10 and later) and `vllm bench
latency` print theirs (split from boundary/cli_bench.py, which parses the flags and runs the simulation)."""

from __future__ import annotations

import math

from boundary import view
from calc.sim_stats import PERCENTILE_METRICS, percentile_word


def line(label: str, value: str) -> str:
    return f"{label:<40} {value}"


def serve_text(d: dict, r, res, conc: int | None, rate: float, qs: tuple[float, ...], spec: dict | None = None,
                dataset: str = "random") -> str:
    """Laid out as `vllm bench serve` (v0.10 and later) prints its summary; its speculative-decoding section where the
    scenario speculates (the acceptance is the scenario's draft_acceptance_rate, the counts what follows from it)."""
    s = r.scenario
    head = (f"{r.model_name} on {s.gpus_per_replica} × {r.gpu_name} ({view.layout(r)}), {r.engine.label}, predicted "
            f"(step-time model + scheduler simulation; held-out error in README.md)")  # fmt: skip
    done = res.completed
    lines = [head, "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
             line("Successful requests:", f"{done}"), line("Failed requests:", f"{d['failed']}")]
    if conc is not None:
        lines.append(line("Maximum request concurrency:", f"{conc}"))
    if math.isfinite(rate):
        lines.append(line("Request rate configured (RPS):", f"{rate:.2f}"))
    lines += [line("Benchmark duration (s):", f"{d['duration']:.2f}"),
              line("Total input tokens:", f"{d['total_input_tokens']}"),
              line("Total generated tokens:", f"{d['total_output_tokens']}"),
              line("Request throughput (req/s):", f"{d['request_throughput']:.2f}")]
    if d["request_goodput"] is not None:
        lines.append(line("Request goodput (req/s):", f"{d['request_goodput']:.2f}"))
    lines.append(line("Output token throughput (tok/s):", f"{d['output_throughput']:.2f}"))
    if d["max_output_tokens_per_s"] is not None:
        lines += [line("Peak output token throughput (tok/s):", f"{d['max_output_tokens_per_s']:.2f}"),
                  line("Peak concurrent requests:", f"{d['max_concurrent_requests']:.2f}")]
    lines.append(line("Total Token throughput (tok/s):", f"{d['total_token_throughput']:.2f}"))  # fmt: skip
    titles = {"ttft": "Time to First Token", "tpot": "Time per Output Token (excl. 1st token)",
              "itl": "Inter-token Latency", "e2el": "End-to-end Latency"}  # fmt: skip
    for name in (m for m in PERCENTILE_METRICS if f"mean_{m}_ms" in d):
        lines.append("{s:{c}^{n}}".format(s=titles[name], n=50, c="-"))
        short = name.upper()
        lines += [line(f"Mean {short} (ms):", f"{d[f'mean_{name}_ms']:.2f}"),
                  line(f"Median {short} (ms):", f"{d[f'median_{name}_ms']:.2f}")]
        lines += [line(f"P{w} {short} (ms):", f"{d[f'p{w}_{name}_ms']:.2f}") for w in map(percentile_word, qs)]
    if spec:
        lines += ["{s:{c}^{n}}".format(s="Speculative Decoding", n=50, c="-"),
                  line("Acceptance rate (%):", f"{spec['spec_decode_acceptance_rate']:.2f}"),
                  line("Acceptance length:", f"{spec['spec_decode_acceptance_length']:.2f}"),
                  line("Drafts:", f"{spec['spec_decode_num_drafts']}"),
                  line("Draft tokens:", f"{spec['spec_decode_draft_tokens']}"),
                  line("Accepted tokens:", f"{spec['spec_decode_accepted_tokens']}")]  # fmt: skip
    lines.append("=" * 50)
    if res.preemptions:
        who = "SGLang retracted those requests" if s.engine == "sglang" else "vLLM recomputed those requests"
        lines.append(f"note: {res.preemptions} preemptions (the KV pool ran out; {who})")
    if res.stopped_early:
        lines.append(f"note: the simulation stopped at its work cap after {done} requests (tiny chunks or very long "
                     "prompts take a step each, thousands running make each step long); the figures are over those")  # fmt: skip
    elif done < len(res.e2e_s):
        lines.append(f"note: {len(res.e2e_s) - done} requests can never fit the KV pool and were not completed")
    if s.engine == "sglang" and dataset == "random":  # the layout is vllm bench serve's; SGLang's client reads R otherwise
        lines.append("note: laid out as vllm bench serve prints it, with its --random-range-ratio (lengths in "
                     "[L·(1 − R), L·(1 + R)]); SGLang's bench_serving draws them in [L·R, L] (its default R = 0: "
                     "uniform in [1, L], mean about L / 2)")  # fmt: skip
    return "\n".join(lines)


def latency_text(out: dict, batch: int, s, notes: list[str] = ()) -> str:
    """Laid out as `vllm bench latency` prints it (SGLang's own static-batch tool is sglang.bench_one_batch)."""
    flags = f"--batch-size {batch} --input-len {s.input_len} --output-len {s.output_len}"
    head = (f"predicted `vllm bench latency {flags}`" if s.engine == "vllm" else
            f"predicted static batch under SGLang (`python -m sglang.bench_one_batch {flags}`, its total latency), "
            "laid out as vllm bench latency prints it")  # fmt: skip
    lines = [f"{head} (no noise: every iteration alike)", f"Avg latency: {out['avg_latency']} seconds"]
    lines += [f"{p}% percentile latency: {v} seconds" for p, v in out["percentiles"].items()]
    return "\n".join(lines + [f"note: {n}" for n in notes])
