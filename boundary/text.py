"""Plain-text rendering of a Report for the terminal (formatting only: every number comes from the Report)."""

from __future__ import annotations

from calc.units import GiB, KiB


def gib(x: float) -> str:
    return f"{x / GiB:.2f} GiB"


def verdict(r) -> str:
    """The headline sentence, e.g. '16 × 8,448 tokens: does not fit (needs 8,448 of 7,504 blocks)'."""
    s, f, m = r.scenario, r.fit, r.memory
    head = f"{s.concurrency} × {f.request_tokens:,} tokens"
    if f.fits:
        return f"{head}: fits ({f.blocks_needed:,} of {m.num_gpu_blocks:,} blocks, {f.pool_fraction:.0%} of the pool)"
    return f"{head}: does not fit — {f.reasons[0]}"


def render_text(r) -> str:
    s, m, f = r.scenario, r.memory, r.fit
    tp_pp = f"TP={s.tensor_parallel_size} PP={s.pipeline_parallel_size}"
    lines = [
        f"{r.model_name} on {r.gpu_name} ({tp_pp}, weights {m.weight_format.label}, KV {s.kv_cache_dtype})",
        "",
        verdict(r),
        "",
        "Memory per GPU (vLLM's profile)",
        f"  total as the runtime sees it   {gib(m.total_memory_bytes)}",
        f"  × gpu_memory_utilization {s.gpu_memory_utilization:<5g} {gib(m.requested_memory_bytes)}",
        f"  − weights                      {gib(m.weights_bytes_per_gpu)}",
        f"  − activation peak (estimate)   {gib(m.activation_bytes)}",
        f"  − non-torch (estimate)         {gib(m.non_torch_bytes)}",
        f"  − CUDA graphs (estimate)       {gib(m.cudagraph_bytes) if m.cudagraph_subtracted else 'not subtracted'}",
        f"  = available KV cache memory    {gib(m.kv_cache_memory_bytes)}"
        + ("  (from --kv-cache-memory-bytes)" if m.kv_cache_memory_from_flag else ""),
        "",
        "KV cache",
        f"  bytes per token (all layers)   {m.kv_bytes_per_token:,.0f} B = {m.kv_bytes_per_token / KiB:.1f} KiB",
        f"  bytes per token per GPU        {m.kv_bytes_per_token_per_gpu:,.0f} B",
        *([f"  state per request per GPU      {m.state_bytes_per_request:,.0f} B (Mamba / linear attention)"]
          if m.state_bytes_per_request else []),
        f"  GPU blocks × block size        {m.num_gpu_blocks:,} × {m.block_size}",
        f"  GPU KV cache size              {m.kv_cache_tokens:,} tokens",
        f"  {f'max concurrency at {s.max_model_len:,}':31s}{m.max_concurrency:.2f}x",
        "",
        "Workload",
        f"  pool occupancy                 {f.pool_fraction:.1%}",
        f"  most requests at this length   {f.max_concurrency_at_length:,}",
        f"  {f'longest request at C={s.concurrency}':31s}{f.longest_request_at_concurrency:,} tokens "
        f"(prompt ≤ {f.longest_prompt_at_concurrency:,})",
    ]
    lat = r.latency
    ms = 1e3
    lines += [
        "",
        f"Latency per GPU ({lat.compute_dtype} peak {lat.peak_flop_per_s / 1e12:,.1f} TFLOP/s, "
        f"{lat.bandwidth_bytes_per_s / 1e9:,.0f} GB/s, ridge {lat.ridge_flop_per_byte:.1f} FLOP/byte)",
        "                                 floor      estimate",
        f"  prefill of {s.input_len:,} tokens{'':<8}{lat.prefill.floor_s * ms:8.1f} ms {lat.prefill.estimate_s * ms:8.1f} ms"
        f"   ({'compute' if lat.prefill.compute_bound else 'bandwidth'}-bound, {lat.prefill.intensity_flop_per_byte:,.0f} FLOP/byte)",
        f"  decode step, {lat.decode_batch} seqs{'':<9}{lat.decode.floor_s * ms:8.2f} ms {lat.decode.estimate_s * ms:8.2f} ms"
        f"   ({'compute' if lat.decode.compute_bound else 'bandwidth'}-bound, {lat.decode.intensity_flop_per_byte:,.1f} FLOP/byte)",
        f"  TTFT (estimate)                           {lat.ttft_s * ms:8.1f} ms",
        f"  TPOT (estimate)                           {lat.tpot_s * ms:8.2f} ms   streams {lat.stream_tokens_per_s:.1f} tok/s "
        f"(a reader takes 4.5–10)",
        f"  end-to-end (estimate)                     {lat.e2e_s:8.2f} s",
        f"  throughput: {lat.requests_per_s:.2f} req/s, {lat.output_tokens_per_s:,.0f} output tok/s "
        f"({lat.total_tokens_per_s:,.0f} incl. prompts, which flatters long prompts)",
    ]
    fl, c = r.fleet, r.conformance
    lines += ["", f"SLOs (TTFT ≤ {s.slo_ttft_s:g} s, TPOT ≤ {s.slo_tpot_s:g} s, σ {s.latency_sigma:g})",
              f"  conformance {c.conformance:.1%} (strict, every gap: {c.strict_conformance:.1%}); "
              f"goodput {r.goodput_rps:.2f} req/s",
              f"  capacity of one replica at the {s.conformance_quota:.0%} quota: {fl.capacity.rps:.2f} req/s "
              f"({fl.capacity.concurrency} in flight, limited by {fl.capacity.limited_by})"]  # fmt: skip
    if fl.replicas is not None:
        split = f" ({fl.prefill_instances} prefill + {fl.decode_instances} decode instances)" if s.disaggregated else ""
        lines.append(f"  {s.request_rate:g} req/s → {fl.replicas} replicas{split}, {fl.gpus} GPUs, headroom {fl.headroom:.0%}")
    elif fl.capacity.reason:
        lines.append(f"  no replica count: {fl.capacity.reason}")
    if fl.cost_per_million_output_tokens is not None:
        lines.append(
            f"  {fl.cost_per_hour:.2f} {fl.currency} per hour, {fl.cost_per_million_output_tokens:.3f} {fl.currency} per "
            "million output tokens"
        )
    for reason in f.reasons[1:]:
        lines.append(f"  also: {reason}")
    if r.suggestions:
        lines += ["", "Smallest changes that fit"]
        for sug in r.suggestions:
            lines.append(f"  {sug.change:40s} {sug.num_gpu_blocks:,} blocks, {sug.pool_fraction:.0%} of the pool")
    if r.notes:
        lines += ["", *[f"note: {n}" for n in r.notes]]
    return "\n".join(lines)
