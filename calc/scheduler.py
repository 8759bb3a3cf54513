"""Continuous batching, simulated: what `vllm bench serve` prints for a given step-time model (issue 11, item 2).

An event-compressed discrete-event simulation of one engine (notes/vllm_hybrid.md §8.3); each engine's scheduling
decision is in calc.sched_policies:
- vllm (V1): decode-first. Each step every decoding request gets 1 token, running chunked prefills continue, then
  waiting requests are admitted FCFS while running < max_num_seqs, the step's token budget max_num_batched_tokens
  has room (the last prompt is chunked) and the pool has the blocks it will hold after its chunk. A decode that finds
  no free block preempts the newest running request (RECOMPUTE: blocks freed, front of the queue, prompt plus the
  tokens already generated prefilled again); a step that preempted admits nobody.
- sglang: prefill-first. A step that can form a prefill batch runs only prefill (up to max_num_batched_tokens =
  chunked_prefill_size). A request is admitted when prompt + output blocks ≤ free − new_token_ratio · (what running
  requests will still grow); new_token_ratio starts at 0.7, falls linearly to 0.098 over 600 decode steps and resets
  to 0.7 when a decode runs out of memory and retracts the newest request (as a preemption). Its overlap schedule
  (EngineConfig.overlap_schedule) decides each step when the one before it begins, before reading that one's tokens:
  a decision sees the arrivals up to the start of the step in flight, and requests that finished in it ride one more
  decode step (their tokens dropped) unless a waiting prompt was prefilled instead; a prompt step with no step in
  flight also waits for the scheduler to form and launch it (EngineConfig.idle_launch_s).

Time is compressed (calc.sim_engine): between events the decoding set is constant, so k decode steps are one
stretch whose time is summed in closed form.
Each decoding request keeps a = tokens − D against a global decode-step counter D, so finishes, contexts
(Σ a + n·D) and block counts need no per-step work. Block counts are exact: blocks_for(t) is read as a function of
⌈t / block_size⌉ (true for vLLM's full, sliding, chunked and state groups), the pool is checked per step only when
the running requests' blocks at full length exceed it, and then the step that would overflow is found by bisection.
A request's first token comes at the end of the step that completes its prefill; each later one at the end of each
decode step it takes part in."""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import replace

import numpy as np

from calc.sched_policies import (
    SGLANG_INIT_NEW_TOKEN_RATIO,
    SGLANG_MIN_NEW_TOKEN_RATIO,
    SGLANG_RATIO_DECAY_STEPS,
    sglang_step,
    vllm_step,
)
from calc.sim_blocks import BlockBook
from calc.sim_engine import MAX_SIM_ITERATIONS, MAX_SIM_WORK, EngineConfig, StepFn, steps_to_cover, stretch_s
from calc.sim_lockstep import Lockstep
from calc.sim_stats import SimResult, Workload, sim_result, workload_arrays


