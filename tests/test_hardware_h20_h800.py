"""The H20, H20-3e and H800 specs (hardware_specs/h20*.yaml, h800.yaml): their figures from the sourced facts of
docs/hardware-candidates.md, their derived prices flagged as such, and what a compute-starved part does to a plan."""

import pytest
from conftest import scenario

from calc.accuracy import LOW_RIDGE_FLOP_PER_BYTE
from calc.evaluate import evaluate
from calc.speed_notes import ridge_note

MIB = 2**20
GIB = 2**30


def test_capacities_follow_their_siblings_nvidia_smi_totals(catalog):
    """No PyTorch capacity line was found for these parts: each takes its sibling's gap to nvidia-smi's total.
    H100 SXM: nvidia-smi 81,559 MiB, vLLM's cudaMemGetInfo 79.19 GiB (hardware.md) → a gap of 468.4 MiB."""
    h100 = catalog.gpus["h100-sxm"]
    gap_mib = 81_559 - h100.memory_gib * GIB / MIB
    assert gap_mib == pytest.approx(468.4, abs=0.1)
    # H20: nvidia-smi 97,871 MiB → (97,871 − 468.4) / 1,024 = 95.12 GiB
    assert catalog.gpus["h20"].memory_gib == pytest.approx((97_871 - gap_mib) / 1024, abs=0.005)
    # H800: nvidia-smi 81,559 MiB, the H100 SXM's total: its capacity
    assert catalog.gpus["h800"].memory_gib == h100.memory_gib
    # H20-3e: nvidia-smi 143,771 MiB, the H200's total: its PyTorch 139.80 GiB
    assert catalog.gpus["h20-3e"].memory_gib == catalog.gpus["h200"].memory_gib == 139.80
    for gid in ("h20", "h20-3e", "h800"):
        assert "memory_gib" in catalog.gpus[gid].derived


def test_the_h800_is_an_h100_sxm_with_a_narrower_nvlink(catalog):
    """Same GH100, memory and clocks; 8 NVLink links instead of 18: 400 GB/s both ways = 200 a direction."""
    h800, h100 = catalog.gpus["h800"], catalog.gpus["h100-sxm"]
    for f in ("memory_bandwidth_gb_per_s", "bf16_tflop_per_s", "fp8_tflop_per_s", "achievable_bandwidth_fraction",
              "achievable_matmul_fraction", "tdp_w"):  # fmt: skip
        assert getattr(h800, f) == getattr(h100, f), f
    assert (h800.scaleup_link_gb_per_s, h100.scaleup_link_gb_per_s) == (200, 450)


def test_the_h20s_tensor_rate_is_a_quarter_of_what_its_sms_imply(catalog):
    """aiconfigurator: 148 dense BF16 TFLOP/s, 296 FP8; a measured 10,240³ BF16 matmul reached 142.25 (0.961)."""
    for gid in ("h20", "h20-3e"):
        g = catalog.gpus[gid]
        assert (g.bf16_tflop_per_s, g.fp8_tflop_per_s) == (148, 296)
        assert g.achievable_matmul_fraction == pytest.approx(142.25 / 148, abs=0.002)
    assert catalog.gpus["h20"].memory_bandwidth_gb_per_s == 4000
    assert catalog.gpus["h20-3e"].memory_bandwidth_gb_per_s == 4800  # the H200's HBM3e


def test_prices_are_marked_derived_with_their_arithmetic(catalog):
    """No on-demand rate was found for any of the three (gaudi3's precedent): H800 = the H100 SXM's typical rate;
    H20 = that × the HF hardware pages' MSRP ratio $14k / $30k; H20-3e = the H20's × the H200 / H100 SXM rates."""
    h100, h200 = catalog.gpus["h100-sxm"].price_per_gpu_hour, catalog.gpus["h200"].price_per_gpu_hour
    expected = {"h800": h100, "h20": h100 * 14 / 30}
    expected["h20-3e"] = expected["h20"] * h200 / h100
    for gid, price in expected.items():
        g = catalog.gpus[gid]
        assert g.price_per_gpu_hour == pytest.approx(price, abs=0.005), gid
        assert "price_per_gpu_hour" in g.derived and g.price_source.startswith("DERIVED")


def test_a_compute_starved_part_says_its_speed_figures_extrapolate(catalog):
    """Ridge = dense 16-bit FLOP/s ÷ bytes/s: H20 148e12 / 4.0e12 = 37, H20-3e 148 / 4.8 = 30.8 FLOP a byte; every
    other shipped part is at 76 (RTX 3090) or more. The note names the ridge; a plan on an H100 has none."""
    assert 148e12 / 4.0e12 == pytest.approx(37.0)
    for gid, g in catalog.gpus.items():
        ridge = g.peak_16bit_tflop_per_s * 1e3 / g.memory_bandwidth_gb_per_s
        assert (ridge_note(g) is not None) == (ridge < LOW_RIDGE_FLOP_PER_BYTE), gid
    assert {gid for gid, g in catalog.gpus.items() if ridge_note(g)} == {"h20", "h20-3e"}
    notes = evaluate(scenario(model="llama-3.1-8b", gpu="h20"), catalog).notes
    (note,) = [n for n in notes if "ridge of" in n]
    assert "a ridge of 37 FLOP a byte" in note and "measured_itl_s" in note
    assert not [n for n in evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog).notes if "ridge of" in n]


