"""The two engines' scheduling decisions, one step each, over the simulation state of calc.scheduler (`sim`, its
_Sim): vLLM V1 decode-first with recompute preemption, SGLang prefill-first with its new_token_ratio admission.
The state, the decode stretches and the results stay in calc.scheduler; only the policies differ per engine."""

from __future__ import annotations

import math

import numpy as np

SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO = 0.7 * 0.14  # 0.098 (sglang global_config.py)
SGLANG_RATIO_DECAY_STEPS = 600


def vllm_step(sim) -> None:
    """One vLLM V1 scheduling decision (decode-first; see calc.scheduler)."""
    cfg, pool = sim.cfg, sim.pool
    preempted = False
    while True:
        room = cfg.max_num_batched_tokens - sim.n_dec * cfg.decode_tokens
        if sim.n_dec and cfg.tokens_per_step != 1:  # a step per token: 1 / τ of a real step's prompt room
            room = int(room / cfg.tokens_per_step)
        chunks, budget = sim.running_chunks(room)
        if sim.b_final <= pool or sim.b_dec(sim.D) + sim.b_partial(chunks) <= pool:
            break
        sim.preempt(sim.running[-1])
        preempted = True
    held = None
    while not preempted and sim.waiting and len(sim.running) < cfg.max_num_seqs and budget > 0:
        r = sim.waiting[0]
        c = min(sim.tgt[r] - sim.hit[r], budget)
        if sim.b_final + sim.fin_blk[r] > pool:  # it may not fit: count the blocks held after this step
            if held is None:
                held = sim.b_dec(sim.D) + sim.b_partial(chunks)
            if held + sim.blk(sim.hit[r] + c) > pool:
                break
        if held is not None:
            held += sim.blk(sim.hit[r] + c)
        sim.admit(r)
        chunks[r] = c
        budget -= c
    if chunks:
        sim.prefill_step(chunks)
    else:  # nothing to admit until an event; a step that preempted admits nobody, so the next one may
        blocked = bool(sim.waiting) or len(sim.running) >= cfg.max_num_seqs or budget <= 0
        sim.decode(1 if preempted else None, arrivals_matter=not blocked)


def sglang_step(sim) -> None:
    """One SGLang scheduling decision (prefill-first, admission by new_token_ratio; see calc.scheduler)."""
    cfg, pool = sim.cfg, sim.pool
    chunks, budget = sim.running_chunks(cfg.max_num_batched_tokens)
    slack = None
    mem_blocked = False
    while sim.waiting and len(sim.running) < cfg.max_num_seqs and budget > 0:
        r = sim.waiting[0]
        if sim.fin_blk[r] > pool - sim.b_final:
            # rem = pool − held − ratio·(decoders' growth) − prefills' full size
            #     = pool − b_final + (1 − ratio)·(b_final_dec − decoders' blocks now)
            if slack is None:
                slack = (1 - sim.ratio) * (sim.b_final_dec - sim.b_dec(sim.D - 1))
            if sim.fin_blk[r] > pool - sim.b_final + slack:
                mem_blocked = True
                break
        c = min(sim.tgt[r] - sim.hit[r], budget)
        sim.admit(r)
        chunks[r] = c
        budget -= c
    if chunks:
        sim.prefill_step(chunks)
        return
    retracted = False
    while sim.n_dec > 1 and sim.b_final > pool and sim.b_dec(sim.D) + sim.b_partial() > pool:
        sim.preempt(next(r for r in reversed(sim.running) if r in sim.dec))
        sim.ratio = SGLANG_INIT_NEW_TOKEN_RATIO
        retracted = True
    full = len(sim.running) >= cfg.max_num_seqs
    k_cap = None
    if retracted:
        k_cap = 1
    elif mem_blocked and not full:
        k_cap = sglang_blocked_steps(sim, sim.fin_blk[sim.waiting[0]])
    sim.decode(k_cap, arrivals_matter=not full and not sim.waiting)


def sglang_blocked_steps(sim, need: int, window: int = 64) -> int:
    """Decode steps before the queue's head (needing `need` blocks) can be admitted, as the ratio decays:
    the first j ≥ 1 with need ≤ pool − b_final + (1 − ratio_j)·(b_final_dec − decoders' blocks after j steps),
    ratio_j = max(0.098, ratio − j·decay). The growth left only shrinks, so (1 − ratio_j)·growth now < need −
    (pool − b_final) rules steps out cheaply; the rest are checked exactly over a window (one numpy gather)."""
    k = sim.steps_to_finish()
    excess = need - (sim.pool - sim.b_final)
    growth = sim.b_final_dec - sim.b_dec(sim.D - 1)
    decay = (SGLANG_INIT_NEW_TOKEN_RATIO - SGLANG_MIN_NEW_TOKEN_RATIO) / SGLANG_RATIO_DECAY_STEPS
    if growth <= 0 or (1 - SGLANG_MIN_NEW_TOKEN_RATIO) * growth < excess:
        return k
    j0 = max(1, math.ceil((sim.ratio - 1 + excess / growth) / decay))
    if j0 >= k:
        return k
    js = np.arange(j0, min(k, j0 + window))
    a, table = sim._decoder_arrays()
    held = table[(a[:, None] + (sim.D - 1 + sim.bs - 1) + js[None, :]) // sim.bs].sum(axis=0)
    ratio = np.maximum(SGLANG_MIN_NEW_TOKEN_RATIO, sim.ratio - js * decay)
    ok = np.nonzero(need <= sim.pool - sim.b_final + (1 - ratio) * (sim.b_final_dec - held))[0]
    return int(js[ok[0]]) if ok.size else int(js[-1]) + 1
