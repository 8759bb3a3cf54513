"""What a search audit of 2026-12-06 found the search recommending that vLLM would not start, and the plan refuses now:
a quantized checkpoint served under dtype auto without its kernel, and an MLA model's fp8 KV cache where Triton MLA
is vLLM's only MLA backend."""

from __future__ import annotations

from calc.evaluate import evaluate
from calc.scenario import Scenario
from calc.search import search


def test_a_quantized_checkpoint_under_auto_needs_its_own_kernel(catalog):
    """gpt-oss-20b's MXFP4 experts need compute capability 8.0 (vLLM's Mxfp4Config): the T4 (7.5) was recommended at
    TP 4 under dtype auto; DeepSeek-R1's FP8 checkpoint under auto was eligible on Gaudi 3, where --dtype fp8 was
    ruled out 'no kernel' (vLLM's quantization table has no fp8 on Gaudi)."""
    r = evaluate(Scenario(model="gpt-oss-20b", gpu="t4", tensor_parallel_size=4), catalog)
    assert "mxfp4" in r.memory.dtype_refusal and "dtype auto" in r.memory.dtype_refusal and not r.fit.fits
    assert not evaluate(Scenario(model="gpt-oss-20b", gpu="a100-80gb-sxm"), catalog).memory.dtype_refusal
    res = search(Scenario(model="gpt-oss-20b", request_rate=2, input_len=1000, output_len=300, search_gpus="t4"),
                 catalog)  # fmt: skip
    assert res.cheapest is None
    res = search(Scenario(model="deepseek-r1", request_rate=5, search_gpus="gaudi3"), catalog)
    assert res.cheapest is None


def test_an_mla_models_fp8_kv_cache_is_refused_where_triton_mla_is_the_only_backend(catalog):
    """TritonMLAImpl raises 'TritonMLA V1 with FP8 KV cache not yet supported'; it is vLLM's only MLA backend on SM
    7.x, 8.x and 12.x (FlashMLA / FlashAttention MLA need SM 9.x, CUTLASS and FlashInfer MLA SM 10.x). The search's
    cheapest for DeepSeek-V2-Lite was an RTX 4090 with an fp8 KV cache. SM 12.x has no CUTLASS MLA either: its blocks
    are the 16 tokens asked for, not CUTLASS's 128."""
    for gpu in ("rtx-4090", "a100-80gb-sxm", "rtx-pro-6000-blackwell"):
        r = evaluate(Scenario(model="deepseek-v2-lite", gpu=gpu, kv_cache_dtype="fp8"), catalog)
        assert "TritonMLA" in r.memory.dtype_refusal and not r.fit.fits, gpu
    for gpu in ("h100-sxm", "b200"):
        assert not evaluate(Scenario(model="deepseek-v2-lite", gpu=gpu, kv_cache_dtype="fp8"), catalog).memory.dtype_refusal
    assert evaluate(Scenario(model="deepseek-v2-lite", gpu="rtx-pro-6000-blackwell"), catalog).memory.block_size == 16
    assert evaluate(Scenario(model="deepseek-v2-lite", gpu="b200"), catalog).memory.block_size == 128
    from calc.search_rows import scenario_of

    res = search(Scenario(model="deepseek-v2-lite", request_rate=5, input_len=1000, output_len=300), catalog)
    pick = scenario_of(res, res.cheapest)
    assert not (pick.kv_cache_dtype == "fp8" and catalog.gpus[pick.gpu].arch in ("ampere", "ada", "turing")), pick


def test_a_request_past_max_model_len_is_the_one_reason_named():
    """16,000 + 1,000 tokens against the default max_model_len 8,192: the why-not counts split it with 'no memory'
    (memory reasons overwrote it), and the text advised to 'widen the space'."""
    import io
    from contextlib import redirect_stdout

    from boundary.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["search", "--model", "qwen3-30b-a3b", "--request-rate", "10", "--input-len", "16000",
                     "--output-len", "1000"]) == 0  # fmt: skip
    assert "No configuration can serve: a request is longer than max_model_len (set --max-model-len 17000 or more)." \
        in out.getvalue()


def test_a_kv_transfer_between_nodes_crosses_the_network(catalog):
    """A prefill and a decode instance that cannot share a node move the KV over the network (network_gb_per_s, 50 GB/s
    by default), not the GPUs' own link: a GH200 superchip is a node of one (its spec: no GPU-GPU link at all), and
    two instances of 8 H100s fill two nodes. Two TP-1 instances share an 8-GPU node's NVLink (450 GB/s a direction)."""
    from calc.pool import kv_link_bytes_per_s

    def link(gpu, tp):
        s = Scenario(model="qwen3-30b-a3b", gpu=gpu, disaggregated=True, tensor_parallel_size=tp)
        return kv_link_bytes_per_s(s, catalog.gpus[gpu])

    assert link("gh200", 1) == 50e9 and link("h100-sxm", 8) == 50e9 and link("h100-sxm", 1) == 450e9
    s = Scenario(model="qwen3-30b-a3b", gpu="h100-sxm", disaggregated=True, kv_transfer_gb_per_s=100)
    assert kv_link_bytes_per_s(s, catalog.gpus["h100-sxm"]) == 100e9  # a given link is the link


def test_a_row_carries_its_block_size(catalog):
    """A row's num_gpu_blocks is in the blocks its backend forces (FlashMLA's 64 tokens on an H100 for DeepSeek-V2-Lite):
    without the size, a row's KV tokens could not be checked against the plan's."""
    from calc.search_rows import row

    res = search(Scenario(model="deepseek-v2-lite", request_rate=5, search_gpus="h100-sxm"), catalog)
    d = row(res, res.cheapest)
    plan = evaluate(Scenario(model="deepseek-v2-lite", gpu="h100-sxm"), catalog).memory
    assert d["block_size"] == plan.block_size == 64


def test_all_with_other_gpus_and_a_bad_price_are_named():
    """`--gpus all,h100-sxm` searched every GPU without a word; `--gpu-hour-price -1` over several GPUs got the
    'name it with --gpu' error rather than the price's own range."""
    import io
    from contextlib import redirect_stderr

    from boundary.cli import main

    for argv, said in ((["--gpus", "all,h100-sxm"], "'all' searches every shipped GPU: give it alone"),
                       (["--gpus", "a100-80gb-sxm,h100-sxm", "--gpu-hour-price", "-1"], "--gpu-hour-price: at least")):
        err = io.StringIO()
        with redirect_stderr(err):
            assert main(["search", "--model", "llama-3.1-8b", "--request-rate", "5", *argv]) == 2
        assert said in err.getvalue(), err.getvalue()


def test_without_a_request_rate_the_plan_counts_one_replicas_gpus_as_a_search_row_does(catalog):
    """`plan --json` gave gpus null without a request rate where a search row counts its replica's (one vocabulary: the
    same key, the same meaning on both surfaces). Llama-3.1-70B at TP 4 × DP 2: one replica of 8 GPUs."""
    from calc.search_rows import row

    s = Scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, data_parallel_size=2)
    r = evaluate(s, catalog)
    assert r.fleet.replicas is None and r.fleet.gpus == 4 * 2 == r.to_dict()["gpus"]
    res = search(Scenario(model="llama-3.1-8b", search_gpus="h100-sxm"), catalog)
    d = row(res, res.cheapest)
    plan = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", tensor_parallel_size=d["tensor_parallel_size"],
                             pipeline_parallel_size=d["pipeline_parallel_size"]), catalog)  # fmt: skip
    assert d["replicas"] is None and d["gpus"] == plan.fleet.gpus
