"""calc.search: the space, the grid, the frontier, the filters, prices and the serve commands."""

import numpy as np
import pytest
from conftest import scenario
from pydantic import ValidationError

from calc.errors import InputError
from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.search import pareto, search
from calc.search_rows import check, row, serve_commands
from calc.search_space import grid, space_of

SMALL = dict(model="llama-3.1-8b", request_rate=8, input_len=1000, output_len=300, search_gpus="h100-sxm,l40s,a10",
             search_max_num_seqs="16,64,256")  # fmt: skip


@pytest.fixture(scope="module")
def small(catalog):
    return search(scenario(**SMALL), catalog)


def test_all_means_every_shipped_gpu_and_unknown_ones_are_named(catalog):
    assert space_of(scenario(), catalog.gpus).gpus == tuple(catalog.gpus)
    with pytest.raises(InputError) as e:
        space_of(scenario(search_gpus="h100-sxm,h900"), catalog.gpus)
    assert e.value.field == "search_gpus" and "h900" in str(e.value)


@pytest.mark.parametrize("field, text", [("search_tensor_parallel_size", "1,3.5"), ("search_dtype", "auto,fp4"),
                                         ("search_kv_cache_dtype", "int8"), ("search_max_num_seqs", ""),
                                         ("search_gpu_memory_utilization", "0.9,1.5"), ("search_gpus", "H100!"),
                                         ("search_max_num_seqs", ",".join(["8"] * 33))])  # fmt: skip
def test_a_bad_search_list_names_its_field(field, text):
    with pytest.raises(ValidationError) as e:
        scenario(**{field: text})
    assert e.value.errors()[0]["loc"] == (field,)


def test_tp_sizes_vllm_refuses_are_left_out_with_the_reason(catalog):
    m = catalog.models["qwen2.5-7b-instruct"]  # 28 heads, 4 KV heads
    s = scenario(search_tensor_parallel_size="1,2,3,8")
    g = grid(space_of(s, catalog.gpus), s, m)
    assert [tp for tp, _ in g.parallel] == [1, 1, 2, 2]  # pipeline sizes 1 and 2 each
    assert len(g.refused) == 4 and all("TP 3" in x or "TP 8" in x for x in g.refused)


def test_the_checkpoints_own_precision_is_tried_once(catalog):
    s = scenario(search_dtype="auto,bf16,fp8")  # Qwen2.5-7B ships in bf16: auto is bf16
    assert grid(space_of(s, catalog.gpus), s, catalog.models["qwen2.5-7b-instruct"]).dtypes == ("auto", "fp8")


def test_grid_size_is_the_product_of_the_lists(catalog, small):
    # 3 GPUs × TP {1,2,4,8} × PP {1,2} × weights {auto, fp8, int4} × KV {auto, fp8} × 3 max_num_seqs, twice (modes),
    # less the (TP, PP) pairs beyond a node: 8×2 on the H100 SXM (8 a node) and the L40S (10), 4×2, 8×1 and 8×2 on the
    # A10 (4): 3 · 8 − 5 = 19 pairs
    assert small.configs_evaluated == (3 * 4 * 2 - 5) * 3 * 2 * 3 * 2


def test_pareto_on_hand_made_points():
    x = np.array([1.0, 2.0, 3.0, 2.0, 3.0, 1.0, 0.5])
    y = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 5.0, 9.0])
    mask = np.array([True, True, True, True, True, True, False])
    # (3, 3) beats (3, 1); (2, 4) beats (2, 2); (1, 5) twice: the first kept; (0.5, 9) is masked out
    assert pareto(x, y, mask) == (2, 1, 0)


def test_no_eligible_configuration_dominates_a_frontier_point(small):
    ok = small.eligible
    x, y = small.tokens_per_s_per_user, small.tokens_per_s_per_gpu
    for i in small.frontier:
        assert ok[i]
        assert not np.any(ok & (x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))


def test_the_cheapest_is_the_lowest_cost_that_meets_the_slos(small):
    i = small.cheapest
    cost = small.cost_per_million_output_tokens
    assert small.eligible[i] and small.capacity_rps[i] > 0
    assert cost[i] == np.nanmin(np.where(small.eligible, cost, np.nan))
    for gid, j in small.best_per_gpu.items():
        on = small.eligible & (np.tile(small.grid.gpu, 2) == small.grid.space.gpus.index(gid))
        assert row(small, j)["gpu"] == gid and cost[j] == np.nanmin(np.where(on, cost, np.nan))


