"""The vLLM startup-log parser (boundary/vllm_log.py) on real logs (tests/data/vllm_logs, sources in each file's
header and INDEX.md): what it reads, per rank and per engine version, and what it refuses by name.

Reference numbers are copied from the log lines themselves (cited by file), never taken from the program's output.
"""

import pytest
from test_reconcile import LOGS, log

from boundary.reconcile import match_model, reconcile
from boundary.vllm_log import parse_log
from calc.errors import InputError

# --- the parser ----------------------------------------------------------------------------------------------------


def test_header_ends_at_first_blank_line_and_hash_body_lines_are_log():
    p = log("vllm-10517-llama-3.1-8b-rtx3090-v0-29k.log")
    assert p.header["source"] == "https://github.com/vllm-project/vllm/issues/10517"
    # body: "# GPU blocks: 1478, # CPU blocks: 2048" and the V0 max-seq-len error "(29000) … (23648)"
    assert [m.value for m in p.get("num_gpu_blocks")] == [1478]
    assert [m.value for m in p.get("num_cpu_blocks")] == [2048]
    err = p.first("seq_len_error_tokens")
    assert (err.arg, err.value) == (29000, 23648)
    assert p.engine == "V0"
    assert p.first("available_kv_gib").value == 2.89  # "kv_cache_size=2.89GiB"
    assert p.first("max_concurrency").arg == 29000


def test_parser_keeps_every_rank_and_the_minimum():
    p = log("vllm-pr20665-deepseek-v2-lite-pp.log")
    avail = p.get("available_kv_gib")
    assert sorted((m.rank, m.value) for m in avail) == [(0, 12.13), (1, 12.13), (2, 11.33), (3, 11.33)]
    assert min(m.value for m in avail) == 11.33
    assert [m.value for m in p.get("kv_cache_tokens")] == [807_792, 807_792]  # printed once per worker (v0.9)
    assert p.first("max_concurrency").arg == 1024 and p.first("max_concurrency").value == 788.86


def test_docker_prefixed_worker_lines():
    p = log("vllm-17469-qwen3-30b-a3b-4xa10.log")
    assert sorted(m.rank for m in p.get("weights_gib")) == [0, 1, 2, 3]
    assert {m.value for m in p.get("weights_gib")} == {14.2474}
    assert len(p.workers) == 4


def test_v0_065_profiling_and_0102_actual_usage_lines():
    text = (
        "INFO 01-02 10:00:00 worker.py:241] Memory profiling takes 4.35 seconds\n"
        "the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\n"
        "model weights take 14.99GiB; non_torch_memory takes 0.19GiB; PyTorch activation peak memory takes 1.23GiB;"
        " the rest of the memory reserved for KV Cache is 54.86GiB.\n"
        "INFO 01-02 10:00:01 [gpu_worker.py:276] Free memory on device (78.5/79.19 GiB) on startup. Desired GPU memory "
        "utilization is (0.9, 71.27 GiB). Actual usage is 15.27 GiB for weight, 1.39 GiB for peak activation, 0.13 GiB "
        "for non-torch memory, and 0.55 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with "
        "`--kv-cache-memory=58123456789` to fit into requested memory. Current kv cache memory in use is 58123456789 "
        "bytes.\n"
    )
    p = parse_log(text)
    assert [m.value for m in p.get("total_memory_gib")] == [79.19, 79.19]
    assert [m.value for m in p.get("activation_gib")] == [1.23, 1.39]
    assert [m.value for m in p.get("non_torch_gib")] == [0.19, 0.13]
    assert [m.value for m in p.get("available_kv_gib")] == [54.86]
    assert [m.value for m in p.get("cudagraph_gib")] == [0.55]
    assert p.first("kv_cache_bytes").value == 58_123_456_789
    assert p.first("gpu_memory_utilization").value == 0.90