class _Sim(BlockBook):
    """Mutable state of one run (private; simulate() is the pure entry point)."""

    def __init__(self, cfg: EngineConfig, w: Workload, step_s: StepFn) -> None:
        self.cfg, self.step_s, self.vllm = cfg, step_s, cfg.engine == "vllm"
        p, o, ready = workload_arrays(w)
        self.prompt, self.out, self.ready = p.tolist(), o.tolist(), ready.tolist()
        n = self.n = len(self.prompt)
        self.bs, self.pool, self._memo = cfg.block_size, cfg.num_gpu_blocks, {}
        # the last prompt token is always computed (vLLM needs its logits)
        self.hit = [0] + [min(cfg.prefix_cached_tokens, x - 1) for x in self.prompt[1:]]
        self.fin_blk = [self.blk(x + y - 1) for x, y in zip(self.prompt, self.out, strict=True)]
        nan = math.nan
        self.send, self.admitted, self.first, self.fin = [nan] * n, [nan] * n, [nan] * n, [nan] * n
        self.pos, self.tgt, self.gen, self.ver = [0] * n, list(self.prompt), [0] * n, [0] * n
        self.last_emit = [nan] * n
        self.waiting: deque[int] = deque()
        self.running: list[int] = []  # admission order; the newest is preempted first
        self.partial: list[int] = []  # running requests still in prefill, in running order
        self.dec: dict[int, int] = {}  # decoding request → a (tokens it holds after step D = a + D)
        self.fresh: dict[int, float] = {}  # decoders that have not decoded since their prefill emitted → emit time
        self.heap: list[tuple[int, int, int]] = []  # (finish D, request, version)
        self.n_dec = self.sum_a = self.D = self.b_final = self.b_final_dec = 0
        self.t = self.t_last_dec = self.busy = 0.0
        self.ratio = SGLANG_INIT_NEW_TOKEN_RATIO
        self.slots = [0.0] * w.max_concurrency if w.max_concurrency else None
        self.nxt = self.done = self.preemptions = self.steps = self.rejected = 0
        self.lag = cfg.overlap_schedule and not self.vllm
        self.ghosts = self.ghost_ctx = 0  # requests that finished at the last step and ride in the next (overlap)
        self.seen = 0.0  # overlap: the scheduler decided this step when the last one began, seeing arrivals until then
        self.idle = self.lag  # overlap: no step in flight, so the next batch is formed and launched with the GPU idle
        self.fe_free = -math.inf  # when the front-end finishes the request it is working on
        self.lockstep = Lockstep(cfg.busy_peers, float(np.mean(o)))  # data-parallel peers' prompt steps (sim_lockstep)
        self.compiled: set[int] = set()  # prompt-token counts whose specialised kernel is built (EngineConfig.compile_s)
        self.seg: list[list[float]] = [[], [], [], [], []]  # lo, hi, steps, weight, sum
        # every decoder's a, in no particular order (b_dec sums over them): a slot each, the last moved into a freed one
        self._a_buf, self._a_who, self._a_at = np.zeros(n, np.int64), [0] * n, {}
        self._h_np: np.ndarray | None = None

    def _unrun(self, r: int) -> None:
        """Take r out of the running list; the newest (a preemption's victim) without scanning the list."""
        if self.running[-1] == r:
            self.running.pop()
        else:
            self.running.remove(r)

    # --- arrivals and bookkeeping ---------------------------------------------------------------------------
    def sent_at(self) -> float:
        """When the next request leaves its client: ready, and (closed loop) a client free."""
        if self.nxt >= self.n:
            return math.inf
        if self.slots is None:
            return self.ready[self.nxt]
        return max(self.ready[self.nxt], self.slots[0]) if self.slots else math.inf

    def next_send(self) -> float:
        """When the next request reaches the scheduler: after its turn at the front end's CPU (one request at a
        time: request_serial_s, then request_token_s per prompt token) and the front-end's latency."""
        sent = self.sent_at()
        if sent == math.inf:
            return math.inf
        return (max(sent, self.fe_free) + self.cfg.request_overhead_s + self.cfg.request_serial_s
                + self.cfg.request_token_s * self.prompt[self.nxt])

    def pull(self) -> None:
        horizon = self.seen if self.lag else self.t
        while (s := self.next_send()) <= horizon:
            r, sent = self.nxt, self.sent_at()
            self.nxt += 1
            if self.slots is not None:
                heapq.heappop(self.slots)
            self.send[r], self.fe_free = sent, s - self.cfg.request_overhead_s  # busy only while it computes
            if self.fin_blk[r] > self.pool:  # never fits, even alone: not completed (vLLM rejects it)
                self.rejected += 1
                self.close(r, s, completed=False)
            else:
                self.waiting.append(r)

    def close(self, r: int, t: float, *, completed: bool = True) -> None:
        if completed:
            self.fin[r] = t
        self.done += 1
        if self.slots is not None:
            heapq.heappush(self.slots, t)

    def admit(self, r: int) -> None:
        self.waiting.popleft()
        self.running.append(r)
        self.partial.append(r)
        self.pos[r] = self.hit[r]
        self.b_final += self.fin_blk[r]
        if math.isnan(self.admitted[r]):
            self.admitted[r] = self.t

    def add_itl(self, lo: float, hi: float, steps: int, weight: int, total: float) -> None:
        for col, v in zip(self.seg, (lo, hi, steps, weight, total), strict=True):
            col.append(v)

    def emit_prefill(self, r: int, t: float) -> None:
        """Prefill of r completed at t: its next token; then it decodes from step D on (or is done)."""
        self.partial.remove(r)
        if self.gen[r] == 0:
            self.first[r] = t
        else:
            gap = t - self.last_emit[r]
            self.add_itl(gap, gap, 1, 1, gap)
        g0 = self.gen[r] + 1
        if g0 >= self.out[r]:
            self._unrun(r)
            self.b_final -= self.fin_blk[r]
            self.close(r, t)
            return
        a = self.tgt[r] + 1 - self.D  # context at step D = prompt + g0 (the fed token included)
        self.dec[r] = a
        self._a_add(r, a)
        self.sum_a += a
        self.n_dec += 1
        self.b_final_dec += self.fin_blk[r]
        self.fresh[r] = self.last_emit[r] = t
        heapq.heappush(self.heap, (self.D + self.out[r] - g0, r, self.ver[r]))

    def preempt(self, r: int) -> None:
        """RECOMPUTE: free r's blocks, put it at the front of the queue, prefill prompt + generated again."""
        self._unrun(r)
        self.b_final -= self.fin_blk[r]
        if r in self.dec:
            a = self.dec.pop(r)
            self._a_drop(r)
            self.sum_a -= a
            self.n_dec -= 1
            self.b_final_dec -= self.fin_blk[r]
            self.gen[r] = a + self.D - self.prompt[r]
            self.tgt[r] = self.prompt[r] + self.gen[r]
            self.ver[r] += 1
            self.last_emit[r] = self.fresh.pop(r, self.t_last_dec)
        else:
            self.partial.remove(r)
        self.pos[r] = 0
        self.waiting.appendleft(r)
        self.preemptions += 1

    # --- steps ----------------------------------------------------------------------------------------------
    def prefill_step(self, chunks: dict[int, int]) -> None:
        """One step with these prefill chunks (request → tokens), plus every decoder under vLLM."""
        n = self.n_dec if self.vllm else 0
        tokens = pairs = 0
        for r, c in chunks.items():
            o = self.pos[r]
            tokens += c
            pairs += c * o + c * (c + 1) // 2
        dt = self.step_s(float(tokens), float(pairs), n, float(self.sum_a + n * self.D) if n else 0.0, len(chunks))
        if self.cfg.compile_s:  # a kernel specialised on the token count: compiled once per count
            dt -= self.cfg.compile_s if tokens in self.compiled else 0.0
            self.compiled.add(tokens)
        dt += self.cfg.idle_launch_s if self.idle else 0.0  # no step in flight hides the scheduler's work on it
        self.idle = False
        self.lockstep.prompt_step(dt)
        self.busy += len(self.running) * dt
        self.seen = self.t
        self.t += dt
        self.steps += 1
        if self.vllm:
            if n:
                self.decoded_first(self.t, n)
            self.D += 1
            self.finish_due()
        for r, c in chunks.items():
            self.pos[r] += c
            if self.pos[r] == self.tgt[r]:
                self.emit_prefill(r, self.t)

    def decoded_first(self, t_end: float, n: int) -> None:
        """ITL of a decode step ending at t_end: the gap since each decoder's previous token."""
        gap = t_end - self.t_last_dec
        n_old = n - len(self.fresh)
        for e in self.fresh.values():
            g = t_end - e
            if g == gap:
                n_old += 1
            else:
                self.add_itl(g, g, 1, 1, g)
        if n_old:
            self.add_itl(gap, gap, 1, n_old, gap)
        self.fresh.clear()
        self.t_last_dec = t_end

    def finish_due(self) -> None:
        heap = self.heap
        while heap and heap[0][0] <= self.D:
            _, r, v = heapq.heappop(heap)
            if v != self.ver[r]:
                continue
            a = self.dec.pop(r)
            self._a_drop(r)
            self.sum_a -= a
            self.n_dec -= 1
            self.b_final -= self.fin_blk[r]
            self.b_final_dec -= self.fin_blk[r]
            self._unrun(r)
            self.close(r, self.t)
            if self.lag:
                self.ghosts += 1
                self.ghost_ctx += a + self.D

    def overflow_step(self, k: int) -> int:
        """Stretch length before the pool overflows: the first j in [1, k) with decoders' blocks after step D + j
        above what prefills leave free, by bisection (blocks never shrink while the set is constant)."""
        room = self.pool - self.b_partial()
        if self.b_dec(self.D + k - 1) <= room:
            return k
        lo, hi = 0, k - 1  # step D + lo fits (checked by the caller), D + hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.b_dec(self.D + mid) <= room:
                lo = mid
            else:
                hi = mid
        return hi

    def ghost_step(self) -> None:
        """Under the overlap schedule the step after some requests' last tokens was launched with them in it: one
        decode step of every decoder plus those (their tokens dropped); alone, the engine is busy with them only."""
        g, gc = self.ghosts, self.ghost_ctx
        self.ghosts = self.ghost_ctx = 0
        if self.n_dec:
            self.decode(1, arrivals_matter=False, extra=(g, gc))
            return
        self.seen = self.t
        self.t += self.step_s(0.0, 0.0, g, float(gc))
        self.steps += 1
        self.idle = True  # the scheduler waited for this step's tokens; the next batch starts from an idle GPU

    def decode(self, k_cap: int | None, arrivals_matter: bool, extra: tuple[int, int] = (0, 0)) -> None:
        """k identical decode steps of all decoders, ending at the first event (step D already fits the pool);
        `extra`: (requests, their context) that ride in a one-step stretch without emitting (ghost_step)."""
        n = self.n_dec
        if not n:
            return
        self.idle = False
        k = self.steps_to_finish()
        if k_cap is not None:
            k = min(k, k_cap)
        if k > 1 and self.b_final > self.pool:
            k = self.overflow_step(k)
        step, c0 = self.step_s, float(self.sum_a + n * self.D)
        if self.lockstep.peers:  # a data-parallel rank waits for its peers' prompt steps
            left = self.nxt < self.n or bool(self.waiting) or bool(self.partial)
            step = self.lockstep.step_fn(step, prompts_left=left, mixed=self.vllm)
        f0 = step(0.0, 0.0, n + extra[0], c0 + extra[1]) if extra[0] else step(0.0, 0.0, n, c0)
        fe = step(0.0, 0.0, n, c0 + n * (k - 1)) if k > 1 else f0
        if k > 1 and arrivals_matter and (gap := self.next_send() - self.t) < math.inf:
            # overlap: an arrival is first seen when the step after the one it arrives in is already decided
            k2 = 1 if gap <= 0 else steps_to_cover(gap, f0, (fe - f0) / (k - 1), k) + self.lag
            if k2 < k:
                k = k2
                fe = step(0.0, 0.0, n, c0 + n * (k - 1)) if k > 1 else f0
        total = stretch_s(step, n, c0, k, f0, fe)
        self.decoded_first(self.t + f0, n)
        if k > 1:
            self.add_itl(f0 + (fe - f0) / (k - 1), fe, k - 1, n, total - f0)
        self.busy += len(self.running) * total
        self.seen = self.t + total - fe
        self.t += total
        self.t_last_dec = self.t
        self.D += k
        self.steps += k
        self.lockstep.decode_steps(k)
        if not self.vllm:
            decay = (SGLANG_INIT_NEW_TOKEN_RATIO - SGLANG_MIN_NEW_TOKEN_RATIO) / SGLANG_RATIO_DECAY_STEPS
            self.ratio = max(SGLANG_MIN_NEW_TOKEN_RATIO, self.ratio - k * decay)
        self.finish_due()

    def running_chunks(self, budget: int) -> tuple[dict[int, int], int]:
        chunks: dict[int, int] = {}
        for r in self.partial:
            c = min(self.tgt[r] - self.pos[r], budget)
            if c > 0:
                chunks[r] = c
                budget -= c
        return chunks, budget

    def steps_to_finish(self) -> int:
        """Decode steps until the first decoder emits its last token."""
        heap = self.heap
        while heap[0][2] != self.ver[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][0] - self.D

    def run(self) -> SimResult:
        iterations = work = 0
        while self.done < self.n:
            iterations += 1
            work += len(self.running)
            # cost bounds: 1-token budgets and long prompts take a step a chunk; thousands running, work a step each
            if iterations > MAX_SIM_ITERATIONS or work > MAX_SIM_WORK:
                return replace(self.result(), stopped_early=True)
            self.pull()
            if self.ghosts and not self.waiting:  # a waiting prefill would have been launched instead (prefill-first)
                self.ghost_step()
                continue
            self.ghosts = self.ghost_ctx = 0
            if not self.running and not self.waiting:
                self.idle = self.lag
                if self.lag and self.seen < self.t:  # overlap, idle: the scheduler sees what arrived in the last step
                    self.seen = self.t
                    continue
                self.t = self.seen = max(self.t, self.next_send())
                continue
            vllm_step(self) if self.vllm else sglang_step(self)
        return self.result()

    def result(self) -> SimResult:
        return sim_result(self.prompt, self.out, send=self.send, admitted=self.admitted, first=self.first,
                          fin=self.fin, seg=self.seg, preemptions=self.preemptions, busy=self.busy, steps=self.steps,
                          rejected=self.rejected)


def simulate(cfg: EngineConfig, workload: Workload, step_s: StepFn) -> SimResult:
    """Run the workload through the engine; pure (same inputs, same result)."""
    return _Sim(cfg, workload, step_s).run()
