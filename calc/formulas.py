"""Each headline number as its formula with the scenario's numbers substituted (users audit calculators)."""

from __future__ import annotations

from calc.units import GiB


def formulas(r) -> dict[str, str]:
    s, m, f, lat, fl = r.scenario, r.memory, r.fit, r.latency, r.fleet
    out = {
        "KV bytes per token": (
            f"2 (K,V) × layers × max(1, kv_heads // tp) × head_dim × bytes(kv) per layer\n"
            f"= {m.kv_bytes_per_token:,.0f} B for all layers; per GPU {m.kv_bytes_per_token_per_gpu:,.0f} B"
        ),
        "Available KV cache memory": (
            f"total × gpu_memory_utilization − weights − activation peak − non-torch"
            f"{' − CUDA graphs' if m.cudagraph_subtracted else ''}\n"
            f"= {m.total_memory_bytes / GiB:.2f} GiB × {s.gpu_memory_utilization:g} − {m.weights_bytes_per_gpu / GiB:.2f}"
            f" − {m.activation_bytes / GiB:.2f} − {m.non_torch_bytes / GiB:.2f}"
            f"{f' − {m.cudagraph_bytes / GiB:.2f}' if m.cudagraph_subtracted else ''}"
            f" = {m.kv_cache_memory_bytes / GiB:.2f} GiB"
            + ("  (replaced by kv_cache_memory_bytes)" if m.kv_cache_memory_from_flag else "")
        ),
        "GPU blocks": (
            f"floor(available / (block_size × bytes/token/layer/GPU) / layers per group)\n"
            f"= floor({m.kv_cache_memory_bytes:,.0f} B / {m.page_bytes:,.0f} B / {m.layers_per_group}) = {m.num_gpu_blocks:,}"
        ),
        "Maximum concurrency": (
            f"num_gpu_blocks / blocks per max_model_len request = {m.num_gpu_blocks:,} / {m.blocks_per_max_len_request:,}"
            f" = {m.max_concurrency:.2f}x"
        ),
        "Fits": (
            f"concurrency × blocks(input_len + output_len) ≤ num_gpu_blocks\n"
            f"= {s.concurrency} × {f.blocks_per_request:,} = {f.blocks_needed:,} {'≤' if f.blocks_needed <= m.num_gpu_blocks else '>'}"
            f" {m.num_gpu_blocks:,}  ({f.pool_fraction:.1%} of the pool)"
        ),
        "TTFT": (
            f"queue + prefill + decode steps the chunks ride on + front-end\n"
            f"= {s.queue_s * 1e3:.1f} + {lat.prefill.estimate_s * 1e3:.1f} + "
            f"{lat.chunk_riding_s * 1e3:.1f} + "
            f"{s.frontend_overhead_s * 1e3:.1f} = {lat.ttft_s * 1e3:.1f} ms\n"
            f"prefill = max(FLOP / (P · mfu), bytes / (B · mbu)) = max({lat.prefill.flop:.3e} / ({lat.peak_flop_per_s:.3e} × "
            f"{s.mfu:g}), {lat.prefill.bytes_moved:.3e} / ({lat.bandwidth_bytes_per_s:.3e} × {s.mbu:g})); "
            f"floor {lat.prefill.floor_s * 1e3:.1f} ms"
        ),
        "TPOT": (
            f"decode step + (batch − 1) × prefill / output_len\n"
            f"decode step = max(bytes / (B · mbu), FLOP / (P · mfu)) = {lat.decode.bytes_moved:.3e} B / "
            f"({lat.bandwidth_bytes_per_s:.3e} B/s × {s.mbu:g}) = {lat.decode.estimate_s * 1e3:.2f} ms "
            f"(floor {lat.decode.floor_s * 1e3:.2f} ms)\n"
            f"= {lat.decode.estimate_s * 1e3:.2f} + ({lat.decode_batch} − 1) × {lat.prefill.estimate_s * 1e3:.1f} / {s.output_len}"
            f" = {lat.tpot_s * 1e3:.2f} ms"
        ),
        "End-to-end": (
            f"TTFT + (output_len − 1) × TPOT = {lat.ttft_s:.3f} + {s.output_len - 1} × {lat.tpot_s:.4f} = {lat.e2e_s:.2f} s"
        ),
    }
    if fl.replicas is not None:
        out["Replicas"] = (
            f"⌈request_rate / capacity⌉ = ⌈{s.request_rate:g} / {fl.capacity.rps:.2f}⌉ = {fl.replicas}; "
            f"GPUs = {fl.replicas} × tp {s.tensor_parallel_size} × pp {s.pipeline_parallel_size} = {fl.gpus}"
        )
    if fl.cost_per_million_output_tokens is not None and fl.cost_per_hour is not None:
        rate = s.request_rate or lat.requests_per_s
        out["Cost per million output tokens"] = (
            f"cost per hour / (request rate × output_len × 3600) × 1e6 = {fl.cost_per_hour:.2f} / ({rate:.2f} × "
            f"{s.output_len} × 3600) × 1e6 = {fl.cost_per_million_output_tokens:.3f}"
        )
    return out