def test_the_newer_actual_usage_line_gives_the_pool_in_gib():
    """A later release folds weights and non-torch memory into "consumed memory" and prints the pool in GiB, with
    the KV size and concurrency on one line (a journal quoted verbatim in a public test module, stored code index
    file 70918295951): the pool was read as not logged."""
    text = (
        "(EngineCore pid=42623) INFO 09-18 22:23:41 [gpu_worker.py:298] Free memory on device (94.41/94.97 GiB) on "
        "startup. Desired GPU memory utilization is (0.97, 92.12 GiB). Actual usage is 81.7 GiB for consumed memory "
        "(weights + non-torch), 1.78 GiB for peak activation, and 0.28 GiB for CUDAGraph memory. Replace "
        "gpu_memory_utilization config with `--kv-cache-memory=8820325233` (8.21 GiB) to fit into requested memory, or "
        "`--kv-cache-memory=11273977344` (10.5 GiB) to fully utilize gpu memory. Current kv cache memory in use is "
        "8.64 GiB.\n"
        "(EngineCore pid=42623) INFO 09-18 22:23:42 [kv_cache_utils.py:1229] GPU KV cache size: 315,039 tokens, "
        "Maximum concurrency for 262,144 tokens per request: 1.20x\n"
    )
    p = parse_log(text)
    assert [m.value for m in p.get("available_kv_gib")] == [8.64] and p.first("available_kv_gib").half_unit == 0.005
    assert p.first("total_memory_gib").value == 94.97 and p.first("activation_gib").value == 1.78
    assert p.first("kv_cache_tokens").value == 315_039 and p.first("max_concurrency").value == 1.20
    assert not p.get("non_torch_gib")  # folded into "consumed memory": not a non-torch figure


def test_an_sglang_log_is_named_as_one():
    """SGLang's memory lines (sgl-project/sglang PR #4760's log of Llama-3.1-8B on an H100) are not vLLM's: the
    message says what the log is and how to plan it, not only that no vLLM line was found."""
    text = ("[2025-03-25 16:37:06 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.48 GB, "
            "mem usage=15.11 GB.\n[2025-03-25 16:37:06 TP0] KV Cache is allocated. #tokens: 442750, K size: 27.02 GB, "
            "V size: 27.02 GB\n")  # fmt: skip
    with pytest.raises(InputError) as e:
        parse_log(text)
    assert e.value.field == "log" and "SGLang startup log" in e.value.message and "--engine sglang" in e.value.message


def test_not_a_vllm_log_is_an_input_error():
    with pytest.raises(InputError) as e:
        parse_log("Traceback (most recent call last):\n  File 'x.py', line 1\nKeyError: 'foo'\n")
    assert e.value.field == "log" and "no vLLM startup lines" in e.value.message
    with pytest.raises(InputError):
        parse_log("")


def test_truncated_log_is_an_input_error(catalog):
    lines = (LOGS / "vllm-17469-qwen3-30b-a3b-4xa10.log").read_text().splitlines()
    head = "\n".join(lines[:12])  # header + the weight-loading lines, cut before the KV-cache lines
    with pytest.raises(InputError) as e:
        reconcile(parse_log(head), catalog)
    assert e.value.field == "log" and "before vLLM sized the KV cache" in e.value.message
    cut = "INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 42,"  # cut mid-number
    with pytest.raises(InputError):
        parse_log(cut)


def test_model_names_resolve_to_shipped_specs(catalog):
    assert match_model("meta-llama/Llama-3.1-8B-Instruct", catalog) == "llama-3.1-8b"
    assert match_model("meta-llama/Meta-Llama-3.1-8B-Instruct", catalog) == "llama-3.1-8b"
    assert match_model("/models/Qwen3-30B-A3B/", catalog) == "qwen3-30b-a3b"
    assert match_model("deepseek-ai/DeepSeek-V2-Lite", catalog) == "deepseek-v2-lite"
    assert match_model("someone/not-a-model", catalog) is None

