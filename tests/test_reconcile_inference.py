"""What `calc reconcile` reads where a log is silent or wrapped: the batch limits a V1 server ran (its "Chunked
prefill is enabled with max_num_batched_tokens=N" line, else vLLM's defaults for the GPU) and an engine config line
wrapped over indented lines."""

from pathlib import Path

import pytest
from test_reconcile import LOGS, run_json

from boundary.vllm_log import parse_log


def test_a_server_started_without_batch_flags_reconciles_at_vllms_defaults(capsys):
    """Qwen3-Next-80B on two H200s, `vllm serve` with TP 2 alone (vLLM 0.10.2): the log says "Chunked prefill is
    enabled with max_num_batched_tokens=8192", and an H200 (70 GiB or more, not an A100) runs 1,024 sequences by
    default. The planner's 2,048 / 256 were used before (its activation estimate 0.29 GiB; 2.02 GiB now, the log's
    5.58: the plan's note on vLLM 0.10–0.19's torch sampler accounts for the rest, below). The hybrid's 544-token attention blocks are the plan's own: 7,162 blocks // 4 groups × 544 = 973,760
    tokens, as logged, and the 14.77x at 262,144 tokens, within rounding."""
    d = run_json(capsys, LOGS / "h200x2-qwen3-next-80b-tp2-defaults.log", "--model", "qwen3-next-80b-a3b")
    assert (d["scenario"]["max_num_batched_tokens"], d["scenario"]["max_num_seqs"]) == (8192, 1024)
    assert d["matches"]["num_gpu_blocks"] and d["matches"]["kv_cache_tokens"] and d["matches"]["max_concurrency"]
    assert d["logged"]["kv_cache_tokens"] == 973_760 and d["logged"]["max_concurrency"] == 14.77
    assert not any("ignored the log's block_size" in n for n in d["notes"])
    assert any("attention block size to 544" in n for n in d["notes"])


def test_an_engine_config_line_wrapped_over_indented_lines_is_read_whole():
    """A published EXAONE-4.0-32B-FP8 log (vLLM 0.11.0 on an L40S) shows its config line wrapped: "… with config:"
    and then indented "model='…', dtype=…" lines. Read alone, the first line gave nothing, so the FP8 weights were
    sized as bf16 (59.6 GiB against the logged 30.99). The continuation lines join it; a log line after them does not."""
    from boundary.log_fields import log_scenario_fields

    text = "\n".join([
        "(EngineCore_DP0 pid=12117) INFO 03-03 07:21:25 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config:",
        "  model='LGAI-EXAONE/EXAONE-4.0-32B-FP8', dtype=torch.bfloat16, max_seq_len=4096,",
        "  tensor_parallel_size=1, quantization=fp8, enforce_eager=True, enable_prefix_caching=True",
        "(EngineCore_DP0 pid=12117) INFO 03-03 07:21:27 [gpu_model_runner.py:2602] Starting to load model …",
        "  block_size=64",  # indented, but after another record: not the config's
        "(EngineCore_DP0 pid=12117) INFO 03-03 07:22:47 [gpu_worker.py:298] Available KV cache memory: 10.31 GiB",
    ])  # fmt: skip
    log = parse_log(text)
    fields, _ = log_scenario_fields(log)
    assert (fields["dtype"], fields["enforce_eager"], fields["max_model_len"]) == ("fp8", True, 4096)
    assert log.config["model"] == "LGAI-EXAONE/EXAONE-4.0-32B-FP8" and "block_size" not in log.config


def test_a_debug_logs_profiling_line_gives_the_activation_peak_and_non_torch_memory():
    """vLLM V1 at DEBUG (a published debugging write-up, Llama-3.2-1B on a 48 GB card): "Memory profiling takes 7.68
    seconds. Total non KV cache memory: 2.78GiB; torch peak memory increase: 0.45GiB; non-torch forward increase
    memory: 0.02GiB; weights memory: 2.32GiB." — the activation peak and non-torch rows, which the INFO lines omit."""
    log = parse_log("DEBUG 08-06 10:25:44 [gpu_worker.py:275] Memory profiling takes 7.68 seconds. Total non KV cache "
                    "memory: 2.78GiB; torch peak memory increase: 0.45GiB; non-torch forward increase memory: 0.02GiB; "
                    "weights memory: 2.32GiB.")  # fmt: skip
    assert log.first("activation_gib").value == 0.45 and log.first("non_torch_gib").value == 0.02


