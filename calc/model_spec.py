"""A decoder model, in Hugging Face config.json field names, whatever its family.

One general description replaces a list of accepted model types. Every layer is described by two per-layer lists:

- `layer_types` (HF's own name): the token mixer — `full_attention`, `sliding_attention`, `chunked_attention`
  (Llama 4), `mamba` (Mamba-1/2 SSM), `linear_attention` (Gated DeltaNet, MiniMax lightning), `conv` (LFM2 short
  convolution), `hybrid` (attention and Mamba side by side, Falcon-H1) or `none` (an MLP-only or NAS no-op layer);
- `mlp_layer_types` (ours, in the same style): the feed-forward part — `dense`, `moe` or `none`.

A spec file may state them, or give any of the family fields HF uses for the same thing (`sliding_window_pattern`
as an int or a string like "LLLG", `hybrid_override_pattern`, `full_attention_interval`, `attn_layer_period`,
`no_rope_layers`, `first_k_dense_replace`, `decoder_sparse_step`, `interleave_moe_layer_step`, …): they are expanded
once, at validation, into the two lists (`calc.layer_pattern`). Family-specific spellings of the same quantity
(Granite's `mamba_d_state` for `ssm_state_size`, …) are mapped by the config reader, `calc.hf_config`.
Derived values are properties and never overwrite an input. Never `model_copy()` a ModelSpec: its cached plan
would travel with the copy; build a new one with `model_validate`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from calc.layers import LayerPlan

MAX_LAYERS = 1024  # the deepest published decoders have ~130 layers (Llama-3.1-405B: 126)
def _no_bool(v):
    """A count given as true / false is a broken config, not 1 / 0 (`"num_key_value_heads": true` planned an eighth of
    the KV cache); pydantic's lax int takes a bool, so it is refused first."""
    if isinstance(v, bool):
        raise ValueError("expected a whole number, not true or false")
    return v


NoBool = BeforeValidator(_no_bool)
PosInt = Annotated[int, NoBool, Field(gt=0, le=10**7)]
NonNegInt = Annotated[int, NoBool, Field(ge=0, le=10**7)]
Layers = Annotated[int, Field(gt=0, le=MAX_LAYERS, strict=True)]  # a whole number, not true or "3"
MAX_EXPERTS = 4096  # the most routed experts a published MoE has is 512 (Qwen3-Next); the routing tables are E wide
Experts = Annotated[int, NoBool, Field(gt=0, le=MAX_EXPERTS)]


def _one_line(text: str) -> str:
    if not text.isprintable():
        raise ValueError("expected one line of text, without newlines or other control characters")
    return text


OneLine = Annotated[str, AfterValidator(_one_line)]  # a name reaches titles and a shell script's comment

Mixer = Literal["full_attention", "sliding_attention", "chunked_attention", "mamba", "linear_attention", "conv",
                "hybrid", "none"]  # fmt: skip
Ffn = Literal["dense", "moe", "none"]