def test_no_held_out_band_is_shown_for_a_compute_starved_part(catalog):
    """The bands were measured on GPUs with ridges of 153–378 FLOP a byte: beside an H20's estimates they would claim
    an accuracy no run supports, so the plan shows why there is none (headline, tables, JSON) instead."""
    from boundary.view_bands import band_short

    h20 = evaluate(scenario(model="llama-3.1-8b", gpu="h20"), catalog)
    h100 = evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog)
    assert h20.error_bands == {} and h20.benchmark_error_bands == {}
    assert "ridge of 37 FLOP a byte" in h20.bands_withheld and h20.to_dict()["error_bands_withheld"] == h20.bands_withheld
    assert band_short(h20, "tpot") == "no held-out band"
    assert h100.bands_withheld is None and "tpot" in h100.error_bands and band_short(h100, "tpot").startswith("± ")


def test_a_long_prompt_takes_the_tensor_rate_ratio_longer_on_an_h20(catalog):
    """A prompt step of 8,192 tokens is compute-bound on both: the H20 takes about the ratio of the achievable
    matmul rates longer, 989.4 × 0.80 / (148 × 0.961) = 5.57× an H100 SXM's, less the fixed costs both pay alike."""
    ratio_rates = 989.4 * 0.80 / (148 * 0.961)
    assert ratio_rates == pytest.approx(5.57, abs=0.01)

    def prompt_step_s(gpu):
        step = evaluate(scenario(model="llama-3.1-8b", gpu=gpu, max_model_len=16384), catalog).latency.step
        return step.terms(8192, 8192 * 8192 / 2, 0, 0).total_s

    ratio = prompt_step_s("h20") / prompt_step_s("h100-sxm")
    assert 0.9 * ratio_rates < ratio <= ratio_rates


def test_tensor_parallel_all_reduces_are_slower_over_the_h800s_nvlink(catalog):
    """Same single-GPU figures, 200 instead of 450 GB/s a direction: a TP 8 prompt's all-reduces take longer, so its
    first token does too; one GPU (no all-reduce) plans identically."""

    def ttft(gpu, tp):
        return evaluate(scenario(model="llama-3.1-70b", gpu=gpu, tensor_parallel_size=tp, max_model_len=8192,
                                 input_len=4096), catalog).latency.ttft_s  # fmt: skip

    assert ttft("h800", 8) > ttft("h100-sxm", 8)
    one = dict(model="llama-3.1-8b", max_model_len=8192)
    assert evaluate(scenario(gpu="h800", **one), catalog).latency.tpot_s == evaluate(
        scenario(gpu="h100-sxm", **one), catalog).latency.tpot_s  # fmt: skip


def test_a_derived_price_is_named_an_estimate_until_the_user_prices_it(catalog):
    """Every surface reads the plan's notes; the GPU picker's label says so too. A gpu_hour_price set: no note."""
    from ui.widgets import gpu_options

    def price_notes(**kw):
        return [n for n in evaluate(scenario(model="llama-3.1-8b", **kw), catalog).notes if "is an estimate" in n]

    (note,) = price_notes(gpu="h20")
    assert "1.49 USD per GPU-hour" in note and "MSRP" in note and "set gpu_hour_price" in note
    assert price_notes(gpu="h20", gpu_hour_price=2.0) == [] and price_notes(gpu="h100-sxm") == []
    _, labels = gpu_options(catalog)
    assert labels["h800"].endswith("/h (estimate)") and not labels["h100-sxm"].endswith("(estimate)")
    # the plan's table of GPU options marks each cost priced from a derived rate
    from boundary.view_fleet import gpu_options_table

    rows = {row[0]: row[-1] for row in gpu_options_table(evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm",
                                                                            request_rate=5), catalog)).rows}  # fmt: skip
    assert rows["NVIDIA H800 SXM 80GB"].endswith("USD (estimate)")
    assert rows["NVIDIA H100 SXM 80GB (this plan's GPU)"].endswith("USD")  # the plan's own GPU's row is marked


def test_a_search_whose_cheapest_is_compute_starved_says_so(catalog):
    """Llama-3.1-8B at 1 req/s over an H20, an H100 SXM and an A100: the H20's derived 1.49 USD wins; the search
    then carries both caveats, the estimated price and the extrapolated speed. At 20 req/s an H100 wins: neither."""
    from calc.search import search

    def notes(rate):
        r = search(scenario(model="llama-3.1-8b", gpu="h100-sxm", request_rate=rate,
                            search_gpus="h20,h100-sxm,a100-80gb-sxm"), catalog)  # fmt: skip
        return r.grid.space.gpus[r.grid.gpu[r.cheapest % r.grid.size]], r.notes

    gpu, low = notes(1.0)
    assert gpu == "h20"
    assert any("ridge of 37 FLOP a byte" in n for n in low) and any("is an estimate" in n for n in low)
    gpu, high = notes(20.0)
    assert gpu != "h20" and not any("ridge of" in n for n in high)
