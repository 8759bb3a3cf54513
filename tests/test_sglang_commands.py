"""What the planner says under --engine sglang, from an audit against SGLang's released code (2026-12-05): the
launch line runs on the release it names, a dense model's data parallelism is plain replicas, TPUs are not SGLang's,
its benchmark JSON also carries sglang.bench_serving's names, and its words are SGLang's."""

import json

import pytest
from conftest import scenario

from boundary.cli import main
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.serve_command import joined, plan_serve_commands


def _cmd(catalog, **kw) -> str:
    return joined(plan_serve_commands(evaluate(scenario(engine="sglang", **kw), catalog)))


def test_the_launch_line_parses_on_the_release_it_names(catalog):
    """--pp-size exists from 0.4.7 (0.4.6's parse_args refuses it): left out at one stage; before 0.5, --ep-size alone
    leaves the experts TP-sliced (0.4.6 deepseek_v2.py picks EPMoE on enable_ep_moe), so --enable-ep-moe joins it."""
    one = _cmd(catalog, model="llama-3.1-8b", gpu="h100-sxm", engine_version="0.4.6")
    assert "--pp-size" not in one and "--tp-size 1 " in one
    assert "--pp-size 2 " in _cmd(catalog, model="llama-3.1-8b", gpu="h100-sxm", pipeline_parallel_size=2)
    old = _cmd(catalog, model="qwen3-30b-a3b", gpu="h100-sxm", engine_version="0.4.6", tensor_parallel_size=2,
               enable_expert_parallel=True)  # fmt: skip
    assert "--ep-size 2 --enable-ep-moe" in old
    new = _cmd(catalog, model="qwen3-30b-a3b", gpu="h100-sxm", engine_version="0.5.14", tensor_parallel_size=2,
               enable_expert_parallel=True)  # fmt: skip
    assert "--ep-size 2" in new and "--enable-ep-moe" not in new


def test_a_dense_models_data_parallel_ranks_are_plain_replicas(catalog):
    """Llama implements no DP attention in SGLang (llama.py sizes its heads by the whole TP group): two ranks are
    --dp-size 2 replicas of --tp-size 1, each with its own 256 requests and 2,048-token chunks, as the plan counts
    them; a MoE model's ranks are DP attention, whose --tp-size and caps are the server's (8 × 1 GPUs, 8 × 256)."""
    dense = _cmd(catalog, model="llama-3.1-8b", gpu="h100-sxm", data_parallel_size=2)
    assert "--tp-size 1 " in dense and "--max-running-requests 256 " in dense and "--chunked-prefill-size 2048 " in dense
    assert dense.endswith("--dp-size 2") and "--enable-dp-attention" not in dense
    moe = _cmd(catalog, model="deepseek-r1", gpu="h200", data_parallel_size=8)
    assert "--tp-size 8 " in moe and "--max-running-requests 2048 " in moe and "--dp-size 8 --enable-dp-attention" in moe


def test_tpus_are_not_planned_under_sglang(catalog, capsys):
    with pytest.raises(InputError) as e:
        evaluate(scenario(engine="sglang", gpu="tpu-v6e", model="llama-3.1-8b"), catalog)
    assert e.value.field == "engine" and "sgl-jax" in str(e.value)
    assert main(["search", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpus", "h100-sxm,tpu-v6e"]) == 0
    assert "note: tpu-v6e: SGLang has no TPU backend" in capsys.readouterr().out
    assert main(["search", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpus", "tpu-v6e"]) == 2
    assert "--gpus: tpu-v6e: SGLang has no TPU backend" in capsys.readouterr().err


def test_the_benchmark_json_also_carries_sglangs_names(capsys):
    """sglang.bench_serving writes the end-to-end latency as *_e2e_latency_ms and the total as total_throughput
    (0.5.14 bench_serving.py); under --engine sglang the same figures are added under those names."""
    args = ["bench", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-concurrency", "4", "--num-prompts", "20",
            "--json"]  # fmt: skip
    assert main([*args, "--engine", "sglang"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["median_e2e_latency_ms"] == d["median_e2el_ms"] and d["total_throughput"] == d["total_token_throughput"]
    assert main(args) == 0
    assert "median_e2e_latency_ms" not in json.loads(capsys.readouterr().out)


def test_sglang_retracts_where_vllm_preempts(catalog):
    r = evaluate(scenario(engine="sglang", model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=2,
                          concurrency=32, input_len=4000, output_len=500), catalog)  # fmt: skip
    assert any(x.endswith("SGLang retracts some") for x in r.fit.reasons)
    assert not any("vLLM preempts" in x for x in r.fit.reasons)


def test_sglangs_default_chunk_by_release(catalog):
    """server_args.py: 0.4.6 takes 8,192 on anything of 25,000 MiB or more (an L40S's 46,068 too), 0.4.7 16,384 above
    180,000 MiB (a B200's 183,359), 0.4.8–0.5.2 have no 4,096 class, 0.5.3 on 4,096 under 60 GiB."""
    from calc.sglang_defaults import sglang_chunk

    assert [sglang_chunk(v, 46068) for v in ("0.4.6", "0.4.9", "0.5.14")] == [8192, 8192, 4096]
    assert [sglang_chunk(v, 183359) for v in ("0.4.6", "0.4.7", "0.5.2", "0.5.14")] == [8192, 16384, 16384, 16384]
    assert [sglang_chunk(v, 24564) for v in ("0.4.6", "0.5.14")] == [2048, 2048]
    old = evaluate(scenario(engine="sglang", engine_version="0.4.6", model="llama-3.1-8b", gpu="l40s"), catalog)
    assert any("starts with --chunked-prefill-size 8,192" in n for n in old.notes)


def test_a_plan_sglang_would_not_survive_says_so_in_its_verdict(catalog):
    """Llama-3.1-70B on two H100 at --mem-fraction-static 0.99 fits its pool, but the rest of each GPU, (79.19 − 0.90)
    · 0.01 = 0.78 GiB, cannot hold the activation peak and CUDA graphs: the verdict says SGLang runs out of memory."""
    from boundary.view_verdict import verdict
    from calc.evaluate import sglang_rest_short_bytes

    r = evaluate(scenario(engine="sglang", model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=2,
                          gpu_memory_utilization=0.99, max_num_batched_tokens=8192), catalog)  # fmt: skip
    short = sglang_rest_short_bytes(r.scenario, r.memory)
    m = r.memory
    assert short == pytest.approx(m.activation_bytes + m.cudagraph_bytes - (79.19 - 0.90) * 0.01 * 2**30, rel=1e-3)
    assert r.fit.fits and "but SGLang runs out of memory at its first large step" in verdict(r)
    assert "runs out of memory" not in verdict(evaluate(scenario(engine="sglang", model="llama-3.1-70b",
                                                                 gpu="h100-sxm", tensor_parallel_size=2), catalog))  # fmt: skip
