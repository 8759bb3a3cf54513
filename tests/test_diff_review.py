"""What a review of this session's diff found, each checked: the search refuses what vLLM 0.14–0.15 refuse at PP > 1,
the GPU options keep decode context parallelism only where TP carries it, a hybrid without prefix caching reuses no
prefix, a shared prefix under DCP is counted in DCP's blocks, and a Qwen3 vision tower is counted whole when its
config leaves model_type out."""

from __future__ import annotations

import json
from copy import deepcopy
from pathlib import Path

from boundary import view
from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.loader import load_model_file
from calc.params import count_params
from calc.scenario import Scenario
from calc.search import WHY, search

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def test_the_search_refuses_what_vllm_014_015_refuse_at_pp(catalog):
    """GLM-4.7 at PP 8 on A100s, 202,752 tokens: one request's KV over all 92 layers (71.16 GiB) exceeds a stage's
    pool, so 0.15 refuses every configuration; 0.16 starts them."""
    glm = encode_custom_model(load_model_file(CONFIGS / "glm-4.7-fp8" / "config.json"))
    s = Scenario(model="custom", custom_model=glm, gpu="a100-80gb-sxm", max_model_len=202_752, search_gpus="a100-80gb-sxm",
                 search_tensor_parallel_size="1", search_pipeline_parallel_size="8", search_dtype="fp8",
                 search_kv_cache_dtype="auto", slo_ttft_s=60, slo_tpot_s=5)  # fmt: skip
    old = search(s.model_copy(update={"engine_version": "0.15.0"}), catalog)
    new = search(s.model_copy(update={"engine_version": "0.16.0"}), catalog)
    assert old.cheapest is None and set(old.why.tolist()) == {WHY.index(next(w for w in WHY if "vllm#32105" in w))}
    assert new.cheapest is not None


def test_gpu_options_drop_dcp_where_tp_does_not_carry_it(catalog):
    """DeepSeek-V2-Lite at TP 2 with DCP 2: a TP 1 option is planned without decode context parallelism (vLLM
    asserts tp % dcp == 0), so its capacity is the one TP 1 has."""
    s = Scenario(model="deepseek-v2-lite", gpu="h100-sxm", tensor_parallel_size=2, decode_context_parallel_size=2,
                 max_model_len=32_768, input_len=8000, output_len=500, slo_ttft_s=10, slo_tpot_s=0.2)  # fmt: skip
    with_dcp = {(o.gpu, o.tensor_parallel_size): o.capacity_rps for o in evaluate(s, catalog).gpu_options}
    plain = {(o.gpu, o.tensor_parallel_size): o.capacity_rps
             for o in evaluate(s.model_copy(update={"decode_context_parallel_size": 1}), catalog).gpu_options}  # fmt: skip
    ones = [k for k in with_dcp if k[1] == 1]
    assert ones and all(with_dcp[k] == plain[k] for k in ones if k in plain)


def test_a_hybrid_without_prefix_caching_reuses_no_prefix(catalog):
    """Qwen3-Next under vLLM: prefix caching is opt-in for a hybrid, so a 4,096-token shared prompt saves no block
    and no prefill until enable_prefix_caching is set."""
    s = Scenario(model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2, input_len=6000, shared_prefix_len=4096)
    off, on = evaluate(s, catalog), evaluate(s.model_copy(update={"enable_prefix_caching": True}), catalog)
    assert off.prefix.blocks_saved == 0 and off.prefix.ttft_saved_per_request_s == 0
    assert any(n.startswith("no prefix is reused") for n in off.notes)
    assert on.prefix.shared_prefix_blocks > 0 and on.prefix.ttft_saved_per_request_s > 0


def test_a_shared_prefix_under_dcp_counts_dcp_blocks(catalog):
    """Kimi-K2 at TP 8, DCP 8: vLLM hashes blocks of 64 × 8 = 512 tokens, one block a GPU; a 6,000 + 256-token
    request takes ⌈⌈6,256 / 8⌉ / 64⌉ = 13 blocks, its 4,096 shared tokens 8 of them, the rest ⌈⌈2,160 / 8⌉ / 64⌉ = 5:
    16 requests save 16 × 13 − (8 + 16 × 5) = 120 blocks."""
    s = Scenario(model="kimi-k2-thinking", gpu="h200", tensor_parallel_size=8, decode_context_parallel_size=8,
                 input_len=6000, output_len=256, shared_prefix_len=4096, concurrency=16)  # fmt: skip
    p = evaluate(s, catalog).prefix
    assert p.shared_prefix_blocks == 4096 // 512 == 8 and p.blocks_saved == 16 * 13 - (8 + 16 * 5) == 120


def test_dcp_tokens_formula_names_dcp(catalog):
    """vLLM 0.11.1 prints the pool's tokens × dcp: the Memory table's formula says so."""
    r = evaluate(Scenario(model="kimi-k2-thinking", gpu="h200", tensor_parallel_size=8, decode_context_parallel_size=8,
                          engine_version="0.11.1"), catalog)  # fmt: skip
    assert view.kv_tokens_formula(r).endswith("× dcp 8")


def test_a_qwen3_vision_tower_without_model_type_is_counted_whole():
    """Qwen3-VL-30B-A3B's published 31,070,754,032 whatever the vision_config leaves out (its model_type, or its
    positions and deepstack levels, which Qwen3VLVisionConfig fills), and Qwen3-Omni's thinker the same."""
    raw = json.loads((CONFIGS / "qwen3-vl-30b-a3b-instruct" / "config.json").read_text())
    variants = [deepcopy(raw) for _ in range(3)]
    variants[0].pop("model_type")
    variants[0]["vision_config"].pop("model_type")
    variants[1]["vision_config"]["model_type"] = None
    variants[2].pop("model_type")
    del variants[2]["vision_config"]["num_position_embeddings"], variants[2]["vision_config"]["deepstack_visual_indexes"]
    assert {count_params(model_from_hf_config(c)).total for c in variants} == {31_070_754_032}
    omni = json.loads((CONFIGS / "qwen3-omni-30b-a3b-instruct" / "config.json").read_text())
    omni["thinker_config"]["vision_config"].pop("model_type")
    assert count_params(model_from_hf_config(omni)).total == 31_719_205_488
