"""Notes on the latency figures (calc.evaluate's speed section): where the step-time model assumes a link, a GPU
starved of compute, kernels it cannot see, a cost fitted on another release or on other sizes of model and of load."""

from __future__ import annotations

from calc.accuracy import BANDED_RIDGE_FLOP_PER_BYTE, low_ridge
from calc.catalog import Catalog
from calc.latency import latency
from calc.pool import linked_ranks
from calc.resolve import beyond_fitted
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec


def ridge_note(gpu: GPUSpec) -> str | None:
    """What a compute-starved part does to the speed estimates: prompt steps several times an H100's and decode steps
    on the compute side of its ridge, where the error bands were measured on parts that stay bandwidth-bound far
    longer (calc.accuracy.low_ridge)."""
    ridge = low_ridge(gpu)
    if ridge is None:
        return None
    return (f"{gpu.name}: {gpu.peak_16bit_tflop_per_s:,.0f} dense 16-bit TFLOP/s against "
            f"{gpu.memory_bandwidth_gb_per_s:,.0f} GB/s, a ridge of {ridge:.0f} FLOP a byte (an H100 SXM: 295). The "
            "estimates put its prompt steps and even small decode batches on the compute side (the GEMMs' efficiency "
            "at few tokens was fitted on GPUs whose weight reads hide it), and the held-out error bands come from "
            f"GPUs whose ridge is {BANDED_RIDGE_FLOP_PER_BYTE} FLOP a byte or more, so none is shown: the speed figures extrapolate, in either "
            "direction. Size with a measured run (measured_itl_s) before buying")  # fmt: skip


def unbridged(gpu: GPUSpec) -> GPUSpec:
    """The same cards installed without their NVLink bridge: every all-reduce crosses PCIe."""
    return gpu.model_copy(update={"scaleup_link_gb_per_s": gpu.host_link_gb_per_s, "scaleup_link_gpus": None})


def bridge_assumed(s: Scenario, gpu: GPUSpec) -> bool:
    """The plan's all-reduces run over an NVLink bridge that cards of this part are often installed without."""
    return gpu.scaleup_link_gpus is not None and 1 < s.tensor_parallel_size <= gpu.scaleup_link_gpus


def link_note(s: Scenario, gpu: GPUSpec, tpot_s: float | None = None, unbridged_tpot_s: float | None = None) -> str | None:
    """What a bridged PCIe part's tensor-parallel all-reduces assume (specs with scaleup_link_gpus: a bridge joins
    two or four cards), and what the TPOT would be without the bridge. Clouds often install such cards without one:
    Massed Compute sells bridged H200 NVL servers as SKUs of their own (`gpu_4x_h200_nvl_nvlink`:
    tests/data/benchmarks/INDEX.md)."""
    n, tp = gpu.scaleup_link_gpus, s.tensor_parallel_size
    if n is None or tp == 1:
        return None
    if not bridge_assumed(s, gpu):  # the spec's own rule: past the bridge, PCIe
        return (f"tensor_parallel_size {tp} spans more cards than one NVLink bridge joins ({n}): the all-reduces' ring "
                f"crosses PCIe, {gpu.host_link_gb_per_s:g} GB/s a direction")  # fmt: skip
    cost = (f" (TPOT {unbridged_tpot_s * 1e3:,.1f} ms instead of {tpot_s * 1e3:,.1f} ms here)"
            if tpot_s and unbridged_tpot_s else "")  # fmt: skip
    return (f"the all-reduces assume NVLink-bridged cards ({gpu.scaleup_link_gb_per_s:g} GB/s a direction, up to {n} "
            f"cards a bridge); without a bridge they cross PCIe{cost}: set scaleup_link_gb_per_s to "
            f"{gpu.host_link_gb_per_s:g} to plan for that")  # fmt: skip


def rocm_fp8_moe_note(s: Scenario, gpu: GPUSpec, step) -> str | None:
    """FP8 routed experts on AMD Instinct (CDNA3) under SGLang: the step carries their kernels' own time
    (StepModel.fp8_moe_s, measured on the published SGLang 0.5.7 runs at one request; history, 2026-12-05 (22)); the
    note says what it is, how close the 0.5.7 runs come with it, and that an older release was slower still and grew
    with the load: SGLang 0.4.2 serving DeepSeek-R1 on eight MI300X (dstack-deepseek-r1-mi300x-h200.yaml; history (6))."""
    if gpu.arch != "cdna3" or s.engine != "sglang" or not step.fp8_moe_s:
        return None
    layer_ms = step.fp8_moe_s / max(1, step.moe_layers) * 1e3
    return (f"FP8 experts on AMD Instinct under SGLang: the step carries {step.fp8_moe_s * 1e3:,.1f} ms of their "
            f"kernels' own time ({layer_ms:.3f} ms a MoE layer, measured on SGLang 0.5.7's DeepSeek-V3.1 at TP 8 with "
            "one request in flight, which decoded 2.1–2.8× slower than bytes and FLOPs alone plan); with it the "
            "published 0.5.7 runs (MiniMax-M2 at TP 4, DeepSeek-V3.1 at TP 8) decode at 0.8–1.2× the plan at 1–100 "
            "in flight. SGLang 0.4.2 (DeepSeek-R1 at TP 8) was 1.2–1.6× slower than this at 4–128 and its first "
            "tokens 2.2–3.4× later (tests/data/benchmarks/sglang-cookbook-…-mi300x.yaml, "
            "dstack-deepseek-r1-mi300x-h200.yaml)")


