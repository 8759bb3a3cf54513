"""Sidebar inputs: one widget per Scenario field, keyed by the field's own name and bound to the URL parameter of
that name; the groups in HELD_GROUPS are drawn only while open, their fields held by the session (ui/held.py).

Widget bounds come from the Scenario's constraints, so a value the URL may carry is a value the widget accepts.
"""

from __future__ import annotations

import functools
from typing import get_args

import streamlit as st

from boundary import fmt
from calc.scenario import SEARCH_LISTS, Scenario, field_bounds
from ui import held, state_view
from ui.upload import on_upload, quant_key

F = Scenario.model_fields

# (field, label); kind is inferred from the type unless listed in SLIDERS / SELECTS
GROUPS: dict[str, list[tuple[str, str]]] = {
    "Workload": [
        ("input_len", "Prompt length (tokens)"),
        ("output_len", "Output length (tokens)"),
        ("concurrency", "Concurrent requests"),
        ("request_rate", "Request rate to serve (req/s)"),
    ],
    "Engine (server flags)": [
        ("engine", "Serving engine"),
        ("engine_version", "Engine version (e.g. 0.11.0, or latest)"),
        ("gpu_memory_utilization", "gpu_memory_utilization"),
        ("max_model_len", "max_model_len (tokens)"),
        ("max_num_seqs", "max_num_seqs"),
        ("max_num_batched_tokens", "max_num_batched_tokens"),
        ("block_size", "block_size (tokens)"),
        ("enforce_eager", "enforce_eager (no CUDA graphs)"),
        ("enable_expert_parallel", "enable_expert_parallel (MoE: whole experts per GPU)"),
        ("decode_context_parallel_size", "decode_context_parallel_size (DCP: tokens split over TP GPUs)"),
        ("disable_hybrid_kv_cache_manager", "disable_hybrid_kv_cache_manager"),
        ("mamba_ssm_cache_dtype", "mamba_ssm_cache_dtype (hybrid models)"),
        ("enable_prefix_caching", "enable_prefix_caching (hybrid models: 2 state blocks a request, + k drafting)"),
        ("language_model_only", "language_model_only (multimodal models served for text: no vision tower)"),
        ("speculative_method", "speculative decoding (mtp: the checkpoint's MTP layers; eagle / eagle3: an EAGLE head)"),
        ("num_speculative_tokens", "num_speculative_tokens (draft tokens a step)"),
        ("draft_acceptance_rate", "draft_acceptance_rate (vLLM's 'Avg Draft acceptance rate'; blank: latency without speculation)"),
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
        ("endpoint_type", "API endpoint the clients call"),
        ("frontend_overhead_s", "Front-end overhead (s)"),
        ("measured_itl_s", "Measured ITL p50 (s)"),
        ("measured_itl_p99_s", "Measured ITL p99 (s)"),
        ("measured_running_batch", "Measured running batch (avg, may be fractional)"),
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
TEXT = ("engine_version",)
"""Fields typed as text (a version as the engine prints it)."""
LAZY = ("Engine (server flags)", "SLOs and cost", "Efficiency and measurements", "Beyond the GPU",
        "Memory overrides (from a vLLM log)")  # fmt: skip
"""Groups drawn only while open (ui/held.py): their fields are held by the session and put in the link by hand."""
SPEC_OVERRIDES = "Spec overrides (hypothetical parts)"
SEARCH_SPACE = "Find a deployment: search space"
HELD_GROUPS = {
    **held.fields(GROUPS, LAZY),
    SPEC_OVERRIDES: ("memory_gib", "memory_bandwidth_gb_per_s", "peak_tflop_per_s", "scaleup_link_gb_per_s",
                     "num_hidden_layers", "num_key_value_heads", "head_dim", "model", "gpu", "custom_model"),
    SEARCH_SPACE: (*SEARCH_LISTS, "search_disaggregated", "search_max_gpus", "search_budget_per_hour"),
}  # fmt: skip
HELD = frozenset(name for names in HELD_GROUPS.values() for name in names)

_TOKENS = [128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
           65536, 98304, 131072]  # fmt: skip
PAIRED: dict[str, tuple[list, float]] = {
    # field: (log-like slider grid, number-box step); None in a grid is "unset" / "the spec's value"
    "input_len": (_TOKENS, 256),
    "output_len": ([16, 32, 64, 96, *_TOKENS], 64),
    "concurrency": ([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024], 1),
    "request_rate": ([None, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0, 200.0, 500.0, 1000.0], 1.0),
    "memory_gib": ([None, 8.0, 12.0, 16.0, 24.0, 32.0, 40.0, 48.0, 64.0, 80.0, 96.0, 128.0, 141.0, 192.0, 256.0, 288.0], 8.0),
    "memory_bandwidth_gb_per_s": ([None, 300.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0,
                                   8000.0], 100.0),
    "peak_tflop_per_s": ([None, 50.0, 100.0, 150.0, 200.0, 300.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 3000.0,
                          5000.0], 50.0),
}  # fmt: skip
"""Inputs people sweep: a slider with log-like steps and a number box beside it for exact values. The box owns the
URL field (only one widget may); the slider follows it and writes to it through a session-state callback."""


def _is_int(name: str) -> bool:
    ann = F[name].annotation
    return ann is int or int in [getattr(a, "__origin__", a) for a in get_args(ann)]


@functools.cache
def _kind(name: str) -> tuple[str, dict]:
    """(kind, keyword arguments) of a field's widget, from its type and constraints: once per process, since a
    field's widget is drawn on every rerun its group is open."""
    info, default = F[name], F[name].default
    common = dict(key=name, help=(info.description or "").replace("\n", " ") or None)  # the value: _source()
    if info.annotation is bool:
        return "toggle", common
    if name in TEXT:
        return "text", common
    choices = get_args(info.annotation)
    if choices and all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in choices) and \
            getattr(info.annotation, "__origin__", None) is not None and str(info.annotation).startswith("typing.Literal"):  # fmt: skip
        return "selectbox", dict(options=list(choices), **common)
    if name in PAIRED:
        return "paired", {}
    lo, hi = field_bounds(name)
    if name in SLIDERS:
        return "slider", dict(min_value=float(lo), max_value=float(hi), step=SLIDERS[name], **common)
    if _is_int(name):
        return "number_input", dict(min_value=int(lo) if lo is not None else None,
                                    max_value=int(hi) if hi is not None else None, step=1, **common)  # fmt: skip
    return "number_input", dict(min_value=float(lo) if lo is not None else None,
                                max_value=float(hi) if hi is not None else None, format="%g",
                                placeholder="unset" if default is None else None, **common)  # fmt: skip


def _source(name: str) -> dict:
    """Where a field's input takes its value from: the URL parameter it is bound to, or, in a lazy group, the value
    the session holds (ui/held.py; Streamlit forgot the input while its group was closed, and once drawn the input
    keeps its own state, so the default is passed then, as for a bound input)."""
    default = F[name].default
    if name not in HELD:
        return {"value": default, "bind": "query-params"}
    return {"value": held.value(name) if name not in st.session_state else default}


def widget(name: str, label: str, *, container=st, placeholder: str | None = None) -> None:
    """The widget for one field; its value lands in st.session_state[name]."""
    kind, kwargs = _kind(name)
    if kind == "paired":
        return paired(name, label, container=container, placeholder=placeholder)
    if kind == "text":
        return text_input(name, label, container=container, help=kwargs["help"])
    src = _source(name)
    if kind == "selectbox":
        src["index"] = kwargs["options"].index(src.pop("value"))
    if kind == "number_input":
        src["placeholder"] = placeholder or kwargs.get("placeholder")
    getattr(container, kind)(label, **{**kwargs, **src})


def text_input(name: str, label: str, *, container=st, help: str | None = None) -> None:
    """A text box for one field, bound to the URL or held like the other inputs (_source)."""
    container.text_input(label, key=name, help=help, **_source(name))


def lazy_expander(label: str, key: str, *, parent=st):
    """An expander whose content is drawn only while it is open (opening or closing it reruns the page): the
    expander, or None while it is closed. Every element drawn is a message to the browser on every rerun."""
    box = parent.expander(label, key=key, on_change="rerun")
    return box if box.open else None


def lazy_group(label: str):
    """A lazy sidebar group (ui/held.py): its expander, or None while it is closed."""
    return lazy_expander(label, held.open_key(label), parent=st.sidebar)


def _slider_label(v, unset: str) -> str:
    if v is None:
        return unset
    if isinstance(v, int) and v >= 1024 and v % 1024 == 0:
        return f"{v // 1024}k"
    if isinstance(v, int):
        return f"{v:,}"  # 1,000,000, not 1e+06
    text = fmt.sig(v, 4)  # as the number box beside it shows it: 40, not 40.00
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def _follow(name: str) -> None:
    """The slider moved: its value becomes the field's (the number box owns the URL key)."""
    v = st.session_state[f"{name}__slider"]
    st.session_state[name] = v if v is None or _is_int(name) else float(v)


def paired(name: str, label: str, *, container=st, placeholder: str | None = None) -> None:
    """A log-step slider and a number box for one field; the box owns it (its URL parameter or its held value)."""
    info = F[name]
    lo, hi = field_bounds(name)
    grid, step = PAIRED[name]
    is_int = _is_int(name)
    unset = placeholder or "unset"
    container.caption(label, help=(info.description or "").replace("\n", " ") or None)
    left, right = container.columns([3, 2], vertical_alignment="center")
    own = _source(name)  # the owner of the field first: its value sets the slider's
    with right:
        if is_int:
            value = st.number_input(label, min_value=int(lo), max_value=int(hi) if hi is not None else None,
                                    step=int(step), key=name, label_visibility="collapsed", **own)  # fmt: skip
        else:
            value = st.number_input(label, min_value=float(lo), max_value=float(hi) if hi is not None else None,
                                    step=float(step), format="%g", key=name, placeholder=unset,
                                    label_visibility="collapsed", **own)  # fmt: skip
    options = sorted({*grid, value} - {None}) if value is not None or None not in grid else sorted(set(grid) - {None})
    if None in grid:
        options = [None, *options]
    st.session_state[f"{name}__slider"] = value
    with left:
        st.select_slider(label, options=options, key=f"{name}__slider", on_change=_follow, args=(name,),
                         format_func=lambda v: _slider_label(v, unset), label_visibility="collapsed")  # fmt: skip


def _index(options: list, default) -> int:
    """The default's position; the first option when its spec file was skipped as broken."""
    return options.index(default) if default in options else 0


FAMILIES = {"qwen": "Qwen", "llama4": "Llama", "llama": "Llama", "gemma": "Gemma", "deepseek": "DeepSeek",
            "kimi": "Kimi", "mistral": "Mistral", "ministral": "Mistral", "mixtral": "Mistral", "phi": "Phi",
            "gpt_oss": "gpt-oss", "nemotron": "Nemotron", "falcon": "Falcon", "jamba": "Jamba", "glm": "GLM",
            "minimax": "MiniMax", "olmo": "OLMo", "opt": "OPT", "starcoder": "StarCoder", "internlm": "InternLM",
            "baichuan": "Baichuan", "exaone": "EXAONE", "lfm": "LFM", "cohere": "Cohere (Aya)"}  # fmt: skip
VENDORS = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "google": "Google"}


