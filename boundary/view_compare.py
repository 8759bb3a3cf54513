"""The comparison of two scenarios and the vLLM-log reconciliation as finished text (split from boundary.view,
which holds the Report's own sections): the page's Compare and Check-a-log tabs and `python -m calc reconcile`."""

from __future__ import annotations

import re

from boundary import fmt
from boundary.view import Table, outside_slos

COMPARE = (
    ("model", "Model", lambda r: r.model_name),
    ("gpu", "GPU", lambda r: r.gpu_name),
    ("blocks", "GPU blocks", lambda r: fmt.count(r.memory.num_gpu_blocks)),
    ("tokens", "KV cache (tokens)", lambda r: fmt.count(r.memory.kv_cache_tokens)),
    ("conc", "Max concurrency at max_model_len", lambda r: f"{r.memory.max_concurrency:,.2f}x"),
    ("fits", "Fits", lambda r: fmt.yes_no(r.fit.fits)),
    ("ttft", "TTFT (estimate)", lambda r: fmt.ms(r.latency.ttft_s)),
    ("tpot", "TPOT (estimate)", lambda r: fmt.ms(r.latency.tpot_s)),
    ("e2e", "End-to-end (estimate)", lambda r: fmt.seconds(r.latency.e2e_s)),
    ("conformance", "Within both SLOs", lambda r: fmt.pct(r.conformance.conformance)),
    ("goodput", "Goodput", lambda r: fmt.rate(r.goodput_rps, "req/s")),
    ("capacity", "Capacity per replica", lambda r: fmt.rate(r.fleet.capacity.rps, "req/s")),
    ("replicas", "Replicas", lambda r: fmt.opt(r.fleet.replicas, fmt.count, "no request rate")),
    ("gpus", "GPUs", lambda r: fmt.opt(r.fleet.gpus, fmt.count, "no request rate")
     + (" (one replica: no request rate)" if r.fleet.replicas is None and r.fleet.gpus is not None else "")),
    ("cost", "Cost / M output tokens", lambda r: fmt.money(r.fleet.cost_per_million_output_tokens, r.fleet.currency)
     + (f" (at {fmt.pct(r.conformance.conformance)} within SLOs)" if outside_slos(r) else "")),
)
_MEMORY_ROWS = ("model", "gpu", "blocks", "tokens", "conc", "fits")


def compare_table(a, b) -> Table:
    """A (pinned) beside B (current), human labels with units; figures that cannot happen say so."""

    def cell(r, key, fn) -> str:
        if key not in _MEMORY_ROWS and not r.serves:
            return fmt.missing("cannot run")
        return fn(r)

    rows = []
    for key, label, fn in COMPARE:
        va, vb = cell(a, key, fn), cell(b, key, fn)
        rows.append([label, va, vb, "yes" if va != vb else ""])
    return Table(["quantity", "A (pinned)", "B (current)", "differs"], rows)


def changed_inputs(a, b, escape=str) -> str:
    """The inputs in which scenario b differs from a, 'field: a → b, …' ('none'); `escape` each value (user text)
    for the surface that shows it."""
    changed = [(k, getattr(a, k), getattr(b, k)) for k in type(b).model_fields if getattr(a, k) != getattr(b, k)]
    return ", ".join(f"{k}: {escape(_shown(k, va))} → {escape(_shown(k, vb))}" for k, va, vb in changed) or "none"


def _shown(name: str, v) -> str:
    """An input's value as the comparison names it: an uploaded config.json by that, not by its encoded text."""
    if name == "custom_model":
        return "an uploaded config.json" if v else "unset"
    return input_value(v)


def log_value(value: float | None, unit: str, signed: bool = False) -> str:
    """A figure of a vLLM log or its prediction: GiB to three decimals (the log prints two), counts with their unit,
    concurrency as vLLM prints it ('14.66x')."""
    if value is None:
        return fmt.missing("not logged")
    if unit == "x":
        value = round(value, 2) + 0.0  # no '-0.00x'
    sign = "+" if signed and value >= 0 else ""
    if unit == "bytes":
        return sign + fmt.gib(value, 3)
    if unit == "x":
        return f"{sign}{value:,.2f}x"
    return sign + fmt.count(value) + {"blocks": " blocks", "tokens": " tokens"}.get(unit, "")


def log_range(low: float, high: float, unit: str) -> str:
    """'(2,664–2,668 blocks)', '(6.505–6.515 GiB)': a prediction at both ends of the logged figure's rounding."""
    a, b = log_value(low, unit), log_value(high, unit)
    for suffix in (" GiB", " blocks", " tokens", "x"):
        if a.endswith(suffix) and b.endswith(suffix):
            return f"({a.removesuffix(suffix)}–{b})"
    return f"({a}–{b})"


def reconcile_table(rec) -> Table:
    """A vLLM log's numbers beside ours (boundary.reconcile), each with its residual and what explains it."""
    rows = []
    for x in rec.rows:
        pred = log_value(x.predicted, x.unit)
        if x.unit == "bytes" and x.predicted is not None and x.predicted < 0:  # the weights overrun the memory
            pred += " (nothing left for the KV cache: the weights and overheads exceed this GPU's memory)"
        if x.low is not None and x.high is not None and x.low != x.high:
            pred += " " + log_range(x.low, x.high, x.unit)
        resid = log_value(x.residual, x.unit, signed=True) if x.residual is not None else fmt.missing("not logged")
        rows.append([x.quantity, log_value(x.logged, x.unit), pred, resid, fmt.yes_no(x.matches),
                     x.explanation or fmt.DASH])  # fmt: skip
    return Table(["quantity", "logged", "predicted (rounding range)", "residual (logged − predicted)", "within rounding",
                  "explanation"], rows, align="llllll")  # fmt: skip


def input_value(v) -> str:
    """A Scenario field's value as a reader sees it: 'unset' for None, yes/no, numbers without a trailing '.0'."""
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return fmt.yes_no(v)
    if isinstance(v, float):
        return f"{v:,g}" if abs(v) < 1e6 else fmt.count(v) if v.is_integer() else f"{v:,.6g}"
    if isinstance(v, int):
        return fmt.count(v)
    return str(v)


def calibration_text(cal: dict) -> str:
    """The overrides a log gives, as field=value (what the link and the CLI take) with the human figure beside."""
    out = []
    for k, v in cal.items():
        if k.endswith("_bytes"):
            out.append(f"{k}={v:.0f} ({fmt.gib(v, 3)})")
        else:
            out.append(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}")
    return ", ".join(out)


_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def page_note(note: str) -> str:
    """A reconcile note as the page says it: the command line's 'pass --max-model-len' is the sidebar's
    max_model_len there (the fields' one name in the link, the JSON and the page's inputs)."""
    note = re.sub(r"pass (--[\w-]+(?: / --[\w-]+)*)( to set it)?", r"set \1 in the sidebar", note)
    return _FLAG.sub(lambda m: m.group(1).replace("-", "_"), note)
