"""The held-out error report of scripts/calibrate.py: every held-out run replayed at the shipped constants →
tests/data/benchmarks/errors.json and the README's tables (held out, closed forms, the calibration part); and the
two peaks `vllm bench serve` prints, against every run that printed them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from boundary.bench_check import METRICS, check, check_closed_form, replay, summary  # noqa: E402
from boundary.bench_data import DATA, load_runs  # noqa: E402
from calc.loader import load_catalog  # noqa: E402


def report() -> dict:
    catalog = load_catalog()
    runs, skipped = load_runs(catalog)
    held = [r for r in runs if r.part == "held-out"]
    checks = check(held, catalog)
    s = summary(checks)
    s["closed_form"] = summary(check_closed_form(held, catalog))  # the band beside the headline's estimates
    # the same constants on the calibration part: where a held-out figure is far below its calibration twin, the
    # split was kind, and the calibration one is the fairer expectation
    fitted = summary(check([r for r in runs if r.part == "calibration"], catalog))
    s["calibration_part"] = {"runs": fitted["runs"], "metrics": fitted["metrics"], "families": {}}
    s["calibration_runs"] = sum(1 for r in runs if r.part == "calibration")
    s["skipped_runs"] = len(skipped)
    s["per_run"] = {c.run.id: {m: round(e, 4) for m in METRICS
                               if (e := c.error(m)) is not None} for c in checks}  # fmt: skip
    (DATA / "errors.json").write_text(json.dumps(s, indent=1) + "\n")
    table = (_table(s) + "\n\n" + _table(s["closed_form"], "held-out runs with a concurrency cap, closed form")
             + "\n\n" + _table(s["calibration_part"], "calibration part, scheduler simulation"))
    _readme(table)
    print(table)
    return s


def peaks() -> None:
    """Peak output tokens per second and peak concurrent requests (calc/sim_peaks.py) against every published run
    that printed them, and the output throughput's error on the same runs: median and p90 |error|."""
    catalog = load_catalog()
    errs: dict[str, list[float]] = {"max_output_tokens_per_s": [], "max_concurrent_requests": [], "output_throughput": []}
    for run in load_runs(catalog)[0]:
        if run.kind != "serve" or "max_output_tokens_per_s" not in run.measured:
            continue
        d = replay(run, catalog).bench_summary()
        if d["max_output_tokens_per_s"] is not None:
            for k, v in errs.items():
                v.append(d[k] / run.measured[k] - 1)
    for k, v in errs.items():
        a = np.abs(v)
        print(f"{k:26s} {len(v)} runs: median |error| {np.median(a):.1%}, p90 {np.percentile(a, 90):.1%}")


def _table(s: dict, head: str = "held-out runs, scheduler simulation") -> str:
    rows = [f"| {head} | metric | n | median abs error | p90 abs error | mean signed error (bias) |",
            "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    names = {"tpot": "TPOT", "itl": "ITL (median, closed loops)", "ttft": "TTFT", "ttft_burst": "TTFT, all prompts at once",
             "throughput": "output throughput", "latency": "static-batch latency"}  # fmt: skip
    for m, st in s["metrics"].items():
        rows.append(f"| all ({s['runs']}) | {names[m]} | {st['n']} | {st['median_abs']:.1%} | {st['p90_abs']:.1%} | "
                    f"{st['bias']:+.1%} |")  # fmt: skip
    for fam, ms in s["families"].items():
        for m, st in ms.items():
            rows.append(f"| {fam} | {names[m]} | {st['n']} | {st['median_abs']:.1%} | {st['p90_abs']:.1%} | "
                        f"{st['bias']:+.1%} |")  # fmt: skip
    return "\n".join(rows)


def _readme(table: str) -> None:
    path = ROOT / "README.md"
    text = path.read_text()
    start, end = "<!-- calibration:start -->", "<!-- calibration:end -->"
    if start in text and end in text:
        a, b = text.index(start) + len(start), text.index(end)
        path.write_text(text[:a] + "\n" + table + "\n" + text[b:])
