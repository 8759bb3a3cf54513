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

from calc.engine_spec import version_tuple
from calc.weights import WeightFormat

SUPPORTED = {
    "int4": ("turing", "ampere", "ada", "hopper", "blackwell"),
    "int8": ("turing", "ampere", "ada", "hopper", "blackwell", "tpu"),
    "fp8": ("ampere", "ada", "hopper", "blackwell", "cdna3"),
}
FP8_WEIGHT_ONLY = ("ampere",)
"""No FP8 tensor cores: fp8 weights are read as 8-bit and multiplied in 16-bit (vLLM's FP8 Marlin, W8A16)."""


MXFP4_BELOW = ("turing", "volta")
"""MXFP4 weights (gpt-oss) need compute capability 8.0 (vLLM's Mxfp4Config.get_min_capability: 80): none below it."""


def checkpoint_dtype(dtype: str, m) -> str:
    """The precision whose kernel serves the weights: `dtype`, or under 'auto' the checkpoint's own quantization
    (an FP8 or MXFP4 or 4-bit checkpoint needs its kernel as --dtype fp8 would: gpt-oss on a T4, DeepSeek-R1's FP8
    on Gaudi 3); 16-bit or a format without a rule here ('auto')."""
    q = m.quantization_config if dtype == "auto" else None
    if q is None:
        return dtype
    method = q.quant_method.lower()
    if method == "mxfp4":
        return "mxfp4"
    if q.nvfp4:  # vLLM's FP4 kernels (native on SM 10.x, FP4 Marlin from SM 8.0): no rule here
        return "auto"
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin") or (method == "compressed-tensors" and q.bits == 4):
        return "int4" if (q.bits or 4) == 4 else "int8" if q.bits == 8 else "auto"
    if method in ("fp8", "fbgemm_fp8") or (method in ("compressed-tensors", "modelopt") and q.bits == 8):
        return "fp8"
    return "auto"


def unsupported(dtype: str, arch: str) -> str:
    """Why vLLM has no kernel for weights of `dtype` on an `arch` accelerator, or '' when it has one."""
    if dtype == "mxfp4":
        return f"vLLM has no mxfp4 weight kernel on {arch} accelerators (compute capability 8.0 and up)" \
            if arch in MXFP4_BELOW else ""  # fmt: skip
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


def checkpoint_refusal(dtype: str, m, arch: str, engine: str = "vllm") -> str:
    """dtype_refusal of the precision the weights are served in (checkpoint_dtype), saying so where 'auto' hid it."""
    served = checkpoint_dtype(dtype, m)
    why = dtype_refusal(served, arch, engine)
    return f"{why} (the checkpoint's own {served} weights, which dtype auto serves)" if why and served != dtype else why


def served_format(f: WeightFormat, dtype: str, arch: str) -> WeightFormat:
    """The weights as vLLM serves them on `arch`: with dtype auto, a bf16 checkpoint on a GPU without bf16 runs in
    fp16 (same bytes; the label and the matmul precision say fp16); fp8 weights on Ampere keep their bytes and
    multiply in bf16."""
    if dtype == "auto" and arch in NO_BF16 and f.compute_dtype == "bf16":
        return replace(f, compute_dtype="fp16", label=f.label.replace("bf16", "fp16"))
    if arch in FP8_WEIGHT_ONLY and f.compute_dtype == "fp8":
        return replace(f, compute_dtype="bf16", label=f"{f.label}, weight-only (FP8 Marlin, bf16 math)")
    return f


NVFP4_KV_SINCE = (0, 21)
"""vLLM adds --kv-cache-dtype nvfp4 in 0.20.0 (config/cache.py CacheDType), whose FlashInfer backend still raises
"nvfp4 KV cache is not yet supported"; 0.21.0 serves it through FlashInfer's trtllm-gen kernels (read in the wheels)."""
NVFP4_FA2_SINCE = (0, 32)
"""From 0.32.0 FlashInfer also reads an nvfp4 cache with its FA2 kernels on SM 8.x, 9.x and 12.x (flashinfer.py
_nvfp4_kv_on_fa2), except at head size 64 ("fa2 prefill misreads an NVFP4 KV cache at head_size 64") or with attention
sinks; 0.21–0.31 take it on SM 10.x only (supports_kv_cache_dtype: is_device_capability_family(100) and trtllm-gen)."""
SM_MAJOR = {"turing": 7, "ampere": 8, "ada": 8, "hopper": 9}
"""CUDA compute capability's major by arch; Blackwell's (10 datacenter, 12 workstation) is in the GPU spec."""


