"""Read a vLLM startup log into the numbers it states (reference/vllm_kv.md §3, §5, §7). Pure: text in, values out.

Recognised lines (vLLM 0.5 – 0.33, V0 and V1 engines; GiB figures are binary even where vLLM prints "GB"):

    engine config  "Initializing a V1 LLM engine (v0.10.1) with config: model='…', max_seq_len=…, tensor_parallel_size=…"
                   (V0: "Initializing an LLM engine (v0.5.0.post1) with config: …"), "non-default args: {…}", "Namespace(…)"
    weights        "Loading model weights took %.4f GB" (≤ 0.7) · "Model loading took %.4f GiB …" (0.8+)
    V0 profiling   0.6.4 "Memory profiling results: total_gpu_memory=T GiB … peak_torch_memory=P GiB … non_torch_memory=
                   N GiB kv_cache_size=K GiB gpu_memory_utilization=u" · 0.6.5 – 0.10 "total_gpu_memory (T GiB) x
                   gpu_memory_utilization (u) … model weights take W GiB; non_torch_memory takes N GiB; PyTorch activation
                   peak memory takes A GiB; the rest of the memory reserved for KV Cache is K GiB"
    V1 pool        "Available KV cache memory: X GiB" (0.9+, one line per worker, "%.2f"; ≥ 0.19 may print "8.0")
    0.10.2         "Free memory on device (f/T GiB) … Desired GPU memory utilization is (u, R GiB). Actual usage is W GiB for
                   weight, A GiB for peak activation, N GiB for non-torch memory, and C GiB for CUDAGraph memory. …
                   Current kv cache memory in use is B bytes."
    blocks/tokens  "# GPU blocks: B, # CPU blocks: C" (V0 ≤ 0.7, V1 0.7) · "# cuda blocks: B" (V0 0.8+) · "num_gpu_blocks is:
                   B" · "GPU KV cache size: N tokens" · "Maximum concurrency for L tokens per request: Y.YYx" (0.33: one line)
    CUDA graphs    "Graph capturing finished in S secs, took X GiB" · "Estimated CUDA graph memory: X GiB total" (0.19+)
    block size     "Forcing kv cache block size to 64 for FlashMLA backend." · "Setting attention block size to N tokens"
    start failures "The model's max seq len (L) is larger than the maximum number of tokens … (N)" (V0) · "To serve at least
                   one request with the models's max seq len (L), (X GiB KV cache is needed, … available KV cache memory
                   (A GiB). … the estimated maximum model length is M." (V1)

Per-worker lines ("(VllmWorker rank=N pid=…)", "(RayWorkerWrapper pid=…)", "(Worker_PP1_TP0 pid=…)") are all kept; the
reconciler takes the minimum over workers, as the engine does. A fixture header of "# key: value" lines ends at the
first blank line (body lines such as "# GPU blocks: …" are log text, not comments).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from calc.errors import InputError

_NUM = r"\d+(?:,\d{3})*"  # integers with optional thousands separators ("42,656")
_F = r"-?\d+(?:\.\d+)?"  # a printed float (KV memory can be negative when the start fails)

PATTERNS: dict[str, tuple[str, ...]] = {
    "weights_gib": (rf"(?:Model loading took|Loading model weights took)\s+(?P<v>{_F})\s*Gi?B",
                    rf"model weights take (?P<v>{_F})\s*GiB"),
    "available_kv_gib": (rf"Available KV cache memory:\s*(?P<v>{_F})\s*GiB",
                         rf"the rest of the memory reserved for KV Cache is (?P<v>{_F})\s*GiB",
                         rf"kv_cache_size=(?P<v>{_F})\s*GiB"),
    "total_memory_gib": (rf"total_gpu_memory \((?P<v>{_F})\s*GiB\)", rf"total_gpu_memory=(?P<v>{_F})\s*GiB",
                         rf"Free memory on device \({_F}/(?P<v>{_F}) GiB\)"),
    "gpu_memory_utilization": (rf"gpu_memory_utilization \((?P<v>{_F})\)",
                               rf"Memory profiling results:.*gpu_memory_utilization=(?P<v>{_F})",
                               rf"Desired GPU memory utilization is \((?P<v>{_F}),"),
    "activation_gib": (rf"PyTorch activation peak memory takes (?P<v>{_F})\s*GiB",
                       rf"(?P<v>{_F}) GiB for peak activation"),
    "peak_torch_gib": (rf"peak_torch_memory=(?P<v>{_F})\s*GiB",),
    "non_torch_gib": (rf"non_torch_memory takes (?P<v>{_F})\s*GiB", rf"non_torch_memory=(?P<v>{_F})\s*GiB",
                      rf"(?P<v>{_F}) GiB for non-torch memory"),
    "cudagraph_gib": (rf"Graph capturing finished in {_F} secs?, took (?P<v>{_F}) GiB",
                      rf"(?P<v>{_F}) GiB for CUDAGraph memory"),
    "cudagraph_estimate_gib": (rf"Estimated CUDA graph memory:\s*(?P<v>{_F})\s*GiB",),
    "kv_cache_bytes": (r"Current kv cache memory in use is (?P<v>\d+) bytes",),
    "num_gpu_blocks": (rf"(?:GPU|cuda|npu|xpu|hpu) blocks:\s*(?P<v>{_NUM})", r"num_gpu_blocks is:\s*(?P<v>\d+)"),
    "num_cpu_blocks": (rf"CPU blocks:\s*(?P<v>{_NUM})",),
    "kv_cache_tokens": (rf"GPU(?: \+ host)? KV cache size:\s*(?P<v>{_NUM})\s*tokens",),
    "max_concurrency": (rf"Maximum concurrency for (?P<arg>{_NUM}) tokens per request:\s*(?P<v>\d+(?:\.\d+)?)x",),
    "block_size": (r"(?:Forcing|Setting) kv cache block size to (?P<v>\d+)",
                   r"Setting attention block size to (?P<v>\d+) tokens"),
    "seq_len_error_tokens": (r"max seq len \((?P<arg>\d+)\) is larger than the maximum number of tokens that can be "
                             r"stored in KV cache \((?P<v>\d+)\)",),
    "kv_needed_gib": (rf"max seq len \((?P<arg>\d+)\), \((?P<v>{_F}) GiB KV cache is needed",),
    "error_available_gib": (rf"larger than the available KV cache memory \((?P<v>{_F}) GiB\)",),
    "estimated_max_model_len": (r"estimated maximum model length is (?P<v>\d+)",),
}  # fmt: skip
_COMPILED = {k: tuple(re.compile(p, re.IGNORECASE if k == "num_gpu_blocks" else 0) for p in v)
             for k, v in PATTERNS.items()}  # fmt: skip

CONFIG_KEYS = (
    "model", "served_model_name", "tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype",
    "max_seq_len", "max_model_len", "gpu_memory_utilization", "block_size", "max_num_batched_tokens", "max_num_seqs",
    "quantization", "enforce_eager", "speculative_config", "enable_chunked_prefill", "swap_space",
)  # fmt: skip
_CONFIG_LINE = re.compile(r"with config:|non-default args|Namespace\(")
_CONFIG_RE = {k: re.compile(rf"(?<![\w.])['\"]?{k}['\"]?\s*[:=]\s*(?P<v>'[^']*'|\"[^\"]*\"|[^,\s)}}]+)")
              for k in CONFIG_KEYS}  # fmt: skip
_VERSION = (
    re.compile(r"engine \(v(?P<v>\d+\.\d+[\w.+-]*)\)"),
    re.compile(r"vLLM API server version (?P<v>\d+\.\d+[\w.+-]*)"),
)
_WORKER = re.compile(r"\((?P<w>[^()]*\bpid=\d+[^()]*)\)")
_LEVEL = re.compile(r"\b(?:INFO|WARNING|DEBUG|ERROR|CRITICAL)\b")
_HEADER = re.compile(r"^# (?P<k>[a-z][a-z_]*): (?P<v>.*)$")
_V0_MARKERS = ("Initializing an LLM engine", "CPU blocks", "Memory profiling", "reserved for KV Cache", "llm_engine.py")
_V1_MARKERS = ("V1 LLM engine", "EngineCore", "gpu_worker.py", "Available KV cache memory", "GPU KV cache size",
               "kv_cache_utils.py", "gpu_model_runner.py")  # fmt: skip


@dataclass(frozen=True)
class Measure:
    """One number as a log line prints it."""

    value: float
    line_no: int
    """1-based line number in the file."""
    worker: str | None
    """The worker prefix, e.g. 'VllmWorker rank=3 pid=19834'; None for engine-level lines."""
    decimals: int
    """Decimals printed: the true value lies within ± half a unit of the last one (6.51 GiB → ± 0.005 GiB)."""
    arg: int | None = None
    """The pattern's second number: L in "Maximum concurrency for L tokens", "max seq len (L)"."""

    @property
    def half_unit(self) -> float:
        return 0.5 * 10.0**-self.decimals if self.decimals else 0.0

    @property
    def rank(self) -> int | None:
        m = re.search(r"\brank=(\d+)", self.worker or "")
        return int(m.group(1)) if m else None

    @property
    def pp_rank(self) -> int | None:
        m = re.search(r"PP(\d+)", self.worker or "")
        return int(m.group(1)) if m else None


