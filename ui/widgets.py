"""Sidebar inputs: one widget per Scenario field, keyed and URL-bound by the field's own name.

Widget bounds come from the Scenario's constraints, so a value the URL may carry is a value the widget accepts.
"""

from __future__ import annotations

from typing import get_args

import streamlit as st

from calc.scenario import Scenario, field_bounds

F = Scenario.model_fields

# (field, label); kind is inferred from the type unless listed in SLIDERS / SELECTS
GROUPS: dict[str, list[tuple[str, str]]] = {
    "Workload": [
        ("input_len", "Prompt length (tokens)"),
        ("output_len", "Output length (tokens)"),
        ("concurrency", "Concurrent requests"),
        ("request_rate", "Request rate to serve (req/s)"),
    ],
    "Engine (vLLM flags)": [
        ("engine", "Serving engine"),
        ("gpu_memory_utilization", "gpu_memory_utilization"),
        ("max_model_len", "max_model_len (tokens)"),
        ("max_num_seqs", "max_num_seqs"),
        ("max_num_batched_tokens", "max_num_batched_tokens"),
        ("block_size", "block_size (tokens)"),
        ("enforce_eager", "enforce_eager (no CUDA graphs)"),
        ("disable_hybrid_kv_cache_manager", "disable_hybrid_kv_cache_manager"),
        ("mamba_ssm_cache_dtype", "mamba_ssm_cache_dtype (hybrid models)"),
        ("estimate_cudagraphs", "subtract CUDA-graph estimate (vLLM ≥ 0.20)"),
    ],
    "SLOs and cost": [
        ("slo_ttft_s", "TTFT SLO (s)"),
        ("slo_tpot_s", "TPOT SLO (s)"),
        ("conformance_quota", "Conformance quota"),
        ("latency_sigma", "Latency spread σ (log-normal)"),
        ("gpu_hour_price", "Price per GPU-hour"),
        ("currency", "Currency of that price"),
        ("fanout", "Fan-out (parallel calls per answer)"),
        ("chain_calls", "Sequential calls per answer"),
        ("sim_ttft_median_s", "Simulation: TTFT median (s)"),
        ("sim_tpot_median_s", "Simulation: TPOT median (s)"),
        ("sim_window_s", "Simulation: window (s)"),
    ],
    "Efficiency and measurements": [
        ("mfu", "MFU override (GEMMs)"),
        ("mbu", "MBU override (memory)"),
        ("queue_s", "Queue time (s)"),
        ("frontend_overhead_s", "Front-end overhead (s)"),
        ("measured_itl_s", "Measured ITL p50 (s)"),
        ("measured_itl_p99_s", "Measured ITL p99 (s)"),
        ("measured_prefill_s", "Measured prefill (s)"),
        ("kv_transfer_gb_per_s", "Prefill→decode link (GB/s)"),
        ("disaggregated", "Disaggregated prefill / decode instances"),
    ],
    "Beyond the GPU": [
        ("turns", "Conversation turns"),
        ("tokens_per_turn", "Tokens per turn"),
        ("shared_prefix_len", "Shared system prompt (tokens)"),
        ("document_len", "Document length (tokens)"),
        ("document_queries", "Questions per document"),
        ("swap_overlap", "Swap-out overlaps compute"),
        ("host_link_gb_per_s", "Host link (GB/s per direction)"),
        ("ssd_gb_per_s", "NVMe read (GB/s)"),
        ("network_gb_per_s", "Network (GB/s)"),
        ("host_cache_gib", "Host DRAM tier (GiB/GPU)"),
        ("ssd_cache_gib", "SSD tier (GiB/GPU)"),
        ("remote_cache_gib", "Remote tier (GiB/GPU)"),
    ],
    "Memory overrides (from a vLLM log)": [
        ("kv_cache_memory_bytes", "kv_cache_memory_bytes (B)"),
        ("weights_memory_bytes", "Weights per GPU (B)"),
        ("activation_memory_bytes", "Activation peak (B)"),
        ("non_torch_memory_bytes", "Non-torch memory (B)"),
        ("cudagraph_memory_bytes", "CUDA-graph memory (B)"),
    ],
}
SLIDERS = {"gpu_memory_utilization": 0.01}


def _is_int(name: str) -> bool:
    ann = F[name].annotation
    return ann is int or int in [getattr(a, "__origin__", a) for a in get_args(ann)]