def test_max_gpus_and_budget_filter(catalog):
    r = search(scenario(**SMALL, search_max_gpus=4, search_budget_per_hour=12.0), catalog)
    ok = r.eligible
    assert ok.any() and r.gpus[ok].max() <= 4 and r.cost_per_hour[ok].max() <= 12.0
    assert {r.why_not(i) for i in np.flatnonzero(~ok)} >= {"uses more GPUs than the limit (max GPUs)"}


def test_a_users_price_applies_to_its_own_gpu_only(catalog):
    r = search(scenario(**SMALL, gpu="h100-sxm", gpu_hour_price=1.0, currency="EUR"), catalog)
    on = {row(r, i)["gpu"]: (row(r, i)["price_per_gpu_hour"], row(r, i)["currency"]) for i in range(0, r.configs_evaluated, 97)}
    assert on["h100-sxm"] == (1.0, "EUR")
    assert on["l40s"] == (catalog.gpus["l40s"].price_per_gpu_hour, "USD")
    assert any("not converted" in n for n in r.notes)


def test_cost_is_price_times_gpus_over_output_tokens(small):
    i = small.cheapest
    d = row(small, i)
    assert d["cost_per_million_output_tokens"] == pytest.approx(d["price_per_gpu_hour"] * d["gpus"] / (8 * 300 * 3600) * 1e6)
    assert d["currency"] == "USD" and d["tokens_per_s_per_user"] == pytest.approx(1 / d["tpot_s"])


def test_a_rows_conformance_is_its_own_without_the_whole_spaces(catalog):
    """row() computes one configuration's Φ(TTFT) · Φ(TPOT), not every configuration's (the page's rerun cost)."""
    from calc.goodput import p_within

    r = search(scenario(**SMALL), catalog)
    i = r.cheapest
    d = row(r, i)
    assert "conformance" not in r.__dict__  # the whole space's array was not built
    s = r.scenario
    by_hand = (p_within(median_s=r.ttft_s[i], slo_s=s.slo_ttft_s, sigma=s.latency_sigma)
               * p_within(median_s=r.tpot_s[i], slo_s=s.slo_tpot_s, sigma=s.latency_sigma))  # fmt: skip
    assert d["conformance"] == by_hand == r.conformance[i]
    assert d["goodput_rps"] == pytest.approx(r.requests_per_s[i] * by_hand) and r.goodput_rps[i] == d["goodput_rps"]


def test_serve_commands_carry_every_flag(small):
    agg = next(i for i in small.top(50, disaggregated=False) if row(small, i)["dtype"] != "int4")  # int4 names no id
    (role, cmd), = serve_commands(small, agg)
    d = row(small, agg)
    assert role == "" and cmd.startswith("vllm serve meta-llama/Llama-3.1-8B")
    for flag, key in (("--tensor-parallel-size", "tensor_parallel_size"), ("--pipeline-parallel-size", "pipeline_parallel_size"),
                      ("--max-model-len", "max_model_len"), ("--max-num-seqs", "max_num_seqs"),
                      ("--max-num-batched-tokens", "max_num_batched_tokens"), ("--kv-cache-dtype", "kv_cache_dtype")):  # fmt: skip
        assert f"{flag} {d[key]}" in cmd
    assert f"--gpu-memory-utilization {d['gpu_memory_utilization']:g}" in cmd
    assert ("--quantization fp8" in cmd) == (d["dtype"] == "fp8")
    dis = small.top(1, disaggregated=True)[0]
    (p_role, p_cmd), (d_role, d_cmd) = serve_commands(small, dis)
    assert p_role.startswith("prefill") and d_role.startswith("decode") and "NixlConnector" in p_cmd


def test_sglang_gets_its_own_launch_command(catalog):
    r = search(scenario(**SMALL, engine="sglang"), catalog)
    cmd = serve_commands(r, r.top(1, disaggregated=False)[0])[0][1]
    # the cheapest may be a quantized checkpoint: a comment names it ("an INT4 (AWQ or GPTQ) checkpoint of
    # meta-llama/…") and the command reads it from $CHECKPOINT
    assert cmd.splitlines()[-1].startswith("python -m sglang.launch_server --model-path ") and "--tp-size" in cmd
    assert "meta-llama/Llama-3.1-8B" in cmd


def test_the_simulation_rechecks_aggregated_configurations_only(catalog, small):
    agg, dis = small.top(1, disaggregated=False)[0], small.top(1, disaggregated=True)[0]
    c = check(small, agg, catalog)
    assert c.max_concurrency == small.concurrency[agg] and c.simulated_tpot_s > 0 and c.simulated_ttft_s > 0
    assert c.tpot_ratio == pytest.approx(small.tpot_s[agg] / c.simulated_tpot_s)
    assert check(small, dis, catalog) is None


