"""SGLang's pools for a hybrid model (calc.sglang_hybrid), against what Massed Compute's Nemotron-3-Nano-30B servers
logged (internal_states of their raw JSONs: max_mamba_cache_size 81 and 248, 16 and 49 running, max_total_num_tokens
727,598 and 2,218,112; tests/data/benchmarks/massed-compute-nemotron3-nano-30b-*.yaml). History (27)."""

from pathlib import Path

import pytest

from boundary.bench_data import load_runs
from calc.evaluate import evaluate
from calc.hf_config import model_from_hf_config
from calc.scenario import Scenario
from calc.sglang_hybrid import mamba_pools, mamba_ratio, sglang_state_bytes

CONFIG = Path(__file__).parent / "data" / "hf_configs" / "nemotron-3-nano-30b-a3b" / "config.json"


def _nano():
    import json

    return model_from_hf_config(json.loads(CONFIG.read_text()), name="nemotron-3-nano")


def test_one_requests_state_as_sglang_stores_it():
    """23 Mamba-2 layers, each a conv state of (conv_kernel − 1) · (intermediate + 2 · groups · state) = 3 · (4,096 +
    2 · 8 · 128) = 18,432 bf16 values and an SSM state of 64 heads · 64 · 128 = 524,288 fp32 values: 23 · (36,864 +
    2,097,152) = 49,082,368 B (46.8 MiB)."""
    m = _nano()
    assert m.plan.state() == 23
    assert 3 * (4096 + 2 * 8 * 128) == 18_432 and 64 * 64 * 128 == 524_288
    assert sglang_state_bytes(m, tp=1) == 23 * (18_432 * 2 + 524_288 * 4) == 49_082_368


def test_the_two_logged_servers():
    """H100 PCIe at --mem-fraction-static 0.85, SGLang 0.5.14: M = 81 slots, 81 // 5 = 16 running (logged 81, 16),
    KV within 1 % of 727,598 tokens; RTX PRO 6000 at 0.88, 0.5.15: M within 1 % of 248, KV of 2,218,112."""
    for gpu, f, version, slots, running, tokens in (("h100-pcie", 0.85, "0.5.14", 81, 16, 727_598),
                                                    ("rtx-pro-6000-blackwell", 0.88, "0.5.15", 248, 49, 2_218_112)):  # fmt: skip
        s = Scenario(model="custom", custom_model=_encode(), gpu=gpu, engine="sglang", engine_version=version,
                     gpu_memory_utilization=f, max_model_len=4096)  # fmt: skip
        r = evaluate(s, _catalog())
        p = mamba_pools(s, r.model, r.memory)
        assert p.slots == pytest.approx(slots, rel=0.01) and p.running_cap == pytest.approx(running, rel=0.025)
        assert p.kv_tokens == pytest.approx(tokens, rel=0.01)
        # and the plan's own pool is that KV, in blocks of the attention layers alone (history (28))
        assert r.memory.pool_token_capacity == pytest.approx(tokens, rel=0.01) and r.memory.state_slots == p.slots
    assert (p.slots, p.running_cap) == (250, 50)  # the RTX's: 248 and 49 logged


def test_the_ratio_by_release_and_the_replay_caps_what_runs(catalog):
    """ratio 3 (0.5.4, 0.5.10–0.5.13), 5 with the extra buffer (0.5.7–0.5.9, 0.5.14 on); the H100 server's 32 clients
    are replayed with 16 running, where it had asked for 256 (and the replay's default 1,024)."""
    assert [mamba_ratio(v) for v in ("0.5.4", "0.5.7", "0.5.9", "0.5.10", "0.5.13", "0.5.14", "latest")] == [3, 5, 5, 3,
                                                                                                          3, 5, 5]  # fmt: skip
    runs = {r.id: r for r in load_runs(catalog)[0]}
    assert runs["massed-nemotron3-nano-30b-h100-sglang-c32"].scenario.max_num_seqs == 16
    assert runs["massed-nemotron3-nano-30b-h100-vllm-c32"].scenario.max_num_seqs > 16  # vLLM has no such cap
    r = evaluate(runs["massed-nemotron3-nano-30b-h100-sglang-c32"].scenario.model_copy(update={"max_num_seqs": 256}),
                 catalog)  # fmt: skip
    # and the plan itself runs what SGLang runs: 16 at once, its serve command asking for no more
    assert any("81 // 5 = 16 requests at once" in n and "this plan runs 16 at once where max_num_seqs asks 256" in n
               for n in r.notes)  # fmt: skip
    assert r.scenario.max_num_seqs == 16 and r.fit.max_concurrency_at_length <= 16
    from calc.serve_command import joined, plan_serve_commands

    assert "--max-running-requests 16 " in joined(plan_serve_commands(r))


