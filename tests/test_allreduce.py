"""Tensor-parallel all-reduces: over NVLink, past a bridged pair, over PCIe (a pair's own latency, decode-size
messages at the bus's slow rate) and between GeForce cards without peer-to-peer (calc.step_inputs.allreduce_link)."""

import pytest
from conftest import scenario
from test_latency import lat_of, setup

from calc.pool import size_pool
from calc.resolve import override_gpu
from calc.step_inputs import step_model


def test_tp_on_pcie_pays_more_communication_than_nvlink(catalog):
    _, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="l40s", tensor_parallel_size=2)
    pcie = lat_of(catalog, scenario(model="llama-3.1-70b", gpu="l40s", tensor_parallel_size=2), m, g, mem)
    s8 = scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=8)
    nv = lat_of(catalog, s8, m, catalog.gpus["h100-sxm"], size_pool(s8, m, catalog.gpus["h100-sxm"]))
    assert pcie.decode_terms.allreduce_s > nv.decode_terms.allreduce_s > 0


def test_a_bridged_pair_ends_at_two_gpus_larger_groups_cross_pcie(catalog):
    """H100 PCIe cards are NVLink-bridged in pairs (hardware.md table 1a): at TP 2 an all-reduce runs at the bridge's
    300 GB/s, at TP 4 its ring crosses PCIe (64 GB/s). Llama-3.1-70B (hidden 8,192, 80 layers), 4,096 prefill tokens,
    45 µs a call: 2 all-reduces a layer of 2·(tp−1)/tp · 4,096 · 8,192 · 2 bytes each."""
    def allreduce_s(tp: int) -> float:
        s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="h100-pcie", tensor_parallel_size=tp)
        return step_model(s, m, g, mem, catalog.engines["vllm"]).terms(4096, 0, 0, 0).allreduce_s

    tokens_bytes = 4096 * 8192 * 2
    assert allreduce_s(2) == pytest.approx(2 * 80 * (45e-6 + 2 * (1 / 2) * tokens_bytes / 300e9), rel=1e-9)
    # across PCIe the first MiB of each call moves at the engine's 12 GB/s (engine_specs/vllm.yaml), the rest at 64
    pcie_first_mib = 2**20 * (1 / 12e9 - 1 / 64e9)
    assert allreduce_s(4) == pytest.approx(2 * 80 * (45e-6 + 2 * (3 / 4) * tokens_bytes / 64e9 + pcie_first_mib), rel=1e-9)
    # a link the scenario states joins the whole group
    s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="h100-pcie", tensor_parallel_size=4,
                         scaleup_link_gb_per_s=300)  # fmt: skip
    g = override_gpu(s, g, "bf16")
    got = step_model(s, m, g, mem, catalog.engines["vllm"]).terms(4096, 0, 0, 0).allreduce_s
    assert got == pytest.approx(2 * 80 * (45e-6 + 2 * (3 / 4) * tokens_bytes / 300e9), rel=1e-9)


def test_a_pcie_pair_all_reduce_by_hand(catalog):
    """Two RTX PRO 6000 (no NVLink) at TP 2, Llama-3.1-70B (hidden 8,192, 80 layers: 160 all-reduces a step). A call
    of a PCIe pair costs the engine's pcie_allreduce_latency_s (10 µs), its bus bytes at the link's 64 GB/s, and the
    bytes up to 1 MiB once more at the slow rate's excess (1/12 − 1/64 s per GB): 32 decoding sequences move
    32 · 8,192 · 2 = 524,288 B a call: 10 + 8.192 + 35.499 = 53.69 µs, 8.59 ms a step."""
    s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="rtx-pro-6000-blackwell", tensor_parallel_size=2)
    step = step_model(s, m, g, mem, catalog.engines["vllm"])
    per_call = 10e-6 + 524_288 / 64e9 + 524_288 * (1 / 12e9 - 1 / 64e9)
    assert step.terms(0, 0, 32, 32 * 200).allreduce_s == pytest.approx(160 * per_call, rel=1e-9)
    assert 160 * per_call == pytest.approx(8.59e-3, abs=0.005e-3)


