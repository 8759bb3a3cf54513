"""Decode context parallelism (vLLM --decode-context-parallel-size): the GPUs of a tensor-parallel group that hold the
same KV head split each request's tokens, ⌈L / dcp⌉ on each. Rules and arithmetic read in vLLM's wheels 0.10.2–0.25
(calc.parallel_rules.dcp_check, calc.kv_cache.KVGroup.cp); the logs are vllm-project/recipes#115's Kimi-K2-Thinking on eight
H200s, TP 8 with and without DCP 8, each with 46.80 GiB of KV cache a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.search import search

LOGS = Path(__file__).parent / "data" / "vllm_logs"
KIMI = {"model": "kimi-k2-thinking", "gpu": "h200", "tensor_parallel_size": 8, "max_model_len": 262_144}


@pytest.mark.parametrize("name, dcp, blocks, tokens", [
    ("recipes-pr115-kimi-k2-thinking-tp8-h200.log", 1, 11_173, 715_072),
    ("recipes-pr115-kimi-k2-thinking-tp8-dcp8-h200.log", 8, 11_174, 5_721_088)])  # fmt: skip
def test_the_recipes_logs_reconcile_with_dcp_read_from_the_log(catalog, name, dcp, blocks, tokens):
    """A block: 61 layers × (512 + 64) × 2 B × 64 tokens = 4,497,408 B; 46.80 GiB holds 11,173 (46.7985 GiB) or 11,174
    (46.8027 GiB) of them, both printed 46.80. vLLM 0.11 prints blocks × 64, × dcp with DCP: 11,174 × 64 × 8 =
    5,721,088. The DCP figure comes from the log's own "Multiplying … by the dcp_world_size 8" line."""
    assert blocks * 64 * dcp == tokens and round(blocks * 61 * 576 * 2 * 64 / 2**30, 2) == 46.80
    flags = {k: v for k, v in KIMI.items() if k != "model"} | {"model": "kimi-k2-thinking"}
    rec = reconcile(parse_log((LOGS / name).read_text()), catalog, flags)
    assert rec.scenario.decode_context_parallel_size == dcp
    assert rec.matches["kv_cache_tokens"]


def test_a_request_takes_one_dcp_th_of_the_blocks(catalog):
    """At 262,144 tokens a request takes ⌈262,144 / 64⌉ = 4,096 blocks on each GPU, and with DCP 8
    ⌈⌈262,144 / 8⌉ / 64⌉ = 512: 11,173 blocks hold 2.73 or 21.82 of them; the pool's blocks are each GPU's own."""
    base = Scenario(**KIMI, engine_version="0.11.1", kv_cache_memory_bytes=int(11_173.5 * 4_497_408))
    one, eight = (evaluate(base.model_copy(update={"decode_context_parallel_size": d}), catalog) for d in (1, 8))
    assert one.memory.num_gpu_blocks == eight.memory.num_gpu_blocks == 11_173
    assert one.memory.blocks_per_max_len_request == 4_096 and eight.memory.blocks_per_max_len_request == 512
    assert round(eight.memory.max_concurrency, 2) == 21.82 and eight.memory.kv_cache_tokens == 11_173 * 64 * 8
    assert eight.memory.kv_bytes_per_token_per_gpu == one.memory.kv_bytes_per_token_per_gpu / 8


def test_a_decode_step_reads_one_dcp_th_of_the_cache_plus_three_collectives_a_layer(catalog):
    """Each GPU reads 1/dcp of every context (dcp× the heads over 1/dcp of the tokens: the FLOPs stay) and adds an
    all-gather of the queries, one of the softmax LSE and a reduce-scatter of the outputs per attention layer. Long
    contexts gain; at a short context the collectives cost more than the read saves."""
    long = Scenario(**KIMI, concurrency=4, input_len=100_000, output_len=1_000)  # fits without DCP too
    short = long.model_copy(update={"input_len": 200, "output_len": 200})
    for s, faster in ((long, True), (short, False)):
        a, b = (evaluate(s.model_copy(update={"decode_context_parallel_size": d}), catalog) for d in (1, 8))
        assert (b.latency.tpot_s < a.latency.tpot_s) == faster


@pytest.mark.parametrize("update, why", [
    ({"decode_context_parallel_size": 3}, "must be divisible by decode_context_parallel_size"),
    ({"decode_context_parallel_size": 2, "engine": "sglang"}, "vLLM only"),
    ({"decode_context_parallel_size": 2, "engine_version": "0.10.1"}, "from 0.10.2"),
    ({"decode_context_parallel_size": 2, "model": "llama-3.1-8b"}, "must be greater than num_key_value_heads"),
    ({"decode_context_parallel_size": 4, "model": "qwen3-235b-a22b"}, "at most tensor_parallel_size // num_key_value_heads = 2"),
    ({"decode_context_parallel_size": 2, "model": "qwen3-next-80b-a3b"}, "state layers is not planned"),
    ({"decode_context_parallel_size": 2, "model": "gpt-oss-120b"}, "sliding-window")])  # fmt: skip
def test_what_vllm_refuses_is_refused_by_field(catalog, update, why):
    """vLLM's asserts: tp divisible by dcp; GQA (from 0.11.1) only where TP repeats a KV head, at most tp // kv and
    dividing the query heads per KV head (Qwen3-235B: 4 KV heads at TP 8, so DCP ≤ 2); no DCP beside sliding,
    chunked or state layers in 0.10.2–0.12 (later releases not read: not planned); MLA from 0.10.2."""
    with pytest.raises(InputError, match=why) as e:
        evaluate(Scenario(**KIMI).model_copy(update=update), catalog)
    assert e.value.field == "decode_context_parallel_size"


def test_a_gqa_model_with_repeated_heads_plans_and_serves_with_the_flag(catalog):
    """Qwen3-235B-A22B at TP 8 keeps 4 KV heads twice over: DCP 2 is allowed, and the serve command carries it; the
    search does not vary it and says so."""
    s = Scenario(model="qwen3-235b-a22b", gpu="h200", tensor_parallel_size=8, decode_context_parallel_size=2)
    r = evaluate(s, catalog)
    assert "--decode-context-parallel-size 2" in r.to_dict()["serve_command"]
    rows = search(s.model_copy(update={"search_gpus": "h200", "request_rate": 1.0}), catalog)
    assert any(n.startswith("decode_context_parallel_size 2 is not searched") for n in rows.notes)
