"""A measured decode step held against the floor at the batch that was actually running.

vLLM's metrics report the running batch as a time average (the seed's report: 15.39 running at a 384-token
context, ITL p50 16.47 ms), so the batch here is fractional; the floor at that batch and context is the seed's
14.37 ms, 87.2 % of the measured ITL, and bytes moved / (ITL · peak bandwidth) is the MBU achieved."""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine_cycle import decode_point
from calc.latency import LatencyResult


@dataclass(frozen=True)
class MeasuredDecode:
    batch: float
    """The measured running batch (measured_running_batch)."""
    context: float
    """Tokens per sequence: input_len + output_len / 2 (the running mean over a request's decode)."""
    floor_s: float
    estimate_s: float
    measured_itl_s: float | None
    floor_share_of_measured: float | None
    """floor / measured ITL p50: how close the engine runs to the roofline."""
    achieved_mbu: float | None
    """Bytes one step moves / (measured ITL · peak bandwidth)."""
    intensity_flop_per_byte: float
    compute_bound: bool


def measured_decode(*, batch: float, lat: LatencyResult, measured_itl_s: float | None) -> MeasuredDecode:
    t = decode_point(lat.step, batch=batch, context=lat.decode_context)
    itl = measured_itl_s
    tau = lat.step.accepted_tokens  # a measured ITL is a whole step: under speculative decoding τ per-token steps
    return MeasuredDecode(
        batch=batch,
        context=lat.decode_context,
        floor_s=t.floor_s * tau,
        estimate_s=t.total_s * tau,
        measured_itl_s=itl,
        floor_share_of_measured=t.floor_s * tau / itl if itl else None,
        achieved_mbu=t.bytes_moved * tau / (itl * lat.bandwidth_bytes_per_s) if itl else None,
        intensity_flop_per_byte=t.flop / t.bytes_moved,
        compute_bound=t.flop / lat.peak_flop_per_s > t.bytes_moved / lat.bandwidth_bytes_per_s,
    )
