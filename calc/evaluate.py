"""evaluate(Scenario) → Report: resolve the specs (overrides applied once), size the pool, then every section."""

from __future__ import annotations

import math

from calc.catalog import Catalog
from calc.engine_defaults import defaults_note
from calc.engine_spec import version_tuple
from calc.errors import InputError
from calc.expert_parallel import expert_ranks
from calc.kv_cache import ALIGN_MODE_TYPES, blocks_from_bytes, state_blocks
from calc.latency import latency
from calc.overheads import TORCH_SORT_RELEASES, torch_sort_extra_bytes
from calc.parallel_rules import accepted_tp_sizes, dcp_check, tp_check
from calc.pool import size_pool
from calc.prefix_hit import cache_block_tokens
from calc.replicas import conformance_of
from calc.report import Report, json_safe  # noqa: F401  (json_safe: the boundaries serialise with it)
from calc.resolve import base_model, checkpoint_kv, checkpoint_kv_note, default_context, engine_of, resolve
from calc.scenario import Scenario
from calc.sglang_defaults import SGLANG_NO_TPU, sglang_fraction_note, sglang_runs_on
from calc.sglang_hybrid import as_sglang_runs, mamba_pools
from calc.sglang_swa import split_note, windowed_share
from calc.specs import GPUSpec, ModelSpec
from calc.speculative import spec_note, speculative_blocks
from calc.speed_notes import speed_notes
from calc.units import GiB
from calc.workload import fit_workload


def resolve_checked(s: Scenario, catalog: Catalog) -> tuple[ModelSpec, GPUSpec]:
    """resolve(), then vLLM's parallelism rules; InputError names the field that breaks them."""
    model, gpu = resolve(s, catalog)
    if s.engine == "sglang" and not sglang_runs_on(gpu):
        raise InputError("engine", f"{SGLANG_NO_TPU}: plan {gpu.name} with the vllm engine")
    problem = tp_check(s, model)
    if problem and "tensor" in problem:
        raise InputError("tensor_parallel_size", f"{problem}; this model accepts {accepted_tp_sizes(s, model)}")
    if problem:
        raise InputError("pipeline_parallel_size", problem)
    group = s.data_parallel_size * s.tensor_parallel_size
    if s.data_parallel_size > 1 and model.routed_experts and not s.enable_expert_parallel and model.expert_ffn_size % group:
        raise InputError("data_parallel_size", f"the routed experts are sliced over data_parallel_size × "
                         f"tensor_parallel_size = {group} GPUs, and their moe_intermediate_size "
                         f"{model.expert_ffn_size:,} does not divide by {group}: use a size that does, or set "
                         "enable_expert_parallel (whole experts per GPU)")  # fmt: skip
    if problem := dcp_check(s, model):
        raise InputError("decode_context_parallel_size", problem)
    if s.data_parallel_size > 1 and s.disaggregated:
        raise InputError("data_parallel_size", "data-parallel ranks are not planned with disaggregated serving: set "
                                               "data_parallel_size to 1, or disaggregated to false")  # fmt: skip
    return model, gpu