def test_pcie_all_reduces_match_the_rtx_pro_pairs_growth_with_load(catalog):
    """Massed Compute's two RTX PRO 6000 decode Llama-3.3-70B at TP 2 (tests/data/benchmarks/massed-compute-llama33-
    70b-2xrtxpro6000.yaml, vLLM, 128/128): median ITL 50.22 ms at one in flight, 62.11 ms at 32, +11.9 ms, where
    Qwen3-32B on one RTX PRO 6000 grows +5.3 ms (44.81 → 50.07 ms) for about the same bytes a card. The step model's
    growth 1 → 32 on the pair now carries the all-reduces' share: more than half the measured, less than 1.5 ×."""
    s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="rtx-pro-6000-blackwell", tensor_parallel_size=2)
    step = step_model(s, m, g, mem, catalog.engines["vllm"])
    growth = step.terms(0, 0, 32, 32 * 192).total_s - step.terms(0, 0, 1, 192).total_s
    assert 0.5 * 11.9e-3 < growth < 1.5 * 11.9e-3


def test_pcie_all_reduce_properties(catalog):
    """Monotone in the tokens of a step; NVLink all-reduces keep the link's rate at every size (no PCIe excess);
    a planner's "no bridge" (scaleup_link_gb_per_s = the host link) puts a bridged pair on PCIe; PCIe groups past
    two keep the spec's NCCL latency (vLLM's custom all-reduce refuses them); GeForce pairs (no peer-to-peer) move
    every byte at half the slow rate (through host memory: two crossings of the bus)."""
    def allreduce(gpu: str, tp: int, n: int, **over) -> float:
        s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu=gpu, tensor_parallel_size=tp, **over)
        return step_model(s, m, override_gpu(s, g, "bf16"), mem, catalog.engines["vllm"]).terms(0, 0, n, n * 200).allreduce_s

    times = [allreduce("rtx-pro-6000-blackwell", 2, n) for n in (1, 8, 32, 64, 128, 256)]
    assert times == sorted(times) and len(set(times)) == len(times)
    bridged = allreduce("h200-nvl", 2, 32)
    assert bridged == pytest.approx(160 * (20e-6 + 524_288 / 450e9), rel=1e-9)  # the spec's bridge, its own latency
    assert allreduce("h200-nvl", 2, 32, scaleup_link_gb_per_s=64) == pytest.approx(
        160 * (10e-6 + 524_288 / 64e9 + 524_288 * (1 / 12e9 - 1 / 64e9)), rel=1e-9)
    assert allreduce("l40s", 4, 1) == pytest.approx(160 * (45e-6 + 1.5 * 16_384 / 64e9 + 1.5 * 16_384 * (1 / 12e9 - 1 / 64e9)),
                                                    rel=1e-9)  # fmt: skip
    # a GeForce pair has no PCIe peer-to-peer: every byte through host memory, copied in and read back (two
    # crossings, 12 / 2 = 6 GB/s), a prefill chunk's 2,048 tokens × 8,192 × 2 B = 32 MiB a call too (two RTX 4090s:
    # tests/data/benchmarks/lyell0710-…, calibration)
    chunk = 2048 * 8192 * 2
    s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="rtx-4090", tensor_parallel_size=2)
    geforce = step_model(s, m, g, mem, catalog.engines["vllm"]).terms(2048, 0, 0, 0).allreduce_s
    assert geforce == pytest.approx(160 * (10e-6 + chunk / 6e9), rel=1e-9)
    assert (geforce - 160 * 10e-6) / (160 * chunk / 12e9) == pytest.approx(2.0)  # twice a peer read's time a byte
    s, m, g, mem = setup(catalog, model="llama-3.1-70b", gpu="l40s", tensor_parallel_size=2)  # P2P: past 1 MiB at 32
    p2p = step_model(s, m, g, mem, catalog.engines["vllm"]).terms(2048, 0, 0, 0).allreduce_s  # (PCIe 4 x16)
    assert p2p == pytest.approx(160 * (10e-6 + chunk / 32e9 + 2**20 * (1 / 12e9 - 1 / 32e9)), rel=1e-9)


def test_four_geforce_cards_decode_near_their_published_rate(catalog):
    """IOG Foundation's DeepSeek-R1-Distill-Llama-8B over four RTX 4090s (TP 4, no peer-to-peer), vLLM 0.8.5, 8 req/s
    of ShareGPT prompts (tests/data/benchmarks/iog-llm-…: median TPOT 20.34 ms). With every all-reduce byte charged
    one crossing of the bus the replay was 34 % fast; through host memory, two crossings, it is within ±12 %."""
    from boundary.bench_check import check
    from boundary.bench_data import load_runs

    (run,) = [r for r in load_runs(catalog)[0] if r.id == "iog-deepseek-r1-distill-llama-8b-4xrtx-4090-qps8"]
    assert run.measured["median_tpot_ms"] == pytest.approx(20.34, abs=0.005)
    assert not catalog.gpus["rtx-4090"].pcie_p2p
    (c,) = check([run], catalog)
    assert abs(c.error("tpot")) < 0.12