def family(model_type: str) -> str:
    return next((v for k, v in FAMILIES.items() if model_type.startswith(k)), "Other")


def model_options(catalog, summaries: dict) -> tuple[list[str], dict[str, str]]:
    """Spec ids grouped by family, smallest first within each; and the label each shows (family, name, size)."""
    from boundary import fmt

    def key(sid):
        m = catalog.models[sid]
        return (family(m.model_type), summaries[sid].params_total)

    ids = sorted(catalog.models, key=key)
    labels = {}
    for sid in ids:
        m, x = catalog.models[sid], summaries[sid]
        active = f" ({fmt.params(x.params_active)} active)" if x.params_active < 0.9 * x.params_total else ""
        labels[sid] = (f"{family(m.model_type)} › {m.name} · {fmt.params(x.params_total)} params{active} · "
                       f"{fmt.gib(x.weights_bytes, 1)} {x.weights_label}")  # fmt: skip
    labels["custom"] = "Custom › the uploaded config.json"
    return [*ids, "custom"], labels


def gpu_options(catalog) -> tuple[list[str], dict[str, str]]:
    """Spec ids grouped by vendor, by memory within each; labels with memory, bandwidth and price."""
    from boundary import fmt

    ids = sorted(catalog.gpus, key=lambda g: (catalog.gpus[g].vendor, catalog.gpus[g].memory_gib, g))
    labels = {g: (f"{VENDORS.get(x.vendor, x.vendor)} › {x.name} · {fmt.fixed(x.memory_gib, 1)} GiB · "
                  f"{fmt.count(x.memory_bandwidth_gb_per_s)} GB/s · {fmt.money(x.price_per_gpu_hour, x.price_currency)}/h"
                  + (" (estimate)" if "price_per_gpu_hour" in x.derived else ""))
              for g, x in catalog.gpus.items()}  # fmt: skip
    return ids, labels


