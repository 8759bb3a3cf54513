"""A parsed vLLM log's engine arguments in Scenario vocabulary (the parser itself is boundary.vllm_log)."""

from __future__ import annotations

import re
import typing

from boundary.vllm_log import VllmLog
from calc.scenario import Scenario

_INT_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "block_size",
               "max_num_batched_tokens", "max_num_seqs", "decode_context_parallel_size")  # fmt: skip
_QUANT_DTYPE = {"fp8": "fp8", "fbgemm_fp8": "fp8", "modelopt": "fp8", "awq": "int4", "awq_marlin": "int4",
                "gptq": "int4", "gptq_marlin": "int4", "bitsandbytes": "int4", "compressed-tensors": None,
                "auto-round": "int4", "auto_round": "int4", "inc": "int4"}  # fmt: skip
"""The log's `quantization` → the nearest dtype, for a shipped model spec (a config.json's own quantization_config is
read as the checkpoint's format instead: calc.reconcile keeps dtype auto for it)."""
_SINCE_MARKERS = (("(default since v0.21.0)", (0, 21)), ("tokens, Maximum concurrency for", (0, 26)))
"""Text a release prints where its version line is cut off: vLLM 0.21+'s "CUDA graph memory profiling is enabled
(default since v0.21.0)"; the KV size and concurrency on one line ("GPU KV cache size: N tokens, Maximum concurrency
for L tokens per request"), two lines through 0.25 and one by 0.33 (reference/vllm_kv.md §5), read as 0.26."""
_TORCH_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}
BLOCK_SIZES = typing.get_args(Scenario.model_fields["block_size"].annotation)  # what --block-size takes


def _int(text: str | None) -> int | None:
    return int(text) if text and re.fullmatch(r"[0-9]{1,18}", text) else None


def log_scenario_fields(log: VllmLog, given_version: tuple[int, ...] | None = None) -> tuple[dict, list[str]]:
    """Scenario fields the log states (engine config line first, then the measured lines), plus notes on guesses.

    max_model_len: config max_seq_len / max_model_len, else the L of "Maximum concurrency for L tokens", else a
    failed start's "max seq len (L)" (V1), else the
    V0 "max seq len (L)" error. V0 without chunked prefill (≤ 32k context) profiles max(L, 2048) batched tokens.
    estimate_cudagraphs: only vLLM ≥ 0.20 (or a log with "Estimated CUDA graph memory") subtracts CUDA graphs.
    engine_version: the version the log prints, from 0.8 on (older ones predate the costs the step time has);
    `given_version` (--engine-version) stands in for a log that prints none.
    """
    cfg, notes, out = log.config, [], {}
    for name in _INT_FIELDS:
        if _int(cfg.get(name)) is not None:
            out[name] = _int(cfg[name])
    if "decode_context_parallel_size" not in out and log.first("dcp_world_size"):  # the line vLLM ≤ 0.19 print
        out["decode_context_parallel_size"] = int(log.first("dcp_world_size").value)  # type: ignore[union-attr]
    length = _int(cfg.get("max_model_len")) or _int(cfg.get("max_seq_len"))
    conc, err = log.first("max_concurrency"), log.first("seq_len_error_tokens") or log.first("kv_needed_gib")
    if length is None and conc is not None:
        length = conc.arg
    elif length is None and err is not None:  # V0's "max seq len (L) is larger …", V1's "max seq len (L), X GiB …"
        length = err.arg
    if length:
        out["max_model_len"] = length
    util = cfg.get("gpu_memory_utilization")
    if util and re.fullmatch(r"[0-9]{0,12}\.?[0-9]{1,12}", util):
        out["gpu_memory_utilization"] = float(util)
    elif log.first("gpu_memory_utilization"):
        out["gpu_memory_utilization"] = log.first("gpu_memory_utilization").value  # type: ignore[union-attr]
    forced = log.get("block_size")
    if forced and int(forced[-1].value) in BLOCK_SIZES:
        out["block_size"] = int(forced[-1].value)
    elif forced:  # a hybrid model's page-fitting size: derived by the plan, not a --block-size it could take
        notes.append(f"the log sets the attention block size to {int(forced[-1].value):,} tokens (vLLM raises it so a "
                     "Mamba / linear-attention state fits one page); the plan derives it by the same rule")  # fmt: skip
    spec = speculative_fields(log)
    out |= spec
    kv = cfg.get("kv_cache_dtype", "")
    if kv.startswith("fp8"):
        out["kv_cache_dtype"] = "fp8"
    elif kv == "nvfp4":
        out["kv_cache_dtype"] = "nvfp4"
    if cfg.get("enforce_eager") in ("True", "False"):
        out["enforce_eager"] = cfg["enforce_eager"] == "True"
    if cfg.get("language_model_only") in ("True", "False"):  # no vision tower loaded or profiled (calc.resolve)
        out["language_model_only"] = cfg["language_model_only"] == "True"
    if cfg.get("enable_prefix_caching") in ("True", "False"):  # a hybrid's align mode (calc.kv_cache.state_blocks)
        out["enable_prefix_caching"] = cfg["enable_prefix_caching"] == "True"
    if cfg.get("enable_expert_parallel") in ("True", "False"):  # "non-default args: {…, 'enable_expert_parallel': True}"
        out["enable_expert_parallel"] = cfg["enable_expert_parallel"] == "True"
    quant = cfg.get("quantization")
    if quant and quant != "None" and _QUANT_DTYPE.get(quant):
        out["dtype"] = _QUANT_DTYPE[quant]
    elif cfg.get("dtype", "").removeprefix("torch.") in _TORCH_DTYPE:
        out["dtype"] = _TORCH_DTYPE[cfg["dtype"].removeprefix("torch.")]
    chunk = log.first("chunked_prefill_tokens")  # "Chunked prefill is enabled with max_num_batched_tokens=8192."
    if "max_num_batched_tokens" not in out and chunk is not None:
        out["max_num_batched_tokens"] = int(chunk.value)
    if "max_num_batched_tokens" not in out and log.engine == "V0" and length and length <= 32768:
        if cfg.get("enable_chunked_prefill") != "True":
            out["max_num_batched_tokens"] = max(length, 2048)
            notes.append(f"V0 without chunked prefill: the profiling run uses max(max_model_len, 2048) = "
                         f"{out['max_num_batched_tokens']} batched tokens")  # fmt: skip
    version = log.version_tuple
    if version is None and given_version:
        version = given_version  # the flag sets engine_version itself; here it decides what the release subtracts
    elif version is not None and version >= (0, 8):  # the release whose fixed costs the plan's step time uses
        out |= {"engine": "vllm", "engine_version": ".".join(str(p) for p in version)}
    elif version is None and (since := min_version(log)):
        out |= {"engine": "vllm", "engine_version": ".".join(str(p) for p in since)}
        notes.append(f"the log's version line is missing; it prints what vLLM {since[0]}.{since[1]} and later print, "
                     "so it is read as that release (pass --engine-version to set it)")  # fmt: skip
        version = since
    subtracts = bool(log.get("cudagraph_estimate_gib")) or (version is not None and version >= (0, 20))
    out["estimate_cudagraphs"] = subtracts
    if not subtracts:
        notes.append("vLLM ≤ 0.19 (no 'Estimated CUDA graph memory' line): CUDA graphs are captured after the KV pool "
                      "is sized, so they are not subtracted from it")  # fmt: skip
    if not log.config:
        notes.append("the log has no engine config line: fields it does not state are defaults or flags")
    return out, notes


