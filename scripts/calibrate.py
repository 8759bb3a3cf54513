"""Fit the engine constants (engine_specs/*.yaml) on the calibration part of the published benchmark runs, and
report the error on the held-out part.

    python scripts/calibrate.py fit [STEP] # fit, write engine_specs/vllm.yaml and sglang.yaml, then report
                                          # (STEP: the first multiplicative step, default 2; 1.25 to refine a fit)
    python scripts/calibrate.py fit-front # refit only the front-end constants (request_overhead_s, request_token_s,
                                          # chat_request_s of both engines), every other constant as shipped
    python scripts/calibrate.py fit-only NAME ...  # refit only these constants, every other as shipped (a new term);
                                          # release.NAME: that fixed cost of each engine's later releases;
                                          # ENGINE.NAME, ENGINE.release.NAME: that engine's only
    python scripts/calibrate.py report    # held-out error table → tests/data/benchmarks/errors.json and README
    python scripts/calibrate.py peaks     # the two peaks vllm bench serve prints, predicted against every run that
                                          # printed them (not fitted: both parts)

What is fitted: the kernel shares every engine's kernels have in common (GEMM ramp and share, attention, fp8 /
4-bit / fused-MoE weight kernels) on all calibration runs, and each engine's fixed costs (per step, per layer, per
sequence, per request) on its own runs. What is not: the GPUs' achievable bandwidth and matmul fractions and
all-reduce latencies (published microbenchmarks, hardware_specs/SOURCES.md). Residuals: √weight · log(predicted /
measured) per run and metric, each source group weighing alike, plus priors on the kernel shares; minimised in
soft-L1 by a derivative-free coordinate search — so the few runs whose bottleneck the model does not carry cannot
pull the rest.
"""

from __future__ import annotations

import datetime
import math
import sys
from collections.abc import Callable
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from boundary.bench_check import measured, predict  # noqa: E402
from boundary.bench_data import DATA, load_runs, write_split  # noqa: E402
from calc.loader import ENGINE_DIR, load_catalog  # noqa: E402
from calc.resolve import engine_of  # noqa: E402
from scripts import usage  # noqa: E402
from scripts.calibration_report import peaks, report  # noqa: E402

SHARED = ("gemm_half_tokens", "gemm_compute_share", "attention_bandwidth_share", "attention_compute_share",
          "fp8_weight_share", "int4_weight_share", "moe_weight_share", "moe_compute_share", "routing_exponent",
          "prefill_routing_exponent", "fp8_moe_compute_share", "pcie_allreduce_latency_s",
          "pcie_allreduce_gb_per_s", "routing_skew")  # fmt: skip
OWN = ("step_overhead_s", "layer_overhead_s", "shared_expert_layer_s", "per_sequence_s", "stream_token_s",
       "chat_stream_token_s", "request_overhead_s", "request_token_s", "chat_request_s", "chat_serial_s",
       "int4_moe_weight_share")  # fmt: skip
# Constants only one engine has: SGLang's scheduler work on a batch with no step in flight (its overlap schedule)
ENGINE_OWN = {"vllm": (), "sglang": ("idle_launch_s",)}
# Fixed costs a later release has of its own (engine_specs/*.yaml `releases`), fitted on that release's runs; the
# rest of its costs are its engine's (the chat endpoint's: the newer releases' runs all call /v1/completions)
RELEASE_OWN = ("step_overhead_s", "layer_overhead_s", "per_sequence_s", "stream_token_s", "request_overhead_s",
               "request_token_s", "moe_weight_share")  # fmt: skip