def _pick(name: str) -> None:
    """A picker moved: its spec id becomes the field's (the id box owns the URL key: a bound picker with labels
    would write its label, not the id, into the link)."""
    st.session_state[name] = st.session_state[f"{name}__pick"]


def _picker(label: str, name: str, options: list[str], labels: dict[str, str], help_: str) -> None:
    from ui.state import values_now

    current = st.session_state[name] if name in st.session_state else values_now().get(name, F[name].default)
    st.session_state[f"{name}__pick"] = current if current in options else options[_index(options, F[name].default)]
    st.sidebar.selectbox(label, options, key=f"{name}__pick", format_func=lambda sid: labels.get(sid, sid),
                         on_change=_pick, args=(name,), help=help_)  # fmt: skip


def sidebar_specs(pickers) -> None:
    """Model and GPU first, grouped with their size, memory and price (`pickers`: model_options and gpu_options,
    once per process). The link carries the spec ids: the id boxes under "Spec overrides" own the URL fields, the
    pickers follow them."""
    sb = st.sidebar
    (models, mlabels), (gpus, glabels) = pickers
    _picker("Model", "model", models, mlabels, "family › name · parameters · weights at the checkpoint's precision. "
            "'Custom' = the config.json uploaded below (it travels in the link as custom_model). Type to search.")  # fmt: skip
    sb.file_uploader("…or upload a Hugging Face config.json", type=["json"], key="upload", on_change=on_upload,
                     max_upload_size=1)  # fmt: skip
    if (config := st.session_state.get("upload")) is not None:  # one file a box: at most two uploads a session
        sb.file_uploader("…and its hf_quant_config.json, if it has one", type=["json"], key=quant_key(config),
                         on_change=on_upload, max_upload_size=1,
                         help="A ModelOpt checkpoint (nvidia/…-FP8, -NVFP4) keeps its quantization, and its FP8 KV "
                              "scales, in hf_quant_config.json beside the config.json: vLLM reads both.")  # fmt: skip
    _picker("GPU", "gpu", gpus, glabels, "vendor › name · memory the runtime sees · bandwidth · reference price per "
            "GPU-hour. Type to search.")  # fmt: skip
    if st.session_state.get("upload_error"):
        sb.warning("The uploaded config.json was not used:")
        sb.code(st.session_state["upload_error"], language=None, wrap_lines=True)


