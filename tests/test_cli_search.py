"""`python -m calc search`, run as a user would, and the issue's done-when: Llama-3.1-70B at 10 req/s, 2,000 in /
500 out, TTFT ≤ 0.5 s, TPOT ≤ 50 ms — the CLI names the cheapest deployment with its serve command, and that
configuration opened as a Scenario shows the same TTFT, TPOT, replicas and cost."""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from boundary.cli import main
from calc.evaluate import evaluate
from calc.loader import load_catalog
from calc.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent
DONE_WHEN = ["--model", "llama-3.1-70b", "--request-rate", "10", "--input-len", "2000", "--output-len", "500",
             "--slo-ttft-s", "0.5", "--slo-tpot-s", "0.05"]  # fmt: skip
SCENARIO_KEYS = ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype", "max_num_seqs",
                 "max_num_batched_tokens", "gpu_memory_utilization", "concurrency", "disaggregated")  # fmt: skip


def run(*args):
    return subprocess.run([sys.executable, "-m", "calc", "search", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def done_when():
    p = run(*DONE_WHEN, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_the_cheapest_deployment_reopens_with_the_same_numbers(done_when, catalog):
    d = done_when
    assert d["configs_evaluated"] > 10_000 and d["frontier"]
    c = d["cheapest"]
    assert c["gpu"] in catalog.gpus and c["currency"] == "USD" and c["replicas"] >= 1
    cmd = c["serve_command"]
    assert "vllm serve meta-llama/Llama-3.1-70B" in cmd
    for flag, key in (("--tensor-parallel-size", "tensor_parallel_size"), ("--pipeline-parallel-size", "pipeline_parallel_size"),
                      ("--max-num-seqs", "max_num_seqs"), ("--max-num-batched-tokens", "max_num_batched_tokens"),
                      ("--kv-cache-dtype", "kv_cache_dtype"), ("--max-model-len", "max_model_len")):  # fmt: skip
        assert f"{flag} {c[key]}" in cmd
    # opened as a scenario: the search's own scenario with the configuration's Scenario fields
    s = Scenario.model_validate(d["scenario"] | {k: c[k] for k in SCENARIO_KEYS})
    r = evaluate(s, catalog)
    assert r.latency.ttft_s == pytest.approx(c["ttft_s"], rel=1e-9)
    assert r.latency.tpot_s == pytest.approx(c["tpot_s"], rel=1e-9)
    assert (r.fleet.replicas, r.fleet.gpus) == (c["replicas"], c["gpus"])
    assert r.fleet.cost_per_million_output_tokens == pytest.approx(c["cost_per_million_output_tokens"], rel=1e-9)
    assert r.fleet.currency == c["currency"]
    # the SLOs hold at the quota for that deployment
    assert c["ttft_s"] <= 0.5 and c["tpot_s"] <= 0.05 and r.conformance.conformance >= 0.9


def test_no_cheaper_configuration_meets_the_slos(done_when):
    d = done_when
    cheapest = d["cheapest"]["cost_per_million_output_tokens"]
    for other in [*d["frontier"], *d["best_per_gpu"].values()]:
        assert other["cost_per_million_output_tokens"] >= cheapest


def test_frontier_entries_carry_their_simulation_check(done_when):
    checked = [x for x in done_when["frontier"] if x["check"]]
    assert all(x["disaggregated"] for x in done_when["frontier"] if not x["check"])
    for x in checked:
        chk = x["check"]
        assert chk["max_concurrency"] == x["concurrency"] and chk["simulated_tpot_s"] > 0
        assert chk["tpot_ratio"] == pytest.approx(x["tpot_s"] / chk["simulated_tpot_s"])


def test_text_names_the_cheapest_with_its_command(done_when):
    p = run(*DONE_WHEN)
    assert p.returncode == 0, p.stderr
    c = done_when["cheapest"]
    assert f"Cheapest: {c['gpu']}, TP {c['tensor_parallel_size']}" in p.stdout
    assert "vllm serve meta-llama/Llama-3.1-70B" in p.stdout and "Pareto frontier" in p.stdout
    assert "None" not in p.stdout and " USD" in p.stdout


def test_csv_for_spreadsheets():
    p = run("--gpus", "h100-sxm,l40s", "--tensor-parallel-size", "1,2", "--csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert rows and {"gpu", "tensor_parallel_size", "ttft_s", "cost_per_million_output_tokens", "currency",
                     "serve_command", "listed_as"} <= set(rows[0])  # fmt: skip
    assert rows[0]["listed_as"].startswith("cheapest") and {r["gpu"] for r in rows} <= {"h100-sxm", "l40s"}
    # a multi-line command keeps its lines in its quoted cell: joined on one line, a leading '# …' comment would
    # swallow the command when pasted into a shell
    assert all(r["serve_command"].splitlines()[-1].startswith(("vllm serve", "python")) for r in rows)
    assert all("." not in r["cost_per_hour"] or len(r["cost_per_hour"].split(".")[1]) <= 12 for r in rows)


def test_csv_with_nothing_listed_keeps_its_header():
    """Llama-3.1-405B on T4s: none of the 588 configurations leaves memory for the KV cache (7 of the 8 (TP, PP) pairs
    that a T4 node of 8 holds × 3 weights × 2 KV × 7 max_num_seqs × 2 modes). The CSV still has its
    header (the same columns as when something is listed), and stderr says why nothing is."""
    p = run("--model", "llama-3.1-405b", "--gpus", "t4", "--csv")
    full = run("--gpus", "h100-sxm", "--tensor-parallel-size", "1", "--csv")
    assert p.returncode == 0 and p.stdout.splitlines() == [full.stdout.splitlines()[0]]
    assert 7 * 3 * 2 * 7 * 2 == 588 and "no configuration listed: 0 of 588" in p.stderr


def test_all_lists_every_configuration(catalog):
    p = run("--gpus", "l40s", "--tensor-parallel-size", "1", "--pipeline-parallel-size", "1", "--dtype", "auto",
            "--kv-cache-dtype", "auto,fp8", "--max-num-seqs", "16,32", "--json", "--all")  # fmt: skip
    d = json.loads(p.stdout)
    assert d["configs_evaluated"] == len(d["configurations"]) == 1 * 2 * 2 * 2  # KV × seqs × modes


def test_help():
    p = run("--help")
    assert p.returncode == 0 and "--tensor-parallel-size LIST" in p.stdout and "--max-gpus N" in p.stdout


@pytest.mark.parametrize("args, flag", [(["--gpus", "h900"], "--gpus"), (["--tensor-parallel-size", "2,x"], "--tensor-parallel-size"),
                                        (["--dtype", "fp4"], "--dtype"), (["--max-gpus", "0"], "--max-gpus"),
                                        (["--budget-per-hour", "abc"], "--budget-per-hour"),
                                        (["--max-num-seqs", ",".join(["9"] * 40)], "--max-num-seqs"),
                                        (["--slo-ttft-s", "-1"], "--slo-ttft-s"), (["--request-rate", "inf"], "--request-rate"),
                                        (["--tensor-parallel-size", "3,6"], "--tensor-parallel-size"),  # none starts
                                        (["--max-num-seqs", ",".join(str(n) for n in range(1, 33)),
                                          "--max-num-batched-tokens", ",".join(str(n) for n in range(512, 512 + 16)),
                                          "--pipeline-parallel-size", "1,2,3,4"], "--max-num-seqs")])  # fmt: skip
def test_bad_input_is_one_line_naming_the_flag(capsys, args, flag):
    assert main(["search", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {flag}:"), err



def test_a_space_over_the_cap_names_its_flags_and_count(capsys):
    # 946,176 configurations took 10 s of CPU and 510 MB when the cap was 1,000,000; now refused before any work
    args = ["--gpus", "all", "--tensor-parallel-size", "1,2,4,7,14,28", "--pipeline-parallel-size",
            ",".join(str(n) for n in range(1, 29)), "--dtype", "auto,fp8,int8,int4", "--kv-cache-dtype", "auto,fp8",
            "--max-num-seqs", ",".join(str(n) for n in range(1, 25)), "--disaggregated"]  # fmt: skip
    assert main(["search", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "search_" not in err, err
    gpus = len(load_catalog().gpus)  # every shipped GPU (24 on 2026-12-04: 1,032,192 configurations)
    assert err.startswith(f"error: --pipeline-parallel-size: {gpus * 112 * 4 * 2 * 24 * 2:,} configurations = {gpus} "
                          "--gpus × 112 (--tensor-parallel-size, --pipeline-parallel-size) pairs × 4 --dtype × 2 "
                          "--kv-cache-dtype × 24 --max-num-seqs × 2 modes (--disaggregated); at most 50,000"), err  # fmt: skip

def test_one_token_outputs_check_without_a_tpot(capsys, catalog):
    """A one-token output has no TPOT in the simulated run (it prints 0): the check's ratio is null, not a
    ZeroDivisionError's traceback (found by the tab fuzzer)."""
    code = main(["search", "--model", "aya-23-8b", "--gpu", "a10", "--output-len", "1", "--json"], catalog=catalog)
    out = capsys.readouterr()
    assert code == 0, out.err
    chk = json.loads(out.out)["cheapest"]["check"]
    assert chk["simulated_tpot_s"] == 0 and chk["tpot_ratio"] is None and chk["ttft_ratio"] > 0


def test_the_cheapest_is_simulated_at_its_share_of_the_rate():
    """One replica sent Poisson arrivals at rate / replicas (calc.search_rows.rate_check): the share within both
    SLOs, against the quota, and where it misses, the fewest replicas (up to 4 more) that meet it in the
    simulation. Before the capacity counted the wait for a free slot (Erlang C), Llama-3.1-70B's cheapest here ran
    max_num_seqs 32 nearly full and kept 44 % (7 replicas met the quota, not 5); now its cheapest keeps it. The
    simulation serves one aggregated engine: the search is held to those (its cheapest overall is disaggregated
    since GH200 is searched one superchip to a replica)."""
    p = run(*DONE_WHEN, "--no-disaggregated", "--json")
    assert p.returncode == 0, p.stderr
    c = json.loads(p.stdout)["cheapest"]
    assert not c["disaggregated"]
    rc = c["rate_check"]
    assert rc["replicas"] == c["replicas"] and rc["rate_per_replica_rps"] == pytest.approx(10 / c["replicas"])
    assert rc["quota"] == 0.9 and rc["quota"] <= rc["within_slo"] <= 1
    assert rc["replicas_meeting_quota"] == c["replicas"]
    text = run(*DONE_WHEN, "--no-disaggregated").stdout
    share = f"{10 / c['replicas']:.2f} req/s"  # 10 req/s over the cheapest's replicas
    assert f"one replica simulated at its share of the rate ({share}, Poisson" in text and "quota" in text


def test_a_price_reaches_the_searched_gpu_or_says_why_not(capsys, catalog):
    """--gpu-hour-price is the scenario GPU's price. Searching one GPU makes it the scenario's GPU, so the search
    prices it as `calc plan` does (2.5 per GPU-hour × 8 GPUs a replica); searching others says the price is unused."""
    where = ["--model", "llama-3.1-70b", "--request-rate", "4", "--input-len", "1000", "--output-len", "200",
             "--gpu-hour-price", "2.5", "--currency", "EUR", "--no-disaggregated", "--json"]  # fmt: skip
    assert main(["search", *where, "--gpus", "h100-sxm"], catalog=catalog) == 0
    d = json.loads(capsys.readouterr().out)
    c = d["cheapest"]
    assert c["price_per_gpu_hour"] == 2.5 and c["currency"] == "EUR"
    # no price note (its fp8 weights have one; TP 8 × PP 2 spans two nodes and is left out)
    assert [n for n in d["notes"] if "quantizing" not in n and "node_gpus" not in n] == []
    assert c["cost_per_hour"] == pytest.approx(2.5 * c["gpus"])
    assert main(["search", *where, "--gpus", "h100-sxm,a100-80gb-sxm", "--gpu", "l40s"], catalog=catalog) == 0
    d = json.loads(capsys.readouterr().out)
    assert any("gpu_hour_price 2.5 EUR is the price of the scenario's GPU (l40s)" in n for n in d["notes"])
    # several GPUs and no --gpu: the price would land on the unseen default GPU, so the flag is refused by name
    assert main(["search", *where, "--gpus", "h100-sxm,rtx-4090"], catalog=catalog) == 2
    assert capsys.readouterr().err.startswith("error: --gpu-hour-price: prices one GPU, and several are searched")


def test_a_cheapest_gpu_priced_by_estimate_says_so(capsys, catalog):
    """Gaudi 3's 1.6 USD per GPU-hour is the spec's own estimate (its `derived` list: no published on-demand rate);
    a recommendation resting on it says so and how to replace it. An H100's published price gets no such note."""
    assert "price_per_gpu_hour" in catalog.gpus["gaudi3"].derived
    assert main(["search", "--model", "llama-3.1-8b", "--request-rate", "20", "--gpus", "gaudi3,h100-sxm", "--json"],
                catalog=catalog) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert d["cheapest"]["gpu"] == "gaudi3"  # half an H100's price (the estimate) for about half its speed or better
    assert any("is an estimate, not a published rate" in n for n in d["notes"])
    assert main(["search", "--model", "llama-3.1-8b", "--request-rate", "20", "--gpus", "h100-sxm", "--json"],
                catalog=catalog) == 0  # fmt: skip
    assert not any("not a published rate" in n for n in json.loads(capsys.readouterr().out)["notes"])


def test_a_configuration_that_cannot_start_shows_its_command_as_tried(capsys, catalog):
    """max_num_seqs 512 over a 256-token budget: refused, but its row's command read '--max-num-seqs 1 …', a
    command vLLM would accept, beside the refusal."""
    assert main(["search", "--max-num-seqs", "64,512", "--max-num-batched-tokens", "256,2048", "--gpus", "h100-sxm",
                 "--json", "--all"], catalog=catalog) == 0  # fmt: skip
    rows = json.loads(capsys.readouterr().out)["configurations"]
    refused = [r for r in rows if str(r["why_not"]).startswith("vLLM refuses to start: max_num_batched_tokens")]
    assert refused and all(r["served_max_num_seqs"] == 512 and "--max-num-seqs 512 --max-num-batched-tokens 256"
                           in r["serve_command"] for r in refused)  # fmt: skip


def test_csv_and_csv_all_share_one_header_and_all_marks_the_listed():
    where = ("--gpus", "l40s", "--tensor-parallel-size", "1", "--pipeline-parallel-size", "1", "--dtype", "auto",
             "--kv-cache-dtype", "auto,fp8", "--max-num-seqs", "16,32", "--csv")  # fmt: skip
    listed, every = run(*where), run(*where, "--all")
    assert listed.stdout.splitlines()[0] == every.stdout.splitlines()[0]
    import csv
    import io

    rows, marked = (list(csv.DictReader(io.StringIO(p.stdout))) for p in (every, listed))
    assert len(rows) == 1 * 2 * 2 * 2 and sum(bool(x["listed_as"]) for x in rows) == len(marked)


def test_the_cheapest_names_the_plan_that_reproduces_it(capsys, catalog):
    """Its `plan_command` (the configuration at its in-flight requests) shows the search's TTFT, TPOT and replicas."""
    import shlex

    assert main(["search", "--model", "llama-3.1-8b", "--gpus", "l4,h100-sxm", "--request-rate", "2", "--json"],
                catalog=catalog) == 0  # fmt: skip
    c = json.loads(capsys.readouterr().out)["cheapest"]
    argv = shlex.split(c["plan_command"])
    assert argv[:4] == ["python", "-m", "calc", "plan"] and "--concurrency" in argv and "--search-gpus" not in argv
    assert main([*argv[3:], "--json"], catalog=catalog) == 0
    p = json.loads(capsys.readouterr().out)
    assert (p["ttft_s"], p["tpot_s"], p["replicas"]) == (c["ttft_s"], c["tpot_s"], c["replicas"])


def test_a_plans_concurrency_and_data_parallelism_are_refused_with_why(capsys):
    """The search sets each configuration's in-flight requests itself and tries one attention rank: the two plan flags
    are named with what to give instead, not 'unrecognized arguments'."""
    assert main(["search", "--model", "llama-3.1-8b", "--concurrency", "8"]) == 2
    assert "--concurrency: " in capsys.readouterr().err
    assert main(["search", "--model", "llama-3.1-8b", "--data-parallel-size", "2"]) == 2
    assert "calc plan --data-parallel-size" in capsys.readouterr().err


def test_a_search_without_speculation_leaves_none_of_its_flags_in_the_plan_command(capsys):
    """The search sizes every configuration without a draft (a note says so): the plan command of its cheapest kept
    --num-speculative-tokens 2, a flag that does nothing without --speculative-method (a user audit)."""
    assert main(["search", "--model", "deepseek-v3", "--request-rate", "2", "--speculative-method", "mtp",
                 "--num-speculative-tokens", "2", "--draft-acceptance-rate", "0.8", "--gpus", "h200", "--json"]) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert "speculat" not in d["cheapest"]["plan_command"] and "--draft-acceptance-rate" not in d["cheapest"]["plan_command"]
    assert any(n.startswith("speculative_method mtp is not searched") for n in d["notes"])


def test_when_nothing_is_listed_the_limit_in_the_way_is_named_with_its_number(capsys):
    """A page audit: a budget below every deployment that meets the SLOs said 'relax the SLOs or raise the limits';
    now the cheapest of them per hour (19.2 USD on Gaudi 3 for Llama-3.1-70B at 10 req/s: 12 GPUs × 1.6 USD, the
    README's cheapest), and for SLOs no configuration reaches, the lowest TTFT and TPOT any does."""
    ask = ["search", "--model", "llama-3.1-70b", "--request-rate", "10", "--input-len", "2000", "--output-len", "500"]
    assert main([*ask, "--budget-per-hour", "5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cheapest"] is None and d["nothing_listed"]["limit"] == "budget"
    assert d["nothing_listed"]["cost_per_hour"] == pytest.approx(12 * 1.6) and d["nothing_listed"]["gpu"] == "gaudi3"
    assert main([*ask, "--budget-per-hour", "5"]) == 0
    assert "costs 19.2 USD per hour; raise the budget per hour to at least that" in capsys.readouterr().out
    assert main([*ask, "--slo-ttft-s", "0.05", "--slo-tpot-s", "0.005"]) == 0
    out = capsys.readouterr().out
    assert "No configuration meets the SLOs even one request at a time" in out and "relax TTFT and TPOT" in out


def test_the_list_ranks_each_currency_apart():
    """Costs in EUR (the scenario's own GPU priced so) and USD (the others' specs) are not converted: the list keeps
    the cheapest's currency first, then the other, each in order of cost (an audit found 1.77 USD between 1.67 and
    1.94 EUR)."""
    from calc.loader import load_catalog
    from calc.scenario import Scenario
    from calc.search import search

    r = search(Scenario(model="llama-3.1-70b", gpu="h100-sxm", gpu_hour_price=2.5, currency="EUR",
                        search_gpus="h100-sxm,h200", request_rate=10, input_len=2000, output_len=500), load_catalog())  # fmt: skip
    top = r.top(500)
    cur = [r.currencies[r.grid.gpu[r.base(i)]] for i in top]
    assert len(set(cur)) == 2 and cur == sorted(cur, key=lambda c: c != cur[0])
    for c in set(cur):
        costs = [r.cost_per_million_output_tokens[i] for i, x in zip(top, cur, strict=True) if x == c]
        assert costs == sorted(costs)
