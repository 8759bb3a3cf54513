"""SGLang's KV pool by its own arithmetic (model_runner.profile_max_num_token) and the --mem-fraction-static it takes
when started without one (server_args.py), against the pools and fractions Massed Compute's servers logged
(tests/data/benchmarks/massed-compute-*.yaml, server_info in server_cmd). History (25)."""

import re
from pathlib import Path

import pytest
import yaml

from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.sglang_defaults import sglang_mem_fraction

GiB = 2**30
DATA = Path(__file__).parent / "data" / "benchmarks"


def test_the_pool_is_the_fraction_of_what_is_free_before_loading_less_the_weights(catalog):
    """Llama-3.1-8B on an H100 SXM at --mem-fraction-static 0.9: (79.19 GiB − 0.70 GiB in use before loading) × 0.9
    − 8,030,261,248 params × 2 B (reference/models.md) = 55.68 GiB; blocks of 16 tokens × 131,072 B (32 layers ×
    8 KV heads × 128 × 2 (K and V) × 2 B) = 2 MiB. The activation peak and graphs are not taken from it."""
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang"), catalog)
    pool = (79.19 - 0.70) * 0.9 * GiB - 8_030_261_248 * 2
    assert r.memory.kv_cache_memory_bytes == pytest.approx(pool, rel=1e-3)
    assert r.memory.num_gpu_blocks == int(pool // (16 * 32 * 8 * 128 * 2 * 2))
    vllm = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog).memory
    outside = vllm.activation_bytes + vllm.cudagraph_bytes
    assert r.memory.kv_cache_memory_bytes > vllm.kv_cache_memory_bytes + outside * 0.5  # about that much larger


def _logged_servers():
    """(record, fraction, max_total_num_tokens) of each SGLang server Massed Compute logged, once per file."""
    out = []
    for path in sorted(DATA.glob("massed-compute-*.yaml")):
        for run in yaml.safe_load(path.read_text())["runs"]:
            m = re.search(r"mem_fraction_static ([\d.]+).*max_total_num_tokens (\d+)", run.get("server_cmd") or "")
            if run["engine"] == "sglang" and m:
                out.append((path.stem, run, float(m.group(1)), int(m.group(2))))
                break
    return out


def test_seventeen_logged_sglang_pools_within_four_percent(catalog):
    """Every non-hybrid server: the planned pool (tokens) within −1 … +4 % of the logged max_total_num_tokens, at the
    logged fraction (vLLM's arithmetic at the same fraction gave −4 … −100 %: Qwen3-32B on one H100 8,288 tokens for
    23,515 logged). The two Nemotron-3 hybrids (SGLang's own Mamba pool) are left out."""
    from boundary.bench_data import load_runs

    runs = {r.id: r for r in load_runs(catalog)[0]}
    checked = 0
    for stem, run, fraction, logged in _logged_servers():
        if "nemotron3" in stem or run["id"] not in runs:
            continue
        s = runs[run["id"]].scenario
        assert s.gpu_memory_utilization == fraction  # the record carries what server_info logged
        tokens = evaluate(s, catalog).memory.pool_token_capacity
        assert -0.01 <= tokens / logged - 1 <= 0.04, (stem, tokens, logged)
        checked += 1
    assert checked == 17


def test_the_default_fraction_reproduces_the_two_servers_started_without_it():
    """0.5.3 and later: R = 512 + 1.5 · max(chunk, 2,048) + 2 · cuda_graph_max_bs + 1,024 · tp / 8 + 8 MiB per
    captured prompt size (50 up to the 4,096-token context), at least 10 GiB over 60 GiB; round((G − R) / G, 3).
    L40S (46,068 MiB, chunk 4,096, bs 32): R = 512 + 6,144 + 64 + 128 + 400 = 7,248 → 0.843, logged 0.843.
    Two RTX PRO 6000 (97,887 MiB, chunk 8,192, bs 256): R = 512 + 12,288 + 512 + 256 + 400 = 13,968 → 0.857,
    logged 0.857 (massed-compute-llama31-8b-l40s, -llama33-70b-2xrtxpro6000)."""
    assert round((46068 - 7248) / 46068, 3) == 0.843
    assert sglang_mem_fraction("0.5.14", 46068, context_len=4096) == 0.843
    assert round((97887 - 13968) / 97887, 3) == 0.857
    assert sglang_mem_fraction("0.5.15.post1", 97887, tp=2, context_len=4096) == 0.857
    logged = {stem: f for stem, _, f, _ in _logged_servers()}
    assert logged["massed-compute-llama31-8b-l40s"] == 0.843
    assert logged["massed-compute-llama33-70b-2xrtxpro6000"] == 0.857