@dataclass(frozen=True)
class VllmLog:
    header: dict[str, str]
    """Fixture header ('# source: …'); not vLLM output."""
    engine: str
    """'V0', 'V1' or 'unknown' (from the line formats)."""
    version: str | None
    """Release from the engine config or API-server line, when printed."""
    config: dict[str, str]
    """Engine arguments as printed, by vLLM's names (quotes stripped)."""
    measures: dict[str, tuple[Measure, ...]]
    """Every recognised number, by PATTERNS key, in file order."""
    lines: tuple[str, ...]
    """The body, for device-name lookups."""

    def get(self, key: str) -> tuple[Measure, ...]:
        return self.measures.get(key, ())

    def first(self, key: str) -> Measure | None:
        found = self.get(key)
        return found[0] if found else None

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        if not self.version:
            return None
        return tuple(int(p) for p in re.findall(r"\d+", self.version)[:3])

    @property
    def workers(self) -> tuple[str, ...]:
        """Distinct worker ranks seen ('rank=N', 'Worker_TPn' or 'Worker_PPn_TPm' prefixes), sorted."""
        ranked = re.compile(r"\brank=\d|\b(?:Worker_)?(?:PP\d+_)?TP\d")
        return tuple(sorted({m.worker for ms in self.measures.values() for m in ms if ranked.search(m.worker or "")}))


