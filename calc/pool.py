"""The KV-cache pool, per GPU, as vLLM's V1 engine sizes it (SGLang's below) (reference/vllm_kv.md §0, §3.1, §4, §5).

    requested  = total memory · gpu_memory_utilization
    available  = requested − weights − activation peak − non-torch [− CUDA-graph estimate]   ("Available KV cache memory")
    num_blocks = ⌊available / block bytes⌋, each pipeline stage from its own layers; the engine keeps the minimum
    max_concurrency = num_blocks / blocks one max_model_len request needs                    ("Maximum concurrency for L tokens")
    kv_cache_tokens = int(max_concurrency · max_model_len)                                  ("GPU KV cache size", vLLM > 0.20.0;
                      num_blocks · block_size before, ⌊num_blocks / groups⌋ · block_size for a hybrid: printed_kv_tokens)

SGLang (model_runner.profile_max_num_token) takes its --mem-fraction-static (the scenario's gpu_memory_utilization)
of what is free before it loads the weights, and its activations and CUDA graphs come out of the rest:

    available  = (total − in use before loading) · mem_fraction_static − weights      (Massed Compute's 17 logged
                                                                                        pools: −0.9 … +3.4 %)

Seed report (Qwen2.5-7B, RTX 4090): 6.41 GiB available → 7,504 blocks of 16 → 120,064 tokens, 14.66x at 8,192.
The headline numbers are built as formulas (calc.expr), so the text a reviewer expands is the computation itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calc.engine_spec import version_tuple
from calc.expr import E, efloor, emax0
from calc.kv_cache import (
    StageLayout,
    blocks_from_bytes,
    kv_bytes_per_token_expr,
    mla_arch,
    pp_layer_ranges,
    stage_layout,
    state_blocks,
)
from calc.numeric import largest_true
from calc.overheads import (
    EncoderProfile,
    activation_peak_bytes,
    cudagraph_bytes,
    encoder_profile,
    graphs_subtracted,
    non_torch_bytes,
)
from calc.params import ParamCounts
from calc.precision_support import checkpoint_refusal, kv_dtype_refusal, served_format
from calc.scenario import Scenario
from calc.sglang_hybrid import sglang_state_bytes, state_split
from calc.sglang_swa import windowed_share
from calc.specs import GPUSpec, ModelSpec
from calc.speculative import draft_weight_bytes, drafted, spec_refusal, speculative_blocks
from calc.units import DTYPE_BYTES, GB
from calc.weights import WeightFormat, weight_format, weights_bytes, weights_bytes_per_stage


@dataclass(frozen=True)
class PoolResult:
    params: ParamCounts
    weight_format: WeightFormat
    weights_bytes: float
    """All GPUs of one replica together."""
    total_memory_bytes: float
    """One GPU as the runtime sees it."""
    requested_memory_bytes: float
    weights_bytes_per_gpu: float
    activation_bytes: float
    non_torch_bytes: float
    cudagraph_bytes: float
    cudagraph_subtracted: bool
    kv_cache_memory_bytes: float
    """Per GPU, vLLM's 'Available KV cache memory' (the stage with the fewest blocks)."""
    kv_cache_memory_from_flag: bool
    kv_bytes_per_element: float
    kv_bytes_per_token: float
    """All attention layers, one token, before tensor parallelism (sliding layers counted in full)."""
    kv_bytes_per_token_per_gpu: float
    """The busiest stage's attention layers, one token, after the tensor-parallel head split."""
    state_bytes_per_request: float
    """Mamba / linear-attention state one request holds on one GPU (the busiest stage), as vLLM charges it."""
    block_size: int
    block_size_note: str
    page_bytes: float
    """One block of one layer on one GPU."""
    layers_per_group: int
    kv_groups: int
    padding_layers: int
    num_gpu_blocks: int
    blocks_per_max_len_request: int
    max_concurrency: float
    kv_cache_tokens: int
    pool_token_capacity: int
    """num_gpu_blocks · block_size: tokens the pool holds if every layer kept every token."""
    estimated_max_model_len: int
    """Longest request one sequence can hold in this pool (vLLM's estimate_max_model_len)."""
    stage_blocks: tuple[int, ...]
    """Blocks each pipeline stage's memory and layers give; the engine keeps the minimum."""
    layout: StageLayout = field(repr=False)
    """The layer grouping of the stage with the fewest blocks (the one the scheduler is bound by)."""
    max_num_batched_tokens: int = 0
    whole_model_request_bytes: float = 0.0
    """Pipeline parallelism: one max_model_len request's KV over every layer on one GPU of a stage's width — what vLLM
    0.14–0.15's start check wrongly compared with one stage's pool (PP_WHOLE_MODEL_CHECK)."""
    state_slots: int = 0
    """SGLang, a hybrid model: requests whose state its Mamba pool holds beside the KV pool (calc.sglang_hybrid)."""
    state_pool_bytes: float = 0.0
    """SGLang, a hybrid model: that pool per GPU (the stage with the fewest KV blocks), outside kv_cache_memory_bytes."""
    running_slots: int = 0
    """SGLang, a hybrid model: the fewest state slots of any pipeline stage (a running request holds one on each), what
    its running-request cap is counted from (calc.sglang_hybrid); state_slots with one stage."""
    formulas: dict = field(default_factory=dict, repr=False, compare=False)
    """Headline numbers as calc.expr formulas: the text shown beside each number."""
    encoder_profile: EncoderProfile | None = None
    """What vLLM's profiling run feeds a vision encoder (multimodal models)."""
    dtype_refusal: str = ""
    """Why the engine refuses to start with this scenario's precisions or draft, or '': a weight dtype (bf16 below
    Ampere; calc.precision_support.dtype_refusal), a KV-cache precision (kv_dtype_refusal), a speculative draft the
    plan cannot size (calc.speculative.spec_refusal). Named for its first use, and kept: it is a key of the JSON."""

    def blocks_per_request(self, tokens: int) -> int:
        """Blocks one request of `tokens` tokens takes from this pool (sliding groups cap at the window, state
        groups take one block)."""
        return self.layout.blocks_per_request(tokens, max_num_batched_tokens=self.max_num_batched_tokens)

    @property
    def headroom_bytes(self) -> float:
        """Memory the engine leaves unused on each GPU: total · (1 − utilization)."""
        return self.total_memory_bytes - self.requested_memory_bytes


