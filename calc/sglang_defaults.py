"""What SGLang's server takes when it is started without a flag, read in its released server_args.py and
model_runner (0.4.2–0.5.15.post1): its --chunked-prefill-size, its --mem-fraction-static and its running-request cap
(history (25), (26); the audit of 2026-12-05)."""

from __future__ import annotations

from calc.engine_spec import version_tuple
from calc.scenario import Scenario
from calc.specs import GPUSpec, ModelSpec

SGLANG_NO_TPU = "SGLang has no TPU backend (TPUs are served by sgl-jax, a separate project)"


def sglang_runs_on(g: GPUSpec) -> bool:
    """SGLang's devices are CUDA, ROCm and a few others (server_args.py `device`), not TPUs."""
    return g.vendor != "google"


def sglang_running_cap(pool_tokens: int, context_len: int) -> int:
    """The --max-running-requests SGLang takes when it is not given: min(pool / 2, the request-slot pool), the slots
    clamp(pool / context_len × 512, 2,048, 4,096) (model_runner's max_num_reqs, tp_worker; 0.4.6–0.5.23 alike)."""
    slots = min(max(int(pool_tokens / max(context_len, 1) * 512), 2048), 4096)
    return max(1, min(pool_tokens // 2, slots))


def sglang_chunk(version: str, gpu_mib: float) -> int:
    """The --chunked-prefill-size SGLang takes when it is not given, by release and the GPU's MiB (server_args.py):
    0.4.2–0.4.7 2,048 under 25,000 MiB, else 8,192 (0.4.7: 16,384 above 180,000); 0.4.8–0.5.2 2,048 under 35 GiB,
    8,192 under 160, else 16,384; 0.5.3 on 2,048 under 35 GiB, 4,096 under 60, 8,192 under 160, else 16,384."""
    release = version_tuple(version) or (0, 5, 15)
    g = gpu_mib
    if release < (0, 4, 8):
        return 16384 if release >= (0, 4, 7) and g > 180_000 else 2048 if g < 25_000 else 8192
    if release < (0, 5, 3):
        return 2048 if g < 35 * 1024 else 8192 if g < 160 * 1024 else 16384
    return 2048 if g < 35 * 1024 else 4096 if g < 60 * 1024 else 8192 if g < 160 * 1024 else 16384


FRACTION_RULES_READ = (0, 5, 15)
"""The newest release whose server_args.py sglang_mem_fraction follows (later ones are given its rules)."""


def _tp_table(parallel: int) -> float:
    """SGLang 0.4.2–0.4.7's fraction by the number of GPUs a replica spans."""
    return 0.79 if parallel >= 16 else 0.81 if parallel >= 8 else 0.85 if parallel >= 4 else 0.87 if parallel >= 2 else 0.88


def _prefill_graph_sizes(max_tokens: int, release: tuple) -> int:
    """How many prompt sizes SGLang captures prefill CUDA graphs for, up to max_tokens (server_args
    _generate_prefill_cuda_graph_batch_sizes, 0.5.8 and later)."""
    mid = range(576 if release >= (0, 5, 9) else 640, 1025, 64)
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *mid, *range(1280, 4097, 256),
             *range(4608, max_tokens + 1, 512)]  # fmt: skip
    return sum(1 for x in sizes if x <= max_tokens)


def sglang_mem_fraction(version: str, gpu_mib: float, *, tp: int = 1, pp: int = 1, dp: int = 1,
                        chunk: int | None = None, context_len: int | None = None, mla: bool = False,
                        multimodal: bool = False, rocm: bool = False) -> float:  # fmt: skip
    """The --mem-fraction-static SGLang takes when it is not given (server_args.py of each release, read in the
    wheels 0.4.2–0.5.15.post1; gpu_mib: nvidia-smi's total, G; dp > 1: DP attention; no speculative decoding):

        0.4.2–0.4.5  by tp: 0.88, 0.87 from 2 GPUs, 0.85 from 4, 0.81 from 8, 0.79 from 16
        0.4.6        the same up to 80 GiB, (G − 13 GiB) / G above
        0.4.7        the table (tp · pp), 0.79 above 180,000 MiB, min(table + 48 GiB · (1 − table) / G, (G − 18 GiB) / G)
                     above 96 GiB
        0.4.8–0.5.2  round((G − R) / G, 3), R = 2.8 + tp·pp/10 GiB under 35 GiB, 9.5 + tp·pp/2 under 90, 12 + tp·pp/2
                     under 160, else 32; + 4 GiB with DP attention
        0.5.3 on     R = 512 + 1.5 · max(chunk, 2,048) + 2 · cuda_graph_max_bs + 1,024 · tp·pp / 8 MiB, + 3 · bs · dp
                     with DP attention (+ 1.5 · bs · dp above bs 300), + 8 MiB a captured prompt size (0.5.10 on, its
                     prefill graphs; 1.5 GiB for MLA before 0.5.15; none with DP attention, pp > 1, vision, ROCm),
                     at least 10 GiB over 60 GiB

    chunk: --chunked-prefill-size (None: its default on this GPU). Two Massed Compute servers started without the
    flag logged 0.843 (Llama-3.1-8B, L40S, 0.5.14) and 0.857 (Llama-3.3-70B, two RTX PRO 6000, 0.5.15.post1), as
    this gives. Vision models' own factor (0.9–1.05 × 0.95) is not applied."""
    release = version_tuple(version) or (0, 5, 15)
    g, parallel = float(gpu_mib), tp * pp
    if release < (0, 4, 6):
        return _tp_table(tp)
    if release < (0, 4, 7):
        return _tp_table(tp) if g <= 81920 else (g - 13 * 1024) / g
    if release < (0, 4, 8):
        table = _tp_table(parallel) if g <= 81920 else 0.88
        if g > 180_000 and not rocm:
            return 0.79
        return min(table + 48 * 1024 * (1 - table) / g, (g - 18 * 1024) / g) if g > 96 * 1024 else table
    if release < (0, 5, 3):
        gib = 2.8 + parallel / 10 if g < 35 * 1024 else 9.5 + parallel / 2 if g < 90 * 1024 else \
            12 + parallel / 2 if g < 160 * 1024 else 32  # fmt: skip
        reserve = (gib + (4 if dp > 1 else 0)) * 1024
        return round((g - reserve) / g, 3)
    bs = 8 if g < 20 * 1024 else ((24 if release >= (0, 5, 5) else 16) if tp < 4 else 80) if g < 35 * 1024 else \
        (32 if tp < 4 else 160) if g < 60 * 1024 else (256 if tp < 4 else 512) if g < 160 * 1024 else 512  # fmt: skip
    chunk = chunk or sglang_chunk(version, g)
    reserve = 512 + 1.5 * max(chunk, 2048) + 2 * bs + parallel / 8 * 1024
    if dp > 1:
        reserve += 3 * bs * dp + (1.5 * bs * dp if bs > 300 else 0)
    prefill_graphs = release >= (0, 5, 10) and dp == 1 and pp == 1 and not multimodal and not rocm \
        and not (mla and release >= (0, 5, 15))  # fmt: skip
    if prefill_graphs:
        top = min(chunk, context_len) if context_len and release >= (0, 5, 13) else chunk
        reserve += 1.5 * 1024 if mla else 8 * _prefill_graph_sizes(top, release)
    if g > 60 * 1024:
        reserve = max(reserve, 10 * 1024)
    return round((g - reserve) / g, 3)


def sglang_fraction_note(s: Scenario, m: ModelSpec, g: GPUSpec) -> str | None:
    """Under SGLang, where the plan's fraction is not the one SGLang takes when started without --mem-fraction-static
    (sglang_mem_fraction at the scenario's release, GPU, TP, chunk and DP): say both. None under vLLM or when equal."""
    if s.engine != "sglang":
        return None
    own = sglang_mem_fraction(s.engine_version, g.smi_mib, tp=s.tensor_parallel_size * s.data_parallel_size,
                              pp=s.pipeline_parallel_size, dp=s.data_parallel_size,
                              chunk=s.max_num_batched_tokens * s.data_parallel_size, context_len=s.max_model_len,
                              mla=m.is_mla, multimodal=m.vision_config is not None, rocm=g.vendor == "amd")  # fmt: skip
    if abs(own - s.gpu_memory_utilization) < 5e-4:
        return None
    release = version_tuple(s.engine_version)
    rules = "its server_args at this release" if release is not None and release[:3] <= FRACTION_RULES_READ else \
        "its server_args as of 0.5.15, the newest read"  # fmt: skip
    return (f"SGLang started without --mem-fraction-static takes {own:g} here ({rules}, from "
            f"the GPU's {g.smi_mib:,.0f} MiB as nvidia-smi counts them ({g.memory_gib:g} GiB as torch does), the "
            f"chunk and the CUDA-graph sizes); this plan uses "
            f"{s.gpu_memory_utilization:g}, which its serve command passes. Set gpu_memory_utilization to {own:g} to "
            "plan a server started without it")  # fmt: skip
