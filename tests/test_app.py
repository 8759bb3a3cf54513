"""The page's wiring with Streamlit's AppTest: runs clean, every field seeded from the URL, bad links warn."""

import base64
import json
import re
from pathlib import Path

import pytest
from conftest import field, page_tables
from streamlit.testing.v1 import AppTest

from calc.custom import encode_custom_model
from calc.scenario import Scenario
from ui.headline import FORMULAS
from ui.state import encode_pin
from ui.tabs import TABS

APP = str(Path(__file__).resolve().parent.parent / "app.py")

# a non-default value for every Scenario field, as URL text
NON_DEFAULT = {
    "model": "llama-3.1-8b", "gpu": "h100-sxm", "tensor_parallel_size": "2", "pipeline_parallel_size": "2", "data_parallel_size": "2",
    "dtype": "fp8", "kv_cache_dtype": "fp8", "gpu_memory_utilization": "0.85", "block_size": "32",
    "max_model_len": "16384", "max_num_seqs": "128", "disable_hybrid_kv_cache_manager": "true",
    "mamba_ssm_cache_dtype": "float32", "engine": "sglang", "engine_version": "0.5.6.post2", "max_num_batched_tokens": "4096", "enforce_eager": "true",
    "enable_expert_parallel": "true", "enable_prefix_caching": "true", "decode_context_parallel_size": "2",
    "speculative_method": "ngram", "num_speculative_tokens": "2", "draft_acceptance_rate": "0.6", "language_model_only": "true",
    "estimate_cudagraphs": "false", "kv_cache_memory_bytes": "20000000000", "weights_memory_bytes": "9000000000",
    "activation_memory_bytes": "1000000000", "non_torch_memory_bytes": "300000000", "cudagraph_memory_bytes": "400000000",
    "input_len": "2048", "output_len": "512", "concurrency": "32", "request_rate": "20", "mfu": "0.6", "mbu": "0.8",
    "queue_s": "0.05", "endpoint_type": "openai-chat", "frontend_overhead_s": "0.02", "measured_itl_s": "0.02", "measured_prefill_s": "0.1",
    "measured_itl_p99_s": "0.06", "measured_running_batch": "15.39", "kv_transfer_gb_per_s": "50", "slo_ttft_s": "1", "slo_tpot_s": "0.04",
    "conformance_quota": "0.95", "latency_sigma": "0.5", "sim_ttft_median_s": "0.3", "sim_tpot_median_s": "0.03",
    "sim_window_s": "20", "gpu_hour_price": "2.5", "currency": "EUR", "fanout": "10", "chain_calls": "5", "turns": "8", "tokens_per_turn": "300",
    "shared_prefix_len": "512", "document_len": "4096", "document_queries": "3", "host_link_gb_per_s": "25",
    "ssd_gb_per_s": "5", "network_gb_per_s": "25", "host_cache_gib": "32", "ssd_cache_gib": "512",
    "remote_cache_gib": "1024", "swap_overlap": "false", "memory_gib": "79", "memory_bandwidth_gb_per_s": "3000",
    "peak_tflop_per_s": "900", "scaleup_link_gb_per_s": "400", "num_hidden_layers": "30", "num_key_value_heads": "8",
    "head_dim": "128", "disaggregated": "true", "search_gpus": "h100-sxm,l40s", "search_tensor_parallel_size": "1,2",
    "search_pipeline_parallel_size": "1", "search_dtype": "auto,fp8", "search_kv_cache_dtype": "fp8",
    "search_max_num_seqs": "16,64", "search_max_num_batched_tokens": "2048,8192",
    "search_gpu_memory_utilization": "0.9,0.95", "search_disaggregated": "false", "search_max_gpus": "16",
    "search_budget_per_hour": "100",
}  # fmt: skip


