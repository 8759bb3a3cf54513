"""The A100 80GB PCIe spec (hardware_specs/a100-80gb-pcie.yaml): its datasheet figures (shared/reference/hardware.md
table 1a), the bridged pair, and what its slower memory does to a weight-bound decode step beside the SXM4."""

import pytest
from conftest import scenario

from calc.evaluate import evaluate


def test_the_pcie_card_has_the_datasheet_figures(catalog):
    g, sxm = catalog.gpus["a100-80gb-pcie"], catalog.gpus["a100-80gb-sxm"]
    assert (g.memory_bandwidth_gb_per_s, g.tdp_w, g.bf16_tflop_per_s) == (1935, 300, 312)  # hardware.md table 1a
    assert g.fp8_tflop_per_s is None and g.arch == "ampere"  # no FP8 on Ampere
    assert g.memory_gib == sxm.memory_gib and "memory_gib" in g.derived  # the same 81,920 MiB total
    assert g.scaleup_link_gpus == 2 and g.host_link_gb_per_s == 32  # a bridge joins a pair; PCIe Gen4 x16 otherwise
    assert g.price_per_gpu_hour == 1.35  # aihardwareindex.com, Dec 2025 (hardware.md §5)


def test_a_weight_bound_decode_step_is_slower_by_the_bandwidth_ratio(catalog):
    """Llama-3.1-8B, one request: the step is its 16 GB of weights read, so PCIe / SXM4 ≈ 2,039 / 1,935 = 1.054 on
    the bytes (the fixed per-step costs are the same on both, so the whole step's ratio is a little less)."""
    def tpot(gpu):
        return evaluate(scenario(model="llama-3.1-8b", gpu=gpu, concurrency=1, input_len=128, output_len=128),
                        catalog).latency.tpot_s  # fmt: skip

    ratio = tpot("a100-80gb-pcie") / tpot("a100-80gb-sxm")
    assert 1.0 < ratio < 2039 / 1935 + 1e-9 and ratio == pytest.approx(2039 / 1935, abs=0.02)


def test_a_pair_beyond_its_bridge_crosses_pcie(catalog):
    """Four cards at TP 4: the bridge joins two, so the ring crosses PCIe (the plan says so)."""
    r = evaluate(scenario(model="llama-3.1-70b", gpu="a100-80gb-pcie", tensor_parallel_size=4), catalog)
    assert any("spans more cards than one NVLink bridge joins (2)" in n for n in r.notes)
