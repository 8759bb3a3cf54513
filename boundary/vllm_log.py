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

from boundary.log_patterns import (  # the patterns, their prefilter and the config keys (split by concept)
    _COMPILED,
    _CONFIG_LINE,
    _CONFIG_RE,
    _KEYS_OF,
    _KEYWORD,
    _KEYWORD_LINE,
    _LEVEL,
    _VERSION,
    _WORKER,
    SGLANG_MARKERS,
)
from calc.errors import InputError

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
