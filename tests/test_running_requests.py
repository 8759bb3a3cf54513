"""What runs at once: at most max_num_seqs of the concurrency hold KV blocks, the rest wait in the queue (vLLM's
scheduler admits no more than max_num_seqs), so a concurrency beyond max_num_seqs is a queue, not a preemption; and
the plan offers raising max_num_seqs where the pool holds more."""

from boundary.cli import main
from calc.evaluate import evaluate
from calc.scenario import Scenario


def test_a_queue_beyond_max_num_seqs_is_not_a_preemption(catalog):
    """Llama-3.1-8B on an H100: 2,000 in flight, 256 run (max_num_seqs). Each 1,280-token request takes 80 blocks of
    16, so 256 · 80 = 20,480 blocks of the pool's 28,167: 73 %, no preemption."""
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", concurrency=2000, request_rate=100), catalog)
    assert r.fit.blocks_per_request == 1280 // 16 == 80
    assert r.fit.blocks_needed == 256 * 80 == 20_480
    assert r.fit.pool_fraction == 20_480 / r.memory.num_gpu_blocks < 0.75
    assert not any("preempts" in x for x in r.fit.reasons)
    assert any("concurrency 2,000 exceeds max_num_seqs 256: the rest wait in the queue" in x for x in r.fit.reasons)


def test_raising_max_num_seqs_is_offered_where_the_pool_holds_the_concurrency(catalog):
    """300 in flight: 300 · 80 = 24,000 blocks fit the pool, so max_num_seqs=300 fits (as does concurrency=256);
    at 2,000 in flight 160,000 blocks do not, and only concurrency=256 is offered."""
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", concurrency=300), catalog)
    changes = [x.change for x in r.suggestions]
    assert "max_num_seqs=300" in changes and "concurrency=256" in changes
    assert 300 * 80 < r.memory.num_gpu_blocks
    far = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", concurrency=2000), catalog)
    assert [x.change for x in far.suggestions if x.change.startswith("max_num_seqs")] == []


def test_a_shared_prefix_longer_than_the_prompt_is_the_whole_prompt(catalog):
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", shared_prefix_len=100_000, input_len=1024), catalog)
    assert r.scenario.shared_len == 1024
    assert any("shared_prefix_len 100,000 is longer than the prompt (input_len 1,024)" in n for n in r.notes)


def test_bench_refuses_two_values_for_one_length_and_hides_plans_concurrency(capsys):
    def code(*args):
        try:
            return main(["bench", "--model", "llama-3.1-8b", "--max-concurrency", "2", "--num-prompts", "4", *args])
        except SystemExit as e:
            return e.code

    assert code("--random-input-len", "10", "--input-len", "20") == 2
    assert "--input-len: sets the same prompt or output length as --random-input-len" in capsys.readouterr().err
    assert code("--input-len", "20", "--random-input-len", "20") == 0  # the same value twice says one thing
    capsys.readouterr()
    assert code("--help") == 0
    assert "--concurrency" not in capsys.readouterr().out.replace("--max-concurrency", "")


def test_a_node_bounds_the_groups_tried(catalog, capsys):
    """An H100 SXM node holds 8 (node_gpus): TP 16 is left out of the search with its reason, and the plan's GPU
    options try no TP beyond one GPU for a GH200 rented one to a node."""
    assert main(["search", "--model", "llama-3.1-405b", "--gpus", "h100-sxm", "--tensor-parallel-size", "16",
                 "--pipeline-parallel-size", "1", "--request-rate", "1"], catalog=catalog) == 2  # fmt: skip
    assert "one node holds 8 GPUs (node_gpus)" in capsys.readouterr().err
    r = evaluate(Scenario(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4, request_rate=5), catalog)
    assert all(o.tensor_parallel_size <= (catalog.gpus[o.gpu].node_gpus or 8) for o in r.gpu_options)
    assert all(o.tensor_parallel_size == 1 for o in r.gpu_options if o.gpu == "gh200")
    d = r.to_dict()["gpu_options"]
    assert all(x["price_is_estimate"] == ("price_per_gpu_hour" in catalog.gpus[x["gpu"]].derived) for x in d)


def test_long_times_read_in_the_unit_that_suits_them():
    from boundary import fmt

    assert fmt.ms(0.0144) == "14.4 ms" and fmt.ms(99.9) == "99,900 ms"
    assert fmt.ms(313.174) == "313 s"  # 313,174 ms
    assert fmt.ms(11 * 3600) == "11.0 h" and fmt.ms(5_110_867) == f"{5_110_867 / 86400:.1f} days"
    assert fmt.ms_value(313_174) == "313 s"


def test_a_whole_number_written_with_an_exponent_is_read_from_a_link():
    from boundary.urlstate import validate_query

    values, warnings = validate_query({"input_len": ["1e3"], "concurrency": ["2.5e1"], "output_len": ["1e999"]})
    assert values == {"input_len": 1000, "concurrency": 25}
    assert "input_len: '1e3' read as 1,000" in warnings and any("'1e999' ignored" in w for w in warnings)


def test_every_shipped_gpu_says_how_many_a_node_holds(catalog):
    """node_gpus on every spec (hardware_specs/SOURCES.md): HGX/OAM boards 8, a TPU slice 256, GH200 1."""
    assert all(g.node_gpus for g in catalog.gpus.values())
    assert catalog.gpus["h100-sxm"].node_gpus == catalog.gpus["mi300x"].node_gpus == 8
    assert catalog.gpus["gh200"].node_gpus == 1 and catalog.gpus["tpu-v6e"].node_gpus == 256


def test_the_queue_holds_no_state_and_the_text_counts_the_running(catalog):
    """Nemotron-H-8B, 2,000 in flight, 16 run: state for 16 (16 · 97.5 MiB = 1.52 GiB), the KV beside it positive;
    the verdict's KV line and the longest-request row count the 512 that run, not the 2,000."""
    from boundary import view, view_memory, view_verdict

    r = evaluate(Scenario(model="nemotron-h-8b", gpu="h100-sxm", concurrency=2000, max_num_seqs=16), catalog)
    assert r.shortfall.state_used_bytes == 16 * r.memory.state_bytes_per_request and r.shortfall.kv_used_bytes > 0
    assert "for the 16 requests running" in view.state_line(r)
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", concurrency=2000, max_num_seqs=512, input_len=4000,
                          output_len=96), catalog)  # fmt: skip
    assert any("KV cache for 512 running requests of 4,096 tokens: 131,072 blocks" in x
               for x in view_verdict.missing_lines(r))  # 512 · 4,096 / 16 = 131,072
    assert any(row[0] == "longest request at 512 running" for row in view_memory.workload_section(r).table().rows)