def notes_for(s: Scenario, model: ModelSpec, mem, arch: str) -> tuple[str, ...]:
    notes = list(model.assumptions)
    if mem.block_size_note:
        notes.append(mem.block_size_note)
    plan = model.plan
    windowed = model.sliding_layer_count or plan.count("chunked_attention")
    share = windowed_share(s.engine, s.engine_version, model.model_type, arch) if windowed else None
    off = bool(share and share < 1 and s.disable_hybrid_kv_cache_manager)  # SGLang's --disable-hybrid-swa-memory
    if share is not None:
        window = model.sliding_window if model.sliding_layer_count else model.attention_chunk_size
        notes.append(split_note(1.0 if off else share, window, windowed, model.num_hidden_layers,
                                chunked=not model.sliding_layer_count, disabled=off))
        if s.disable_hybrid_kv_cache_manager and not off:
            notes.append("disable_hybrid_kv_cache_manager (SGLang's --disable-hybrid-swa-memory) changes nothing here: "
                         "SGLang already keeps this model's whole context in every layer in this release")  # fmt: skip
    elif model.sliding_layer_count and model.sliding_window >= s.max_model_len:
        notes.append(f"{model.sliding_layer_count} of {model.num_hidden_layers} layers declare a "
                     f"{model.sliding_window:,}-token sliding window, no shorter than max_model_len: full attention here")  # fmt: skip
    elif model.sliding_layer_count:
        notes.append(
            f"{model.sliding_layer_count} of {model.num_hidden_layers} layers use a {model.sliding_window:,}-token "
            "sliding window; their blocks are capped at the window plus max_num_batched_tokens"
            + (" — not with disable_hybrid_kv_cache_manager, which charges them in full" if
               s.disable_hybrid_kv_cache_manager else "")  # fmt: skip
        )
    if plan.attention() > plan.cached_attention():  # Gemma 3n's num_kv_shared_layers (vLLM: no KV spec of their own)
        notes.append(f"{plan.attention() - plan.cached_attention()} of {model.num_hidden_layers} layers reuse an "
                     f"earlier layer's KV (num_kv_shared_layers) and keep none: KV is held for "
                     f"{plan.cached_attention()} layers")  # fmt: skip
    if plan.count("chunked_attention") and share is None:
        notes.append(
            f"{plan.count('chunked_attention')} of {model.num_hidden_layers} layers attend within "
            f"{model.attention_chunk_size:,}-token chunks (Llama 4). vLLM 0.14+ keeps only the current chunk plus "
            "max_num_batched_tokens for them; vLLM 0.10.1–0.13 disabled the hybrid KV cache manager for it by "
            "default and charged every layer in full — set disable_hybrid_kv_cache_manager to plan for those"
        )
    if s.decode_context_parallel_size > 1:
        dcp = s.decode_context_parallel_size
        notes.append(f"decode context parallelism {dcp}: the {dcp} GPUs of each group split a request's tokens "
                     f"(⌈L / {dcp}⌉ on each), so it takes 1/{dcp} of the blocks and a decode step reads 1/{dcp} of its "
                     f"KV a GPU, at three collectives a layer (vLLM ≤ 0.19 print the pool's tokens × {dcp})")  # fmt: skip
    if s.shared_len and s.engine == "vllm" and mem.state_bytes_per_request and not cache_block_tokens(s, mem):
        notes.append("no prefix is reused: vLLM caches a hybrid model's prefixes only with enable_prefix_caching (from "
                     "0.15, its align mode), so the shared prompt is prefilled for every request")  # fmt: skip
    pages = state_blocks(s, model) - speculative_blocks(s)
    if mem.state_bytes_per_request:
        notes.append(
            f"{plan.state()} of {model.num_hidden_layers} layers keep a constant state per request "
            f"({mem.state_bytes_per_request:,.0f} B on each GPU, "
            + ("one block per state group" if pages == 1 else f"{pages} blocks per state group: prefix caching's "
               "align mode keeps the running state and the one at the last block boundary")
            + "), whatever its length"
        )
    if s.enable_prefix_caching and s.engine == "vllm" and plan.state() and pages == 1:
        notes.append("enable_prefix_caching on this hybrid is planned with one state block per request: "
                     + (f"its vLLM class may cache whole states (mamba_cache_mode all, one per {s.block_size}-token "
                        "block), which this planner does not model" if model.model_type not in ALIGN_MODE_TYPES
                        else "vLLM before 0.15 has no align mode for it"))  # fmt: skip
    if note := spec_note(s, model):
        notes.append(note)

    if s.kv_cache_dtype == "nvfp4" and not mem.dtype_refusal:
        notes.append("kv_cache_dtype nvfp4: 0.5625 B an element (4-bit values and an FP8 scale per 16; vLLM's "
                     "FlashInfer backend, trtllm-gen on SM 10.x, FA2 elsewhere from 0.32); no benchmark run behind the "
                     "step-time fit used it, so its attention reads are timed at the FP8 cache's kernel efficiency")
    if mem.encoder_profile and s.engine == "vllm":  # SGLang's activations come out of what its fraction leaves
        e = mem.encoder_profile
        notes.append(
            f"multimodal: vLLM profiles the vision encoder with {e.items} {e.modality} item(s) of {e.tokens_per_item:,} "
            f"tokens (encoder budget {e.budget_tokens:,}), which raises the activation peak; max_model_len, "
            "--limit-mm-per-prompt and the processor's max_pixels drive it"
        )
    if s.tensor_parallel_size > model.kv_heads and not model.is_mla and plan.attention():
        notes.append(f"tensor_parallel_size exceeds the {model.kv_heads} KV heads: each GPU keeps a replica of one")
    if model.is_mla and s.tensor_parallel_size > 1:
        notes.append("MLA: one latent per layer is stored on every tensor-parallel rank (not split)")
    if s.pipeline_parallel_size > 1:
        notes.append(f"pipeline_parallel_size {s.pipeline_parallel_size}: memory is split across the stages, and "
                     "each stage works on its own micro-batch (the engines keep one batch in flight a stage), so a "
                     "step is a round in which every request advances once. Not modelled: the stage-to-stage "
                     "transfer, and a round's several step budgets (prompt throughput is on the low side). Published "
                     "vLLM 0.11 pipelines of 2–4 stages at 400 in flight decoded 1.1–1.6× faster than this plans, as "
                     "far as the same source's runs without one at that load, and one of 8 stages at 256 in flight "
                     "0.9× as fast (tests/data/benchmarks/cloudrift-…)")
    if s.disable_hybrid_kv_cache_manager and not (model.sliding_layer_count or plan.count("chunked_attention")
                                                  or mem.state_bytes_per_request):  # fmt: skip
        notes.append("disable_hybrid_kv_cache_manager changes nothing here: every layer of this model keeps the whole "
                     "context (no sliding-window, chunked or state layers)")  # fmt: skip
    if s.enable_expert_parallel and expert_ranks(s, model) == 1:
        notes.append("enable_expert_parallel changes nothing here: " + (
            "this model has no routed experts" if not model.routed_experts else
            "one GPU holds every expert at tensor_parallel_size 1"))  # fmt: skip
    elif s.enable_expert_parallel:
        ranks = expert_ranks(s, model)
        lo, hi = model.routed_experts // ranks, -(-model.routed_experts // ranks)
        notes.append(f"expert parallelism: each GPU holds {lo if lo == hi else f'{lo}–{hi}'} of the "
                     f"{model.routed_experts} routed experts whole; a step waits for the GPU with the most touched "
                     "experts and routed tokens (an even spread in expectation, uneven at small batches)")  # fmt: skip
    if s.data_parallel_size > 1:
        notes.append(data_parallel_note(s, model))
        if model.routed_experts:
            notes.append(DP_REPLAY)
        notes.append(f"prefix reuse with {s.data_parallel_size} data-parallel ranks: each rank caches its own prefixes "
                     "(a shared system prompt is stored once a rank), and "
                     + ("SGLang's DP controller sends requests to the ranks in turn (round-robin)" if s.engine == "sglang"
                        else "vLLM's DP coordinator sends a request to the least-loaded rank")
                     + ", not to the one holding its history: a conversation's later turn or a "
                     f"document's next query finds its prefix about 1 in {s.data_parallel_size} times unless a "
                     "prefix-aware router sends it back (the reuse figures assume it does)")  # fmt: skip
    if s.shared_prefix_len > s.input_len:
        notes.append(f"shared_prefix_len {s.shared_prefix_len:,} is longer than the prompt (input_len {s.input_len:,}): "
                     f"the shared system prompt is planned as the whole prompt, {s.input_len:,} tokens")  # fmt: skip
    if s.mamba_ssm_cache_dtype != "auto" and not mem.state_bytes_per_request:
        notes.append("mamba_ssm_cache_dtype changes nothing here: this model has no Mamba / linear-attention layers")
    if s.currency != "USD" and s.gpu_hour_price is None:
        notes.append(f"currency {s.currency} applies to gpu_hour_price, which is not set: costs use the GPU spec's "
                     "reference price, in its own currency")  # fmt: skip
    if s.custom_model and s.model != "custom":
        notes.append("custom_model is set but model is not 'custom': the shipped model is planned")
    if s.measured_itl_p99_s and not s.measured_itl_s:
        notes.append("measured_itl_p99_s is not used without measured_itl_s: the chunk riding the slowest steps is "
                     "inferred from p99 − p50; give the ITL p50 too")  # fmt: skip
    if s.latency_sigma == 0 and s.request_rate:
        notes.append("latency_sigma 0: no spread around the estimates, so the capacity runs to the very edge of the "
                     "SLOs; under Poisson arrivals queueing spreads latencies anyway (Qwen2.5-7B on an RTX 4090 at its "
                     "3.16 req/s: 79–83 % within both SLOs over five simulations of 3,000 requests; Llama-3.1-8B on an "
                     "H100 at its 11.6 req/s: 33–92 %): trust the replica check here, or keep a spread")  # fmt: skip
    if s.measured_running_batch and not s.measured_itl_s:
        notes.append("measured_running_batch gives the decode floor at that batch; with measured_itl_s it also gives "
                     "the share of the measured ITL the floor explains and the MBU achieved")  # fmt: skip
    return tuple(notes)


