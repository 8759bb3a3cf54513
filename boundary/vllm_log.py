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
                   Current kv cache memory in use is B bytes." · 0.2x "… Actual usage is X GiB for consumed memory
                   (weights + non-torch), A GiB for peak activation, … Current kv cache memory in use is K GiB." (K: the pool)
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
MAX_LOG_CHARS = 1_000_000  # a startup log is tens of kB; a server log that long belongs cut to its start
MAX_LINE_CHARS = 8_000  # longer lines are skipped (and counted); vLLM's longest, the engine config, is ~3,000
MAX_LOG_LINES = 50_000  # a megabyte of real log is ~10,000 lines; a flood of tiny lines is refused
MAX_RECOGNISED_CHARS = 200_000  # of recognised lines: a startup log has a few kB; past this reading stops (and says so)
MAX_RECOGNISED_LINES = 2_000  # a startup log has tens (eight workers' worth at most a few hundred); same stop
MAX_CONFIG_LINES = 8  # the engine config is printed once per process; the first value of each key wins
MAX_HEADER_LINES = 100
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
        m = re.search(r"\brank=([0-9]{1,9})(?!\d)", self.worker or "")
        return int(m.group(1)) if m else None

    @property
    def pp_rank(self) -> int | None:
        m = re.search(r"PP([0-9]{1,9})(?!\d)", self.worker or "")
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
    skipped_lines: int = 0
    """Lines over MAX_LINE_CHARS characters, not read."""
    stopped_at_line: int | None = None
    """Where reading stopped after MAX_RECOGNISED_LINES recognised lines or MAX_RECOGNISED_CHARS of their characters
    (None: read to the end)."""

    @property
    def reading_notes(self) -> list[str]:
        """What of the text was not read, in words (empty for an ordinary log)."""
        out = []
        if self.skipped_lines:
            out.append(f"{self.skipped_lines:,} line(s) over {MAX_LINE_CHARS:,} characters were skipped")
        if self.stopped_at_line:
            out.append(f"reading stopped at line {self.stopped_at_line:,} after {MAX_RECOGNISED_LINES:,} recognised "
                       f"lines or {MAX_RECOGNISED_CHARS:,} of their characters")  # fmt: skip
        return out

    def get(self, key: str) -> tuple[Measure, ...]:
        return self.measures.get(key, ())

    def first(self, key: str) -> Measure | None:
        found = self.get(key)
        return found[0] if found else None

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        if not self.version:
            return None
        return tuple(int(p) for p in re.findall(r"[0-9]+", self.version)[:3])

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
    for i, line in enumerate(lines[:MAX_HEADER_LINES]):
        if not line.strip():
            return header, lines[i + 1 :], i + 1
        m = _HEADER.match(line)
        if m:
            header[m.group("k")] = m.group("v").strip()
    if len(lines) > MAX_HEADER_LINES:  # no blank line soon: not a fixture header, all of it is the log
        return {}, lines, 0
    return header, [], len(lines)


def _decimals(s: str) -> int:
    return len(s.split(".")[1]) if "." in s else 0


def _keyword_lines(body: list[str]):
    """Indices of the lines that hold any keyword, in order: one C-level scan of the whole text."""
    joined, line, pos = "\n".join(body), 0, 0
    for m in _KEYWORD_LINE.finditer(joined):
        line += joined.count("\n", pos, m.start())
        pos = m.start()
        yield line


class _Scan:
    """Mutable state of one parse: values by key, engine config, version, counts of what was not read."""

    def __init__(self) -> None:
        self.found: dict[str, list[Measure]] = {}
        self.config: dict[str, str] = {}
        self.version: str | None = None
        self.config_lines = 0

    def read(self, line: str, line_no: int, worker: str | None) -> None:
        keys = set().union(*(_KEYS_OF[m.group()] for m in _KEYWORD.finditer(line)))
        for key in keys:
            if key == "config":
                self._config(line)
            elif key == "version":
                self._version(line)
            else:
                self.measure(key, line, line_no, worker)

    def measure(self, key: str, text: str, line_no: int, worker: str | None) -> None:
        """Every value of `key`'s patterns in `text`, recorded at `line_no`."""
        for rx in _COMPILED[key]:
            for m in rx.finditer(text):
                raw, arg = m.group("v"), m.groupdict().get("arg")
                value, argument = float(raw.replace(",", "")), int(arg.replace(",", "")) if arg else None
                self.found.setdefault(key, []).append(Measure(value, line_no, worker, _decimals(raw), argument))

    def _config(self, line: str) -> None:
        if self.config_lines >= MAX_CONFIG_LINES or not _CONFIG_LINE.search(line):
            return
        self.config_lines += 1
        for key, rx in _CONFIG_RE.items():
            m = rx.search(line) if key not in self.config else None
            if m:
                self.config[key] = m.group("v").strip("'\"")

    def _version(self, line: str) -> None:
        for rx in _VERSION:
            m = rx.search(line) if self.version is None else None
            if m:
                self.version = m.group("v")


_QUOTE = re.compile(r"^[\s▎|>│]+")
_FAILURE_KEYS = ("kv_needed_gib", "error_available_gib")


