"""What a benchmark run would print for a scenario: `vllm bench serve` (the scheduler simulation, calc.scheduler,
driven by the scenario's step-time model) and `vllm bench latency` (one static batch)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from calc.engine_cycle import idle_launch_s
from calc.front_end import engine_request_overhead_s, front_serial_s
from calc.prefix_hit import prefix_hit
from calc.scheduler import Workload, simulate
from calc.sim_engine import EngineConfig, StepFn
from calc.sim_stats import BatchLatency, SimResult

MAX_SIM_PROMPTS = 5_000  # ≥ every published run here (4,096 the most); a simulation costs up to ~80 ms per 1,000
# requests when the pool preempts: the page's benchmark at any concurrency stays under the 1 s rerun bound
MAX_CHECK_PROMPTS = 1_000  # 8 requests per client, 400 at least: the first wave, which starts together, weighs little
# Lengths drawn ±30 % around the scenario's (`--random-range-ratio 0.3`): with every length equal, a closed loop's
# clients stay in lockstep and their prompts queue behind each other in waves — the benchmark's artefact, not the
# steady state the closed forms describe (Qwen2.5-7B, RTX 4090 default space, 76 in flight: median TTFT 381 ms in
# lockstep, 106 ms with 0.3; TPOT 31.6 / 33.4 ms; 2026-12-01). The search's check and the page's varied run use it.
CHECK_RANGE_RATIO = 0.3


def engine_config(r) -> EngineConfig:
    """The engine of a Report (one data-parallel rank's): its limits, its pool (blocks as vLLM allocates them) and
    its front-end time."""
    s, mem = r.scenario, r.memory
    dp = s.data_parallel_size  # one rank's engine: the one API server's time goes to every rank's requests
    own = s.frontend_overhead_s is not None  # the scenario's own front-end time replaces the engine's
    cached = prefix_hit(s, mem)  # 0 where the engine reuses no prefix for this model
    return EngineConfig(max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens,
                        num_gpu_blocks=mem.num_gpu_blocks, block_size=mem.block_size, blocks_for=mem.blocks_per_request,
                        engine=s.engine, prefix_cached_tokens=cached,
                        request_overhead_s=r.latency.request_overhead_s if own else engine_request_overhead_s(s, r.engine),
                        request_token_s=0.0 if own else r.engine.request_token_s * dp,
                        request_serial_s=0.0 if own else front_serial_s(s, r.engine, r.model) * dp,
                        overlap_schedule=r.engine.overlap_schedule, idle_launch_s=idle_launch_s(s, r.engine),
                        busy_peers=r.latency.step.busy_peers, decode_tokens=r.latency.step.decode_tokens,
                        tokens_per_step=r.latency.step.accepted_tokens,
                        compile_s=r.latency.step.compile_s)  # fmt: skip


def serve(r, *, num_prompts: int, max_concurrency: int | None = None, request_rate: float = math.inf,
          range_ratio: float = 0.0, seed: int = 0, input_len: int | None = None,
          output_len: int | None = None, decoded_share: float = 1.0, dataset: str = "random",
          burstiness: float = 1.0) -> SimResult:  # fmt: skip
    """`vllm bench serve --dataset-name random --random-input-len I --random-output-len O --num-prompts N
    [--max-concurrency C] [--request-rate R [--burstiness B]]` against the scenario's server (decoded_share < 1: without
    --ignore-eos, requests ending at end-of-sequence so that this share of the output tokens is decoded;
    dataset "sharegpt": ShareGPT's lengths, I and O their means, calc.length_shapes)."""
    s = r.scenario
    dp = s.data_parallel_size
    share = 1.0 / dp if not max_concurrency else -(-max_concurrency // dp) / max_concurrency  # the busiest rank's
    n_rank = min(max(1, math.ceil(num_prompts * share - 1e-9)), MAX_SIM_PROMPTS)
    w = Workload(input_len=input_len or s.input_len, output_len=output_len or s.output_len, num_prompts=n_rank,
                 max_concurrency=-(-max_concurrency // dp) if max_concurrency else None,
                 request_rate=request_rate * share, range_ratio=range_ratio, seed=seed, decoded_share=decoded_share,
                 dataset=dataset, burstiness=burstiness)  # fmt: skip
    res = simulate(engine_config(r), w, r.latency.step.step_s)
    if r.latency.step.spec_tokens:  # steps played per token; a chunk streams τ of them (SimResult.tokens_per_chunk)
        res = replace(res, tokens_per_chunk=r.latency.step.accepted_tokens)
    return res if dp == 1 else all_ranks(res, min(num_prompts, round(n_rank / share)))


def all_ranks(one: SimResult, num_prompts: int) -> SimResult:
    """The server's run from its busiest data-parallel rank's (⌈C / D⌉ of the C clients and that share of the
    prompts and of the rate): the ranks are taken to run alike, so the server's requests are the rank's repeated
    (the first `num_prompts`) in the same duration, and its counts scale by num_prompts / the rank's; ITL's
    distribution is the rank's."""
    k = num_prompts / one.input_lens.size

    def tiled(a):
        return np.tile(a, math.ceil(k))[:num_prompts]

    e2e = tiled(one.e2e_s)
    peak_tok = one.peak_output_tokens_per_s * k if one.peak_output_tokens_per_s is not None else None
    peak_req = round(one.peak_concurrent_requests * k) if one.peak_concurrent_requests is not None else None
    return replace(one, input_lens=tiled(one.input_lens), output_lens=tiled(one.output_lens), ttft_s=tiled(one.ttft_s),
                   tpot_s=tiled(one.tpot_s), e2e_s=e2e, queue_s=tiled(one.queue_s), prefill_s=tiled(one.prefill_s),
                   completed=int(np.isfinite(e2e).sum()), preemptions=round(one.preemptions * k),
                   mean_running=one.mean_running * k, rejected=round(one.rejected * k),
                   peak_output_tokens_per_s=peak_tok, peak_concurrent_requests=peak_req)  # fmt: skip


def static_batch(r, *, batch_size: int, input_len: int, output_len: int) -> BatchLatency:
    """`vllm bench latency --batch-size B --input-len I --output-len O`."""
    offline = replace(r.latency.step, online=False)  # `vllm bench latency` runs the LLM class: nothing is streamed
    batch_size = -(-batch_size // r.scenario.data_parallel_size)  # one rank's share of the batch
    return batch_latency(engine_config(r), offline.step_s, batch_size=batch_size, input_len=input_len,
                         output_len=output_len)  # fmt: skip


def batch_latency(cfg: EngineConfig, step_s: StepFn, *, batch_size: int, input_len: int,
                  output_len: int) -> BatchLatency:  # fmt: skip
    """`vllm bench latency --batch-size B --input-len I --output-len O`: B prompts at t = 0 (random tokens: no
    prefix hits), prefilled within the token budget and decoded until each has O tokens; latency = last finish."""
    w = Workload(input_len=input_len, output_len=output_len, num_prompts=batch_size)
    return BatchLatency(simulate(replace(cfg, prefix_cached_tokens=0), w, step_s).duration_s)
