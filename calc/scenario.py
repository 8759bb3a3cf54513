"""The Scenario: every input of the planner, one validated object.

Field names are the URL query parameters, the CLI flags (`--max-model-len` ⇄ `max_model_len`) and the JSON keys.
Names follow vLLM's flags where one exists. Defaults open on the seed report's measured case (Qwen2.5-7B-Instruct
on an RTX 4090, 16 concurrent requests of 1,024 + 256 tokens). A field left at None means "use the spec or the
documented estimate"; setting it is an override that travels in the link.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from calc.engine_spec import Version
from calc.errors import SPEC_ID_PATTERN, InputError, short

Tokens = Annotated[int, Field(ge=1, le=10_000_000)]
Fraction = Annotated[float, Field(ge=0.01, le=1)]  # below 1 % of peak is a broken measurement, not a plan
Seconds = Annotated[float, Field(ge=0, le=86_400)]
PosSeconds = Annotated[float, Field(ge=1e-6, le=86_400)]
Bytes = Annotated[float, Field(ge=0, le=1e15)]
Bandwidth = Annotated[float, Field(ge=0.001, le=1e6)]  # GB/s (1 MB/s to 1 PB/s)
SpecId = Annotated[str, Field(min_length=1, max_length=64, pattern=SPEC_ID_PATTERN)]
SEARCH_LISTS = {"search_gpus": "gpu", "search_tensor_parallel_size": "tensor_parallel_size",
                "search_pipeline_parallel_size": "pipeline_parallel_size", "search_dtype": "dtype",
                "search_kv_cache_dtype": "kv_cache_dtype", "search_max_num_seqs": "max_num_seqs",
                "search_max_num_batched_tokens": "max_num_batched_tokens",
                "search_gpu_memory_utilization": "gpu_memory_utilization"}  # fmt: skip
MAX_LIST_ITEMS = 32


def split_list(text: str) -> list[str]:
    """'1, 2,4' → ['1', '2', '4']: the items of a comma-separated search list."""
    return [x.strip() for x in text.split(",") if x.strip()]


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)

    # --- what runs where -------------------------------------------------------------------------------------
    model: SpecId = "qwen2.5-7b-instruct"
    """Model spec id (file stem in model_specs/), or 'custom' with custom_model set."""
    gpu: SpecId = "rtx-4090"
    """Accelerator spec id (file stem in hardware_specs/)."""
    tensor_parallel_size: Annotated[int, Field(ge=1, le=64)] = 1
    """GPUs each layer is split across (vLLM --tensor-parallel-size); weights and KV heads divide by it."""
    pipeline_parallel_size: Annotated[int, Field(ge=1, le=64)] = 1
    """Stages the layers are split into, one GPU group each (vLLM --pipeline-parallel-size)."""
    data_parallel_size: Annotated[int, Field(ge=1, le=64)] = 1
    """Attention ranks in one server (vLLM --data-parallel-size; SGLang --dp with --enable-dp-attention), each of
    tensor_parallel_size × pipeline_parallel_size GPUs with its own scheduler and KV pool, the requests spread over
    them; a MoE model's routed experts span all ranks' GPUs, and every MoE layer is one step of all ranks."""
    dtype: Literal["auto", "bf16", "fp16", "fp8", "int8", "int4"] = "auto"
    """Weight precision; auto = the checkpoint's own (its quantization_config, else torch_dtype)."""
    kv_cache_dtype: Literal["auto", "fp8", "nvfp4"] = "auto"
    """auto = the weights' 16-bit type; fp8 = 1 byte per element; nvfp4 = 4-bit values with an FP8 scale per 16,
    0.5625 B (vLLM 0.21+ on SM 10.x GPUs, from 0.32 SM 8.x–12.x too: calc.precision_support.kv_dtype_refusal)."""
    # --- the engine ------------------------------------------------------------------------------------------
    gpu_memory_utilization: Annotated[float, Field(ge=0.01, le=1.0)] = 0.9
    """Share of each GPU's memory vLLM may use: weights, activations, CUDA graphs and the KV pool. Under SGLang its
    --mem-fraction-static: the share of the memory free before loading that holds the weights and the KV pool."""
    block_size: Literal[8, 16, 32, 64, 128, 256] = 16
    """Tokens per KV-cache block (vLLM --block-size); FlashMLA and hybrid models may raise it."""
    max_model_len: Annotated[int, Field(ge=1, le=2**24)] = 8192  # vLLM's own reach 10,485,760 (Llama-4-Scout)
    """Longest request (prompt + output) the server admits, tokens; vLLM refuses to start when one does not fit."""
    max_num_seqs: Annotated[int, Field(ge=1, le=65_536)] = 256
    """Most requests running in one step (vLLM --max-num-seqs), on each data-parallel rank; the rest wait in the queue."""
    max_num_batched_tokens: Tokens = 2048
    """Token budget of one step (vLLM --max-num-batched-tokens), each data-parallel rank's: decodes first, then prompt
    chunks."""
    disable_hybrid_kv_cache_manager: bool = False
    """vLLM's flag: sliding-window and chunked layers then hold the whole context (no memory saving)."""
    mamba_ssm_cache_dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    """vLLM's --mamba-ssm-cache-dtype: the SSM state of Mamba/linear layers (auto: the checkpoint's or model's)."""
    enforce_eager: bool = False
    """No CUDA graphs: their memory is not reserved, decode steps lose the launch-overhead saving."""
    decode_context_parallel_size: Annotated[int, Field(ge=1, le=64)] = 1
    """vLLM's --decode-context-parallel-size (DCP): the tensor-parallel GPUs that hold the same KV head (MLA's latent,
    or a GQA head when TP exceeds the KV heads) split each request's tokens among this many of them, so a request takes
    1/dcp of the blocks and a decode step reads 1/dcp of its cache on each GPU; tensor_parallel_size must be a multiple."""
    speculative_method: Literal["none", "mtp", "ngram", "eagle", "eagle3"] = "none"
    """vLLM's --speculative-config method: mtp = the checkpoint's own multi-token-prediction layers
    (num_nextn_predict_layers) as the draft, whose attention layers share the KV pool and whose weights load beside the
    model's; eagle / eagle3 = a separate one-layer EAGLE head (its checkpoint is the config's "model"), planned as one
    decoder layer of the target's shape; ngram = prompt lookup, no draft weights. Memory is planned with them; latency
    with speculation where draft_acceptance_rate is set, else without."""
    num_speculative_tokens: Annotated[int, Field(ge=1, le=16)] = 3
    """Draft tokens a step proposes (--speculative-config num_speculative_tokens): a hybrid model's recurrent state
    keeps this many more blocks a request (vLLM MambaSpec.num_speculative_blocks). Used only with a method."""
    draft_acceptance_rate: Annotated[float, Field(ge=0, le=1)] | None = None
    """Accepted draft tokens / drafted tokens, as vLLM's spec-decode metrics print it ("Avg Draft acceptance rate"):
    with a speculative method, latency and throughput are planned with speculation, each decode step verifying
    1 + num_speculative_tokens tokens a request and yielding 1 + num_speculative_tokens × this (calc.speculative).
    Unset: planned without speculation. It depends on the workload's text and on num_speculative_tokens."""
    language_model_only: bool = False
    """A multimodal checkpoint served for text alone: vLLM's --language-model-only (0.17+; before, --limit-mm-per-prompt
    with 0 for every modality), under which its vision and audio towers are neither loaded nor profiled
    (interfaces.py _mark_tower_model skips a tower whose modalities all have limit 0)."""
    enable_prefix_caching: bool = False
    """vLLM's --enable-prefix-caching for a hybrid model (Gated DeltaNet: Qwen3-Next, Qwen3.5/3.6), where it is opt-in:
    each request's recurrent state then takes 2 blocks, not 1 (mamba_cache_mode align; k more with speculative
    decoding). Attention-only models cache
    prefixes by default whatever this says."""
    enable_expert_parallel: bool = False
    """vLLM's --enable-expert-parallel (SGLang: --ep-size = every GPU's count): each GPU holds whole routed experts,
    E/(DP·TP) of them, not a slice of each; a step then waits for the GPU with the most touched experts and tokens."""
    estimate_cudagraphs: bool = True
    """Subtract the CUDA-graph estimate before sizing the pool, as vLLM ≥ 0.20 does by default; earlier vLLM
    releases (engine_version below 0.20) never do, whatever this says."""
    kv_cache_memory_bytes: Bytes | None = None
    """vLLM's --kv-cache-memory-bytes: the pool per GPU, replacing the whole memory estimate."""
    weights_memory_bytes: Bytes | None = None
    """Override of the weights per GPU (vLLM's 'Model loading took X GiB')."""
    activation_memory_bytes: Bytes | None = None
    """Override of the profiling run's activation peak per GPU."""
    non_torch_memory_bytes: Bytes | None = None
    """Override of non-torch memory per GPU (CUDA context growth, NCCL buffers)."""
    cudagraph_memory_bytes: Bytes | None = None
    """Override of the CUDA-graph memory per GPU."""
    # --- the workload ----------------------------------------------------------------------------------------
    input_len: Tokens = 1024
    """Prompt tokens per request."""
    output_len: Tokens = 256
    """Generated tokens per request."""
    concurrency: Annotated[int, Field(ge=1, le=1_000_000)] = 16
    """Requests in flight at once (a closed loop: each client sends its next when the last ends)."""
    request_rate: Annotated[float, Field(ge=1e-6, le=1e7)] | None = None
    """Arrival rate to serve, requests/s; sets replicas, GPUs and cost."""
    # --- efficiency and latency ------------------------------------------------------------------------------
    engine: Literal["vllm", "sglang"] = "vllm"
    """Serving engine: its fixed costs, kernel shares and scheduler (engine_specs/<engine>.yaml)."""
    engine_version: Version = "latest"
    """The engine's release as `vllm --version` prints it ('0.11.0'), or 'latest': whose fixed costs the step time
    uses (the spec's `releases`; asynchronous scheduling, on by default in newer vLLM, hides per-sequence work)."""
    mfu: Fraction | None = None
    """Override: achieved fraction of peak FLOP/s in GEMMs; default: the GPU's measured achievable fraction."""
    mbu: Fraction | None = None
    """Override: achieved fraction of peak bandwidth; default: the GPU's achievable fraction × the engine's kernel
    shares (the seed measured 86.9–87.2 % in decode)."""
    queue_s: Seconds = 0.0
    """Time a request waits before its prefill starts (part of TTFT)."""
    endpoint_type: Literal["openai", "openai-chat"] = "openai"
    """The API the clients call, named as `vllm bench serve --endpoint-type` names it: 'openai' = /v1/completions
    (the tool's default), 'openai-chat' = /v1/chat/completions, whose chat template adds the engine spec's
    chat_request_s to each request's front-end time."""
    frontend_overhead_s: Seconds | None = None
    """Override of the engine's per-request front-end time on TTFT (HTTP, tokenisation, IPC); default: the engine
    spec's calibrated request_overhead_s."""
    measured_itl_s: PosSeconds | None = None
    """A measured decode step (ITL p50) at this scenario's context and concurrency, to calibrate MBU."""
    measured_prefill_s: PosSeconds | None = None
    """A measured prefill time of input_len tokens, to calibrate MFU."""
    measured_itl_p99_s: PosSeconds | None = None
    """A measured ITL p99, to infer the prefill chunk riding on the slowest steps."""
    measured_running_batch: Annotated[float, Field(ge=1, le=65_536)] | None = None
    """Running requests during that ITL measurement, as vLLM's metrics average them (fractional, e.g. 15.39): the
    decode floor and the MBU achieved at that batch rather than at `concurrency`."""
    kv_transfer_gb_per_s: Bandwidth | None = None
    """Link between prefill and decode instances (disaggregation); default: the GPUs' own link where a prefill and a
    decode instance share a node (2 · TP · PP ≤ node_gpus), else network_gb_per_s (calc.pool.kv_link_bytes_per_s)."""
    disaggregated: bool = False
    """Prefill and decode on separate instances of this configuration (vLLM's disaggregated prefill): the prompt's
    KV crosses kv_transfer_gb_per_s, and no prompt rides on a decode step."""
    # --- SLOs, replicas, cost --------------------------------------------------------------------------------
    slo_ttft_s: PosSeconds = 0.5
    """Time-to-first-token objective, seconds."""
    slo_tpot_s: PosSeconds = 0.05
    """Time-per-output-token objective, seconds."""
    conformance_quota: Annotated[float, Field(gt=0, lt=1)] = 0.9
    """Share of requests that must meet both SLOs for a rate to count as served."""
    latency_sigma: Annotated[float, Field(ge=0, le=3)] = 0.35
    """Log-normal spread of TTFT and TPOT around the model's estimate (the seed's simulation uses 0.35)."""
    sim_ttft_median_s: PosSeconds | None = None
    """Median TTFT for the simulation panel; default: the latency model's TTFT."""
    sim_tpot_median_s: PosSeconds | None = None
    """Median TPOT for the simulation panel; default: the latency model's TPOT."""
    sim_window_s: Annotated[float, Field(ge=0.001, le=3600)] = 10.0
    """Observation window of the simulation (the seed uses 10 s)."""
    gpu_hour_price: Annotated[float, Field(ge=1e-6, le=1e4)] | None = None
    """Price per GPU-hour in `currency`; default: the GPU spec's reference price (in its own currency)."""
    currency: Literal["USD", "EUR", "GBP", "CHF", "JPY", "CNY", "INR", "KRW", "CAD", "AUD", "SGD"] = "USD"
    """Currency of gpu_hour_price (ISO 4217)."""
    fanout: Annotated[int, Field(ge=1, le=10_000)] = 20
    """Parallel calls one user-facing answer waits for (tail amplification)."""
    chain_calls: Annotated[int, Field(ge=1, le=10_000)] = 20
    """Sequential calls one answer waits for (an agent's chain of steps): their times add."""
    # --- beyond the GPU --------------------------------------------------------------------------------------
    turns: Annotated[int, Field(ge=1, le=10_000)] = 10
    """Turns of a conversation whose history is resent (prefix reuse)."""
    tokens_per_turn: Tokens = 250
    """Tokens each turn adds to the conversation."""
    shared_prefix_len: Annotated[int, Field(ge=0, le=10_000_000)] = 0
    """System prompt shared by every request; its blocks are stored once with prefix caching."""
    document_len: Tokens = 8192
    """Tokens of a document queried several times (prefix reuse)."""
    document_queries: Annotated[int, Field(ge=1, le=100_000)] = 5
    """Queries against that document."""
    host_link_gb_per_s: Bandwidth | None = None
    """Override of the GPU↔host link (PCIe) used by swap and host-DRAM cache tiers, GB/s per direction."""
    ssd_gb_per_s: Bandwidth = 7.0
    """Local NVMe read bandwidth (PCIe 4.0 x4 drive)."""
    network_gb_per_s: Bandwidth = 50.0
    """Remote memory over the network (400 Gb/s RDMA ≈ 50 GB/s)."""
    host_cache_gib: Annotated[float, Field(ge=0, le=1e6)] = 64.0
    """Host DRAM set aside per GPU for spilled KV blocks (vLLM --swap-space / a CPU offload tier), GiB."""
    ssd_cache_gib: Annotated[float, Field(ge=0, le=1e7)] = 1024.0
    """Local NVMe space for a spilled prefix cache, per GPU, GiB."""
    remote_cache_gib: Annotated[float, Field(ge=0, le=1e8)] = 4096.0
    """Pooled remote memory reachable over the network (Mooncake-style), per GPU, GiB."""
    swap_overlap: bool = True
    """The swap-out overlaps compute, so only the way back is paid."""
    # --- spec overrides --------------------------------------------------------------------------------------
    memory_gib: Annotated[float, Field(ge=0.01, le=100_000)] | None = None
    """Override of the GPU's memory as the runtime sees it, GiB."""
    memory_bandwidth_gb_per_s: Bandwidth | None = None
    """Override of the GPU's peak memory bandwidth, GB/s."""
    peak_tflop_per_s: Annotated[float, Field(ge=0.001, le=1e6)] | None = None
    """Override of the dense peak for the scenario's matmul precision."""
    scaleup_link_gb_per_s: Bandwidth | None = None
    """Override of the GPU-to-GPU link tensor-parallel all-reduces use, GB/s per direction: it then joins every GPU
    of the group (a spec's bridged pair no longer ends at two)."""
    num_hidden_layers: Annotated[int, Field(ge=1, le=10_000)] | None = None
    """Override of the model's layer count (a hypothetical variant)."""
    num_key_value_heads: Annotated[int, Field(ge=1, le=10_000)] | None = None
    """Override of the model's KV heads (e.g. the MHA variant of a GQA model)."""
    head_dim: Annotated[int, Field(ge=1, le=10_000)] | None = None
    """Override of the model's head dimension."""
    custom_model: Annotated[str, Field(max_length=4000)] | None = None
    """A model that is not shipped: compact encoding of its config.json planning fields (see calc.custom)."""
    # --- finding a deployment (calc.search): the space searched and its filters --------------------------------
    search_gpus: Annotated[str, Field(max_length=2000)] = "all"
    """GPUs the search may use: comma-separated spec ids, or all."""
    search_tensor_parallel_size: Annotated[str, Field(max_length=200)] = "1,2,4,8"
    """Tensor-parallel sizes the search tries, comma-separated."""
    search_pipeline_parallel_size: Annotated[str, Field(max_length=200)] = "1,2"
    """Pipeline-parallel sizes the search tries, comma-separated."""
    search_dtype: Annotated[str, Field(max_length=200)] = "auto,fp8,int4"
    """Weight precisions the search tries, comma-separated (auto, bf16, fp16, fp8, int8, int4)."""
    search_kv_cache_dtype: Annotated[str, Field(max_length=200)] = "auto,fp8"
    """KV-cache precisions the search tries, comma-separated (auto, fp8, nvfp4)."""
    search_max_num_seqs: Annotated[str, Field(max_length=200)] = "8,16,32,64,128,256,512"
    """Engine caps on running requests (batch sizes) the search tries, comma-separated."""
    search_max_num_batched_tokens: Annotated[str, Field(max_length=200)] = ""
    """Token budgets per step the search tries, comma-separated; empty = this scenario's max_num_batched_tokens."""
    search_gpu_memory_utilization: Annotated[str, Field(max_length=200)] = ""
    """Memory fractions the search tries, comma-separated; empty = this scenario's gpu_memory_utilization."""
    search_disaggregated: bool = True
    """Also try disaggregated serving: prefill and decode on separate instances, the prompt's KV sent between them."""
    search_max_gpus: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    """Most GPUs a deployment may use (all replicas; one replica's when request_rate is unset)."""
    search_budget_per_hour: Annotated[float, Field(ge=1e-6, le=1e9)] | None = None
    """Most a deployment may cost per hour, in the GPU prices' currency."""

    @field_validator("custom_model", mode="before")
    @classmethod
    def _empty_is_none(cls, v):
        """An empty text box (or `?custom_model=`) means no custom model, not an empty one."""
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("block_size", mode="before")
    @classmethod
    def _block_size_from_text(cls, v):
        """URL and CLI values arrive as text; a Literal of ints does not coerce '32' by itself. ASCII digits only:
        str.isdigit and int() also take '١٦' (Arabic-Indic) and '¹⁶', which every other integer field refuses."""
        return int(v) if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit() and len(v) < 6 else v

    @field_validator(*SEARCH_LISTS)
    @classmethod
    def _search_list(cls, v: str, info):
        """Each item of a search list must be a value its Scenario field accepts ('1,2,4' for TP sizes)."""
        items = split_list(v)
        if items and len(items) < len(v.split(",")):
            raise ValueError(f"an empty item between commas in {v[:40]!r}: give values separated by single commas")
        if not items and info.field_name not in ("search_max_num_batched_tokens", "search_gpu_memory_utilization"):
            raise ValueError("give at least one value")
        if len(items) > MAX_LIST_ITEMS:
            raise ValueError(f"at most {MAX_LIST_ITEMS} values")
        name = SEARCH_LISTS[info.field_name]
        for item in items if items != ["all"] else ():
            try:
                cls.model_validate({name: item})
            except ValidationError as e:
                why = e.errors()[0].get("msg", "") if e.errors() else ""
                raise ValueError(f"'{item[:20]}' is not a valid {name}" + (f": {why[:120]}" if why else "")) from None
        return v

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.model == "custom" and not self.custom_model:
            raise ValueError("custom_model is required when model is 'custom' (on the command line --custom-model, or "
                             "a config.json path given to --model)")
        return self

    @property
    def gpus_per_replica(self) -> int:
        """GPUs one server uses: data-parallel ranks × tensor-parallel size × pipeline stages."""
        return self.data_parallel_size * self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def rank_concurrency(self) -> int:
        """Requests in flight on one data-parallel rank: ⌈concurrency / data_parallel_size⌉ (vLLM's DP coordinator
        balances the ranks by their queues, so a closed loop of C spreads evenly; the busiest rank sets the pace)."""
        return -(-self.concurrency // self.data_parallel_size)

    @property
    def request_len(self) -> int:
        return self.input_len + self.output_len

    @property
    def shared_len(self) -> int:
        """The shared system prompt as planned: shared_prefix_len, no longer than the prompt it opens."""
        return min(self.shared_prefix_len, self.input_len)

    def model_copy(self, *, update: dict | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied, each updated field checked against its own constraints: pydantic's
        model_copy validates nothing, and a concurrency of -3 or 0 set that way divided by zero deep in the latency
        model (or planned a negative queue) instead of naming the field. ~1 µs a field."""
        checked = {}
        for name, value in (update or {}).items():
            if name not in Scenario.model_fields:
                raise InputError(name, "is not a Scenario field")
            try:
                checked[name] = _field_adapter(name).validate_python(value)
            except ValidationError as e:
                err = e.errors()[0]
                raise InputError(name, f"{err.get('msg', 'invalid')} (got {short(repr(value))})") from None
        return super().model_copy(update=checked, deep=deep)

    def derived(self, **update) -> Self:
        """A copy for an internal what-if whose values come from a valid scenario, unchecked: one data-parallel rank's
        share of the request rate may fall below the floor a user may ask for (1e-6 req/s), and that is no error."""
        return super().model_copy(update=update)

    def changed(self) -> dict:
        """Fields that differ from the defaults, in declaration order (what a shared link carries)."""
        return self.model_dump(exclude_defaults=True)


@functools.cache
def _field_adapter(name: str) -> TypeAdapter:
    """The validator of one Scenario field's type and constraints alone (model_copy's check)."""
    info = Scenario.model_fields[name]
    kind = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    return TypeAdapter(kind, config=ConfigDict(allow_inf_nan=False))


def field_constraints(name: str) -> list:
    """The numeric constraints (annotated_types Ge/Gt/Le/Lt) of a Scenario field, optional fields included."""
    from typing import get_args

    from annotated_types import Ge, Gt, Le, Lt

    info = Scenario.model_fields[name]
    metas = list(info.metadata) + [m for a in get_args(info.annotation) for m in getattr(a, "__metadata__", ())]
    metas += [m for f in metas for m in getattr(f, "metadata", ())]  # Field(...) inside Annotated[..] | None
    return [m for m in metas if isinstance(m, (Ge, Gt, Le, Lt))]


@functools.cache
def field_bounds(name: str) -> tuple[float | None, float | None]:
    """(lower, upper) bound of a numeric Scenario field, from its constraints (ge/gt, le/lt); computed once per
    field (the page asks for every field on every rerun)."""
    from annotated_types import Ge, Gt, Le, Lt

    lo = hi = None
    for meta in field_constraints(name):
        if isinstance(meta, (Ge, Gt)):
            lo = meta.ge if isinstance(meta, Ge) else meta.gt
        elif isinstance(meta, (Le, Lt)):
            hi = meta.le if isinstance(meta, Le) else meta.lt
    return lo, hi
