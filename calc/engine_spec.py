"""An inference engine's costs that no datasheet states: fixed costs per step, per layer and per request, and how well
its kernels use what the GPU achieves. One YAML file per engine in engine_specs/ (file stem = the `engine` field of
a Scenario), fitted by scripts/calibrate.py on the calibration part of tests/data/benchmarks/ and dated there.

An engine's fixed costs move between its releases (vLLM turned asynchronous scheduling on by default; SGLang cut its
per-step CPU work), so a spec holds the costs of its oldest supported releases and, in `releases`, those of later
ones; `EngineSpec.at(version)` is the spec of the release a Scenario's `engine_version` names."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

Seconds = Annotated[float, Field(ge=0, le=1.0)]
Share = Annotated[float, Field(gt=0, le=1.5)]
VERSION = re.compile(r"(latest|nightly|\d{1,3}(\.\d{1,4}){0,3}([.+-]?[a-z][a-z0-9.+-]{0,30})?)")


def _check_version(text: str) -> str:
    if not VERSION.fullmatch(text):
        raise ValueError("an engine version as the engine prints it (0.11.0, 0.5.6.post2, 0.12.0rc1), or 'latest'")
    return text


Version = Annotated[str, Field(min_length=1, max_length=40), AfterValidator(_check_version)]
"""An engine version as people write it: 'latest', 'nightly' (the same), '0.11', '0.11.0', '0.5.6.post2', '0.12.0rc1'."""


def version_tuple(version: str) -> tuple[int, ...] | None:
    """'0.5.6.post2' → (0, 5, 6); 'latest' and 'nightly' → None (the newest release)."""
    head = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(x) for x in head.group(0).split(".")) if head else None


class Release(BaseModel):
    """The fixed costs of an engine's later releases, where they differ from its spec's (None: the same)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)

    since: Version
    """The first release these costs describe; they hold until the next entry's `since`."""
    version: str = Field(min_length=1, max_length=40)
    """The releases, as the page names them ('0.14 and later')."""
    overlap_schedule: bool | None = None
    step_overhead_s: Seconds | None = None
    layer_overhead_s: Seconds | None = None
    layer_overhead_eager_s: Seconds | None = None
    shared_expert_layer_s: Seconds | None = None
    per_sequence_s: Seconds | None = None
    stream_token_s: Annotated[float, Field(ge=0, le=1e-2)] | None = None
    request_overhead_s: Seconds | None = None
    chat_request_s: Seconds | None = None
    request_token_s: Annotated[float, Field(ge=0, le=1e-3)] | None = None
    chat_serial_s: Annotated[float, Field(ge=0, le=1.0)] | None = None
    moe_weight_share: Share | None = None
    """The fused-MoE kernels' share of the achievable bandwidth on expert weights, where the release's own differ."""
    fitted_concurrency: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    """The most requests in flight among the runs these costs were fitted on: past it they are an extrapolation
    (asynchronous scheduling hides a step's CPU work only while the GPU's takes longer)."""
    source: str = Field(min_length=8)


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
    rocm_fp8_moe_layer_s: Seconds = 0.0
    """Per step, per MoE layer whose routed experts run FP8 GEMMs on a CDNA3 GPU (MI300X, MI325X): the FP8 fused-MoE
    path's own kernel time there (activation quantisation, block-scaled grouped GEMMs) beyond what bytes and FLOPs
    carry; kernel time, so not × the eager ratio. Measured, not fitted (docs/calibration-history.md (22)); 0: none."""
    qk_l2norm_compile_s: Seconds = 0.0
    """A prompt step of a model with gated-DeltaNet or KDA layers whose prompt-token count the server has not run
    before: the Triton compile of the q/k L2-norm kernel, which specialises on that count, inline on the step
    (releases before `qk_l2norm_fixed_in`; docs/calibration-history.md (18)). 0: the engine's kernel does not."""
    qk_l2norm_fixed_in: Version | None = None
    """The first release whose L2-norm kernel takes the token count at run time (no compile per new count)."""
    per_sequence_s: Seconds
    """Per running sequence per step: sampling, detokenisation, output streaming."""
    stream_token_s: Annotated[float, Field(ge=0, le=1e-2)]
    """Per decoding sequence per step when serving over HTTP: the output's way to the client (detokenise, SSE).
    Offline runs (`vllm bench latency`) do not pay it."""
    chat_stream_token_s: Annotated[float, Field(ge=0, le=1e-2)] = 0.0
    """Added to stream_token_s for a request on the chat endpoint (`--endpoint-type openai-chat`): each streamed
    token a chat-completion chunk (delta, role, model), rendered by the API server one request at a time."""
    request_overhead_s: Seconds
    """Per request, on its TTFT: HTTP, scheduling it in — served one request at a time."""
    idle_launch_s: Seconds = 0.0
    """Under the overlap schedule, a prompt step that starts with no step in flight: the scheduler reads the request
    and forms and launches its batch with the GPU idle (the first request, one sent while a finished request's
    extra step ran, an arrival at an idle server); under load that CPU work runs while the GPU runs the step in
    flight. 0: not carried (docs/calibration-history.md (20))."""
    chat_request_s: Seconds = 0.0
    """Added to request_overhead_s on the chat endpoint (`--endpoint-type openai-chat`): rendering the chat
    template and the message objects, in the same one-at-a-time front end."""
    request_token_s: Annotated[float, Field(ge=0, le=1e-3)]
    """Per prompt token, added to the request's front-end time (tokenisation), one request at a time."""
    chat_serial_s: Annotated[float, Field(ge=0, le=1.0)] = 0.0
    """Per chat request, the front end's own CPU time (rendering the chat template, the message and response
    objects), one request at a time: a burst of chat requests queues there, and one API server process serves at
    most 1 / this many a second. Part of the request's front-end time too."""
    harmony_serial_s: Annotated[float, Field(ge=0, le=1.0)] = 0.0
    """The same for a model whose chat format the compiled openai_harmony library renders (gpt-oss), in place of
    chat_serial_s: no Jinja template, but the message and response objects all the same. Measured, not fitted:
    the fastest burst of harmony chat requests published, 1 / that rate less request_token_s per prompt token
    (engine_specs/*.yaml `source`)."""
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
    int4_moe_weight_share: Share
    """The same for routed experts stored at 4 bits (AWQ / GPTQ through the fused Marlin MoE kernels, MXFP4), in
    place of int4_weight_share × moe_weight_share: each engine ships its own 4-bit MoE kernels, which no dense
    4-bit GEMM or 16-bit fused-MoE measurement describes."""
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
    routing_skew: Annotated[float, Field(ge=0, le=3)] = 0.0
    """How strongly a router favours some experts: expert i (by popularity) is visited by one token with chance
    q_i ∝ i^−s, Σ q_i = k, so a batch of requests saturates its experts sooner than uniform draws (calc.routing).
    0: uniform routing."""
    pcie_allreduce_latency_s: Annotated[float, Field(ge=0, le=1e-3)] = 0.0
    """One tensor-parallel all-reduce of a pair of GPUs whose traffic crosses PCIe (no NVLink between them), from
    a CUDA graph: vLLM's custom all-reduce runs on two PCIe GPUs (it refuses more). Larger PCIe groups keep the
    GPU spec's NCCL latency. 0: a spec fitted before the term (the GPU spec's latency then)."""
    pcie_allreduce_gb_per_s: Annotated[float, Field(ge=0, le=1000)] = 0.0
    """The rate, GB/s of bus bytes, at which such an all-reduce moves a message up to pcie_allreduce_small_bytes:
    a kernel reading its peer's buffer across the bus (~12 GB/s to 128 KiB, vllm-project/vllm#54766), far below
    the link's nominal rate, which larger messages reach. 0: the link's rate for every size."""
    pcie_allreduce_small_bytes: Annotated[float, Field(ge=0, le=1 << 30)] = float(1 << 20)
    """Where the slow rate ends: 1 MiB, where the engines hand PCIe all-reduces to copy engines or NCCL's ring
    (vllm-project/vllm#54766; sgl-project/sglang#39605's host-staged path from 1 MiB)."""
    default_max_num_batched_tokens: Annotated[int, Field(gt=0, le=1_000_000)]
    version: str = Field(min_length=1, max_length=40)
    """Engine releases the constants describe."""
    since: Version = "0"
    """The oldest release they describe: an older `engine_version` is refused (its costs were never measured)."""
    releases: tuple[Release, ...] = ()
    """Later releases' fixed costs, oldest first."""
    newest_measured: Version | None = None
    """The newest numbered release among the published runs (tests/data/benchmarks): a later engine_version is
    planned with the latest release's costs, which the plan says (a typo or another engine's numbering reads alike)."""
    fitted_concurrency: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    """Release.fitted_concurrency, on the spec of that release (EngineSpec.at); None: no stated limit."""
    source: str = Field(min_length=8)

    @model_validator(mode="after")
    def _releases_in_order(self) -> Self:
        seen = [version_tuple(self.since)] + [version_tuple(r.since) for r in self.releases]
        if any(v is None for v in seen) or any(a >= b for a, b in zip(seen, seen[1:], strict=False)):
            raise ValueError("releases: each `since` a version number, after the spec's own `since` and in order")
        return self

    def versions(self) -> list[str]:
        """The release ranges this spec describes, oldest first, as the page names them."""
        return [self.version, *(r.version for r in self.releases)]

    def at(self, version: str = "latest") -> EngineSpec:
        """The spec of the release `version` names (ValueError below `since`): the later release's fixed costs in
        place of the spec's, its `version` and `source`, and no further releases."""
        v = version_tuple(version)
        if v is not None and v < version_tuple(self.since):
            raise ValueError(f"{self.name} {version} is older than the releases whose costs were measured "
                             f"({', '.join(self.versions())}); name one of those, or 'latest'")  # fmt: skip
        chosen = [r for r in self.releases if v is None or version_tuple(r.since) <= v]
        if not chosen:
            return self.model_copy(update={"releases": ()}) if self.releases else self
        r = chosen[-1]
        costs = {k: val for k, val in r.model_dump(exclude={"since", "version", "source"}).items() if val is not None}
        return self.model_copy(update={**costs, "version": r.version, "since": r.since, "source": r.source,
                                       "releases": ()})  # fmt: skip

    def before(self, since: str) -> EngineSpec:
        """The spec of the releases just before the one starting at `since` (itself for its oldest)."""
        starts = [self.since, *(r.since for r in self.releases)]
        return self.at(starts[max(0, starts.index(since) - 1)])

    @property
    def label(self) -> str:
        """The engine and the releases its constants describe, as the page names them: 'vLLM 0.14 and later'."""
        return f"{self.name} {self.version}"