def test_the_torch_sampler_note_reproduces_the_qwen3_next_log(catalog):
    """The same log (vLLM 0.10.2, pip): "Actual usage is 74.28 GiB for weight, 5.58 GiB for peak activation, 1.38 GiB
    for non-torch memory, and 2.37 GiB for CUDAGraph memory" out of 125.83 GiB, and 44.59 GiB available, 7,162
    blocks: 125.83 − 74.28 − 5.58 − 1.38 = 44.59, the CUDA graphs not subtracted (before 0.20). The profiling run
    samples min(1,024, 8,192) = 1,024 rows of the full 151,936-token vocabulary on each GPU (all-gathered over TP)
    and sorts them in torch at about 38 bytes a logit: 1,024 · 151,936 · 38 B = 5.51 GiB, where the estimate counts
    12 (1.74 GiB), 3.77 GiB short. With the log's weights and non-torch memory, the blocks the note gives are within
    0.5 % of the logged 7,162; the plan alone is 8 % over."""
    import re

    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    text = (LOGS / "h200x2-qwen3-next-80b-tp2-defaults.log").read_text()
    assert "Available KV cache memory: 44.59 GiB" in text and "1.38 GiB for non-torch memory" in text
    s = Scenario(model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2, engine_version="0.10.2",
                 max_num_batched_tokens=8192, max_num_seqs=1024, max_model_len=262144,
                 weights_memory_bytes=74.2812 * 2**30, non_torch_memory_bytes=1.38 * 2**30)  # fmt: skip
    r = evaluate(s, catalog)
    assert not r.memory.cudagraph_subtracted
    note = next(n for n in r.notes if "sorts them in torch" in n)
    assert f"{1024 * 151936 * (38 - 12) / 2**30:.2f} GiB more" in note
    blocks = int(re.search(r"([0-9,]+) blocks instead of", note).group(1).replace(",", ""))
    assert blocks == pytest.approx(7162, rel=0.005) and r.memory.num_gpu_blocks > 1.07 * 7162
    # releases with another sampler, SGLang, and a measured activation peak get no such note
    for other in (dict(engine_version="latest"), dict(engine_version="0.9.2"), dict(engine="sglang"),
                  dict(activation_memory_bytes=5.58 * 2**30)):  # fmt: skip
        assert not any("sorts them in torch" in n for n in evaluate(s.model_copy(update=other), catalog).notes)