def data_parallel_note(s: Scenario, model: ModelSpec) -> str:
    """What data_parallel_size D means for this model: ranks with their own pools, and for a MoE model the experts
    and their collectives over every rank's GPUs (docs/data-parallel.md)."""
    d, group = s.data_parallel_size, s.data_parallel_size * s.tensor_parallel_size
    head = (f"data_parallel_size {d}: {d} ranks of {s.tensor_parallel_size * s.pipeline_parallel_size} GPU(s), each "
            f"with its own scheduler and KV pool (the memory figures are one rank's GPU), {s.rank_concurrency:,} of "
            f"the {s.concurrency:,} requests on each (the busiest rank's share)")  # fmt: skip
    if not model.routed_experts:
        return head + "; a dense model's ranks never meet: they are replicas behind one API server"
    stage = " of each pipeline stage" if s.pipeline_parallel_size > 1 else ""
    lo, hi = model.routed_experts // group, -(-model.routed_experts // group)
    share = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
    whole = f"{share} whole experts a GPU" if s.enable_expert_parallel else f"1/{group} of every expert a GPU"
    return (head + f"; the routed experts span the {group} GPUs{stage} of all ranks ({whole}), so every MoE layer is "
            f"one step of all {d} ranks: its experts read once for all their tokens, which are gathered from and "
            "returned to every rank (an all-reduce's bytes over the group's link). Ranks are taken as evenly loaded; "
            "an idle rank still runs a token through each MoE layer")  # fmt: skip


