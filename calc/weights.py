"""Weight bytes per GPU for each weight precision, and the matmul precision it implies.

Assumptions (stated so a reviewer can check them):
- bf16 / fp16: 2 bytes per parameter.
- fp8: 1 byte for the transformer-block linear weights plus one fp32 scale per 128×128 block (+0.024 %);
  embedding, lm_head and norms stay 16-bit (vLLM quantizes linear layers only).
- int8: 1 byte plus one fp16 scale per output channel (+2/hidden_size bytes, ≈0.05 %).
- int4 (AWQ/GPTQ-style, group 128): 0.5 byte plus a fp16 scale and zero per 128 weights → 0.53125 byte; a
  checkpoint's own group size and symmetry where its quantization_config states them (Kimi-K2-Thinking's routed
  experts: group 32, symmetric, 0.5625 byte).
- mxfp4 (gpt-oss experts): 4 bits plus one 8-bit scale per 32 weights → 0.53125 byte.
- dtype "auto": the checkpoint's own format — its quantization_config if it ships quantized (DeepSeek-V3 fp8,
  gpt-oss mxfp4 experts), else its 16-bit torch_dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.kv_cache import pp_layer_ranges
from calc.params import ParamCounts
from calc.specs import ModelSpec

FP8_BLOCK_SCALE_OVERHEAD = 4 / (128 * 128)
INT4_GROUP_BYTES = 0.5 + 4 / 128
MXFP4_BYTES = 0.5 + 1 / 32
NVFP4_BYTES = 0.5 + 1 / 16  # 4 bits plus one fp8 scale per 16 weights
FP8_METHODS = ("fp8", "fbgemm_fp8", "ptpc_fp8", "fp8_e4m3")
INT_METHODS = ("awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes", "compressed-tensors", "gguf", "auto-round")
SIZED_METHODS = (*FP8_METHODS, *INT_METHODS, "mxfp4", "nvfp4", "modelopt_fp4", "modelopt")
"""quantization_config.quant_method values weight_format sizes; any other is planned at the checkpoint's dtype."""
SIZED_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4")


@dataclass(frozen=True)
class WeightFormat:
    """Bytes per parameter for the blocks' linear layers and for the routed experts, plus the matmul dtype."""

    linear_bytes: float
    expert_bytes: float
    compute_dtype: str  # precision of the tensor-core math: bf16, fp16, fp8 or int8
    label: str


def weight_format(m: ModelSpec, dtype: str) -> WeightFormat:
    if dtype == "auto":
        q = m.quantization_config
        native = m.native_dtype
        if q is None:
            return WeightFormat(2.0, 2.0, native, native)
        method = q.quant_method.lower()
        if method == "mxfp4":
            if q.experts_only:
                return WeightFormat(2.0, MXFP4_BYTES, native, "mxfp4 experts, bf16 rest")
            return WeightFormat(MXFP4_BYTES, MXFP4_BYTES, native, "mxfp4")
        if method == "modelopt" and q.bits == 4 and q.rest_bits == 8:  # MIXED_PRECISION: the experts 4-bit
            b = 1 + FP8_BLOCK_SCALE_OVERHEAD
            return WeightFormat(b, NVFP4_BYTES, "fp8", "nvfp4 experts, fp8 rest (modelopt mixed precision)")
        if method in ("nvfp4", "modelopt_fp4") or (method == "modelopt" and q.bits == 4) or q.nvfp4:
            if q.experts_only:  # its ignore list keeps attention and the dense / shared MLPs 16-bit (Kimi-K2.6-NVFP4)
                return WeightFormat(2.0, NVFP4_BYTES, native, f"nvfp4 experts ({method}), {native} rest")
            return WeightFormat(NVFP4_BYTES, NVFP4_BYTES, native, f"nvfp4 ({method})")
        if method in FP8_METHODS or (method in ("compressed-tensors", "modelopt") and q.bits != 4):
            b = 1 + FP8_BLOCK_SCALE_OVERHEAD
            return WeightFormat(b, b, "fp8", "fp8" if method == "fp8" else f"fp8 ({method})")
        if method in INT_METHODS:
            bits = q.bits or 4
            b = int_bytes(q) if bits < 8 else 1.0
            if q.experts_only:
                return WeightFormat(2.0, b, native, f"int{bits} experts ({method}), {native} rest")
            return WeightFormat(b, b, native, f"int{bits} ({method})")
        return WeightFormat(2.0, 2.0, native, f"{native} (quantization '{method[:20]}' not modelled)")
    if dtype in ("bf16", "fp16"):
        return WeightFormat(2.0, 2.0, dtype, dtype)
    if dtype == "fp8":
        b = 1 + FP8_BLOCK_SCALE_OVERHEAD
        return WeightFormat(b, b, "fp8", "fp8")
    if dtype == "int8":
        b = 1 + 2 / m.hidden_size
        return WeightFormat(b, b, "int8", "int8 (W8A8)")
    if dtype == "int4":
        return WeightFormat(INT4_GROUP_BYTES, INT4_GROUP_BYTES, m.native_dtype, "int4 (W4A16, group 128)")
    raise ValueError(f"dtype: unknown weight precision {dtype!r}")


def int_bytes(q) -> float:
    """Bytes per 4-bit (GPTQ also 2- or 3-bit) integer weight: bits / 8 plus a 16-bit scale per group, and a 16-bit
    zero point unless symmetric (group 128 with zero points, AWQ's and GPTQ's default: INT4_GROUP_BYTES at 4 bits)."""
    bits = q.bits or 4
    if bits == 4 and q.group_size is None and not q.symmetric:
        return INT4_GROUP_BYTES
    return bits / 8 + (2 if q.symmetric else 4) / (q.group_size or 128)


def weights_bytes(p: ParamCounts, f: WeightFormat) -> float:
    """Whole model, all GPUs together [bytes]. The encoder towers stay 16-bit (quantization skips them)."""
    linear = p.attention + p.state_mixers + p.dense_mlp
    tables = p.embedding + p.per_layer_embedding + p.lm_head
    return linear * f.linear_bytes + p.experts * f.expert_bytes + (tables + p.norms + p.towers) * 2.0


def weights_bytes_per_stage(m: ModelSpec, p: ParamCounts, f: WeightFormat, *, tp: int, pp: int,
                            dp: int = 1) -> list[float]:  # fmt: skip
    """Weight bytes on one GPU of each pipeline stage: the stage's own layers split over tp ranks, the embeddings
    (Gemma 3n's per-layer table too) and the encoder towers, split over tp, on the first stage and the lm_head on the last
    (vocab-parallel, so also split over tp). With dp data-parallel ranks the routed experts span all dp · tp GPUs
    (vLLM: "expert layers form a tensor parallel group of size DP × TP", sliced or whole under expert parallelism:
    the same bytes a GPU); every other weight is copied on each rank."""
    out = []
    stages = pp_layer_ranges(m.num_hidden_layers, pp)
    for s, layers in enumerate(stages):
        experts = p.in_layers("experts", layers) * f.expert_bytes / dp
        b = (p.in_layers("linear", layers) * f.linear_bytes + experts) / tp + p.in_layers("norms", layers) * 2.0
        if s == 0:
            b += (p.embedding + p.per_layer_embedding + p.towers) * 2.0 / tp
        if s == len(stages) - 1:
            b += (p.lm_head or (p.embedding if pp > 1 else 0)) * 2.0 / tp  # tied head: a copy on the last stage
            b += (p.norms - p.in_layers("norms", range(m.num_hidden_layers))) * 2.0  # the final norm, on every rank
        out.append(b)
    return out
