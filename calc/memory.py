"""vLLM's KV-cache sizing, per GPU, as the current V1 engine does it (reference/vllm_kv.md §0, §3.1, §4, §5).

    requested  = total memory · gpu_memory_utilization
    available  = requested − weights − activation peak − non-torch [− CUDA-graph estimate]   ("Available KV cache memory")
    num_blocks = floor(available / page / layers_per_group), min over pipeline stages          (page = block_size · bytes/token/layer)
    max_concurrency = num_blocks / blocks one max_model_len request needs                      ("Maximum concurrency for L tokens")
    kv_cache_tokens = int(max_concurrency · max_model_len)                                      ("GPU KV cache size", vLLM ≥ 0.20)

Seed report (Qwen2.5-7B, RTX 4090): 6.41 GiB available → 7,504 blocks of 16 → 120,064 tokens, 14.66x at 8,192.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.kv_cache import (
    StageLayout,
    blocks_per_request,
    kv_bytes_per_token,
    kv_bytes_per_token_per_layer,
    pp_layer_ranges,
    stage_layout,
)
from calc.overheads import activation_peak_bytes, cudagraph_bytes, non_torch_bytes
from calc.params import ParamCounts, count_params
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec
from calc.units import DTYPE_BYTES
from calc.weights import WeightFormat, weight_format, weights_bytes, weights_bytes_per_stage


@dataclass(frozen=True)
class MemoryResult:
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
    """All layers, one token, before tensor parallelism (upper bound for sliding-window layers)."""
    kv_bytes_per_token_per_gpu: float
    """The busiest stage's layers, after the tensor-parallel head split."""
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
    layout: StageLayout
    """The layer grouping of the stage with the fewest blocks (the one the scheduler is bound by)."""
    max_num_batched_tokens: int

    def blocks_per_request(self, tokens: int) -> int:
        """Blocks one request of `tokens` tokens takes from this pool (sliding groups cap at the window)."""
        return blocks_per_request(
            self.layout, tokens, block_size=self.block_size, max_num_batched_tokens=self.max_num_batched_tokens
        )

    @property
    def headroom_bytes(self) -> float:
        """Memory the engine leaves unused on each GPU: total · (1 − utilization)."""
        return self.total_memory_bytes - self.requested_memory_bytes


def effective_block_size(s: Scenario, m: ModelSpec, g: GPUSpec) -> tuple[int, str]:
    """MLA attention backends force their own block size (vllm_kv.md §2)."""
    if m.is_mla and g.arch == "hopper":
        return 64, "FlashMLA forces 64-token blocks on Hopper"
    if m.is_mla and g.arch == "blackwell":
        return 128, "CUTLASS MLA forces 128-token blocks on Blackwell"
    return s.block_size, ""


def tp_check(s: Scenario, m: ModelSpec) -> str | None:
    """vLLM's divisibility rules for tensor parallelism; None when they hold."""
    tp = s.tensor_parallel_size
    if m.num_attention_heads % tp:
        return f"num_attention_heads ({m.num_attention_heads}) must be divisible by tensor_parallel_size ({tp})"
    if not m.is_mla:
        kv = m.kv_heads
        if (tp >= kv and tp % kv) or (tp < kv and kv % tp):
            return f"num_key_value_heads ({kv}) and tensor_parallel_size ({tp}) must divide one another"
    if s.pipeline_parallel_size > m.num_hidden_layers:
        return f"pipeline_parallel_size ({s.pipeline_parallel_size}) exceeds num_hidden_layers ({m.num_hidden_layers})"
    return None


