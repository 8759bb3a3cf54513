"""vLLM 0.14–0.15 checked a pipeline-parallel start against the whole model's KV for one request, not the stage's:
GLM-4.7-FP8 at PP 8 on A100s (vllm#32105) failed with "71.16 GiB KV cache is needed, which is larger than the
available KV cache memory (28.57 GiB) … the estimated maximum model length is 81392"
(tests/data/vllm_logs/vllm-32105-glm-4.7-fp8-pp8-a100-fail.log). GLM-4.7: 92 layers × 2 × 8 KV heads × 128 × 2 B =
376,832 B a token; 202,752 tokens × 376,832 B = 71.156 GiB; 28.57 GiB / 376,832 B → 81,392–81,408 tokens within the
log's rounding."""

from __future__ import annotations

from pathlib import Path

import pytest

from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.custom import encode_custom_model
from calc.evaluate import evaluate
from calc.loader import load_model_file
from calc.scenario import Scenario

DATA = Path(__file__).parent / "data"
GLM = encode_custom_model(load_model_file(DATA / "hf_configs" / "glm-4.7-fp8" / "config.json"))
BASE = dict(model="custom", custom_model=GLM, gpu="a100-80gb-sxm", pipeline_parallel_size=8, max_model_len=202_752,
            dtype="fp8", kv_cache_memory_bytes=int(28.57 * 2**30), max_num_seqs=128)  # fmt: skip


@pytest.mark.parametrize("version, starts", [("0.13.0", True), ("0.14.0", False), ("0.15.0", False), ("0.16.0", True)])
def test_the_whole_model_check_refuses_in_0_14_and_0_15_only(catalog, version, starts):
    r = evaluate(Scenario(**BASE, engine_version=version), catalog)
    assert round(r.memory.whole_model_request_bytes / 2**30, 2) == round(202_752 * 92 * 2 * 8 * 128 * 2 / 2**30, 2) == 71.16
    assert r.fit.fits == starts
    assert any("vllm#32105" in reason for reason in r.fit.reasons) == (not starts)


def test_the_failed_start_reconciles_against_the_whole_model(catalog):
    log = parse_log((DATA / "vllm_logs" / "vllm-32105-glm-4.7-fp8-pp8-a100-fail.log").read_text())
    flags = {k: v for k, v in BASE.items() if k not in ("kv_cache_memory_bytes", "max_num_seqs")} | {"engine_version": "0.15.0"}
    rec = reconcile(log, catalog, flags)
    rows = {row.key: row for row in rec.rows}
    assert rows["kv_needed_bytes"].matches and rows["estimated_max_model_len"].matches
    assert any("vllm#32105" in n for n in rec.notes)