class QuantizationConfig(BaseModel):
    """The `quantization_config` block of a checkpoint that ships quantized (DeepSeek-V3 fp8, gpt-oss mxfp4, AWQ)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    quant_method: str = Field(min_length=1, max_length=40)
    bits: Literal[2, 3, 4, 8] | None = None
    """Weight bits where the method has several (awq/gptq/bitsandbytes/compressed-tensors; default 4; GPTQ also 2
    and 3)."""
    experts_only: bool = False
    """True when only the MoE experts are quantized (gpt-oss: attention, router, embeddings stay bf16)."""
    mtp_unquantized: bool = False
    """The checkpoint leaves its multi-token-prediction layers at 16 bits (its ignore / exclude_modules /
    modules_to_not_convert names them): a speculative draft of them loads at 2 B a weight (calc.speculative)."""
    group_size: Annotated[int, Field(ge=8, le=4096)] | None = None
    """Integer weights per 16-bit scale (compressed-tensors' config_groups weights.group_size); None: 128."""
    symmetric: bool = False
    """Integer weights without a zero point: a scale per group only (compressed-tensors' weights.symmetric)."""
    nvfp4: bool = False
    """compressed-tensors' 4-bit weights are floats (weights.type "float", group 16: llm-compressor's NVFP4 scheme,
    format nvfp4-pack-quantized): 0.5 B a weight and an fp8 scale per 16, not an integer group's 16-bit scale."""
    rest_bits: Literal[8, 16] | None = None
    """The linear layers other than the routed experts, where they differ from `bits` (ModelOpt MIXED_PRECISION:
    NVFP4 experts, FP8 attention)."""
    kv_cache_quant_algo: Literal["fp8", "fp8_per_head", "nvfp4"] | None = None
    """FP8 KV scales calibrated in the checkpoint (ModelOpt's kv_cache_quant_algo, llm-compressor's kv_cache_scheme),
    which the engines' later releases serve as an FP8 KV cache under --kv-cache-dtype auto (calc.resolve.checkpoint_kv);
    "fp8_per_head": an llm-compressor scheme per attention head or dynamic, which vLLM takes and SGLang does not;
    "nvfp4": ModelOpt's NVFP4 KV scales, an nvfp4 cache under vLLM 0.20+ (SGLang's 4-bit cache is not modelled)."""


class RopeScaling(BaseModel):
    """The `rope_scaling` block (transformers v5: `rope_parameters`), as far as it sets how long vLLM lets a request be
    (ModelSpec.max_len_limit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rope_type: str = Field(default="default", max_length=40)
    factor: Annotated[float, Field(gt=0, le=10_000)] | None = None
    original_max_position_embeddings: Annotated[int, Field(gt=0, le=2**31)] | None = None


LONG_ROPE = ("su", "longrope", "llama3")
"""Rope types whose factor vLLM does not apply to the maximum length (their max_position_embeddings already holds it)."""


class VisionConfig(BaseModel):
    """The vision tower of a multimodal checkpoint (`vision_config`), enough to count its weights."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model_type: str = Field(default="vision", max_length=60)
    hidden_size: PosInt
    intermediate_size: PosInt
    num_hidden_layers: Annotated[int, NoBool, Field(gt=0, le=MAX_LAYERS)]
    """Transformer blocks (Qwen-VL's `depth`)."""
    num_attention_heads: PosInt | None = None
    patch_size: PosInt = 14
    in_channels: PosInt = 3
    temporal_patch_size: PosInt = 1
    spatial_merge_size: PosInt = 1
    out_hidden_size: PosInt | None = None
    """Width the projector maps to (Qwen-VL); else the language model's hidden_size."""
    image_size: PosInt | None = None
    num_position_embeddings: PosInt | None = None
    """Qwen3-VL's learned position table (2,304 rows)."""
    deepstack_visual_indexes: tuple[Annotated[int, NoBool, Field(ge=0, le=MAX_LAYERS)], ...] = Field(default=(),
                                                                                                   max_length=64)
    """Qwen3-VL's blocks whose features a merger of their own feeds to the language model's first layers."""


class AudioConfig(BaseModel):
    """The audio encoder of an omni checkpoint (`audio_config`), enough to count its weights."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model_type: str = Field(max_length=60)
    d_model: PosInt
    encoder_layers: Annotated[int, NoBool, Field(gt=0, le=MAX_LAYERS)]
    encoder_ffn_dim: PosInt
    num_mel_bins: PosInt
    downsample_hidden_size: PosInt
    output_dim: PosInt


class ModelSpec(BaseModel):
    """A decoder-only transformer (or hybrid), in Hugging Face config.json field names."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # ours
    name: OneLine = Field(min_length=1, max_length=120)
    hf_id: OneLine | None = Field(default=None, max_length=200)
    source: str = Field(default="uploaded config.json", min_length=1, max_length=2000)
    assumptions: tuple[Annotated[str, Field(max_length=300)], ...] = Field(default=(), max_length=12)
    """What the config reader assumed where the config was silent (an unknown model_type, a missing field)."""
    # Hugging Face config.json: the transformer
    model_type: str = Field(min_length=1, max_length=60)
    architectures: tuple[Annotated[str, Field(max_length=100)], ...] = Field(default=(), max_length=8)
    num_hidden_layers: Layers
    hidden_size: PosInt
    intermediate_size: PosInt | None = None
    ffn_dim: PosInt | None = None
    intermediate_size_mlp: PosInt | None = None
    """Llama 4: the dense layers' MLP width (intermediate_size is then the experts')."""
    num_attention_heads: PosInt | None = None
    num_key_value_heads: PosInt | None = None
    head_dim: PosInt | None = None
    vocab_size: PosInt
    tie_word_embeddings: bool = False
    max_position_embeddings: Annotated[int, NoBool, Field(gt=0, le=2**31)]
    rope_scaling: RopeScaling | None = None
    torch_dtype: Literal["bfloat16", "float16", "float32"] | None = None
    attention_bias: bool = False
    attn_output_gate: bool | None = None
    """A sigmoid gate on the attention output, its values from q_proj, which then has twice the outputs (Qwen3-Next,
    Qwen3.5/3.6: vLLM qwen3_next.py `getattr(config, "attn_output_gate", True)`); unset: on for those families."""
    hidden_act: str | None = Field(default=None, max_length=40)
    """The MLP's activation: 'relu2' and 'xielu' (NON_GATED_ACTS) mean an up and a down projection, no gate
    (Arcee AFM, Apertus, Nemotron), whatever the model_type."""
    # per-layer mixers and their families' pattern fields
    layer_types: tuple[Mixer, ...] | None = Field(default=None, max_length=MAX_LAYERS)
    mlp_layer_types: tuple[Ffn, ...] | None = Field(default=None, max_length=MAX_LAYERS)
    sliding_window: PosInt | None = None
    use_sliding_window: bool | None = None
    sliding_window_pattern: PosInt | Annotated[str, Field(pattern=r"^[LGlg]{1,64}$")] | None = None
    max_window_layers: NonNegInt | None = None
    attention_chunk_size: PosInt | None = None
    no_rope_layers: tuple[Literal[0, 1], ...] | None = Field(default=None, max_length=MAX_LAYERS)
    hybrid_override_pattern: Annotated[str, Field(pattern=rf"^[M*\-E]{{1,{MAX_LAYERS}}}$")] | None = None
    full_attention_interval: PosInt | None = None
    attn_layer_period: PosInt | None = None
    attn_layer_offset: NonNegInt | None = None
    kv_heads_per_layer: tuple[NonNegInt, ...] | None = Field(default=None, max_length=MAX_LAYERS)
    """NAS models (Nemotron-Super): KV heads of each layer's attention (0 = no attention), from block_configs."""
    intermediate_size_per_layer: tuple[NonNegInt, ...] | None = Field(default=None, max_length=MAX_LAYERS)
    """NAS models: each layer's MLP width (0 = no MLP), from block_configs."""
    # MoE
    num_local_experts: Experts | None = None
    num_experts: Experts | None = None
    n_routed_experts: Experts | None = None
    num_experts_per_tok: Experts | None = None
    moe_intermediate_size: PosInt | None = None
    moe_latent_size: PosInt | None = None
    """Latent MoE (Nemotron 3 Super/Ultra): the routed experts work at this width, between a hidden → latent and a
    latent → hidden projection (vLLM nemotron_h.py NemotronHMoE: fc1_latent_proj, fc2_latent_proj)."""
    mtp_layer_types: tuple[Mixer, ...] | None = Field(default=None, max_length=16)
    """The MTP layers' mixers where the config types them (Step-3.5's layer_types runs on past num_hidden_layers);
    unset: full attention (calc.speculative.drafted)."""
    num_nextn_predict_layers: Annotated[int, Field(ge=0, le=16)] = 0
    """Multi-token-prediction layers the checkpoint ships after its decoder layers (DeepSeek-V3, GLM-4.5; Qwen3-Next
    and Qwen3.5 call it mtp_num_hidden_layers): loaded only as a speculative draft (calc.speculative)."""
    n_shared_experts: NonNegInt | None = None
    shared_expert_intermediate_size: NonNegInt | None = None
    first_k_dense_replace: NonNegInt | None = None
    moe_layer_freq: PosInt | None = None
    decoder_sparse_step: PosInt | None = None
    mlp_only_layers: tuple[NonNegInt, ...] | None = Field(default=None, max_length=MAX_LAYERS)
    interleave_moe_layer_step: PosInt | None = None
    expert_layer_period: PosInt | None = None
    expert_layer_offset: NonNegInt | None = None
    # MLA (DeepSeek-V2/V3, Kimi-K2) and DeepSeek-V3.2's lightning indexer
    q_lora_rank: PosInt | None = None
    kv_lora_rank: PosInt | None = None
    qk_nope_head_dim: PosInt | None = None
    qk_rope_head_dim: PosInt | None = None
    v_head_dim: PosInt | None = None
    index_head_dim: PosInt | None = None
    index_n_heads: PosInt | None = None
    index_topk: PosInt | None = None
    # Mamba-1/2 (Nemotron-H names; the reader maps Granite/Falcon/Jamba/Mamba spellings onto them)
    mamba_num_heads: PosInt | None = None
    mamba_head_dim: PosInt | None = None
    ssm_state_size: PosInt | None = None
    n_groups: PosInt | None = None
    conv_kernel: PosInt | None = None
    mamba_expand: Annotated[float, Field(gt=0, le=64)] | None = None
    mamba_intermediate_size: PosInt | None = None
    """Mamba inner width when the config states it (Falcon-H1 `mamba_d_ssm`, Falcon-Mamba `intermediate_size`)."""
    mamba_dt_rank: PosInt | None = None
    mamba_ssm_cache_dtype: Literal["float32", "float16", "bfloat16"] | None = None
    """The checkpoint's own SSM-state dtype (newer NVIDIA configs say float32)."""
    # Gated DeltaNet (Qwen3-Next) and short convolutions (LFM2)
    linear_num_key_heads: PosInt | None = None
    linear_num_value_heads: PosInt | None = None
    linear_key_head_dim: PosInt | None = None
    linear_value_head_dim: PosInt | None = None
    linear_conv_kernel_dim: PosInt | None = None
    conv_L_cache: PosInt | None = None
    conv_dim: PosInt | None = None
    # Zamba2: shared transformer blocks beside the Mamba layers (transformers Zamba2Config names)
    num_mem_blocks: PosInt | None = None
    """Zamba2: shared attention+MLP blocks, stored once and used in turn by the `hybrid` layers."""
    adapter_rank: PosInt | None = None
    use_shared_attention_adapter: bool = False
    # Gemma 3n: KV shared across layers, per-layer inputs, AltUp and LAuReL (Gemma3nTextConfig names)
    num_kv_shared_layers: NonNegInt | None = None
    """The last n layers read earlier layers' KV and keep none of their own (Gemma 3n)."""
    vocab_size_per_layer_input: PosInt | None = None
    hidden_size_per_layer_input: PosInt | None = None
    altup_num_inputs: PosInt | None = None
    laurel_rank: PosInt | None = None
    # StepFun Step-3 / Step-3.5 attention (vLLM step3_text.py, step3p5.py)
    share_q_dim: PosInt | None = None
    """Step-3: the query is low-rank: hidden → share_q_dim (qkv_proj), an RMSNorm, then share_q_dim → heads · head_dim
    (wq)."""
    swa_num_attention_heads: PosInt | None = None
    """Step-3.5, Laguna: query heads of the sliding-window layers (attention_other_setting, num_attention_heads_per_
    layer), where they differ from num_attention_heads; their KV heads and head size are the full layers' ones."""
    use_head_wise_attn_gate: bool = False
    """Step-3.5, Laguna: a gate per query head (g_proj, hidden → heads) on the attention output."""
    # weights
    quantization_config: QuantizationConfig | None = None
    vision_config: VisionConfig | None = None
    audio_config: AudioConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _expand_patterns(cls, data):
        """Family pattern fields → the per-layer lists (done once, so every later step reads one description)."""
        from calc.layer_pattern import expand

        return expand(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _check(self) -> Self:
        from calc.layer_pattern import check

        problem = check(self)
        if problem:
            raise ValueError(problem)
        return self

    # --- derived -------------------------------------------------------------------------------------------
    @cached_property
    def plan(self) -> LayerPlan:
        """Per-layer kinds with their counts, computed once (calc.layers)."""
        from calc.layers import layer_plan

        return layer_plan(self)

    @cached_property
    def params(self):
        """Parameter counts, computed once (calc.params.count_params)."""
        from calc.params import count_params

        return count_params(self)

    @property
    def max_len_limit(self) -> int:
        """The longest max_model_len vLLM starts with (its _get_and_verify_max_len): max_position_embeddings, times the
        rope scaling factor where the rope type stretches it (not su / longrope / llama3, nor any Gemma 3), from
        original_max_position_embeddings for yarn. InternLM2.5-7B: 32,768 × 2.0 (dynamic) = 65,536."""
        r = self.rope_scaling
        if r is None or r.rope_type in LONG_ROPE or not r.factor or "gemma3" in self.model_type:
            return self.max_position_embeddings  # Gemma 3's 131,072 is already the scaled length (vLLM skips it)
        base = r.original_max_position_embeddings if r.rope_type == "yarn" and r.original_max_position_embeddings \
            else self.max_position_embeddings  # fmt: skip
        return min(int(base * r.factor), 2**31)

    @property
    def max_len_text(self) -> str:
        """max_len_limit with where it comes from: 'max_position_embeddings 131,072', or '65,536 (max_position_embeddings
        32,768 × its dynamic rope_scaling factor 2)'."""
        r, limit = self.rope_scaling, self.max_len_limit
        if limit == self.max_position_embeddings:
            return f"max_position_embeddings {limit:,}"
        base = "original_max_position_embeddings" if r.rope_type == "yarn" and r.original_max_position_embeddings \
            else "max_position_embeddings"  # fmt: skip
        base_len = r.original_max_position_embeddings if base.startswith("original") else self.max_position_embeddings
        return f"{limit:,} ({base} {base_len:,} × its {r.rope_type} rope_scaling factor {r.factor:g})"

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads or 1

    @property
    def kv_head_dim(self) -> int:
        """head_dim when the config states it (Qwen3, Gemma, gpt-oss), else hidden_size / heads."""
        if self.head_dim:
            return self.head_dim
        return self.hidden_size // self.num_attention_heads if self.num_attention_heads else self.hidden_size

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def routed_experts(self) -> int:
        return self.num_local_experts or self.num_experts or self.n_routed_experts or 0

    @property
    def is_moe(self) -> bool:
        return self.routed_experts > 0

    @property
    def dense_ffn_size(self) -> int:
        return self.intermediate_size_mlp or self.ffn_dim or self.intermediate_size or 0

    @property
    def expert_ffn_size(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size or self.dense_ffn_size

    @property
    def shared_expert_size(self) -> int:
        """Width of the shared expert(s) of one MoE layer, all together (0 when there are none)."""
        if self.shared_expert_intermediate_size is not None:
            return self.shared_expert_intermediate_size
        return (self.n_shared_experts or 0) * self.expert_ffn_size

    @property
    def native_dtype(self) -> str:
        """Weight precision vLLM's dtype=auto picks: bf16 for bfloat16 (and unstated) configs, fp16 for float16;
        float32 checkpoints are served in 16 bits."""
        return "fp16" if self.torch_dtype == "float16" else "bf16"

    @property
    def sliding_layer_count(self) -> int:
        return self.plan.count("sliding_attention")