def size_pool(s: Scenario, m: ModelSpec, g: GPUSpec) -> MemoryResult:
    tp, pp = s.tensor_parallel_size, s.pipeline_parallel_size
    params = count_params(m)
    fmt = weight_format(m, s.dtype)
    kv_elem = DTYPE_BYTES["fp8"] if s.kv_cache_dtype == "fp8" else DTYPE_BYTES["bf16"]
    block, block_note = effective_block_size(s, m, g)
    per_layer = kv_bytes_per_token_per_layer(m, kv_bytes_per_element=kv_elem, tp=tp)
    page = block * per_layer

    total = g.memory_bytes
    requested = total * s.gpu_memory_utilization
    stage_weights = weights_bytes_per_stage(m, params, fmt, tp=tp, pp=pp)
    if s.weights_memory_bytes is not None:
        stage_weights = [s.weights_memory_bytes] * pp
    act = s.activation_memory_bytes
    if act is None:
        act = activation_peak_bytes(
            m, max_num_batched_tokens=s.max_num_batched_tokens, max_num_seqs=s.max_num_seqs, tp=tp
        )
    non_torch = s.non_torch_memory_bytes
    if non_torch is None:
        non_torch = non_torch_bytes(gpus_per_replica=s.gpus_per_replica)
    graphs = s.cudagraph_memory_bytes
    if graphs is None:
        graphs = cudagraph_bytes(tp=tp, enforce_eager=s.enforce_eager)
    subtract_graphs = s.estimate_cudagraphs and not s.enforce_eager

    # Per stage: available memory and blocks; the scheduler uses the minimum (vllm_kv.md §4.3).
    best = None
    for layers, w in zip(pp_layer_ranges(m.num_hidden_layers, pp), stage_weights, strict=True):
        layout = stage_layout(m, layers)
        if s.kv_cache_memory_bytes is not None:
            avail = s.kv_cache_memory_bytes
        else:
            avail = requested - w - act - non_torch - (graphs if subtract_graphs else 0.0)
        blocks = max(0, int(avail // page // layout.layers_per_group)) if avail > 0 else 0
        if best is None or blocks < best[0]:
            best = (blocks, avail, w, layout)
    blocks, avail, w, layout = best  # type: ignore[misc]

    def need(tokens: int) -> int:
        return blocks_per_request(layout, tokens, block_size=block, max_num_batched_tokens=s.max_num_batched_tokens)

    per_max_len = need(s.max_model_len)
    concurrency = blocks / per_max_len
    busiest = max(len(r) for r in pp_layer_ranges(m.num_hidden_layers, pp))
    return MemoryResult(
        params=params,
        weight_format=fmt,
        weights_bytes=weights_bytes(params, fmt),
        total_memory_bytes=total,
        requested_memory_bytes=requested,
        weights_bytes_per_gpu=w,
        activation_bytes=act,
        non_torch_bytes=non_torch,
        cudagraph_bytes=graphs,
        cudagraph_subtracted=subtract_graphs,
        kv_cache_memory_bytes=avail,
        kv_cache_memory_from_flag=s.kv_cache_memory_bytes is not None,
        kv_bytes_per_element=kv_elem,
        kv_bytes_per_token=kv_bytes_per_token(m, kv_bytes_per_element=kv_elem),
        kv_bytes_per_token_per_gpu=busiest * per_layer,
        block_size=block,
        block_size_note=block_note,
        page_bytes=page,
        layers_per_group=layout.layers_per_group,
        kv_groups=len(layout.groups),
        padding_layers=layout.padding_layers,
        num_gpu_blocks=blocks,
        blocks_per_max_len_request=per_max_len,
        max_concurrency=concurrency,
        kv_cache_tokens=int(concurrency * s.max_model_len),
        pool_token_capacity=blocks * block,
        estimated_max_model_len=longest_fitting(need, blocks, upper=max(s.max_model_len, 1) * 64),
        layout=layout,
        max_num_batched_tokens=s.max_num_batched_tokens,
    )


def longest_fitting(need, blocks: int, *, upper: int) -> int:
    """Largest L with need(L) ≤ blocks, by bisection (need is non-decreasing in L); 0 if not even one token."""
    if need(1) > blocks:
        return 0
    lo, hi = 1, upper
    if need(hi) <= blocks:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if need(mid) <= blocks else (lo, mid)
    return lo
