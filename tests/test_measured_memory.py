"""A startup log's measured memory (weights, activations, non-torch, CUDA graphs per GPU) holds for the configuration
it ran; moved to another TP, PP or dtype by calc.pool.measured_at, in the smallest changes and in the search alike."""

import pytest

from calc.evaluate import evaluate
from calc.pool import measured_at
from calc.scenario import Scenario
from calc.search import search
from calc.search_rows import scenario_of

# the vllm#10517 log's calibration (Llama-3.1-8B, one RTX 3090): "Model loading took 14.9888 GiB" and its profile
LOGGED = dict(model="llama-3.1-8b", gpu="rtx-3090", weights_memory_bytes=16094101452, activation_memory_bytes=3211776544,
              non_torch_memory_bytes=375809638, max_model_len=29000, max_num_batched_tokens=29000)  # fmt: skip


def test_weights_split_over_tp_and_fixed_costs_move_by_their_difference(catalog):
    s = Scenario(**LOGGED)
    m = catalog.models["llama-3.1-8b"]
    own = dict(dtype=s.dtype, max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens)
    assert measured_at(s, m, tp=1, pp=1, **own) == {k: LOGGED[k] for k in ("weights_memory_bytes",
                                                    "activation_memory_bytes", "non_torch_memory_bytes")}  # fmt: skip
    two = measured_at(s, m, tp=2, pp=1, **own)
    # the layers split in two, the embedding and lm_head vocab-parallel too; only the norms (65 × 4,096) stay whole
    assert two["weights_memory_bytes"] == pytest.approx(LOGGED["weights_memory_bytes"] / 2, rel=1e-4)
    assert two["activation_memory_bytes"] < LOGGED["activation_memory_bytes"]
    assert two["non_torch_memory_bytes"] >= LOGGED["non_torch_memory_bytes"]  # TP adds communication buffers
    assert measured_at(Scenario(model="llama-3.1-8b"), m, tp=2, pp=1, **own) == {}


def test_the_tp_fix_of_a_calibrated_plan_halves_the_weights(catalog):
    """Before, tensor_parallel_size=2 kept 15 GiB of weights on each GPU: 2,961 blocks where TP 2 holds ~10,000."""
    r = evaluate(Scenario(**LOGGED), catalog)
    tp2 = next(x for x in r.suggestions if x.change.startswith("tensor_parallel_size=2"))
    assert tp2.fields["weights_memory_bytes"] == pytest.approx(LOGGED["weights_memory_bytes"] / 2, rel=1e-4)
    # per GPU at TP 2 a block of 16 tokens holds 32 layers × 4 KV heads × 128 × 2 (K, V) × 2 B = 1 MiB
    assert tp2.num_gpu_blocks > 9 * 1024


def test_a_search_with_measured_memory_opens_each_configuration_with_the_same_pool(catalog):
    s = Scenario(**LOGGED, search_gpus="rtx-3090", search_max_num_seqs="16,64")
    r = search(s, catalog)
    for i in range(0, r.configs_evaluated, 7):
        opened = evaluate(scenario_of(r, i), catalog)
        assert opened.memory.num_gpu_blocks == r.pool.num_gpu_blocks[r.base(i)], i
