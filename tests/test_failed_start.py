"""A start that failed for memory reconciles into "this model does not fit" with the fixes, on the CLI and the page.

FAILED is synthetic, in vLLM 0.10.2's V1 format: Qwen2.5-7B (14.25 GiB of weights) at gpu_memory_utilization 0.6 on an
RTX 4090 (23.99 GiB): 0.6 · 23.99 = 14.39 GiB requested leaves nothing after activations, so vLLM logs a negative pool
and raises "No available memory for the cache blocks".
"""

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from boundary.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "vllm_logs"
FAILED = """\
(APIServer pid=4100) INFO 10-03 16:22:05 [cli_args.py:261] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', \
'max_model_len': 32768, 'gpu_memory_utilization': 0.6}
(EngineCore_DP0 pid=4242) INFO 10-03 16:22:10 [core.py:72] Initializing a V1 LLM engine (v0.10.2) with config: \
model='Qwen/Qwen2.5-7B-Instruct', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, kv_cache_dtype=auto
(EngineCore_DP0 pid=4242) INFO 10-03 16:22:15 [gpu_model_runner.py:2007] Model loading took 14.2487 GiB and 3.1 seconds
(EngineCore_DP0 pid=4242) INFO 10-03 16:22:17 [gpu_worker.py:298] Available KV cache memory: -1.38 GiB
(EngineCore_DP0 pid=4242) ERROR 10-03 16:22:17 [core.py:700] ValueError: No available memory for the cache blocks. \
Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def reconcile_cli(capsys, tmp_path, *args) -> tuple[int, str, str]:
    path = tmp_path / "failed.log"
    path.write_text(FAILED)
    code = main(["reconcile", str(path), "--gpu", "rtx-4090", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_says_it_does_not_fit_and_what_to_change(capsys, tmp_path):
    code, out, err = reconcile_cli(capsys, tmp_path)
    assert code == 0 and not err
    assert "This model does not fit: vLLM logged -1.38 GiB available for the KV cache" in out
    # one 32,768-token request needs 32,768 · 56 KiB = 1.75 GiB; the pool is 1.38 GiB short of zero:
    # 0.6 + (1.75 + 1.38) / 23.99 ≈ 0.73 → a little over
    fixes = out.split("To make it fit:")[1].split("\n\n")[0]
    assert "gpu_memory_utilization=0.7" in fixes and "(now 0.6)" in fixes
    assert "tensor_parallel_size=2" in fixes and "(fits)" in fixes
    assert "max_model_len" in fixes and "fp8 KV cache cannot help alone" in fixes


def test_cli_json_carries_the_failure_and_adopts_no_negative_pool(capsys, tmp_path):
    code, out, _ = reconcile_cli(capsys, tmp_path, "--json")
    d = json.loads(out)
    assert code == 0 and d["does_not_fit"].startswith("this model does not fit: vLLM logged -1.38 GiB")
    assert any(f.startswith("gpu_memory_utilization=") for f in d["fixes"])
    assert "kv_cache_memory_bytes" not in d["calibration"] and d["calibration"]["weights_memory_bytes"] > 0


def test_a_pool_too_small_for_one_request_names_the_longest_that_fits(capsys):
    """vllm-10517 29k: V0 "max seq len (29000) is larger than … KV cache (23648)" — vLLM's own figure is the fix."""
    assert main(["reconcile", str(LOGS / "vllm-10517-llama-3.1-8b-rtx3090-v0-29k.log"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["does_not_fit"].startswith("this model does not fit: vLLM logged 2.89 GiB")
    assert "max_model_len=23,648 or less (vLLM's own figure)" in d["fixes"]


def test_a_successful_start_has_no_failure(capsys):
    assert main(["reconcile", str(LOGS / "vllm-10517-llama-3.1-8b-rtx3090-v0-20k.log"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["does_not_fit"] is None and d["fixes"] == []


def test_page_log_tab_shows_the_failure_and_fixes():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["tab"] = "Check a vLLM log"
    at.run()
    at.text_area(key="vllm_log_text").input(FAILED)
    at.run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("This model does not fit: vLLM logged -1.38 GiB available" in e for e in errors), errors
    fixes = next(m.value for m in at.markdown if "To make it fit" in m.value).replace("\\", "")
    assert "gpu_memory_utilization=0.7" in fixes and "tensor_parallel_size=2" in fixes
