"""`python -m calc bench`: what `vllm bench serve` / `vllm bench latency` would print for a scenario.

    python -m calc bench --model qwen3-8b --gpu h100-sxm --max-concurrency 8 --random-input-len 1024 \
        --random-output-len 256 --num-prompts 200 [--json]
    python -m calc bench --model qwen3-8b --gpu h100-sxm --batch-size 8 --input-len 1024 --output-len 128

The serving flags are the benchmark tool's (`--max-concurrency`, `--request-rate`, `--random-input-len`,
`--random-output-len`, `--random-range-ratio`, `--num-prompts`, `--seed`), the server's are the Scenario's
(`--tensor-parallel-size`, `--dtype`, `--max-num-seqs`, `--engine vllm|sglang`, …): one vocabulary.
`--request-rate` is the Scenario's own request_rate (Poisson arrivals); without it and without
`--max-concurrency` every prompt is sent at once, as the tool does. `--batch-size` selects `vllm bench latency`.
"""

from __future__ import annotations

import argparse
import json
import math
import re

from boundary import view
from boundary.args import add_scenario_flags, add_spec_flags, scenario_data, validate_scenario
from boundary.bench_text import latency_text, serve_text
from calc.errors import InputError
from calc.length_shapes import SHAREGPT_MEAN_TOKENS
from calc.scenario import Scenario
from calc.sim_stats import PERCENTILE_METRICS, percentile_word
from calc.speculative import spec_decode_stats

_MEANS = "means {:.0f} prompt / {:.0f} output tokens".format(*SHAREGPT_MEAN_TOKENS)

COUNT_KEYS = ("completed", "failed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
              "request_goodput", "output_throughput", "max_output_tokens_per_s", "max_concurrent_requests",
              "total_token_throughput")  # fmt: skip
MAX_PERCENTILES = 20  # --metric-percentiles: more is no summary
NOT_BENCHED = ("queue_s", "slo_ttft_s", "slo_tpot_s", "conformance_quota", "latency_sigma", "sim_ttft_median_s",
               "sim_tpot_median_s", "sim_window_s", "gpu_hour_price", "currency", "fanout", "chain_calls", "turns",
               "tokens_per_turn", "document_len", "document_queries", "host_link_gb_per_s", "ssd_gb_per_s",
               "network_gb_per_s", "host_cache_gib", "ssd_cache_gib", "remote_cache_gib", "swap_overlap",
               "kv_transfer_gb_per_s")  # fmt: skip
"""Scenario fields the benchmark's simulation does not read (SLOs and their spread, queueing, price, agent and RAG
workloads, KV offload, disaggregation): a flag among them gets a note, not silence."""


def serve_keys(metrics: tuple[str, ...], qs: tuple[float, ...]) -> tuple[str, ...]:
    """The JSON keys of a serve run, in the tool's order: counts and rates, then per metric mean_, median_, p{q}_."""
    lat = [f"{k}_{m}_ms" for m in PERCENTILE_METRICS if m in metrics
           for k in ("mean", "median", "std", *(f"p{percentile_word(q)}" for q in qs))]  # fmt: skip
    return COUNT_KEYS + tuple(lat)


class _Typed(argparse.Action):
    """Stores the value and the flag it came by: --random-input-len and --input-len set the same field, and an error
    names the one typed."""

    def __call__(self, parser, namespace, values, option_string=None):
        plain = "--" + self.dest.replace("_", "-")
        before = getattr(namespace, "typed", {}).get(plain)
        if before not in (None, option_string) and getattr(namespace, self.dest) != values:  # the last would win
            raise argparse.ArgumentError(self, f"sets the same prompt or output length as {before}, given too with "
                                               f"another value ({getattr(namespace, self.dest)}): give one of them")  # fmt: skip
        setattr(namespace, self.dest, values)
        namespace.typed = getattr(namespace, "typed", {}) | {plain: option_string}


