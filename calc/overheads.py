"""Default estimates of the memory vLLM's profiling run charges before the KV cache, per GPU [bytes].

These cannot be known exactly from a config (reference/vllm_kv.md §8.1); each is a scenario field that
overrides the estimate, and a vLLM startup log gives the measured values.

- Activation peak of the dummy forward (`torch_peak_increase`): `max_num_batched_tokens` tokens through the widest
  layer — the residual stream, q/k/v and attention output (≈4·hidden) and the MLP's gate/up/act (≈4·I/tp) in
  16 bits — plus fp32 logits and sampler copies (×3) for `min(max_num_seqs, max_num_batched_tokens)` sequences.
  Fitted so that Qwen2.5-7B on an RTX 4090 at 2,048 batched tokens and 128 sequences lands on the seed report's
  6.41 GiB pool (0.56 GiB here), and that 7–14B models at 2–16k batched tokens fall in the 0.94–2.51 GiB the
  reference logs show (Llama-3.1-8B at 8,192 tokens and 256 sequences: 1.49 GiB).
- Non-torch memory (`non_torch_increase`): 0.15 GiB on one GPU (logs: 0.02–0.35 GiB), plus 0.37 GiB of NCCL /
  custom all-reduce buffers when several GPUs work together ([aic] reserves 342–392 MB per GPU).
- CUDA graphs: 0.5 GiB on one GPU, +0.5 GiB with tensor parallelism (logs: "Graph capturing … took 0.2–3.45 GiB").
  vLLM ≥ 0.20 subtracts this estimate before sizing the pool (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1);
  0 with enforce_eager.
"""

from __future__ import annotations

from calc.specs import ModelSpec
from calc.units import GiB

ACT_BYTES = 2.0  # 16-bit activations
LOGIT_COPIES_BYTES = 3 * 4.0  # fp32 logits, probabilities and a sampler working copy
NON_TORCH_ONE_GPU_BYTES = 0.15 * GiB
NCCL_BYTES = 0.37 * GiB
CUDAGRAPH_ONE_GPU_BYTES = 0.5 * GiB
CUDAGRAPH_TP_EXTRA_BYTES = 0.5 * GiB


def activation_peak_bytes(m: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int, tp: int) -> float:
    widest_ffn = max(m.dense_ffn_size, m.expert_ffn_size * (m.num_experts_per_tok or 1))
    per_token = (4 * m.hidden_size + 4 * widest_ffn / tp) * ACT_BYTES
    sampled = min(max_num_seqs, max_num_batched_tokens)
    logits = sampled * m.vocab_size / tp * LOGIT_COPIES_BYTES
    return max_num_batched_tokens * per_token + logits


def non_torch_bytes(*, gpus_per_replica: int) -> float:
    return NON_TORCH_ONE_GPU_BYTES + (NCCL_BYTES if gpus_per_replica > 1 else 0.0)


def cudagraph_bytes(*, tp: int, enforce_eager: bool) -> float:
    if enforce_eager:
        return 0.0
    return CUDAGRAPH_ONE_GPU_BYTES + (CUDAGRAPH_TP_EXTRA_BYTES if tp > 1 else 0.0)
