"""Speculative decoding's speed under vLLM (draft_acceptance_rate; calc.step_time.StepModel._spec,
calc.step_inputs.draft_step_model): a step verifies 1 + k tokens a decoding request, the MTP drafter runs k passes,
and a request gains τ = 1 + k · a tokens a step.

Published: vLLM's own identity between its printed figures (v1/spec_decode/metrics.py: mean acceptance length =
1 + accepted / drafts, acceptance rate = accepted / draft tokens, draft tokens = drafts · k) on public log lines; the
vLLM recipes' GLM-5-FP8 run on eight H200 with MTP 3 at 21.33 % acceptance (tests/data/benchmarks/vllm-recipes-glm5-
fp8-h200.yaml): its mean ITL is τ × its mean TPOT, and the plan's TPOT as it fell when first predicted, blind
(docs/calibration-history.md (36))."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from boundary.cli import main
from boundary.log_fields import log_scenario_fields
from boundary.vllm_log import parse_log
from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.speculative import accepted_tokens
from calc.step_inputs import step_model

DATA = Path(__file__).parent / "data"
DSV3 = {"model": "deepseek-v3", "gpu": "h200", "tensor_parallel_size": 8}


def plan(catalog, **kw):
    return evaluate(Scenario(**kw), catalog)


def steps(catalog, **kw):
    r = plan(catalog, **kw)
    return step_model(r.scenario, r.model, r.gpu, r.memory, r.engine)


def test_tau_is_vllms_own_identity(catalog):
    # a public vLLM log line (depth 7): "Mean acceptance length: 6.82, … Accepted: 256 tokens, Drafted: 308 tokens, …
    # Avg Draft acceptance rate: 83.1%": 308 / 7 = 44 drafts, 1 + 256 / 44 = 6.818…
    s = Scenario(model="qwen3-next-80b-a3b", gpu="h200", speculative_method="mtp", num_speculative_tokens=7,
                 draft_acceptance_rate=256 / 308)  # fmt: skip
    assert accepted_tokens(s, catalog.models["qwen3-next-80b-a3b"]) == pytest.approx(1 + 256 / 44)
    assert round(1 + 256 / 44, 2) == 6.82 and round(100 * 256 / 308, 1) == 83.1
    # no rate, no method, or an engine that does not draft here: planned without speculation
    for kw in ({"draft_acceptance_rate": None}, {"speculative_method": "none"}, {"engine": "sglang"}):
        assert accepted_tokens(s.model_copy(update=kw), catalog.models["qwen3-next-80b-a3b"]) is None


def test_a_log_gives_its_acceptance_rate(catalog):
    """Every SpecDecoding interval's accepted tokens over its drafted ones. The two lines are verbatim from public
    logs of other servers (acceptance counts only), appended to a stock vLLM 0.23.0 log with MTP 3."""
    text = (DATA / "vllm_logs" / "p2p-bench-qwen3.6-27b-fp8-mtp3-tp4.log").read_text()
    lines = ["INFO 09-04 11:01:16 [metrics.py:125] SpecDecoding metrics: Mean acceptance length: 6.82, Current "
             "speculative depth: 7, Accepted throughput: 6.46 tokens/s, Drafted throughput: 7.77 tokens/s, Accepted: "
             "256 tokens, Drafted: 308 tokens, Per-position acceptance rate: 1.000, 1.000, 1.000, 1.000, 0.795, 0.614, "
             "0.409, Avg Draft acceptance rate: 83.1%",
             "INFO 09-16 05:26:57 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 3.00, Accepted "
             "throughput: 9.00 tokens/s, Drafted throughput: 9.00 tokens/s, Accepted: 90 tokens, Drafted: 90 tokens, "
             "Per-position acceptance rate: 1.000, 1.000, Avg Draft acceptance rate: 100.0%"]  # fmt: skip
    fields, _ = log_scenario_fields(parse_log(text + "\n" + "\n".join(lines) + "\n"))
    assert fields["speculative_method"] == "mtp" and fields["num_speculative_tokens"] == 3
    assert fields["draft_acceptance_rate"] == pytest.approx((256 + 90) / (308 + 90), abs=1e-4)
    assert "draft_acceptance_rate" not in log_scenario_fields(parse_log(text))[0]  # a startup log has none


def test_a_decode_step_by_hand(catalog):
    """Llama-3.1-8B on an H100, ngram (no drafter on the GPU), one request, a = 0.5, k = 3: τ = 2.5. Four tokens
    read the same weights as one (memory-bound: 4 · 2 · 7.5 G FLOP ≈ 60 GFLOP is ~1 ms at the ramp's rate, the 15 GB
    of weights ~5 ms), so the weights' term per token is the one-token step's / 2.5; the step's fixed costs too."""
    base = steps(catalog, model="llama-3.1-8b", gpu="h100-sxm")
    spec = steps(catalog, model="llama-3.1-8b", gpu="h100-sxm", speculative_method="ngram", draft_acceptance_rate=0.5)
    assert spec.accepted_tokens == 2.5 and spec.spec_tokens == 3 and spec.draft is None
    one, per_token = base.terms(0, 0, 1, 2048), spec.terms(0, 0, 1, 2048)
    assert per_token.weights_s == pytest.approx(one.weights_s / 2.5, rel=1e-12)
    assert per_token.step_overhead_s == pytest.approx(one.step_overhead_s / 2.5, rel=1e-12)
    assert per_token.kv_s == pytest.approx(one.kv_s / 2.5, rel=1e-9)  # one request's KV, read once for 4 queries
    assert per_token.draft_s == 0.0 and spec.step_s(0, 0, 1, 2048) == pytest.approx(per_token.total_s, rel=1e-12)
    # a prompt-only step keeps its own time (no request decodes in it); beside decodes a step is one token of τ, with
    # 1 / τ of the prompt tokens: τ of them are the real step, never shorter than its prompt tokens alone
    pairs = 1024 * 1025 / 2
    assert spec.step_s(1024, pairs, 0, 0) == pytest.approx(base.step_s(1024, pairs, 0, 0))
    for d in (1, 8, 64):
        assert 2.5 * spec.step_s(1024 / 2.5, pairs / 2.5, d, d * 2048) >= spec.step_s(1024, pairs, 0, 0)
    assert spec.prompt_room(2048, 64) == pytest.approx((2048 - 4 * 64) / 2.5) and spec.prompt_room(2048, 0) == 2048


