"""Validated spec models: one accelerator (GPUSpec) and one model architecture (ModelSpec).

Hardware files hold human units (GiB, GB/s, TFLOP/s) plus a `source:` line; properties expose base units.
Model files use Hugging Face `config.json` field names, so a reviewer can diff them against the hub, plus three
fields of ours (`name`, `hf_id`, `source`). Derived values are properties and never overwrite an input.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
    host_link_gb_per_s: PosFloat
    """Host link (PCIe) bandwidth per direction, GB/s."""
    scaleup_link_gb_per_s: PosFloat | None = None
    """GPU-to-GPU link (NVLink / xGMI / ICI) per direction, GB/s; absent = tensor-parallel traffic crosses PCIe."""
    tdp_w: PosFloat | None = None
    price_per_gpu_hour: PosFloat | None = None
    """Reference on-demand price, USD per GPU-hour (volatile; dated in price_source)."""
    price_currency: Literal["USD"] = "USD"
    """Currency of price_per_gpu_hour (reference prices are on-demand list prices in USD)."""
    price_source: str | None = None
    derived: list[str] = Field(default_factory=list)
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
        if self.price_per_gpu_hour is not None and not self.price_source:
            raise ValueError("price_source: a dated source is required when price_per_gpu_hour is given")
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
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gb_per_s * GB

    @property
    def host_link_bytes_per_s(self) -> float:
        return self.host_link_gb_per_s * GB

    @property
    def tp_link_bytes_per_s(self) -> float:
        """Bandwidth tensor-parallel all-reduces use: the scale-up link if the part has one, else PCIe."""
        return (self.scaleup_link_gb_per_s or self.host_link_gb_per_s) * GB

    def peak_flop_per_s(self, compute_dtype: str) -> float:
        """Dense peak for the matmul precision, falling back to the 16-bit rate where the part lacks it."""
        table = {
            "bf16": self.bf16_tflop_per_s or self.fp16_tflop_per_s,
            "fp16": self.fp16_tflop_per_s or self.bf16_tflop_per_s,
            "fp8": self.fp8_tflop_per_s,
            "int8": self.int8_tops,
        }
        return (table.get(compute_dtype) or self.peak_16bit_tflop_per_s) * TFLOP


class QuantizationConfig(BaseModel):
    """The `quantization_config` block of a checkpoint that ships quantized (DeepSeek-V3 fp8, gpt-oss mxfp4)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    quant_method: Literal["fp8", "mxfp4", "awq", "gptq", "bitsandbytes", "compressed-tensors"]
    bits: Literal[4, 8] | None = None
    """Weight bits for awq/gptq/bitsandbytes (default 4)."""
    experts_only: bool = False
    """True when only the MoE experts are quantized (gpt-oss: attention, router, embeddings stay bf16)."""


SUPPORTED_MODEL_TYPES = (
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text",
    "deepseek_v2", "deepseek_v3", "gpt_oss", "phi3", "opt",
)  # fmt: skip