# A burst's TTFT is its queue's drain time, which throughput already fits: weighed low so it cannot set the
# per-request costs that the first-token latency of a steady load depends on.
WEIGHTS = {"tpot": 2.0, "ttft": 1.0, "ttft_burst": 0.25, "throughput": 1.0, "latency": 2.0}
# Priors (value, spread in log units) for the kernel shares: what microbenchmarks and the seed report say kernels
# reach. The seed measured KV reads at 93 % of the 4090's peak (its achievable 0.90: share ≈ 1); fused-MoE,
# fp8 and 4-bit kernels stream below a dense bf16 GEMM. A prior keeps a share physical when the runs that
# could pin it are few; the data move it where they agree.
PRIORS = {"gemm_compute_share": (0.75, 0.25), "attention_bandwidth_share": (0.95, 0.15),
          "attention_compute_share": (0.6, 0.3), "fp8_weight_share": (0.8, 0.2), "int4_weight_share": (0.6, 0.3),
          "moe_weight_share": (0.85, 0.2), "gemm_half_tokens": (64, 0.7), "routing_exponent": (1.0, 0.3),
          "moe_compute_share": (1.0, 0.5), "fp8_moe_compute_share": (1.0, 0.5),
          "pcie_allreduce_latency_s": (10e-6, 0.7), "pcie_allreduce_gb_per_s": (12.0, 0.5),
          "routing_skew": (0.5, 1.0)}  # fmt: skip
# routing_skew: no published statistic of how skewed a batch of different requests' routing is (weakly informative);
# 0 (uniform routing) is "off" and carries no prior
# pcie_allreduce_*: a pair's custom all-reduce over PCIe, 4–7 µs at 4–16 KB in a graph, NCCL's 20–22 µs
# (haohervchb/sglang-V100#2); a kernel's peer reads across PCIe ~12 GB/s (vllm-project/vllm#54766)
# routing_exponent: uniform routing (1) is the textbook assumption; the MoE runs at several concurrencies move it.
# an exponent above 1 would touch more experts than independent tokens can
BELOW_ONE = ("routing_exponent", "prefill_routing_exponent")
OFF_AT_ZERO = ("routing_skew",)  # shared constants whose 0 turns their term off (log space: UNSET, read back as 0)
CAP = 1.5
EAGER_RATIO = 3.75  # layer_overhead_eager_s / layer_overhead_s: a launch per kernel 4–6 µs vs 1–1.5 µs from a graph
MEASURED = "; harmony_serial_s"  # set from a published rate, not fitted: its source clause survives a refit
UNSET = 1e-12  # a fixed cost shipped as 0 (a term not fitted yet), in log space; a fit starts it from 10 µs
FIT_PROMPTS = 200  # the fit replays at most this many prompts per run (speed); the report replays each run's own count

# Sources whose calibration runs the fits leave out while they are a blind batch (pre-registered in
# docs/calibration-history.md: "nothing is fitted on them this session"); the report replays them all the same.
UNFITTED = ("sglang-cookbook-llama4-mi300x|", "sglang-cookbook-deepseek-v3.1-mi300x|",
            "sglang-cookbook-ernie45-21b-a3b-mi300x|", "sglang-cookbook-minimax-m2-mi300x|",
            "sglang-cookbook-step35-flash-h200|", "sglang-cookbook-kimi-linear-mi300x|",
            "vllm-pr-26887-qwen3-next-fp8-2xh100|",  # (2026-12-05's fourth blind batch)
            "sglang-cookbook-kimi-k25-h200|", "sglang-cookbook-minimax-m25-b200-h100|",
            "sglang-cookbook-qwen3-coder-next-b200|",  # (and its fifth)
            "dstack-deepseek-r1-mi300x-h200|",  # (and its sixth; (5): a refit on the 4th and 5th, not kept)
            "kvcached-pr331-qwen3-0.6b-h100-vllm019|",
            "kvcached-overhead-llama32-3b-a100-sglang0462|",  # (2026-12-06's eighth, (30))
            "pegainfer-bs1-4k64-qwen3-4b-rtx5090-vllm0191|")  # fmt: skip (and its ninth, (43))


def _fitted_on(run) -> bool:
    return run.part == "calibration" and not run.group.startswith(UNFITTED)


