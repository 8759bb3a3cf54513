"""Default estimates of the memory vLLM's profiling run charges before the KV cache, per GPU [bytes].

These cannot be known exactly from a config (reference/vllm_kv.md §8.1); each is a scenario field that
overrides the estimate, and a vLLM startup log gives the measured values.

- Activation peak of the dummy forward (`torch_peak_increase`): `max_num_batched_tokens` tokens through the widest
  layer — the residual stream, q/k/v and attention output (≈4·hidden) and the MLP's gate/up/act (≈4·I/tp) in
  16 bits — plus fp32 logits and sampler copies (×3) for `min(max_num_seqs, max_num_batched_tokens)` sequences, over
  the whole vocabulary on every GPU (vLLM's LogitsProcessor all-gathers them over the tensor-parallel group).
  Fitted so that Qwen2.5-7B on an RTX 4090 at 2,048 batched tokens and 128 sequences lands on the seed report's
  6.41 GiB pool (0.56 GiB here), and that 7–14B models at 2–16k batched tokens fall in the 0.94–2.51 GiB the
  reference logs show (Llama-3.1-8B at 8,192 tokens and 256 sequences: 1.49 GiB).
- Multimodal models: vLLM profiles the vision encoder too (notes/vllm_hybrid.md §5): the peak is the larger of
  the encoder's dummy batch and the encoder cache (budget = max(max_num_batched_tokens, the largest item) tokens
  of LM width) held during the LM forward. Qwen2.5-VL-7B at max_model_len 128,000 profiles a 114,688-token video:
  ≈ 16 GiB (a real v0.23 log needed more than 15 GiB of non-weight memory). Qwen3-VL and Qwen3.5/3.6 profile one
  16,384-token image whatever max_model_len: 65,536 ViT positions, ≈ 2.7 GiB for their 1,152-wide, 27-block tower.
- Non-torch memory (`non_torch_increase`): 0.15 GiB on one GPU (logs: 0.02–0.35 GiB), plus 0.37 GiB of NCCL /
  custom all-reduce buffers when several GPUs work together ([aic] reserves 342–392 MB per GPU).
- CUDA graphs: 0.5 GiB on one GPU, +0.5 GiB with tensor parallelism (logs: "Graph capturing … took 0.2–3.45 GiB").
  vLLM ≥ 0.20 subtracts this estimate before sizing the pool (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1);
  0 with enforce_eager.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine_spec import version_tuple
from calc.specs import ModelSpec
from calc.units import GiB

ACT_BYTES = 2.0  # 16-bit activations
LOGIT_COPIES_BYTES = 3 * 4.0  # fp32 logits, probabilities and a sampler working copy
NON_TORCH_ONE_GPU_BYTES = 0.15 * GiB
NCCL_BYTES = 0.37 * GiB
CUDAGRAPH_ONE_GPU_BYTES = 0.5 * GiB
CUDAGRAPH_TP_EXTRA_BYTES = 0.5 * GiB


def activation_peak_bytes(m: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int, tp: int,
                          max_model_len: int = 8192) -> float:  # fmt: skip
    """The LM dummy forward; for a multimodal model, the larger of the vision encoder's dummy batch and the encoder
    cache held during the LM forward (vLLM profile_run, notes §5.2), plus Qwen3-VL's deepstack buffers: one
    max_num_batched_tokens × hidden_size 16-bit tensor per deepstack level, allocated with the model (vLLM
    qwen3_vl.py and qwen3_omni_moe_thinker.py `deepstack_input_embeds`), so out of the same memory."""
    widest_ffn = max(m.dense_ffn_size, m.expert_ffn_size * (m.num_experts_per_tok or 1))
    per_token = (4 * m.hidden_size + 4 * widest_ffn / tp) * ACT_BYTES
    sampled = min(max_num_seqs, max_num_batched_tokens)
    logits = sampled * m.vocab_size * LOGIT_COPIES_BYTES  # all-gathered: the whole vocabulary on every rank
    lm = max_num_batched_tokens * per_token + logits
    mm = encoder_profile(m, max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len)
    if mm is None:
        return lm
    v = m.vision_config
    vit = mm.patches * (4 * v.hidden_size + 4 * v.intermediate_size / tp) * ACT_BYTES  # type: ignore[union-attr]
    deepstack = len(v.deepstack_visual_indexes) * max_num_batched_tokens * m.hidden_size * 2.0  # type: ignore[union-attr]
    return max(vit, mm.budget_tokens * m.hidden_size * ACT_BYTES + lm) + deepstack


@dataclass(frozen=True)
class EncoderProfile:
    """What vLLM profiles for a vision model: `items` dummy items of `tokens_per_item` (budget = max(mnbt, item))."""

    modality: str
    tokens_per_item: int
    items: int
    budget_tokens: int
    patches: int
    """Vision-encoder positions of the dummy batch (before the spatial merge)."""


QWEN_MAX_IMAGE_TOKENS = 16384  # max_pixels 12,845,056 = 16,384 · 28 · 28 (Qwen2-VL image processor)
QWEN_VIDEO_GROUPS = 7  # _MAX_FRAMES_PER_VIDEO = 14 frames, temporal patch 2
QWEN3_IMAGE_MAX_PIXELS = 16_777_216
"""Qwen3-VL's and Qwen3.5/3.6's image processor cap (preprocessor_config.json size.longest_edge, 4,096²): 16,384
tokens of 32 × 32 pixels. Their video processor caps all frames together at 25,165,824 pixels and vLLM sizes a dummy
video at 2 frames (qwen3_vl.py get_max_video_tokens, 0.15+; the same total-pixel cap before): 12,288 tokens, fewer
than an image, so vLLM profiles one image ("Encoder cache will be initialized with a budget of 16384 tokens, and
profiled with 1 image items of the maximum feature size" in Qwen3.5/3.6 logs of vLLM 0.20–0.24), not Qwen2-VL's
14-frame video."""
QWEN3_VISION_TYPES = ("qwen3_vl", "qwen3_5")


def encoder_profile(m: ModelSpec, *, max_num_batched_tokens: int, max_model_len: int) -> EncoderProfile | None:
    """vLLM's encoder budget (compute_mm_encoder_budget) with the default limits: Qwen2-VL's largest item is a
    14-frame video of 16,384-token frames (as many frame pairs as fit in max_model_len), Qwen3-VL's and
    Qwen3.5's one 4,096² image (QWEN3_IMAGE_MAX_PIXELS); fixed-size ViTs give
    (image_size / patch)² / merge² tokens per image. One item unless the budget holds more."""
    v = m.vision_config
    if v is None:
        return None
    merge = v.spatial_merge_size**2
    if v.model_type.startswith(QWEN3_VISION_TYPES):
        modality, per_item = "image", QWEN3_IMAGE_MAX_PIXELS // (v.patch_size**2 * merge)
    elif v.model_type.startswith("qwen"):
        groups = max(1, min(QWEN_VIDEO_GROUPS, max_model_len // QWEN_MAX_IMAGE_TOKENS))
        modality, per_item = (
            ("video", groups * QWEN_MAX_IMAGE_TOKENS) if groups > 1 else ("image", QWEN_MAX_IMAGE_TOKENS)
        )
    else:
        side = (v.image_size or 896) // v.patch_size
        modality, per_item = "image", max(1, side * side // merge)
    budget = max(max_num_batched_tokens, per_item)
    items = max(1, budget // per_item)
    return EncoderProfile(modality, per_item, items, budget, items * per_item * merge)


TORCH_SORT_BYTES_PER_LOGIT = 38.0
"""The dummy sampler pass's peak per logit on vLLM's torch-native top-k/top-p path (the default of pip installs of
0.10–0.19, which use FlashInfer's sampler only where it is installed and enabled): bf16 logits 2 + fp32 copy 4 +
sorted values 4 + sorted indices 8 + the sort's reverse indices 8 + its scratch keys 4 and values 8 (vLLM 0.10.2
v1/sample/ops/topk_topp_sampler.py `apply_top_k_top_p`; PyTorch SortStable.cu segmented sort). Qwen3-Next-80B on two
H200s at 1,024 sequences: 1,024 × 151,936 × 38 B = 5.51 GiB, + 0.03 GiB of hidden states; logged 5.58 GiB
(tests/data/vllm_logs/h200x2-qwen3-next-80b-tp2-defaults.log, vLLM 0.10.2)."""
TORCH_SORT_RELEASES = ((0, 10), (0, 20))
"""[first, last) vLLM releases whose default sampler is the torch-native sort (0.20 brought a Triton top-k/top-p)."""


def torch_sort_extra_bytes(m: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int) -> float:
    """What the torch-native sampler's peak adds to the estimate's logits term, per GPU [bytes]: R · V · (38 − 12)."""
    rows = min(max_num_seqs, max_num_batched_tokens)
    return rows * m.vocab_size * (TORCH_SORT_BYTES_PER_LOGIT - LOGIT_COPIES_BYTES)


def non_torch_bytes(*, gpus_per_replica: int, engine: str = "vllm") -> float:
    """vLLM: what its profile counts outside torch (the context's growth, NCCL buffers); SGLang: what is in use
    before it loads the weights (SGLANG_PRELOAD_BYTES), which its fraction applies to the rest of (calc.pool)."""
    if engine == "sglang":
        return SGLANG_PRELOAD_BYTES + (SGLANG_PRELOAD_TP_BYTES if gpus_per_replica > 1 else 0.0)
    return NON_TORCH_ONE_GPU_BYTES + (NCCL_BYTES if gpus_per_replica > 1 else 0.0)


SGLANG_PRELOAD_BYTES = 0.70 * GiB
"""Memory in use when SGLang measures what is free before loading the weights (the CUDA context, the distributed
init): its pool is --mem-fraction-static × (total − this) − weights (model_runner: rest = free after loading − free
before · (1 − fraction)). The median over the calibration part's logged one-GPU SGLang pools (Massed Compute's
server_info, non-hybrid models: total − (max_total_num_tokens · bytes a token + weights) / fraction, 0.62–1.20 GiB;
history (25))."""
SGLANG_PRELOAD_TP_BYTES = 0.20 * GiB
"""More with tensor parallelism: the two-GPU calibration servers' 0.90 GiB, less one GPU's 0.70 (NCCL's buffers)."""


GRAPHS_SUBTRACTED_SINCE = (0, 20)
"""vLLM subtracts its CUDA-graph estimate before sizing the pool from 0.20 on; earlier releases capture the graphs
after the pool is sized (their logs' "Graph capturing finished … took X GiB" comes out of the headroom)."""


def graphs_subtracted(s) -> bool:
    """Whether the scenario's engine takes the CUDA-graph estimate from the pool: estimate_cudagraphs, with graphs
    (not enforce_eager), and under vLLM a release of 0.20 or later ('latest' is). SGLang never: its graphs come out
    of what its --mem-fraction-static leaves (calc.pool)."""
    if not s.estimate_cudagraphs or s.enforce_eager or s.engine == "sglang":
        return False
    version = version_tuple(s.engine_version) if s.engine == "vllm" else None
    return version is None or version[:2] >= GRAPHS_SUBTRACTED_SINCE


def cudagraph_bytes(*, tp: int, enforce_eager: bool) -> float:
    if enforce_eager:
        return 0.0
    return CUDAGRAPH_ONE_GPU_BYTES + (CUDAGRAPH_TP_EXTRA_BYTES if tp > 1 else 0.0)