def test_the_older_releases_rules():
    """0.4.2–0.4.5: by TP alone; 0.4.8–0.5.2: a reserve by memory tier, H100 (81,559 MiB) 9.5 + 0.5 GiB → round(1 −
    10,240 / 81,559, 3) = 0.874; B200 a flat 32 GiB: round(1 − 32,768 / 183,359, 3) = 0.821."""
    assert [sglang_mem_fraction("0.4.2", 81559, tp=tp) for tp in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert sglang_mem_fraction("0.4.9", 81559) == round(1 - 10240 / 81559, 3) == 0.874
    assert sglang_mem_fraction("0.5.2", 183359, tp=8) == round(1 - 32768 / 183359, 3)


def test_the_default_fraction_falls_as_the_replica_and_the_chunk_grow():
    """Properties: more GPUs (NCCL, graphs) and a larger chunk reserve more; a larger GPU keeps a larger share."""
    f = [sglang_mem_fraction("0.5.14", 81559, tp=tp) for tp in (1, 2, 4, 8)]
    assert f == sorted(f, reverse=True) and f[0] > f[-1]
    assert sglang_mem_fraction("0.5.14", 46068, chunk=8192) < sglang_mem_fraction("0.5.14", 46068, chunk=2048)
    assert sglang_mem_fraction("0.5.14", 143771) > sglang_mem_fraction("0.5.14", 81559)


def test_a_fraction_stated_in_the_server_command_is_the_one_replayed(catalog):
    """tanjunchen's DeepSeek-R1 on eight H20 passes --mem-fraction-static 0.90 in its command, its record leaves the
    field empty; the default (0.81 at TP 8 for its 0.4-era image) would leave its weights no room."""
    from boundary.bench_data import load_runs

    runs = [r for r in load_runs(catalog)[0] if r.id.startswith("tanjunchen-") and r.scenario.engine == "sglang"]
    assert runs and {r.scenario.gpu_memory_utilization for r in runs} == {0.9}


def test_the_plan_says_what_the_rest_must_hold_and_when_it_cannot(catalog):
    """The rest, (total − in use before loading) · (1 − f), holds the activation peak and the CUDA graphs; at 0.99
    Llama-3.1-70B on two H100 leaves 0.78 GiB for about 2.7: the note names the largest fraction that leaves room,
    f ≤ 1 − need / free before loading."""
    ok = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang"), catalog)
    assert any(n.startswith("SGLang's KV pool is --mem-fraction-static 0.9 of the 78.49 GiB") and "cannot" not in n
               for n in ok.notes)  # fmt: skip
    s = Scenario(model="llama-3.1-70b", gpu="h100-sxm", engine="sglang", tensor_parallel_size=2,
                 gpu_memory_utilization=0.99, max_num_batched_tokens=8192)  # fmt: skip
    r = evaluate(s, catalog)
    m = r.memory
    free = m.total_memory_bytes - m.non_torch_bytes
    most = 1 - (m.activation_bytes + m.cudagraph_bytes) / free
    note = next(n for n in r.notes if n.startswith("SGLang's KV pool"))
    assert "cannot hold them" in note and f"--mem-fraction-static {int(most * 1000) / 1000:g} or less" in note
    assert not any(n.startswith("SGLang's KV pool") for n in evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"),
                                                                      catalog).notes)  # fmt: skip


def test_the_plan_names_sglangs_own_default_where_it_differs(catalog):
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="l40s", engine="sglang", engine_version="0.5.14",
                          max_num_batched_tokens=4096, max_model_len=4096), catalog)  # fmt: skip
    assert any("takes 0.843 here" in n and "uses 0.9" in n for n in r.notes)
    same = evaluate(Scenario(model="llama-3.1-8b", gpu="l40s", engine="sglang", engine_version="0.5.14",
                             max_num_batched_tokens=4096, max_model_len=4096, gpu_memory_utilization=0.843), catalog)  # fmt: skip
    assert not any("without --mem-fraction-static takes" in n for n in same.notes)
