"""`python -m calc reconcile LOGFILE [--model ID|PATH] [--gpu ID] [--<scenario-field> VALUE …] [--json]`.

Reads a vLLM startup log (formats in boundary.vllm_log), rebuilds the Scenario it describes (flags fill in what the log
lacks and override what it says) and prints, line by line, logged / predicted / residual / explanation, then the
calibration: the Scenario overrides that adopt the logged overheads. The one module of the feature that does I/O.
"""

from __future__ import annotations

import argparse
import json

from boundary.args import flag, scenario_from_args
from boundary.reconcile import Reconciliation, Row, reconcile
from boundary.vllm_log import MAX_LOG_CHARS, parse_log
from calc.catalog import Catalog
from calc.loader import read_capped
from calc.units import GiB


def read_log(path: str) -> str:
    """The log file, refused before reading when it is not a regular file or over the parser's limit."""
    return read_capped(path, MAX_LOG_CHARS, "logfile").decode("utf-8", errors="replace")


def flags_from_args(args: argparse.Namespace) -> dict:
    """The Scenario fields given on the command line, validated (a --model path becomes a custom model)."""
    s = scenario_from_args(args)
    return {k: getattr(s, k) for k in s.model_fields_set}


def run_reconcile(args: argparse.Namespace, catalog: Catalog) -> int:
    rec = reconcile(parse_log(read_log(args.logfile)), catalog, flags_from_args(args))
    if args.json:
        from calc.evaluate import json_safe

        print(json.dumps(json_safe(rec.to_dict()), indent=2, default=str))
    else:
        print(render(rec, args.logfile))
    return 0


def format_value(value: float | None, unit: str, signed: bool = False) -> str:
    """The page's format for a logged or predicted figure (boundary.view_compare.log_value): one formatting layer."""
    from boundary.view_compare import log_value

    return log_value(value, unit, signed)


def _predicted(r: Row) -> str:
    from boundary.view_compare import log_range

    text = format_value(r.predicted, r.unit)
    if r.low is not None and r.high is not None and r.low != r.high:
        text += " " + log_range(r.low, r.high, r.unit)
    return text


def render(rec: Reconciliation, path: str) -> str:
    log, s = rec.log, rec.scenario
    version = f"vLLM {log.version}" if log.version else "version not printed"
    out = [f"vLLM startup log: {path} (engine {log.engine}, {version})",
           f"model: {rec.model_name} ({s.model})",
           f"gpu:   {rec.gpu_name} ({s.gpu}) — {rec.gpu_source}",
           "scenario: " + (", ".join(f"{k}={v}" for k, v in s.changed().items() if k != "custom_model") or "defaults"),
           ""]  # fmt: skip
    if rec.failure:
        out += [rec.failure.message[0].upper() + rec.failure.message[1:] + ".", "To make it fit:"]
        out += [f"  - {fix}" for fix in rec.failure.fixes] + [""]
    table = [("quantity", "logged", "predicted (rounding range)", "residual", "match", "explanation")]
    for r in rec.rows:
        match = "–" if r.matches is None else ("yes" if r.matches else "NO")
        table.append((r.quantity, format_value(r.logged, r.unit), _predicted(r), format_value(r.residual, r.unit, signed=True), match,
                      r.explanation))  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        out.append("  ".join(c.ljust(w) for c, w in zip(row[:5], widths, strict=True)) + "  " + row[5])
    out.append("")
    if rec.calibration:
        args = " ".join(f"{flag(k)} {round(v) if k.endswith('_bytes') else v}" for k, v in rec.calibration.items())
        out.append(f"calibration (apply to `python -m calc plan`): {args}")
        cal = rec.calibrated
        out.append(f"  → {cal['kv_cache_memory_bytes'] / GiB:.2f} GiB, {cal['num_gpu_blocks']:,} blocks, "
                   f"{cal['max_concurrency']:.2f}x at {s.max_model_len:,} tokens")  # fmt: skip
    if rec.notes:
        out.append("notes:")
        out += [f"  - {n}" for n in rec.notes]
    return "\n".join(out)