DP_REPLAY = ("Data-parallel attention as replayed: the 15 published data-parallel runs (GPUStack's DeepSeek-R1 and "
             "V3.2 on eight H200s, the SGLang cookbook, the vLLM recipes), at constants fitted without them: the "
             "plan's output throughput a median 14 % above the measured (−26 % … +125 %), its TPOT a median 12 % "
             "below. Most are bursts whose prompts all start at once, which the lockstep (every MoE layer waiting for "
             "every rank's prompt steps) leaves untouched; take the gain over tensor parallelism as an upper bound "
             "(history, 2026-12-05 (14))")
"""What the replay of the published data-parallel runs says (tests/test_calibration.py checks the figures)."""


def sampler_note(s: Scenario, model: ModelSpec, mem) -> str | None:
    """vLLM 0.10–0.19 installed without FlashInfer samples the profiling run's logits with a torch sort that holds
    ~38 bytes a logit where the estimate counts 12 (calc.overheads.TORCH_SORT_BYTES_PER_LOGIT): which one a server
    runs depends on how vLLM was installed, so the plan keeps the smaller figure and says what the larger costs."""
    version = version_tuple(s.engine_version)
    first, last = TORCH_SORT_RELEASES
    if s.engine != "vllm" or version is None or not first <= version[:2] < last or s.activation_memory_bytes is not None:
        return None
    extra = torch_sort_extra_bytes(model, max_num_batched_tokens=s.max_num_batched_tokens, max_num_seqs=s.max_num_seqs)
    if mem.kv_cache_memory_from_flag or extra < NOTE_EXTRA_BYTES or mem.kv_cache_memory_bytes <= 0:
        return None
    blocks = blocks_from_bytes(mem.kv_cache_memory_bytes - extra, mem.layout.block_bytes)
    rows = min(s.max_num_seqs, s.max_num_batched_tokens)
    return (f"the activation peak counts the profiling run's sampler at 12 bytes a logit ({rows:,} rows of the "
            f"{model.vocab_size:,}-token vocabulary), near FlashInfer's sampler (about 14); vLLM {s.engine_version} installed without "
            f"FlashInfer (pip) sorts them in torch, about 38 bytes a logit: {extra / GiB:,.2f} GiB more on each GPU, "
            f"{blocks:,} blocks instead of {mem.num_gpu_blocks:,} (a log's 'torch peak memory increase' settles it; "
            "Qwen3-Next-80B at 1,024 rows logged 5.58 GiB, as the sort predicts)")  # fmt: skip