def _wrapped_failure(scan: _Scan, body: list[str], offset: int) -> None:
    """vLLM's failed-start sentence ("… max seq len (196608), 23.25 GiB KV cache is needed, which is larger than the
    available KV cache memory (22.5 GiB)") wrapped over lines by a terminal or a quote: read again as one line
    with the next, for the values the line alone missed. Bounded: the first few such lines, each with one more."""
    if all(k in scan.found for k in _FAILURE_KEYS):
        return
    starts = [i for i, line in enumerate(body[:MAX_LOG_LINES]) if "max seq len (" in line[:MAX_LINE_CHARS]][:4]
    for i in starts:
        tail = _QUOTE.sub("", body[i + 1][:MAX_LINE_CHARS]) if i + 1 < len(body) else ""
        joined = _QUOTE.sub("", body[i][:MAX_LINE_CHARS]).rstrip() + " " + tail
        for key in _FAILURE_KEYS:
            if key not in scan.found:
                scan.measure(key, joined, offset + i + 1, None)


_CONTINUATION = re.compile(r"^[ \t]+\S")
MAX_WRAPPED_CONFIG_LINES = 8


def _wrapped_config(scan: _Scan, body: list[str]) -> None:
    """An engine config line a paste or a terminal wrapped ("… with config:" then indented "model='…', dtype=…"
    lines): its indented continuation lines read as one line with it, for the keys the line alone missed.
    Bounded: the first few config lines, each with a few continuation lines of bounded length."""
    starts = [i for i, line in enumerate(body[:MAX_LOG_LINES]) if "with config:" in line[:MAX_LINE_CHARS]][:4]
    for i in starts:
        more = []
        for line in body[i + 1:i + 1 + MAX_WRAPPED_CONFIG_LINES]:
            if not _CONTINUATION.match(line) or len(line) > MAX_LINE_CHARS or _LEVEL.search(line):
                break
            more.append(line.strip())
        if more:
            scan.config_lines = min(scan.config_lines, MAX_CONFIG_LINES - 1)  # room for the joined line
            scan._config(body[i][:MAX_LINE_CHARS].rstrip() + " " + " ".join(more))


def _too_long(size: str, limit: str) -> InputError:
    return InputError("log", f"the log has {size}; the limit is {limit}: pass the startup part (from "
                             "'Initializing' to 'Maximum concurrency')")  # fmt: skip


def parse_log(text: str) -> VllmLog:
    """All recognised values of a vLLM startup log. Raises InputError('log', …) when no line is recognised or the
    text is over MAX_LOG_CHARS; lines over MAX_LINE_CHARS are skipped and counted (`skipped_lines`)."""
    if len(text) > MAX_LOG_CHARS:
        raise _too_long(f"{len(text):,} characters", f"{MAX_LOG_CHARS:,}")
    if text.count("\n") >= MAX_LOG_LINES:  # counted before splitting a flood of tiny lines
        raise _too_long(f"{text.count(chr(10)) + 1:,} lines", f"{MAX_LOG_LINES:,}")
    header, body, offset = split_header(text)
    if len(body) > MAX_LOG_LINES:  # other line breaks (\r, \f, \u2028 …)
        raise _too_long(f"{len(body):,} lines", f"{MAX_LOG_LINES:,}")
    scan, worker, skipped, read, n_read, stopped = _Scan(), None, 0, 0, 0, False
    wanted = _keyword_lines(body)
    next_line = next(wanted, None)
    for i, line in enumerate(body):
        if not line:
            worker = None
            continue
        if len(line) > MAX_LINE_CHARS:
            skipped, worker = skipped + 1, None
            next_line = next(wanted, None) if next_line == i else next_line
            continue
        w = _WORKER.search(line, 0, 120) if line.find("pid=", 0, 120) >= 0 else None
        if w:
            worker = w.group("w").strip()
        elif worker is not None and (not line.strip() or _LEVEL.search(line)):
            worker = None  # an engine-level record; unprefixed continuation lines keep the record's worker
        if next_line != i:
            continue
        next_line = next(wanted, None)
        read, n_read = read + len(line), n_read + 1
        stopped = read > MAX_RECOGNISED_CHARS or n_read > MAX_RECOGNISED_LINES
        if stopped:
            break
        scan.read(line, offset + i + 1, worker)
    stopped_at = offset + i + 1 if stopped else None
    _wrapped_failure(scan, body, offset)
    _wrapped_config(scan, body)
    if not scan.found and not scan.config:
        more = f" ({skipped:,} lines over {MAX_LINE_CHARS:,} characters were skipped)" if skipped else ""
        if any(mark in line for line in body[:MAX_RECOGNISED_LINES] for mark in SGLANG_MARKERS):
            raise InputError("log", "this is an SGLang startup log ('KV Cache is allocated. #tokens: …'), not vLLM's: "
                             "`python -m calc reconcile` checks it by SGLang's own arithmetic (boundary.sglang_log), "
                             "and `python -m calc plan --engine sglang` with its --mem-fraction-static as "
                             "--gpu-memory-utilization plans it")  # fmt: skip
        raise InputError(
            "log",
            "no vLLM startup lines found (expected lines such as 'Available KV cache memory: …', "
            f"'GPU KV cache size: …', '# GPU blocks: …', 'Model loading took …'){more}; is this a vLLM startup log?",
        )
    joined = "\n".join(body)
    v0 = sum(m in joined for m in _V0_MARKERS) + len(re.findall(r"(?<!gpu_)model_runner\.py", joined))
    v1 = sum(m in joined for m in _V1_MARKERS)
    engine = "V0" if v0 > v1 or "CPU blocks" in joined else ("V1" if v1 else "unknown")
    measures = {k: tuple(v) for k, v in scan.found.items()}
    return VllmLog(header, engine, scan.version, scan.config, measures, tuple(body), skipped, stopped_at)