_state: dict = {}


def _init() -> None:
    _state["catalog"] = load_catalog()
    _state["runs"] = [r for r in load_runs(_state["catalog"])[0] if _fitted_on(r)]
    sizes: dict[str, int] = {}
    for r in _state["runs"]:
        sizes[r.group] = sizes.get(r.group, 0) + 1
    _state["weight"] = [1 / math.sqrt(sizes[r.group]) for r in _state["runs"]]  # no one source outweighs the rest


ENGINES = ("vllm", "sglang")


def _layout(catalog) -> list[tuple[str, int | None, str]]:
    """What each entry of the fitted vector is: (engine, release index or None for the engine's own, constant);
    the shared kernel shares first (engine '')."""
    out = [("", None, k) for k in SHARED]
    out += [(name, None, k) for name in ENGINES for k in (*OWN, *ENGINE_OWN[name])]
    out += [(name, j, k) for name in ENGINES for j in range(len(catalog.engines[name].releases)) for k in RELEASE_OWN]
    return out


def _engines(x: np.ndarray, catalog=None) -> dict:
    """Both engine specs at constants x (log values, in _layout's order), later releases included."""
    cat = catalog or _state["catalog"]
    by: dict = {}
    for (name, j, k), v in zip(_layout(cat), np.exp(x), strict=True):
        by.setdefault((name, j), {})[k] = 0.0 if k in OFF_AT_ZERO and v <= UNSET * 1.01 else float(v)
    shared = by[("", None)]
    out = {}
    for name in ENGINES:
        own = by[(name, None)] | {"layer_overhead_eager_s": by[(name, None)]["layer_overhead_s"] * EAGER_RATIO}
        base = cat.engines[name]
        releases = tuple(r.model_copy(update=by[(name, j)] | {"layer_overhead_eager_s": by[(name, j)]["layer_overhead_s"]
                                                               * EAGER_RATIO}) for j, r in enumerate(base.releases))  # fmt: skip
        out[name] = base.model_copy(update={**shared, **own, "int8_weight_share": shared["fp8_weight_share"],
                                            "releases": releases})  # fmt: skip
    return out


def _run_residuals(args) -> list[float]:
    """√weight · log(predicted / measured) for each metric the run printed (a failed prediction counts as CAP)."""
    i, x = args
    run = _state["runs"][i]
    eng = _engines(x)[run.scenario.engine]
    meas = measured(run)
    try:
        pred = predict(run, _state["catalog"], engine=eng, max_prompts=FIT_PROMPTS)
    except (ValueError, ZeroDivisionError):
        pred = {}
    out = []
    for k in sorted(WEIGHTS):
        if k in meas:
            p, m = pred.get(k), meas[k]
            r = math.log(p / m) if p and m > 0 else CAP
            out.append(math.sqrt(WEIGHTS[k] * _state["weight"][i]) * max(-CAP * 2, min(CAP * 2, r)))
    return out


def _all_residuals(pool, x: np.ndarray, n: int) -> list[float]:
    """_run_residuals of the n calibration runs at constants x, on the pool's workers."""
    return [v for vs in pool.map(_run_residuals, [(i, x) for i in range(n)]) for v in vs]


def _calibration_runs(catalog) -> list:
    return [r for r in load_runs(catalog)[0] if _fitted_on(r)]


def _fails(run, catalog) -> bool:
    try:
        predict(run, catalog, max_prompts=FIT_PROMPTS)
    except (ValueError, ZeroDivisionError):
        return True
    return False


def _x0(catalog) -> np.ndarray:
    """The shipped constants in _layout's order (a release's unset cost: its engine's)."""
    vals = []
    for name, j, k in _layout(catalog):
        e = catalog.engines[name or "vllm"]
        own = getattr(e.releases[j], k) if j is not None else None
        v = getattr(e, k) if own is None else own
        vals.append(v if (not name and k not in OFF_AT_ZERO) or v > 0 else UNSET)  # a cost below 1 µs is read back
    return np.log(np.array(vals, dtype=float))


