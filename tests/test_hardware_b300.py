"""The B300 spec (hardware_specs/b300.yaml): NVIDIA's aiconfigurator figures, a measured PyTorch capacity, and the
one tensor rate Blackwell Ultra cut."""

import pytest
from conftest import scenario

from calc.evaluate import evaluate

MIB = 2**20
GIB = 2**30


def test_capacity_is_pytorchs_below_nvidia_smis_total(catalog):
    """PyTorch reports 267.69 GiB; nvidia-smi 275,040 MiB (aiconfigurator) = 268.59 GiB: 925 MiB held by the driver,
    as the B200's 183,359 MiB against 178.36 GiB hold 718."""
    b300, b200 = catalog.gpus["b300"], catalog.gpus["b200"]
    assert b300.memory_gib == 267.69
    assert 275_040 - b300.memory_gib * GIB / MIB == pytest.approx(925, abs=1)
    assert 183_359 - b200.memory_gib * GIB / MIB == pytest.approx(718, abs=1)


def test_the_b200s_tensor_rates_with_int8_cut_and_more_memory(catalog):
    """aiconfigurator: BF16 2,250 and FP8 4,500 dense TFLOP/s (the B200's), INT8 153.5 TOPS (307 sparse / 2)."""
    b300, b200 = catalog.gpus["b300"], catalog.gpus["b200"]
    assert (b300.bf16_tflop_per_s, b300.fp8_tflop_per_s) == (b200.bf16_tflop_per_s, b200.fp8_tflop_per_s)
    assert b300.int8_tops == 307 / 2 and b200.int8_tops == 4500
    assert b300.memory_gib / b200.memory_gib == pytest.approx(1.50, abs=0.01)
    assert b300.host_link_gb_per_s == 256 / 2  # PCIe Gen6


def test_more_memory_holds_more_kv_for_the_same_weights(catalog):
    """DeepSeek-R1 at TP 8: the same weights per GPU on both, so the B300's extra (267.69 − 178.36) × 0.9 GiB a GPU
    all goes to the KV cache."""
    def kv_gib(gpu):
        return evaluate(scenario(model="deepseek-r1", gpu=gpu, tensor_parallel_size=8), catalog).memory.kv_cache_memory_bytes / GIB

    assert kv_gib("b300") - kv_gib("b200") == pytest.approx((267.69 - 178.36) * 0.9, abs=0.05)