class ModelSpec(BaseModel):
    """A decoder-only transformer, in Hugging Face config.json field names."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # ours
    name: str = Field(min_length=1, max_length=120)
    hf_id: str | None = Field(default=None, max_length=200)
    source: str = Field(default="uploaded config.json", min_length=1, max_length=2000)
    # Hugging Face config.json
    model_type: str = Field(min_length=1, max_length=60)
    architectures: list[str] = Field(default_factory=list, max_length=8)
    num_hidden_layers: PosInt
    hidden_size: PosInt
    intermediate_size: PosInt | None = None
    ffn_dim: PosInt | None = None
    num_attention_heads: PosInt
    num_key_value_heads: PosInt | None = None
    head_dim: PosInt | None = None
    vocab_size: PosInt
    tie_word_embeddings: bool = False
    max_position_embeddings: PosInt
    torch_dtype: Literal["bfloat16", "float16", "float32"] | None = None
    attention_bias: bool = False
    sliding_window: PosInt | None = None
    use_sliding_window: bool | None = None
    sliding_window_pattern: PosInt | None = None
    layer_types: list[Literal["full_attention", "sliding_attention"]] | None = None
    # MoE
    num_local_experts: PosInt | None = None
    num_experts: PosInt | None = None
    n_routed_experts: PosInt | None = None
    num_experts_per_tok: PosInt | None = None
    moe_intermediate_size: PosInt | None = None
    n_shared_experts: NonNegInt | None = None
    first_k_dense_replace: NonNegInt | None = None
    # MLA
    q_lora_rank: PosInt | None = None
    kv_lora_rank: PosInt | None = None
    qk_nope_head_dim: PosInt | None = None
    qk_rope_head_dim: PosInt | None = None
    v_head_dim: PosInt | None = None
    quantization_config: QuantizationConfig | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.model_type not in SUPPORTED_MODEL_TYPES:
            raise ValueError(
                f"model_type '{self.model_type}' is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
            )
        if self.num_attention_heads % self.kv_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.kv_heads})"
            )
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads}) when head_dim is not given"
            )
        if self.model_type == "opt":
            if self.ffn_dim is None:
                raise ValueError("ffn_dim is required for model_type 'opt'")
        elif self.intermediate_size is None:
            raise ValueError("intermediate_size is required")
        if self.is_mla and (self.qk_rope_head_dim is None or self.qk_nope_head_dim is None or self.v_head_dim is None):
            raise ValueError("kv_lora_rank given: qk_rope_head_dim, qk_nope_head_dim and v_head_dim are required (MLA)")
        if self.is_moe and (self.num_experts_per_tok is None or self.num_experts_per_tok > self.routed_experts):
            raise ValueError("num_experts_per_tok is required for MoE models and must not exceed the expert count")
        if self.layer_types is not None:
            if len(self.layer_types) != self.num_hidden_layers:
                raise ValueError(
                    f"layer_types has {len(self.layer_types)} entries, num_hidden_layers is {self.num_hidden_layers}"
                )
            if "sliding_attention" in self.layer_types and self.sliding_window is None:
                raise ValueError("layer_types names sliding_attention layers but sliding_window is not set")
        if self.model_type in ("gemma2", "gemma3_text") and self.sliding_window is None:
            raise ValueError(f"sliding_window is required for model_type '{self.model_type}'")
        return self

    # --- derived -------------------------------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def kv_head_dim(self) -> int:
        """head_dim when the config states it (Qwen3, Gemma, gpt-oss), else hidden_size / heads."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def routed_experts(self) -> int:
        return self.num_local_experts or self.num_experts or self.n_routed_experts or 0

    @property
    def is_moe(self) -> bool:
        return self.routed_experts > 0

    @property
    def dense_ffn_size(self) -> int:
        return self.ffn_dim if self.model_type == "opt" else self.intermediate_size  # type: ignore[return-value]

    @property
    def expert_ffn_size(self) -> int:
        return self.moe_intermediate_size or self.dense_ffn_size

    @property
    def native_dtype(self) -> str:
        """Weight precision vLLM's dtype=auto picks: bf16 for bfloat16 (and unstated) configs, fp16 for float16;
        float32 checkpoints are served in 16 bits."""
        return "fp16" if self.torch_dtype == "float16" else "bf16"

    def is_sliding_layer(self, i: int) -> bool:
        """Whether layer i holds at most `sliding_window` tokens (vLLM's SlidingWindowSpec)."""
        if self.sliding_window is None or self.use_sliding_window is False:
            return False
        if self.layer_types is not None:
            return self.layer_types[i] == "sliding_attention"
        if self.model_type == "gemma2":
            return i % 2 == 0  # even layers local, odd global
        if self.model_type == "gemma3_text":
            return (i + 1) % (self.sliding_window_pattern or 6) != 0  # 5 local : 1 global
        if self.model_type in ("qwen2", "qwen3", "qwen3_moe"):
            return False  # sliding_window is inert unless use_sliding_window is true (handled above: None)
        return True  # Mistral, Phi-3: every layer slides

    @property
    def sliding_layer_count(self) -> int:
        return sum(self.is_sliding_layer(i) for i in range(self.num_hidden_layers))
