"""Command line: `python -m calc plan|bench|search|models|gpus|reconcile`. Flags are the Scenario fields in kebab-case (boundary.args).

Imports stay light (no Streamlit, no plotly): the whole process answers in well under a second.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from boundary.args import Parser, add_scenario_flags, add_spec_flags, flag, scenario_from_args
from boundary.cli_bench import add_bench_parser, run_bench
from boundary.cli_search import add_search_parser, run_search
from calc.errors import InputError
from calc.scenario import Scenario

SEARCH_ONLY = tuple(name for name in Scenario.model_fields if name.startswith("search_"))
"""The search's dimensions and limits: `search` takes them (boundary.cli_search); a plan or a log has no use for them."""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m calc", description="LLM serving capacity planner")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    plan = sub.add_parser("plan", help="plan one scenario")
    add_spec_flags(plan)
    plan.add_argument("--json", action="store_true", help="print the Report as JSON")
    add_scenario_flags(plan, skip=SEARCH_ONLY)
    sub.add_parser("models", help="list the shipped model specs").add_argument(
        "--json", action="store_true", help="print them as a JSON list")
    sub.add_parser("gpus", help="list the shipped accelerator specs").add_argument(
        "--json", action="store_true", help="print them as a JSON list")
    rec = sub.add_parser("reconcile", help="hold a vLLM (or SGLang) startup log against the prediction")
    rec.add_argument("logfile", help="the path of a vLLM startup log file (an SGLang one: its pool's tokens, weights "
                                     "and pool by SGLang's arithmetic; pass --model and --gpu, which it does not name)")
    add_spec_flags(rec, model_default="the model the log names",
                   gpu_default="the device the log names or its memory matches, else "
                               f"{Scenario.model_fields['gpu'].default}, marked ASSUMED")
    rec.add_argument("--json", action="store_true", help="print the logged, predicted and calibrated figures as JSON")
    add_scenario_flags(rec, skip=SEARCH_ONLY)
    add_bench_parser(sub)
    add_search_parser(sub)
    return p


def main(argv: list[str] | None = None, catalog=None) -> int:
    """Exit status 0, or 2 with one line on stderr naming the field; never a traceback for bad input."""
    if not (sys.argv[1:] if argv is None else argv):  # argparse's 'required: command' names no command
        print("error: give a command: plan, bench, search, reconcile, models or gpus (python -m calc COMMAND --help)",
              file=sys.stderr)  # fmt: skip
        return 2
    args = build_parser().parse_args(_signed_values(list(sys.argv[1:] if argv is None else argv)))
    try:
        return _run(args, catalog)
    except InputError as e:  # a Scenario field is named by its flag, as the user typed it
        shown = flag(e.field) if e.field in Scenario.model_fields else e.field
        print(f"error: {shown}: {_one_line(e.message)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except (ValueError, ArithmeticError, OSError, UnicodeError, MemoryError, RecursionError) as e:  # last resort: one line, status 2
        print(f"error: {type(e).__name__}: {_one_line(str(e))}", file=sys.stderr)
        return 2


def _signed_values(argv: list[str]) -> list[str]:
    """`--request-rate -1e3` as `--request-rate=-1e3`: argparse reads a value that starts with '-' and is not a plain
    negative number (an exponent, -inf) as another flag, and answers "expected one argument" without the allowed
    range; joined, the value reaches the field's own check."""
    out: list[str] = []
    for tok in argv:
        prev = out[-1] if out else ""
        if tok.startswith("-") and prev.startswith("--") and "=" not in prev and _is_float(tok):
            out[-1] = f"{prev}={tok}"
        else:
            out.append(tok)
    return out


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _columns(rows: list[tuple[str, ...]], align_after_two: str) -> str:
    """Rows as columns as wide as their widest cell: the first two (id, name) left-aligned, then `align_after_two`."""
    align = "<<" + align_after_two
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))] if rows else []
    return "\n".join("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths, strict=True)).rstrip() for r in rows)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def _run(args: argparse.Namespace, catalog=None) -> int:
    from calc.loader import load_catalog

    catalog = catalog or load_catalog()
    for problem in catalog.problems:  # one broken spec file does not stop the others
        print(f"warning: skipped {_one_line(problem)}", file=sys.stderr)
    if args.command == "models":
        from calc.params import count_params

        if args.json:
            print(json.dumps([{"id": sid, "name": m.name, "params": count_params(m).total, "model_type": m.model_type}
                              for sid, m in catalog.models.items()], indent=2))  # fmt: skip
            return 0
        rows = [(sid, m.name, f"{count_params(m).total / 1e9:,.2f} B params", m.model_type)
                for sid, m in catalog.models.items()]  # fmt: skip
        print(_columns(rows, "><"))
        return 0
    if args.command == "gpus" and args.json:
        print(json.dumps([{"id": sid, "name": g.name, "memory_gib": g.memory_gib, "memory_bandwidth_gb_per_s":
                           g.memory_bandwidth_gb_per_s, "peak_16bit_tflop_per_s": g.peak_16bit_tflop_per_s,
                           "arch": g.arch, "price_per_gpu_hour": g.price_per_gpu_hour,
                           "price_currency": g.price_currency if g.price_per_gpu_hour is not None else None,
                           "price_is_estimate": "price_per_gpu_hour" in g.derived}
                          for sid, g in catalog.gpus.items()], indent=2))  # fmt: skip
        return 0
    if args.command == "gpus":
        rows = [(sid, g.name, f"{g.memory_gib:,.2f} GiB", f"{g.memory_bandwidth_gb_per_s:,.0f} GB/s",
                 f"{g.peak_16bit_tflop_per_s:,.1f} TFLOP/s",
                 (f"{g.price_per_gpu_hour:,.2f} {g.price_currency}/h" + (" (estimate)" if "price_per_gpu_hour" in g.derived
                                                                         else "")) if g.price_per_gpu_hour is not None else "no price")
                for sid, g in catalog.gpus.items()]  # fmt: skip
        print(_columns(rows, ">>>>"))
        return 0
    if args.command == "bench":
        return run_bench(args, catalog)
    if args.command == "search":
        return run_search(args, catalog)
    if args.command == "reconcile":
        from boundary.cli_reconcile import run_reconcile

        return run_reconcile(args, catalog)
    from boundary.text import render_text
    from calc.evaluate import evaluate, json_safe

    report = evaluate(scenario_from_args(args), catalog)
    if args.json:
        rc = report.replica_check
        d = report.to_dict() | {"replica_check": asdict(rc) if rc else None}
        print(json.dumps(json_safe(d), indent=2, default=str))
    else:
        print(render_text(report, replica_check=True))
    return 0