def add_bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="predict what `vllm bench serve` / `vllm bench latency` would print",
                       description=__doc__.split("\n")[0])  # fmt: skip
    add_spec_flags(b)
    b.add_argument("--json", action="store_true", help="print the benchmark's JSON keys")
    g = b.add_argument_group("benchmark (vllm bench serve / latency flags)")
    g.add_argument("--max-concurrency", dest="max_concurrency", default=None, metavar="C",
                   help="closed loop: C clients, each sending its next request when the last one ends")  # fmt: skip
    g.add_argument("--random-input-len", dest="input_len", default=None, metavar="I", action=_Typed,
                   help="prompt tokens (= --input-len; default 1024, as vllm bench serve's)")  # fmt: skip
    g.add_argument("--random-output-len", dest="output_len", default=None, metavar="O", action=_Typed,
                   help="output tokens (= --output-len; default 256, the planner's: vllm bench serve's is 128)")  # fmt: skip
    g.add_argument("--random-prefix-len", dest="random_prefix_len", default=None, metavar="P",
                   help="tokens of a prefix every prompt shares, before its --random-input-len ones (vllm bench "
                        "serve's): prompts of P + I tokens whose first P the server finds in its prefix cache "
                        "(= --shared-prefix-len P with --input-len P + I)")  # fmt: skip
    g.add_argument("--random-range-ratio", dest="range_ratio", default="0", metavar="R",
                   help="lengths uniform in [len·(1−R), len·(1+R)] (default 0: fixed)")  # fmt: skip
    g.add_argument("--dataset-name", dest="dataset_name", default="random", metavar="D",
                   help=f"random (default), or sharegpt: ShareGPT's lengths as vllm bench serve samples them ({_MEANS}, "
                        "Llama-3 tokenizer; calc/length_shapes.py)")  # fmt: skip
    g.add_argument("--num-prompts", dest="num_prompts", default="1000", metavar="N", help="requests (default 1000)")
    g.add_argument("--seed", dest="seed", default="0", metavar="S", help="random seed of lengths and arrivals")
    g.add_argument("--batch-size", dest="batch_size", default=None, metavar="B",
                   help="`vllm bench latency`: one static batch of B prompts, of --input-len and --output-len tokens "
                        "(the planner's 1024 and 256 unless given; vllm bench latency's are 32 and 128)")  # fmt: skip
    g.add_argument("--percentile-metrics", dest="percentile_metrics", default=",".join(PERCENTILE_METRICS),
                   metavar="M,...", help="metrics to report percentiles of, of ttft, tpot, itl, e2el (default: all four; "
                                         "vllm bench serve's default leaves out e2el)")  # fmt: skip
    g.add_argument("--metric-percentiles", dest="metric_percentiles", default="99", metavar="Q,...",
                   help="percentiles to report, each between 0 and 100 (default 99)")
    g.add_argument("--goodput", dest="goodput", nargs="+", default=None, metavar="KEY:MS",
                   help="service level objectives as KEY:VALUE pairs in ms, KEY one of ttft, tpot, e2el: request_goodput "
                        "counts the requests within all of them per second")  # fmt: skip
    g.add_argument("--burstiness", dest="burstiness", default="1.0", metavar="B",
                   help="with --request-rate: gamma-distributed gaps of shape B (1, the default: Poisson; below 1 "
                        "burstier)")  # fmt: skip
    g.add_argument("--request-rate", dest="request_rate", default=None, metavar="R",
                   help="Poisson arrivals at R requests/s; inf (the default, as vllm bench serve's) sends every prompt "
                        "at once, or as --max-concurrency's clients free up")  # fmt: skip
    add_scenario_flags(b, skip=("input_len", "output_len", "request_rate", "concurrency",
                                *(name for name in Scenario.model_fields if name.startswith("search_"))))
    b.add_argument("--concurrency", dest="concurrency", default=None, help=argparse.SUPPRESS)  # plan's: refused, named
    b.add_argument("--input-len", dest="input_len", default=None, action=_Typed, help=argparse.SUPPRESS)
    b.add_argument("--output-len", dest="output_len", default=None, action=_Typed, help=argparse.SUPPRESS)



