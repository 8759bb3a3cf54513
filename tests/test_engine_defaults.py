"""The batch limits an engine's server starts with when neither is given (calc.engine_defaults), release by
release: vLLM's engine/arg_utils.py `_set_default_args` in the released wheels of 0.8.5, 0.9.0 and 0.10.2."""

from calc.engine_defaults import default_budget


def test_vllm_defaults_by_memory_class_and_release():
    # 0.9 and later: 70 GiB or more and not an A100 → 8,192 tokens (the LLM class 16,384) and 1,024 sequences
    assert default_budget("vllm", 79.2, "h100-sxm") == (8192, 1024)
    assert default_budget("vllm", 79.2, "h100-sxm", llm_class=True) == (16384, 1024)
    assert default_budget("vllm", 79.2, "a100-80gb-sxm", version="0.9.0") == (2048, 256)
    assert default_budget("vllm", 79.2, "a100-80gb-sxm") == (2048, 256)  # latest
    assert default_budget("vllm", 23.6, "rtx-4090") == (2048, 256)
    assert default_budget("vllm", 23.6, "rtx-4090", llm_class=True) == (8192, 256)
    # 0.8.5: `if device_memory >= 70 * GiB_bytes:` alone, so an 80 GB A100 took the large defaults too
    assert default_budget("vllm", 79.2, "a100-80gb-sxm", version="0.8.5") == (8192, 1024)
    assert default_budget("vllm", 39.4, "a100-40gb", version="0.8.5") == (2048, 256)


def test_sglang_chunk_by_memory_class():
    """SGLang 0.5's --chunked-prefill-size: 2,048 under 35 GiB, 4,096 under 60, 8,192 under 160, else 16,384."""
    assert [default_budget("sglang", g, "x")[0] for g in (23.6, 44.4, 79.2, 139.8, 178.4)] == [2048, 4096, 8192,
                                                                                              8192, 16384]  # fmt: skip