NOTE_EXTRA_BYTES = 0.25 * GiB
"""The torch sort's extra memory is named from a quarter GiB a GPU (below it, a few blocks)."""


def sglang_rest_short_bytes(s: Scenario, mem) -> float:
    """Under SGLang, what its activation peak and CUDA graphs need beyond the rest of the GPU its fraction leaves
    (> 0: it runs out of memory at its first large step); 0 otherwise."""
    if s.engine != "sglang" or mem.kv_cache_memory_from_flag:
        return 0.0
    rest = mem.total_memory_bytes - mem.non_torch_bytes - mem.requested_memory_bytes
    return max(0.0, mem.activation_bytes + mem.cudagraph_bytes - rest)


def sglang_pool_note(s: Scenario, mem) -> str:
    """SGLang's pool is --mem-fraction-static of what is free before loading, less the weights
    (model_runner.profile_max_num_token; calc.pool): its activations and CUDA graphs come out of the rest, which must
    hold them, or its first large step runs out of memory. Says what the rest holds and, where it is short, the largest
    fraction that leaves them room: f ≤ 1 − (activations + graphs) / (total − in use before loading)."""
    before = mem.total_memory_bytes - mem.non_torch_bytes
    rest = before - mem.requested_memory_bytes
    need = mem.activation_bytes + mem.cudagraph_bytes
    head = (f"SGLang's KV pool is --mem-fraction-static {s.gpu_memory_utilization:g} of the {before / GiB:,.2f} GiB free "
            f"before loading, less the weights; its activation peak and CUDA graphs (about {need / GiB:,.2f} GiB, "
            f"estimates) come out of the remaining {rest / GiB:,.2f} GiB")  # fmt: skip
    if rest >= need:
        return head
    most = max(0.0, 1 - need / before)
    return (f"{head}, which cannot hold them: SGLang would run out of memory at its first large step. Start it with "
            f"--mem-fraction-static {math.floor(most * 1000) / 1000:g} or less (gpu_memory_utilization) or with a "
            "smaller --chunked-prefill-size (max_num_batched_tokens)")  # fmt: skip


def mamba_note(s: Scenario, p) -> str:
    """What SGLang's split of a hybrid model's pool leaves (calc.sglang_hybrid): its state slots, the running requests
    they allow, its attention KV in tokens; where the plan runs more, how to plan what SGLang runs."""
    text = (f"SGLang splits this hybrid model's pool: {p.slots:,} requests' state ({p.state_bytes / 2**20:,.1f} MiB each, "
            f"SSM in fp32; mamba_full_memory_ratio 0.9) and {p.kv_tokens:,} tokens of attention KV; it then runs at most "
            f"{p.slots:,} // {p.ratio} = {p.running_cap:,} requests at once, whatever --max-running-requests asks")  # fmt: skip
    if s.max_num_seqs > p.running_cap:
        text += (f"; so this plan runs {p.running_cap:,} at once where max_num_seqs asks {s.max_num_seqs:,} (a larger "
                 "--mem-fraction-static gives more slots; SGLang's --max-mamba-cache-size, not modelled here, sets them)")  # fmt: skip
    return text