def compile_note(s: Scenario, engine, lat) -> str | None:
    """Where a prompt step pays a kernel compile (calc.step_inputs.compile_s): what it is, what it costs, who avoids it."""
    if not lat.step.compile_s:
        return None
    return (f"{engine.name} {s.engine_version} compiles the Triton kernel that normalises q and k in the model's "
            f"gated-DeltaNet / KDA layers for each prompt-token count it has not run before, inline: "
            f"{lat.step.compile_s * 1e3:,.0f} ms on such a prompt step (history, 2026-12-05 (18)). The estimates add "
            "it to every prompt step (varied lengths on a fresh server), the simulated benchmark to each new count; "
            f"a server warmed on every count, or {engine.name} {engine.qk_l2norm_fixed_in} and later, does not pay it")


def speed_notes(s: Scenario, model: ModelSpec, gpu: GPUSpec, mem, engine, lat, catalog: Catalog) -> tuple[str, ...]:
    """Notes on the latency figures: the NVLink bridge assumed, a compute-starved part, ROCm's FP8 experts, a chat
    cost fitted on another release, fixed costs beyond the fitted concurrency."""
    notes: tuple[str, ...] = ()
    alt = latency(s, model, unbridged(gpu), mem, engine).tpot_s if bridge_assumed(s, gpu) else None
    if link := link_note(s, gpu, lat.tpot_s, alt):
        notes = (*notes, link)
    # a MoE model's experts span every data-parallel rank (each MoE layer is one step of all of them), so its
    # group is the whole server; a dense model's ranks are separate engines, placeable on separate nodes
    moe_dp = linked_ranks(s, model) > 1
    group = s.tensor_parallel_size * s.pipeline_parallel_size * linked_ranks(s, model)
    if not gpu.node_holds(group):
        what = (f"DP {s.data_parallel_size} × TP {s.tensor_parallel_size} × PP {s.pipeline_parallel_size} (the "
                "experts span every rank)") if moe_dp else f"TP {s.tensor_parallel_size} × PP {s.pipeline_parallel_size}"
        notes = (*notes, f"{gpu.name} is rented {gpu.node_gpus:,} GPU{'s' * (gpu.node_gpus != 1)} to a node "
                         f"(node_gpus): {what} spans {-(-group // gpu.node_gpus):,} nodes, whose network this plan "
                         f"does not model (its collectives assume "
                         f"{gpu.scaleup_link_gb_per_s or gpu.host_link_gb_per_s:g} GB/s between all {group:,}), nor "
                         "the price of such a system; the search leaves such groups out")  # fmt: skip
    if s.disaggregated and not gpu.node_holds(2 * group) and s.kv_transfer_gb_per_s is None:
        notes = (*notes, f"disaggregated on {gpu.name}, rented {gpu.node_gpus:,} GPU{'s' * (gpu.node_gpus != 1)} to a "
                         "node: a prefill and a decode instance sit on different nodes, so the KV crosses the network "
                         f"between them, which this plan takes at the GPU's own link "
                         f"({gpu.scaleup_link_gb_per_s or gpu.host_link_gb_per_s:g} GB/s): set kv_transfer_gb_per_s to "
                         "the network's rate (50 for 400 Gb/s)")  # fmt: skip
    if ridge := ridge_note(gpu):
        notes = (*notes, ridge)
    if rocm := rocm_fp8_moe_note(s, gpu, lat.step):
        notes = (*notes, rocm)
    if compiled := compile_note(s, engine, lat):
        notes = (*notes, compiled)
    if lat.step.chat and engine.chat_stream_token_s and engine.since != catalog.engines[s.engine].since:
        notes = (*notes, f"each streamed chat chunk costs {engine.chat_stream_token_s * 1e6:,.0f} µs a running request "
                         f"here, fitted on {catalog.engines[s.engine].label}'s chat bursts (GPUStack); no chat run of "
                         f"{engine.label} was in the calibration data (its own per-request costs were fitted on "
                         "completions runs), so on that release it is an assumption")  # fmt: skip
    if beyond := beyond_fitted(s, catalog, lat.decode_batch):
        notes = (*notes, f"{engine.label}'s fixed costs were fitted on runs of at most {engine.fitted_concurrency} "
                 f"in flight, and {lat.decode_batch:,.0f} run here: an extrapolation; the earlier releases' costs "
                 f"({beyond[1].label}) bound the TPOT from above")  # fmt: skip
    if mem.params.total < SMALL_MODEL_PARAMS:
        notes = (*notes, f"a {mem.params.total / 1e9:.2g} B-parameter model: the step's fixed costs were fitted on "
                         "models of 7.6 B parameters and more, and the smaller ones published decoded slower than "
                         "planned (R1-Distill-Qwen-1.5B on an RTX 4090 under vLLM 0.8.5 by 27–56 %, held out; "
                         "Qwen3-0.6B on an H100 under vLLM 0.19 by 42 %, a blind run): read this TPOT as a lower "
                         "bound")  # fmt: skip
    return notes


SMALL_MODEL_PARAMS = 3e9
"""Below this many parameters the TPOT is an extrapolation that published runs say is optimistic: the calibration
part's smallest fitted model has 7.6 B (docs/calibration-history.md (30)); the two smaller ones measured, 0.6 B and
1.5 B, decoded 27–56 % slower than planned."""