def sidebar_rest(model_spec, gpu_spec) -> None:
    sb = st.sidebar
    c1, c2, c3 = sb.columns(3)
    widget("tensor_parallel_size", "TP size", container=c1)
    widget("pipeline_parallel_size", "PP size", container=c2)
    widget("data_parallel_size", "DP size", container=c3)
    c1, c2 = sb.columns(2)
    widget("dtype", "Weights", container=c1)
    widget("kv_cache_dtype", "KV cache", container=c2)
    if summary := held.closed_summary(HELD_GROUPS):
        sb.caption(f"Set in the closed groups below: {summary}")
    for group, fields in GROUPS.items():
        box = lazy_group(group) if group in LAZY else sb.expander(group, expanded=True)
        if box is None:
            continue
        with box:
            for name, label in fields:
                widget(name, label)
                if name == "max_model_len":
                    _context_caption(model_spec)
    for w in gpu_spec.sparse_warnings if gpu_spec else ():
        sb.warning(f"GPU spec: {w}", icon=":material/warning:")
    box = lazy_group(SPEC_OVERRIDES)
    if box is not None:
        spec_overrides(box, model_spec, gpu_spec)


def _context_caption(model_spec) -> None:
    """The box shows 8,192 where a shorter model is planned at its own maximum (calc.resolve.default_context)."""
    default = F["max_model_len"].default
    own = model_spec.max_len_limit if model_spec else None
    if st.session_state.get("max_model_len") == default and own is not None and own < default:
        st.caption(f"Planned at {own:,}: the model's own maximum, what vLLM serves without --max-model-len.")


def spec_overrides(box, model_spec, gpu_spec) -> None:
    with box:
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
        a, b = st.columns(2)
        text_input("model", "Model spec id", container=a, help="What the link carries; the Model picker above sets it.")
        text_input("gpu", "GPU spec id", container=b, help="What the link carries; the GPU picker above sets it.")
        text_input("custom_model", "custom_model (encoded config)",
                   help="Set by uploading a config.json; travels in the link.")  # fmt: skip


def current_values() -> dict:
    """The Scenario fields as the inputs hold them now; a closed group's as the session holds them."""
    return {**st.session_state.get(held.KEY, {}), **state_view.read(F)}
