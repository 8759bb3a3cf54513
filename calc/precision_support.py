"""Which weight precisions vLLM can serve on which accelerator: its quantization kernels' supported-hardware table.

    int4 (AWQ / GPTQ, W4A16)   Turing, Ampere, Ada, Hopper (Blackwell as Hopper); not AMD GPUs, Gaudi or TPU
    int8 (W8A8)                Turing … Hopper, TPU; not AMD GPUs or Gaudi
    fp8  (W8A8, --quantization fp8)   Ada, Hopper, Blackwell, AMD (CDNA3); on Ampere weight-only (W8A16) through
                               the FP8 Marlin kernel (below), not Turing (Fp8Config's minimum capability is 80), TPU,
                               nor Gaudi (whose fp8 is INC, served by vLLM-Gaudi with other flags)
16-bit weights: fp16 everywhere the planner ships; bf16 from Ampere on (and AMD, TPU, Gaudi). On a GPU of compute
capability below 8.0 (Turing here; Volta) vLLM refuses --dtype bfloat16 at start ("Bfloat16 is only supported on
GPUs with compute capability of at least 8.0", vllm/worker check_if_supports_dtype), and with --dtype auto serves a
bf16 checkpoint in fp16 (the same bytes).

FP8 on Ampere: vLLM starts and logs "Your GPU does not have native support for FP8 computation but FP8 quantization
is being used. Weight-only FP8 compression will be used leveraging the Marlin kernel" (marlin_utils_fp8.py, v0.6.3
on; published A100 / A40 logs, e.g. "Selected MarlinFP8ScaledMMLinearKernel for Fp8LinearMethod … Model loading took
28.9 GiB" for a 27 B model): the weights stay 8-bit in memory and the math is 16-bit.

Source: docs.vllm.ai v0.11.2, features/quantization, "Supported Hardware" (AWQ, GPTQ, INT8 (W8A8), FP8 (W8A8) rows;
Volta … Hopper, AMD GPU, Intel Gaudi, Google TPU columns); v0.15.1 notes that Gaudi's quantization moved to
vLLM-Gaudi.
"""

from __future__ import annotations

from dataclasses import replace

from calc.weights import WeightFormat

SUPPORTED = {
    "int4": ("turing", "ampere", "ada", "hopper", "blackwell"),
    "int8": ("turing", "ampere", "ada", "hopper", "blackwell", "tpu"),
    "fp8": ("ampere", "ada", "hopper", "blackwell", "cdna3"),
}
FP8_WEIGHT_ONLY = ("ampere",)
"""No FP8 tensor cores: fp8 weights are read as 8-bit and multiplied in 16-bit (vLLM's FP8 Marlin, W8A16)."""


def unsupported(dtype: str, arch: str) -> str:
    """Why vLLM has no kernel for weights of `dtype` on an `arch` accelerator, or '' when it has one."""
    archs = SUPPORTED.get(dtype)
    if archs is None or arch in archs:
        return ""
    return f"vLLM has no {dtype} weight kernel on {arch} accelerators (its quantization support table)"


NO_BF16 = ("turing", "volta")
"""NVIDIA archs below compute capability 8.0: no bf16 (T4 is Turing, 7.5)."""


def dtype_refusal(dtype: str, arch: str, engine: str = "vllm") -> str:
    """Why the engine refuses to start with weights of `dtype` on an `arch` GPU, or '': bf16 below Ampere, or a
    quantized precision its kernel table lacks there (vLLM: 'The quantization method fp8 is not supported for the
    current GPU. Minimum capability: …')."""
    name = {"vllm": "vLLM", "sglang": "SGLang"}.get(engine, engine)
    if dtype == "bf16" and arch in NO_BF16:
        return (f"{name} refuses to start: Bfloat16 is only supported on GPUs with compute capability of at least 8.0 "
                f"({arch} is below it); use dtype fp16, or auto, which serves bf16 weights in fp16")  # fmt: skip
    if unsupported(dtype, arch):
        return f"{name} refuses to start: no {dtype} weight kernel on {arch} accelerators (vLLM's quantization table)"
    return ""


def served_format(f: WeightFormat, dtype: str, arch: str) -> WeightFormat:
    """The weights as vLLM serves them on `arch`: with dtype auto, a bf16 checkpoint on a GPU without bf16 runs in
    fp16 (same bytes; the label and the matmul precision say fp16); fp8 weights on Ampere keep their bytes and
    multiply in bf16."""
    if dtype == "auto" and arch in NO_BF16 and f.compute_dtype == "bf16":
        return replace(f, compute_dtype="fp16", label=f.label.replace("bf16", "fp16"))
    if arch in FP8_WEIGHT_ONLY and f.compute_dtype == "fp8":
        return replace(f, compute_dtype="bf16", label=f"{f.label}, weight-only (FP8 Marlin, bf16 math)")
    return f