def test_deepseek_v3s_drafter_by_hand(catalog):
    """DeepSeek-V3's MTP layer (config.json: layer 61, a MoE layer) at TP 8: MLA q_a 7168·1536 + q_b 1536·128·192 +
    kv_a 7168·576 + kv_b 512·128·256 + o 128·128·7168 = 187,105,280; shared expert 3·7168·2048 = 44,040,192; router
    256·7168 = 1,835,008; eh_proj 2·7168² = 102,760,448; all at the checkpoint's FP8, and the head, 129,280·7168 at
    16 bits, read again each pass; the norms whole on every GPU at 16 bits (input and post-attention 2·7168, q_a 1536,
    kv_a 512, and enorm, hnorm and the head's 3·7168). Its routed experts are the model's, one layer's worth."""
    r = plan(catalog, **DSV3, speculative_method="mtp", draft_acceptance_rate=0.7)
    m = step_model(r.scenario, r.model, r.gpu, r.memory, r.engine)
    lb = r.memory.weight_format.linear_bytes
    linear = 187_105_280 + 44_040_192 + 1_835_008 + 102_760_448
    norms = 2 * 7168 + 1536 + 512 + 3 * 7168
    assert m.draft.dense_weight_bytes == pytest.approx((linear * lb + 129_280 * 7168 * 2) / 8 + norms * 2, rel=1e-4)
    assert (m.draft.moe_layers, m.draft.blocks, m.draft.expert_bytes) == (1, 1.0, m.expert_bytes)
    assert m.draft.state_bytes_per_seq == 0 and m.draft.draft is None and not m.draft.spec_tokens
    # 256 output tokens: 255 decoded in ⌈255 / 3.1⌉ = 83 whole steps, 255 / 83 a step
    assert m.accepted_tokens == pytest.approx(255 / 83)