def _shared_hi(x0: np.ndarray) -> np.ndarray:
    """Upper bounds (log space) of the shared constants: a share above 1.5 is no share, an exponent above 1 would
    touch more experts than independent tokens can, a routing skew above 3 would give one expert 83 % of a top-1
    router's tokens; the
    rest may grow e⁴-fold."""
    return np.array([0.0 if k in BELOW_ONE else math.log(1.5) if k.endswith("share") else math.log(3.0)
                     if k == "routing_skew" else x0[i] + 4.0 for i, k in enumerate(SHARED)])  # fmt: skip


def robust_cost(r: np.ndarray, f: float = 0.3) -> float:
    """Σ soft-L1: quadratic for small residuals, linear for large ones (an unexplained run pulls, but not hard)."""
    return float((2 * f * f * (np.sqrt(1 + (r / f) ** 2) - 1)).sum())


def pattern_search(cost, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, step: float = math.log(2),
                   min_step: float = math.log(1.02), rel_tol: float = 2e-4) -> tuple[np.ndarray, float]:  # fmt: skip
    """Derivative-free coordinate search in log space (the simulation is piecewise, finite differences mislead):
    try each constant up and down by `step`, keep improvements, halve the step when a sweep gains (almost) none."""
    x, best = x0.copy(), cost(x0)
    while step >= min_step:
        improved, before = False, best
        for i in range(len(x)):
            for d in (step, -step):
                y = x.copy()
                y[i] = min(hi[i], max(lo[i], y[i] + d))
                if y[i] == x[i]:
                    continue
                c = cost(y)
                if c < best - 1e-9:
                    x, best, improved = y, c, True
                    break
        print(f"  step ×{math.exp(step):.3f}: cost {best:.3f}", flush=True)
        if not improved or before - best < rel_tol * before:  # a sweep that gains < rel_tol: the next, finer step
            step /= 2
    return x, best


def fit(first_step: float = 2.0) -> None:
    catalog = load_catalog()
    runs, _ = load_runs(catalog)
    if not (DATA / "split.yaml").exists():
        write_split(runs)
    n = len([r for r in runs if _fitted_on(r)])
    with Pool(2, initializer=_init) as pool:
        def residuals(x):
            runs_r = _all_residuals(pool, x, n)
            prior = [math.log(math.exp(x[SHARED.index(k)]) / v) / sd for k, (v, sd) in PRIORS.items()
                     if x[SHARED.index(k)] > math.log(UNSET * 1.01)]  # a term off (0) has no prior
            return np.array(runs_r + prior)

        x0 = _x0(catalog)
        hi = x0 + 4.0
        hi[: len(SHARED)] = _shared_hi(x0)
        hi[[i for i, (e, j, k) in enumerate(_layout(catalog)) if j is not None and k.endswith("_share")]] = math.log(1.5)
        x0 = np.minimum(x0, hi)
        failed = [r.id for r in _calibration_runs(catalog) if _fails(r, catalog)]
        if failed:  # each counts as a capped residual in the fit: say which
            print(f"{len(failed)} calibration run(s) the planner cannot predict: {', '.join(failed)}")
        print(f"fitting on {n} calibration runs; initial cost {robust_cost(residuals(x0)):.2f}")
        x, cost = pattern_search(lambda y: robust_cost(residuals(y)), x0, x0 - 4.0, hi, step=math.log(first_step))
        print(f"final cost {cost:.2f}")
    today = datetime.date.today().isoformat()

    def source(name: str) -> str:
        own_runs = sum(1 for r in runs if _fitted_on(r) and r.scenario.engine == name)
        old = catalog.engines[name].source  # a measured constant's own source stays with it
        measured = old[old.index(MEASURED):] if MEASURED in old else ""
        return (f"fitted by scripts/calibrate.py on {today}: kernel shares on all {n} calibration runs, fixed costs "
                f"on this engine's {own_runs} (tests/data/benchmarks, split.yaml); held-out error in README.md{measured}")

    _write_fitted(x, catalog, source)