def widget(name: str, label: str, *, container=st, placeholder: str | None = None) -> None:
    """The widget for one field; its value lands in st.session_state[name]."""
    info, default = F[name], F[name].default
    help_ = (info.description or "").replace("\n", " ") or None
    common = dict(key=name, help=help_, bind="query-params")
    if info.annotation is bool:
        container.toggle(label, value=default, **common)
        return
    choices = get_args(info.annotation)
    if choices and all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in choices) and \
            getattr(info.annotation, "__origin__", None) is not None and str(info.annotation).startswith("typing.Literal"):  # fmt: skip
        container.selectbox(label, list(choices), index=list(choices).index(default), **common)
        return
    lo, hi = field_bounds(name)
    if name in SLIDERS:
        container.slider(label, min_value=float(lo), max_value=float(hi), value=default, step=SLIDERS[name], **common)
        return
    if _is_int(name):
        container.number_input(label, min_value=int(lo) if lo is not None else None,
                               max_value=int(hi) if hi is not None else None, value=default, step=1,
                               placeholder=placeholder, **common)  # fmt: skip
    else:
        container.number_input(label, min_value=float(lo) if lo is not None else None,
                               max_value=float(hi) if hi is not None else None, value=default, format="%g",
                               placeholder=placeholder or ("unset" if default is None else None),
                               **common)  # fmt: skip


def _index(options: list, default) -> int:
    """The default's position; the first option when its spec file was skipped as broken."""
    return options.index(default) if default in options else 0


def sidebar_specs(catalog) -> None:
    """Model and GPU first: the rest of the sidebar shows their spec values."""
    sb = st.sidebar
    models = [*catalog.models, "custom"]
    # option strings are what the URL carries, so the options are the spec ids themselves
    sb.selectbox("Model", models, index=_index(models, F["model"].default), key="model", bind="query-params",
                 help="'custom' = the config.json uploaded below (it travels in the link as custom_model)")  # fmt: skip
    sb.file_uploader("…or upload a Hugging Face config.json", type=["json"], key="upload", on_change=_on_upload,
                     max_upload_size=1)  # fmt: skip
    sb.selectbox("GPU", list(catalog.gpus), index=_index(list(catalog.gpus), F["gpu"].default), key="gpu",
                 bind="query-params")  # fmt: skip
    if st.session_state.get("upload_error"):
        sb.warning("The uploaded config.json was not used:")
        sb.code(st.session_state["upload_error"], language=None, wrap_lines=True)


def sidebar_rest(model_spec, gpu_spec) -> None:
    sb = st.sidebar
    c1, c2 = sb.columns(2)
    widget("tensor_parallel_size", "TP size", container=c1)
    widget("pipeline_parallel_size", "PP size", container=c2)
    c1, c2 = sb.columns(2)
    widget("dtype", "Weights", container=c1)
    widget("kv_cache_dtype", "KV cache", container=c2)
    for group, fields in GROUPS.items():
        with sb.expander(group, expanded=group == "Workload"):
            for name, label in fields:
                widget(name, label)
    for w in gpu_spec.sparse_warnings if gpu_spec else ():
        sb.warning(f"GPU spec: {w}", icon=":material/warning:")
    with sb.expander("Spec overrides (hypothetical parts)"):
        st.caption("Empty = the spec's value, shown as the placeholder.")
        g, m = gpu_spec, model_spec
        for name, label, spec_value in (
            ("memory_gib", "GPU memory (GiB)", g.memory_gib if g else None),
            ("memory_bandwidth_gb_per_s", "Memory bandwidth (GB/s)", g.memory_bandwidth_gb_per_s if g else None),
            ("peak_tflop_per_s", "Dense peak (TFLOP/s)", g.peak_16bit_tflop_per_s if g else None),
            ("scaleup_link_gb_per_s", "Scale-up link (GB/s)", g.scaleup_link_gb_per_s if g else None),
            ("num_hidden_layers", "Layers", m.num_hidden_layers if m else None),
            ("num_key_value_heads", "KV heads", m.kv_heads if m else None),
            ("head_dim", "head_dim", m.kv_head_dim if m else None),
        ):
            widget(name, label, placeholder=f"spec: {spec_value:g}" if spec_value is not None else "spec: none")
        st.text_input("custom_model (encoded config)", key="custom_model", bind="query-params",
                      help="Set by uploading a config.json; travels in the link.")  # fmt: skip


def _on_upload() -> None:
    from calc.custom import encode_custom_model
    from calc.errors import InputError
    from calc.loader import parse_config_json

    f = st.session_state.get("upload")
    if f is None:
        return
    try:
        spec = parse_config_json(f.getvalue(), name=f.name.removesuffix(".json"))
    except InputError as e:
        st.session_state["upload_error"] = str(e)
        return
    st.session_state["custom_model"] = encode_custom_model(spec)
    st.session_state["model"] = "custom"
    st.session_state.pop("upload_error", None)


def current_values() -> dict:
    return {k: st.session_state[k] for k in F if k in st.session_state}
