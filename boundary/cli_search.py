"""`python -m calc search`: every configuration of a search space under the SLOs; the Pareto frontier, the cheapest
deployment and its serve command.

    python -m calc search --model llama-3.1-70b --request-rate 10 --input-len 2000 --output-len 500 \
        --slo-ttft-s 0.5 --slo-tpot-s 0.05 [--gpus h100-sxm,l40s|all] [--tensor-parallel-size 1,2,4,8] [--json|--csv]

Workload, SLO and engine flags are the Scenario's; each search dimension takes a comma-separated list under the
name of the Scenario field it varies (`--tensor-parallel-size 1,2,4,8`). Without one, the default space: every
shipped GPU, TP 1/2/4/8, PP 1/2, weights auto/fp8/int4, KV auto/fp8, max_num_seqs 8–512, aggregated and
disaggregated. Configurations print as objects with the Scenario's and the Report's field names.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict

from boundary.args import add_scenario_flags, add_spec_flags, help_text, scenario_data, validate_scenario, with_default
from calc.errors import InputError
from calc.scenario import Scenario

# search-space flag → the Scenario field it sets (the field a single configuration would set, as a list)
DIMENSIONS = {"--gpus": "search_gpus", "--tensor-parallel-size": "search_tensor_parallel_size",
              "--pipeline-parallel-size": "search_pipeline_parallel_size", "--dtype": "search_dtype",
              "--kv-cache-dtype": "search_kv_cache_dtype", "--max-num-seqs": "search_max_num_seqs",
              "--max-num-batched-tokens": "search_max_num_batched_tokens",
              "--gpu-memory-utilization": "search_gpu_memory_utilization", "--max-gpus": "search_max_gpus",
              "--budget-per-hour": "search_budget_per_hour"}  # fmt: skip
VARIED = ("tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype", "max_num_seqs",
          "max_num_batched_tokens", "gpu_memory_utilization", "disaggregated", "concurrency")  # fmt: skip


NOT_SEARCHED = {
    "--concurrency": "the search runs each configuration at its own operating point, the most requests in flight "
                     "that keep the SLOs (its `concurrency` in the output): give the load as --request-rate R",
    "--data-parallel-size": "every configuration has one attention rank (tensor and pipeline parallel only): plan "
                            "data parallelism with `calc plan --data-parallel-size N` on the configuration found",
}


def add_search_parser(sub) -> None:
    p = sub.add_parser("search", help="find the deployment: search every configuration under the SLOs",
                       description=" ".join(__doc__.split("\n\n")[0].split()))  # fmt: skip
    add_spec_flags(p, gpu_help="the scenario's accelerator spec id, whose own price and overrides apply to it; "
                   "without --gpus, the one GPU searched (default: none; without either, every shipped GPU)")  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="configs_evaluated, configs_meeting_slo, why_not_counts, frontier, "
                     "cheapest, best_per_gpu, notes, scenario")
    out.add_argument("--csv", action="store_true", help="one configuration per line, for spreadsheets")
    p.add_argument("--all", action="store_true", help="with --json or --csv: every configuration, not only the frontier")
    g = p.add_argument_group("search space (comma-separated lists) and filters")
    for flag, field in DIMENSIONS.items():  # each also under its field's own name, as in the URL and the JSON
        g.add_argument(flag, "--" + field.replace("_", "-"), dest=field, default=None,
                       metavar="N" if flag in ("--max-gpus", "--budget-per-hour") else "LIST",
                       help=with_default(help_text(Scenario.model_fields[field]), Scenario.model_fields[field]))  # fmt: skip
    g.add_argument("--disaggregated", "--search-disaggregated", dest="search_disaggregated",
                   action=argparse.BooleanOptionalAction, default=None,
                   help="also try disaggregated serving (default), or not")  # fmt: skip
    # data_parallel_size: every configuration has one attention rank (calc.search), so the flag is not offered
    skip = tuple(DIMENSIONS.values()) + VARIED + ("search_disaggregated", "data_parallel_size")
    add_scenario_flags(p, skip=skip)
    for flag in NOT_SEARCHED:  # a plan's flags the search sets itself: refused with why, not "unrecognized"
        p.add_argument(flag, dest=flag[2:].replace("-", "_") + "_refused", default=None, help=argparse.SUPPRESS)


def _flag(field: str) -> str:
    """The search flag a Scenario field is set by (`search_gpus` → `--gpus`)."""
    back = {v: k for k, v in DIMENSIONS.items()} | {"search_disaggregated": "--disaggregated"}
    name = field.removeprefix("--").replace("-", "_")
    return back.get(name, field)


def run_search(args, catalog) -> int:
    from calc.search import search
    from calc.search_notes import what_blocks
    from calc.search_rows import check, rate_check, row

    for flag, why in NOT_SEARCHED.items():
        if getattr(args, flag[2:].replace("-", "_") + "_refused", None) is not None:
            raise InputError(flag, why)
    if args.all and not (args.json or getattr(args, "csv", False)):
        raise InputError("--all", "lists every configuration in the --json or --csv output: add one of them")
    try:
        data = scenario_data(args)
        narrowed = "gpu" in data and "search_gpus" not in data
        if narrowed:  # `search --gpu X` searched every GPU, silently: one GPU named is the one searched
            data["search_gpus"] = data["gpu"]
        gpus = [x.strip() for x in str(data.get("search_gpus", "")).split(",") if x.strip()]
        if "gpu" not in data and len(gpus) == 1 and gpus[0] in catalog.gpus:  # one GPU searched: the scenario's
            # GPU (its price, its overrides); 'all' or a typo is for the space's own check to name
            data["gpu"] = gpus[0]
        elif "gpu" not in data and "gpu_hour_price" in data:  # it would price the default GPU, unseen
            validate_scenario({"gpu_hour_price": data["gpu_hour_price"]})  # a bad price is named as itself first
            raise InputError("--gpu-hour-price", "prices one GPU, and several are searched: name it with --gpu "
                             "(the others keep their specs' prices)")  # fmt: skip
        s = validate_scenario(data)
        started = time.perf_counter()
        r = search(s, catalog)
        seconds = time.perf_counter() - started
    except InputError as e:  # fields named as the flags that set them, in the message too (a space too large)
        raise InputError(_flag(e.field), re.sub(r"\bsearch_[a-z_]+", lambda m: _flag(m.group()), e.message)) from None

    def obj(i: int) -> dict:
        d = row(r, i)
        chk = check(r, i, catalog)
        return d | {"check": asdict(chk) | {"ttft_ratio": chk.ttft_ratio, "tpot_ratio": chk.tpot_ratio} if chk else None}

    def cheapest(i: int) -> dict:
        rc = rate_check(r, i, catalog)
        return obj(i) | {"rate_check": asdict(rc) if rc else None, "plan_command": plan_command(r, i)}

    frontier = [obj(i) for i in r.frontier]
    out = {"model": s.model, "model_name": r.model_name, "configs_evaluated": r.configs_evaluated, "seconds": seconds,
           "configs_meeting_slo": int(r.eligible.sum()), "why_not_counts": r.why_counts(),
           "nothing_listed": what_blocks(r), "frontier": frontier,
           "cheapest": cheapest(r.cheapest) if r.cheapest is not None else None,
           "best_per_gpu": {g: row(r, i) for g, i in r.best_per_gpu.items()},
           "notes": list(r.notes) + ([f"--gpu {s.gpu} without --gpus: that GPU alone is searched (--gpus all tries "
                                      "every GPU)"] if narrowed else []),
           "scenario": s.model_dump()}  # fmt: skip
    if args.all:
        out["configurations"] = [row(r, i) for i in range(r.configs_evaluated)]
    if args.json:
        from calc.report import json_safe

        print(json.dumps(json_safe(out), indent=2))
    elif args.csv:
        from boundary.search_text import render_csv

        rows = [{k: v for k, v in d.items() if k != "plan_command"}  # the cheapest's alone: one header for every row
                for d in (_all_marked(out) if args.all else _listed(out))]  # fmt: skip
        if not rows and r.configs_evaluated:  # the columns still, so a spreadsheet or script sees the same header
            print(render_csv([{"listed_as": None} | row(r, 0) | {"rate_check": None}]).splitlines()[0])
            print(f"no configuration listed: {out['configs_meeting_slo']:,} of {r.configs_evaluated:,} meet the "
                  "filters and SLOs (`calc search` without --csv says why)", file=sys.stderr)  # fmt: skip
            return 0
        print(render_csv(rows), end="")
    else:
        from boundary.search_text import render_text

        print(render_text(out))
    return 0


def plan_command(r, i: int) -> str:
    """`python -m calc plan …` of configuration i at its operating point (its in-flight requests as --concurrency):
    the plan shows the same TTFT, TPOT, replicas and cost (tests/test_search_parity.py), and the rest of the plan."""
    from boundary.urlstate import cli_command
    from calc.search_rows import served_scenario

    s = served_scenario(r, i)
    return cli_command(s.model_copy(update={k: Scenario.model_fields[k].default for k in Scenario.model_fields
                                            if k.startswith("search_")}))  # fmt: skip


def _all_marked(out: dict) -> list[dict]:
    """Every configuration with the listed ones' columns (listed_as, rate_check), so --csv and --csv --all share a
    header: a configuration that is also listed carries why, and its rate check where one ran."""
    listed = {_key(d): d for d in _listed(out)}
    return [{"listed_as": listed.get(_key(d), {}).get("listed_as")} | d
            | {"rate_check": listed.get(_key(d), {}).get("rate_check")} for d in out["configurations"]]  # fmt: skip


def _key(d: dict) -> tuple:
    return tuple(d[k] for k in ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype",
                                "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "disaggregated"))


def _listed(out: dict) -> list[dict]:
    """The cheapest, the frontier and the cheapest per GPU, once each, with why each is listed."""
    rows: dict[tuple, dict] = {}
    named = [("cheapest", out["cheapest"])] if out["cheapest"] else []
    named += [("frontier", d) for d in out["frontier"]] + [(f"cheapest on {g}", d) for g, d in out["best_per_gpu"].items()]
    for why, d in named:
        key = _key(d)
        if key in rows:
            rows[key]["listed_as"] += f"; {why}"
        else:
            rows[key] = {"listed_as": why} | d
    return list(rows.values())