def test_releases_before_0_20_keep_the_cuda_graphs_out_of_the_pool(catalog):
    """The same log's arithmetic: 125.83 − 74.28 (weights) − 5.58 (activation) − 1.38 (non-torch) = 44.59 GiB
    available, as logged; its 2.37 GiB of CUDA graphs were captured after the pool was sized. vLLM 0.20 and later
    subtract an estimate of them first (history, 2026-12-05 (11)); the plan follows the release it is given."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    logged = dict(weights_memory_bytes=74.2812 * 2**30, activation_memory_bytes=5.58 * 2**30,
                  non_torch_memory_bytes=1.38 * 2**30, cudagraph_memory_bytes=2.37 * 2**30)  # fmt: skip
    s = Scenario(model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2, engine_version="0.10.2",
                 max_num_batched_tokens=8192, max_num_seqs=1024, max_model_len=262144, **logged)  # fmt: skip
    old = evaluate(s, catalog).memory
    # the spec's 139.80 GiB against the log's 139.81, and the log's two-decimal rounding: within 0.02 GiB
    assert old.kv_cache_memory_bytes / 2**30 == pytest.approx(44.59, abs=0.02)
    new = evaluate(s.model_copy(update={"engine_version": "latest"}), catalog).memory
    assert new.cudagraph_subtracted and not old.cudagraph_subtracted
    assert old.kv_cache_memory_bytes - new.kv_cache_memory_bytes == pytest.approx(2.37 * 2**30)
    sglang = evaluate(s.model_copy(update={"engine": "sglang", "engine_version": "0.5.6"}), catalog).memory
    # SGLang's own arithmetic (history (25)): its fraction of what is free before loading, less the weights; the
    # activations and graphs come out of the rest: (139.80 − 1.38) · 0.9 − 74.2812 = 50.2968 GiB
    assert not sglang.cudagraph_subtracted
    rest = (139.80 - 1.38) * 0.9 - 74.2812
    assert (sglang.kv_cache_memory_bytes + sglang.state_pool_bytes) / 2**30 == pytest.approx(rest, abs=0.01)
    # Qwen3-Next is hybrid: SGLang carves its state slots first, rest · 0.9 / 1.9 of it to a whole slot (history (28))
    per_slot = sglang.state_pool_bytes / sglang.state_slots
    assert 0 <= rest * 2**30 * 0.9 / 1.9 - sglang.state_pool_bytes < per_slot


def test_the_plan_prints_the_kv_cache_size_as_its_release_does(capsys, catalog):
    """vLLM to 0.20.0 printed "GPU KV cache size" as num_blocks · block_size, a hybrid model's as ⌊num_blocks /
    groups⌋ · block_size; after it int(concurrency · max_model_len) (reference/vllm_kv.md §5: the 0.20.2 wheel). The
    log's 973,760 (⌊7,162 / 4⌋ · 544) is what the calibrated plan prints too, where it printed 14.77 · 262,144 =
    3,871,083 before."""
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    d = run_json(capsys, LOGS / "h200x2-qwen3-next-80b-tp2-defaults.log", "--model", "qwen3-next-80b-a3b")
    assert d["calibrated"]["kv_cache_tokens"] == d["predicted"]["kv_cache_tokens"] == 7_162 // 4 * 544 == 973_760
    hybrid = dict(model="qwen3-next-80b-a3b", gpu="h200", tensor_parallel_size=2, max_model_len=262_144)
    for version in ("0.10.2", "0.19.0"):
        m = evaluate(Scenario(engine_version=version, **hybrid), catalog).memory
        assert m.kv_groups == 4 and m.kv_cache_tokens == m.num_gpu_blocks // 4 * m.block_size
    m = evaluate(Scenario(engine_version="0.20.2", **hybrid), catalog).memory
    assert m.kv_cache_tokens == int(m.max_concurrency * 262_144)
    dense = evaluate(Scenario(engine_version="0.15.0"), catalog).memory  # the seed's Qwen2.5-7B on an RTX 4090
    assert dense.kv_cache_tokens == dense.num_gpu_blocks * 16


def test_vllm_0_20_0_still_prints_the_old_kv_cache_size(capsys, catalog):
    """RedHatAI/Qwen3.6-35B-A3B-NVFP4 under vLLM 0.20.0 (tests/data/vllm_logs/redhat-qwen3.6-35b-a3b-nvfp4-v0.20.0.log):
    82.42 GiB of fp8 KV with prefix caching (align mode), block size 2,096. A request takes ⌈65,536 / 2,096⌉ = 32
    full-attention blocks and 2 for each of its 3 GDN groups, 38: 108.50x is 4,123 / 38, and the logged 2,158,880
    tokens are ⌊4,123 / 4 groups⌋ · 2,096, not int(4,123 / 38 · 65,536) = 7,110,656, which the 0.20.2 wheel prints."""
    assert f"{4_123 / 38:.2f}" == "108.50" and 4_123 // 4 * 2_096 == 2_158_880 and int(4_123 / 38 * 65_536) == 7_110_656
    d = run_json(capsys, LOGS / "redhat-qwen3.6-35b-a3b-nvfp4-v0.20.0.log", "--model", "qwen3.6-35b-a3b", "--gpu",
                 "rtx-pro-6000-blackwell", "--kv-cache-dtype", "fp8", "--enable-prefix-caching")
    assert d["predicted"]["num_gpu_blocks"] == 4_123 and d["predicted"]["kv_cache_tokens"] == 2_158_880
    assert d["matches"]["kv_cache_tokens"] and d["matches"]["max_concurrency"]
    from calc.evaluate import evaluate
    from calc.scenario import Scenario

    same = dict(model="qwen3.6-35b-a3b", gpu="rtx-pro-6000-blackwell", kv_cache_dtype="fp8", max_model_len=65_536,
                enable_prefix_caching=True, max_num_batched_tokens=8_192, kv_cache_memory_bytes=int(82.42 * 2**30))
    assert evaluate(Scenario(engine_version="0.20.0", **same), catalog).memory.kv_cache_tokens == 2_158_880
    assert evaluate(Scenario(engine_version="0.20.2", **same), catalog).memory.kv_cache_tokens == 7_110_656


def test_a_v1_log_that_prints_its_version_is_held_to_its_own_concurrency_formula(capsys):
    """Mistral-7B-Instruct-v0.2 under vLLM 0.11.0 (tests/data/vllm_logs/arm-lp-dgx-spark-mistral-7b-v0.2-gptq-v0.11.log):
    52,510 blocks, 25.64x at 32,768 = 52,510 / ⌈32,768 / 16⌉. Planned with Mistral-7B-v0.1's spec (a 4,096-token
    window: ⌈min(4,095 + 2,048, 32,768) / 16⌉ + 1 = 385 blocks a request, 136.39x) the row matched anyway through V0's
    blocks · 16 / L, a formula vLLM 0.11 does not print; with v0.2's shape (no window; the v0.3 config) it matches."""
    assert f"{52_510 / 2_048:.2f}" == "25.64" and f"{52_510 / 385:.2f}" == "136.39"
    log = LOGS / "arm-lp-dgx-spark-mistral-7b-v0.2-gptq-v0.11.log"
    wrong = run_json(capsys, log, "--model", "mistral-7b-v0.1")
    assert not wrong["matches"]["max_concurrency"] and round(wrong["predicted"]["max_concurrency"], 2) == 136.39
    right = run_json(capsys, log, "--model", str(Path(__file__).parent / "data/hf_configs/mistral-7b-instruct-v0.3/config.json"))
    assert right["predicted"]["num_gpu_blocks"] == 52_510 and right["matches"]["max_concurrency"]