def pin(data) -> str:
    """A `pin` parameter as the page encodes one (ui.state.encode_pin), from any data, valid or not."""
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def run(query: dict | None = None, tab: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if tab:
        at.session_state["tab"] = tab
    at.run()
    return at


def test_every_field_has_a_url_value_here():
    assert set(NON_DEFAULT) | {"custom_model"} == set(Scenario.model_fields)


def test_default_page_runs_and_shows_the_verdict():
    at = run()
    assert not at.exception
    assert "fits" in at.success[0].value
    labels = {m.label for m in at.metric}
    assert {"Available KV cache", "TTFT (estimate)", "TPOT (estimate)"} <= labels


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_renders(tab):
    at = run({"request_rate": "20", "gpu_hour_price": "2"}, tab=tab)
    assert not at.exception, at.exception


TOGETHER = NON_DEFAULT | {"data_parallel_size": "1", "decode_context_parallel_size": "1"}
"""Every non-default value at once, but data-parallel ranks with disaggregated serving, and decode context parallelism
of a model whose KV heads TP 2 does not repeat, which the plan refuses."""


def test_every_field_is_seeded_from_the_url():
    at = run(TOGETHER)
    assert not at.exception
    expected = Scenario.model_validate(TOGETHER)
    for name in TOGETHER:
        assert field(at, name) == getattr(expected, name), name
    assert not at.warning, [w.value for w in at.warning]
    at = run({"model": "deepseek-v2-lite", "data_parallel_size": NON_DEFAULT["data_parallel_size"]})
    assert field(at, "data_parallel_size") == 2 and not at.warning, [w.value for w in at.warning]
    assert any("DP\\=2" in md.value for md in at.markdown)  # markdown-escaped


def test_malformed_and_unknown_parameters_warn_instead_of_failing():
    at = run({"max_model_len": "abc", "concurrency": "-3", "gpu": "h900", "nonsense": "1", "mfu": "nan"})
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    for name in ("max\\_model\\_len", "concurrency", "gpu", "nonsense", "mfu"):
        assert name in text
    assert field(at, "max_model_len") == 8192 and field(at, "gpu") == "rtx-4090"


def test_a_custom_model_travels_in_the_link(catalog):
    spec = type(catalog.models["mistral-7b-v0.1"]).model_validate(catalog.models["mistral-7b-v0.1"].model_dump() | {"name": "My-Mistral"})
    at = run({"model": "custom", "custom_model": encode_custom_model(spec)})
    assert not at.exception
    assert any("My\\-Mistral" in md.value for md in at.markdown)


def test_a_broken_custom_model_warns():
    at = run({"model": "custom", "custom_model": "not-base64!!"})
    assert not at.exception and any("custom\\_model" in w.value or "custom_model" in w.value for w in at.warning)


def test_pinned_scenario_compares():
    at = run({"concurrency": "32", "pin": encode_pin(Scenario(concurrency=8))}, tab="Compare & export")
    assert not at.exception
    table = next(t for t in page_tables(at) if "A (pinned)" in t.columns)
    assert "TTFT (estimate)" in set(table["quantity"]), "the A/B table is shown, with human labels"


def test_log_panel_reconciles_and_calibrates():
    log = (Path(__file__).parent / "data/vllm_logs/vllm-10517-llama-3.1-8b-rtx3090-v0-20k.log").read_text()
    at = run({"gpu": "rtx-3090", "model": "llama-3.1-8b"}, tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(log)
    at.run()
    assert not at.exception and page_tables(at)
    table = next(t for t in page_tables(at) if "logged" in t.columns)
    assert "# GPU blocks" in {q.replace("\\", "") for q in table["quantity"]}
    next(b for b in at.button if b.key == "adopt_btn").click()
    at.run()
    assert not at.exception and field(at, "weights_memory_bytes") is not None


def test_a_log_of_another_model_is_not_offered_as_a_calibration():
    """LMCache#1739's Qwen3-14B log names no model (no config line): held against the page's Qwen2.5-7B, its 42,656
    logged tokens do not follow from its logged 6.51 GiB at this model's KV bytes per token, so adopting its
    overheads would not reproduce it: a warning, and no adopt button."""
    log = (Path(__file__).parent / "data/vllm_logs/lmcache-1739-qwen3-14b.log").read_text()
    at = run({"gpu": "h100-sxm"}, tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(log)
    at.run()
    assert not at.exception and not any(b.key == "adopt_btn" for b in at.button)
    assert any("probably of another model" in w.value for w in at.warning)


def test_adopting_a_logs_overheads_adopts_its_tp_too_and_reproduces_its_blocks():
    """vllm#17469: Qwen3-30B-A3B on four A10s (TP 4 from the worker ranks), 12,424 blocks. Adopting only the
    overheads planned the 4-GPU weights on one A10 ("fits" with 3,106 blocks); with the log's own settings the page
    now holds the logged 12,424 blocks at TP 4."""
    log = (Path(__file__).parent / "data/vllm_logs/vllm-17469-qwen3-30b-a3b-4xa10.log").read_text()
    at = run({"gpu": "a10", "model": "qwen3-30b-a3b"}, tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(log)
    at.run()
    next(b for b in at.button if b.key == "adopt_btn").click()
    at.run()
    assert not at.exception and field(at, "tensor_parallel_size") == 4
    assert next(m for m in at.metric if m.label == "KV cache (tokens)").value == f"{12_424 * 16:,}"


def test_a_log_of_another_gpu_is_reconciled_on_its_own_gpu():
    """Two H200s' Qwen3-Next log pasted on a page of an H100: it was reconciled as an H100 with 139.81 GiB ('agrees')
    and adopting wrote gpu=h100-sxm&memory_gib=139.81 into the link. The log's device wins, as in `calc reconcile`:
    a note says so and adopting sets the GPU too. A log whose GPU is the page's says nothing of it."""
    log = (Path(__file__).parent / "data/vllm_logs/h200x2-qwen3-next-80b-tp2-defaults.log").read_text()
    at = run({"gpu": "h100-sxm", "model": "qwen3-8b"}, tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(log)
    at.run()
    assert not at.exception and any("The log ran on NVIDIA H200" in i.value for i in at.info)
    next(b for b in at.button if b.key == "adopt_btn").click()
    at.run()
    assert not at.exception and field(at, "gpu") == "h200"
    same = run({"gpu": "h200", "model": "qwen3-8b"}, tab="Check a vLLM log")
    same.text_area(key="vllm_log_text").input(log)
    same.run()
    assert not any("The log ran on" in i.value for i in same.info)


def test_log_panel_names_an_impossible_logged_value_instead_of_pydantics_dump():
    # 'Model loading took 1000000.0 GiB' showed the raw ValidationError (weights_memory_bytes less_than_equal …)
    text = (Path(__file__).parent / "data/vllm_logs/vllm-17469-qwen3-30b-a3b-4xa10.log").read_text()
    at = run({"gpu": "a10", "model": "qwen3-30b-a3b"}, tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input(re.sub(r"Model loading took [0-9.]+ GiB", "Model loading took 1000000.0 GiB", text))
    at.run()
    assert not at.exception
    shown = [x.value.replace("\\", "") for x in (*at.caption, *at.warning, *at.error)]
    assert not any("ValidationError" in x or "less_than_equal" in x for x in shown)
    assert any("ignored the log's 'Model loading took' (1,000,000.00 GiB): weights_memory_bytes allows" in x for x in shown)

def test_log_panel_rejects_text_that_is_not_a_log():
    at = run(tab="Check a vLLM log")
    at.text_area(key="vllm_log_text").input("hello <b>world</b>\nnothing to see")
    at.run()
    assert not at.exception and any("no vLLM startup lines" in w.value.replace("\\", "") for w in at.warning)


def test_html_and_markdown_in_every_parameter_stay_text():
    evil = "<img src=x onerror=alert(1)>![img](http://example.invalid/x.png)[link](javascript:alert(1))"
    at = run({name: evil for name in Scenario.model_fields} | {"pin": evil})
    assert not at.exception
    shown = [w.value for w in at.warning]
    said = at.session_state["_link_warnings"]  # the page lists the first few (ui.state.link_warnings) and counts the rest
    assert len(said) >= len(Scenario.model_fields) - 1  # custom_model alone is free text, used only with 'custom'
    unescaped = re.compile(r"(?<!\\)(<img|<script|!\[|\]\()")
    for text in shown + [m.value for m in at.markdown]:
        assert not unescaped.search(text), text


def test_an_uploaded_config_json_is_planned_and_travels_in_the_link():
    import json

    cfg = {"model_type": "llama", "num_hidden_layers": 20, "hidden_size": 2048, "intermediate_size": 5632,
           "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 8192,
           "torch_dtype": "bfloat16"}  # fmt: skip
    at = run()
    at.file_uploader(key="upload").upload("my-llama.json", json.dumps(cfg).encode(), "application/json").run()
    assert not at.exception
    assert field(at, "model") == "custom" and field(at, "custom_model")
    assert at.query_params["model"] == "custom" and at.query_params["custom_model"] == field(at, "custom_model")
    assert any("my\\-llama" in md.value for md in at.markdown)
    # 2 (K,V) × 20 layers × 4 heads × 128 × 2 B = 40,960 B per token
    at.session_state[FORMULAS] = True  # open "Show the formulas"
    at.run()
    assert "40,960" in next(c for c in at.code if "KV bytes per token" in c.value or "40,960" in c.value).value


def test_a_bad_upload_warns_and_keeps_the_model():
    at = run()
    at.file_uploader(key="upload").upload("config.json", b"{not json", "application/json").run()
    assert not at.exception and field(at, "model") == "qwen2.5-7b-instruct"
    assert any("not valid JSON" in c.value for c in at.code)


def test_the_link_carries_only_what_differs_from_the_defaults():
    from boundary.urlstate import query_string

    at = run({"concurrency": "32"})
    s = Scenario.model_validate({k: field(at, k) for k in Scenario.model_fields})
    assert query_string(s) == "concurrency=32"


def test_an_upload_the_plan_refuses_at_this_tp_shows_that_model_at_the_default_tp():
    """GLM-4.7-Flash's 20 attention heads do not divide over TP 8: the page shows the uploaded model at TP 1 (what its
    link opens), not the model before the upload under a link that names the new one."""
    from pathlib import Path

    at = run({"gpu": "h100-sxm", "tensor_parallel_size": "8", "request_rate": "5"})
    config = (Path(__file__).parent / "data/hf_configs/glm-4.7-flash/config.json").read_bytes()
    at.file_uploader(key="upload").upload("config.json", config, "application/json").run()
    assert not at.exception
    assert any("tensor\\_parallel\\_size at its default \\(1\\)" in w.value for w in at.warning), [w.value for w in at.warning]
    assert any(m.value.startswith("#### glm4\\_moe\\_lite \\(") and "B parameters\\) on NVIDIA H100 SXM 80GB \\(TP\\=1"
               in m.value for m in at.markdown)  # named by model_type and size: its config names no checkpoint


def test_a_fresh_link_that_cannot_be_planned_keeps_its_model_and_gpu():
    """A shared link the plan refuses (data-parallel ranks with disaggregated serving) shows the link's own scenario
    with the refused field at its default, not the page's default model on its default GPU."""
    at = run({"model": "deepseek-r1", "gpu": "h200", "data_parallel_size": "8", "disaggregated": "true"})
    assert not at.exception
    assert any("data\\_parallel\\_size at its default \\(1\\)" in w.value for w in at.warning), [w.value for w in at.warning]
    assert any("DeepSeek\\-R1 on NVIDIA H200" in md.value for md in at.markdown)


def test_a_modelopt_checkpoint_uploaded_with_its_hf_quant_config_is_planned_quantized():
    """nvidia/Llama-3.1-70B-Instruct-FP8 keeps its quantization in hf_quant_config.json (FP8 weights, FP8 KV scales):
    its box appears once a config.json is uploaded; with it, the page plans fp8 weights and vLLM 0.14+'s fp8 KV cache
    (2 × 80 layers × 8 KV heads × 128 × 1 B = 163,840 B a token); the config alone is planned at bf16."""
    from pathlib import Path

    folder = Path(__file__).parent / "data/hf_configs/llama-3.1-70b-instruct-fp8-modelopt"
    config, quant = (folder / "config.json").read_bytes(), (folder / "hf_quant_config.json").read_bytes()
    at = run({"gpu": "h100-sxm", "concurrency": "8"})
    assert [u.key for u in at.file_uploader] == ["upload"]  # no quant box before a config
    at.file_uploader(key="upload").set_value(("config.json", config, "application/json")).run()
    heads = [m.value for m in at.markdown if m.value.startswith("####")]
    assert any("weights bf16" in h and "KV auto" in h for h in heads), heads
    box = next(u for u in at.file_uploader if u.key.startswith("upload_quant_"))
    box.set_value(("hf_quant_config.json", quant, "application/json")).run()
    assert not at.exception and field(at, "model") == "custom"
    heads = [m.value for m in at.markdown if m.value.startswith("####")]
    assert any("weights fp8 \\(modelopt\\)" in h and "KV fp8" in h for h in heads), heads
    assert any("kv\\_cache\\_dtype auto is FP8 for this checkpoint" in i.value for i in at.info)


def test_a_new_config_opens_an_empty_quant_box():
    """The hf_quant_config.json box belongs to the config.json beside it: uploading another config opens a new, empty
    box, so one checkpoint's ModelOpt file is not read with another's config."""
    import json

    a = {"model_type": "llama", "num_hidden_layers": 20, "hidden_size": 2048, "intermediate_size": 5632,
         "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 8192,
         "torch_dtype": "bfloat16"}  # fmt: skip
    quant = json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}).encode()
    at = run()
    at.file_uploader(key="upload").set_value(("a.json", json.dumps(a).encode(), "application/json")).run()
    box = next(u for u in at.file_uploader if u.key.startswith("upload_quant_"))
    box.set_value(("hf_quant_config.json", quant, "application/json")).run()
    assert any("weights fp8" in m.value for m in at.markdown if m.value.startswith("####"))
    at.file_uploader(key="upload").set_value(("b.json", json.dumps(a | {"num_hidden_layers": 10}).encode(),
                                              "application/json")).run()  # fmt: skip
    assert not at.exception
    heads = [m.value for m in at.markdown if m.value.startswith("####")]
    assert any(h.startswith("#### b on") and "weights bf16" in h for h in heads), heads