FRONT = ("request_overhead_s", "request_token_s", "chat_request_s", "chat_serial_s")


def fit_names() -> tuple[str, ...]:
    """What fit-only may refit: a shared constant, an engine's own (both engines'), `release.NAME` (each engine's
    later releases'), and `ENGINE.NAME` / `ENGINE.release.NAME` (that engine's alone)."""
    per = [f"{e}.{k}" for e in ENGINES for k in (*OWN, *ENGINE_OWN[e])]
    per += [f"{e}.release.{k}" for e in ENGINES for k in RELEASE_OWN]
    return (*SHARED, *OWN, *(f"release.{k}" for k in RELEASE_OWN), *per)


def _selects(name: str, engine: str, release: int | None, constant: str) -> bool:
    """Whether a fit-only name picks this entry of the layout (an engine's own constant or a release's)."""
    head, _, rest = name.partition(".")
    if head in ENGINES:
        if head != engine:
            return False
        name = rest
    if name.startswith("release."):
        return release is not None and name.removeprefix("release.") == constant
    return release is None and name == constant


def fit_only(names: tuple[str, ...]) -> None:
    """Only these constants, on the calibration runs, with every other constant as shipped: what a new term needs
    without refitting everything (a full fit takes ~30 min on two cores, this one a few). A per-engine constant
    (fixed costs) is fitted for both engines unless its name says which (`sglang.request_overhead_s`); one shipped
    as 0 (a term not fitted yet) starts from 10 µs, and each may range over 0.1 µs … 10 ms (log space). A shared one
    (kernel shares, the routing exponent) keeps the full fit's bounds and priors."""
    allowed = fit_names()
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        sys.exit(f"fit-only: name one or more of {', '.join(allowed)} (got {', '.join(unknown) or 'none'})")
    catalog = load_catalog()
    n = len(_calibration_runs(catalog))
    x0 = _x0(catalog)
    layout = _layout(catalog)
    shared = [name for name in names if name in SHARED]
    idx = [i for i, (e, j, k) in enumerate(layout) if e and any(_selects(n, e, j, k) for n in names)]
    start = np.where(x0[idx] <= math.log(UNSET), math.log(1e-5), x0[idx])
    lo, hi = np.minimum(start - 6.0, math.log(1e-7)), np.maximum(start + 3.0, math.log(1e-2))
    share = np.array([layout[i][2].endswith("_share") for i in idx], dtype=bool)  # a release's kernel share
    lo, hi = np.where(share, x0[idx] - 4.0, lo), np.where(share, math.log(1.5), hi)
    sidx = [SHARED.index(name) for name in shared]
    x0 = x0.copy()  # a term shipped off (0) starts from its prior
    x0[sidx] = [math.log(PRIORS[k][0]) if k in OFF_AT_ZERO and x0[i] <= math.log(UNSET * 1.01) else x0[i]
                for k, i in zip(shared, sidx, strict=True)]
    idx, start = idx + sidx, np.concatenate([start, x0[sidx]])
    lo, hi = np.concatenate([lo, x0[sidx] - 4.0]), np.concatenate([hi, _shared_hi(x0)[sidx]])
    with Pool(2, initializer=_init) as pool:
        def cost(y):
            x = x0.copy()
            x[idx] = y
            prior = [math.log(math.exp(x[SHARED.index(k)]) / PRIORS[k][0]) / PRIORS[k][1] for k in shared if k in PRIORS]
            return robust_cost(np.array(_all_residuals(pool, x, n) + prior))

        print(f"fitting {', '.join(names)} on {n} calibration runs; starting cost {cost(x0[idx]):.2f}")
        y, best = pattern_search(cost, start, lo, hi)
        print(f"final cost {best:.2f}")
    x = x0.copy()
    x[idx] = y
    today = datetime.date.today().isoformat()
    def source(engine: str) -> str:  # the constants of this engine's that were refitted, named as in its spec
        mine = [name.removeprefix(f"{engine}.") for name in names if name.partition(".")[0] not in ENGINES
                or name.startswith(f"{engine}.")]
        old = catalog.engines[engine].source
        return f"{old}; {', '.join(mine)} refitted alone by `scripts/calibrate.py fit-only` on {today} on {n} " \
               "calibration runs" if mine else old

    refitted = {e for e in ENGINES for name in names if "release." in name and name.partition(".")[0] in (e, "release")}
    _write_fitted(x, catalog, source, releases_fitted=refitted)


