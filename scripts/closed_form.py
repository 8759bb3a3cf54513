"""How far the closed forms (the headline, the SLOs, the replicas, the search) stand from the scheduler simulation
and from the held-out benchmark runs.

    python scripts/closed_form.py

1. A fixed grid of closed-loop scenarios (5 model × GPU setups, prompt, output and concurrency drawn with seed 1),
   each engine: the closed form's TTFT against the simulated median, TPOT against the simulated mean, requests/s
   against the simulated throughput; with lengths ±30 % (the search's check: requests out of step, as real
   traffic) and fixed (vllm bench serve's default: requests in lockstep).
2. The held-out runs with a concurrency cap: the closed form against what they printed, beside the simulation's
   error on the same runs (the table in README.md is the simulation's).
3. A replica at its capacity (the rate the replica count divides by: the closed form's highest rate within both
   SLOs at the conformance quota, the wait for a free slot included), sent Poisson arrivals at that rate with
   lengths ±30 % in the simulation: the share of requests within both SLOs, against the quota; for named setups,
   then for 40 random ones (setup, lengths, max_num_seqs, SLOs, engine) at capacity and at 1.25 times it, and for
   200 random ones where prompts are often long and outputs short (the queue for prefill binds), drawn with two
   seeds; for those whose vLLM max_num_seqs exceeds what the pool holds (Capacity.overcommitted), the share as set
   and with max_num_seqs at the slots.
"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from boundary.bench_check import check, check_closed_form, closed_loop, summary  # noqa: E402
from boundary.bench_data import load_runs  # noqa: E402
from calc import bench  # noqa: E402
from calc.evaluate import evaluate  # noqa: E402
from calc.loader import load_catalog  # noqa: E402
from calc.scenario import Scenario  # noqa: E402
from scripts import usage  # noqa: E402

SETUPS = (dict(model="llama-3.1-8b", gpu="h100-sxm"), dict(model="qwen2.5-7b-instruct", gpu="rtx-4090"),
          dict(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4), dict(model="qwen3-30b-a3b", gpu="h100-sxm"),
          dict(model="llama-3.1-8b", gpu="a10", max_model_len=8192))  # fmt: skip
DRAWS = 60


def grid() -> list[dict]:
    rng = random.Random(1)
    return [dict(rng.choice(SETUPS), input_len=rng.choice([128, 256, 512, 1000, 2000, 4000]),
                 output_len=rng.choice([64, 128, 256, 1000]), concurrency=rng.choice([1, 2, 4, 8, 16, 32, 64, 128]))
            for _ in range(DRAWS)]  # fmt: skip


def against_simulation(catalog, engine: str, range_ratio: float) -> dict[str, list[float]]:
    errors: dict[str, list[float]] = {"TTFT": [], "TPOT": [], "requests/s": []}
    for kw in grid():
        r = evaluate(Scenario(**kw, engine=engine), catalog)
        if not r.serves or not r.fit.fits:
            continue
        n = max(400, 6 * kw["concurrency"])
        sim = bench.serve(r, num_prompts=n, max_concurrency=kw["concurrency"], range_ratio=range_ratio)
        late = slice(n // 3, n)  # past the first cohort's start
        lat = r.latency
        errors["TTFT"].append(lat.ttft_s / np.nanmedian(sim.ttft_s[late]) - 1)
        errors["TPOT"].append(lat.tpot_s / np.nanmean(sim.tpot_s[late]) - 1)
        errors["requests/s"].append(lat.requests_per_s / sim.bench_summary()["request_throughput"] - 1)
    return errors


def against_runs(catalog) -> tuple[dict, dict]:
    """summary() of the closed forms and of the simulation on the same held-out closed-loop runs (the first is
    what scripts/calibrate.py report writes as errors.json's closed_form)."""
    runs = closed_loop([r for r in load_runs(catalog)[0] if r.part == "held-out"])
    return summary(check_closed_form(runs, catalog))["metrics"], summary(check(runs, catalog))["metrics"]


AT_CAPACITY = (dict(), dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=512, output_len=512),
               dict(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, input_len=2000, output_len=500),
               dict(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=1000, output_len=300),
               dict(model="qwen2.5-7b-instruct", gpu="l40s", input_len=2000, output_len=200),
               dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=512, output_len=512, engine="sglang"),
               # where the slots bind (the wait for a free slot, Erlang C)
               dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=512, output_len=512, max_num_seqs=16),
               dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=512, output_len=512, max_num_seqs=4),
               dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=2000, output_len=128, max_num_seqs=1, slo_tpot_s=0.03),
               dict(model="llama-3.1-70b", gpu="mi300x", tensor_parallel_size=4, dtype="fp8", kv_cache_dtype="fp8",
                    max_num_seqs=32, input_len=2000, output_len=500))  # fmt: skip
