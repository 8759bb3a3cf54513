"""Speculative decoding's memory under vLLM (--speculative-config): what the draft takes from the GPU.

- mtp: the checkpoint's own multi-token-prediction layers (num_nextn_predict_layers; Qwen's mtp_num_hidden_layers).
  vLLM loads them as the drafter in the same worker and registers their attention layers with the target's
  (gpu_model_runner.get_kv_cache_spec walks every Attention layer of the config), so each is one more KV layer of
  the model's full-attention kind in the shared pool — an MLA latent for DeepSeek, a full-attention layer for a
  Gated DeltaNet hybrid — whatever num_speculative_tokens (the layers are reused: spec_step_idx % layers). Its weights
  are a decoder layer with the model's FFN (MoE where the model has experts), loaded beside the model's ("Sharing
  target model embedding weights with the draft model": embeddings and lm_head are the target's), plus its input
  projection (eh_proj / fc, 2·hidden² parameters) and three norms, split over TP.
- eagle, eagle3: a separate EAGLE head checkpoint (--speculative-config's "model"), one decoder layer vLLM loads as
  the drafter (llama_eagle.py / llama_eagle3.py): its attention layer is one more KV layer of the target's shape in
  the shared pool (vllm#19996: Llama-3.1-8B with EAGLE on an H100, 51.63 GiB → 25,633 blocks = 33 layers of KV, not
  32's 26,434), its MLP dense of the target's width. Its weights are planned as that layer plus EAGLE's input
  projection (2·H → H) or EAGLE-3's (3·H → H, its attention reading 2·H, and its own head over a 32,000-token draft
  vocabulary); the embeddings (and EAGLE's head) are the target's. A head's real size varies by checkpoint: the plan
  says so, and weights_memory_bytes takes a measured one.
- ngram: prompt lookup, no draft model.
- Any method: a hybrid's recurrent state keeps num_speculative_tokens more blocks a request
  (MambaSpec.num_speculative_blocks: 1 + k, or 2 + k in prefix caching's align mode; v1/kv_cache_interface.py), and a
  Mamba-2 or Gated DeltaNet conv state k more rows (mamba_utils: conv_kernel − 1 + num_spec), which can raise the
  attention block size a page is fitted to.

Speed (with draft_acceptance_rate set; calc.spec_step, calc.step_inputs.draft_step_model): a step
verifies 1 + k tokens a decoding request and the MTP drafter runs k passes; a request gains τ = 1 + k · a tokens.
Without it latency is planned without speculation: the gain is the acceptance rate of the workload's text.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from calc.model_spec import ModelSpec
from calc.scenario import Scenario
from calc.state import state_kind

_DRAFTED: dict[tuple[int, int, bool], tuple[ModelSpec, ModelSpec]] = {}
_KEEP = 16


EAGLE = ("eagle", "eagle3")
EAGLE_MARK = "an EAGLE head's decoder layer is appended as the last layer (calc.speculative.drafted)"
EAGLE3_DRAFT_VOCAB = 32_000
"""EAGLE-3 heads' own output vocabulary (draft_vocab_size in their configs, with a d2t map to the target's)."""


def draft_layers(s: Scenario, m: ModelSpec) -> int:
    """Attention layers (and decoder layers of weights) the draft adds: the MTP layers under mtp, an EAGLE head's one
    layer under eagle / eagle3, else none (and none for a draft the plan refuses: spec_refusal)."""
    if s.engine != "vllm" or spec_refusal(s, m):
        return 0
    return m.num_nextn_predict_layers if s.speculative_method == "mtp" else 1 if s.speculative_method in EAGLE else 0


def speculative_blocks(s: Scenario) -> int:
    """Extra state blocks a request holds (vLLM MambaSpec.num_speculative_blocks): k with any method."""
    return s.num_speculative_tokens if s.speculative_method != "none" and s.engine == "vllm" else 0


def drafted(s: Scenario, m: ModelSpec) -> ModelSpec:
    """The model as vLLM lays out memory with the draft: its MTP layers appended as decoder layers of full attention
    (or the mixers the config types them with, mtp_layer_types) and the model's FFN; per-layer lists take the values
    of the model's last layer of that mixer. The same spec when the scenario drafts none. Kept for the last few models
    asked."""
    n = draft_layers(s, m)
    if not n or EAGLE_MARK in m.assumptions or spec_refusal(s, m):  # an MTP draft zeroes num_nextn_predict_layers;
        return m  # an EAGLE one says so; a refused draft is not laid out
    key = (id(m), n, s.speculative_method in EAGLE)
    if key in _DRAFTED and _DRAFTED[key][0] is m:
        return _DRAFTED[key][1]
    data = m.model_dump(exclude_none=True)
    per_layer = {k: v for k, v in data.items() if k in ("kv_heads_per_layer", "intermediate_size_per_layer")}
    eagle = s.speculative_method in EAGLE
    ffn = "moe" if m.routed_experts and not eagle else "dense"  # an EAGLE head's MLP is dense
    typed = tuple(m.mtp_layer_types or ())[:n] if not eagle else ()
    mixers = (*typed, *("full_attention",) * (n - len(typed)))  # Step-3.5 types its MTP layers (sliding)
    attention = [i for i, x in enumerate(m.layer_types) if x == mixers[0]]
    source = attention[-1] if attention else m.num_hidden_layers - 1
    data |= {"num_hidden_layers": m.num_hidden_layers + n, "num_nextn_predict_layers": 0, "mtp_layer_types": None,
             "layer_types": (*m.layer_types, *mixers),
             "mlp_layer_types": (*m.mlp_layer_types, *(ffn,) * n),
             **{k: (*v, *(v[source],) * n) for k, v in per_layer.items()}}  # fmt: skip
    data.pop("hybrid_override_pattern", None)  # the lists above are the layers
    if eagle:
        data["assumptions"] = (*m.assumptions, EAGLE_MARK)
    out = ModelSpec.model_validate(data)
    if len(_DRAFTED) >= _KEEP:
        _DRAFTED.pop(next(iter(_DRAFTED)))
    _DRAFTED[key] = (m, out)
    return out


class DraftLayers(NamedTuple):
    """Parameters of MTP layers (linear with each one's 2·H → H input projection, routed experts, norms with its
    three H-wide ones) and the bytes a linear weight and an expert weight take in them."""

    linear: int
    experts: int
    norms: int
    linear_bytes: float
    expert_bytes: float


def eagle3_extra(m: ModelSpec) -> int:
    """What an EAGLE-3 head has beyond a decoder layer and a 2·H → H projection [parameters]: its projection takes
    3·H (three of the target's hidden states), its attention's q, k and v read 2·H (the embedding beside the fused
    state), and its own head over EAGLE3_DRAFT_VOCAB tokens (llama_eagle3.py)."""
    h, d = m.hidden_size, m.kv_head_dim
    return h * h + h * (m.num_attention_heads or 1) * d + 2 * h * m.kv_heads * d + EAGLE3_DRAFT_VOCAB * h


def draft_layer_parts(m: ModelSpec, dm: ModelSpec, fmt, n: int, method: str = "mtp") -> DraftLayers:
    """The first `n` MTP layers of `dm` (drafted(s, m)), or an EAGLE head's one, at the weights' format, or at 16 bits
    where the checkpoint leaves its MTP layers unquantized (an ignore list naming them: nvidia's
    Qwen3.6-35B-A3B-NVFP4, "mtp*") or the head is a checkpoint of its own (EAGLE heads are published in bf16)."""
    h, p, layers = m.hidden_size, dm.params, range(m.num_hidden_layers, m.num_hidden_layers + n)
    whole = method in EAGLE or (m.quantization_config is not None and m.quantization_config.mtp_unquantized)
    linear_b, expert_b = (2.0, 2.0) if whole else (fmt.linear_bytes, fmt.expert_bytes)
    extra = eagle3_extra(m) if method == "eagle3" else 0
    return DraftLayers(p.in_layers("linear", layers) + n * 2 * h * h + extra, p.in_layers("experts", layers),
                       p.in_layers("norms", layers) + n * 3 * h, linear_b, expert_b)  # fmt: skip


def draft_weight_bytes(s: Scenario, m: ModelSpec, dm: ModelSpec, fmt) -> float:
    """The draft's weights on a GPU of the last stage [bytes]: its decoder layers (`dm`'s layers past `m`'s: linear and
    experts split over TP, the experts over DP · TP, norms whole) plus each MTP layer's input projection (2·H → H) and
    three H-wide norms (enorm, hnorm, the head's); at the weights' format, or at 16 bits where the checkpoint leaves
    its MTP layers unquantized (an ignore list naming them: nvidia's Qwen3.6-35B-A3B-NVFP4, "mtp*")."""
    n = draft_layers(s, m)
    if not n:
        return 0.0
    d = draft_layer_parts(m, dm, fmt, n, s.speculative_method)
    return (d.linear * d.linear_bytes + d.experts / s.data_parallel_size * d.expert_bytes) / s.tensor_parallel_size \
        + d.norms * 2.0  # fmt: skip


def accepted_tokens(s: Scenario, m: ModelSpec) -> float | None:
    """τ = 1 + k · a: tokens a decoding request gains a step with k draft tokens accepted at rate a (vLLM's mean
    acceptance length = 1 + accepted / drafts, and its acceptance rate = accepted / (drafts · k)); None where latency
    is planned without speculation (no method, no draft_acceptance_rate, or a draft the plan refuses)."""
    if s.speculative_method == "none" or s.draft_acceptance_rate is None or s.output_len < 2 or spec_refusal(s, m):
        return None  # a one-token output has no decode step to speculate in
    return 1.0 + s.num_speculative_tokens * s.draft_acceptance_rate


def tokens_per_step(s: Scenario, m: ModelSpec) -> float | None:
    """What a decoding request gains a step over its whole output: a request's N − 1 decoded tokens take whole
    steps, ⌈(N − 1) / τ⌉ of them, so (N − 1) / ⌈(N − 1) / τ⌉ ≤ τ (a 2-token output gains nothing from any τ: its one
    token takes a step); None where latency is planned without speculation (accepted_tokens)."""
    tau = accepted_tokens(s, m)
    if tau is None:
        return None
    decoded = s.output_len - 1
    return decoded / math.ceil(decoded / tau - 1e-9)


def spec_decode_stats(s: Scenario, m: ModelSpec, *, output_tokens: int, completed: int) -> dict | None:
    """The speculative-decoding figures `vllm bench serve` adds to its result where the server speculates (its
    spec_decode_* keys, vllm/benchmarks/serve.py), for `output_tokens` generated by `completed` requests as planned:
    each request's first token comes from its prompt step, the other tokens from drafts (verify steps) of τ tokens
    each, k drafted and τ − 1 accepted a draft. Acceptance rate in %, as the tool writes it. None without speculation."""
    tau = accepted_tokens(s, m)
    if tau is None:
        return None
    k = s.num_speculative_tokens
    drafts = round(max(0, output_tokens - completed) / tokens_per_step(s, m))  # whole steps: tokens_per_step
    return {"spec_decode_acceptance_rate": 100.0 * s.draft_acceptance_rate, "spec_decode_acceptance_length": tau,
            "spec_decode_num_drafts": drafts, "spec_decode_draft_tokens": drafts * k,
            "spec_decode_accepted_tokens": round(drafts * (tau - 1))}  # vLLM counts a last step's extra tokens too


def spec_refusal(s: Scenario, m: ModelSpec) -> str:
    """Why speculative decoding is not planned here, or ''."""
    if s.speculative_method == "none":
        return ""
    if s.engine != "vllm":
        return "speculative decoding is planned under vLLM only: set speculative_method none for SGLang"
    if s.pipeline_parallel_size > 1:
        return "speculative decoding with pipeline parallelism is not planned: use pipeline_parallel_size 1"
    if s.speculative_method in EAGLE and not m.num_attention_heads:
        return ("an EAGLE head is an attention decoder layer over the model's own heads, and this model has no "
                "attention layers (a pure state-space model): use speculative_method ngram or none")  # fmt: skip
    if s.speculative_method in EAGLE and m.kv_lora_rank is not None:
        return ("an EAGLE head for an MLA model (DeepSeek, Kimi) is not planned: its KV layout is the head's own; use "
                "speculative_method mtp with the checkpoint's MTP layers")  # fmt: skip
    if s.speculative_method == "mtp" and not m.num_nextn_predict_layers:
        return ("this checkpoint has no multi-token-prediction layers (num_nextn_predict_layers, or Qwen's "
                "mtp_num_hidden_layers, is 0 or absent): speculative_method mtp needs them")  # fmt: skip
    return ""


def spec_note(s: Scenario, m: ModelSpec) -> str:
    """What the plan says of a scenario with speculative decoding ('' without)."""
    if s.speculative_method == "none" and s.draft_acceptance_rate is not None:
        return "draft_acceptance_rate: no effect without a speculative_method (mtp, eagle, eagle3 or ngram)"
    if s.speculative_method == "none" or spec_refusal(s, m):
        return ""
    k = s.num_speculative_tokens
    parts = []
    if s.speculative_method in EAGLE:
        parts.append("its EAGLE head, a checkpoint of its own, loads beside the model and holds one layer of KV of "
                     "the model's shape in the shared pool; its weights are planned as one dense decoder layer of the "
                     "model's width with its input projection" + (" and a 32,000-token head" if s.speculative_method
                     == "eagle3" else "") + ", in bf16: a head's real size varies, set weights_memory_bytes to the "
                     "model's and the head's together where known")  # fmt: skip
    elif n := draft_layers(s, m):
        parts.append(f"its {n} MTP layer{'s' if n > 1 else ''} load{'' if n > 1 else 's'} beside the model and "
                     f"hold{'' if n > 1 else 's'} KV in the shared pool")  # fmt: skip
    if m.plan.state():
        rows = f" (and its conv state {k} more row{'s' if k > 1 else ''})" if state_kind(m) in ("mamba2", "gdn") else ""
        parts.append(f"each request's recurrent state keeps {k} more block{'s' if k > 1 else ''}{rows}")
    said = "; ".join(parts) or "no draft weights or KV"
    head = f"speculative decoding ({s.speculative_method}, {k} token{'s' if k > 1 else ''} a step): {said}. "
    tau = accepted_tokens(s, m)
    if tau is None:
        return head + ("Latency and throughput are planned without speculation: the gain depends on the acceptance "
                       "rate of the workload's text; set draft_acceptance_rate (vLLM logs it as 'Avg Draft acceptance "
                       "rate') to plan with it. Published rates: DeepSeek-R1 with MTP 1, 81–82 % (vllm-project/vllm"
                       "#12755); GLM-5-FP8 with MTP 3 on random-token prompts, 21 % (vLLM recipes)")  # fmt: skip
    drafter = ("the EAGLE head drafts" if s.speculative_method in EAGLE else "the MTP layer drafts"
               if draft_layers(s, m) else "prompt lookup drafts")  # fmt: skip
    per = tokens_per_step(s, m)
    n = s.output_len - 1
    whole = f", {per:.2f} over {n:,} token{'s' if n > 1 else ''} in whole steps" if per < tau * 0.995 else ""
    budget = ""
    if (c := min(s.rank_concurrency, s.max_num_seqs)) * (k + 1) >= s.max_num_batched_tokens:
        budget = (f". {c:,} requests × {k + 1} tokens fill max_num_batched_tokens {s.max_num_batched_tokens:,}: "
                  "vLLM then skips decodes and admits no prompt until some finish; the plan keeps as many in the "
                  "engine as leave one prompt chunk beside them and the rest in its queue (the simulation plays it "
                  f"out); raise max_num_batched_tokens above {c * (k + 1):,} to avoid it")  # fmt: skip
    return head + (f"Planned with draft_acceptance_rate {s.draft_acceptance_rate:g}: a step runs {k + 1} tokens a "
                   f"request, {drafter} {k}, a request gains 1 + {k} × {s.draft_acceptance_rate:g} = {tau:.2f}{whole} "
                   f"(TPOT = step / {per:.2f}; ITL = the step, a chunk of them){budget}. At low concurrency read the gain as an upper "
                   "bound: one request at a time, SGLang's MTP steps took 1.9–2.9× a plain step where this plans "
                   "1.2–1.4×, and vLLM's EAGLE-3 on an 8 B about 1 ms a draft token (history (36)). The benchmark "
                   "simulation plays a step per accepted token, so an arriving prompt there waits for that share of "
                   "the step in flight, where vLLM adds it at the next verify step: its TTFT can read below the "
                   "estimate's, which waits for the whole step")  # fmt: skip
