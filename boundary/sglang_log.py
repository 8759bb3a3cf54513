"""An SGLang server's startup log against the plan of the same server: its weights, its KV pool and the tokens the
pool holds (SGLang's model_runner: "Load weight end. … mem usage=W GB", "KV Cache is allocated. #tokens: N, K size:
K GB, V size: V GB" — or "KV size" for MLA —, and from 0.4 "max_total_num_tokens=N, … context_len=L"; SGLang's "GB"
are GiB, printed with two decimals).

    tokens = ⌊pool / bytes per token per GPU⌋     (SGLang sizes its pool in tokens, page size 1; K and V sizes are
                                                    tokens × their bytes, so the logged sizes bracket the tokens)

The tokens check is exact up to the two-decimal rounding of K and V: it holds the model's bytes per token to
SGLang's. The pool and the weights are held against the plan's estimates (calc.pool's SGLang arithmetic), and the
calibration that adopts them is printed: `calc plan --engine sglang --weights-memory-bytes W --kv-cache-memory-bytes
P`. Pure: text in, values out; the CLI (boundary.cli_reconcile) prints it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from boundary.log_names import match_model
from boundary.vllm_log import SGLANG_MARKERS as MARKERS
from calc.catalog import Catalog
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.units import GiB

_F = r"[0-9]{1,9}(?:\.[0-9]{1,6})?(?!\.?\d)"
PATTERNS = {
    "weights_gib": re.compile(rf"Load weight end\..{{0,200}}?mem usage=(?P<v>{_F}) GB"),
    "tokens": re.compile(r"KV Cache is allocated\. #tokens: (?P<v>[0-9]{1,12})(?!\d)"),
    "k_gib": re.compile(rf"KV Cache is allocated\..{{0,40}}?K size: (?P<v>{_F}) GB"),
    "v_gib": re.compile(rf"KV Cache is allocated\..{{0,80}}?V size: (?P<v>{_F}) GB"),
    "kv_gib": re.compile(rf"KV Cache is allocated\..{{0,40}}?KV size: (?P<v>{_F}) GB"),
    "max_total_tokens": re.compile(r"max_total_num_tokens=(?P<v>[0-9]{1,12})(?!\d)"),
    "context_len": re.compile(r"context_len=(?P<v>[0-9]{1,9})(?!\d)"),
    "tp_size": re.compile(r"\btp_size=(?P<v>[0-9]{1,3})(?!\d)"),
    "mem_fraction_static": re.compile(rf"mem_fraction_static=(?P<v>{_F})"),
    "model_path": re.compile(r"model_path='(?P<v>[^']{1,200})'"),
}


@dataclass(frozen=True)
class SglangLog:
    values: dict
    lines: int

    def get(self, key: str):
        return self.values.get(key)


def is_sglang_log(text: str) -> bool:
    return any(m in text for m in MARKERS)


def has_vllm_lines(text: str) -> bool:
    """A vLLM log's own lines (a log that has them is read as vLLM's, whatever else it quotes)."""
    return any(w in text for w in ("Available KV cache memory", "GPU KV cache size", "GPU blocks:", "Model loading took"))


def table(c: SglangCheck):
    """The check as the page's table (boundary.view.Table)."""
    from boundary.view import Table

    return Table(["quantity", "logged", "predicted", "within rounding", "explanation"], [list(r) for r in c.rows])


def parse_sglang_log(text: str) -> SglangLog:
    """The first value of each pattern (TP 0's, which SGLang prints for every rank alike); an InputError where the
    log has no KV pool line."""
    values: dict = {}
    lines = text.splitlines()[:200_000]
    for line in lines:
        if len(line) > 40_000:  # a server_args line is ~30 k characters; nothing longer is read
            continue
        for key, rx in PATTERNS.items():
            if key not in values and (m := rx.search(line)):
                raw = m.group("v")
                values[key] = raw if key == "model_path" else float(raw) if "." in raw else int(raw)
    if "tokens" not in values:
        raise InputError("log", "an SGLang log without its 'KV Cache is allocated. #tokens: …' line: nothing to check")
    return SglangLog(values, len(lines))


@dataclass(frozen=True)
class SglangCheck:
    scenario: Scenario
    model_name: str
    gpu_name: str
    gpu_assumed: bool
    rows: tuple[tuple[str, str, str, str, str], ...]  # quantity, logged, predicted, within rounding, explanation
    calibration: dict
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        keys = ("quantity", "logged", "predicted", "matches", "explanation")
        return {"engine": "sglang", "model": self.scenario.model, "model_name": self.model_name,
                "gpu": self.scenario.gpu, "gpu_name": self.gpu_name, "gpu_assumed": self.gpu_assumed,
                "rows": [dict(zip(keys, r, strict=True)) for r in self.rows], "calibration": self.calibration,
                "notes": list(self.notes)}  # fmt: skip