TRITON_MLA_ONLY = (7, 8, 12)
"""NVIDIA SM majors whose only vLLM MLA attention backend is Triton MLA (FlashMLA and FlashAttention-MLA need SM 9.x,
CUTLASS and FlashInfer MLA SM 10.x), whose TritonMLAImpl raises on a quantized KV cache (v1/attention/backends/mla/
triton_mla.py, every release read from the stored code)."""


def _sm_major(g) -> int | None:
    return int(g.compute_capability) if g.compute_capability else SM_MAJOR.get(g.arch)


def kv_dtype_refusal(kv: str, m, g, engine: str = "vllm", engine_version: str = "latest") -> str:
    """Why the engine refuses this KV-cache precision for this model on this GPU, or '' when it serves it. fp8 for an
    MLA model where Triton MLA is vLLM's only backend (SM 7.x, 8.x, 12.x: TRITON_MLA_ONLY); nvfp4 (vLLM's FlashInfer
    backend, read in the 0.20–0.34 wheels): vLLM 0.21+; no MLA (DeepSeek-V3.2's
    nvfp4_ds_mla is another dtype, not modelled); SM 10.x, or from 0.32 SM 8.x / 9.x / 12.x without head size 64 or
    sinks; FlashInfer's head sizes 64, 128, 256 (512 from 0.25)."""
    if kv == "fp8" and engine == "vllm" and m.is_mla and _sm_major(g) in TRITON_MLA_ONLY:
        return ("vLLM's only MLA backend on this GPU is Triton MLA, which refuses an fp8 KV cache (\"TritonMLA V1 "
                f"with FP8 KV cache not yet supported\"): FlashMLA, FlashInfer and CUTLASS MLA serve it on SM 9.x and "
                f"10.x; {g.name} is SM {_sm_major(g)}.x: use kv_cache_dtype auto")  # fmt: skip
    if kv != "nvfp4":
        return ""
    if engine != "vllm":
        return "SGLang has no nvfp4 KV-cache dtype (its 4-bit cache, fp4_e2m1, is not modelled); plan it with vLLM"
    version = version_tuple(engine_version)
    newest = version is None
    if not newest and version[:2] < NVFP4_KV_SINCE:
        return ("vLLM refuses --kv-cache-dtype nvfp4 before 0.21 (0.20 accepts the flag, but its FlashInfer backend "
                "raises 'nvfp4 KV cache is not yet supported')")  # fmt: skip
    if m.is_mla:
        return ("vLLM's nvfp4 KV cache is FlashInfer's, which has no MLA backend (nvfp4_ds_mla is another dtype, not "
                "modelled)")
    major, fa2 = _sm_major(g), newest or version[:2] >= NVFP4_FA2_SINCE
    where = "SM 10.x GPUs (B200, B300)" + (", or SM 8.x, 9.x and 12.x through FA2" if fa2 else " before vLLM 0.32")
    if major not in (8, 9, 10, 12) or (major != 10 and not fa2):
        this = f"SM {g.compute_capability:g}" if g.compute_capability else g.arch
        return f"vLLM reads an nvfp4 KV cache only on {where}; {g.name} is {this}"
    if major != 10 and (m.kv_head_dim == 64 or m.model_type.startswith("gpt_oss")):
        return ("vLLM's FA2 path for an nvfp4 KV cache (SM 8.x, 9.x, 12.x) refuses head size 64 and attention sinks "
                f"({m.kv_head_dim}{', sinks' if m.model_type.startswith('gpt_oss') else ''}); SM 10.x GPUs take them")
    sizes = (64, 128, 256, 512) if newest or version[:2] >= (0, 25) else (64, 128, 256)
    if m.kv_head_dim not in sizes:
        return f"FlashInfer's attention takes head sizes {', '.join(map(str, sizes))}, not {m.kv_head_dim} (nvfp4 KV cache)"
    return ""
