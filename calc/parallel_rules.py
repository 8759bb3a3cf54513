"""vLLM's rules for splitting a model over GPUs: the divisibility of tensor parallelism, the families without pipeline
parallelism, and decode context parallelism by release and attention kind. Each check returns the reason vLLM refuses
the layout, or None."""

from __future__ import annotations

from calc.engine_spec import version_tuple
from calc.scenario import Scenario
from calc.specs import ModelSpec


def tp_check(s: Scenario, m: ModelSpec) -> str | None:
    """vLLM's divisibility rules for tensor parallelism; None when they hold."""
    tp = s.tensor_parallel_size
    heads = m.num_attention_heads or m.mamba_num_heads or m.linear_num_value_heads
    if heads and heads % tp:
        return f"num_attention_heads ({heads}) must be divisible by tensor_parallel_size ({tp})"
    if not m.is_mla and m.plan.attention():
        kv = m.kv_heads
        if (tp >= kv and tp % kv) or (tp < kv and kv % tp):
            return f"num_key_value_heads ({kv}) and tensor_parallel_size ({tp}) must divide one another"
    if s.pipeline_parallel_size > m.num_hidden_layers:
        return f"pipeline_parallel_size ({s.pipeline_parallel_size}) exceeds num_hidden_layers ({m.num_hidden_layers})"
    if s.pipeline_parallel_size > 1 and m.model_type in NO_PIPELINE:
        return (f"vLLM does not support pipeline parallelism for {m.model_type} (its model class does not implement "
                "SupportsPP): use pipeline_parallel_size 1")  # fmt: skip
    return None


DCP_SINCE = {"mla": (0, 10, 2), "gqa": (0, 11, 1)}
"""The first vLLM release with decode context parallelism: MLA (vllm#23734), then FlashAttention / FlashInfer GQA
(#24864, #25438); before, vLLM 0.10.2–0.11.0 fail a GQA model at KV-cache init ("DCP requires attention impls to
return the softmax lse for decode")."""


def dcp_check(s: Scenario, m: ModelSpec) -> str | None:
    """vLLM's rules for --decode-context-parallel-size (ModelConfig.verify_with_parallel_config, arg_utils); None when
    they hold."""
    dcp, tp = s.decode_context_parallel_size, s.tensor_parallel_size
    if dcp == 1:
        return None
    if s.engine != "vllm":
        return "decode context parallelism is planned under vLLM only: set it to 1 for SGLang"
    if tp % dcp:
        return f"tensor_parallel_size ({tp}) must be divisible by decode_context_parallel_size ({dcp})"
    version = version_tuple(s.engine_version)
    since = DCP_SINCE["mla" if m.is_mla else "gqa"]
    if version is not None and version[:3] < since:
        return f"vLLM {s.engine_version} has no decode context parallelism for this model (from {'.'.join(map(str, since))})"
    plan = m.plan
    if plan.state() or m.sliding_layer_count or plan.count("chunked_attention"):
        return ("decode context parallelism beside sliding-window, chunked-attention or state layers is not planned: "
                "vLLM 0.10.2–0.12 refuse it (\"DCP not support … now\"), later releases were not read")  # fmt: skip
    if not m.is_mla:
        kv = m.kv_heads
        if tp <= kv:
            return (f"tensor_parallel_size ({tp}) must be greater than num_key_value_heads ({kv}) for decode context "
                    "parallelism of a GQA model: it splits the tokens of a head TP repeats")  # fmt: skip
        if dcp > tp // kv or ((m.num_attention_heads or kv) // kv) % dcp:
            return (f"decode_context_parallel_size must be at most tensor_parallel_size // num_key_value_heads = "
                    f"{tp // kv} and divide the query heads per KV head ({(m.num_attention_heads or kv) // kv})")
    return None


def accepted_tp_sizes(s: Scenario, m: ModelSpec) -> str:
    """'1, 2, 4, 28': the tensor_parallel_size values up to 64 that tp_check accepts for this model (an error names
    them beside the rule broken)."""
    ok = [tp for tp in range(1, 65) if not tp_check(s.model_copy(update={"tensor_parallel_size": tp,
                                                                        "pipeline_parallel_size": 1}), m)]  # fmt: skip
    return ", ".join(map(str, ok))


NO_PIPELINE = ("zamba2", "gemma3n_text")
"""Families whose vLLM model class lacks SupportsPP (vllm/model_executor/models/zamba2.py, gemma3n.py): vLLM
refuses pipeline_parallel_size > 1 for them."""