def request_cache_bytes(pool, tokens, kv_read=None):
    """One request's cache of `tokens` tokens on one GPU [bytes]: its KV plus, for hybrid models, its
    Mamba/linear-attention state. `pool`: a PoolResult, or calc.search_pool's arrays (same field names). `kv_read`:
    (bytes a token, tokens held) per kind of layer (StepModel.kv_read; numpy rows in the search), where given: a
    sliding-window layer holds at most its window."""
    if kv_read is None:
        return tokens * pool.kv_bytes_per_token_per_gpu + pool.state_bytes_per_request
    held = sum(b * (tokens if cap == float("inf") else min(tokens, cap)) for b, cap in kv_read)
    return held + pool.state_bytes_per_request


def transfer_s(pool, tokens, bytes_per_s, kv_read=None):
    """Move one request's cache over a link [s] (each TP rank moves its own shard, in parallel): what it holds
    (request_cache_bytes, windows counted where `kv_read` is given)."""
    return request_cache_bytes(pool, tokens, kv_read) / bytes_per_s


def kv_link_bytes_per_s(s: Scenario, g: GPUSpec, instance_gpus: int | None = None) -> float:
    """The prefill → decode link of a disaggregated deployment: kv_transfer_gb_per_s when set; else, where a prefill
    instance and a decode instance (TP × PP GPUs each) share one node, the GPUs' own link between them (the
    scale-up link, or PCIe); where the two cannot share a node (2 · TP · PP over node_gpus: a GH200 superchip is a
    node of one), the network (network_gb_per_s, no faster than each GPU's host link), as a connector such as NIXL
    moves it across nodes."""
    if s.kv_transfer_gb_per_s:
        return s.kv_transfer_gb_per_s * GB
    gpus = instance_gpus or s.tensor_parallel_size * s.pipeline_parallel_size
    if g.node_gpus is not None and 2 * gpus > g.node_gpus:
        return min(s.network_gb_per_s * GB, g.host_link_bytes_per_s)
    return g.tp_link_bytes_per_s


