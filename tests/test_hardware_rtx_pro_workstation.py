"""The RTX PRO 6000 Blackwell Workstation Edition (hardware_specs/rtx-pro-6000-blackwell-workstation.yaml): its
whitepaper figures beside the Server Edition's, and what its faster memory does to a weight-bound decode step."""

import pytest
from conftest import scenario

from calc.evaluate import evaluate


def test_the_workstation_card_has_the_whitepaper_figures(catalog):
    ws, se = catalog.gpus["rtx-pro-6000-blackwell-workstation"], catalog.gpus["rtx-pro-6000-blackwell"]
    assert (ws.memory_bandwidth_gb_per_s, ws.tdp_w) == (1792, 600)  # [rtxpro-wp], [aic], [fx3d]
    assert (ws.bf16_tflop_per_s, ws.fp8_tflop_per_s) == (503.8, 1007.6)  # Appendix A, dense, at 2,617 MHz
    # the Server Edition's 480 is the same table at its FP32 120 TFLOPS: 503.8 × 120 / 126.0 = 479.8
    assert 503.8 * 120 / 126.0 == pytest.approx(se.bf16_tflop_per_s, abs=0.5)
    assert ws.memory_gib == se.memory_gib and "memory_gib" in ws.derived  # nvidia-smi 97,887 MiB on both
    assert ws.scaleup_link_gb_per_s is None and ws.achievable_bandwidth_fraction == 0.88  # no NVLink; [fx3d] 88 %


def test_a_weight_bound_decode_step_is_faster_by_the_bandwidth_ratio(catalog):
    """Llama-3.1-8B, one request: the step is its 16 GB of weights read, so Server / Workstation ≈ 1,792 / 1,597 =
    1.122 on the bytes (the fixed per-step costs are the same on both, so the whole step's ratio is a little less)."""
    def tpot(gpu):
        return evaluate(scenario(model="llama-3.1-8b", gpu=gpu, concurrency=1, input_len=128, output_len=128),
                        catalog).latency.tpot_s  # fmt: skip

    ratio = tpot("rtx-pro-6000-blackwell") / tpot("rtx-pro-6000-blackwell-workstation")
    assert 1.0 < ratio < 1792 / 1597 + 1e-9 and ratio == pytest.approx(1792 / 1597, abs=0.03)
