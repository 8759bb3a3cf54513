"""Latency: floors and estimates side by side for prefill, a decode step, TTFT, TPOT and end-to-end.

    TTFT = queue + prefill (+ the decode steps its chunks ride on) + front-end
    E2E  = TTFT + (N_out − 1) · TPOT            0.350 s + 199 × 0.025 s = 5.325 s (DESIGN.md)
    a step carrying a prefill chunk of c tokens ≈ decode step + c · FLOP/token / P_eff
                                               20.26 ms + 512 × 13.05 GFLOP / 146.3 TFLOP/s ≈ 66 ms (seed report)
Per GPU: each tensor-parallel rank does 1/tp of the matmuls and streams 1/tp of the weights, then two all-reduces
per layer cross the scale-up link (PCIe when the card has none). Pipeline stages run one after another for a
single token, so PP adds no speed to one request's latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from calc.kv_cache import kv_bytes_per_token_expr
from calc.pool import PoolResult
from calc.roofline import Phase, phase, ridge_flop_per_byte
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.work import (
    attention_flop_per_context_token,
    block_flop_per_token,
    decode_step_flop,
    kv_read_bytes,
    logits_flop,
    prefill_flop,
    streamed_weight_bytes,
)

READER_TOKENS_PER_S = (4.5, 10.0)  # 3–4 words/s × 1.5–2.5 tokens/word (DESIGN.md)
ALLREDUCE_LATENCY_S = {"scaleup": 8e-6, "pcie": 25e-6}  # per all-reduce launch + sync (assumed, order of magnitude)


def allreduce_s(*, message_bytes: float, tp: int, link_bytes_per_s: float, over_pcie: bool) -> float:
    """Ring all-reduce: 2 · (tp − 1)/tp · message / link, plus a fixed latency."""
    if tp == 1:
        return 0.0
    alpha = ALLREDUCE_LATENCY_S["pcie" if over_pcie else "scaleup"]
    return 2 * (tp - 1) / tp * message_bytes / link_bytes_per_s + alpha


def e2e_s(*, ttft_s: float, tpot_s: float, output_len: int) -> float:
    return ttft_s + (output_len - 1) * tpot_s


def chunk_step_s(
    *, decode_step_s: float, chunk_tokens: int, flop_per_token: float, effective_flop_per_s: float
) -> float:
    return decode_step_s + chunk_tokens * flop_per_token / effective_flop_per_s


def chunk_from_itl(*, itl_p50_s: float, itl_p99_s: float, effective_flop_per_s: float, flop_per_token: float) -> float:
    """Inverse of chunk_step_s: the prefill chunk riding on the slowest steps [tokens]."""
    return (itl_p99_s - itl_p50_s) * effective_flop_per_s / flop_per_token


@dataclass(frozen=True)
class LatencyResult:
    compute_dtype: str
    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    ridge_flop_per_byte: float
    block_flop_per_token: float
    attention_flop_per_context_token: float
    logits_flop: float
    prefill: Phase
    decode: Phase
    decode_batch: int
    decode_context: float
    kv_written_bytes_per_token: float
    tp_allreduce_prefill_s: float
    tp_allreduce_decode_step_s: float
    chunk_tokens: int
    prefill_steps: int
    chunk_step_s: float
    """Duration of a decode step that also carries a full prefill chunk: the ITL spike."""
    chunk_riding_s: float
    """Decode steps of the running batch that the new prompt's chunks ride on (part of TTFT)."""
    ttft_s: float
    itl_s: float
    """A plain decode step: the typical inter-token latency (ITL p50)."""
    tpot_s: float
    """Mean time per output token: the decode step plus the prefill work of the requests that arrive meanwhile."""
    e2e_s: float
    stream_tokens_per_s: float
    average_tokens_per_s: float
    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    kv_transfer_s: float
    kv_transfer_link_bytes_per_s: float
    calibrated_mbu: float | None
    calibrated_mfu: float | None
    inferred_chunk_tokens: float | None

    @property
    def prefill_floor_s(self) -> float:
        """Roofline floor of one prompt's prefill: max(FLOP / P, bytes / B) + TP all-reduces."""
        return self.prefill.floor_s

    @property
    def prefill_s(self) -> float:
        return self.prefill.estimate_s

    @property
    def decode_step_floor_s(self) -> float:
        """Roofline floor of one decode step of the running batch: max(bytes / B, FLOP / P) + TP all-reduces."""
        return self.decode.floor_s

    @property
    def decode_step_s(self) -> float:
        return self.decode.estimate_s


def effective_peaks(s: Scenario, g: GPUSpec, compute_dtype: str) -> tuple[float, float]:
    peak = g.peak_flop_per_s(compute_dtype)
    return peak, g.memory_bandwidth_bytes_per_s


def decode_phase(s: Scenario, m: ModelSpec, g: GPUSpec, mem: PoolResult, *, batch: float, context: float) -> Phase:
    """One decode step of `batch` sequences at `context` tokens, per GPU."""
    tp = s.tensor_parallel_size
    peak, bw = effective_peaks(s, g, mem.weight_format.compute_dtype)
    kv_gpu = kv_bytes_per_token_expr(m, None, kv_bytes_per_element=mem.kv_bytes_per_element, tp=tp).value
    bytes_gpu = streamed_weight_bytes(m, mem.params, mem.weight_format, tokens=batch) / tp + kv_read_bytes(
        m, kv_bytes_per_token_all_gpus=kv_gpu, batch=batch, context=context
    )
    flop_gpu = decode_step_flop(m, mem.params, batch=batch, context=context) / tp
    comm = 2 * m.num_hidden_layers * allreduce_s(
        message_bytes=batch * m.hidden_size * 2, tp=tp, link_bytes_per_s=g.tp_link_bytes_per_s,
        over_pcie=g.scaleup_link_gb_per_s is None,
    )  # fmt: skip
    return phase(flop=flop_gpu, bytes_moved=bytes_gpu, peak_flop_per_s=peak, bandwidth_bytes_per_s=bw,
                 mfu_eff=s.mfu, mbu_eff=s.mbu, extra_s=comm)  # fmt: skip