NVFP4_KV_BYTES = 9 / 16
"""vLLM's nvfp4 KV cache: head_size / 2 bytes of 4-bit values and head_size / 16 FP8 block scales per head and token
(utils/torch_utils.py nvfp4_kv_cache_full_dim), 0.5625 B an element for the head sizes it serves (64, 128, 256)."""


def kv_bytes_per_element(s: Scenario) -> float:
    if s.kv_cache_dtype == "nvfp4":
        return NVFP4_KV_BYTES
    return DTYPE_BYTES["fp8"] if s.kv_cache_dtype == "fp8" else DTYPE_BYTES["bf16"]


def linked_ranks(s: Scenario, m: ModelSpec) -> int:
    """Data-parallel ranks whose GPUs exchange tensors: a MoE model's, whose experts span them all (NCCL buffers on
    every GPU); a dense model's ranks only agree on step sizes on the CPU (kuberay#4366: Qwen2.5-0.5B at DP 2 on
    T4s sized the same 10.74 GiB pool on both ranks as one alone would)."""
    return s.data_parallel_size if m.routed_experts else 1


def stage_layouts(s: Scenario, m: ModelSpec, g: GPUSpec) -> list[StageLayout]:
    """Each pipeline stage's block layout on one of its GPUs (its own layers, vLLM's get_pp_indices), a speculative
    draft's layers included (calc.speculative.drafted)."""
    m = drafted(s, m)
    return [stage_layout(m, layers, tp=s.tensor_parallel_size, kv_bytes_per_element=kv_bytes_per_element(s),
                         model_bytes=DTYPE_BYTES["bf16"], block_size=s.block_size, arch=mla_arch(g),
                         hybrid_manager=not s.disable_hybrid_kv_cache_manager, ssm_dtype=s.mamba_ssm_cache_dtype,
                         separate_state=s.engine == "sglang", state_pages=state_blocks(s, m),
                         cp=s.decode_context_parallel_size, num_spec=speculative_blocks(s),
                         windowed_share=windowed_share(s.engine, s.engine_version, m.model_type, g.arch,
                                                       disabled=s.disable_hybrid_kv_cache_manager))
            for layers in pp_layer_ranges(m.num_hidden_layers, s.pipeline_parallel_size)]  # fmt: skip


MEASURED_MEMORY = ("weights_memory_bytes", "activation_memory_bytes", "non_torch_memory_bytes", "cudagraph_memory_bytes")


def measured_at(s: Scenario, m: ModelSpec, *, tp: int, pp: int, dtype: str, max_num_seqs: int,
                max_num_batched_tokens: int) -> dict[str, float]:  # fmt: skip
    """The scenario's measured per-GPU memory (a startup log's, MEASURED_MEMORY) moved to another configuration, since
    a log measures the configuration it ran (weights taken at TP 1 are about twice what each GPU holds at TP 2):
    weights and activations, which split over the GPUs, × their estimate there / their estimate here; non-torch
    memory and CUDA graphs, mostly a fixed context plus what TP adds (NCCL buffers), + their estimate there − here.
    Only the fields set; at the scenario's own configuration, the measurements themselves."""
    def estimates(tp_, pp_, dtype_, seqs, budget) -> dict[str, float]:
        return {"weights_memory_bytes": max(weights_bytes_per_stage(m, m.params, weight_format(m, dtype_), tp=tp_, pp=pp_,
                                                                    dp=s.data_parallel_size)),
                "activation_memory_bytes": activation_peak_bytes(m, max_num_batched_tokens=budget, max_num_seqs=seqs,
                                                                 tp=tp_, max_model_len=s.max_model_len),
                "non_torch_memory_bytes": non_torch_bytes(gpus_per_replica=tp_ * pp_ * linked_ranks(s, m), engine=s.engine),
                "cudagraph_memory_bytes": cudagraph_bytes(tp=tp_, enforce_eager=s.enforce_eager)}  # fmt: skip

    given = {k: getattr(s, k) for k in MEASURED_MEMORY if getattr(s, k) is not None}
    if not given:
        return {}
    own = estimates(s.tensor_parallel_size, s.pipeline_parallel_size, s.dtype, s.max_num_seqs, s.max_num_batched_tokens)
    new = estimates(tp, pp, dtype, max_num_seqs, max_num_batched_tokens)
    scaled = ("weights_memory_bytes", "activation_memory_bytes")
    return {k: (v * (new[k] / own[k]) if own[k] > 0 else v) if k in scaled else max(0.0, v + (new[k] - own[k]))
            for k, v in given.items()}  # fmt: skip


