"""Plain-text rendering of a Report for the terminal and the Markdown export: the sections of boundary.view laid
out as aligned text (formatting only: every number comes from the Report)."""

from __future__ import annotations

from boundary import view, view_bench, view_fleet, view_memory
from boundary.view import verdict
from calc.serve_command import joined, plan_serve_commands

__all__ = ["render_text", "verdict"]


def _block(head: str, lines: list[str]) -> list[str]:
    return ["", head, *lines]


def render_text(r, *, gpu_options: bool = False, replica_check: bool = False, check=None) -> str:
    """The whole plan. `gpu_options`: add the sweep over every shipped GPU (slower); `replica_check`: say the
    replica count's simulated check (Report.replica_check: up to four simulations); `check`: that check, already
    run (the page's, kept per scenario)."""
    if check is not None:
        replica_check = True
    lines = [view.title(r), "", verdict(r)]
    if view.missing_lines(r):
        lines += _block("What is missing (per GPU)", [f"  {x}" for x in view.missing_lines(r)])
    if r.suggestions:
        lines += _block("Smallest changes that fit", view_fleet.suggestions_table(r).text().splitlines())
    elif not r.fit.fits:
        lines += ["", view.NO_SINGLE_CHANGE + " (`python -m calc search` with the same flags)"]
    for sec in (view_memory.memory_section(r), view_memory.kv_section(r), view_memory.workload_section(r)):
        lines += _block(sec.title, sec.lines)
    why = view.no_latency_reason(r)
    if why:
        lines += ["", f"No latency, SLO, cost or benchmark figures: {why}."]
    else:
        if not r.fit.fits:
            lines += ["", f"note: {view.unfit_note(r)}"]
        sec = view.latency_section(r)
        lines += _block(sec.title, sec.lines)
        sec = view_bench.benchmark_section(r)
        lines += _block(sec.title, sec.lines)
        lines += _block("SLOs, replicas and cost", [f"  {x}" for x in view_fleet.slo_lines(r, replica_check=check or (r.replica_check if replica_check else None))])
        lines += _block("Tails (what averages hide)", [f"  {x}" for x in view_fleet.tails_lines(r)])
        sim = view_fleet.simulation_table(r)
        lines += _block(f"Simulation ({sim.note})", sim.text().splitlines())
        tiers = view_fleet.tiers_table(r)
        lines += _block("Beyond the GPU", [f"  {x}" for x in view_fleet.beyond_lines(r)] + [""] + tiers.text().splitlines()
                        + [f"  {tiers.note}"])  # the page's caption under the table
        if gpu_options:
            opts = view_fleet.gpu_options_table(r)
            lines += _block("GPU options for this model", opts.text().splitlines() + [f"  {opts.note}"])
    if not why:  # a server that starts
        lines += _block("Serve it (the scenario as given)", [f"  {x}" for x in joined(plan_serve_commands(r)).splitlines()])
    if r.notes:
        lines += ["", *[f"note: {n}" for n in r.notes]]
    return "\n".join(lines)
