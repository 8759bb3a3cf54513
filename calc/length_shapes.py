"""How request lengths vary in the benchmark datasets other than `random`: ShareGPT as each benchmark client sends it.

A shape is 40 equal-probability bins of a length distribution, each bin's mean over the whole distribution's mean (so
a shape averages 1). A replay draws a bin uniformly for each request and scales it by the mean length the run printed
(its "Total input tokens" / requests): the tokenizer sets the means, the conversations set the shape.

Source: efeslab/Nanoflow, datasets/traces/sharegpt.csv at d6b381e58110a8b5d08cfabd4a55c0d5d0ebef57 (Apache-2.0;
shipped as tests/data/sharegpt/nanoflow_sharegpt.csv): the first human message and the first reply of each of 58,787
ShareGPT_V3_unfiltered_cleaned_split.json conversations — the file both clients read — counted by a LLaMA tokenizer
(lmsys/longchat-13b-16k, BOS included, as vLLM counts). Each client keeps what its own filter keeps:

- `vllm bench serve --dataset-name sharegpt` (vllm/benchmarks/datasets/utils.py is_valid_sequence at 237145e): prompt
  and reply ≥ 4 tokens, prompt ≤ 1,024, prompt + reply ≤ 2,048 — 52,157 rows; means 110.6 / 328.3 tokens. Prompts
  are skewed (median 0.28 × the mean, p90 3.1 ×), replies less (median 0.88 ×, p90 2.05 ×).
- `python -m sglang.bench_serving` (its default dataset; bench_serving.py at 0033168): both ≥ 2 tokens, no length cap
  unless --sharegpt-context-len — 58,766 rows; means 298.9 / 323.7; the longest prompts are 14 × the mean on average
  in the top bin.

Prompt and reply lengths are drawn independently: in the source they hardly move together (Spearman 0.15).
"""

from __future__ import annotations

import numpy as np

SHAREGPT_VLLM_INPUT = (
    0.0453, 0.0614, 0.0732, 0.0825, 0.0910, 0.0995, 0.1081, 0.1162, 0.1250, 0.1337, 0.1429, 0.1526, 0.1634, 0.1751,
    0.1867, 0.2019, 0.2158, 0.2310, 0.2504, 0.2721, 0.2986, 0.3277, 0.3604, 0.4003, 0.4442, 0.4976, 0.5642, 0.6417,
    0.7332, 0.8429, 0.9767, 1.1545, 1.3909, 1.7106, 2.1291, 2.7230, 3.5195, 4.4734, 5.9340, 7.9489,
)  # fmt: skip
SHAREGPT_VLLM_OUTPUT = (
    0.0332, 0.0736, 0.1035, 0.1391, 0.1887, 0.2409, 0.2873, 0.3281, 0.3699, 0.4134, 0.4588, 0.5081, 0.5582, 0.6049,
    0.6508, 0.6974, 0.7403, 0.7808, 0.8208, 0.8588, 0.8990, 0.9410, 0.9842, 1.0258, 1.0702, 1.1158, 1.1628, 1.2139,
    1.2684, 1.3293, 1.3984, 1.4789, 1.5712, 1.6763, 1.8026, 1.9590, 2.1596, 2.3920, 2.6764, 3.0182,
)  # fmt: skip
SHAREGPT_SGLANG_INPUT = (
    0.0086, 0.0181, 0.0247, 0.0286, 0.0324, 0.0359, 0.0393, 0.0427, 0.0463, 0.0501, 0.0543, 0.0582, 0.0624, 0.0680,
    0.0734, 0.0794, 0.0859, 0.0937, 0.1032, 0.1148, 0.1273, 0.1425, 0.1604, 0.1817, 0.2089, 0.2412, 0.2802, 0.3283,
    0.3903, 0.4771, 0.5961, 0.7591, 0.9953, 1.3206, 1.7297, 2.3753, 3.3034, 4.5472, 6.7343, 13.9827,
)  # fmt: skip
SHAREGPT_SGLANG_OUTPUT = (
    0.0187, 0.0412, 0.0768, 0.1059, 0.1404, 0.1912, 0.2459, 0.2942, 0.3370, 0.3810, 0.4261, 0.4737, 0.5246, 0.5738,
    0.6214, 0.6688, 0.7165, 0.7606, 0.8034, 0.8451, 0.8855, 0.9298, 0.9748, 1.0206, 1.0668, 1.1155, 1.1659, 1.2193,
    1.2770, 1.3402, 1.4140, 1.4995, 1.5963, 1.7079, 1.8425, 2.0105, 2.2244, 2.4679, 2.7539, 3.2415,
)  # fmt: skip

DATASETS = {
    "sharegpt": (SHAREGPT_VLLM_INPUT, SHAREGPT_VLLM_OUTPUT),
    "sharegpt-sglang": (SHAREGPT_SGLANG_INPUT, SHAREGPT_SGLANG_OUTPUT),
}
"""{dataset: (prompt shape, reply shape)}; "random" (lengths around the stated ones, calc.sim_stats) is not here."""
SHAREGPT_MEAN_TOKENS = (110.6, 328.3)
"""(prompt, reply) means under vLLM's filter, LLaMA tokenizer: `--dataset-name sharegpt` without stated means."""


def draw(shape: tuple[float, ...], mean_tokens: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n lengths [tokens]: a uniformly drawn bin of `shape` times `mean_tokens`, rounded, at least 1."""
    bins = np.asarray(shape)
    return np.maximum(1, np.rint(mean_tokens * bins[rng.integers(0, len(bins), n)])).astype(np.int64)