PP_WHOLE_MODEL_CHECK = ((0, 14), (0, 16))
"""[first, last) vLLM releases whose start check sums one request's KV over the whole model, every pipeline stage's
layers, against one stage's pool (vllm#29431's regression; vllm#32105: GLM-4.7 at PP 8 on A100s, 71.16 GiB needed
against 28.57 available; vllm#34076 the same on 0.15.2rc1). The fix, vllm#33698, merged 2026-02-03: 0.16 is taken as
its first release (not read in a wheel)."""


def whole_model_release(s: Scenario) -> bool:
    """Whether the scenario's release sizes a PP > 1 start check over the whole model (PP_WHOLE_MODEL_CHECK)."""
    version = version_tuple(s.engine_version) if s.engine == "vllm" else None
    first, last = PP_WHOLE_MODEL_CHECK
    return version is not None and first <= version[:2] < last


def whole_model_check(s: Scenario) -> bool:
    """Whether the scenario's own start check is sized over the whole model: such a release, at PP > 1."""
    return s.pipeline_parallel_size > 1 and whole_model_release(s)


def whole_model_layout(s: Scenario, m: ModelSpec, g: GPUSpec) -> StageLayout:
    """All the model's layers laid out as one stage on one GPU of the scenario's width: what that check sizes."""
    return stage_layouts(s.derived(pipeline_parallel_size=1), m, g)[0]


def _whole_model_request_bytes(s: Scenario, m: ModelSpec, g: GPUSpec) -> float:
    """One max_model_len request's blocks over all layers, laid out as one stage, × its block bytes [bytes]."""
    whole = whole_model_layout(s, m, g)
    return whole.blocks_per_request(s.max_model_len, max_num_batched_tokens=s.max_num_batched_tokens) * whole.block_bytes


CONCURRENCY_TOKENS_SINCE = (0, 20, 1)
"""The first vLLM release printing "GPU KV cache size" as int(concurrency · L): 0.20.0 still printed ⌊blocks / groups⌋
· block_size (RedHatAI/Qwen3.6-35B-A3B-NVFP4's log, tests/data/vllm_logs/redhat-qwen3.6-35b-a3b-nvfp4-v0.20.0.log:
⌊4,123 / 4⌋ · 2,096 = 2,158,880 tokens beside 108.50x at 65,536), the 0.20.2 wheel the new form (reference/vllm_kv.md
§5, after vllm#40691); 0.20.1, seen in no log, is read as 0.20.2."""


def prints_concurrency_tokens(version: tuple[int, ...] | None) -> bool:
    """Whether this vLLM release prints its KV cache size as int(concurrency · L) (None: the newest release)."""
    return version is None or version >= CONCURRENCY_TOKENS_SINCE


