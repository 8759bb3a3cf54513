"""Parameter counts from the architecture, layer by layer: total, active (MoE), and the parts the latency and weight
models need (method of shared/reference/models.md §5).

Per layer: the token mixer (attention — GQA, MLA, with V3.2's indexer —, Mamba-1/2, Gated DeltaNet, lightning
attention, short convolution), the feed-forward part (dense MLP, or router + routed experts + shared experts) and
its norms; then the embedding, the final norm and the lm_head unless tied; and a multimodal checkpoint's vision
tower. Per-layer counts are built once per model and summed by prefix sums, so any pipeline stage costs O(1).
"Active" = what one token multiplies by: everything but the experts it does not visit and the input embedding (a
lookup) — gpt-oss-120b: 5.13 B, as its card says; the vision tower runs on images only and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate

from calc.params_shared import family_extras

NON_GATED_MLP = ("opt", "starcoder2", "nemotron_h", "gpt2", "gpt_bigcode", "phi", "falcon", "gpt_neox", "nemotron",
                 "persimmon", "gptj", "bloom", "mpt", "phi-msft")  # fmt: skip
NON_GATED_ACTS = ("relu2", "xielu")
"""Activations whose families use no gate: up, activation, down (vLLM arcee.py's ReLU², apertus.py's XIELU)."""
QKV_BIAS = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text", "qwen2_5_vl_text")
GATED_OUTPUT = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "afmoe")
"""Families whose attention output is gated by default (vLLM Qwen3NextAttention: q_proj of num_heads · head_dim ·
(1 + attn_output_gate), attn_output_gate defaulting to True; Arcee's AFMoE: a gate_proj of the same shape, its
sigmoid on the attention's output)."""
QK_NORM = ("qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "gemma3_text", "gemma3n_text", "qwen3_vl_text", "qwen3_vl_moe_text", "qwen3_omni_moe_text", "olmo2", "olmo3",
           "step3p5", "laguna", "afmoe")  # fmt: skip
LEARNED_POSITIONS = ("gpt2", "gpt_bigcode")
"""Families with a learned position table (wpe) beside the token embedding (OPT's has an offset of 2, counted apart)."""
NORMS_PER_LAYER = {"gemma2": 4, "gemma3_text": 4, "gemma3n_text": 5, "olmo2": 2, "opt": 4, "zamba2": 1,
                   "glm4v_text": 4}  # × hidden_size  # fmt: skip


@dataclass(frozen=True)
class ParamCounts:
    embedding: int
    """Input embedding table (plus OPT's learned positions): a lookup, never streamed as a matmul."""
    lm_head: int
    """Output projection; 0 when tied to the embedding (the tied table is then streamed for logits)."""
    attention: int
    """All layers' attention projections, biases and norms (V3.2's indexer included)."""
    state_mixers: int
    """All Mamba / Gated DeltaNet / lightning / short-conv mixers."""
    dense_mlp: int
    """All layers' non-expert MLP weights, routers and shared experts included, and the families' other matmuls
    (Zamba2's shared MLP and adapters, Gemma 3n's AltUp, LAuReL and per-layer-input projections: calc.params_shared)."""
    experts: int
    """All routed experts of all MoE layers."""
    active_experts: int
    """The routed experts one token visits (top-k per MoE layer)."""
    norms: int
    towers: int = 0
    """Vision and audio encoders of a multimodal checkpoint, with their projectors onto the language model."""
    per_layer_embedding: int = 0
    """Gemma 3n's per-layer input table (vocab_size_per_layer_input × layers · hidden_size_per_layer_input): a lookup."""
    layer_prefix: dict = field(default_factory=dict, repr=False, compare=False)
    """Per-layer prefix sums of 'linear', 'experts' and 'norms', for pipeline stages."""

    @property
    def total(self) -> int:
        return (self.embedding + self.lm_head + self.attention + self.state_mixers + self.dense_mlp + self.experts
                + self.norms + self.towers + self.per_layer_embedding)  # fmt: skip

    @property
    def active(self) -> int:
        """What one token multiplies by: no input embeddings (lookups), no unvisited experts, no encoder towers."""
        return self.total - self.embedding - self.per_layer_embedding - self.towers - self.experts + self.active_experts

    @property
    def blocks_active(self) -> int:
        """Parameters of the decoder layers one token multiplies by (the report's 6.525e9 for Qwen2.5-7B)."""
        return self.attention + self.state_mixers + self.dense_mlp + self.active_experts + self.norms

    @property
    def logits_weight(self) -> int:
        """Weights multiplied to produce one token's logits: the lm_head, or the tied embedding table."""
        return self.lm_head or self.embedding

    def in_layers(self, part: str, layers: range) -> int:
        """Sum of one per-layer part ('linear', 'experts', 'norms') over a range of layers."""
        p = self.layer_prefix[part]
        return p[layers.stop] - p[layers.start]


# --- one layer -------------------------------------------------------------------------------------------------
def _gqa(m, kv_heads: int, heads: int | None = None) -> int:
    H, nh, d = m.hidden_size, heads or m.num_attention_heads, m.kv_head_dim
    q_out, kv_out = nh * d, kv_heads * d
    r = m.share_q_dim  # Step-3: hidden → r, RMSNorm(r), r → heads · head_dim
    gate = m.attn_output_gate if m.attn_output_gate is not None else m.model_type in GATED_OUTPUT
    q_proj = q_out * (2 if gate else 1)  # the gate's values come out of q_proj
    q_in = H * r + r + r * q_proj if r else H * q_proj
    n = q_in + 2 * H * kv_out + q_out * H
    if m.use_head_wise_attn_gate:
        n += H * nh  # Step-3.5 g_proj
    if m.model_type in QKV_BIAS:
        n += q_out + 2 * kv_out
    if m.attention_bias or m.model_type == "opt":
        n += q_out + 2 * kv_out + H
    if m.model_type == "olmo2":
        n += q_out + kv_out  # q_norm, k_norm over the whole projection
    elif m.model_type in QK_NORM:
        n += 2 * d
    if m.model_type == "gpt_oss":
        n += nh  # attention sinks
    return n


def _mla(m) -> int:
    H, nh = m.hidden_size, m.num_attention_heads
    qk_dim = m.qk_nope_head_dim + m.qk_rope_head_dim
    q = H * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nh * qk_dim if m.q_lora_rank else H * nh * qk_dim
    kv_a = H * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
    kv_b = m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim)
    n = q + kv_a + kv_b + nh * m.v_head_dim * H
    if m.index_topk:  # V3.2 lightning indexer: wq_b, wk, k_norm, weights_proj
        n += (m.q_lora_rank or H) * m.index_n_heads * m.index_head_dim + H * m.index_head_dim
        n += 2 * m.index_head_dim + H * m.index_n_heads
    return n


