"""Speculative decoding's memory under vLLM (calc.speculative): the MTP layers join the KV pool and the weights, a
hybrid's state keeps k more blocks and its conv state k more rows.

Published: two stock vLLM 0.23.0 startups of Qwen3.6-27B with MTP, 3 tokens (joorklee/p2p-bench; fixtures
tests/data/vllm_logs/p2p-bench-*): 16 attention layers + the MTP layer = 17, 48 GDN layers in groups of 17 ("Add 3
padding layers"), the attention block raised to 800 / 1,600 tokens, and the logged pool's tokens and concurrency."""

from __future__ import annotations

from pathlib import Path

import pytest

from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.loader import load_model_file
from calc.scenario import Scenario
from calc.units import GiB

DATA = Path(__file__).parent / "data"
CONFIG = DATA / "hf_configs" / "qwen3.6-27b" / "config.json"


@pytest.fixture(scope="module")
def q27():
    return encode_custom_model(load_model_file(CONFIG))


def plan(catalog, **kw):
    return evaluate(Scenario(**{"speculative_method": "mtp", "num_speculative_tokens": 3, "engine_version": "0.23.0",
                                **kw}), catalog)  # fmt: skip


def test_the_layout_by_hand(catalog, q27):
    """TP 4, bf16 KV: an attention layer holds 4 / 4 KV heads · 256 · 2 · 2 B = 1,024 B a token; a GDN state
    (6 conv rows with 3 speculative tokens) (3 + 3) · (2 · 16 · 128 + 48 · 128) / 4 · 2 B + 48 / 4 · 128 · 128 · 4 B =
    30,720 + 786,432 = 817,152 B → the block rises to 16 · ⌈817,152 / (16 · 1,024)⌉ = 800 tokens (vLLM: "Setting
    attention block size to 800 tokens", then "Padding mamba page size by 0.25%": 819,200 / 817,152). Layers: 17
    attention, 48 GDN → groups of 17, ⌈48 / 17⌉ = 3 state groups, 3 · 17 − 48 = 3 padding layers. A 200,000-token
    request with prefix caching (align mode): ⌈200,000 / 800⌉ = 250 + 3 · (2 + 3) = 265 blocks."""
    conv = (3 + 3) * (2 * 16 * 128 + 48 * 128) // 4 * 2
    ssm = 48 // 4 * 128 * 128 * 4
    assert conv + ssm == 30_720 + 786_432 == 817_152
    assert 16 * -(-817_152 // (16 * 1024)) == 800
    r = plan(catalog, model="custom", custom_model=q27, gpu="rtx-4090", tensor_parallel_size=4, max_model_len=200_000,
             enable_prefix_caching=True, max_num_batched_tokens=16_768, kv_cache_memory_bytes=int(5.47 * GiB))  # fmt: skip
    m = r.memory
    assert (m.block_size, m.layers_per_group, m.kv_groups, m.padding_layers) == (800, 17, 4, 3)
    assert m.blocks_per_max_len_request == 250 + 3 * (2 + 3)
    without = plan(catalog, model="custom", custom_model=q27, gpu="rtx-4090", tensor_parallel_size=4,
                   max_model_len=200_000, enable_prefix_caching=True, speculative_method="none",
                   kv_cache_memory_bytes=int(5.47 * GiB)).memory  # fmt: skip
    assert (without.block_size, without.layers_per_group, without.padding_layers) == (784, 16, 0)  # 16 · ⌈801,792 / 16,384⌉
    assert without.blocks_per_max_len_request == -(-200_000 // 784) + 3 * 2


@pytest.mark.parametrize("name, flags, blocks, tokens, conc", [
    ("p2p-bench-qwen3.6-27b-fp8-mtp3-tp4.log",
     {"tensor_parallel_size": 4, "max_model_len": 200_000, "enable_prefix_caching": True, "kv_cache_dtype": "auto",
      "max_num_batched_tokens": 16_768}, 422, 318_490, "1.59"),
    ("p2p-bench-qwen3.6-27b-nvfp4-mtp3-tp2.log",
     {"tensor_parallel_size": 2, "max_model_len": 65_535, "enable_prefix_caching": False, "kv_cache_dtype": "fp8",
      "max_num_seqs": 1}, 79, 97_684, "1.49")])  # fmt: skip
def test_two_stock_vllm_logs_reconcile(catalog, q27, name, flags, blocks, tokens, conc):
    """The logs print int(concurrency · L) (vLLM 0.20+): 422 / 265 · 200,000 = 318,490 and 79 / (⌈65,535 / 1,600⌉ +
    3 · (1 + 3)) = 79 / 53 · 65,535 = 97,684, as logged; the method and its 3 tokens are read from the engine config."""
    assert int(blocks / 265 * 200_000) == tokens if blocks == 422 else int(blocks / 53 * 65_535) == tokens
    log = parse_log((DATA / "vllm_logs" / name).read_text())
    rec = reconcile(log, catalog, {"model": "custom", "custom_model": q27, **flags})
    assert (rec.scenario.speculative_method, rec.scenario.num_speculative_tokens) == ("mtp", 3)
    assert rec.matches["kv_cache_tokens"] and rec.matches["max_concurrency"]
    assert f"{rec.predicted['max_concurrency']:.2f}" == conc


def test_the_mtp_layer_adds_kv_and_weights(catalog):
    """DeepSeek-V3 on eight H200s: 62 / 61 of the latent a token (70,272 → 71,424 B), and one MoE layer of FP8
    weights more on each GPU (its 256 experts split over 8, plus the 2 · 7,168² projection)."""
    base = plan(catalog, model="deepseek-v3", gpu="h200", tensor_parallel_size=8, speculative_method="none").memory
    mtp = plan(catalog, model="deepseek-v3", gpu="h200", tensor_parallel_size=8).memory
    assert base.kv_bytes_per_token == 61 * (512 + 64) * 2 and mtp.kv_bytes_per_token == 62 * (512 + 64) * 2
    extra = mtp.weights_bytes_per_gpu - base.weights_bytes_per_gpu
    assert 1.2 * GiB < extra < 1.5 * GiB  # 11.6 B parameters at 1 B, over 8 GPUs: about 1.35 GiB
    assert mtp.params.total == base.params.total  # what a step reads stays the model's


def test_a_dense_27b_mtp_layer_weighs_what_a_published_pair_adds(catalog, q27):
    """By hand, Qwen3.6-27B's MTP layer at 16 bits: attention 5,120 · (12,288 + 2 · 1,024) + 6,144 · 5,120, MLP
    3 · 5,120 · 17,408, projection 2 · 5,120², norms: 424.7 M parameters, 0.79 GiB. Published: a Qwen3.5-architecture
    27 B (Qwen3.8-27B) loaded 51.1 GiB without MTP and 51.89 GiB with it (AIwork4me/Qwen3.8-27B-ROCm,
    docs/results/rocm-7.14/vllm-validation.md)."""
    base = plan(catalog, model="custom", custom_model=q27, gpu="h100-sxm", speculative_method="none").memory
    mtp = plan(catalog, model="custom", custom_model=q27, gpu="h100-sxm").memory
    layer = 5120 * (12_288 + 2 * 1024) + 6144 * 5120 + 3 * 5120 * 17_408 + 2 * 5120**2
    assert mtp.weights_bytes_per_gpu - base.weights_bytes_per_gpu == pytest.approx(layer * 2, rel=1e-3)
    assert (mtp.weights_bytes_per_gpu - base.weights_bytes_per_gpu) / GiB == pytest.approx(51.89 - 51.1, abs=0.02)


def test_ngram_drafts_nothing_but_keeps_the_state_blocks(catalog, q27):
    """Property: ngram adds no layer and no weight; a hybrid's state still keeps k more blocks (and rows)."""
    kw = dict(model="custom", custom_model=q27, gpu="h100-sxm", kv_cache_memory_bytes=int(20 * GiB))
    none = plan(catalog, speculative_method="none", **kw).memory
    ngram = plan(catalog, speculative_method="ngram", **kw).memory
    assert ngram.weights_bytes_per_gpu == none.weights_bytes_per_gpu and ngram.layers_per_group == 16
    assert ngram.blocks_per_max_len_request == none.blocks_per_max_len_request + 3 * 3


@pytest.mark.parametrize("kw, why", [
    ({"model": "llama-3.1-8b"}, "no multi-token-prediction layers"),
    ({"model": "deepseek-v3", "engine": "sglang", "tensor_parallel_size": 8}, "planned under vLLM only"),
    ({"model": "glm-4.5-air", "pipeline_parallel_size": 2}, "pipeline parallelism is not planned")])  # fmt: skip
def test_what_is_refused(catalog, kw, why):
    r = plan(catalog, gpu="h200", **kw)
    assert why in r.memory.dtype_refusal and not r.fit.fits


def test_the_page_says_it_and_the_serve_command_passes_it(catalog):
    r = plan(catalog, model="glm-4.5-air", gpu="h200", tensor_parallel_size=2)
    note = next(n for n in r.notes if n.startswith("speculative decoding (mtp, 3 tokens a step)"))
    assert "planned without speculation" in note
    assert """--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'""" in r.to_dict()["serve_command"]


def test_club3090_642_fits_stock_arithmetic_with_its_mtp(catalog, q27):
    """club-3090 #642 (Qwen3.6-27B on two RTX 3090s at 262,144 tokens; its compose runs fp8 KV, prefix caching and MTP
    with 3 tokens, which the excerpt does not print): 426 blocks of 1,600 tokens (11.05 GiB / (1,600 · 1,024 B · 17
    layers) = 425.98, the log rounding to 426) over ⌈262,144 / 1,600⌉ = 164 + 3 · (2 + 3) = 179 blocks a request:
    int(426 / 179 · 262,144) = 623,873 tokens, as logged (the plan, from 11.05 GiB exactly, has 425: the printed
    rounding admits both). Without the draft's layer, blocks and rows it would be 2.65x."""
    assert int(426 / 179 * 262_144) == 623_873
    log = parse_log((DATA / "vllm_logs" / "club3090-642-qwen3.6-27b-2x3090-tp2.log").read_text())
    flags = {"model": "custom", "custom_model": q27, "tensor_parallel_size": 2, "kv_cache_dtype": "fp8",
             "enable_prefix_caching": True, "speculative_method": "mtp", "num_speculative_tokens": 3}  # fmt: skip
    rec = reconcile(log, catalog, flags)
    assert rec.predicted["num_gpu_blocks"] == 425 and rec.predicted["max_concurrency"] == pytest.approx(425 / 179)
    assert rec.matches["kv_cache_tokens"] and rec.matches["max_concurrency"]


def test_an_mtp_layer_the_checkpoint_leaves_unquantized_loads_at_16_bits(catalog):
    """nvidia's Qwen3.6-35B-A3B-NVFP4 ignores "mtp*" (its quantization_config and hf_quant_config exclude_modules):
    vLLM loads the MTP layer in bf16. Its parameters by hand: attention 2,048 · 16 · 256 · 2 (gated q) + 2 · 2,048 ·
    2 · 256 + 16 · 256 · 2,048 + 2 · 256 = 27,263,488; 256 experts of 3 · 2,048 · 512 = 805,306,368; the shared expert
    3 · 2,048 · 512 + its gate 2,048; the router 2,048 · 256; two norms 2 · 2,048; the input projection 2 · 2,048² and
    three norms 3 · 2,048: 844,640,768 parameters, 2 B each (1.57 GiB, where its NVFP4 pricing gave 0.46)."""
    m = load_model_file(DATA / "hf_configs" / "qwen3.6-35b-a3b-nvfp4" / "config.json")
    assert m.quantization_config.mtp_unquantized
    kw = dict(model="custom", custom_model=encode_custom_model(m), gpu="rtx-5090", max_model_len=131_072)
    none = plan(catalog, speculative_method="none", **kw).memory
    mtp = plan(catalog, **kw).memory
    layer = (27_263_488 + 256 * 3 * 2048 * 512 + 3 * 2048 * 512 + 2048 + 2048 * 256 + 2 * 2048 + 2 * 2048**2 + 3 * 2048)
    assert layer == 844_640_768
    assert mtp.weights_bytes_per_gpu - none.weights_bytes_per_gpu == pytest.approx(layer * 2.0, rel=1e-9)


def test_a_refused_draft_is_offered_none(catalog):
    """A scenario whose draft the plan refuses (no MTP layers; SGLang) is offered speculative_method=none, which fits."""
    for kw in ({"model": "llama-3.1-8b"}, {"model": "deepseek-v3", "engine": "sglang", "tensor_parallel_size": 8}):
        r = plan(catalog, gpu="h200", **kw)
        assert any(s.fields.get("speculative_method") == "none" and s.fits for s in r.suggestions), kw


def test_qwen3_next_has_its_mtp_layer_and_step35_types_its_own(catalog):
    """Qwen3-Next-80B ships one MTP layer (vLLM's Qwen3NextMTP defaults num_nextn_predict_layers to 1): 12 + 1
    attention layers beside 36 GDN → groups of 13, ⌈36 / 13⌉ = 3 state groups, 3 padding layers. Step-3.5's
    layer_types runs 3 entries past its 45 layers, sliding windows, which the draft keeps."""
    from calc.speculative import drafted

    m = plan(catalog, model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2).memory
    assert (m.layers_per_group, m.kv_groups, m.padding_layers) == (13, 4, 3)
    step = load_model_file(DATA / "hf_configs" / "step-3.5-flash-partial" / "config.json")
    d = drafted(Scenario(speculative_method="mtp"), step)
    assert step.mtp_layer_types == ("sliding_attention",) * 3 and d.layer_types[-3:] == ("sliding_attention",) * 3
    assert d.num_hidden_layers == 48 and d.num_nextn_predict_layers == 0


def test_an_eagle_head_is_one_more_layer_of_kv_as_a_logged_pool_shows(catalog):
    """vllm#19996: Llama-3.1-8B with an EAGLE head on an H100 under vLLM 0.9.1 logged 51.63 GiB, 410,128 tokens and
    3.13x at 131,072. Its 32 layers make a 16-token block 32 · 2 · 8 · 128 · 2 · 16 = 2,097,152 B (26,434 blocks);
    with the head's attention layer in the pool 33 layers, 2,162,688 B: ⌊51.63 GiB / 2,162,688⌋ = 25,633 blocks,
    25,633 · 16 = 410,128 tokens, 25,633 / 8,192 = 3.13x, as logged."""
    pool = int(51.63 * GiB)
    assert pool // (33 * 4096 * 16) == 25_633 and pool // (32 * 4096 * 16) == 26_434 and 25_633 * 16 == 410_128
    log = parse_log((DATA / "vllm_logs" / "vllm-19996-llama31-8b-eagle-h100.log").read_text())
    flags = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "max_model_len": 131_072, "engine_version": "0.9.1"}
    rec = reconcile(log, catalog, flags | {"speculative_method": "eagle"})
    assert rec.predicted["num_gpu_blocks"] == 25_633 and rec.matches["kv_cache_tokens"] and rec.matches["max_concurrency"]
    assert not reconcile(log, catalog, flags).matches["kv_cache_tokens"]  # without the head: 26,434 blocks


def test_an_eagle_head_weighs_one_dense_layer_and_its_projection(catalog):
    """Llama-3.1-8B (hidden 4,096, 32 / 8 heads of 128, MLP 14,336): a decoder layer is 2 · 4,096² + 2 · 4,096 ·
    1,024 (attention) + 3 · 4,096 · 14,336 (MLP) + 2 · 4,096 (norms) = 218,112,000 parameters; EAGLE adds its 2 · H
    → H projection (33,554,432) and a norm, EAGLE-3 a 3 · H one, q, k and v reading 2 · H (4,096 · (4,096 + 2 ·
    1,024) more) and a 32,000 · 4,096 head: all at 16 bits, on the one GPU."""
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert layer == 218_112_000
    none = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog).memory
    eagle = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", speculative_method="eagle"), catalog).memory
    eagle3 = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", speculative_method="eagle3"), catalog).memory
    head = layer + 2 * 4096**2 + 3 * 4096
    assert eagle.weights_bytes_per_gpu - none.weights_bytes_per_gpu == pytest.approx(2 * head, rel=1e-9)
    extra3 = 4096**2 + 4096 * (4096 + 2 * 1024) + 32_000 * 4096
    assert eagle3.weights_bytes_per_gpu - eagle.weights_bytes_per_gpu == pytest.approx(2 * extra3, rel=1e-9)
    assert eagle.kv_bytes_per_token == 33 * 2 * 8 * 128 * 2 == none.kv_bytes_per_token * 33 / 32