def _bound(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


ASCII_INT = re.compile(r"-?[0-9]{1,29}")
ASCII_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")


def _number(flag: str, text: str | None, kind=int, lo: float = 0, hi: float = 10**9):
    """The flag's value as `kind`, from ASCII digits only: Python's int() and float() also take '١٠٠' (Arabic-Indic
    digits), '1_6' and ' 5', which no benchmark tool's flag means."""
    if text is None:
        return None
    pattern = ASCII_INT if kind is int else ASCII_FLOAT
    v = kind(text) if len(str(text)) < 30 and pattern.fullmatch(str(text)) else None
    if v is None or not (lo <= v <= hi) or (isinstance(v, float) and not math.isfinite(v)):
        what = "a whole number" if kind is int else "a number"
        raise InputError(flag, f"expected {what} in ASCII digits between {_bound(lo)} and {_bound(hi)} "
                               f"(got {str(text)[:30]!r})")  # fmt: skip
    return v


def run_bench(args, catalog) -> int:
    from calc import bench
    from calc.evaluate import evaluate, json_safe

    data = scenario_data(args)
    if str(data.get("request_rate", "")).strip().lower() in ("inf", "+inf", "infinity"):  # vllm bench serve's default:
        del data["request_rate"]  # every prompt at once, as without the flag (args.request_rate keeps what was typed)
    dataset = _dataset(args)
    if dataset == "sharegpt":
        data["input_len"], data["output_len"] = (round(x) for x in SHAREGPT_MEAN_TOKENS)
    conc = _number("--max-concurrency", args.max_concurrency, int, 1, 1_000_000)
    batch = _number("--batch-size", args.batch_size, int, 1, 65_536)
    _random_prefix(args, data, dataset, batch)
    n = _number("--num-prompts", args.num_prompts, int, 1, bench.MAX_SIM_PROMPTS)
    ratio = _number("--random-range-ratio", args.range_ratio, float, 0, 0.99)
    metrics, qs = _percentile_metrics(args.percentile_metrics), _metric_percentiles(args.metric_percentiles)
    slos, burst = _goodput(args.goodput), _number("--burstiness", args.burstiness, float, 0.001, 1000)
    seed = _number("--seed", args.seed, int, 0, 2**31)
    if str(data.get("disaggregated", "")).lower() in ("true", "1", "yes"):
        raise InputError("--disaggregated", "the benchmark simulation serves one aggregated engine (disaggregated "
                                            "prefill and decode are not simulated): drop the flag; `calc plan` and "
                                            "`calc search` size disaggregated serving")  # fmt: skip
    if "concurrency" in data:  # plan's flag; the benchmark tool's clients are --max-concurrency's
        raise InputError("--concurrency", "bench sends requests as vllm bench serve does: use --max-concurrency C "
                                          "(C clients in a closed loop), --request-rate R (arrivals), or --batch-size B")  # fmt: skip
    if batch is not None and (conc is not None or args.request_rate is not None):
        raise InputError("--batch-size", "selects vllm bench latency (one static batch); --max-concurrency and "
                                         "--request-rate are vllm bench serve's: give one or the other")  # fmt: skip
    if batch is not None:  # vllm bench latency has none of vllm bench serve's load and report flags: refuse, not ignore
        for flag, given in (("--num-prompts", args.num_prompts != "1000"), ("--random-range-ratio", args.range_ratio != "0"),
                            ("--dataset-name", dataset != "random"), ("--seed", args.seed != "0"),
                            ("--goodput", args.goodput is not None), ("--burstiness", args.burstiness != "1.0"),
                            ("--metric-percentiles", args.metric_percentiles != "99"),
                            ("--percentile-metrics", args.percentile_metrics != ",".join(PERCENTILE_METRICS))):  # fmt: skip
            if given:
                raise InputError(flag, "a vllm bench serve flag; --batch-size selects vllm bench latency (one static "
                                       "batch, its latency and fixed percentiles): drop one or the other")  # fmt: skip
    elif args.burstiness != "1.0" and "request_rate" not in data:
        raise InputError("--burstiness", "shapes the gaps between paced arrivals: it needs --request-rate R (without "
                                         "one every prompt is sent at once, or as --max-concurrency's clients free up)")  # fmt: skip
    if batch is not None and int(data.get("data_parallel_size", 1) or 1) > 1:
        raise InputError("--batch-size", "vllm bench latency runs one engine (the LLM class): a static batch is "
                                         "planned with --data-parallel-size 1")  # fmt: skip
    if conc is not None:
        data["concurrency"] = conc
    elif batch is not None:
        data["concurrency"] = batch
    try:
        s = validate_scenario(data)
    except InputError as e:  # --random-input-len -5 is named as typed, not as the --input-len it also sets
        raise InputError(getattr(args, "typed", {}).get(e.field, e.field), e.message) from None
    r = evaluate(s, catalog)
    notes = _notes(r, data)
    # a plan vLLM could not serve has no latency: say why, as `calc plan` does, rather than print zeros as times
    not_served = None if r.serves else view.verdict(r)
    if not_served and conc is None and batch is None:  # no clients to count: plan's default C is not this run's
        not_served = not_served.removeprefix(f"{s.concurrency:,} × ")
    if batch is not None and not_served:
        print(json.dumps({"avg_latency": None, "percentiles": {}, "not_served": not_served, "notes": notes}, indent=2)
              if args.json else _not_served_text(not_served, r))  # fmt: skip
        return 0
    if batch is not None:
        out = bench.static_batch(r, batch_size=batch, input_len=s.input_len, output_len=s.output_len).bench_summary()
        print(json.dumps(out | {"notes": notes}, indent=2) if args.json else latency_text(out, batch, s, notes))
        return 0
    if not_served:  # nothing to time: the keys with null values, not zeros a script would read as latencies; every
        # request fails (completed + failed = num_prompts, as where the simulation completes none)
        meta = {"completed": 0, "failed": n, "num_prompts": n, "max_concurrency": conc, "request_rate": s.request_rate,
                "preemptions": 0, "engine": s.engine, "engine_version": s.engine_version, "model": s.model, "gpu": s.gpu,
                **_layout(s), "not_served": not_served, "notes": notes}  # fmt: skip
        print(json.dumps(dict.fromkeys(serve_keys(metrics, qs)) | meta, indent=2) if args.json
              else _not_served_text(not_served, r))  # fmt: skip
        return 0
    res = bench.serve(r, num_prompts=n, max_concurrency=conc, request_rate=s.request_rate or math.inf,
                      range_ratio=ratio, seed=seed, dataset=dataset, burstiness=burst)  # fmt: skip
    d = res.bench_summary(qs, metrics, slos)
    spec = spec_decode_stats(s, r.model, output_tokens=d["total_output_tokens"], completed=d["completed"]) \
        if res.completed else None  # fmt: skip
    if not res.completed:
        not_served = res.none_completed_reason(s.max_num_batched_tokens, s.input_len, s.output_len)
        if not args.json:
            print(_not_served_text(not_served, r))
            return 0
    if args.json:
        out = {k: d[k] for k in serve_keys(metrics, qs)} | {"num_prompts": n, "max_concurrency": conc,
                                                 "request_rate": s.request_rate, "burstiness": burst,
                                                 "preemptions": res.preemptions, "stopped_early": res.stopped_early,
                                                 "engine": s.engine, "engine_version": s.engine_version,
                                                 "model": s.model, "gpu": s.gpu, **_layout(s),
                                                 "not_served": not_served, "notes": notes} | (spec or {})  # fmt: skip
        if s.engine == "sglang":  # the same figures under the names sglang.bench_serving writes, for its scripts
            out |= {theirs: out[ours] for ours, theirs in SGLANG_KEYS.items() if ours in out}
        print(json.dumps(json_safe(out), indent=2))
    else:
        print(serve_text(d, r, res, conc, s.request_rate or math.inf, qs, spec, dataset=dataset))
        print("\n".join(f"note: {n}" for n in notes) if notes else "", end="\n" if notes else "")
    return 0


RATE_NOTE = ("--request-rate {rate:g} is vllm bench serve's here: Poisson arrivals into this one server, every request "
             "timed at the load they make; `calc plan --request-rate {rate:g}` is the rate a fleet of replicas serves, "
             "its headline timed at --concurrency requests in flight")


def _notes(r, data: dict) -> list[str]:
    """The plan's notes (the server's own defaults where the plan's differ, what a flag changes or not, where the
    step model extrapolates), and the flags a benchmark does not read."""
    unread = [f"--{k.replace('_', '-')}" for k in NOT_BENCHED if k in data]
    rate = [RATE_NOTE.format(rate=r.scenario.request_rate)] if r.scenario.request_rate else []
    return list(r.notes) + rate + ([f"{', '.join(unread)} change{'s' if len(unread) == 1 else ''} nothing in a benchmark: "
                             "SLOs, queueing, price, agent and document workloads and KV offload are `calc plan`'s"]
                            if unread else [])  # fmt: skip


def _not_served_text(why: str, r) -> str:
    """The refusal, and where the changes that would serve it are listed (`calc plan` on the same flags)."""
    s, fix = r.scenario, ""
    if "exceeds max_model_len" in why:
        need, most = s.input_len + s.output_len, r.model.max_len_limit
        fix = (f"; --max-model-len {need} admits it" if need <= most else
               f"; no --max-model-len admits it: {need:,} tokens is more than the model's maximum, {r.model.max_len_text}")
    return f"not served: {why}{fix} (`python -m calc plan` with the same server flags lists the changes that fit)"


def _layout(s) -> dict:
    """The server's GPU layout in the JSON beside the tool's keys (two runs on eight GPUs differ by it)."""
    return {"tensor_parallel_size": s.tensor_parallel_size, "pipeline_parallel_size": s.pipeline_parallel_size,
            "data_parallel_size": s.data_parallel_size}


def _random_prefix(args, data: dict, dataset: str, batch: int | None) -> None:
    """--random-prefix-len P: vllm bench serve's shared prefix, P tokens before the I random ones of each prompt,
    as the Scenario's shared_prefix_len P and input_len P + I (the tool's lengths exclude the prefix; ours include
    it)."""
    prefix = _number("--random-prefix-len", args.random_prefix_len, int, 0, 10_000_000)
    if not prefix:
        return
    if "shared_prefix_len" in data:
        raise InputError("--random-prefix-len", "sets the shared prefix as --shared-prefix-len does: give one of them")
    if dataset != "random" or batch is not None:
        raise InputError("--random-prefix-len", "a flag of vllm bench serve's random dataset: drop it, or "
                                                "--dataset-name and --batch-size")  # fmt: skip
    own = _number(getattr(args, "typed", {}).get("--input-len") or "--random-input-len", data.get("input_len"), int, 1,
                  10_000_000)  # fmt: skip
    data["shared_prefix_len"] = prefix
    data["input_len"] = prefix + (Scenario.model_fields["input_len"].default if own is None else own)


def _dataset(args) -> str:
    """--dataset-name: random, or sharegpt, whose lengths are its own (the random-length flags then say nothing)."""
    name = str(args.dataset_name)
    if name not in ("random", "sharegpt"):
        raise InputError("--dataset-name", f"expected random or sharegpt (got {name[:30]!r})")
    if name == "sharegpt":
        for field in ("--input-len", "--output-len"):
            if field in getattr(args, "typed", {}):
                raise InputError(args.typed[field], "only with --dataset-name random: ShareGPT's lengths are its own "
                                                   f"({_MEANS})")  # fmt: skip
        if args.range_ratio != "0":
            raise InputError("--random-range-ratio", "only with --dataset-name random: ShareGPT's lengths vary as "
                                                     "its conversations do")  # fmt: skip
    return name


def _percentile_metrics(text: str) -> tuple[str, ...]:
    names = [x.strip() for x in str(text).split(",")]
    bad = [x for x in names if x not in PERCENTILE_METRICS]
    if bad:
        raise InputError("--percentile-metrics", f"expected a comma-separated list of {', '.join(PERCENTILE_METRICS)} "
                                                 f"(got {str(text)[:40]!r})")  # fmt: skip
    return tuple(m for m in PERCENTILE_METRICS if m in names)


def _metric_percentiles(text: str) -> tuple[float, ...]:
    parts = str(text).split(",")
    if len(parts) > MAX_PERCENTILES:
        raise InputError("--metric-percentiles", f"at most {MAX_PERCENTILES} percentiles (got {len(parts):,})")
    return tuple(dict.fromkeys(_number("--metric-percentiles", x.strip(), float, 0, 100) for x in parts))


GOODPUT_KEYS = ("ttft", "tpot", "e2el")


def _goodput(pairs: list[str] | None) -> dict[str, float] | None:
    """--goodput ttft:500 tpot:50 → {"ttft": 500.0, "tpot": 50.0} [ms], as vllm bench serve parses it."""
    if not pairs:
        return None
    if len(pairs) > len(GOODPUT_KEYS):
        raise InputError("--goodput", f"at most one pair for each of {', '.join(GOODPUT_KEYS)} (got {len(pairs):,} pairs)")
    out = {}
    for pair in pairs:
        key, sep, value = str(pair).partition(":")
        if not sep or key not in GOODPUT_KEYS:
            raise InputError("--goodput", f"expected KEY:VALUE pairs in ms, KEY one of {', '.join(GOODPUT_KEYS)} "
                                          f"(got {str(pair)[:40]!r})")  # fmt: skip
        out[key] = _number("--goodput", value, float, 0, 1e9)
    return out


SGLANG_KEYS = {"mean_e2el_ms": "mean_e2e_latency_ms", "median_e2el_ms": "median_e2e_latency_ms",
               "std_e2el_ms": "std_e2e_latency_ms", "p90_e2el_ms": "p90_e2e_latency_ms",
               "p95_e2el_ms": "p95_e2e_latency_ms", "p99_e2el_ms": "p99_e2e_latency_ms",
               "total_token_throughput": "total_throughput"}  # fmt: skip
"""vllm bench serve's key → sglang.bench_serving's (0.5.14 bench_serving.py: e2e latency and total throughput are
named otherwise; TTFT, TPOT, ITL, the throughputs and the counts share their names). Added beside, not instead."""