_cat = None


def _catalog():
    global _cat
    if _cat is None:
        from calc.loader import load_catalog

        _cat = load_catalog()
    return _cat


def _encode():
    from calc.custom import encode_custom_model

    return encode_custom_model(_nano())


def test_the_plan_runs_a_hybrid_at_its_state_slots(catalog):
    """SGLang's running-request default (min(pool / 2, clamp(…, 2,048, 4,096))) is capped again by a hybrid's state
    slots // 5 (0.5.14 on), and so is any --max-running-requests: Qwen3-Next on two H200s, the server's own batch
    limits, the note and the plan all run slots // 5."""
    from calc.engine_defaults import server_defaults

    s = Scenario(model="qwen3-next-80b-a3b", gpu="h200", engine="sglang", tensor_parallel_size=2)
    r = evaluate(s, catalog)
    slots = r.memory.state_slots
    assert 5 * 256 > slots > 0  # so the cap binds below the planner's 256
    own = server_defaults(s, r.gpu, True, r.memory.pool_token_capacity, slots)
    assert own["max_num_seqs"] == slots // 5
    assert r.scenario.max_num_seqs == slots // 5  # the plan runs it
    assert any(f"{slots:,} // 5 = {slots // 5:,} requests at once" in n for n in r.notes)
    # a plan asking for fewer than the cap keeps its own
    assert evaluate(s.model_copy(update={"max_num_seqs": 64}), catalog).scenario.max_num_seqs == 64


def test_a_pool_with_fewer_slots_than_the_ratio_runs_nothing_and_says_so(catalog):
    """Nemotron-H-8B on an RTX 4090 at 0.7: 4 state slots, 4 // 5 = 0 running: a refusal, not a crash; the search
    names the same reason."""
    from calc.search import search

    s = Scenario(model="nemotron-h-8b", gpu="rtx-4090", engine="sglang", gpu_memory_utilization=0.7)
    r = evaluate(s, catalog)
    assert 0 < r.memory.state_slots < 5 and not r.fit.fits
    assert f"runs at most {r.memory.state_slots} // 5 = 0 at once" in r.fit.refused
    found = search(s.model_copy(update={"search_gpus": "rtx-4090", "search_tensor_parallel_size": "1",
                                        "search_pipeline_parallel_size": "1", "search_gpu_memory_utilization": "0.7",
                                        "search_dtype": "auto", "search_kv_cache_dtype": "auto"}),
                   catalog)  # fmt: skip
    assert set(found.why) == {13}


def test_pipeline_stages_cap_at_their_fewest_slots_in_the_plan_and_the_search(catalog):
    """A running request holds state on every stage: the cap counts from the stage with the fewest slots, in the plan
    (PoolResult.running_slots) as in the search, and the changes a plan offers are capped on their own pools."""
    from calc.search import search
    from calc.search_rows import row, scenario_of

    s = Scenario(model="nemotron-3-nano-30b-a3b", gpu="h100-sxm", engine="sglang", request_rate=2.0,
                 search_gpus="h100-sxm", search_tensor_parallel_size="1,2", search_pipeline_parallel_size="1,2",
                 search_gpu_memory_utilization="0.8,0.9,0.95", search_max_num_seqs="64,256", search_dtype="bf16",
                 search_kv_cache_dtype="auto")  # fmt: skip
    r = search(s, catalog)
    staged = 0
    for i in range(r.configs_evaluated):
        d, rep = row(r, i), evaluate(scenario_of(r, i), catalog)
        assert d["max_concurrency_at_length"] == rep.fit.max_concurrency_at_length
        assert d["tpot_s"] == pytest.approx(rep.latency.tpot_s, rel=1e-9)
        staged += d["pipeline_parallel_size"] == 2 and rep.memory.running_slots < rep.memory.state_slots
    assert staged >= 1
    plan = evaluate(Scenario(model="nemotron-3-nano-30b-a3b", gpu="h100-sxm", engine="sglang", concurrency=64), catalog)
    assert plan.scenario.max_num_seqs == 24 and plan.asked.max_num_seqs == 256
    tp2 = next(x for x in plan.suggestions if x.change.startswith("tensor_parallel_size=2"))
    assert tp2.fits and tp2.max_concurrency_at_length > 64  # TP 2's own pool holds more slots, hence more running
