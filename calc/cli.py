"""Command line: `python -m calc plan|models|gpus|reconcile`. Flags are the Scenario fields in kebab-case.

Imports stay light (no Streamlit, no plotly): the whole process answers in well under a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import typing
from pathlib import Path

from pydantic import ValidationError

from calc.errors import InputError, first_field
from calc.scenario import Scenario


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"error: {' '.join(message.split())[:500]}\n")


def _is_bool(name: str) -> bool:
    return Scenario.model_fields[name].annotation is bool


def add_scenario_flags(p: argparse.ArgumentParser) -> None:
    for name, info in Scenario.model_fields.items():
        if name in ("model", "gpu"):
            continue
        doc = (info.description or "").split("\n")[0]
        if _is_bool(name):
            p.add_argument(flag(name), dest=name, action=argparse.BooleanOptionalAction, default=None, help=doc)
        else:
            p.add_argument(flag(name), dest=name, default=None, metavar=name.upper(), help=doc)


def scenario_from_args(ns: argparse.Namespace) -> Scenario:
    """Strings from the command line, validated by the Scenario (lax mode coerces '8192' to 8192)."""
    from calc.custom import encode_custom_model
    from calc.loader import load_model_file

    data = {k: v for k, v in vars(ns).items() if k in Scenario.model_fields and v is not None}
    model = data.get("model")
    if model and (model.endswith((".json", ".yaml", ".yml")) or "/" in model):
        spec = load_model_file(Path(model))
        data["model"] = "custom"
        data["custom_model"] = encode_custom_model(spec)
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        name = first_field(e)
        shown = flag(name) if name in Scenario.model_fields else name
        raise InputError(shown, _allowed_text(name, err)) from None


def _allowed_text(name: str, err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    info = Scenario.model_fields.get(name)
    bounds = []
    for meta in getattr(info, "metadata", []) if info else []:
        for attr, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if getattr(meta, attr, None) is not None:
                bounds.append(f"{sym} {getattr(meta, attr)}")
    got = err.get("input")
    got_txt = f" (got {str(got)[:40]!r})" if got is not None and not isinstance(got, dict) else ""
    allowed = f"; allowed: {', '.join(bounds)}" if bounds and "allowed" not in msg else ""
    return f"{msg}{got_txt}{allowed}"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m calc", description="LLM serving capacity planner")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    plan = sub.add_parser("plan", help="plan one scenario")
    plan.add_argument("--model", dest="model", default=None, help="model spec id, or a model YAML / config.json path")
    plan.add_argument("--gpu", dest="gpu", default=None, help="accelerator spec id")
    plan.add_argument("--json", action="store_true", help="print the Report as JSON")
    add_scenario_flags(plan)
    sub.add_parser("models", help="list the shipped model specs")
    sub.add_parser("gpus", help="list the shipped accelerator specs")
    rec = sub.add_parser("reconcile", help="hold a vLLM startup log against the prediction")
    rec.add_argument("logfile")
    rec.add_argument("--model", dest="model", default=None)
    rec.add_argument("--gpu", dest="gpu", default=None)
    rec.add_argument("--json", action="store_true")
    add_scenario_flags(rec)
    return p


def main(argv: list[str] | None = None, catalog=None) -> int:
    """Exit status 0, or 2 with one line on stderr naming the field; never a traceback for bad input."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args, catalog)
    except InputError as e:
        print(f"error: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except (ValueError, OSError, UnicodeError) as e:  # last resort: still one line, status 2
        print(f"error: {type(e).__name__}: {_one_line(str(e))}", file=sys.stderr)
        return 2


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def _run(args: argparse.Namespace, catalog=None) -> int:
    from calc.loader import load_catalog

    catalog = catalog or load_catalog()
    if args.command == "models":
        from calc.params import count_params

        for sid, m in catalog.models.items():
            p = count_params(m)
            print(f"{sid:26s} {m.name:26s} {p.total / 1e9:8.2f} B params  {m.model_type}")
        return 0
    if args.command == "gpus":
        for sid, g in catalog.gpus.items():
            print(f"{sid:16s} {g.name:34s} {g.memory_gib:7.2f} GiB  {g.memory_bandwidth_gb_per_s:6.0f} GB/s  "
                  f"{g.peak_16bit_tflop_per_s:7.1f} TFLOP/s")  # fmt: skip
        return 0
    if args.command == "reconcile":
        from calc.reconcile_cli import run_reconcile

        return run_reconcile(args, catalog)
    from calc.evaluate import evaluate, json_safe
    from calc.text import render_text

    report = evaluate(scenario_from_args(args), catalog)
    if args.json:
        print(json.dumps(json_safe(report.to_dict()), indent=2, default=str))
    else:
        print(render_text(report))
    return 0