def _write_fitted(x: np.ndarray, catalog, source: Callable[[str], str], releases_fitted=ENGINES) -> None:
    """Both engine specs at constants x, as the fit saw them (the eager layer cost derived from the graph one),
    each with its source line (a release's own only where its constants were fitted); then the held-out report."""
    _state["catalog"] = catalog
    runs = _calibration_runs(catalog)
    for name, spec in _engines(x, catalog).items():
        releases = []
        for r in spec.releases:
            mine = [run for run in runs if run.scenario.engine == name and engine_of(run.scenario, catalog).since == r.since]
            own = len(mine)
            in_flight = max((run.max_concurrency or run.scenario.concurrency for run in mine), default=None)
            same = {k: None for k in (*RELEASE_OWN, "layer_overhead_eager_s")  # the engine's own: left to inherit
                    if getattr(r, k) is not None and math.isclose(getattr(r, k), getattr(spec, k), rel_tol=1e-9)}
            if name not in releases_fitted:
                releases.append(r.model_copy(update=same))
                continue
            releases.append(r.model_copy(update={**same, "fitted_concurrency": in_flight,
                                                 "source": f"fitted by scripts/calibrate.py on {datetime.date.today()} "
                                                           f"on this release's {own} calibration runs (tests/data/"
                                                           "benchmarks, split.yaml); the engine's other costs and "
                                                           "kernel shares as above"}))  # fmt: skip
        _write_engine(name, spec.model_copy(update={"source": source(name), "releases": tuple(releases)}))
    report()


def _write_engine(name: str, spec) -> None:
    path = ENGINE_DIR / f"{name}.yaml"
    head = [line for line in path.read_text().splitlines() if line.startswith("#")][:1]
    def rounded(v):
        if isinstance(v, float):
            return int(v) if v.is_integer() and abs(v) >= 1e4 else float(f"{v:.4g}")  # sizes in bytes stay exact
        if isinstance(v, list):
            return [rounded(x) for x in v]
        return {k: rounded(x) for k, x in v.items()} if isinstance(v, dict) else v

    data = rounded(spec.model_dump(mode="json", exclude_none=True))
    if not data.get("releases"):
        data.pop("releases", None)
    path.write_text("\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120))


if __name__ == "__main__":
    argv = usage.args(__doc__)
    command = argv[0] if argv else "report"
    if command == "fit":  # a refit from fitted values may start with a small step
        fit(usage.number(argv[1], "STEP", low=1.0) if len(argv) > 1 else 2.0)
    elif command == "fit-front":
        fit_only(FRONT)
    elif command == "fit-only":
        if not argv[1:] or any(n not in fit_names() for n in argv[1:]):
            usage.fail(f"fit-only: name constants to refit, of {', '.join(sorted(fit_names()))}")
        fit_only(tuple(argv[1:]))
    elif command == "report" and len(argv) <= 1:
        report()
    elif command == "peaks" and len(argv) <= 1:
        peaks()
    else:
        usage.fail(f"unknown command {command[:40]!r}; allowed: fit [STEP], fit-front, fit-only NAME ..., report, peaks")