def attention_params(m, kv_heads: int | None = None) -> int:
    return _mla(m) if m.is_mla else _gqa(m, kv_heads or m.kv_heads)


def state_mixer_params(m) -> int:
    """One Mamba / GDN / lightning / short-conv mixer (the kind the model uses)."""
    from calc.state import state_kind

    H, kind = m.hidden_size, state_kind(m)
    if kind == "mamba2":
        heads, N, G, K = m.mamba_num_heads, m.ssm_state_size, m.n_groups, m.conv_kernel
        inner = m.mamba_intermediate_size or heads * m.mamba_head_dim
        conv = inner + 2 * G * N
        return H * (2 * inner + 2 * G * N + heads) + conv * (K + 1) + 3 * heads + inner + inner * H
    if kind == "mamba1":
        inner = m.mamba_intermediate_size or round(m.mamba_expand * H)
        N, r = m.ssm_state_size, m.mamba_dt_rank or -(-H // 16)
        return H * 2 * inner + inner * (m.conv_kernel + 1) + inner * (r + 2 * N) + r * inner + inner + inner * N + inner + inner * H
    if kind == "gdn":
        nk, nv, dk, dv = m.linear_num_key_heads, m.linear_num_value_heads, m.linear_key_head_dim, m.linear_value_head_dim
        conv = 2 * nk * dk + nv * dv
        return H * (2 * nk * dk + 2 * nv * dv) + H * 2 * nv + conv * m.linear_conv_kernel_dim + 2 * nv + dv + nv * dv * H
    if kind == "lightning":
        width = m.num_attention_heads * m.kv_head_dim
        return H * 3 * width + H * width + width + width * H
    if kind == "conv":
        return H * 3 * H + (m.conv_dim or H) * m.conv_L_cache + H * H
    return 0


def gated_mlp(m) -> bool:
    """A gate projection beside up and down: not for the NON_GATED_MLP families nor the NON_GATED_ACTS activations."""
    return m.model_type not in NON_GATED_MLP and (m.hidden_act or "") not in NON_GATED_ACTS


def _mlp(m, width: int, *, gated: bool) -> int:
    n = (3 if gated else 2) * m.hidden_size * width
    if m.model_type in ("opt", "starcoder2"):
        n += width + m.hidden_size  # fc1/fc2 biases
    return n


def _expert(m) -> int:
    n = _mlp(m, m.expert_ffn_size, gated=gated_mlp(m))
    if m.moe_latent_size:  # latent MoE: the expert's matrices are latent × width, not hidden × width
        n = n // m.hidden_size * m.moe_latent_size
    if m.model_type == "gpt_oss":
        n += 2 * m.expert_ffn_size + m.hidden_size  # gate_up and down biases
    return n


def _moe_shared(m) -> int:
    """Router (+ its bias) and shared experts of one MoE layer."""
    H, E = m.hidden_size, m.routed_experts
    n = H * E
    if m.model_type in ("gpt_oss", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm4_moe_lite", "minimax_m2",
                        "nemotron_h", "glm_moe_dsa", "step3p5", "laguna"):
        n += E  # router bias / e_score_correction_bias
    if m.moe_latent_size:  # vLLM nemotron_h.py: fc1_latent_proj (hidden → latent) and fc2_latent_proj, every token
        n += 2 * H * m.moe_latent_size
    if m.shared_expert_size:
        n += _mlp(m, m.shared_expert_size, gated=gated_mlp(m))
        if m.shared_expert_intermediate_size is not None and m.model_type.startswith(("qwen2_moe", "qwen3_next", "qwen3_5_moe")):
            n += H  # shared_expert_gate
    return n


# --- the whole model -------------------------------------------------------------------------------------------
def count_params(m) -> ParamCounts:
    H, L = m.hidden_size, m.num_hidden_layers
    plan = m.plan
    extras = family_extras(m)
    shared_blocks = bool(m.num_mem_blocks)  # Zamba2: attention and MLP live in shared blocks (calc.params_shared)
    attn = attention_params(m) if plan.attention() and not shared_blocks else 0
    swa_attn = _gqa(m, m.kv_heads, m.swa_num_attention_heads) if m.swa_num_attention_heads and attn else attn
    state = state_mixer_params(m) if plan.state() else 0
    dense = _mlp(m, m.dense_ffn_size, gated=gated_mlp(m)) if m.dense_ffn_size else 0
    dense = 0 if shared_blocks else dense
    shared = _moe_shared(m) if m.is_moe else 0
    expert = _expert(m) if m.is_moe else 0
    k = m.num_experts_per_tok or 0
    norms_per_layer = NORMS_PER_LAYER.get(m.model_type, 2) * H
    linear, experts, active, norm = [], [], [], []
    a_tot = s_tot = d_tot = 0
    for i in range(L):  # once per model (≤ 1,024 layers); stages then read prefix sums
        mixer, ffn = plan.mixers[i], plan.ffns[i]
        a = 0
        if mixer in ("full_attention", "sliding_attention", "chunked_attention", "hybrid"):
            a = attention_params(m, m.kv_heads_per_layer[i]) if m.kv_heads_per_layer else attn
            a = swa_attn if mixer == "sliding_attention" and not m.kv_heads_per_layer else a
        s = state if mixer in ("mamba", "linear_attention", "conv", "hybrid") else 0
        if ffn == "dense":
            d = _mlp(m, m.intermediate_size_per_layer[i], gated=True) if m.intermediate_size_per_layer else dense
        else:
            d = shared if ffn == "moe" else 0
        e = m.routed_experts * expert if ffn == "moe" else 0
        x = norms_per_layer if (mixer != "none" or ffn != "none") else 0
        if extras:
            a, d, x = a + extras.attention[i], d + extras.dense[i], x + extras.norms[i]
        linear.append(a + s + d)
        experts.append(e)
        active.append(k * expert if ffn == "moe" else 0)
        norm.append(x)
        a_tot, s_tot, d_tot = a_tot + a, s_tot + s, d_tot + d
    embedding = m.vocab_size * H
    if m.model_type == "opt":
        embedding += (m.max_position_embeddings + 2) * H  # learned positions, offset 2
    elif m.model_type in LEARNED_POSITIONS:
        embedding += m.max_position_embeddings * H  # wpe: n_positions × hidden
    final_norm = 2 * H if m.model_type == "opt" else H
    return ParamCounts(
        embedding=embedding,
        lm_head=0 if m.tie_word_embeddings else m.vocab_size * H,
        attention=a_tot,
        state_mixers=s_tot,
        dense_mlp=d_tot,
        experts=sum(experts),
        active_experts=sum(active),
        norms=sum(norm) + final_norm,
        towers=vision_params(m) + audio_params(m),
        per_layer_embedding=extras.per_layer_embedding if extras else 0,
        layer_prefix={name: [0, *accumulate(xs)] for name, xs in (("linear", linear), ("experts", experts),
                                                                   ("norms", norm))},  # fmt: skip
    )


def vision_params(m) -> int:
    """Vision tower + projector: ViT blocks (attention 4·d² with biases, MLP — SwiGLU for Qwen2.5-VL and Pixtral,
    2-matrix GELU otherwise — and two norms), patch embedding, and the projector onto the language model."""
    v = m.vision_config
    if v is None:
        return 0
    d, ff = v.hidden_size, v.intermediate_size
    gated = v.model_type in ("qwen2_5_vl", "pixtral")
    block = 4 * d * d + 4 * d + (3 if gated else 2) * d * ff + (0 if gated else ff + d) + 4 * d
    patch = v.in_channels * v.temporal_patch_size * v.patch_size**2 * d
    if v.model_type in QWEN3_VISION:
        return v.num_hidden_layers * block + patch + d + qwen3_vision_extras(v, m.hidden_size)
    positions = (v.image_size // v.patch_size) ** 2 * d if v.image_size and not v.model_type.startswith("qwen") else 0
    out, merged = v.out_hidden_size or m.hidden_size, d * v.spatial_merge_size**2
    if v.model_type.startswith("qwen"):
        projector = merged * merged + merged * out  # merger: LN, Linear(d·m², d·m²), GELU, Linear(d·m², out)
    elif v.model_type == "pixtral":
        projector = merged * d + d * out + out * out  # patch merger, then two linear layers
    else:
        projector = d * out
    return v.num_hidden_layers * block + patch + positions + projector


QWEN3_VISION = ("qwen3_vl", "qwen3_vl_moe", "qwen3_omni_moe_vision_encoder")
"""Towers built as vLLM's qwen3_vl.py Qwen3_VisionTransformer (Qwen3-Omni's thinker reuses it)."""


def qwen3_vision_extras(v, text_hidden: int) -> int:
    """Qwen3-VL's tower beyond its blocks and patch weights: the learned position table, the merger (LayerNorm over
    the tower's width, Linear(d·m², d·m²) and Linear(d·m², out) with biases) and one more merger per deepstack
    level (its LayerNorm over d·m²). Checked against Qwen3-Omni-30B-A3B's published total (tests/test_qwen3_towers.py)."""
    d = v.hidden_size
    positions = v.num_position_embeddings or ((v.image_size // v.patch_size) ** 2 if v.image_size else 0)
    merged, out = d * v.spatial_merge_size**2, v.out_hidden_size or text_hidden
    mlp = merged * merged + merged + merged * out + out
    return positions * d + 2 * d + mlp + len(v.deepstack_visual_indexes) * (2 * merged + mlp)


def audio_params(m) -> int:
    """Qwen3-Omni's audio encoder (vLLM qwen3_omni_moe_thinker.py Qwen3OmniMoeAudioEncoder): three 3×3 stride-2
    convolutions of downsample_hidden_size channels, a linear map of their output (channels × mel bins / 8) onto
    d_model, encoder_layers Whisper-style blocks (q, k, v, o with biases, two LayerNorms, a 2-matrix GELU MLP), a
    final LayerNorm and two linear layers onto output_dim."""
    a = m.audio_config
    if a is None:
        return 0
    d, ff, c = a.d_model, a.encoder_ffn_dim, a.downsample_hidden_size
    block = 4 * (d * d + d) + 4 * d + d * ff + ff + ff * d + d
    convs = (9 * c + c) + 2 * (9 * c * c + c)
    return (a.encoder_layers * block + convs + c * (a.num_mel_bins // 8) * d + 2 * d + d * d + d
            + d * a.output_dim + a.output_dim)  # fmt: skip
