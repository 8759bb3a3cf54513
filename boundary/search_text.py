"""Plain text and CSV of a SearchResult (formatting only: every number comes from calc.search)."""

from __future__ import annotations

import csv
import io
import json

from boundary import fmt
from boundary.search_cells import cells, simulated

FRONTIER_COLUMNS = (("gpu", "GPU", "<"), ("tp_pp", "TP×PP", ">"), ("precision", "weights/KV", "<"),
                    ("max_num_seqs", "seqs", ">"), ("serving", "serving", "<"), ("concurrency", "in flight", ">"),
                    ("ttft", "TTFT", ">"), ("tpot", "TPOT", ">"), ("user", "tok/s/user", ">"),
                    ("per_gpu", "tok/s/GPU", ">"), ("gpus", "GPUs", ">"), ("cost", "cost/M out", ">"),
                    ("sim", "simulated TTFT / TPOT", ">"))  # fmt: skip


def _cells(d: dict) -> dict:
    chk = d.get("check")
    return cells(d) | {"sim": simulated(chk["simulated_ttft_s"], chk["simulated_tpot_s"]) if chk else fmt.DASH}


def table(rows: list[dict], columns=FRONTIER_COLUMNS) -> str:
    shown = [_cells(d) for d in rows]
    widths = {k: max([len(title)] + [len(c[k]) for c in shown]) for k, title, _ in columns}
    line = lambda c: "  ".join(f"{c[k]:{a}{widths[k]}}" for k, _, a in columns).rstrip()  # noqa: E731
    return "\n".join([line({k: t for k, t, _ in columns})] + [line(c) for c in shown])


GENERIC_BLOCK = "No configuration meets the SLOs within the filters: widen the space, relax the SLOs or raise the limits."


def blocked_sentence(b: dict | None, s: dict) -> str:
    """What rules out every configuration that serves, and what would list one (calc.search_notes.what_blocks's
    numbers; `s` the scenario as JSON). The page says the same."""
    if not b:
        return GENERIC_BLOCK
    n = fmt.plural(b["configurations"], "configuration")
    if b["limit"] == "budget":
        return (f"{n} meet the SLOs but cost more per hour than the budget ({fmt.money(s['search_budget_per_hour'], b['currency'])}): "
                f"the cheapest of them, on {b['gpu']}, costs {fmt.money(b['cost_per_hour'], b['currency'])} per hour; "
                "raise the budget per hour to at least that.")  # fmt: skip
    if b["limit"] == "max_gpus":
        return (f"{n} meet the SLOs but use more GPUs than the limit ({s['search_max_gpus']:,}): the fewest, on "
                f"{b['gpu']}, need {fmt.plural(b['gpus'], 'GPU')}; raise max GPUs to at least that.")  # fmt: skip
    slow = [name for name, best, asked in (("TTFT", b["best_ttft_s"], s["slo_ttft_s"]),
                                           ("TPOT", b["best_tpot_s"], s["slo_tpot_s"])) if best > asked]  # fmt: skip
    return (f"No configuration meets the SLOs even one request at a time: the lowest TTFT any reaches is "
            f"{fmt.seconds(b['best_ttft_s'])} (asked: {fmt.seconds(s['slo_ttft_s'])}), the lowest TPOT "
            f"{fmt.seconds(b['best_tpot_s'])} (asked: {fmt.seconds(s['slo_tpot_s'])})"
            + (f"; relax {' and '.join(slow)}, or search faster GPUs or more tensor parallelism." if slow else
               "; at the quota the two together miss: relax either, or the quota."))  # fmt: skip


def render_text(out: dict) -> str:
    s = out["scenario"]
    r = s["request_rate"]  # as typed ('2.5 req/s'), separated where :g would turn to '1e+07'
    rate = (f"{r:,.0f} req/s" if r >= 1e4 else f"{r:g} req/s") if r else "one replica (no request_rate)"
    lines = [f"{out['model_name']}: {fmt.plural(out['configs_evaluated'], 'configuration')} evaluated in {fmt.ms(out['seconds'])}; "
             f"{out['configs_meeting_slo']:,} {'meets' if out['configs_meeting_slo'] == 1 else 'meet'} the filters and TTFT ≤ {fmt.seconds(s['slo_ttft_s'])} and TPOT ≤ {fmt.seconds(s['slo_tpot_s'])} for "
             f"{fmt.quota(s['conformance_quota'])} of requests at {rate}, {s['input_len']:,} in / {s['output_len']:,} out"]  # fmt: skip
    c = out["cheapest"]
    if c is None:
        counts = out.get("why_not_counts", {})
        first = next(iter(counts), "")
        hint = (f" (set --max-model-len {s['input_len'] + s['output_len']} or more)"
                if first == "a request is longer than max_model_len" else "")  # fmt: skip
        lines += ["", f"No configuration can serve: {first}{hint}." if counts.get(first) == out["configs_evaluated"] else
                  blocked_sentence(out.get("nothing_listed"), s)]
        lines += [f"  {n:,} of {out['configs_evaluated']:,}: {why}" for why, n in counts.items()]
    else:
        x = cells(c)
        what = (f"{c['prefill_instances']:,} prefill + {c['decode_instances']:,} decode instances"
                if c["disaggregated"] and c["prefill_instances"] is not None else
                fmt.plural(c["replicas"], "replica") if c["replicas"] is not None else "one replica")  # fmt: skip
        lines += ["", f"Cheapest: {c['gpu']}, TP {c['tensor_parallel_size']} × PP {c['pipeline_parallel_size']}, weights "
                      f"{c['dtype']}, KV {c['kv_cache_dtype']}, max_num_seqs {x['max_num_seqs']}{served_note(c)}, "
                      f"{x['serving']}",
                  f"  {what} of {fmt.plural(c['tensor_parallel_size'] * c['pipeline_parallel_size'], 'GPU')}: {fmt.plural(c['gpus'], 'GPU') if c['gpus'] is not None else x['gpus']}, "
                  f"{x['cost']} per million output tokens, {x['cost_per_hour']} per hour",
                  f"  TTFT {x['ttft']}, TPOT {x['tpot']}, {x['concurrency']} in flight per "
                  f"{'decode instance' if c['disaggregated'] else 'replica'}", ""]  # fmt: skip
        chk = c.get("check")
        if chk:
            lines[-1:-1] = [f"  scheduler simulation at {chk['max_concurrency']:,} in flight ({chk['num_prompts']:,} requests, "
                            f"lengths ±{chk['range_ratio']:.0%}): median TTFT {fmt.ms(chk['simulated_ttft_s'])}, "
                            f"mean TPOT {fmt.ms(chk['simulated_tpot_s'])}"]  # fmt: skip
        rc = c.get("rate_check")
        if rc:
            lines[-1:-1] = [rate_check_line(rc)]
        elif c["disaggregated"]:
            lines[-1:-1] = ["  not checked by the scheduler simulation, which serves one aggregated engine; a router "
                            "(vLLM's disaggregated proxy) sends each request to a prefill and a decode instance"]
        lines += ["  " + x for x in c["serve_command"].splitlines()]
        if c.get("plan_command"):
            lines += ["", "  the whole plan of it (memory, latency, SLOs, benchmark):", f"  {c['plan_command']}"]
    if out["frontier"]:
        lines += ["", "Pareto frontier (tokens/s per user against tokens/s per GPU; simulated: the scheduler simulation "
                      "at the same concurrency, aggregated configurations only)", table(out["frontier"])]  # fmt: skip
    if out["best_per_gpu"]:
        lines += ["", "Cheapest per GPU", table(list(out["best_per_gpu"].values()), FRONTIER_COLUMNS[:-1])]
    lines += [f"note: {n}" for n in out["notes"]]
    return "\n".join(lines)


