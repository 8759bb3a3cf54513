"""Each headline number as its formula with the scenario's numbers substituted (users audit calculators).

Every text is rendered from the calc.expr formula the number was computed with (pool, workload, latency, fleet),
or from the step's named terms, so the text cannot disagree with the number — MLA, sliding windows and hybrid
state included."""

from __future__ import annotations

INSTANCES = ("prefill_instances", "decode_instances")  # disaggregated: the replicas' two parts


def _mean(n: float) -> str:
    """Requests in the engine, a mean where the API server binds: '64', '7.5'."""
    return f"{n:,.0f}" if abs(n - round(n)) < 0.05 else f"{n:,.1f}"


def _experts_read(step, batch: float) -> str:
    """For a MoE model: the distinct routed experts a decode step reads a layer, and uniform routing's count beside
    it (calc.routing)."""
    if not step.experts or batch < 1:
        return ""
    from calc.routing import distinct_experts

    e = step.engine
    every = step.dp * batch  # with data-parallel ranks, each rank's decodes meet in the MoE layers
    draws = every**e.routing_exponent
    uniform = distinct_experts(experts=step.experts, top_k=step.top_k, tokens=draws)
    ranks = f" ({step.dp} data-parallel ranks × {_mean(batch)})" if step.dp > 1 else ""
    return (f"\nrouted experts read: {step.experts_touched(batch):,.1f} of {step.experts} a MoE layer for "
            f"{_mean(every)} decoding requests{ranks} ({_mean(every)}^{e.routing_exponent:g} = {draws:,.1f} draws of "
            f"top-{step.top_k}, the router's favourite experts first: routing_skew {e.routing_skew:g}; uniform "
            f"draws would read {uniform:,.1f})")  # fmt: skip


def _pipeline(step, batch: float) -> str:
    """For a pipeline: how the decode step's requests split into micro-batches, one a stage (calc.pipeline_round.pipeline_round)."""
    if step.pp == 1:
        return ""
    k = max(1.0, min(step.pp, batch))
    return (f"\n{step.pp} pipeline stages, each working on its own micro-batch: the {_mean(batch)} decoding requests as "
            f"{_mean(k)} micro-batch{'es' if k > 1 else ''} of {_mean(batch / k)}; the terms are a round's, in which "
            "every request advances one token")  # fmt: skip


def formulas(r) -> dict[str, str]:
    s, m, f, lat, fl = r.scenario, r.memory, r.fit, r.latency, r.fleet
    mf = m.formulas
    kv = mf["kv_bytes_per_token"].text("B")
    if s.tensor_parallel_size > 1 or s.pipeline_parallel_size > 1:
        kv += "\nper GPU: " + mf["kv_bytes_per_token_per_gpu"].text("B")
    if m.state_bytes_per_request:
        kv += f"\n+ {m.state_bytes_per_request:,.0f} B of Mamba/linear-attention state per request on each GPU"
    fits = f.formula
    out = {
        "KV bytes per token": kv,
        "Available KV cache memory": mf["kv_cache_memory_bytes"].text("GiB")
        + ("  (set by kv_cache_memory_bytes)" if m.kv_cache_memory_from_flag else ""),
        "GPU blocks": mf["num_gpu_blocks"].text("blocks"),
        "Maximum concurrency": mf["max_concurrency"].text("x"),
        "Fits": f"{fits.text('blocks')}  {'≤' if fits.value <= m.num_gpu_blocks else '>'} {m.num_gpu_blocks:,} in the pool "
        f"({f.pool_fraction:.1%})" if m.num_gpu_blocks else fits.text("blocks") + "  > 0 blocks in the pool",
        "Decode step": f"floor {lat.decode.floor_s * 1e3:.2f} ms (roofline); estimate\n" + lat.decode_terms.expr().text("ms")
        + _experts_read(lat.step, lat.decode_batch) + _pipeline(lat.step, lat.decode_batch),
        "TTFT": lat.formulas["ttft_s"].text("ms"),
        "TPOT": (f"mean step while {_mean(lat.decode_batch)} requests decode and their successors prefill" if _mean(lat.decode_batch) != "1"
                 else "mean step while 1 request decodes and its successor prefills") + f" = {lat.tpot_s * 1e3:.2f} ms"
        f"\nplain decode step = " + lat.decode_terms.expr().text("ms"),
        "End-to-end": lat.formulas["e2e_s"].text("s"),
    }
    ff = fl.formulas
    if "replicas" in ff:
        parts = [f"{key.replace('_', ' ')} = {ff[key].text()}" for key in INSTANCES if key in ff]
        out["Replicas"] = "\n".join(parts + [("replicas = " if parts else "") + ff["replicas"].text(),
                                               "GPUs = " + ff["gpus"].text()])  # fmt: skip
    if "cost_per_million_output_tokens" in ff:
        out["Cost per million output tokens"] = ff["cost_per_million_output_tokens"].text(fl.currency or "")
    return out
