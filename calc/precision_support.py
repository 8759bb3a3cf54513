"""Which weight precisions vLLM can serve on which accelerator: its quantization kernels' supported-hardware table.

    int4 (AWQ / GPTQ, W4A16)   Turing, Ampere, Ada, Hopper (Blackwell as Hopper); not AMD GPUs, Gaudi or TPU
    int8 (W8A8)                Turing … Hopper, TPU; not AMD GPUs or Gaudi
    fp8  (W8A8, --quantization fp8)   Ada, Hopper, Blackwell, AMD (CDNA3); not Turing, Ampere (weight-only
                               through Marlin in later releases, not modelled), TPU, nor Gaudi (whose fp8 is INC,
                               served by vLLM-Gaudi with other flags)
16-bit weights: fp16 everywhere the planner ships; bf16 from Ampere on (and AMD, TPU, Gaudi). On a GPU of compute
capability below 8.0 (Turing here; Volta) vLLM refuses --dtype bfloat16 at start ("Bfloat16 is only supported on
GPUs with compute capability of at least 8.0", vllm/worker check_if_supports_dtype), and with --dtype auto serves a
bf16 checkpoint in fp16 (the same bytes).

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
    "fp8": ("ada", "hopper", "blackwell", "cdna3"),
}


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
    fp16 (same bytes; the label and the matmul precision say fp16)."""
    if dtype == "auto" and arch in NO_BF16 and f.compute_dtype == "bf16":
        return replace(f, compute_dtype="fp16", label=f.label.replace("bf16", "fp16"))
    return f
