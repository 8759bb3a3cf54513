"""How long one engine step takes: the roofline floor, then the estimate as that floor plus named terms.

A step carries `prefill_tokens` new prompt tokens (attending to `prefill_pairs` context tokens in all) and one
token for each of `decode_seqs` running sequences (reading `decode_context` tokens of KV in all). Per tensor-
parallel rank, with B the peak bandwidth and P the peak FLOP/s:

    floor     = max((weights + KV + state) / B, FLOP / P) + all-reduce bytes / link
    estimate  = weights / (B · a_bw · s_dtype)  ⊔  GEMM FLOP / (P · a_mm · n/(n + n½))      (⊔: the larger)
              + experts touched / (B · a_bw · s_moe)  ⊔  expert FLOP / (P · a_mm · m/(m + n½))
              + MoE layers · the FP8 experts' kernel time (CDNA3 only)
              + KV / (B · a_bw · s_attn)  ⊔  decode attention FLOP / (P · a_mm · s_attn_c)
              + prefill attention FLOP / (P · a_mm · s_attn_c)  + state read and written / (B · a_bw)
              + 2 · blocks · (α + 2 (tp − 1)/tp · tokens · hidden · 2 B / link)
              + step overhead + blocks · layer overhead + shared-expert MoE layers · their overhead
              + sequences · (per-sequence cost + streaming, when served)
blocks = (layers with a mixer + layers with an FFN) / 2: the layer count, but half of it for Nemotron-H and Mamba,
whose layers hold one sublayer each. The layer and shared-expert overheads are the CUDA-graph ones up to the
engine's largest captured step, × the eager ratio beyond it.

a_bw, a_mm: what microbenchmarks reach on this GPU (its spec file); s_*: how the engine's kernels use it, and the
fixed costs (its spec file, fitted on published benchmark runs). n½: tokens at which GEMMs reach half their
throughput; m: tokens each touched expert's GEMM sees. Distinct experts touched by n tokens choosing k of E:
E · (1 − (1 − k/E)^(g^x)) per MoE layer, x the routing exponent (1: uniform routing; real routers favour some
experts), g = decoding sequences + Σ m^y over the prompts being prefilled (m tokens each; y the prefill routing
exponent: a prompt's tokens favour the same experts). The Scenario's `mbu`/`mfu`, when set, replace a_bw·s and a_mm.

With p pipeline stages a step is a round in which every running request advances one token: the engines keep one
micro-batch in flight a stage, so the d decoding requests split into k = min(p, d) micro-batches (the prompt tokens in
one of them) and the round takes max(t(heavy), (t(heavy) + (k − 1) · t(light)) / p), each t the estimate above for the
whole model at one micro-batch, plus the d requests' per-sequence costs once (calc.pipeline_round.pipeline_round).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calc.engine_spec import EngineSpec
from calc.expert_parallel import bytes_factor, tokens_factor
from calc.expr import E
from calc.pipeline_round import pipeline_round
from calc.routing import distinct_experts
from calc.spec_step import per_token

TERM_LABELS = (
    ("weights_s", "weights"), ("experts_s", "experts"), ("fp8_moe_s", "FP8 expert kernels (CDNA3)"), ("kv_s", "KV reads"),
    ("prefill_attention_s", "prefill attention"), ("state_s", "SSM state"), ("allreduce_s", "all-reduces"),
    ("step_overhead_s", "step overhead"), ("layer_overhead_s", "layer overhead"),
    ("compile_s", "kernel compile (new prompt length)"), ("sequence_overhead_s", "per-sequence cost"),
    ("draft_s", "speculative draft"),
)  # fmt: skip


@dataclass(frozen=True)
class StepTerms:
    """One step's estimate, term by term [s]; `total_s` is their sum, `floor_s` the roofline floor beside it."""

    weights_s: float
    experts_s: float
    fp8_moe_s: float
    """The FP8 experts' own kernel time on CDNA3 (StepModel.fp8_moe_s)."""
    kv_s: float
    prefill_attention_s: float
    state_s: float
    allreduce_s: float
    step_overhead_s: float
    layer_overhead_s: float
    compile_s: float
    """A prompt step's kernel compile where the engine specialises a kernel on its token count (StepModel.compile_s)."""
    sequence_overhead_s: float
    floor_s: float
    flop: float
    bytes_moved: float
    draft_s: float = 0.0
    """Speculative decoding: the drafter's passes (StepModel.draft)."""

    @property
    def total_s(self) -> float:
        return (self.weights_s + self.experts_s + self.fp8_moe_s + self.kv_s + self.prefill_attention_s + self.state_s
                + self.allreduce_s + self.step_overhead_s + self.layer_overhead_s + self.compile_s
                + self.sequence_overhead_s + self.draft_s)  # fmt: skip

    def expr(self) -> E:
        """The estimate as its sum of named terms (the formula shown beside the number)."""
        parts = [E(getattr(self, name), label, unit="ms") for name, label in TERM_LABELS if getattr(self, name)]
        out = parts[0] if parts else E(0.0, "nothing", unit="ms")
        for part in parts[1:]:
            out = out + part
        return out

    @property
    def overhead_s(self) -> float:
        """The fixed costs no roofline carries (engine, launches, sampling, all-reduce latency)."""
        return self.step_overhead_s + self.layer_overhead_s + self.compile_s + self.sequence_overhead_s


