"""A shared system prompt found in the prefix cache (calc.prefix_hit): the tokens every request is spared, and the
latency, capacity and benchmark that follow from them, one model on every surface."""

import json

import pytest
from conftest import scenario

from boundary.cli import main
from calc.bench import serve
from calc.evaluate import evaluate
from calc.prefix_hit import hit_tokens


def test_the_hit_is_whole_blocks_short_of_the_prompts_last_token():
    assert hit_tokens(1024, 2048, 16) == 1024  # 64 blocks of 16
    assert hit_tokens(1000, 2048, 16) == 992  # ⌊1000 / 16⌋ = 62 blocks: a partial block is not hashed
    assert hit_tokens(3000, 2048, 16) == 2032  # the prompt's 2,047 tokens before its last: ⌊2047 / 16⌋ · 16
    assert hit_tokens(1024, 2048, 0) == 0  # nothing is reused (a vLLM hybrid without enable_prefix_caching)
    assert hit_tokens(0, 2048, 16) == 0


def test_the_prefill_is_spared_the_cached_tokens_flops(catalog):
    """Llama-3.1-8B, 2,048-token prompts whose first 1,024 are cached, one request at a time: the prefill computes
    1,024 tokens, each attending to the 1,024 cached ones too. Spared: 1,024 tokens' GEMMs and the cached tokens' own
    attention pairs, 1,024 · 1,025 / 2 = 524,800 (2,048 · 2,049 / 2 = 2,098,176 without the cache;
    1,024 · 1,024 + 1,024 · 1,025 / 2 = 1,573,376 with it)."""
    plain = evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm", input_len=2048, concurrency=1), catalog)
    cached = evaluate(plain.scenario.model_copy(update={"shared_prefix_len": 1024}), catalog)
    step = plain.latency.step
    per_pair = sum(f for f, _ in step.attention_flop)
    assert cached.latency.prefix_hit_tokens == 1024
    spared = plain.latency.prefill_terms.flop - cached.latency.prefill_terms.flop
    assert spared == pytest.approx(1024 * step.gemm_flop_per_token + 524_800 * per_pair, rel=1e-9)
    assert 2_098_176 - 1_573_376 == 524_800


def test_ttft_falls_as_the_shared_prompt_grows_and_a_hybrid_without_caching_keeps_its_own(catalog):
    base = scenario(model="llama-3.1-8b", gpu="l40s", input_len=4096, concurrency=16)
    ttft = [evaluate(base.model_copy(update={"shared_prefix_len": p}), catalog).latency.ttft_s for p in (0, 1024, 2048, 3072)]
    assert ttft == sorted(ttft, reverse=True) and len(set(ttft)) == 4
    hybrid = scenario(model="nemotron-h-8b", gpu="l40s", input_len=4096, concurrency=16)  # vLLM: no caching by default
    assert evaluate(hybrid.model_copy(update={"shared_prefix_len": 2048}), catalog).latency.ttft_s == \
        evaluate(hybrid, catalog).latency.ttft_s  # fmt: skip


def test_the_headline_and_the_benchmark_move_together(catalog):
    """An audit's case: Llama-3.1-8B on an L40S, 2,048-token prompts of which 1,024 are a shared system prompt, 32 in
    flight. Before, the headline ignored the prompt (TTFT 285 ms, TPOT 57.3 ms) while the simulation, with lengths
    ±30 %, reused it (median TTFT 180 ms, TPOT 45.6 ms); now both do, within the closed form's held-out error."""
    r = evaluate(scenario(model="llama-3.1-8b", gpu="l40s", input_len=2048, shared_prefix_len=1024, concurrency=32),
                 catalog)  # fmt: skip
    d = serve(r, num_prompts=320, max_concurrency=32, range_ratio=0.3).bench_summary()
    assert d["median_ttft_ms"] / 1e3 == pytest.approx(r.latency.ttft_s, rel=0.2)
    assert d["median_tpot_ms"] / 1e3 == pytest.approx(r.latency.tpot_s, rel=0.1)


def test_bench_takes_the_tools_random_prefix_len(capsys):
    """vllm bench serve's --random-prefix-len P comes before --random-input-len I random tokens: the Scenario's
    shared_prefix_len P of an input_len P + I."""
    flags = ["bench", "--model", "llama-3.1-8b", "--gpu", "l40s", "--max-concurrency", "8", "--num-prompts", "40", "--json"]
    assert main([*flags, "--random-prefix-len", "1024", "--random-input-len", "1024"]) == 0
    tool = json.loads(capsys.readouterr().out)
    assert main([*flags, "--shared-prefix-len", "1024", "--random-input-len", "2048"]) == 0
    ours = json.loads(capsys.readouterr().out)
    assert tool["total_input_tokens"] == ours["total_input_tokens"] == 40 * 2048
    assert tool["median_ttft_ms"] == ours["median_ttft_ms"]
    assert main([*flags, "--random-prefix-len", "8", "--shared-prefix-len", "8"]) == 2
    assert "--random-prefix-len" in capsys.readouterr().err


def test_the_predicted_command_names_the_prefix(catalog, capsys):
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "l40s", "--input-len", "2048", "--shared-prefix-len",
                 "1024"]) == 0  # fmt: skip
    assert "--random-prefix-len 1024 --random-input-len 1024 --random-output-len 256" in capsys.readouterr().out