def test_the_calibration_adopts_a_pool_printed_in_bytes(capsys):
    """Qwen3-235B-A22B-FP8 on eight L40S under vLLM 0.10.2 (tests/data/vllm_logs/l40sx8-qwen3-235b-a22b-2507-fp8-tp8-ep-v0.10.2.log):
    its workers print the pool in bytes ("Current kv cache memory in use is 11423138508 bytes", the smallest) beside
    overheads of two decimals. A token is 94 layers · 2 · 1 KV head a GPU (4 over 8 ranks, replicated) · 128 · 2 B =
    48,128 B, a block 770,048 B: ⌊11,423,138,508 / 770,048⌋ = 14,834 blocks, 237,344 tokens, the smallest worker's
    line. Rebuilt from the two-decimal overheads, the calibrated plan gave 14,849."""
    assert 94 * 2 * 1 * 128 * 2 * 16 == 770_048 and 11_423_138_508 // 770_048 == 14_834 and 14_834 * 16 == 237_344
    d = run_json(capsys, LOGS / "l40sx8-qwen3-235b-a22b-2507-fp8-tp8-ep-v0.10.2.log", "--model", "qwen3-235b-a22b",
                 "--dtype", "fp8", "--gpu", "l40s", "--tensor-parallel-size", "8", "--enable-expert-parallel")
    assert d["logged"]["kv_cache_tokens"] == 237_344 and d["matches"]["kv_cache_tokens"]
    assert d["calibrated"]["num_gpu_blocks"] == 14_834 and d["calibrated"]["kv_cache_tokens"] == 237_344
    assert d["calibration"]["kv_cache_memory_bytes"] == 14_834 * 770_048


@pytest.mark.parametrize("name, blocks", [("vllm-10517-llama-3.1-8b-rtx3090-v0-20k.log", 1_952),
                                          ("vllm-10517-llama-3.1-8b-rtx3090-v0-29k.log", 1_478)])  # fmt: skip
def test_v0_profiling_overheads_reproduce_the_logged_blocks(capsys, name, blocks):
    """vllm#10517's V0 logs print their overheads with two decimals (weights, activation, non-torch, total): rebuilt
    from them the calibrated pool was 1,951 and 1,480 blocks against the logged 1,952 and 1,478 (a page audit,
    2026-12-06); the non-torch memory now takes the rounding, and the calibration gives the logged count."""
    d = run_json(capsys, LOGS / name)
    assert d["logged"]["num_gpu_blocks"] == blocks and d["calibrated"]["num_gpu_blocks"] == blocks
    assert {"weights_memory_bytes", "activation_memory_bytes", "non_torch_memory_bytes"} <= set(d["calibration"])


def test_an_sglang_log_is_held_to_sglangs_own_token_arithmetic(capsys):
    """SGLang sizes its pool in tokens and prints K and V in GiB with two decimals (tests/data/sglang_logs): sglang
    PR #4760's Llama-3.1-8B on an H100, 442,750 tokens in 27.02 + 27.02 GiB: at 32 · 2 · 8 · 128 · 2 = 131,072 B a
    token, ⌊(54.04 ± 0.01) GiB / 131,072⌋ = 442,613 … 442,777 holds the logged count. The same for vllm#21348's
    Qwen3-235B-FP8 at TP 4 (one KV head a GPU: 48,128 B): 16.46 ± 0.01 GiB → 367,001 … 367,447 ∋ 367,404."""
    import json

    from boundary.cli import main

    logs = Path(__file__).parent / "data" / "sglang_logs"
    assert (54.03 * 2**30) // 131_072 <= 442_750 <= (54.05 * 2**30) // 131_072
    assert 94 * 2 * 1 * 128 * 2 == 48_128 and (16.45 * 2**30) // 48_128 <= 367_404 <= (16.47 * 2**30) // 48_128
    for name, flags in (("sglang-pr4760-llama-3.1-8b-h100.log", ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]),
                        ("sglang-21348-qwen3-235b-a22b-fp8-tp4-h100.log", ["--model", "qwen3-235b-a22b", "--dtype", "fp8",
                                                                          "--gpu", "h100-sxm", "--tensor-parallel-size", "4"])):  # fmt: skip
        assert main(["reconcile", str(logs / name), *flags, "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        row = next(r for r in d["rows"] if r["quantity"] == "KV cache (tokens)")
        assert d["engine"] == "sglang" and row["matches"] == "yes", row
    assert main(["reconcile", str(logs / "sglang-pr4760-llama-3.1-8b-h100.log"), "--model", "qwen3-8b", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)  # another model's bytes per token: the tokens do not follow
    assert next(r for r in d["rows"] if r["quantity"] == "KV cache (tokens)")["matches"] == "no"