def min_version(log: VllmLog) -> tuple[int, ...] | None:
    """The oldest release the log's own wording implies (_SINCE_MARKERS), where it prints no version."""
    found = [v for text, v in _SINCE_MARKERS if any(text in line for line in log.lines)]
    return max(found) if found else None


_SPEC_ENGINE = re.compile(r"SpeculativeConfig\(method='(?P<m>\w{1,40})'[^\n]{0,600}?num_spec_tokens=(?P<k>\d{1,3})")
_SPEC_ARGS = re.compile(r"'speculative_config': \{[^}]{0,600}\}")


def speculative_fields(log: VllmLog) -> dict:
    """speculative_method and num_speculative_tokens from the engine config ("speculative_config=SpeculativeConfig(
    method='mtp', …, num_spec_tokens=3)") or the non-default args ("'speculative_config': {'method': 'mtp',
    'num_speculative_tokens': 3}"): an MTP method of any family (mtp, deepseek_mtp, qwen3_next_mtp, …) is mtp, ngram
    and suffix are ngram, eagle and eagle3 themselves; a draft model's method is not planned (reconcile says so) and
    gives nothing."""
    for line in log.lines:
        if "speculative_config" not in line:
            continue
        if found := _SPEC_ENGINE.search(line):
            method, k = found["m"], int(found["k"])
        elif found := _SPEC_ARGS.search(line):
            m = re.search(r"'method': '(\w{1,40})'", found.group(0))
            n = re.search(r"'num_speculative_tokens': (\d{1,3})", found.group(0))
            if not (m and n):
                continue
            method, k = m.group(1), int(n.group(1))
        else:
            continue
        kind = ("mtp" if method.endswith("mtp") else "ngram" if method in ("ngram", "suffix")
                else method if method in ("eagle", "eagle3") else None)  # fmt: skip
        if not (kind and 1 <= k <= 16):
            return {}
        return {"speculative_method": kind, "num_speculative_tokens": k} | acceptance_fields(log)
    return {}


_SPEC_COUNTS = re.compile(r"SpecDecoding metrics: [^\n]{0,400}?Accepted: (?P<a>\d{1,15}) tokens, Drafted: (?P<d>\d{1,15}) tokens")


def acceptance_fields(log: VllmLog) -> dict:
    """draft_acceptance_rate from the spec-decode metrics lines the server logs while it serves ("SpecDecoding
    metrics: Mean acceptance length: 2.85, …, Accepted: 256 tokens, Drafted: 308 tokens, …, Avg Draft acceptance
    rate: 83.1%"; vllm v1/spec_decode/metrics.py): every interval's accepted tokens over every interval's drafted
    ones, the rate of the whole log. Nothing without such a line (a log cut at startup)."""
    accepted = drafted = 0
    for line in log.lines:
        if "SpecDecoding metrics" in line and (found := _SPEC_COUNTS.search(line)):
            accepted, drafted = accepted + int(found["a"]), drafted + int(found["d"])
    return {"draft_acceptance_rate": round(accepted / drafted, 4)} if drafted and accepted <= drafted else {}