def test_a_space_too_large_is_refused_by_name(catalog):
    big = ",".join(str(x) for x in range(1, 33))
    with pytest.raises(InputError) as e:
        search(scenario(search_max_num_seqs=big, search_max_num_batched_tokens=big, search_pipeline_parallel_size="1,2,3,4"), catalog)
    assert "configurations" in str(e.value)


def test_nothing_fits_is_an_answer_not_an_error(catalog):
    r = search(scenario(model="llama-3.1-405b", search_gpus="rtx-4090", search_tensor_parallel_size="1",
                        search_pipeline_parallel_size="1"), catalog)  # fmt: skip
    assert r.cheapest is None and r.frontier == () and set(r.why) == {1}
    assert row(r, 0)["why_not"] == "no memory is left for the KV cache" and row(r, 0)["cost_per_million_output_tokens"] is None


def test_the_page_and_the_cli_show_a_configuration_in_the_same_words(small):
    from boundary import fmt
    from boundary.search_cells import cells, serving
    from boundary.search_text import table
    from ui.search_chart import hover, label

    assert serving(True, 2, 3) == "disaggregated 2 P : 3 D" and serving(False, None, None) == "aggregated"
    i = small.top(1, disaggregated=True)[0]
    d = row(small, i)
    x = cells(d)
    assert x["serving"] == f"disaggregated {d['prefill_instances']} P : {d['decode_instances']} D"
    assert x["ttft"] == fmt.ms(d["ttft_s"]) and x["tpot"] == fmt.ms(d["tpot_s"])  # as the page's headline
    assert x["cost"] == fmt.money(d["cost_per_million_output_tokens"], "USD")
    cli = table([d])
    page = label(small, i, {}) + hover(small, i, {})
    for key in ("serving", "ttft", "tpot", "cost"):
        assert x[key] in cli and x[key] in page, key


def test_the_rate_check_needs_a_rate_and_an_aggregated_engine(catalog, small):
    from calc.search_rows import rate_check

    agg, dis = small.top(1, disaggregated=False)[0], small.top(1, disaggregated=True)[0]
    rc = rate_check(small, agg, catalog)
    assert rc.replicas == small.replicas[agg] and rc.rate_per_replica_rps == pytest.approx(8 / rc.replicas)
    assert rate_check(small, dis, catalog) is None
    no_rate = search(scenario(**(SMALL | {"request_rate": None})), catalog)
    assert rate_check(no_rate, no_rate.top(1, disaggregated=False)[0], catalog) is None


def test_the_lists_show_configurations_that_differ_only_in_an_unreached_max_num_seqs_once(catalog):
    """Llama-3.1-70B at 10 req/s: MI300X TP 4 fp8 at max_num_seqs 64, 128, 256 and 512 all run 31 in flight with the
    same TTFT, TPOT and GPUs, and the list showed all four; now the first (the smallest max_num_seqs)."""
    s = Scenario(model="llama-3.1-70b", request_rate=10, input_len=2000, output_len=500, search_gpus="mi300x",
                 search_tensor_parallel_size="4", search_dtype="fp8", search_kv_cache_dtype="fp8",
                 search_disaggregated=False)  # fmt: skip
    r = search(s, catalog)
    top = r.top(10)
    shown = [(r.ttft_s[i], r.tpot_s[i], r.gpus[i], r.concurrency[i]) for i in top]
    assert len(shown) == len(set(shown)) and row(r, top[0])["max_num_seqs"] == 64


def test_the_search_recommends_only_precisions_vllm_has_kernels_for(catalog):
    """vLLM's quantization table: no AWQ / GPTQ on AMD GPUs, Gaudi or TPU, no fp8 on Turing (T4), TPU or Gaudi (on
    Ampere fp8 runs weight-only through Marlin). Gaudi 3 with int4 was the cheapest of many searches; now no such pair
    is eligible, and the plan of one says it cannot be served."""
    s = Scenario(model="llama-3.1-8b", request_rate=10, input_len=1000, output_len=500, search_gpus="all",
                 search_tensor_parallel_size="1,2", search_pipeline_parallel_size="1", search_max_num_seqs="64",
                 search_disaggregated=False)  # fmt: skip
    r = search(s, catalog)
    arch = {gid: g.arch for gid, g in catalog.gpus.items()}
    bad = {("int4", a) for a in ("cdna3", "gaudi3", "tpu")} | {("fp8", a) for a in ("turing", "tpu", "gaudi3")}
    for i in np.flatnonzero(r.eligible):
        d = row(r, int(i))
        assert (d["dtype"], arch[d["gpu"]]) not in bad, d
    assert "vLLM has no kernel for these weights on this GPU (its quantization support table)" in r.why_counts()
    rep = evaluate(Scenario(gpu="mi300x", dtype="int4"), catalog)  # the plan agrees: vLLM does not start
    assert not rep.serves and rep.fit.reasons[0].startswith("vLLM refuses to start: no int4 weight kernel on cdna3")