def newer_release_note(s: Scenario, catalog: Catalog, engine) -> str | None:
    """An engine_version past the newest release in the published runs: planned with the latest release's costs
    (SGLang '0.11.0', vLLM's numbering, reads as newer than any SGLang measured)."""
    newest = catalog.engines[s.engine].newest_measured
    v = version_tuple(s.engine_version)
    if newest is None or v is None or v[:3] <= version_tuple(newest)[:3]:
        return None
    return (f"{engine.name} {s.engine_version} is newer than any release in the published runs (the newest: {newest}): "
            f"planned with the costs of {engine.label}")  # fmt: skip


def evaluate(s: Scenario, catalog: Catalog) -> Report:
    """The plan of one scenario: what vLLM (or SGLang) allocates on each GPU (Report.memory: bytes, blocks, tokens),
    whether the workload fits (Report.fit), the step-time estimates beside their roofline floors (Report.latency:
    seconds), replicas and cost at the request rate (Report.fleet: req/s, currency per hour and per million output
    tokens), the smallest changes that fit and the notes; `Report.to_dict()` is `calc plan --json`. Raises
    InputError (naming the field) when the scenario names unknown specs or breaks vLLM's TP rules."""
    model, gpu = resolve_checked(s, catalog)
    given, kv_asked = s.max_model_len, s.kv_cache_dtype
    s = checkpoint_kv(default_context(s, model), model)
    mem = size_pool(s, model, gpu)
    asked, s = s, as_sglang_runs(s, model, mem)  # what SGLang runs of a hybrid, whatever it is asked
    pools = mamba_pools(s, model, mem)
    fit = fit_workload(s, model, mem)
    engine = engine_of(s, catalog)
    lat = latency(s, model, gpu, mem, engine)
    conf = conformance_of(s, lat)
    notes = notes_for(s, model, mem, gpu.arch)
    if defaults := defaults_note(s, model, gpu, mem):
        notes = (*notes, defaults)
    if sampler := sampler_note(s, model, mem):
        notes = (*notes, sampler)
    if s.engine == "sglang" and mem.num_gpu_blocks and s.kv_cache_memory_bytes is None:
        notes = (*notes, sglang_pool_note(s, mem))
    if fraction := sglang_fraction_note(s, model, gpu):
        notes = (*notes, fraction)
    if pools:
        notes = (*notes, mamba_note(asked, pools))
    if s.kv_cache_dtype != kv_asked:
        notes = (*notes, checkpoint_kv_note(s, model))
    towered = base_model(s, catalog) if s.language_model_only else model
    multimodal = bool(towered.vision_config or towered.audio_config)
    if s.language_model_only:
        notes = (*notes, "language_model_only: " + (
            "the vision and audio towers are neither loaded nor profiled (their weights and the encoder's dummy batch "
            "are out of the plan)" if multimodal
            else "no effect here: the model has no vision or audio tower"))  # fmt: skip
    if newer := newer_release_note(s, catalog, engine):
        notes = (*notes, newer)
    if fit.max_concurrency_at_length >= 1:  # speed notes only where a speed figure is shown (the plan serves)
        notes = (*notes, *speed_notes(s, model, gpu, mem, engine, lat, catalog))
    if s.gpu_hour_price is None and "price_per_gpu_hour" in gpu.derived:
        notes = (*notes, f"{gpu.name}'s price, {gpu.price_per_gpu_hour:g} {gpu.price_currency} per GPU-hour, is an "
                         f"estimate ({gpu.price_source.removeprefix('DERIVED, ')}): set gpu_hour_price to your "
                         "quote before relying on the costs")  # fmt: skip
    if s.max_model_len != given:
        notes = (f"max_model_len {s.max_model_len:,}: the model's own maximum, which vLLM serves without "
                 f"--max-model-len (the planner's default {given:,} is beyond it)", *notes)  # fmt: skip
    return Report(s, model, gpu, engine, mem, fit, lat, conf, notes, other_gpus=catalog.gpus,
                  accuracy=catalog.accuracy, multimodal=multimodal, asked=asked if asked is not s else None)  # fmt: skip