@dataclass(frozen=True)
class StepModel:
    """A scenario's per-rank quantities, fixed once; `step_s` is then cheap (called by the simulation per event)."""

    dense_weight_bytes: float
    """Per rank: every weight but the routed experts and the input embedding, at its stored precision."""
    expert_bytes: float
    """Per rank: one routed expert of one MoE layer."""
    moe_layers: int
    shared_moe_layers: int
    """MoE layers that also run shared experts (DeepSeek, GLM-4.5, Kimi-K2, Qwen3-Next, Llama 4, Nemotron-3)."""
    experts: int
    top_k: int
    gemm_flop_per_token: float
    """Per rank: dense GEMMs (attention projections, mixers, MLPs, shared experts, norms), one token."""
    logits_flop_per_token: float
    """Per rank: the lm_head for one sampled token (every decode token, the last token of a prompt)."""
    expert_flop_per_token: float
    """Per rank: the routed experts one token visits, all MoE layers."""
    kv_read: tuple[tuple[float, float], ...]
    """Per rank, per attention kind: (KV bytes one context token adds in those layers, the context they cap at:
    the sliding window, the attention chunk, or inf)."""
    attention_flop: tuple[tuple[float, float], ...]
    """Per rank, per attention kind: (FLOP of one query token against one context token in those layers, cap)."""
    state_bytes_per_seq: float
    """Per rank: Mamba / linear-attention state one sequence reads and writes back each step."""
    layers: int
    blocks: float
    """Transformer blocks' worth of sublayers, (layers with a mixer + layers with an FFN) / 2: `layers` for most
    models, half of them for Nemotron-H and Mamba, whose layers hold one sublayer each. Kernel launches and
    all-reduces (one per sublayer under TP) count blocks."""
    allreduce_bytes_per_token: float
    allreduce_latency_s: float
    link_bytes_per_s: float
    tp: int
    bandwidth_bytes_per_s: float
    peak_flop_per_s: float
    effective_bandwidth_bytes_per_s: float
    """B · a_bw (the achievable bandwidth), or B · mbu when the scenario sets mbu."""
    effective_flop_per_s: float
    """P · a_mm, or P · mfu."""
    weight_share: float
    """The engine's kernel share for the dense weights' precision (1 for 16-bit)."""
    expert_weight_share: float
    """The engine's fused-MoE share × the kernel share for the experts' precision."""
    engine: EngineSpec
    eager: bool
    mbu_override: bool = False
    mfu_override: bool = False
    online: bool = True
    """Served over HTTP (each step also streams its tokens to clients); False for an offline batch."""
    allreduce_small_s_per_byte: float = 0.0
    """Where the all-reduces cross PCIe: extra seconds per bus byte up to allreduce_small_bytes, the slow rate of
    decode-size messages (calc.step_inputs.allreduce_link)."""
    allreduce_small_bytes: float = 0.0
    cp_collectives_s: float = 0.0
    """Decode context parallelism, a decode step: each attention layer's all-gather of the queries, all-gather of the
    softmax LSE and reduce-scatter of the outputs over the DCP group (vLLM mla/common.py cp_lse_ag_out_rs), at the
    all-reduce latency."""
    weight_half_tokens: float = 0.0
    """Tokens at which the dense weights' GEMMs reach half their throughput; 0: the engine's gemm_half_tokens
    (4-bit weight-only kernels pad a step to one 16-row MMA tile: calc.step_inputs.half_tokens)."""
    expert_half_tokens: float = 0.0
    """The same for the routed experts' GEMMs, at the experts' own precision."""
    prompt_steps_eager: bool = False
    """Steps that carry prompt tokens run without CUDA graphs whatever their size: SGLang captures prompt steps
    (piecewise graphs, its default since 0.5.10) only where it finds an attention module in every layer, which a
    model with Mamba or convolution layers does not have (calc.step_inputs.prompt_steps_eager)."""
    expert_ranks: int = 1
    """GPUs the routed experts are spread over whole (expert parallelism: the TP size); 1 = each GPU holds a slice
    of every expert (tensor parallelism). Above 1 a step waits for its busiest GPU (calc.expert_parallel)."""
    expert_compute_share: float = 0.0
    """The routed experts' GEMMs' share of the effective matmul rate: gemm_compute_share × moe_compute_share, times
    fp8_moe_compute_share where they run FP8 tensor cores (calc.step_inputs.expert_compute_share)."""
    balanced_router: bool = False
    """The model's router carries a learned load-balancing bias (calc.step_inputs.BALANCED_ROUTERS)."""
    chat: bool = False
    """Served on the chat endpoint (Scenario.endpoint_type 'openai-chat'): its streamed tokens cost more."""
    pp: int = 1
    """Pipeline stages, each working on its own micro-batch (vLLM V1's max_concurrent_batches = pipeline size,
    SGLang's event_loop_pp): a step is then a round in which every running request advances one token (calc.pipeline_round)."""
    dp: int = 1
    """Data-parallel attention ranks (Scenario.data_parallel_size). A MoE layer runs every rank's tokens at once, its
    experts spread over the dp · tp GPUs (each holds 1 / dp of what a tp-only rank holds, `expert_bytes` already
    / tp), its tokens gathered from and sent back to every rank over `moe_link_bytes_per_s`. The other dp − 1 ranks
    busy (`dp_busy` of them) are taken to decode as many sequences as this one, the rest to idle (`moe_tokens`)."""
    dp_busy: float = 1.0
    """Share of the other data-parallel ranks with requests: min(1, (C − 1) / (dp − 1)) for C in flight (calc.step_inputs);
    fewer requests than ranks leave some idle, each running one dummy token through the MoE layers."""
    moe_latency_s: float = 0.0
    """One collective over the dp · tp GPUs of a MoE layer [s] (the dp · tp group's all-reduce latency)."""
    moe_link_bytes_per_s: float = 0.0
    """The dp · tp group's link; its collectives move an all-reduce's bytes for the dp ranks' tokens (vLLM's
    allgather_reducescatter backend)."""
    fp8_moe_s: float = 0.0
    """Per step where experts are touched: FP8 routed experts on a CDNA3 GPU, the engine's rocm_fp8_moe_layer_s × the
    MoE layers (calc.step_inputs.fp8_moe_s)."""
    compile_s: float = 0.0
    """Added to a step that carries prompt tokens: the engine compiling a kernel specialised on the step's token
    count, which a served workload's varied lengths make new at nearly every prompt step of a fresh server (SGLang's
    q/k L2 norm of gated-DeltaNet and KDA layers before 0.5.16: calc.step_inputs.compile_s). The simulation charges
    it only for counts it has not run before (calc.scheduler)."""
    spec_tokens: int = 0
    """Speculative decoding with an acceptance rate (calc.speculative): k draft tokens a decoding request verifies
    each step; 0 = none. A step's time is then per token (calc.spec_step.per_token)."""
    accepted_tokens: float = 1.0
    """τ = 1 + k · acceptance rate: tokens a decoding request gains a step on average."""
    draft: StepModel | None = None
    """The drafter (one MTP layer, its input projection and the head) as a step model of its own; None: no draft
    model on the GPU (ngram)."""

    @property
    def decode_tokens(self) -> int:
        """Tokens of the step budget (max_num_batched_tokens) a decoding request takes: 1, or 1 + k under speculative
        decoding (vLLM schedules num_tokens_with_spec − num_computed_tokens and takes them from the budget)."""
        return 1 + self.spec_tokens

    def prompt_room(self, budget: float, decode_seqs: float) -> float:
        """Prompt tokens a step has room for beside `decode_seqs` decoding requests: the budget less their tokens
        (decode_tokens each); under speculative decoding a step is one token of τ, so 1 / τ of that."""
        return (budget - decode_seqs * self.decode_tokens) / self.steps_per_real(decode_seqs)

    def steps_per_real(self, decode_seqs: float) -> float:
        """Per-token steps in one real step beside `decode_seqs` decoding requests: τ under speculative decoding
        (calc.spec_step.per_token), else 1 (and 1 for a step with no decoding request)."""
        return self.accepted_tokens if decode_seqs and self.spec_tokens else 1.0

    def experts_touched(self, tokens: float, prefill_tokens: float = 0.0, prefill_seqs: int = 1,
                        verify_tokens: float = 0.0, verify_seqs: int = 0) -> float:  # fmt: skip
        """Distinct experts per MoE layer that a step's tokens visit: touched(g^x) of calc.routing (uniform: E · (1 −
        (1 − k/E)^(g^x)); the engine's routing_skew favours some experts), x the engine's routing_exponent and g the
        independent draws: one per decoding sequence, m^y for the m tokens of each prompt being prefilled (y:
        `prefill_routing`; `prefill_seqs` prompts share the `prefill_tokens` evenly). `tokens` counts them all
        (decode sequences + prefill tokens). Speculative decoding: `verify_tokens` of the prefill tokens are the
        draft tokens of `verify_seqs` decoding requests, routed as a short prompt each."""
        if not self.experts:
            return 0.0
        e = self.engine
        g = tokens
        y = self.prefill_routing
        if prefill_tokens and y != 1.0:
            prompt, seqs = prefill_tokens - verify_tokens, max(1, prefill_seqs)
            g = tokens - prefill_tokens + (seqs * (prompt / seqs) ** y if prompt else 0.0)
            g += verify_seqs * (verify_tokens / verify_seqs) ** y if verify_tokens else 0.0
        if self.dp > 1:  # the busy ranks' decodes (moe_tokens); the idle ranks' dummy tokens alike: one draw
            decodes = (self.dp - 1) * self.dp_busy * (tokens - prefill_tokens + verify_tokens)
            g = g + decodes + (1.0 if self.dp_busy < 1 or not decodes else 0.0)
        return distinct_experts(experts=self.experts, top_k=self.top_k, tokens=g ** e.routing_exponent,
                                skew=e.routing_skew)

    @property
    def stream_s(self) -> float:
        """A streamed token's cost per running request: stream_token_s, + chat_stream_token_s on the chat endpoint."""
        e = self.engine
        return e.stream_token_s + (e.chat_stream_token_s if self.chat else 0.0)

    @property
    def prefill_routing(self) -> float:
        """The exponent a prompt's m tokens count with (m^y draws): 1 where the router carries a learned
        load-balancing bias, which spreads one text's tokens like independent requests', else the engine's."""
        return 1.0 if self.balanced_router else self.engine.prefill_routing_exponent

    def launch_s(self, eager: bool) -> float:
        """Kernel boundaries that move no bytes, one step [s]: blocks × the engine's cost per layer, + each
        shared-expert MoE layer's own kernels (its GEMMs, the sigmoid grouped top-k gate: shared_expert_layer_s);
        without a CUDA graph both × the eager ratio (layer_overhead_eager_s / layer_overhead_s)."""
        e = self.engine
        graph = self.blocks * e.layer_overhead_s + self.shared_moe_layers * e.shared_expert_layer_s
        return graph * (e.layer_overhead_eager_s / e.layer_overhead_s) if eager and e.layer_overhead_s else graph

    def _parts(self, prefill_tokens: float, prefill_pairs: float, decode_seqs: int, decode_context: float,
               prefill_seqs: int = 1, extra_logits: float = 0.0) -> tuple[tuple[float, ...], tuple[float, ...]]:  # fmt: skip
        """The estimate's terms in StepTerms' order, and what the floor needs (FLOP, bytes, all-reduce bytes).
        `extra_logits`: a speculative verify's k · d draft tokens among the prefill tokens: their logit rows, their
        routing as a short prompt of each decoding request, their recurrent-state writes (calc.spec_step.verify)."""
        e = self.engine
        n = decode_seqs + prefill_tokens
        bw, fl = self.effective_bandwidth_bytes_per_s, self.effective_flop_per_s
        hd, he = self.weight_half_tokens or e.gemm_half_tokens, self.expert_half_tokens or e.gemm_half_tokens
        ramp = (n / (n + hd) if n else 1.0) * (1.0 if self.mfu_override else e.gemm_compute_share)
        share = 1.0 if self.mbu_override else self.weight_share
        gemm_flop = n * self.gemm_flop_per_token + (decode_seqs + (prefill_tokens > 0) + extra_logits) * self.logits_flop_per_token
        weights_s = max(self.dense_weight_bytes / (bw * share), gemm_flop / (fl * ramp)) if n else 0.0
        touched = self.experts_touched(n, prefill_tokens, prefill_seqs, extra_logits, decode_seqs) * self.moe_layers
        expert_bytes = touched * self.expert_bytes / self.dp if self.dp > 1 else touched * self.expert_bytes
        m = m_gpu = n  # every rank's tokens in a MoE layer, their expert FLOPs shared by dp times the GPUs
        if self.dp > 1:
            m = self.moe_tokens(n, decode_seqs, extra_logits)
            m_gpu = m / self.dp
        experts_s = 0.0
        if touched:
            per_expert = m * self.top_k * self.moe_layers / touched  # tokens each touched expert's GEMM sees
            moe = 1.0 if self.mbu_override else self.expert_weight_share
            busy_bytes = busy_tokens = 1.0  # the busiest GPU over the mean: 1 under tensor parallelism
            if self.expert_ranks > 1:
                busy_bytes = bytes_factor(self.experts, self.expert_ranks, touched / self.moe_layers)
                busy_tokens = tokens_factor(self.expert_ranks, m * self.top_k)
            experts_s = max(expert_bytes * busy_bytes / (bw * moe),
                            m_gpu * self.expert_flop_per_token * busy_tokens
                            / (fl * per_expert / (per_expert + he) * (1.0 if self.mfu_override else self.expert_compute_share)))  # fmt: skip
        avg = decode_context / decode_seqs if decode_seqs else 0.0  # windows cap each sequence at its own context
        kv_bytes = decode_seqs * sum(b * min(avg, cap) for b, cap in self.kv_read)
        decode_attn_flop = decode_seqs * sum(f * min(avg, cap) for f, cap in self.attention_flop)
        prefill_attn_flop = prefill_pairs * sum(f for f, _ in self.attention_flop)
        attn_bw = 1.0 if self.mbu_override else e.attention_bandwidth_share
        kv_s = max(kv_bytes / (bw * attn_bw), decode_attn_flop / (fl * e.attention_compute_share))
        prefill_attention_s = prefill_attn_flop / (fl * e.attention_compute_share)
        # read once and written back; a speculative verify writes the state after each draft token too (vLLM keeps
        # them to roll back to the accepted one: the fused recurrent kernels' per-token state indices)
        state_bytes = (2 * decode_seqs + extra_logits) * self.state_bytes_per_seq
        state_s = state_bytes / bw
        comm_bytes = 2 * (self.tp - 1) / self.tp * n * self.allreduce_bytes_per_token if self.tp > 1 else 0.0
        allreduce_s = 2 * self.blocks * (self.allreduce_latency_s + comm_bytes / self.link_bytes_per_s
                                         + self.allreduce_small_s_per_byte * min(comm_bytes, self.allreduce_small_bytes)) \
            if self.tp > 1 else 0.0  # fmt: skip
        if decode_seqs and self.cp_collectives_s:
            allreduce_s += self.cp_collectives_s
        if self.dp > 1:  # the MoE layers' collectives span every rank's GPUs; the rest stay within the rank
            allreduce_s = allreduce_s * (1 - self.moe_layers / (2 * self.blocks)) + self.moe_layers * self.moe_comm_s(m)
        # no captured graph for a step this large, nor for a prompt step the engine cannot capture
        eager = self.eager or n > e.cudagraph_max_tokens or (prefill_tokens > 0 and self.prompt_steps_eager)
        parts = (weights_s, experts_s, self.fp8_moe_s if touched else 0.0, kv_s, prefill_attention_s, state_s,
                 allreduce_s, e.step_overhead_s,
                 self.launch_s(eager), self.compile_s if prefill_tokens else 0.0,
                 decode_seqs * (e.per_sequence_s + (self.stream_s if self.online else 0.0)))  # fmt: skip
        flop = gemm_flop + m_gpu * self.expert_flop_per_token + decode_attn_flop + prefill_attn_flop
        comm_floor_s = 2 * self.blocks * comm_bytes / self.link_bytes_per_s if self.tp > 1 else 0.0
        if self.dp > 1:
            comm_floor_s = comm_floor_s * (1 - self.moe_layers / (2 * self.blocks)) \
                + self.moe_layers * self.moe_bus_bytes(m) / self.moe_link_bytes_per_s  # fmt: skip
        return parts, (flop, self.dense_weight_bytes + expert_bytes + kv_bytes + state_bytes, comm_floor_s)

    @property
    def busy_peers(self) -> float:
        """Other data-parallel ranks with requests, (dp − 1) · dp_busy: their prompt steps hold this rank's MoE
        layers too (the lockstep; calc.engine_cycle.lockstep_share)."""
        return (self.dp - 1) * self.dp_busy if self.dp > 1 else 0.0

    def moe_tokens(self, n: float, decode_seqs: float, verify_tokens: float = 0.0) -> float:
        """Tokens a MoE layer runs: this rank's n; on each busy one of the other dp − 1 ranks as many decodes as this
        rank's (evenly loaded ranks, whose prompts come at other steps than this one's), and one dummy token on each
        idle one or where this rank has no decodes to mirror. Prompts sent to every rank at once (a benchmark's
        burst) are prefilled together, which this leaves out (history, 2026-12-05 (13)). Under speculative decoding
        each decode is 1 + k tokens (`verify_tokens` the k · d of this rank's), the busy ranks' alike."""
        if self.dp == 1:
            return n
        busy = self.dp_busy * (decode_seqs + verify_tokens)
        return n + (self.dp - 1) * (busy + (1 - self.dp_busy) if decode_seqs else 1.0)

    def moe_bus_bytes(self, m: float) -> float:
        """Bus bytes of one MoE layer's gather and scatter of its m tokens over G = dp · tp GPUs: an all-reduce's,
        2 (G − 1) / G · m · hidden · 2 B."""
        group = self.dp * self.tp
        return 2 * (group - 1) / group * m * self.allreduce_bytes_per_token

    def moe_comm_s(self, m: float) -> float:
        """One MoE layer's collectives across the dp ranks [s]: the group's latency + its bus bytes over the link."""
        return self.moe_latency_s + self.moe_bus_bytes(m) / self.moe_link_bytes_per_s

    def _floor(self, flop: float, moved: float, comm_floor_s: float) -> float:
        """The roofline floor of one batch's pass [s]: the larger of bytes / peak bandwidth and FLOP / peak, plus the
        all-reduces' bytes over their links (`comm_floor_s`)."""
        floor = max(moved / self.bandwidth_bytes_per_s, flop / self.peak_flop_per_s)
        return floor + comm_floor_s

    def terms(self, prefill_tokens: float, prefill_pairs: float, decode_seqs: int, decode_context: float,
              prefill_seqs: int = 1) -> StepTerms:
        if self.spec_tokens:
            parts, draft, (floor, flop, moved) = per_token(self, prefill_tokens, prefill_pairs, decode_seqs,
                                                           decode_context, prefill_seqs)  # fmt: skip
            return StepTerms(*parts, floor_s=floor, flop=flop, bytes_moved=moved, draft_s=draft)
        parts, (floor, flop, moved) = pipeline_round(self, prefill_tokens, prefill_pairs, decode_seqs, decode_context,
                                                     prefill_seqs)  # fmt: skip
        return StepTerms(*parts, floor_s=floor, flop=flop, bytes_moved=moved)

    def step_s(self, prefill_tokens: float, prefill_pairs: float, decode_seqs: int, decode_context: float,
               prefill_seqs: int = 1) -> float:
        """The estimate of one step [s] (the simulation's StepFn): terms(…).total_s without building the terms,
        summed in the same order (the same float). `prefill_seqs`: the prompts the prefill tokens belong to."""
        if self.spec_tokens:
            parts, draft, _ = per_token(self, prefill_tokens, prefill_pairs, decode_seqs, decode_context, prefill_seqs)
            w, x, f8, kv, pa, st, ar, so, lo, cs, se = parts
            return w + x + f8 + kv + pa + st + ar + so + lo + cs + se + draft
        parts = (pipeline_round(self, prefill_tokens, prefill_pairs, decode_seqs, decode_context, prefill_seqs)
                 if self.pp > 1 else self._parts(prefill_tokens, prefill_pairs, decode_seqs, decode_context,
                                                 prefill_seqs))[0]  # fmt: skip
        w, x, f8, kv, pa, st, ar, so, lo, cs, se = parts
        return w + x + f8 + kv + pa + st + ar + so + lo + cs + se


def prompts_in(tokens, input_len):
    """Prompts of input_len tokens a prefill of `tokens` tokens carries (a full step budget's): round(tokens / L),
    at least 1 — the prefill_seqs of a step. Floats or numpy arrays."""
    return np.maximum(1.0, np.round(np.asarray(tokens) / input_len))


def chunk_pairs(chunk_tokens: float, offset: float) -> float:
    """Context tokens a prefill chunk of c tokens at offset o attends to in all: c·o + c·(c + 1)/2 (causal)."""
    return chunk_tokens * offset + chunk_tokens * (chunk_tokens + 1) / 2