def test_fp8_weights_on_ampere_are_served_weight_only_through_marlin(catalog):
    """vLLM on an A100 with --quantization fp8: "Weight-only FP8 compression will be used leveraging the Marlin
    kernel" — it starts, the weights are 8-bit in memory and the math is bf16 (precision_support's source). The plan
    used to refuse it, and the search to drop every fp8 configuration on Ampere."""
    bf16 = evaluate(Scenario(model="llama-3.1-8b", gpu="a100-80gb-sxm"), catalog)
    fp8 = evaluate(Scenario(model="llama-3.1-8b", gpu="a100-80gb-sxm", dtype="fp8"), catalog)
    assert fp8.serves and fp8.fit.fits and "weight-only" in fp8.memory.weight_format.label
    assert fp8.latency.compute_dtype == "bf16" and fp8.latency.peak_flop_per_s == bf16.latency.peak_flop_per_s
    # the linear layers at 1 byte a weight (plus scales), the 2 × 525 M embedding and head weights still 16-bit:
    # (8.03 B − 1.05 B) × 1 + 1.05 B × 2 ≈ 9.1 GB against 16.1 GB
    assert 0.5 < fp8.memory.weights_bytes / bf16.memory.weights_bytes < 0.62
    assert fp8.latency.decode_step_floor_s < bf16.latency.decode_step_floor_s
    s = Scenario(model="llama-3.1-8b", request_rate=10, search_gpus="a100-80gb-sxm", search_tensor_parallel_size="1",
                 search_pipeline_parallel_size="1", search_disaggregated=False)  # fmt: skip
    r = search(s, catalog)
    assert any(row(r, int(i))["dtype"] == "fp8" for i in np.flatnonzero(r.eligible))


def test_bf16_below_ampere_is_a_refusal_to_start_and_auto_serves_fp16(catalog):
    """vLLM's check_if_supports_dtype: 'Bfloat16 is only supported on GPUs with compute capability of at least 8.0'.
    `--dtype bf16` on a T4 (Turing, 7.5) was planned as fitting; with auto a bf16 checkpoint runs in fp16."""
    explicit = evaluate(Scenario(gpu="t4", model="llama-3.2-1b", dtype="bf16"), catalog)
    assert not explicit.fit.fits and not explicit.serves and explicit.fleet.capacity.concurrency == 0
    assert explicit.fit.reasons[0].startswith("vLLM refuses to start: Bfloat16 is only supported on GPUs with compute "
                                              "capability of at least 8.0")  # fmt: skip
    auto = evaluate(Scenario(gpu="t4", model="llama-3.2-1b"), catalog)
    fp16 = evaluate(Scenario(gpu="t4", model="llama-3.2-1b", dtype="fp16"), catalog)
    assert auto.fit.fits and auto.memory.weight_format.label == auto.memory.weight_format.compute_dtype == "fp16"
    assert auto.memory.num_gpu_blocks == fp16.memory.num_gpu_blocks  # the same bytes
    assert auto.latency.tpot_s == fp16.latency.tpot_s
    ampere = evaluate(Scenario(gpu="a10", model="llama-3.2-1b", dtype="bf16"), catalog)
    assert ampere.fit.fits and ampere.memory.weight_format.label == "bf16"
    r = search(Scenario(model="llama-3.2-1b", search_gpus="t4,a10", search_dtype="bf16,fp16"), catalog)
    refused = "vLLM refuses to start: bf16 needs a GPU of compute capability 8.0 or more (serve fp16, or auto)"
    for i in range(r.configs_evaluated):
        d = row(r, i)
        assert (d["why_not"] == refused) == (d["gpu"] == "t4" and d["dtype"] == "bf16"), d
        assert not (d["why_not"] == refused and d["fits"])

