"""One configuration of a search (calc.search_rows.row) as display text, through boundary.fmt: the CLI's tables and
text (boundary.search_text) and the page's tables, tiles and chart (ui.search_tab, ui.search_chart) show the same
strings."""

from __future__ import annotations

from boundary import fmt


def serving(disaggregated: bool, prefill_instances: int | None, decode_instances: int | None) -> str:
    """'aggregated', 'disaggregated 2 P : 3 D' (prefill : decode instances), or 'disaggregated' when not deployed."""
    if not disaggregated:
        return "aggregated"
    if prefill_instances is None or decode_instances is None:
        return "disaggregated"
    return f"disaggregated {fmt.count(prefill_instances)} P : {fmt.count(decode_instances)} D"


def cells(d: dict) -> dict[str, str]:
    """A row's cells, each with its unit or currency; a figure that does not exist says why."""
    cur, deployed = d["currency"], d["gpus"] is not None
    return {
        "gpu": d["gpu"],
        "tp_pp": f"{d['tensor_parallel_size']}×{d['pipeline_parallel_size']}",
        "precision": f"{d['dtype']}/{d['kv_cache_dtype']}",
        "max_num_seqs": fmt.count(d["max_num_seqs"]),
        "serving": serving(d["disaggregated"], d["prefill_instances"], d["decode_instances"]),
        "concurrency": fmt.count(d["concurrency"]),
        "ttft": fmt.opt(d["ttft_s"], fmt.ms, "not finite"),
        "tpot": fmt.opt(d["tpot_s"], fmt.ms, "not finite"),
        "user": fmt.opt(d["tokens_per_s_per_user"], fmt.fixed, "not finite", 1),
        "per_gpu": fmt.opt(d["tokens_per_s_per_gpu"], fmt.count, "not finite"),
        "replicas": fmt.opt(d["replicas"], fmt.count, "no request_rate"),
        "gpus": fmt.opt(d["gpus"], fmt.count, "not deployed"),
        "cost": fmt.money(d["cost_per_million_output_tokens"], cur) + (" (estimate)" if d.get("price_estimated") else "")
        if deployed else fmt.missing("not deployed"),  # an estimated price (not a published rate) says so
        "cost_per_hour": fmt.money(d["cost_per_hour"], cur, 3) if deployed else fmt.missing("not deployed"),
    }


def simulated(ttft_s: float, tpot_s: float) -> str:
    """The scheduler simulation's median TTFT and mean TPOT: '297 ms / 12.3 ms'."""
    return f"{fmt.ms(ttft_s)} / {fmt.ms(tpot_s)}"