def served_note(c: dict) -> str:
    """' (served as 41: what the KV pool holds)' where vLLM's max_num_seqs is capped (calc.search_rows.CAPPED_SEQS);
    under SGLang, a hybrid's state slots (calc.search_rows.SGLANG_CAPPED)."""
    served = c.get("served_max_num_seqs")
    if served is None or served >= c["max_num_seqs"]:
        return ""
    why = "what its Mamba state slots let SGLang run" if c.get("engine") == "sglang" else "what the KV pool holds"
    return f" (served as {served:,}: {why})"


def render_csv(rows: list[dict]) -> str:
    """One configuration per line, the JSON keys as the header; serve_command keeps its lines inside its quoted
    cell (joined on one line, a leading '# …' comment would swallow the command when pasted), nested values as
    JSON, and floats to 12 significant digits (no 38.400000000000006)."""
    if not rows:
        return ""
    keys = [k for k in rows[0] if k != "check"] + ["simulated_ttft_s", "simulated_tpot_s"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for d in rows:
        chk = d.get("check") or {}
        cells = {k: _csv_cell(v) for k, v in d.items()}
        w.writerow(cells | {"simulated_ttft_s": _csv_cell(chk.get("simulated_ttft_s")),
                            "simulated_tpot_s": _csv_cell(chk.get("simulated_tpot_s"))})  # fmt: skip
    return buf.getvalue()


def _csv_cell(v):
    if isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return v


REPLICA_CHECK_LABEL = "Simulate one replica at its share of the request rate (Poisson arrivals; up to four simulations)"
"""The page's toggle for it (the Find tab's chosen configuration, the SLO tab's scenario)."""


def rate_check_line(rc: dict) -> str:
    """The replica count against the simulation: one replica at its share of the rate, Poisson arrivals."""
    head = (f"  one replica simulated at its share of the rate ({fmt.rate(rc['rate_per_replica_rps'], 'req/s')}, Poisson, "
            f"{fmt.count(rc['num_prompts'])} requests, lengths ±30%): {fmt.pct(rc['within_slo'])} within both SLOs")
    if rc["within_slo"] >= rc["quota"]:
        fewer = rc.get("fewer_within_slo")
        lean = (f"; {rc['replicas'] - 1:,} would keep {fmt.pct(fewer)} there too (the count carries the latency spread "
                "the closed forms assume, latency_sigma, which the simulation does not draw)"
                if fewer is not None and fewer >= rc["quota"] + NEAR_QUOTA else "")  # fmt: skip
        return f"{head}, meets the {fmt.pct(rc['quota'], 0)} quota{lean}"
    more = rc["replicas_meeting_quota"]
    fix = (f"{more:,} replicas meet it there" if more else
           f"not even {rc['replicas'] + 4:,} replicas meet it there")  # fmt: skip
    why = ("bursts of arrivals queue longer there than the closed forms allow for (the wait for a free slot, "
           "prompts queueing for prefill, the step budget)")
    if rc.get("preemptions"):  # the pool overflowed: vLLM recomputes, and each recompute is more prefill to queue
        why = (f"bursts of arrivals overflowed the KV pool: {fmt.count(rc['preemptions'])} preemptions in the "
               "simulation, each preempted request's prompt computed again, which the closed forms do not count")
    if rc["quota"] - rc["within_slo"] < NEAR_QUOTA:  # a binomial 2σ at 800 requests and p = 0.9: 2.1 points
        why = f"by less than the sample's own error (±{NEAR_QUOTA * 100:.0f} points); {why}"
    return f"{head}, misses the {fmt.pct(rc['quota'], 0)} quota: {why}; {fix}"


NEAR_QUOTA = 0.02