def split_header(text: str) -> tuple[dict[str, str], list[str], int]:
    """Leading '# key: value' lines up to the first blank line → (header, body lines, line offset of the body)."""
    lines = text.splitlines()
    if not lines or not _HEADER.match(lines[0]):
        return {}, lines, 0
    header: dict[str, str] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            return header, lines[i + 1 :], i + 1
        m = _HEADER.match(line)
        if m:
            header[m.group("k")] = m.group("v").strip()
    return header, [], len(lines)


def _decimals(s: str) -> int:
    return len(s.split(".")[1]) if "." in s else 0


def parse_log(text: str) -> VllmLog:
    """All recognised values of a vLLM startup log. Raises InputError('log', …) when no line is recognised."""
    header, body, offset = split_header(text)
    found: dict[str, list[Measure]] = {}
    config: dict[str, str] = {}
    version = None
    worker = None
    for i, line in enumerate(body):
        w = _WORKER.search(line[:120])
        if w:
            worker = w.group("w").strip()
        elif _LEVEL.search(line) or not line.strip():
            worker = None  # an engine-level record; unprefixed continuation lines keep the record's worker
        for key, regexes in _COMPILED.items():
            for rx in regexes:
                for m in rx.finditer(line):
                    raw = m.group("v")
                    arg = m.groupdict().get("arg")
                    found.setdefault(key, []).append(
                        Measure(
                            float(raw.replace(",", "")),
                            offset + i + 1,
                            worker,
                            _decimals(raw),
                            int(arg.replace(",", "")) if arg else None,
                        )  # fmt: skip
                    )
        if _CONFIG_LINE.search(line):
            for key, rx in _CONFIG_RE.items():
                m = rx.search(line)
                if m and key not in config:
                    config[key] = m.group("v").strip("'\"")
        for rx in _VERSION:
            m = rx.search(line)
            if m and version is None:
                version = m.group("v")
    if not found and not config:
        raise InputError(
            "log",
            "no vLLM startup lines found (expected lines such as 'Available KV cache memory: …', "
            "'GPU KV cache size: …', '# GPU blocks: …', 'Model loading took …'); is this a vLLM startup log?",
        )
    joined = "\n".join(body)
    v0 = sum(m in joined for m in _V0_MARKERS) + len(re.findall(r"(?<!gpu_)model_runner\.py", joined))
    v1 = sum(m in joined for m in _V1_MARKERS)
    engine = "V0" if v0 > v1 or "CPU blocks" in joined else ("V1" if v1 else "unknown")
    measures = {k: tuple(v) for k, v in found.items()}
    return VllmLog(header, engine, version, config, measures, tuple(body))