def test_the_plan_follows_the_acceptance(catalog):
    """Properties: no rate = no speculation in latency; TPOT falls as acceptance rises; at 0 acceptance the verify
    and the drafts cost something over no speculation; ITL (a streamed chunk) is τ × TPOT for one request."""
    none = plan(catalog, **DSV3, concurrency=1).latency
    unset = plan(catalog, **DSV3, concurrency=1, speculative_method="mtp").latency
    assert unset.tpot_s == none.tpot_s and unset.decode_terms.draft_s == 0.0
    tpots = []
    for a in (0.0, 0.25, 0.5, 0.75, 1.0):
        lat = plan(catalog, **DSV3, concurrency=1, speculative_method="mtp", draft_acceptance_rate=a).latency
        tpots.append(lat.tpot_s)
        tau = 255 / math.ceil(255 / (1 + 3 * a))  # 256 output tokens: 255 decoded in whole steps
        assert lat.step.accepted_tokens == pytest.approx(tau)
        assert lat.stream_itl_s == pytest.approx(tau * lat.tpot_s, rel=1e-9)  # the tool's ITL: a chunk
        assert lat.itl_s == pytest.approx(lat.tpot_s, rel=1e-9)  # per token, as the TPOT SLO reads it
        assert lat.decode_terms.draft_s > 0
    assert tpots == sorted(tpots, reverse=True) and tpots[0] > none.tpot_s > tpots[-1]
    assert tpots[-1] > none.tpot_s / 4  # four tokens a step at best, each step dearer than one token's


def test_the_page_note_says_how(catalog):
    r = plan(catalog, **DSV3, speculative_method="mtp", draft_acceptance_rate=0.7)
    note = next(n for n in r.notes if n.startswith("speculative decoding"))
    assert "1 + 3 × 0.7 = 3.10, 3.07 over 255 tokens in whole steps (TPOT = step / 3.07" in note
    assert "Planned with draft_acceptance_rate 0.7" in note
    r = plan(catalog, **DSV3, speculative_method="mtp")
    assert "set draft_acceptance_rate" in next(n for n in r.notes if n.startswith("speculative decoding"))


GLM5 = ["bench", "--model", str(DATA / "hf_configs" / "glm-5.2" / "config.json"), "--gpu", "h200",
        "--tensor-parallel-size", "8", "--dtype", "fp8", "--engine-version", "0.18.0", "--random-input-len", "8000",
        "--random-output-len", "1024", "--request-rate", "10", "--num-prompts", "32", "--max-model-len", "32768",
        "--speculative-method", "mtp", "--num-speculative-tokens", "3", "--draft-acceptance-rate", "0.2133"]  # fmt: skip


