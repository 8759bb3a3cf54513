"""An inference engine's costs that no datasheet states: fixed costs per step, per layer and per request, and how well
its kernels use what the GPU achieves. One YAML file per engine in engine_specs/ (file stem = the `engine` field of
a Scenario), fitted by scripts/calibrate.py on the calibration part of tests/data/benchmarks/ and dated there."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Seconds = Annotated[float, Field(ge=0, le=1.0)]
Share = Annotated[float, Field(gt=0, le=1.5)]


class EngineSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)

    name: str = Field(min_length=1, max_length=60)
    scheduling: Literal["decode-first", "prefill-first"]
    """vLLM V1 mixes prefill chunks into decode steps; SGLang runs a pending prefill before decoding."""
    overlap_schedule: bool = False
    """The scheduler launches the next step before reading the last one's tokens (SGLang's default since 0.4,
    `--disable-overlap-schedule` turns it off; vLLM's `--async-scheduling`): a finished request rides one more step."""
    step_overhead_s: Seconds
    """Per engine step, whatever its size: scheduling, input preparation, sampling launch (CUDA graphs on)."""
    layer_overhead_s: Seconds
    """Per transformer block (StepModel.blocks) per step with CUDA graphs: kernel boundaries that move no bytes."""
    layer_overhead_eager_s: Seconds
    """The same without CUDA graphs (enforce_eager): a launch per kernel."""
    cudagraph_max_tokens: Annotated[int, Field(ge=0, le=65536)]
    """Largest step (tokens) that replays a captured CUDA graph; bigger steps launch kernel by kernel (vLLM's
    max_cudagraph_capture_size, 512 by default; SGLang's cuda_graph_max_bs, 256 on 80–160 GiB parts)."""
    shared_expert_layer_s: Seconds = 0.0
    """Per step, per MoE layer that also runs shared experts, with CUDA graphs (× the eager ratio without): their
    own GEMMs and activation, and the sigmoid grouped top-k gate of the DeepSeek-V3 family, kernels a MoE layer
    without them does not launch (0: a spec fitted before the term)."""
    per_sequence_s: Seconds
    """Per running sequence per step: sampling, detokenisation, output streaming."""
    stream_token_s: Annotated[float, Field(ge=0, le=1e-2)]
    """Per decoding sequence per step when serving over HTTP: the output's way to the client (detokenise, SSE).
    Offline runs (`vllm bench latency`) do not pay it."""
    request_overhead_s: Seconds
    """Per request, on its TTFT: HTTP, scheduling it in — served one request at a time."""
    chat_request_s: Seconds = 0.0
    """Added to request_overhead_s on the chat endpoint (`--endpoint-type openai-chat`): rendering the chat
    template and the message objects, in the same one-at-a-time front end."""
    request_token_s: Annotated[float, Field(ge=0, le=1e-3)]
    """Per prompt token, added to the request's front-end time (tokenisation), one request at a time."""
    chat_serial_s: Annotated[float, Field(ge=0, le=1.0)] = 0.0
    """Per chat request, the front end's own CPU time (rendering the chat template, the message and response
    objects), one request at a time: a burst of chat requests queues there, and one API server process serves at
    most 1 / this many a second. Part of the request's front-end time too."""
    gemm_half_tokens: Annotated[float, Field(gt=0, le=65536)]
    """Tokens per step at which weight GEMMs reach half their achievable throughput (tile occupancy)."""
    gemm_compute_share: Share
    """Share of the achievable matmul throughput a whole forward pass's GEMMs reach (norms, activations, rotary
    and kernel tails between them)."""
    attention_bandwidth_share: Share
    """Share of the achievable bandwidth the attention kernels reach on KV reads."""
    attention_compute_share: Share
    """Share of the achievable matmul throughput prefill attention reaches."""
    fp8_weight_share: Share
    """Share of the achievable bandwidth fp8 weight GEMMs reach (dequant and scale work), relative to 16-bit."""
    int4_weight_share: Share
    """The same for 4-bit weight-only kernels (AWQ/GPTQ Marlin, MXFP4)."""
    int8_weight_share: Share
    moe_weight_share: Share
    """Share of the achievable bandwidth the fused-MoE kernels reach on expert weights."""
    moe_compute_share: Share = 1.0
    """Share of the dense GEMMs' matmul throughput the fused-MoE kernels reach on the routed experts' FLOPs (their
    grouped GEMMs gather and scatter tokens per expert); 1: as fast as a dense GEMM of the same tokens per expert."""
    fp8_moe_compute_share: Share = 1.0
    """Where the routed experts run on FP8 tensor cores (FP8 checkpoints on Hopper and later), the further share of
    that rate their block-scaled grouped GEMMs reach (w8a8 fused-MoE kernels), of the FP8 peak the dense ones use."""
    routing_exponent: Annotated[float, Field(gt=0, le=1)] = 1.0
    """The n tokens of one step pick experts like n^x independent draws: real routers favour some experts, so a
    batch touches fewer distinct ones than uniform routing, E · (1 − (1 − k/E)^n). 1: uniform. One token still
    reads its k experts and many tokens still reach all E."""
    prefill_routing_exponent: Annotated[float, Field(gt=0, le=1)] = 1.0
    """The m tokens of one prompt prefilled in a step count as m^y of those draws: consecutive tokens of one text
    favour the same experts more than different requests do, so a short prompt reads far fewer than all E (a
    128-token prompt of Qwen3-30B-A3B on one H100 PCIe gets its first token sooner than reading all 128 experts a
    layer takes). 1: a prompt's tokens route like independent requests'."""
    default_max_num_batched_tokens: Annotated[int, Field(gt=0, le=1_000_000)]
    version: str = Field(min_length=1, max_length=40)
    """Engine releases the constants describe."""
    source: str = Field(min_length=8)
