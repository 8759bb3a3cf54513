"""The lines a vLLM startup log is read by (boundary.vllm_log): one bounded pattern per quantity, the literal each
of its lines contains (a prefilter), the engine config's keys, the version line, and the lines only SGLang prints."""

from __future__ import annotations

import re

# Every pattern is linear in the line: a number that leads a pattern starts after a delimiter (space, comma,
# parenthesis), every digit run is bounded and must end where it stops, every free-text run is bounded or atomic.
# Unanchored, "(?P<v>\d+) GiB for" retried a digit run from each of its digits: 20,000 digits took 13 s (GIL held).
# Digits are ASCII ([0-9]): Python's \d also matches '٦.٤١' (Arabic-Indic) and float() reads it, which vLLM never
# prints; a number that runs on into any other digit (\d in the look-aheads: '6.٤١') is not read at all.
_NUM = r"[0-9]{1,15}(?:,[0-9]{3}){0,5}(?!,?\d)"  # integers with optional thousands separators ("42,656")
_INT = r"[0-9]{1,15}(?!\d)"
_F = r"-?[0-9]{1,12}(?:\.[0-9]{1,12})?(?!\.?\d)"  # a printed float (KV memory is negative when the start fails)
_UF = r"[0-9]{1,12}(?:\.[0-9]{1,12})?(?!\.?\d)"  # unsigned
_LEAD = rf"[\s,(](?P<v>{_F})"  # a number that leads a pattern starts after a delimiter, never inside a number

PATTERNS: dict[str, tuple[str, ...]] = {
    "weights_gib": (rf"(?:Model loading took|Loading model weights took)\s+(?P<v>{_F})\s*Gi?B",
                    rf"model weights take (?P<v>{_F})\s*GiB"),
    "available_kv_gib": (rf"Available KV cache memory:\s*(?P<v>{_F})\s*GiB",
                         rf"the rest of the memory reserved for KV Cache is (?P<v>{_F})\s*GiB",
                         rf"kv_cache_size=(?P<v>{_F})\s*GiB",
                         rf"Current kv cache memory in use is (?P<v>{_F})\s*GiB"),  # 0.2x: the pool, in GiB
    "total_memory_gib": (rf"total_gpu_memory \((?P<v>{_F})\s*GiB\)", rf"total_gpu_memory=(?P<v>{_F})\s*GiB",
                         rf"Free memory on device \({_F}/(?P<v>{_F}) GiB\)"),
    "gpu_memory_utilization": (rf"gpu_memory_utilization \((?P<v>{_F})\)",
                               # atomic: commit to the first "results:", so a line of many costs one scan
                               rf"^(?>.*?Memory profiling results:).*?gpu_memory_utilization=(?P<v>{_F})",
                               rf"Desired GPU memory utilization is \((?P<v>{_F}),"),
    "activation_gib": (rf"PyTorch activation peak memory takes (?P<v>{_F})\s*GiB",
                       rf"{_LEAD} GiB for peak activation",
                       rf"torch peak memory increase: (?P<v>{_F})\s*GiB"),  # V1's DEBUG profiling line
    "peak_torch_gib": (rf"peak_torch_memory=(?P<v>{_F})\s*GiB",),
    "non_torch_gib": (rf"non_torch_memory takes (?P<v>{_F})\s*GiB", rf"non_torch_memory=(?P<v>{_F})\s*GiB",
                      rf"{_LEAD} GiB for non-torch memory",
                      rf"non-torch forward increase memory: (?P<v>{_F})\s*GiB"),  # V1's DEBUG profiling line
    "cudagraph_gib": (rf"Graph capturing finished in {_F} secs?, took (?P<v>{_F}) GiB",
                      rf"{_LEAD} GiB for CUDAGraph memory"),
    "cudagraph_estimate_gib": (rf"Estimated CUDA graph memory:\s*(?P<v>{_F})\s*GiB",),
    "kv_cache_bytes": (rf"Current kv cache memory in use is (?P<v>{_INT}) bytes",),
    "num_gpu_blocks": (rf"(?i:[gnxh]pu|cuda) blocks:\s*(?P<v>{_NUM})", rf"num_gpu_blocks is:\s*(?P<v>{_INT})"),
    "num_cpu_blocks": (rf"CPU blocks:\s*(?P<v>{_NUM})",),
    "kv_cache_tokens": (rf"GPU(?: \+ host)? KV cache size:\s*(?P<v>{_NUM})\s*tokens",),
    "max_concurrency": (rf"Maximum concurrency for (?P<arg>{_NUM}) tokens per request:\s*(?P<v>{_UF})x",),
    "block_size": (rf"(?:Forcing|Setting) kv cache block size to (?P<v>{_INT})",
                   rf"Setting attention block size to (?P<v>{_INT}) tokens"),
    "seq_len_error_tokens": (rf"max seq len \((?P<arg>{_INT})\) is larger than the maximum number of tokens that can "
                             rf"be stored in KV cache \((?P<v>{_INT})\)",),
    "kv_needed_gib": (rf"max seq len \((?P<arg>{_INT})\),\s?\(?(?P<v>{_F}) GiB KV cache is needed",),
    "error_available_gib": (rf"larger than the available KV cache memory \((?P<v>{_F}) GiB\)",),
    "estimated_max_model_len": (rf"estimated maximum model length is (?P<v>{_INT})",),
    "chunked_prefill_tokens": (rf"Chunked prefill is enabled with max_num_batched_tokens=(?P<v>{_INT})",),
    "dcp_world_size": (rf"Multiplying the GPU KV cache size by the (?:dcp|cp)_world_size (?P<v>{_INT})",
                       rf"dcp_world_size (?P<v>{_INT})\)"),  # 0.10.2–0.11; 0.12–0.19 "(pcp … * dcp_world_size N)."
}  # fmt: skip
_COMPILED = {k: tuple(re.compile(p) for p in v) for k, v in PATTERNS.items()}