def test_an_eagle_head_is_named_in_the_serve_command_and_refused_for_mla(catalog):
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", speculative_method="eagle3", draft_acceptance_rate=0.6),
                 catalog)  # fmt: skip
    assert '"method": "eagle3", "model": "EAGLE_HEAD_CHECKPOINT"' in r.to_dict()["serve_command"]
    assert any("EAGLE head" in n and "weights_memory_bytes" in n for n in r.notes)
    base = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog)
    assert r.latency.tpot_s < base.latency.tpot_s  # 1 + 3 · 0.6 = 2.8 tokens a step, each step a little longer
    mla = evaluate(Scenario(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, speculative_method="eagle"), catalog)
    assert "MLA" in mla.memory.dtype_refusal


def test_an_eagle_head_for_a_model_without_attention_is_refused_not_a_crash(catalog):
    """Found by scripts/fuzz.py: an EAGLE head on Falcon-Mamba-7B (no attention layers) built a draft layer with no
    heads and raised a validation error from inside the pool's sizing; it is a refusal naming what to use."""
    r = evaluate(Scenario(model="falcon-mamba-7b", gpu="a10", speculative_method="eagle"), catalog)
    assert "no attention layers" in r.memory.dtype_refusal and not r.serves
    assert r.memory.weights_bytes_per_gpu == evaluate(Scenario(model="falcon-mamba-7b", gpu="a10"), catalog).memory.weights_bytes_per_gpu


def test_a_log_that_speculates_with_eagle3_is_read_so():
    from boundary.log_fields import speculative_fields

    line = ("INFO 06-23 14:20:01 [core.py:69] Initializing a V1 LLM engine (v0.10.1) with config: model='meta-llama/"
            "Llama-3.1-8B-Instruct', speculative_config=SpeculativeConfig(method='eagle3', model='yuhuili/EAGLE3-LLaMA3.1-"
            "Instruct-8B', num_spec_tokens=3), tokenizer='meta-llama/Llama-3.1-8B-Instruct'\n"
            "INFO 06-23 14:21:48 [gpu_worker.py:232] Available KV cache memory: 51.63 GiB\n")  # fmt: skip
    assert speculative_fields(parse_log(line)) == {"speculative_method": "eagle3", "num_speculative_tokens": 3}