def test_the_serve_command_carries_the_scenarios_engine_settings(catalog):
    """--enforce-eager, --block-size and --kv-cache-memory-bytes change what the search priced: left out of the
    command, vLLM would serve a different pool."""
    s = Scenario(model="llama-3.1-8b", request_rate=10, search_gpus="h100-sxm", search_disaggregated=False,
                 enforce_eager=True, block_size=32, kv_cache_memory_bytes=2e10)  # fmt: skip
    r = search(s, catalog)
    cmd = serve_commands(r, r.cheapest)[0][1]
    assert "--enforce-eager" in cmd and "--block-size 32" in cmd and "--kv-cache-memory-bytes 20000000000" in cmd


def test_a_four_bit_checkpoint_is_served_in_its_own_format(catalog):
    """gpt-oss ships its experts in MXFP4 (0.53 B per weight): requantized to int4 it is no smaller and its command
    names no checkpoint one can pull, to fp8 or int8 larger; the search keeps its own format."""
    s = Scenario(model="gpt-oss-120b", request_rate=10, search_gpus="h100-sxm", search_dtype="auto,fp8,int4")
    assert search(s, catalog).grid.dtypes == ("auto",)


def test_the_cheapest_is_not_named_across_currencies(catalog):
    """250 JPY an hour for the H100 beside specs priced in USD: 27.8 (JPY) and 0.111 (USD) are numbers, not prices to
    compare; the cheapest is named among the configurations priced in the currency most of them use (USD here)."""
    s = Scenario(model="llama-3.1-8b", gpu="h100-sxm", request_rate=10, gpu_hour_price=250, currency="JPY",
                 search_gpus="h100-sxm,l40s,rtx-4090", search_disaggregated=False)  # fmt: skip
    r = search(s, catalog)
    assert r.currency(r.cheapest) == "USD" and any("not converted" in n for n in r.notes)


def test_a_pipeline_stage_without_kv_layers_is_searched_without_a_warning(catalog):
    """Seven layers of no attention and one full-attention layer, in two pipeline stages: the first stage holds no
    KV layer, so its requests need no blocks there (per request 0). The pool's arithmetic divided by that 0 (a numpy
    RuntimeWarning); now the quotient is taken only where a request needs blocks."""
    import warnings

    from calc.custom import encode_custom_model
    from calc.specs import ModelSpec

    m = ModelSpec.model_validate({"name": "M", "model_type": "llama", "num_hidden_layers": 8, "hidden_size": 512,
                                  "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 1024,
                                  "vocab_size": 32000, "max_position_embeddings": 4096,
                                  "layer_types": ["none"] * 7 + ["full_attention"]})  # fmt: skip
    s = Scenario(model="custom", custom_model=encode_custom_model(m), search_gpus="l4",
                 search_pipeline_parallel_size="1,2", search_tensor_parallel_size="1")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = search(s, catalog)
    assert r.configs_evaluated > 0


def test_a_cheapest_that_quantizes_the_checkpoint_says_the_quality_is_not_measured(catalog):
    """DeepSeek-R1's checkpoint is FP8; where the search's cheapest stores it in fewer bytes (int4, 0.5 B + scales a
    weight) a note says so. Searching the checkpoint's own precision alone, or storing it in more bytes, says nothing."""
    base = dict(model="qwen2.5-7b-instruct", search_gpus="h100-sxm", search_tensor_parallel_size="1")
    quantized = search(scenario(**base, search_dtype="int4"), catalog)
    assert any("quantizing changes the model's output quality" in n for n in quantized.notes)
    own = search(scenario(**base, search_dtype="auto"), catalog)
    assert not any("quantizing" in n for n in own.notes)


