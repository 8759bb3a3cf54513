"""The compressed simulation (calc/scheduler.py) against a per-step, per-request reference written independently
of it: same TTFT, E2E, preemptions and ITL samples to 1e-9, for both engines, on pools that bind."""

import heapq
import math
from collections import deque
from dataclasses import replace

import numpy as np
import pytest
from test_scheduler import MS, const_10ms, engine

from calc.scheduler import simulate
from calc.sim_engine import EngineConfig
from calc.sim_stats import Workload, workload_arrays


def reference(cfg: EngineConfig, w: Workload, step_s) -> tuple[np.ndarray, np.ndarray, int, list[float]]:
    """vLLM V1 / SGLang one step at a time, each request on its own (no compression): TTFT, E2E, preemptions,
    ITL samples. Independent of calc/scheduler.py but for the workload arrays."""
    prompt, out, ready = (a.tolist() for a in workload_arrays(w))
    n, blk, pool = len(prompt), cfg.blocks_for, cfg.num_gpu_blocks
    hit = [0] + [min(cfg.prefix_cached_tokens, x - 1) for x in prompt[1:]]
    full = [blk(x + y - 1) for x, y in zip(prompt, out, strict=True)]
    send, first, fin, last = [math.nan] * n, [math.nan] * n, [math.nan] * n, [0.0] * n
    kv, gen, tgt, decoding = [0] * n, [0] * n, list(prompt), [False] * n
    waiting, running, itl = deque(), [], []
    slots = [0.0] * w.max_concurrency if w.max_concurrency else None
    t, nxt, done, preemptions, ratio = 0.0, 0, 0, 0, 0.7

    def next_send():
        if nxt >= n:
            return math.inf
        return ready[nxt] if slots is None else (max(ready[nxt], slots[0]) if slots else math.inf)

    def end(r, at, ok=True):
        nonlocal done
        fin[r] = at if ok else math.nan
        done += 1
        if slots is not None:
            heapq.heappush(slots, at)

    def preempt(r):
        nonlocal preemptions
        running.remove(r)
        decoding[r], kv[r], tgt[r] = False, 0, prompt[r] + gen[r]
        waiting.appendleft(r)
        preemptions += 1

    def run(sched, n_dec, ctx):
        nonlocal t
        tokens = sum(c for r, c in sched.items() if not decoding[r])
        pairs = sum(c * kv[r] + c * (c + 1) // 2 for r, c in sched.items() if not decoding[r])
        t += step_s(tokens, pairs, n_dec, ctx, sum(1 for r in sched if not decoding[r]))
        for r, c in sched.items():
            kv[r] += c
            if decoding[r] or kv[r] == tgt[r]:
                if gen[r] == 0:
                    first[r] = t
                else:
                    itl.append(t - last[r])
                last[r], gen[r], decoding[r] = t, gen[r] + 1, True
                if gen[r] == out[r]:
                    running.remove(r)
                    end(r, t)

    while done < n:
        while (s := next_send()) <= t:
            r, nxt = nxt, nxt + 1
            if slots is not None:
                heapq.heappop(slots)
            send[r] = s
            if full[r] > pool:
                end(r, s, ok=False)
            else:
                waiting.append(r)
        if not running and not waiting:
            t = next_send()
            continue
        budget, sched = cfg.max_num_batched_tokens, {}
        if cfg.engine == "vllm":
            preempted, i = False, 0
            while i < len(running):
                r = running[i]
                c = 1 if decoding[r] else min(tgt[r] - kv[r], budget)
                if c <= 0:
                    i += 1
                    continue
                while sum(blk(kv[x] + sched.get(x, 0)) for x in running if x != r) + blk(kv[r] + c) > pool:
                    victim = running[-1]
                    preempt(victim)
                    preempted = True
                    if victim == r:
                        break
                if r not in running:
                    break
                sched[r] = c
                budget -= c
                i += 1
            while not preempted and waiting and len(running) < cfg.max_num_seqs and budget > 0:
                r = waiting[0]
                c = min(tgt[r] - hit[r], budget)
                if sum(blk(kv[x] + sched.get(x, 0)) for x in running) + blk(hit[r] + c) > pool:
                    break
                waiting.popleft()
                running.append(r)
                kv[r], sched[r] = hit[r], c
                budget -= c
            dec = [r for r in sched if decoding[r]]
            run(sched, len(dec), sum(kv[r] + 1 for r in dec))
            continue
        # sglang: a prefill batch if one can be formed, else a decode step
        for r in running:
            if not decoding[r]:
                sched[r] = min(tgt[r] - kv[r], budget)
                budget -= sched[r]
        dec = [r for r in running if decoding[r]]
        held = sum(blk(kv[r]) for r in dec)
        prefills = sum(full[r] for r in running if not decoding[r])
        rem = pool - held - ratio * (sum(full[r] for r in dec) - held) - prefills
        while waiting and len(running) < cfg.max_num_seqs and budget > 0 and full[waiting[0]] <= rem:
            r = waiting.popleft()
            rem -= full[r]
            running.append(r)
            kv[r], sched[r] = hit[r], min(tgt[r] - hit[r], budget)
            budget -= sched[r]
        if sched:
            run(sched, 0, 0)
            continue
        while len(dec) > 1 and sum(blk(kv[r] + 1) for r in dec) > pool:
            preempt(dec.pop())
            ratio = 0.7
        run({r: 1 for r in dec}, len(dec), sum(kv[r] + 1 for r in dec))
        ratio = max(0.098, ratio - (0.7 - 0.098) / 600)
    send, first, fin = np.array(send), np.array(first), np.array(fin)
    return first - send, fin - send, preemptions, itl


CASES = [
    ("closed loop, pool binds", engine(num_gpu_blocks=120, max_num_batched_tokens=256, max_num_seqs=12),
     Workload(input_len=200, output_len=60, num_prompts=40, max_concurrency=12, range_ratio=0.5, seed=1)),
    ("poisson, pool free", engine(max_num_batched_tokens=512, max_num_seqs=8),
     Workload(input_len=300, output_len=80, num_prompts=60, request_rate=30.0, range_ratio=0.8, seed=2)),
    ("all at once, tiny pool, prefix hits", engine(num_gpu_blocks=60, max_num_batched_tokens=128,
                                                    prefix_cached_tokens=50),
     Workload(input_len=150, output_len=100, num_prompts=30, range_ratio=0.3, seed=3)),
    ("poisson and concurrency, sliding blocks", engine(num_gpu_blocks=200, block_size=8, max_num_batched_tokens=300,
                                                        blocks_for=lambda t: -(-t // 8) + min(-(-t // 8), 9) + 1),
     Workload(input_len=120, output_len=90, num_prompts=50, request_rate=20.0, max_concurrency=10, range_ratio=0.6,
              seed=4)),
    ("long outputs: sglang's ratio decays, then retracts", engine(num_gpu_blocks=100, max_num_batched_tokens=256),
     Workload(input_len=60, output_len=400, num_prompts=40, max_concurrency=12, range_ratio=0.5, seed=9)),
]  # fmt: skip


@pytest.mark.parametrize("eng", ["vllm", "sglang"])
@pytest.mark.parametrize(("name", "cfg", "w"), CASES, ids=[c[0] for c in CASES])
def test_compressed_equals_per_step_reference(name, cfg, w, eng):
    step = lambda p, pp, n, ctx, *_: 2 * MS + 1e-5 * p + 1e-8 * pp + 1e-4 * n + 2e-7 * ctx  # linear: Simpson is exact
    cfg = replace(cfg, engine=eng)
    r = simulate(cfg, w, step)
    ttft, e2e, preemptions, itl = reference(cfg, w, step)
    assert r.preemptions == preemptions
    np.testing.assert_allclose(r.ttft_s, ttft, rtol=1e-9)
    np.testing.assert_allclose(r.e2e_s, e2e, rtol=1e-9)
    s = r.bench_summary()
    assert s["mean_itl_ms"] == pytest.approx(np.mean(itl) / MS, rel=1e-9)
    assert s["median_itl_ms"] == pytest.approx(np.median(itl) / MS, rel=1e-9)
    assert s["p99_itl_ms"] == pytest.approx(np.percentile(itl, 99) / MS, rel=1e-9)


def test_pool_cases_do_bind():
    """The reference cases above exercise preemption (vLLM) and retraction (SGLang)."""
    for i in (0, 2, 4):
        assert simulate(replace(CASES[i][1], engine="vllm"), CASES[i][2], const_10ms).preemptions > 0
    for i in (2, 4):
        assert simulate(replace(CASES[i][1], engine="sglang"), CASES[i][2], const_10ms).preemptions > 0
