"""`python -m calc reconcile LOGFILE [--model ID|PATH] [--gpu ID] [--<scenario-field> VALUE …] [--json]`.

Reads a vLLM startup log (formats in boundary.vllm_log), rebuilds the Scenario it describes (flags fill in what the log
lacks and override what it says) and prints, line by line, logged / predicted / residual / explanation, then the
calibration: the Scenario overrides that adopt the logged overheads. The one module of the feature that does I/O.
"""

from __future__ import annotations

import argparse
import json

from boundary import fmt
from boundary.args import flag, scenario_from_args
from boundary.reconcile import Reconciliation, reconcile
from boundary.sglang_log import check_sglang, has_vllm_lines, is_sglang_log, parse_sglang_log, render_sglang
from boundary.urlstate import cli_command
from boundary.view_compare import log_value, reconcile_table
from boundary.vllm_log import MAX_LOG_CHARS, parse_log
from calc.catalog import Catalog
from calc.loader import read_capped


def read_log(path: str) -> str:
    """The log file, refused before reading when it is not a regular file or over the parser's limit."""
    return read_capped(path, MAX_LOG_CHARS, "logfile").decode("utf-8", errors="replace")


def flags_from_args(args: argparse.Namespace) -> dict:
    """The Scenario fields given on the command line, validated (a --model path becomes a custom model)."""
    s = scenario_from_args(args)
    return {k: getattr(s, k) for k in s.model_fields_set}


def run_reconcile(args: argparse.Namespace, catalog: Catalog) -> int:
    text = read_log(args.logfile)
    if is_sglang_log(text) and not has_vllm_lines(text):  # SGLang's own lines: its pool by its arithmetic
        check = check_sglang(parse_sglang_log(text), catalog, flags_from_args(args))
        print(json.dumps(check.to_dict(), indent=2) if args.json else render_sglang(check, args.logfile))
        return 0
    rec = reconcile(parse_log(text), catalog, flags_from_args(args))
    if args.json:
        from calc.evaluate import json_safe

        print(json.dumps(json_safe(rec.to_dict()), indent=2, default=str))
    else:
        print(render(rec, args.logfile))
    return 0


def _reproduce(rec: Reconciliation) -> str:
    """The `calc plan` call that reproduces the log: the page's own command line (boundary.urlstate.cli_command) of
    the reconciled scenario with its calibration; a custom model is the config.json the user passed."""
    s = rec.scenario.model_copy(update=rec.calibration)
    if s.model != "custom":
        return cli_command(s)
    return cli_command(s.model_copy(update={"custom_model": None})).replace("--model custom", "--model CONFIG.json", 1)


def render(rec: Reconciliation, path: str) -> str:
    log, s = rec.log, rec.scenario
    version = f"vLLM {log.version}" if log.version else "version not printed"
    out = [f"vLLM startup log: {path} (engine {log.engine}, {version})",
           f"model: {rec.model_name} ({s.model})",
           f"gpu:   {rec.gpu_name} ({s.gpu}) — {rec.gpu_source}",
           "scenario: " + (", ".join(f"{k}={v}" for k, v in s.changed().items() if k != "custom_model") or "defaults"),
           ""]  # fmt: skip
    out[-1:-1] = [f"warning: {n}" for n in rec.notes if n.startswith("WRONG GPU?")]
    if rec.failure:
        out += [rec.failure.message[0].upper() + rec.failure.message[1:] + ".", "To make it fit:"]
        out += [f"  - {fix}" for fix in rec.failure.fixes] + [""]
    out.append(reconcile_table(rec).text(indent=""))
    out.append("")
    if rec.calibration:
        args = " ".join(f"{flag(k)} {round(v) if k.endswith('_bytes') else v}" for k, v in rec.calibration.items())
        out.append(f"calibration (apply to `python -m calc plan`): {args}")
        out.append(f"  reproduce the log: {_reproduce(rec)}")
        cal = rec.calibrated
        out.append(f"  → {fmt.gib(cal['kv_cache_memory_bytes'])}, {fmt.count(cal['num_gpu_blocks'])} blocks, "
                   f"{log_value(cal['max_concurrency'], 'x')} at {fmt.tokens(s.max_model_len)}")  # fmt: skip
    rest = [n for n in rec.notes if not n.startswith("WRONG GPU?")]
    if rest:
        out.append("notes:")
        out += [f"  - {n}" for n in rest]
    return "\n".join(out)