def test_a_gpu_rented_one_to_a_node_is_searched_one_to_a_replica(catalog):
    """GH200 is rented as single superchips (hardware_specs/gh200.yaml node_gpus 1, Lambda's price): a search leaves
    out its TP × PP groups above one GPU and says so, keeps them for the other GPUs, and refuses a space with nothing
    left by naming the TP list; a plan of such a group says it spans nodes the plan does not model."""
    assert catalog.gpus["gh200"].node_gpus == 1
    s = scenario(model="llama-3.1-8b", request_rate=4, search_gpus="gh200,h100-sxm", search_tensor_parallel_size="1,2",
                 search_pipeline_parallel_size="1")  # fmt: skip
    r = search(s, catalog)
    pairs = {(r.grid.space.gpus[gi], r.grid.parallel[pi]) for gi, pi in zip(r.grid.gpu, r.grid.par, strict=True)}
    assert pairs == {("gh200", (1, 1)), ("h100-sxm", (1, 1)), ("h100-sxm", (2, 1))}
    assert any(line.startswith("gh200: TP × PP 2×1 left out: one node holds 1 GPU") for line in r.grid.refused)
    with pytest.raises(InputError) as e:
        search(s.model_copy(update={"search_gpus": "gh200", "search_tensor_parallel_size": "2,4"}), catalog)
    assert e.value.field == "search_tensor_parallel_size" and "at most 1" in str(e.value)
    notes = evaluate(scenario(model="llama-3.1-70b", gpu="gh200", tensor_parallel_size=4), catalog).notes
    assert any("rented 1 GPU to a node (node_gpus): TP 4 × PP 1 spans 4 nodes" in n for n in notes)
    assert not any("node_gpus" in n for n in evaluate(scenario(model="llama-3.1-8b", gpu="gh200"), catalog).notes)


def test_a_moe_models_data_parallel_server_is_one_group_for_the_node(catalog):
    """Eight H100 SXM to a node (hardware_specs/h100-sxm.yaml node_gpus 8): DeepSeek-V3 at DP 2 × TP 8 puts its
    experts on all 2 × 8 = 16 GPUs (every MoE layer is one step of both ranks), two nodes; Llama-3.1-8B at DP 2 × TP 8
    is two separate 8-GPU engines, one node each, and gets no such note."""
    moe = evaluate(scenario(model="deepseek-v3", gpu="h100-sxm", tensor_parallel_size=8, data_parallel_size=2,
                            concurrency=64), catalog).notes  # fmt: skip
    assert any("DP 2 × TP 8 × PP 1 (the experts span every rank) spans 2 nodes" in n and "between all 16" in n
               for n in moe)  # fmt: skip
    dense = evaluate(scenario(model="llama-3.1-8b", gpu="h100-sxm", tensor_parallel_size=8, data_parallel_size=2),
                     catalog).notes  # fmt: skip
    assert not any("node_gpus" in n for n in dense)
    # nor is TP 8 offered as a change at DP 2: 2 × 8 = 16 GPUs would span two nodes
    dp4 = evaluate(scenario(model="deepseek-v3", gpu="h100-sxm", tensor_parallel_size=4, data_parallel_size=2,
                            concurrency=64), catalog)  # fmt: skip
    assert not any("tensor_parallel_size=8" in x.change for x in dp4.suggestions)


def test_at_an_equal_cost_the_checkpoints_own_weights_come_first(catalog):
    """Llama-3.1-8B at 5 req/s on H100s: one GPU serves it in bf16, fp8 or int4 alike (0.694 USD per million output
    tokens each); the cheapest and the lists take the checkpoint's own weights, not a requantized copy that is
    merely faster per user."""
    r = search(scenario(model="llama-3.1-8b", request_rate=5, search_gpus="h100-sxm"), catalog)
    cost = r.cost_per_million_output_tokens
    tied = [i for i in np.flatnonzero(r.eligible) if cost[i] == cost[r.cheapest]]
    assert {r.grid.dtypes[r.grid.dtype[i % r.grid.size]] for i in tied} >= {"auto", "fp8"}
    assert r.grid.dtypes[r.grid.dtype[r.cheapest % r.grid.size]] == "auto"
    first = r.top(1)[0]
    assert r.grid.dtypes[r.grid.dtype[first % r.grid.size]] == "auto"


def test_a_gpu_rented_one_to_a_node_gets_no_fix_across_nodes(catalog):
    """Llama-3.1-70B on one GH200: the smallest changes that fit stay on one superchip (fp8 weights, a larger GPU),
    not tensor_parallel_size=2 across two nodes; disaggregated there, the KV crosses the network and a note asks
    for its rate."""
    r = evaluate(scenario(model="llama-3.1-70b", gpu="gh200", request_rate=10), catalog)
    labels = [x.change for x in r.suggestions]
    assert labels and not any("tensor_parallel_size" in x for x in labels), labels
    notes = evaluate(scenario(model="llama-3.1-8b", gpu="gh200", disaggregated=True, request_rate=10), catalog).notes
    assert any(n.startswith("disaggregated on NVIDIA GH200") and "kv_transfer_gb_per_s" in n for n in notes)
    set_rate = scenario(model="llama-3.1-8b", gpu="gh200", disaggregated=True, request_rate=10, kv_transfer_gb_per_s=50)
    assert not any(n.startswith("disaggregated on") for n in evaluate(set_rate, catalog).notes)
