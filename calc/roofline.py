"""Roofline: ridge point, arithmetic intensity, floors, and MFU/MBU (seed report, "这两个比值是什么").

ridge I* = P / B                      RTX 4090: 165.2e12 / 1.008e12 = 163.9 FLOP/byte
compute floor  t ≥ F / P              prefill of 2,048 tokens, 7e9 params, η = 0.5, P = 1e15: 57 ms
bandwidth floor t ≥ bytes / B         14e9 B at 3e12 B/s: 4.7 ms
MFU = F / (t · P), MBU = bytes / (t · B), so MFU / MBU = (F / bytes) / (P / B) = intensity / ridge
"""

from __future__ import annotations

from dataclasses import dataclass


def ridge_flop_per_byte(*, peak_flop_per_s: float, bandwidth_bytes_per_s: float) -> float:
    return peak_flop_per_s / bandwidth_bytes_per_s


def compute_time_s(*, flop: float, peak_flop_per_s: float, efficiency: float = 1.0) -> float:
    return flop / (peak_flop_per_s * efficiency)


def memory_time_s(*, bytes_moved: float, bandwidth_bytes_per_s: float, efficiency: float = 1.0) -> float:
    return bytes_moved / (bandwidth_bytes_per_s * efficiency)


def mfu(*, flop: float, time_s: float, peak_flop_per_s: float) -> float:
    return flop / (time_s * peak_flop_per_s)


def mbu(*, bytes_moved: float, time_s: float, bandwidth_bytes_per_s: float) -> float:
    return bytes_moved / (time_s * bandwidth_bytes_per_s)


def attention_crossover_tokens(*, params: float, num_layers: int, attn_width: int) -> float:
    """Prompt length where causal attention's `2 · n_layers · d · L²` equals the dense `2 · N_p · L`:
    L = N_p / (n_layers · d). 7e9 parameters, 32 layers, d = 4,096: ≈ 53,400 tokens."""
    return params / (num_layers * attn_width)


@dataclass(frozen=True)
class Phase:
    """One phase (a prefill, or a decode step) on the roofline, per GPU."""

    flop: float
    bytes_moved: float
    compute_floor_s: float
    memory_floor_s: float
    floor_s: float
    """max(compute, memory) floor: no kernel beats it."""
    estimate_s: float
    """The step-time model's estimate: the floor at achievable rates plus named fixed costs (calc.step_time)."""
    intensity_flop_per_byte: float
    compute_bound: bool
    """Intensity above the ridge point."""
    mfu_at_estimate: float
    mbu_at_estimate: float


def phase(*, flop: float, bytes_moved: float, peak_flop_per_s: float, bandwidth_bytes_per_s: float,
          floor_s: float, estimate_s: float) -> Phase:  # fmt: skip
    """A phase on the roofline: its floor (peak FLOP/s and bandwidth) and the step-time model's estimate."""
    cf = compute_time_s(flop=flop, peak_flop_per_s=peak_flop_per_s)
    mf = memory_time_s(bytes_moved=bytes_moved, bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    intensity = flop / bytes_moved if bytes_moved else float("inf")
    ridge = ridge_flop_per_byte(peak_flop_per_s=peak_flop_per_s, bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    return Phase(
        flop=flop,
        bytes_moved=bytes_moved,
        compute_floor_s=cf,
        memory_floor_s=mf,
        floor_s=floor_s,
        estimate_s=estimate_s,
        intensity_flop_per_byte=intensity,
        compute_bound=intensity > ridge,
        mfu_at_estimate=mfu(flop=flop, time_s=estimate_s, peak_flop_per_s=peak_flop_per_s),
        mbu_at_estimate=mbu(bytes_moved=bytes_moved, time_s=estimate_s, bandwidth_bytes_per_s=bandwidth_bytes_per_s),
    )