def printed_kv_tokens(s: Scenario, blocks: int, block_size: int, groups: int, concurrency: float) -> int:
    """The "GPU KV cache size: N tokens" a vLLM release prints (reference/vllm_kv.md §5): int(concurrency · L) after
    0.20.0 ('latest' included, CONCURRENCY_TOKENS_SINCE); before, num_blocks · block_size, and for a hybrid model's several KV groups ⌊num_blocks / groups⌋ · block_size (Qwen3-Next on two H200s, vLLM 0.10.2:
    ⌊7,162 / 4⌋ · 544 = 973,760, tests/data/vllm_logs/h200x2-qwen3-next-80b-tp2-defaults.log); with decode
    context parallelism those releases print it × dcp ("Multiplying the GPU KV cache size by the dcp_world_size").
    SGLang: num_blocks · block_size, its max_total_num_tokens ("KV Cache is allocated. #tokens"; the full layers'
    pool where it splits off an SWA pool, calc.sglang_swa)."""
    if s.engine == "sglang":
        return blocks * block_size
    if prints_concurrency_tokens(version_tuple(s.engine_version)):
        return int(concurrency * s.max_model_len)
    return (blocks // groups if groups > 1 else blocks) * block_size * s.decode_context_parallel_size


def size_pool(s: Scenario, m: ModelSpec, g: GPUSpec) -> PoolResult:
    tp, pp = s.tensor_parallel_size, s.pipeline_parallel_size
    target = m  # what a step reads; the memory below has a speculative draft's layers too (calc.speculative)
    m = drafted(s, m)
    params = m.params
    fmt = served_format(weight_format(m, s.dtype), s.dtype, g.arch)
    kv_elem = kv_bytes_per_element(s)
    sglang = s.engine == "sglang"
    total = E(g.memory_bytes, "total", unit="GiB")
    stage_weights = weights_bytes_per_stage(target, target.params, fmt, tp=tp, pp=pp, dp=s.data_parallel_size)
    stage_weights[-1] += draft_weight_bytes(s, target, m, fmt)
    if s.weights_memory_bytes is not None:
        stage_weights = [s.weights_memory_bytes] * pp
    act = s.activation_memory_bytes
    if act is None:
        act = activation_peak_bytes(m, max_num_batched_tokens=s.max_num_batched_tokens, max_num_seqs=s.max_num_seqs,
                                    tp=tp, max_model_len=s.max_model_len)  # fmt: skip
    non_torch = s.non_torch_memory_bytes
    if non_torch is None:
        non_torch = non_torch_bytes(gpus_per_replica=s.gpus_per_replica // s.data_parallel_size * linked_ranks(s, m),
                                    engine=s.engine)  # fmt: skip
    if sglang:  # its fraction applies to what is free before loading (SGLANG_PRELOAD_BYTES)
        requested = (total - E(non_torch, "in use before loading", unit="GiB")) * E(s.gpu_memory_utilization,
                                                                                     "mem_fraction_static")  # fmt: skip
    else:
        requested = total * E(s.gpu_memory_utilization, "gpu_memory_utilization")
    graphs = s.cudagraph_memory_bytes
    if graphs is None:
        graphs = cudagraph_bytes(tp=tp, enforce_eager=s.enforce_eager)
    subtract_graphs = graphs_subtracted(s)

    # Per stage: available memory and blocks; the scheduler uses the minimum (vllm_kv.md §4.3).
    stages = []
    ranges = pp_layer_ranges(m.num_hidden_layers, pp)
    for layout, w, layers in zip(stage_layouts(s, m, g), stage_weights, ranges, strict=True):
        if s.kv_cache_memory_bytes is not None:
            avail = E(s.kv_cache_memory_bytes, "kv_cache_memory_bytes", unit="GiB")
        else:
            avail = requested - E(w, "weights", unit="GiB")
            if not sglang:  # SGLang's activations and graphs come out of what its fraction leaves
                avail = avail - E(act, "activation peak", unit="GiB") - E(non_torch, "non-torch", unit="GiB")
            if subtract_graphs:
                avail = avail - E(graphs, "CUDA graphs", unit="GiB")
        slots, state = 0, 0.0
        if sglang and layout.attention_bytes_per_token and s.kv_cache_memory_bytes is None:
            state = sglang_state_bytes(m, tp=tp, layers=layers)  # its own pool, carved first (calc.sglang_hybrid)
            slots, _ = state_split(avail.value, state)
            if slots:
                avail = avail - E(slots, "state slots") * E(state, "state a request", unit="GiB")
        stages.append((blocks_from_bytes(avail.value, layout.block_bytes), avail, w, layout, slots,
                       slots * state if slots else 0.0, state))  # fmt: skip
    blocks, avail, w, layout, slots, state_pool, _ = min(stages, key=lambda t: t[0])
    running_slots = min((t[4] for t in stages if t[6] > 0), default=0)
    mnbt = s.max_num_batched_tokens

    def need(tokens: int) -> int:
        return layout.blocks_per_request(tokens, max_num_batched_tokens=mnbt)

    per_max_len = need(s.max_model_len)
    concurrency = blocks / per_max_len if per_max_len else 0.0
    busiest = max(pp_layer_ranges(m.num_hidden_layers, pp), key=lambda r: m.plan.cached_attention(r) + m.plan.state(r))
    kv_all = kv_bytes_per_token_expr(m, None, kv_bytes_per_element=kv_elem)
    kv_gpu = kv_bytes_per_token_expr(m, busiest, kv_bytes_per_element=kv_elem, tp=tp)
    if s.decode_context_parallel_size > 1:  # a token is kept by one GPU of each DCP group
        kv_gpu = kv_gpu / E(s.decode_context_parallel_size, "decode_context_parallel_size")
    block_e = _block_expr(layout)
    blocks_e = efloor(avail.named("available", "GiB") / block_e)
    if blocks_e.value < 0:  # the weights overrun the memory: no pool, as the blocks the headline counts
        blocks_e = emax0(blocks_e)
    conc_e = E(blocks, "num_gpu_blocks") / E(per_max_len, f"blocks per {s.max_model_len:,}-token request")
    return PoolResult(
        params=target.params,
        weight_format=fmt,
        weights_bytes=weights_bytes(params, fmt),
        total_memory_bytes=total.value,
        requested_memory_bytes=requested.value,
        weights_bytes_per_gpu=w,
        activation_bytes=act,
        non_torch_bytes=non_torch,
        cudagraph_bytes=graphs,
        cudagraph_subtracted=subtract_graphs,
        kv_cache_memory_bytes=avail.value,
        kv_cache_memory_from_flag=s.kv_cache_memory_bytes is not None,
        kv_bytes_per_element=kv_elem,
        kv_bytes_per_token=kv_all.value,
        kv_bytes_per_token_per_gpu=kv_gpu.value,
        state_bytes_per_request=layout.state_bytes_per_request,
        block_size=layout.block_size,
        block_size_note=layout.block_size_note,
        page_bytes=layout.page_bytes,
        layers_per_group=layout.layers_per_group,
        kv_groups=len(layout.groups),
        padding_layers=layout.padding_layers,
        num_gpu_blocks=blocks,
        blocks_per_max_len_request=per_max_len,
        max_concurrency=concurrency,
        kv_cache_tokens=printed_kv_tokens(s, blocks, layout.block_size, len(layout.groups), concurrency),
        pool_token_capacity=blocks * layout.block_size,
        estimated_max_model_len=largest_true(lambda n: need(n) <= blocks, 1, max(s.max_model_len, 1) * 64),
        stage_blocks=tuple(t[0] for t in stages),
        state_slots=slots,
        state_pool_bytes=state_pool,
        running_slots=running_slots,
        layout=layout,
        max_num_batched_tokens=mnbt,
        whole_model_request_bytes=_whole_model_request_bytes(s, m, g) if pp > 1 else 0.0,
        encoder_profile=encoder_profile(m, max_num_batched_tokens=mnbt, max_model_len=s.max_model_len),
        dtype_refusal=checkpoint_refusal(s.dtype, target, g.arch, s.engine)
        or kv_dtype_refusal(s.kv_cache_dtype, m, g, s.engine, s.engine_version) or spec_refusal(s, target),
        formulas={"kv_bytes_per_token": kv_all, "kv_bytes_per_token_per_gpu": kv_gpu, "kv_cache_memory_bytes": avail,
                  "num_gpu_blocks": blocks_e, "max_concurrency": conc_e},  # fmt: skip
    )


def _block_expr(layout: StageLayout) -> E:
    """Bytes one block id takes on this GPU, as a formula."""
    lpg = E(layout.layers_per_group, "layers per group")
    if layout.page_bytes * layout.layers_per_group != layout.block_bytes:  # one group of unequal pages
        return E(layout.block_size, "block_size") * E(layout.block_bytes / layout.block_size, "bytes/token (stage)")
    if layout.attention_bytes_per_token:
        per_token = E(layout.page_bytes / layout.block_size, "bytes/token/layer")
        return E(layout.block_size, "block_size") * per_token * lpg
    return E(layout.page_bytes, "state page") * lpg
