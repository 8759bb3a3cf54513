"""How SGLang holds the KV of sliding-window and chunked-attention layers — not as vLLM does.

vLLM's hybrid KV cache manager caps a sliding layer's blocks at its window (calc.kv_cache.KVGroup). SGLang either
keeps every layer's whole context (its hybrid SWA memory off), or splits its memory into two pools, one for the full
layers and one for the windowed ones, the second holding `swa_full_tokens_ratio` r = 0.8 as many tokens as the first
(model_runner.set_num_token_hybrid / set_num_tokens_hybrid_swa):

    full tokens  N = memory / (F · n_full + r · S · n_swa)      F, S: one token of one full / windowed layer [B]
    SWA tokens   r · N;  a request of L tokens holds L full tokens and min(L, W) SWA tokens (out-of-window tokens
                 are freed), so it costs max(L, min(L, W) / r) of N

Which models get the two pools, by release (sgl-project/sglang, python/sglang/srt/server_args.py,
configs/model_config.py `is_hybrid_swa_model`, arg_groups/overrides.py; read in the PyPI wheels of each release):
- 0.5.0rc2–0.5.7: none that the planner ships. gpt-oss forces `disable_hybrid_swa_memory = True`; Gemma 2 / 3 / 3n and
  OLMo 2 / 3 force it too ("not yet supported"); Llama 4's chunked layers are split only with --hybrid-kvcache-ratio
  (default None); models without a window in SGLang's own class keep every layer whole.
- 0.5.8–0.5.9: Llama 4, gpt-oss, MiMo-V2-Flash (and Step-3.5-Flash from 0.5.9) — gpt-oss not where its attention backend
  is trtllm_mha, the default on Blackwell ("TODO: support swa kv indices translation for trtllm_mha").
- 0.5.10 and later: the same on every GPU; Gemma 4 from 0.5.11, Laguna from 0.5.12. Gemma 2 / 3 still off (0.5.15).
"""

from __future__ import annotations

from calc.engine_spec import version_tuple

SWA_FULL_TOKENS_RATIO = 0.8
"""SGLang's --swa-full-tokens-ratio default (server_args.py, 0.4.10–0.5.15): SWA tokens / full tokens."""

# model_type → the first release whose hybrid SWA pool holds that model's windowed layers
SPLIT_SINCE = {"llama4_text": (0, 5, 8), "gpt_oss": (0, 5, 8), "mimo_v2_flash": (0, 5, 8), "step3p5": (0, 5, 9),
               "gemma4_text": (0, 5, 11), "laguna": (0, 5, 12)}  # fmt: skip
TRTLLM_MHA_SPLIT_SINCE = (0, 5, 10)
"""gpt-oss under trtllm_mha (Blackwell's default backend) keeps every layer whole before this release."""


def windowed_share(engine: str, version: str, model_type: str, arch: str, *, disabled: bool = False) -> float | None:
    """What one token of a windowed layer costs SGLang's pool, as a share of a full layer's token: 1 where every
    layer keeps the whole context, SWA_FULL_TOKENS_RATIO where its two pools split the memory; None under vLLM
    (its hybrid manager's window caps, calc.kv_cache). `disabled`: the scenario's disable_hybrid_kv_cache_manager,
    under SGLang its --disable-hybrid-swa-memory."""
    if engine != "sglang":
        return None
    if disabled:
        return 1.0
    since = SPLIT_SINCE.get(model_type)
    v = version_tuple(version)  # None: the newest release
    if since is None or (v is not None and v < since):
        return 1.0
    if model_type == "gpt_oss" and arch == "blackwell" and v is not None and v < TRTLLM_MHA_SPLIT_SINCE:
        return 1.0
    return SWA_FULL_TOKENS_RATIO


def split_note(share: float, window: int, windowed_layers: int, layers: int, *, chunked: bool = False,
               disabled: bool = False) -> str:
    """The Memory tab's line for an SGLang pool of a model with sliding-window or chunked-attention layers."""
    kind = f"chunked-attention layers ({window:,}-token chunks)" if chunked else \
        f"sliding-window layers ({window:,} tokens)"  # fmt: skip
    if share >= 1:
        why = "--disable-hybrid-swa-memory (disable_hybrid_kv_cache_manager)" if disabled else \
            "its hybrid SWA memory is off for this model in this release"  # fmt: skip
        return (f"SGLang keeps the whole context in all {layers} layers: {why}, so the {windowed_layers} {kind} are "
                "charged in full")
    return (f"SGLang splits its pool: the {windowed_layers} {kind} hold "
            f"{share:g} × as many tokens as the full ones (--swa-full-tokens-ratio), a request taking its whole "
            f"length in the full pool and at most {window:,} tokens in the windowed one")
