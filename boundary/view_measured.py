"""What a plan's measurements say (measured_itl_s, measured_prefill_s, measured_itl_p99_s, measured_running_batch):
the MBU and MFU they imply, the floor against the measured step, the prefill chunk the ITL tail implies (split from
boundary/view.py)."""

from __future__ import annotations

from boundary import fmt


def calibration_lines(r) -> list[str]:
    s, lat, md = r.scenario, r.latency, r.measured_decode
    out = []
    if lat.calibrated_mbu:
        out.append(f"measured ITL {fmt.ms(s.measured_itl_s)} → achieved MBU {fmt.pct(lat.calibrated_mbu)} at "
                   f"{fmt.mean_count(lat.decode_batch)} running")  # fmt: skip
    if md is not None and md.floor_share_of_measured:
        out.append(f"at the measured {md.batch:g} running: floor {fmt.ms(md.floor_s)} is "
                   f"{fmt.pct(md.floor_share_of_measured)} of the measured ITL {fmt.ms(md.measured_itl_s)} "
                   f"(achieved MBU {fmt.pct(md.achieved_mbu)})")  # fmt: skip
    elif md is not None:
        out.append(f"at the measured {md.batch:g} running: floor {fmt.ms(md.floor_s)} (set measured_itl_s to compare)")
    if lat.calibrated_mfu:
        out.append(f"measured prefill {fmt.ms(s.measured_prefill_s)} → achieved MFU {fmt.pct(lat.calibrated_mfu)}")
    if lat.inferred_chunk_tokens:
        out.append(f"ITL p99 − p50 → a prefill chunk of ≈ {fmt.tokens(lat.inferred_chunk_tokens)} rides the slowest steps")
    return out