def latency(s: Scenario, m: ModelSpec, g: GPUSpec, mem: PoolResult) -> LatencyResult:
    tp, p, fmt = s.tensor_parallel_size, mem.params, mem.weight_format
    peak, bw = effective_peaks(s, g, fmt.compute_dtype)
    kv_gpu = kv_bytes_per_token_expr(m, None, kv_bytes_per_element=mem.kv_bytes_per_element, tp=tp).value
    L_in, N_out = s.input_len, s.output_len

    # prefill of one prompt, per GPU
    pre_comm = 2 * m.num_hidden_layers * allreduce_s(
        message_bytes=L_in * m.hidden_size * 2, tp=tp, link_bytes_per_s=g.tp_link_bytes_per_s,
        over_pcie=g.scaleup_link_gb_per_s is None,
    )  # fmt: skip
    pre = phase(
        flop=prefill_flop(m, p, L_in) / tp,
        bytes_moved=streamed_weight_bytes(m, p, fmt, tokens=L_in) / tp + L_in * kv_gpu,
        peak_flop_per_s=peak, bandwidth_bytes_per_s=bw, mfu_eff=s.mfu, mbu_eff=s.mbu, extra_s=pre_comm,
    )  # fmt: skip

    # decode: the running batch at its average context (prompt plus half the output)
    batch = max(1, min(s.concurrency, s.max_num_seqs))
    context = L_in + N_out / 2
    dec = decode_phase(s, m, g, mem, batch=batch, context=context)

    # chunked prefill: each step carries the running decodes plus one chunk of the new prompt
    chunk = max(1, s.max_num_batched_tokens - (batch - 1))
    steps = ceil(L_in / chunk)
    eff_flop = peak * s.mfu
    spike = chunk_step_s(decode_step_s=dec.estimate_s, chunk_tokens=min(chunk, L_in),
                         flop_per_token=block_flop_per_token(p) / tp, effective_flop_per_s=eff_flop)  # fmt: skip
    riding = steps * dec.estimate_s if batch > 1 else 0.0
    ttft = s.queue_s + pre.estimate_s + riding + s.frontend_overhead_s
    # while one request decodes N_out tokens, about `batch` others arrive and prefill in the same steps
    tpot = dec.estimate_s + (batch - 1) * pre.estimate_s / N_out if N_out > 1 else dec.estimate_s
    total = e2e_s(ttft_s=ttft, tpot_s=tpot, output_len=N_out)
    rps = batch / total  # Little's law: requests in flight / time in system

    link = (s.kv_transfer_gb_per_s * 1e9) if s.kv_transfer_gb_per_s else g.tp_link_bytes_per_s
    cal_mbu = (dec.bytes_moved / (s.measured_itl_s * bw)) if s.measured_itl_s else None
    cal_mfu = (pre.flop / (s.measured_prefill_s * peak)) if s.measured_prefill_s else None
    inferred = None
    if s.measured_itl_p99_s and s.measured_itl_s:
        inferred = chunk_from_itl(itl_p50_s=s.measured_itl_s, itl_p99_s=s.measured_itl_p99_s,
                                  effective_flop_per_s=eff_flop, flop_per_token=block_flop_per_token(p) / tp)  # fmt: skip
    return LatencyResult(
        compute_dtype=fmt.compute_dtype,
        peak_flop_per_s=peak,
        bandwidth_bytes_per_s=bw,
        ridge_flop_per_byte=ridge_flop_per_byte(peak_flop_per_s=peak, bandwidth_bytes_per_s=bw),
        block_flop_per_token=block_flop_per_token(p),
        attention_flop_per_context_token=attention_flop_per_context_token(m),
        logits_flop=logits_flop(p),
        prefill=pre,
        decode=dec,
        decode_batch=batch,
        decode_context=context,
        kv_written_bytes_per_token=mem.kv_bytes_per_token,
        tp_allreduce_prefill_s=pre_comm,
        tp_allreduce_decode_step_s=dec.floor_s - max(dec.compute_floor_s, dec.memory_floor_s),
        chunk_tokens=chunk,
        prefill_steps=steps,
        chunk_step_s=spike,
        chunk_riding_s=riding,
        ttft_s=ttft,
        itl_s=dec.estimate_s,
        tpot_s=tpot,
        e2e_s=total,
        stream_tokens_per_s=1 / tpot,
        average_tokens_per_s=N_out / total,
        requests_per_s=rps,
        output_tokens_per_s=rps * N_out,
        total_tokens_per_s=rps * (L_in + N_out),
        kv_transfer_s=L_in * kv_gpu / link,
        kv_transfer_link_bytes_per_s=link,
        calibrated_mbu=cal_mbu,
        calibrated_mfu=cal_mfu,
        inferred_chunk_tokens=inferred,
    )
