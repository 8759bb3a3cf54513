"""Published benchmark runs (tests/data/benchmarks/*.yaml) as Scenarios with their measured numbers.

Each run becomes the Scenario that reproduces its server (model spec via models.yaml, GPU id, TP, dtype, the
engine's own defaults where the source states none) and its benchmark (closed loop, request rate, static batch).
Runs are grouped by (source file, model, GPU): a group is in the calibration part or the held-out part, never both,
so near-identical runs of one setup cannot leak from the fit into the judgement. The split is made once and kept
in split.yaml; groups that appear later are assigned by the same rule and appended.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from calc.custom import encode_custom_model
from calc.engine_defaults import default_budget
from calc.engine_spec import version_tuple
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.scenario import Scenario
from calc.sglang_defaults import sglang_mem_fraction

ROOT = Path(__file__).resolve().parent.parent
MEM_FRACTION = re.compile(r"--mem-fraction-static[ =]+([0-9.]+)")
DATA = ROOT / "tests" / "data" / "benchmarks"
GPU_ALIASES = {"h100 (variant not stated)": "h100-sxm", "a100 (memory variant not stated)": "a100-80gb-sxm"}
DTYPES = {"bf16": "auto", "fp16": "fp16", "fp8": "fp8", "awq-int4": "int4", "gptq-int4": "int4", "w4a16-int4": "int4",
          "gptq-int8": "int8", "mxfp4": "auto", None: "auto"}  # fmt: skip
OLDEST_V1 = (0, 8)  # vLLM runs before V1 became the default engine (0.8) have other fixed costs: not used
V0_FORCED = "VLLM_USE_V1=0"  # in a server command: a 0.8–0.10 release told to run its old engine (fixed costs unlike V1)
V1_DEFAULT_SINCE = (2025, 3)  # vLLM 0.8.0, when V1 became the default, for runs dated but not versioned
HELD_OUT_SHARE = 3  # one group in three
ENDED_EARLY = 0.9
"""A random-prompt run whose requests decoded on average less than this share of the stated output length stopped at
end-of-sequence (ignore_eos off) or lost requests: its requests finished at times a replay of that length does not
give (the RTX 4090 Mistral-7B sweep, 100 of 128 tokens: a closed loop of fixed lengths moves in lockstep, four
prompts prefilled at once, where the real one's ends were spread out)."""
FULL_LENGTH = 0.995
"""A run that decoded at least this share of its stated output tokens is replayed at full length (rounding)."""
QUANT_WORDS = ("AWQ", "GPTQ", "FP8", "INT4", "W4A16", "KV cache")  # "special" only for its weight format: a stock run
NOT_STOCK = ("torch-compile", "tuned", "multi-step", "speculative", "EAGLE", "enforce-eager", "bitsandbytes",
             "bits not stated", "does not state the bit width")  # fmt: skip


@dataclass(frozen=True)
class BenchRun:
    id: str
    group: str
    part: str  # "calibration" | "held-out"
    kind: str  # "serve" | "latency"
    scenario: Scenario
    max_concurrency: int | None
    request_rate: float | None
    num_prompts: int
    batch_size: int | None
    range_ratio: float
    """Lengths uniform in [len·(1 − r), len·(1 + r)] around the stated (mean) lengths."""
    dataset: str
    """"random", or the ShareGPT shape of the client that sent it (calc.length_shapes): "sharegpt" (vllm bench
    serve's filter), "sharegpt-sglang" (sglang.bench_serving's)."""
    measured: dict
    gpu_family: str
    notes: tuple[str, ...] = field(default=())


def _engine_version(r: dict, catalog) -> str:
    """The run's release as a Scenario's engine_version: its leading version number, 'latest' for a nightly build,
    and the spec's oldest release where the source states none (every such source is of 2024–2025)."""
    text = str(r.get("engine_version") or "")
    stated = version_tuple(text)
    if stated:
        return ".".join(str(p) for p in stated)
    return "latest" if "nightly" in text else catalog.engines[r["engine"]].since


def stratified_split(groups: dict[str, str]) -> dict[str, str]:
    """{group: GPU family} → {group: part}: within each family, groups ordered by a hash of their name, every third
    from the second held out — so each family with two or more groups is judged on one it was not fitted on."""
    by_family: dict[str, list[str]] = {}
    for g, fam in groups.items():
        by_family.setdefault(fam, []).append(g)
    parts = {}
    for members in by_family.values():
        ordered = sorted(members, key=lambda g: hashlib.sha1(g.encode()).hexdigest())
        for i, g in enumerate(ordered):
            parts[g] = "held-out" if i % HELD_OUT_SHARE == 1 else "calibration"
    return parts


def load_runs(catalog, data_dir: Path = DATA) -> tuple[list[BenchRun], list[tuple[str, str]]]:
    """(usable runs, [(run id, why skipped)])."""
    models = yaml.safe_load((data_dir / "models.yaml").read_text())
    split_path = data_dir / "split.yaml"
    fixed = yaml.safe_load(split_path.read_text()) if split_path.exists() else {}
    customs: dict[str, str] = {}
    runs, skipped = [], []
    for path in sorted(data_dir.glob("*.yaml")):
        if path.name in ("models.yaml", "split.yaml"):
            continue
        doc = yaml.safe_load(path.read_text())
        dated = re.search(r"(\d{4})-(\d{2})-\d{2}", str(doc.get("title", "")))
        variant = doc.get("gpu_variant") or {}  # a source's own unstated variant, inferred with its reason in the file
        for r in doc.get("runs", []):
            r = {**r, "gpu": variant.get(r["gpu"], r["gpu"])}
            why = _skip(r, models, catalog)
            if not why and r["engine"] == "vllm" and dated and (int(dated[1]), int(dated[2])) < V1_DEFAULT_SINCE:
                why = f"vLLM of {dated[0]}: before the V1 engine the constants describe"
            if why:
                skipped.append((r["id"], why))
                continue
            m = models[r["model"]]
            gpu = GPU_ALIASES.get(r["gpu"], r["gpu"])
            dp = r.get("data_parallel_size") or 1
            tp = r.get("tensor_parallel_size") or 1
            if r["engine"] == "sglang":  # SGLang's --tp counts every GPU; the attention ranks are --dp of them
                tp //= dp
            data: dict = {"gpu": gpu, "tensor_parallel_size": tp, "data_parallel_size": dp,
                          "pipeline_parallel_size": r.get("pipeline_parallel_size") or 1,
                          "dtype": m.get("dtype") or DTYPES.get(r.get("dtype"), "auto"), "engine": r["engine"],
                          "engine_version": _engine_version(r, catalog),
                          "kv_cache_dtype": "fp8" if r.get("kv_cache_dtype") == "fp8" else "auto"}  # fmt: skip
            if "spec" in m:
                data["model"] = m["spec"]
            else:
                if m["config"] not in customs:
                    cfg = json.loads((ROOT / m["config"]).read_text())
                    customs[m["config"]] = encode_custom_model(model_from_hf_config(cfg, name=r["model"]))
                data |= {"model": "custom", "custom_model": customs[m["config"]]}
            spec = catalog.models.get(data["model"]) if data["model"] != "custom" else None
            mnbt, seqs = default_budget(r["engine"], catalog.gpus[gpu].memory_gib, gpu, r["kind"] == "latency",
                                        version=data["engine_version"])  # fmt: skip
            data["max_num_batched_tokens"] = r.get("max_num_batched_tokens") or mnbt
            data["max_num_seqs"] = r.get("max_num_seqs") or seqs
            if r["engine"] == "sglang" and dp > 1:  # DP attention divides --chunked-prefill-size and
                data["max_num_batched_tokens"] //= dp  # --max-running-requests over the ranks (server_args.py
                data["max_num_seqs"] = max(1, data["max_num_seqs"] // dp)  # _handle_data_parallelism)
            if r.get("enforce_eager"):
                data["enforce_eager"] = True
            if r.get("expert_parallel"):  # over every GPU (_skip): vLLM's --enable-expert-parallel, SGLang's --ep-size
                data["enable_expert_parallel"] = True
            if r.get("gpu_memory_utilization"):  # --gpu-memory-utilization as the server was started
                data["gpu_memory_utilization"] = r["gpu_memory_utilization"]
            elif r["engine"] == "sglang" and (flag := MEM_FRACTION.search(r.get("server_cmd") or "")):
                data["gpu_memory_utilization"] = float(flag.group(1))  # stated in its command, not its record
            elif r["engine"] == "sglang":  # SGLang picks its own --mem-fraction-static when not given
                g = catalog.gpus[gpu]
                mm = catalog.models.get(m["spec"]) if "spec" in m else model_from_hf_config(
                    json.loads((ROOT / m["config"]).read_text()), name=r["model"])  # fmt: skip
                data["gpu_memory_utilization"] = sglang_mem_fraction(
                    data["engine_version"], g.smi_mib, tp=tp * dp, pp=data["pipeline_parallel_size"], dp=dp,
                    chunk=r.get("max_num_batched_tokens"), mla=mm.is_mla, multimodal=mm.vision_config is not None,
                    rocm=g.vendor == "amd", context_len=None)  # fmt: skip
            if "chat" in str(r.get("client") or ""):  # --backend / --endpoint-type openai-chat, /v1/chat/completions
                data["endpoint_type"] = "openai-chat"
            data["input_len"], data["output_len"] = max(1, round(r["input_len"])), max(1, round(r["output_len"]))
            longest = data["input_len"] + data["output_len"]
            positions = m.get("max_position_embeddings") or (spec.max_position_embeddings if spec else 32768)
            data["max_model_len"] = max(longest, min(positions, 32768))  # vLLM's default: the config's own
            batch = r.get("batch_size")
            conc = r.get("max_concurrency") or batch or r.get("num_prompts") or 1
            data["concurrency"] = min(int(conc), 1_000_000)
            if r["engine"] == "sglang":  # a hybrid model's Mamba pool caps what it runs (calc.sglang_hybrid)
                data["max_num_seqs"] = _sglang_running_cap(data, catalog)
            group = f"{path.stem}|{r['model']}|{gpu}"
            rate = r.get("request_rate")
            runs.append(BenchRun(
                id=r["id"], group=group, part=fixed.get(group, ""), kind=r["kind"],
                scenario=Scenario.model_validate(data), max_concurrency=r.get("max_concurrency"),
                request_rate=None if rate in (None, "inf", float("inf")) else float(rate),
                num_prompts=int(r.get("num_prompts") or conc), batch_size=batch, range_ratio=_range_ratio(r),
                dataset=_dataset(r),
                measured=r.get("measured") or {},
                gpu_family=catalog.gpus[gpu].arch,
            ))  # fmt: skip
    impossible = _beyond_the_hardware(runs, catalog)
    skipped += [(r.id, impossible[r.group]) for r in runs if r.group in impossible]
    runs = [r for r in runs if r.group not in impossible]
    new = {r.group: r.gpu_family for r in runs if not r.part}
    if new:  # groups the split has not seen: the same rule over them alone
        parts = stratified_split(new)
        runs = [replace(r, part=parts[r.group]) if not r.part else r for r in runs]
    return runs, skipped


def printed_ms(d: dict) -> tuple[float | None, float | None]:
    """(TTFT, TPOT) in ms as a run printed them: the median where it gives one, else the mean (TPOT: else the
    median ITL)."""
    return (d.get("median_ttft_ms") or d.get("mean_ttft_ms"),
            d.get("median_tpot_ms") or d.get("mean_tpot_ms") or d.get("median_itl_ms"))  # fmt: skip


def _beyond_the_hardware(runs: list[BenchRun], catalog) -> dict[str, str]:
    """{group: why} for the groups where one request alone (a closed loop at concurrency 1, or a run of one prompt)
    got its first token, or its next ones, sooner than the stated GPUs' roofline floor allows (prefill FLOPs / peak
    FLOP/s, or bytes / bandwidth): such a setup had more GPUs than stated, or a cached prompt, and every run of the
    group is then unusable."""
    out: dict[str, str] = {}
    for r in runs:
        alone = r.max_concurrency == 1 or (r.num_prompts == 1 and r.request_rate is None)
        if r.kind != "serve" or not alone or r.group in out:
            continue
        ttft_ms, tpot_ms = printed_ms(r.measured)
        lat = evaluate(r.scenario, catalog).latency
        gpus = f"{r.scenario.tensor_parallel_size * r.scenario.pipeline_parallel_size} × {r.scenario.gpu}"
        if ttft_ms and ttft_ms / 1e3 < lat.prefill.floor_s:
            out[r.group] = (f"{r.id}: first token in {ttft_ms:,.1f} ms, below the {lat.prefill.floor_s * 1e3:,.1f} ms "
                            f"prefill floor of {gpus}; GPU count or prompt caching not as stated")  # fmt: skip
        elif tpot_ms and tpot_ms / 1e3 < lat.decode.floor_s:
            out[r.group] = (f"{r.id}: {tpot_ms:,.1f} ms per output token, below the {lat.decode.floor_s * 1e3:,.1f} ms "
                            f"decode floor of {gpus}; GPU count not as stated")  # fmt: skip
    return out


def decoded_share(run: BenchRun) -> float:
    """Output tokens a served request decoded on average over the stated length (1 where all were, or unknown):
    a random-prompt run without --ignore-eos whose requests partly ended at end-of-sequence, which a replay draws
    (calc.sim_stats.eos_hazard) — in a closed loop of fixed lengths those ends break the lockstep."""
    decoded = _decoded_per_request(run.measured)
    if run.kind != "serve" or not decoded:
        return 1.0
    share = decoded / run.scenario.output_len
    return share if share < FULL_LENGTH else 1.0


def _decoded_per_request(m: dict) -> float | None:
    """Output tokens a completed request decoded on average, from the printed totals or the two throughputs."""
    if m.get("total_output_tokens") and m.get("completed"):
        return m["total_output_tokens"] / m["completed"]
    if m.get("output_throughput") and m.get("request_throughput"):
        return m["output_throughput"] / m["request_throughput"]
    return None


def _dataset(r: dict) -> str:
    """ShareGPT runs draw lengths from ShareGPT's shape as their client filters it; the rest are random."""
    if r.get("dataset") != "sharegpt":
        return "random"
    return "sharegpt-sglang" if "sglang.bench_serving" in str(r.get("client") or "") else "sharegpt"


def _range_ratio(r: dict) -> float:
    """How much a random run's request lengths vary. Stated: vLLM's --random-range-ratio. SGLang's bench_serving
    draws random lengths uniformly up to the stated length by default (its ratio 0 is the lower end): lengths
    uniform over 0 … twice the mean the run printed."""
    stated = r.get("range_ratio")
    client = str(r.get("client") or "")
    if "sglang" in client and not stated:
        return 0.95
    if "sglang" in client:
        return 1.0 - float(stated)
    # vLLM's benchmark before 0.9 drew lengths uniformly over [ratio · L, L] and defaulted to 1.0 (fixed lengths,
    # vLLM 0.8.5's benchmarks/benchmark_dataset.py); since then the ratio is ±ratio · L, below 1.
    return 0.0 if float(stated or 0.0) >= 1.0 else float(stated or 0.0)


def _skip(r: dict, models: dict, catalog) -> str | None:
    special = str(r.get("special") or "")
    if special and not any(w in special for w in QUANT_WORDS) or any(w in special for w in NOT_STOCK):
        return f"special run ({special})"
    if r["kind"] not in ("serve", "latency"):
        return "offline throughput runs are not predicted"
    if r["model"] not in models:
        return "no model spec or config.json for this checkpoint (models.yaml)"
    if GPU_ALIASES.get(r["gpu"], r["gpu"]) not in catalog.gpus:
        return f"GPU '{r['gpu']}' has no spec"
    v = version_tuple(str(r.get("engine_version") or ""))
    if r["engine"] == "vllm" and v is not None and v < OLDEST_V1:
        return f"vLLM {r['engine_version']} predates the V1 engine the constants describe"
    if r["engine"] == "vllm" and V0_FORCED in str(r.get("server_cmd") or ""):
        return f"vLLM's V0 engine ({V0_FORCED}): not the V1 engine the constants describe"
    if not r.get("input_len") or not r.get("output_len"):
        return "input or output length not stated"
    decoded = _decoded_per_request(r.get("measured") or {})
    if r["kind"] == "serve" and r.get("dataset") == "random" and decoded and decoded < ENDED_EARLY * r["output_len"]:
        return (f"outputs ended early: {decoded:,.1f} of {r['output_len']:,} tokens decoded a request on average "
                "(end-of-sequence with ignore_eos off, or failed requests), so its requests did not finish when a "
                "replay of the stated length has them finish")  # fmt: skip
    dp = r.get("data_parallel_size", 1)
    if dp is None:
        return "data-parallel attention of a size the source does not state"
    tp = r.get("tensor_parallel_size") or 1
    gpus = tp if r["engine"] == "sglang" else tp * dp  # SGLang's --tp counts every GPU of the server
    if r["engine"] == "sglang" and tp % dp:
        return f"SGLang --tp {tp} is not a multiple of --dp {dp}"
    if r.get("expert_parallel") and r["expert_parallel"] != gpus:
        return "expert parallelism over other GPUs than all the server's is not modelled"
    return None


def write_split(runs: list[BenchRun], data_dir: Path = DATA) -> None:
    """Fix every group's part in split.yaml (written once by scripts/calibrate.py; later groups are appended)."""
    parts = {r.group: r.part for r in runs}
    path = data_dir / "split.yaml"
    head = "# calibration | held-out, per (source file | checkpoint | GPU) group; fixed once, appended for new groups\n"
    path.write_text(head + yaml.safe_dump(dict(sorted(parts.items())), sort_keys=False, allow_unicode=True))


def _sglang_running_cap(data: dict, catalog) -> int:
    """max_num_seqs, capped where SGLang's Mamba pool holds fewer running requests (M // ratio): Massed Compute's
    Nemotron-3-Nano-30B on an H100 asked for 256 and ran 16 (history (27))."""
    from calc.pool import size_pool
    from calc.resolve import resolve
    from calc.sglang_hybrid import as_sglang_runs

    s = Scenario.model_validate(data)
    m, g = resolve(s, catalog)
    if not m.plan.state():
        return data["max_num_seqs"]
    return as_sglang_runs(s, m, size_pool(s, m, g)).max_num_seqs  # what the plan runs too (calc.evaluate)