GRID_SETUPS = SETUPS[:4] + (dict(model="llama-3.1-8b", gpu="l40s"), dict(model="qwen2.5-7b-instruct", gpu="a100-80gb-sxm"))


def at_capacity(catalog):
    for kw in AT_CAPACITY:
        s = Scenario(**kw, request_rate=1.0)
        r = evaluate(s, catalog)
        cap = r.fleet.capacity
        if cap.rps <= 0:  # no concurrency meets the SLOs: nothing to load
            continue
        yield s, cap, _within_at(r, cap.rps, num_prompts=3000, skip=500)


def at_capacity_grid(catalog, draws: int = 40):
    """A replica at its capacity (and at 1.25 times it) on random setups, slots and SLOs, both engines: the share
    within both SLOs, by what bounds the capacity."""
    rng = random.Random(7)
    out: dict[str, list[tuple[float, float]]] = {"slots": [], "slo": []}
    for _ in range(draws):
        kw = dict(rng.choice(GRID_SETUPS), input_len=rng.choice([128, 512, 1000, 2000]),
                  output_len=rng.choice([64, 128, 256, 512]), max_num_seqs=rng.choice([1, 2, 4, 8, 16, 32, 64, 256]),
                  slo_ttft_s=rng.choice([0.3, 0.5, 1.0, 2.0]), slo_tpot_s=rng.choice([0.03, 0.05, 0.1]),
                  engine=rng.choice(["vllm", "sglang"]))  # fmt: skip
        s = Scenario(**kw, request_rate=1.0)
        r = evaluate(s, catalog)
        cap = r.fleet.capacity
        if cap.rps <= 0 or cap.limited_by not in out:
            continue
        shares = [_within_at(r, cap.rps * f) for f in (1.0, 1.25)]
        out[cap.limited_by].append((shares[0], shares[1]))
    return out


PREFILL_SETUPS = SETUPS[:4] + (dict(model="llama-3.1-8b", gpu="l40s"), dict(model="qwen2.5-7b-instruct", gpu="a100-80gb-sxm"),
                                dict(model="llama-3.1-8b", gpu="rtx-5090"), dict(model="llama-3.1-8b", gpu="a10", max_model_len=8192))


def at_capacity_prompts(catalog, draws: int = 200, seed: int = 21, factors: tuple[float, ...] = (1.0, 1.25)):
    """A replica at its capacity (and at 1.25 times it) on random setups where prompts are often long and outputs
    short (prompts 256–6,000 tokens, outputs 64–512, SLOs, both engines, max_num_seqs default or 4–32): the share
    within both SLOs at each of `factors` × the capacity, the share of the engine's time prefills take (the queue
    for prefill under Poisson arrivals, calc.prefill_queue, binds there), and, where the capacity is overcommitted
    (vLLM's max_num_seqs above the slots the pool holds), the share at the capacity with max_num_seqs at the slots
    (else None)."""
    rng = random.Random(seed)
    out: list[tuple] = []
    for _ in range(draws):
        kw = dict(rng.choice(PREFILL_SETUPS), input_len=rng.choice([256, 1000, 2000, 4000, 6000]),
                  output_len=rng.choice([64, 128, 256, 512]), slo_ttft_s=rng.choice([0.5, 1.0, 2.0, 4.0]),
                  slo_tpot_s=rng.choice([0.03, 0.05, 0.1]), engine=rng.choice(["vllm", "sglang"]))  # fmt: skip
        if rng.random() < 0.3:
            kw["max_num_seqs"] = rng.choice([4, 8, 16, 32])
        try:
            s = Scenario(**kw, request_rate=1.0)
        except ValueError:  # the prompt does not fit max_model_len
            continue
        r = evaluate(s, catalog)
        cap = r.fleet.capacity
        if cap.rps <= 0:
            continue
        shares = [_within_at(r, cap.rps * f) for f in factors]
        capped = None
        if cap.overcommitted:
            capped = _within_at(evaluate(s.model_copy(update={"max_num_seqs": cap.slots}), catalog), cap.rps)
        out.append((*shares, cap.prefill_load, capped))
    return out