def check_sglang(log: SglangLog, catalog: Catalog, flags: dict) -> SglangCheck:
    """The log held against the plan of its server: the flags win, then what the log states (its server arguments
    where printed: tp_size, mem_fraction_static, context_len, model_path), then the planner's defaults."""
    notes: list[str] = []
    data: dict = {"engine": "sglang"}
    for key, field in (("tp_size", "tensor_parallel_size"), ("mem_fraction_static", "gpu_memory_utilization"),
                       ("context_len", "max_model_len")):  # fmt: skip
        if log.get(key) is not None:
            data[field] = log.get(key)
    if "model" not in flags:
        found = match_model(log.get("model_path") or "", catalog) if log.get("model_path") else None
        if found is None:
            said = f"names model '{log.get('model_path')}', which is not a shipped spec" if log.get("model_path") \
                else "does not name its model (no server_args line)"  # fmt: skip
            raise InputError("model", f"the SGLang log {said}; pass --model ID (see `python -m calc models`) or "
                                      "--model PATH to a config.json")  # fmt: skip
        data["model"] = found
    assumed = "gpu" not in flags
    if assumed:
        notes.append(f"GPU ASSUMED: {Scenario.model_fields['gpu'].default}; the log names no device: pass --gpu")
    if "gpu_memory_utilization" not in data and "gpu_memory_utilization" not in flags:
        notes.append("mem_fraction_static is not in the log: the plan's default is used (pass "
                     "--gpu-memory-utilization, SGLang's --mem-fraction-static)")  # fmt: skip
    try:
        s = Scenario.model_validate(data | flags)
    except ValueError as e:
        raise InputError("log", f"the log's settings do not make a scenario: {e}") from None
    r = evaluate(s, catalog)
    mem = r.memory
    per_token = mem.kv_bytes_per_token_per_gpu
    rows = []
    w = log.get("weights_gib")
    if w is not None:
        rows.append(("Model weights per GPU", f"{w:,.2f} GiB", f"{mem.weights_bytes_per_gpu / GiB:,.2f} GiB",
                     "yes" if abs(w * GiB - mem.weights_bytes_per_gpu) <= 0.005 * GiB else "no",
                     "weights estimate (parameters × dtype / GPUs)"))  # fmt: skip
    parts = [log.get(k) for k in ("k_gib", "v_gib")] if log.get("k_gib") is not None else [log.get("kv_gib")]
    parts = [p for p in parts if p is not None]
    tokens = int(log.get("tokens"))
    if parts:
        pool, slack = sum(parts) * GiB, 0.005 * GiB * len(parts)
        rows.append(("KV cache pool", f"{sum(parts):,.2f} GiB", f"{mem.kv_cache_memory_bytes / GiB:,.2f} GiB",
                     "yes" if abs(pool - mem.kv_cache_memory_bytes) <= slack else "no",
                     "the plan's pool: (memory free before loading) × mem_fraction_static − weights"))  # fmt: skip
        low, high = math.floor((pool - slack) / per_token), math.floor((pool + slack) / per_token)
        ok = low <= tokens <= high
        rows.append(("KV cache (tokens)", f"{tokens:,}", f"{low:,}–{high:,}", "yes" if ok else "no",
                     f"the logged pool over {per_token:,.0f} B a token per GPU"
                     + ("" if ok else f": the log's are {pool / tokens:,.0f} B ± {slack / tokens:,.0f}; check the "
                        "model, TP and kv_cache_dtype")))  # fmt: skip
    rows.append(("KV cache (tokens), planned", f"{tokens:,}", f"{mem.kv_cache_tokens:,}",
                 "yes" if abs(mem.kv_cache_tokens - tokens) < mem.block_size else "no",
                 f"the plan's own pool, in {mem.block_size}-token blocks (SGLang allocates by the token)"))  # fmt: skip
    cal = {"weights_memory_bytes": float(round(w * GiB))} if w is not None else {}
    cal["kv_cache_memory_bytes"] = float(tokens * per_token)
    return SglangCheck(s, r.model_name, r.gpu.name, assumed, tuple(rows), cal, tuple(notes))


def render_sglang(c: SglangCheck, path: str) -> str:
    from boundary.urlstate import cli_command

    head = ["quantity", "logged", "predicted", "within rounding", "explanation"]
    widths = [max(len(str(row[i])) for row in [head, *c.rows]) for i in range(4)]
    table = [" ".join(str(x).ljust(widths[i]) if i < 4 else str(x) for i, x in enumerate(row)) for row in [head, *c.rows]]
    s = c.scenario.model_copy(update=c.calibration)
    out = [f"SGLang startup log: {path}", f"model: {c.model_name} ({c.scenario.model})",
           f"gpu:   {c.gpu_name} ({c.scenario.gpu})" + (" — ASSUMED (pass --gpu)" if c.gpu_assumed else ""), "",
           *table, "", "calibration (apply to `python -m calc plan`): "
           + " ".join(f"--{k.replace('_', '-')} {int(v)}" for k, v in c.calibration.items()),
           f"  reproduce the log: {cli_command(s)}"]  # fmt: skip
    if c.notes:
        out += ["notes:", *(f"  - {n}" for n in c.notes)]
    return "\n".join(out)
