"""The command that starts the server a plan describes (calc.serve_command), the same builder the search's rows use."""

import json

from conftest import scenario

from boundary.cli import main
from calc.evaluate import evaluate
from calc.serve_command import joined, plan_serve_commands


def _cmd(catalog, **kw) -> str:
    return joined(plan_serve_commands(evaluate(scenario(**kw), catalog)))


def test_the_default_plan_written_out(catalog):
    """The seed's Qwen2.5-7B on an RTX 4090 at the planner's defaults: every flag the plan sized with."""
    assert _cmd(catalog) == ("vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 1 --pipeline-parallel-size 1 "
                             "--max-model-len 8192 --max-num-seqs 256 --max-num-batched-tokens 2048 "
                             "--gpu-memory-utilization 0.9 --kv-cache-dtype auto")  # fmt: skip


def test_data_parallel_and_expert_parallel_flags(catalog):
    vllm = _cmd(catalog, model="deepseek-r1", gpu="h200", data_parallel_size=8, enable_expert_parallel=True)
    assert "--data-parallel-size 8" in vllm and "--enable-expert-parallel" in vllm
    sglang = _cmd(catalog, model="deepseek-r1", gpu="h200", data_parallel_size=8, engine="sglang")
    assert sglang.startswith("python -m sglang.launch_server") and "--dp-size 8 --enable-dp-attention" in sglang
    # SGLang's --tp-size counts all 8 · 1 GPUs; its caps are the server's: 8 ranks × 256 sequences, × 2,048 tokens
    assert "--tp-size 8 " in sglang and "--max-running-requests 2048 " in sglang and "--chunked-prefill-size 16384 " in sglang


def test_a_quantized_precision_names_the_checkpoint_it_needs(catalog):
    cmd = _cmd(catalog, dtype="int4")
    assert cmd.splitlines()[0].startswith("# CHECKPOINT={an INT4 (AWQ or GPTQ) checkpoint of Qwen/Qwen2.5-7B-Instruct")
    assert 'vllm serve "$CHECKPOINT"' in cmd
    assert "--quantization fp8" in _cmd(catalog, gpu="h100-sxm", dtype="fp8")


def test_gaudis_fp8_kv_cache_is_served_as_fp8_inc(catalog, capsys):
    """vLLM-Gaudi's platform takes only `fp8_inc` for an 8-bit KV cache (HpuPlatform.is_kv_cache_dtype_supported,
    vllm-gaudi platform.py; its unit test asserts "fp8" is False): the plan's and the search's lines say so, and a
    GPU's fp8 stays fp8."""
    assert "--kv-cache-dtype fp8_inc" in _cmd(catalog, model="llama-3.1-8b", gpu="gaudi3", kv_cache_dtype="fp8")
    assert "--kv-cache-dtype fp8 " in _cmd(catalog, model="llama-3.1-8b", gpu="h100-sxm", kv_cache_dtype="fp8") + " "
    assert "--kv-cache-dtype auto" in _cmd(catalog, model="llama-3.1-8b", gpu="gaudi3")
    assert main(["search", "--model", "llama-3.1-8b", "--gpus", "gaudi3", "--kv-cache-dtype", "fp8", "--json"]) == 0
    assert "--kv-cache-dtype fp8_inc" in json.loads(capsys.readouterr().out)["cheapest"]["serve_command"]


def test_disaggregated_lines_carry_the_fleets_instances(catalog):
    r = evaluate(scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, input_len=2000,
                          output_len=500, request_rate=10, disaggregated=True), catalog)  # fmt: skip
    roles = [role for role, _ in plan_serve_commands(r)]
    assert roles == [f"prefill: {r.fleet.prefill_instances} instance(s)", f"decode: {r.fleet.decode_instances} instance(s)"]
    assert all("--kv-transfer-config" in cmd for _, cmd in plan_serve_commands(r))


def test_the_cli_prints_it_in_text_and_json(capsys):
    assert main(["plan", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["serve_command"].startswith("vllm serve Qwen/Qwen2.5-7B-Instruct")
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert "Serve it (the scenario as given)" in out and d["serve_command"] in out


def test_a_config_json_without_a_hub_id_serves_the_checkpoint_variable(capsys):
    """A config.json carries no checkpoint unless its _name_or_path is a Hub id: Qwen3-4B's has none (the command
    named 'qwen3-4b', which `vllm serve` cannot load), Falcon-Mamba's is './', a path on the machine that wrote it;
    BLOOM's names bigscience/bloom-7b1, which it serves."""
    def command(path):
        assert main(["plan", "--model", path, "--gpu", "h100-sxm", "--tensor-parallel-size", "8", "--json"]) == 0
        return json.loads(capsys.readouterr().out)["serve_command"]

    for name in ("qwen3-4b", "falcon-mamba-7b"):
        cmd = command(f"tests/data/hf_configs/{name}/config.json")
        assert cmd.startswith("# CHECKPOINT={the checkpoint whose config.json this is (") and 'vllm serve "$CHECKPOINT"' in cmd
    assert command("tests/data/hf_configs/bloom-7b1/config.json").startswith("vllm serve bigscience/bloom-7b1 ")


def test_every_shipped_model_serves_by_its_hub_id(catalog):
    """The serve command names a shipped model by its hf_id: three specs carried their config's _name_or_path ('./',
    'llama_nemotron_super', 'Phi-4-mini-instruct'), which `vllm serve` cannot download."""
    from calc.serve_command import HUB_ID

    assert all(m.hf_id and HUB_ID.fullmatch(m.hf_id) for m in catalog.models.values())
    assert _cmd(catalog, model="falcon-mamba-7b", gpu="h100-sxm").startswith("vllm serve tiiuae/falcon-mamba-7b ")