def _within_at(r, rate: float, num_prompts: int = 2000, skip: int = 400) -> float:
    """Share within both SLOs of one replica sent Poisson arrivals at `rate`, lengths ±30 %, past its first `skip`."""
    s = r.scenario
    res = bench.serve(r, num_prompts=num_prompts, request_rate=rate, range_ratio=0.3)
    return res.within_slos(slo_ttft_s=s.slo_ttft_s, slo_tpot_s=s.slo_tpot_s, skip=skip)


def _abs(xs: list[float]) -> tuple[float, float]:
    a = np.abs(np.array(xs))
    return float(np.median(a)), float(np.percentile(a, 90))


def main() -> None:
    catalog = load_catalog()
    print("| engine | lengths | metric | n | median abs error | p90 abs error | mean signed error |")
    print("|---|---|---|---:|---:|---:|---:|")
    for engine in ("vllm", "sglang"):
        for ratio, label in ((0.3, "±30 %"), (0.0, "fixed")):
            for metric, errs in against_simulation(catalog, engine, ratio).items():
                med, p90 = _abs(errs)
                print(f"| {engine} | {label} | {metric} | {len(errs)} | {med:.1%} | {p90:.1%} | {statistics.mean(errs):+.1%} |")
    print()
    print("| held-out runs with a concurrency cap | n | closed form: median abs error | p90 | simulation: median | p90 |")
    print("|---|---:|---:|---:|---:|---:|")
    closed, sim = against_runs(catalog)
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("throughput", "output throughput")):
        c, m = closed[metric], sim[metric]
        print(f"| {name} | {c['n']} | {c['median_abs']:.1%} | {c['p90_abs']:.1%} | {m['median_abs']:.1%} | {m['p90_abs']:.1%} |")
    print()
    print("| a replica at its capacity, Poisson arrivals (simulation) | capacity | in flight (bound) | within both SLOs (quota) |")
    print("|---|---:|---:|---:|")
    for s, cap, within in at_capacity(catalog):
        seqs = f", max_num_seqs {s.max_num_seqs}" if s.max_num_seqs != Scenario().max_num_seqs else ""
        print(f"| {s.model}, {s.gpu}, TP {s.tensor_parallel_size}, {s.engine}, {s.input_len:,} + {s.output_len:,}{seqs} | "
              f"{cap.rps:.2f} req/s | {cap.concurrency:,} ({cap.limited_by}) | {within:.1%} ({s.conformance_quota:.0%}) |")
    print()
    print("| random setups at their capacity (seed 7) | n | within both SLOs: median | min | below 85 % | at 1.25 × capacity: median |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, rows in at_capacity_grid(catalog).items():
        at, over = [a for a, _ in rows], [b for _, b in rows]
        if rows:
            print(f"| capacity bound by the {'slots (the wait for one)' if kind == 'slots' else 'SLOs'} | {len(rows)} | "
                  f"{statistics.median(at):.1%} | {min(at):.1%} | {sum(a < 0.85 for a in at)} | {statistics.median(over):.1%} |")

    print()
    print("| random prompt-heavy setups at their capacity | n | within both SLOs: median | p10 | min | below 85 % "
          "| below 90 % | at 1.25 × capacity: median |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    flagged = {}
    for seed in (21, 33):
        rows = at_capacity_prompts(catalog, seed=seed)
        at, over = [x[0] for x in rows], [x[1] for x in rows]
        print(f"| all, seed {seed} | {len(rows)} | {statistics.median(at):.1%} | {np.percentile(at, 10):.1%} | "
              f"{min(at):.1%} | {sum(a < 0.85 for a in at)} | {sum(a < 0.9 for a in at)} | {statistics.median(over):.1%} |")
        flagged[seed] = [(x[0], x[3]) for x in rows if x[3] is not None]
    print()
    print("| overcommitted (vLLM, max_num_seqs above the slots the pool holds) | n | as set: lowest | below 85 % | "
          "max_num_seqs at the slots: lowest | below 85 % |")
    print("|---|---:|---:|---:|---:|---:|")
    for seed, pairs in flagged.items():
        if pairs:
            print(f"| seed {seed} | {len(pairs)} | {min(a for a, _ in pairs):.1%} | {sum(a < 0.85 for a, _ in pairs)} | "
                  f"{min(c for _, c in pairs):.1%} | {sum(c < 0.85 for _, c in pairs)} |")


if __name__ == "__main__":
    if usage.args(__doc__):
        usage.fail("takes no arguments")
    main()