def test_glm5_with_mtp_as_published(capsys):
    """vLLM recipes, GLM-5-FP8 on 8 × H200, vLLM 0.18.0, MTP 3 (its printed block): mean TPOT 35.39 ms, mean ITL
    57.98 ms = 1.64 × 35.35 (a chunk carries the accepted tokens); Drafts 19,982, Draft tokens 59,946 = 3 × 19,982,
    Accepted 12,784 = 0.2133 · 59,946. First predicted blind at +6.3 % (history (36)); pinned within 15 %."""
    assert main([*GLM5, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["mean_tpot_ms"] == pytest.approx(35.39, rel=0.15)
    assert d["mean_itl_ms"] / d["mean_tpot_ms"] == pytest.approx(57.98 / 35.39, rel=0.1)
    assert d["spec_decode_acceptance_length"] == pytest.approx(1.64, abs=0.005)
    assert d["spec_decode_num_drafts"] == pytest.approx(19_982, rel=0.01)  # (32,768 − 32) / 1.6399 = 19,962
    assert d["spec_decode_draft_tokens"] == pytest.approx(59_946, rel=0.01)
    assert d["spec_decode_accepted_tokens"] == pytest.approx(12_784, rel=0.01)
    assert main(GLM5) == 0
    out = capsys.readouterr().out
    assert "---------------Speculative Decoding---------------" in out and "Acceptance length:" in out


@pytest.mark.parametrize("value", ["1.5", "-0.1", "high"])
def test_a_bad_rate_names_the_flag(capsys, value):
    try:
        code = main(["plan", "--draft-acceptance-rate", value])
    except SystemExit as e:  # argparse's own exit
        code = e.code
    assert code == 2 and "draft_acceptance_rate" in capsys.readouterr().err.replace("-", "_")


def test_no_held_out_band_beside_a_speculative_plan(catalog):
    """The held-out runs serve without speculation: their error is not the speculative plan's."""
    plain = plan(catalog, **DSV3)
    spec = plan(catalog, **DSV3, speculative_method="mtp", draft_acceptance_rate=0.7)
    assert plain.error_bands and not plain.bands_withheld
    assert spec.error_bands == {} and spec.bands_withheld.startswith("none with speculative decoding")


def test_a_speculating_request_takes_1_plus_k_of_the_budget(catalog):
    """vLLM schedules a decoding request's 1 + k tokens and takes them from max_num_batched_tokens (scheduler.py:
    token_budget -= num_new_tokens; history (37)). A 4,096-token prompt beside 256 decodes with a 2,048 budget:
    chunks of 2,048 − 256 = 1,792 tokens, 3 steps, without speculation; of 2,048 − 4 · 256 = 1,024, 4 steps, with
    k = 3. The simulation's vLLM step leaves the same room (EngineConfig.decode_tokens)."""
    from calc.bench import engine_config
    from calc.engine_cycle import prefill_terms

    base = steps(catalog, model="llama-3.1-8b", gpu="h100-sxm")
    spec = steps(catalog, model="llama-3.1-8b", gpu="h100-sxm", speculative_method="ngram", draft_acceptance_rate=0.5)
    assert (base.decode_tokens, spec.decode_tokens) == (1, 4)
    assert prefill_terms(base, 4096, budget=2048, decode_seqs=256, decode_context=256 * 2048)[1] == 3
    assert prefill_terms(spec, 4096, budget=2048, decode_seqs=256, decode_context=256 * 2048)[1] == 4
    r = plan(catalog, model="llama-3.1-8b", gpu="h100-sxm", speculative_method="ngram", draft_acceptance_rate=0.5)
    assert (engine_config(r).decode_tokens, engine_config(r).tokens_per_step) == (4, r.latency.step.accepted_tokens)


def test_whole_steps_for_short_outputs(catalog, capsys):
    """A request's N − 1 decoded tokens take ⌈(N − 1) / τ⌉ whole steps: a 2-token output gains nothing from any
    acceptance (its one decoded token is a step), and vllm bench's drafts are one a step a request."""
    one = plan(catalog, **DSV3, concurrency=1, output_len=2)
    spec = plan(catalog, **DSV3, concurrency=1, output_len=2, speculative_method="mtp", draft_acceptance_rate=1.0)
    assert spec.latency.step.accepted_tokens == 1.0 and spec.latency.tpot_s > one.latency.tpot_s  # the verify's cost
    code = main(["bench", "--model", "deepseek-v3", "--gpu", "h200", "--tensor-parallel-size", "8", "--max-concurrency",
                 "1", "--num-prompts", "20", "--random-output-len", "2", "--speculative-method", "mtp",
                 "--draft-acceptance-rate", "1", "--json"])  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["spec_decode_num_drafts"] == 20 and d["spec_decode_draft_tokens"] == 60
    assert d["mean_itl_ms"] == pytest.approx(d["mean_tpot_ms"], rel=1e-6)  # one gap: TPOT is ITL


def test_the_strict_slo_reads_the_streamed_gaps(catalog):
    """Every streamed gap (a whole speculative step, τ tokens) against the TPOT SLO: Llama-3.1-8B, ngram at 0.7,
    one request, an SLO of 5 ms a token. The plan's TPOT is under it, its every step over it: the strict variant
    is ~0, where reading the per-token times as gaps gave 36 %."""
    r = plan(catalog, model="llama-3.1-8b", gpu="h100-sxm", concurrency=1, slo_tpot_s=0.005,
             speculative_method="ngram", draft_acceptance_rate=0.7)  # fmt: skip
    lat = r.latency
    assert lat.tpot_s < 0.005 < lat.stream_itl_s
    assert r.conformance.strict_conformance < 0.01 < r.conformance.conformance
    assert r.tails.itl_max_s >= lat.stream_itl_s


def test_a_verify_writes_the_state_after_each_draft_token(catalog):
    """Qwen3-Next (Gated DeltaNet): a plain step reads and writes each request's state once (2 · state); a verify of
    1 + 3 tokens writes it after each draft token as well (vLLM's fused recurrent kernel keeps them to roll back):
    2 + 3 = 5 states a request, 5/2 of the plain step's."""
    base = steps(catalog, model="qwen3-next-80b-a3b", gpu="h200")
    spec = steps(catalog, model="qwen3-next-80b-a3b", gpu="h200", speculative_method="ngram", draft_acceptance_rate=0.5)
    plain, per_token = base.terms(0, 0, 16, 16 * 2048), spec.terms(0, 0, 16, 16 * 2048)
    assert per_token.state_s * spec.accepted_tokens == pytest.approx(plain.state_s * 5 / 2, rel=1e-12)


def test_data_parallel_peers_verify_too(catalog):
    """At DP 4 each busy peer runs its decodes' 1 + k tokens through the shared MoE layers, as this rank does:
    16 decodes + 48 draft tokens a rank, 3 peers → 3 · 64 more tokens (not 3 · 16)."""
    m = steps(catalog, model="qwen3-30b-a3b", gpu="h100-sxm", data_parallel_size=4, concurrency=64,
              speculative_method="ngram", draft_acceptance_rate=0.5)  # fmt: skip
    assert m.dp == 4 and m.dp_busy == 1.0
    assert m.moe_tokens(64, 16, 48) == 64 + 3 * 64 and m.moe_tokens(16, 16) == 16 + 3 * 16


def test_the_search_times_without_speculation_and_says_so(catalog):
    """The search's arrays have no draft: every configuration is sized and timed without it, the note says so, and
    the scenario its rows open carries neither the method nor the rate (a rate alone would do nothing)."""
    from calc.search import search
    from calc.search_rows import scenario_of

    r = search(Scenario(**DSV3, speculative_method="mtp", draft_acceptance_rate=0.7, search_gpus="h200"), catalog)
    assert any(n.startswith("speculative_method mtp is not searched") for n in r.notes)
    assert r.cheapest is not None
    s = scenario_of(r, r.cheapest)
    assert (s.speculative_method, s.draft_acceptance_rate) == ("none", None)
    note = plan(catalog, **DSV3, draft_acceptance_rate=0.7).notes
    assert "draft_acceptance_rate: no effect without a speculative_method (mtp, eagle, eagle3 or ngram)" in note


def test_decodes_that_fill_the_budget(catalog, capsys):
    """Llama-3.1-8B on an H100, 256 in flight, ngram k = 8 at 0.7: 256 × 9 = 2,304 tokens of decodes exceed the
    2,048-token budget. The closed form keeps (2,048 − 1,024) // 9 = 113 decoding and the rest queued, which is the
    simulation's steady state: its TTFT and throughput within 30 % of the simulated run's (they were 93.7 s against
    8.9 s with a 1-token prompt chunk), and a prompt's chunk is never one token."""
    from calc.latency import speculating_room

    assert speculating_room(2048, 1024, 9) == 113 and speculating_room(2048, 4096, 9) == 113
    assert speculating_room(2048, 1024, 4096) == 1
    kw = dict(model="llama-3.1-8b", gpu="h100-sxm", input_len=1024, output_len=256, concurrency=256,
              speculative_method="ngram", num_speculative_tokens=8, draft_acceptance_rate=0.7)  # fmt: skip
    r = plan(catalog, **kw)
    assert r.latency.decode_batch <= 113 and r.latency.chunk_tokens >= 1024
    assert any("raise max_num_batched_tokens above 2,304" in n for n in r.notes)
    main(["bench", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--random-input-len", "1024", "--random-output-len",
          "256", "--max-concurrency", "256", "--num-prompts", "1000", "--speculative-method", "ngram",
          "--num-speculative-tokens", "8", "--draft-acceptance-rate", "0.7", "--json"])  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert r.latency.ttft_s == pytest.approx(d["median_ttft_ms"] / 1e3, rel=0.3)
    assert r.latency.requests_per_s == pytest.approx(d["request_throughput"], rel=0.3)


def test_a_prompt_waits_for_a_whole_speculative_step(catalog):
    """A prompt joins at a real step's end: the wait for the step in flight and a decode instance's first decode step
    are whole steps, whatever the acceptance (the per-token step shrank them by τ)."""
    waits, firsts = [], []
    for a in (0.0, 0.5, 1.0):
        lat = plan(catalog, **DSV3, concurrency=32, speculative_method="mtp", draft_acceptance_rate=a).latency
        waits.append(dict(lat.e2e_parts)["waiting for the step in flight"])
        lat = plan(catalog, model="glm-4.5-air", gpu="h200", tensor_parallel_size=2, concurrency=32, disaggregated=True,
                   speculative_method="mtp", draft_acceptance_rate=a).latency  # fmt: skip
        firsts.append(dict(lat.e2e_parts)["first decode step"])
        assert firsts[-1] == pytest.approx(lat.stream_itl_s, rel=1e-9)
    assert max(waits) / min(waits) < 1.5 and max(firsts) / min(firsts) < 1.05