CONFIG_KEYS = (
    "model", "served_model_name", "tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype",
    "max_seq_len", "max_model_len", "gpu_memory_utilization", "block_size", "max_num_batched_tokens", "max_num_seqs",
    "quantization", "enforce_eager", "speculative_config", "enable_chunked_prefill", "swap_space",
    "enable_expert_parallel", "data_parallel_size", "enable_prefix_caching", "decode_context_parallel_size",
    "language_model_only",
)  # fmt: skip
_CONFIG_LINE = re.compile(r"with config:|non-default args|Namespace\(")
_CONFIG_RE = {k: re.compile(rf"(?<![\w.])['\"]?{k}['\"]?\s*[:=]\s*(?P<v>'[^']{{0,300}}'|\"[^\"]{{0,300}}\"|[^,\s)}}]{{1,300}})")
              for k in CONFIG_KEYS}  # fmt: skip
_VERSION = (
    re.compile(r"engine \(v(?P<v>[0-9]{1,4}\.[0-9]{1,4}[\w.+-]{0,40})\)"),
    re.compile(r"vLLM API server version (?P<v>[0-9]{1,4}\.[0-9]{1,4}[\w.+-]{0,40})"),
)
SGLANG_MARKERS = ("KV Cache is allocated. #tokens", "Load weight end. type=", "max_total_num_tokens=")
"""Lines only an SGLang server prints (its scheduler's memory lines, its server args)."""
_WORKER = re.compile(r"\((?P<w>[^()]*?\bpid=\d{1,10}[^()]*)\)")  # searched in a line's first 120 characters
_LEVEL = re.compile(r"\b(?:INFO|WARNING|DEBUG|ERROR|CRITICAL)\b")
# A literal that every line of a key contains: the patterns run only on lines that hold one (found in one pass
# over the text), so a megabyte of other lines costs one C-level scan, not 45 regex calls per line.
_KEYWORDS: dict[str, tuple[str, ...]] = {
    "weights_gib": ("Model loading took", "Loading model weights took", "model weights take"),
    "available_kv_gib": ("Available KV cache memory", "reserved for KV Cache", "kv_cache_size=", "kv cache memory in use"),
    "total_memory_gib": ("total_gpu_memory", "Free memory on device"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "Desired GPU memory utilization"),
    "activation_gib": ("activation peak memory takes", "GiB for peak activation", "torch peak memory increase"),
    "peak_torch_gib": ("peak_torch_memory=",),
    "non_torch_gib": ("non_torch_memory", "GiB for non-torch memory", "non-torch forward increase memory"),
    "cudagraph_gib": ("Graph capturing finished", "GiB for CUDAGraph memory"),
    "cudagraph_estimate_gib": ("Estimated CUDA graph memory",),
    "kv_cache_bytes": ("kv cache memory in use",),
    "num_gpu_blocks": ("blocks:", "BLOCKS:", "Blocks:", "num_gpu_blocks is"),
    "num_cpu_blocks": ("CPU blocks:",),
    "kv_cache_tokens": ("KV cache size:",),
    "max_concurrency": ("Maximum concurrency for",),
    "block_size": ("block size to",),
    "seq_len_error_tokens": ("max seq len (",),
    "kv_needed_gib": ("max seq len (",),
    "error_available_gib": ("larger than the available KV cache memory",),
    "estimated_max_model_len": ("estimated maximum model length",),
    "chunked_prefill_tokens": ("Chunked prefill is enabled",),
    "dcp_world_size": ("Multiplying the GPU KV cache size",),
    "config": ("with config:", "non-default args", "Namespace("),
    "version": ("engine (v", "vLLM API server version"),
}  # fmt: skip
_WORDS = sorted({w for ws in _KEYWORDS.values() for w in ws}, key=len, reverse=True)
_KEYWORD = re.compile("|".join(map(re.escape, _WORDS)))
_KEYWORD_LINE = re.compile(r"(?m)^[^\n]*?(?:" + _KEYWORD.pattern + ")")
# a found keyword enables every key with a keyword inside it ("CPU blocks:" holds "blocks:")
_KEYS_OF = {w: {k for k, ws in _KEYWORDS.items() if any(x in w for x in ws)} for w in _WORDS}
