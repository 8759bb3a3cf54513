"""Which weight precisions vLLM can serve on which accelerator: its quantization kernels' supported-hardware table.

    int4 (AWQ / GPTQ, W4A16)   Turing, Ampere, Ada, Hopper (Blackwell as Hopper); not AMD GPUs, Gaudi or TPU
    int8 (W8A8)                Turing … Hopper, TPU; not AMD GPUs or Gaudi
    fp8  (W8A8, --quantization fp8)   Ada, Hopper, Blackwell, AMD (CDNA3); not Turing, Ampere (weight-only
                               through Marlin in later releases, not modelled), TPU, nor Gaudi (whose fp8 is INC,
                               served by vLLM-Gaudi with other flags)
16-bit weights (auto, bf16, fp16) run everywhere the planner ships.

Source: docs.vllm.ai v0.11.2, features/quantization, "Supported Hardware" (AWQ, GPTQ, INT8 (W8A8), FP8 (W8A8) rows;
Volta … Hopper, AMD GPU, Intel Gaudi, Google TPU columns); v0.15.1 notes that Gaudi's quantization moved to
vLLM-Gaudi.
"""

from __future__ import annotations

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
