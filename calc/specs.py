"""Validated spec models: one accelerator (GPUSpec) here; the model architecture (ModelSpec) in calc.model_spec.

Hardware files hold human units (GiB, GB/s, TFLOP/s) plus a `source:` line; properties expose base units.
Derived values are properties and never overwrite an input.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from calc.units import GB, GFLOP, MB, PFLOP, TB, TFLOP, GiB, MiB

PosInt = Annotated[int, Field(gt=0, le=10**7)]
NonNegInt = Annotated[int, Field(ge=0, le=10**7)]
PosFloat = Annotated[float, Field(gt=0, le=1e7)]

Arch = Literal["turing", "ampere", "ada", "hopper", "blackwell", "cdna3", "gaudi3", "tpu"]

# Plausible range of each human-unit GPU figure, and the unit slips that land outside it: (slip, intended per slip).
# Shipped parts span 16–256 GiB, 300–8,000 GB/s, 65–4,500 dense TFLOP/s; the ranges leave generations of room.
_MEMORY = (1, 1024, "GiB", (("MiB", MiB / GiB), ("bytes", 1 / GiB)))
_BANDWIDTH = (50, 20_000, "GB/s", (("TB/s", TB / GB), ("MB/s", MB / GB), ("bytes/s", 1 / GB)))
_LINK = (1, 5_000, "GB/s", (("TB/s", TB / GB), ("MB/s", MB / GB), ("bytes/s", 1 / GB)))
_FLOPS = (1, 20_000, "TFLOP/s", (("PFLOP/s", PFLOP / TFLOP), ("GFLOP/s", GFLOP / TFLOP), ("FLOP/s", 1 / TFLOP)))
_OPS = (1, 20_000, "TOPS", (("POPS", PFLOP / TFLOP), ("GOPS", GFLOP / TFLOP), ("OPS", 1 / TFLOP)))
_PLAUSIBLE = {"memory_gib": _MEMORY, "memory_vendor_gb": (1, 1024, "GB", (("MB", MB / GB),)),
              "memory_bandwidth_gb_per_s": _BANDWIDTH, "host_link_gb_per_s": _LINK, "scaleup_link_gb_per_s": _LINK,
              "bf16_tflop_per_s": _FLOPS, "fp16_tflop_per_s": _FLOPS, "fp8_tflop_per_s": _FLOPS, "int8_tops": _OPS}  # fmt: skip


class GPUSpec(BaseModel):
    """One accelerator. All FLOP/s figures are DENSE (never the 2:4-sparse headline, which is exactly 2x)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)

    name: str = Field(min_length=1, max_length=80)
    vendor: Literal["nvidia", "amd", "intel", "google"]
    arch: Arch
    memory_gib: PosFloat
    """Device memory as the runtime sees it (cudaMemGetInfo / torch total capacity), GiB."""
    memory_vendor_gb: PosFloat
    """Capacity on the datasheet (marketing GB; HBM 'GB' are about GiB-sized)."""
    nvidia_smi_mib: PositiveInt | None = None
    """The total nvidia-smi prints, MiB (reference/hardware.md): SGLang sizes its default --mem-fraction-static from it
    (calc.engine_defaults.sglang_mem_fraction); absent, memory_gib · 1,024."""
    memory_bandwidth_gb_per_s: PosFloat
    """Peak device-memory bandwidth, decimal GB/s."""
    bf16_tflop_per_s: PosFloat | None = None
    """Dense BF16 tensor peak (FP32 accumulate on GeForce cards), TFLOP/s."""
    fp16_tflop_per_s: PosFloat | None = None
    """Dense FP16 tensor peak, TFLOP/s."""
    fp8_tflop_per_s: PosFloat | None = None
    """Dense FP8 tensor peak, TFLOP/s (absent where the part has no FP8)."""
    int8_tops: PosFloat | None = None
    """Dense INT8 tensor peak, TOPS."""
    compute_capability: Annotated[float, Field(ge=1.0, le=20.0)] | None = None
    """CUDA compute capability (NVIDIA's CUDA GPUs table), where a kernel family depends on more than the arch:
    Blackwell's datacenter parts are 10.x, its workstation and GeForce parts 12.0 (vLLM's trtllm-gen kernels, and so
    its NVFP4 KV cache, run on 10.x only)."""
    host_link_gb_per_s: PosFloat
    """Host link (PCIe) bandwidth per direction, GB/s."""
    host_link_is_pcie: bool = True
    """False where the host link is not PCIe (GH200's NVLink-C2C): a scale-up link as fast is then no PCIe."""
    pcie_p2p: bool = True
    """The cards read each other's memory across PCIe (peer-to-peer). False on GeForce parts, whose driver turns
    it off: NCCL stages every byte through host memory, so their all-reduces move all of it at the engines' slow
    PCIe rate (calc.step_inputs.allreduce_link)."""
    scaleup_link_gb_per_s: PosFloat | None = None
    """GPU-to-GPU link (NVLink / xGMI / ICI) per direction, GB/s; absent = tensor-parallel traffic crosses PCIe."""
    scaleup_link_gpus: Annotated[int, Field(ge=2, le=1024)] | None = None
    """How many GPUs one scale-up link joins (2: a bridged pair of PCIe cards); a larger tensor-parallel group's
    ring crosses PCIe between them, so its all-reduces run at the host link. Absent: every GPU of the node."""
    node_gpus: Annotated[int, Field(ge=1, le=1024)] | None = None
    """GPUs one rentable node of this part holds, where that is fewer than a tensor- or pipeline-parallel group may
    want (GH200: rented as single superchips). A group larger than it spans nodes over a network the plan does not
    model, at a price it does not know: the search leaves such groups out and the plan says so. None: not limited."""
    tdp_w: PosFloat | None = None
    achievable_bandwidth_fraction: Annotated[float, Field(ge=0.3, le=1.0)]
    """Share of the peak bandwidth a streaming kernel reaches (STREAM-type microbenchmarks)."""
    achievable_matmul_fraction: Annotated[float, Field(ge=0.2, le=1.3)]
    """Share of the dense 16-bit peak a large GEMM reaches (GeForce parts exceed their FP32-accumulate spec)."""
    achievable_fp8_matmul_fraction: Annotated[float, Field(ge=0.2, le=1.3)] | None = None
    allreduce_latency_us: Annotated[float, Field(ge=0.5, le=1000)]
    """One small (decode-sized) tensor-parallel all-reduce: launch, sync and hops, µs. A pair whose all-reduces
    cross PCIe takes the engine's pcie_allreduce_latency_s instead (vLLM's custom all-reduce runs on two PCIe GPUs;
    the PCIe parts' figures here are NCCL's, measured on eight)."""
    price_per_gpu_hour: PosFloat
    """Reference on-demand price per GPU-hour, typical (volatile; dated in price_date, sourced in price_source)."""
    price_low_per_gpu_hour: PosFloat | None = None
    price_high_per_gpu_hour: PosFloat | None = None
    price_currency: Literal["USD"] = "USD"
    """Currency of the reference prices (on-demand list prices in USD)."""
    price_date: str = Field(min_length=4, max_length=20)
    price_source: str = Field(min_length=3)
    derived: tuple[str, ...] = ()
    """Names of fields whose value is derived or uncertain rather than read from a datasheet."""
    notes: str | None = None
    source: str = Field(min_length=8)

    @field_validator(*_PLAUSIBLE, mode="before")
    @classmethod
    def _plausible(cls, value, info):
        """A figure outside its plausible range is a unit slip, named: 3.35 GB/s is H100's 3.35 TB/s."""
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value <= 0:
            return value  # types, signs and NaN are the field's own constraints
        low, high, unit, slips = _PLAUSIBLE[info.field_name]
        if low <= value <= high:
            return value
        slip = next((name for name, per in slips if low <= value * per <= high), None)
        looks = f"looks like {slip}" if slip else "is not plausible"
        raise ValueError(f"{value:g} {looks}; expected {low:,g}–{high:,g} {unit}")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.bf16_tflop_per_s is None and self.fp16_tflop_per_s is None:
            raise ValueError("bf16_tflop_per_s or fp16_tflop_per_s: at least one 16-bit peak is required")
        if self.memory_gib > self.memory_vendor_gb * 1.05:
            raise ValueError(
                f"memory_gib ({self.memory_gib}) exceeds the datasheet capacity memory_vendor_gb "
                f"({self.memory_vendor_gb}); give the memory the runtime sees, in GiB"
            )
        if self.fp8_tflop_per_s and self.fp8_tflop_per_s < self.peak_16bit_tflop_per_s:
            raise ValueError("fp8_tflop_per_s must not be below the 16-bit peak")
        lo, hi = self.price_low_per_gpu_hour, self.price_high_per_gpu_hour
        if (lo is not None and lo > self.price_per_gpu_hour) or (hi is not None and hi < self.price_per_gpu_hour):
            raise ValueError("price_low_per_gpu_hour ≤ price_per_gpu_hour ≤ price_high_per_gpu_hour must hold")
        if self.scaleup_link_gpus is not None and self.scaleup_link_gb_per_s is None:
            raise ValueError("scaleup_link_gpus needs scaleup_link_gb_per_s: the GPUs it joins have no link to count")
        unknown = [f for f in self.derived if f not in type(self).model_fields]
        if unknown:
            raise ValueError(f"derived names unknown fields {unknown}")
        return self

    @property
    def sparse_warnings(self) -> list[str]:
        """Figures that look like the 2:4-sparse headline (exactly 2× what the dense ratios predict)."""
        out = []
        b16 = self.peak_16bit_tflop_per_s
        if self.fp8_tflop_per_s and abs(self.fp8_tflop_per_s - 4 * b16) < 1e-6 * b16:
            out.append("fp8_tflop_per_s is exactly 4× the 16-bit peak: dense FP8 is 2×; is it the sparse figure?")
        if (
            self.bf16_tflop_per_s
            and self.fp16_tflop_per_s
            and (
                abs(self.bf16_tflop_per_s - 2 * self.fp16_tflop_per_s) < 1e-9
                or abs(self.fp16_tflop_per_s - 2 * self.bf16_tflop_per_s) < 1e-9
            )
        ):
            out.append("bf16 and fp16 peaks differ by exactly 2×: one of them looks like the sparse figure")
        return out

    @property
    def peak_16bit_tflop_per_s(self) -> float:
        return self.bf16_tflop_per_s or self.fp16_tflop_per_s  # type: ignore[return-value]

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GiB

    @property
    def smi_mib(self) -> float:
        """Total memory as nvidia-smi prints it, MiB (nvidia_smi_mib; else memory_gib · 1,024)."""
        return float(self.nvidia_smi_mib or self.memory_gib * 1024)

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gb_per_s * GB

    @property
    def host_link_bytes_per_s(self) -> float:
        return self.host_link_gb_per_s * GB

    @property
    def tp_link_bytes_per_s(self) -> float:
        """Bandwidth between two GPUs of one scale-up domain: the scale-up link if the part has one, else PCIe."""
        return (self.scaleup_link_gb_per_s or self.host_link_gb_per_s) * GB

    def node_holds(self, gpus: int) -> bool:
        """A group of `gpus` (TP × PP) fits one rentable node of this part (node_gpus; None: not limited)."""
        return self.node_gpus is None or gpus <= self.node_gpus

    def allreduce_crosses_pcie(self, tp: int) -> bool:
        """A `tp` group's all-reduces cross PCIe: no scale-up link, one no faster than the host link (a planner's
        "no bridge"), or a group larger than the bridge joins."""
        if self.scaleup_link_gb_per_s is None:
            return True
        if self.host_link_is_pcie and self.scaleup_link_gb_per_s <= self.host_link_gb_per_s:
            return True
        return self.scaleup_link_gpus is not None and tp > self.scaleup_link_gpus

    def allreduce_link_bytes_per_s(self, tp: int) -> float:
        """Bandwidth a ring all-reduce over `tp` GPUs runs at: its slowest hop, PCIe where the group spans more
        GPUs than one scale-up link joins (two bridged pairs of H100 PCIe cards at TP 4: 64 GB/s, not 300)."""
        if self.scaleup_link_gpus is not None and tp > self.scaleup_link_gpus:
            return self.host_link_bytes_per_s
        return self.tp_link_bytes_per_s

    def peak_flop_per_s(self, compute_dtype: str) -> float:
        """Dense peak for the matmul precision, falling back to the 16-bit rate where the part lacks it."""
        table = {
            "bf16": self.bf16_tflop_per_s or self.fp16_tflop_per_s,
            "fp16": self.fp16_tflop_per_s or self.bf16_tflop_per_s,
            "fp8": self.fp8_tflop_per_s,
            "int8": self.int8_tops,
        }
        return (table.get(compute_dtype) or self.peak_16bit_tflop_per_s) * TFLOP


# The model side lives in calc.model_spec; importing it here keeps `from calc.specs import GPUSpec, ModelSpec` working.
from calc.model_spec import ModelSpec, QuantizationConfig  # noqa: E402, F401