# --- the log's engine arguments in Scenario vocabulary -----------------------------------------------------------

_INT_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "block_size", "max_num_batched_tokens", "max_num_seqs")
_QUANT_DTYPE = {"fp8": "fp8", "fbgemm_fp8": "fp8", "modelopt": "fp8", "awq": "int4", "awq_marlin": "int4",
                "gptq": "int4", "gptq_marlin": "int4", "bitsandbytes": "int4", "compressed-tensors": None}  # fmt: skip
_TORCH_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


def _int(text: str | None) -> int | None:
    return int(text) if text and re.fullmatch(r"\d+", text) else None


def log_scenario_fields(log: VllmLog) -> tuple[dict, list[str]]:
    """Scenario fields the log states (engine config line first, then the measured lines), plus notes on guesses.

    max_model_len: config max_seq_len / max_model_len, else the L of "Maximum concurrency for L tokens", else the
    V0 "max seq len (L)" error. V0 without chunked prefill (≤ 32k context) profiles max(L, 2048) batched tokens.
    estimate_cudagraphs: only vLLM ≥ 0.20 (or a log with "Estimated CUDA graph memory") subtracts CUDA graphs.
    """
    cfg, notes, out = log.config, [], {}
    for name in _INT_FIELDS:
        if _int(cfg.get(name)) is not None:
            out[name] = _int(cfg[name])
    length = _int(cfg.get("max_model_len")) or _int(cfg.get("max_seq_len"))
    conc, err = log.first("max_concurrency"), log.first("seq_len_error_tokens")
    if length is None and conc is not None:
        length = conc.arg
    elif length is None and err is not None:
        length = err.arg
    if length:
        out["max_model_len"] = length
    util = cfg.get("gpu_memory_utilization")
    if util and re.fullmatch(r"\d*\.?\d+", util):
        out["gpu_memory_utilization"] = float(util)
    elif log.first("gpu_memory_utilization"):
        out["gpu_memory_utilization"] = log.first("gpu_memory_utilization").value  # type: ignore[union-attr]
    forced = log.get("block_size")
    if forced:
        out["block_size"] = int(forced[-1].value)
    kv = cfg.get("kv_cache_dtype", "")
    if kv.startswith("fp8"):
        out["kv_cache_dtype"] = "fp8"
    if cfg.get("enforce_eager") in ("True", "False"):
        out["enforce_eager"] = cfg["enforce_eager"] == "True"
    quant = cfg.get("quantization")
    if quant and quant != "None" and _QUANT_DTYPE.get(quant):
        out["dtype"] = _QUANT_DTYPE[quant]
    elif cfg.get("dtype", "").removeprefix("torch.") in _TORCH_DTYPE:
        out["dtype"] = _TORCH_DTYPE[cfg["dtype"].removeprefix("torch.")]
    if "max_num_batched_tokens" not in out and log.engine == "V0" and length and length <= 32768:
        if cfg.get("enable_chunked_prefill") != "True":
            out["max_num_batched_tokens"] = max(length, 2048)
            notes.append(f"V0 without chunked prefill: the profiling run uses max(max_model_len, 2048) = "
                         f"{out['max_num_batched_tokens']} batched tokens")  # fmt: skip
    version = log.version_tuple
    subtracts = bool(log.get("cudagraph_estimate_gib")) or (version is not None and version >= (0, 20))
    out["estimate_cudagraphs"] = subtracts
    if not subtracts:
        notes.append("vLLM ≤ 0.19 (no 'Estimated CUDA graph memory' line): CUDA graphs are captured after the KV pool "
                      "is sized, so they are not subtracted from it")  # fmt: skip
    if not log.config:
        notes.append("the log has no engine config line: fields it does not state are defaults or flags")
    return out, notes
