"""An engine's releases: the fixed costs of the release a Scenario's `engine_version` names (EngineSpec.at), the
versions people type, and the runs' own versions as the benchmark data state them."""

import pytest
from conftest import scenario
from pydantic import ValidationError

from boundary.bench_data import _engine_version
from calc.engine_spec import EngineSpec, Release, version_tuple
from calc.errors import InputError
from calc.evaluate import evaluate
from calc.scenario import Scenario


def _spec(catalog, **releases) -> EngineSpec:
    """vLLM's spec with made-up release costs: 0.8 → 100 µs a sequence, 0.12 → 50 µs, 0.14 → 20 µs."""
    base = catalog.engines["vllm"].model_copy(update={"per_sequence_s": 100e-6, "since": "0.8", "version": "0.8–0.11"})
    return EngineSpec.model_validate(base.model_dump() | {"releases": [
        {"since": "0.12", "version": "0.12–0.13", "per_sequence_s": 50e-6, "source": "by hand, for this test"},
        {"since": "0.14", "version": "0.14 and later", "per_sequence_s": 20e-6, "source": "by hand, for this test"}]})


@pytest.mark.parametrize("version, per_seq, label", [
    ("0.8", 100e-6, "vLLM 0.8–0.11"), ("0.11.0", 100e-6, "vLLM 0.8–0.11"), ("0.12.0rc1", 50e-6, "vLLM 0.12–0.13"),
    ("0.13.0", 50e-6, "vLLM 0.12–0.13"), ("0.14", 20e-6, "vLLM 0.14 and later"), ("0.20.2", 20e-6, "vLLM 0.14 and later"),
    ("latest", 20e-6, "vLLM 0.14 and later"), ("nightly", 20e-6, "vLLM 0.14 and later")])  # fmt: skip
def test_a_version_picks_the_release_it_falls_in(catalog, version, per_seq, label):
    e = _spec(catalog).at(version)
    assert (e.per_sequence_s, e.label, e.releases) == (per_seq, label, ())
    assert e.layer_overhead_s == catalog.engines["vllm"].layer_overhead_s  # a cost the release leaves unset: the engine's
    assert e.at(version) == e  # a resolved spec resolves to itself


def test_a_later_version_never_picks_an_earlier_release(catalog):
    spec = _spec(catalog)
    versions = ["0.8", "0.8.5", "0.9.1", "0.10.2", "0.11.0", "0.12", "0.12.1", "0.13.0", "0.14", "0.15.1", "1.0"]
    per_seq = [spec.at(v).per_sequence_s for v in versions]
    assert per_seq == sorted(per_seq, reverse=True)


def test_a_version_before_the_measured_ones_is_refused_by_name(catalog):
    with pytest.raises(ValueError, match="older than the releases"):
        _spec(catalog).at("0.7.3")
    s = scenario(engine_version="0.6.6")
    with pytest.raises(InputError) as e:
        evaluate(s, catalog)
    assert e.value.field == "engine_version" and "0.8" in e.value.message


@pytest.mark.parametrize("text", ["", "0.11.0; rm", "v0.11", "0.11.0<b>", "LATEST", "1" * 41, "0..1"])
def test_a_version_that_is_no_version_is_refused(text):
    with pytest.raises(ValidationError, match="engine_version"):
        Scenario(engine_version=text)


def test_releases_must_come_in_order(catalog):
    data = catalog.engines["vllm"].model_dump() | {"since": "0.8", "releases": [
        {"since": "0.14", "version": "b", "source": "by hand, for this test"},
        {"since": "0.12", "version": "a", "source": "by hand, for this test"}]}  # fmt: skip
    with pytest.raises(ValidationError, match="in order"):
        EngineSpec.model_validate(data)
    with pytest.raises(ValidationError):
        Release.model_validate({"since": "0.14", "version": "x", "source": "by hand", "per_sequence_s": -1})


def test_version_numbers_as_engines_print_them():
    assert version_tuple("0.5.6.post3.dev1278+gad1b4e472") == (0, 5, 6)
    assert version_tuple("0.12.0rc1") == (0, 12, 0)
    assert version_tuple("latest") is None and version_tuple("nightly") is None


@pytest.mark.parametrize("stated, engine, expected", [
    ("cu129-nightly (exact version not stated)", "vllm", "latest"), ("0.11.0", "vllm", "0.11.0"),
    ("0.5.6.post3.dev1278+gad1b4e472", "sglang", "0.5.6"), ("0.6.6 (via xinference 1.1.1)", "vllm", "0.6.6"),
    (None, "vllm", "0.8"), (None, "sglang", "0.4")])  # fmt: skip
def test_a_runs_stated_version_as_a_scenarios(catalog, stated, engine, expected):
    """tests/data/benchmarks: Massed Compute's runs name the nightly image, SGLang's cookbook a dev build, some sources
    no version at all (the engine's oldest measured release: every such source is of 2024–2025)."""
    assert _engine_version({"engine_version": stated, "engine": engine}, catalog) == expected


def test_every_shipped_engine_resolves_every_release(catalog):
    for name, spec in catalog.engines.items():
        for v in [spec.since, *(r.since for r in spec.releases), "latest"]:
            e = evaluate(scenario(engine=name, engine_version=v), catalog).engine
            assert e.label.startswith(spec.name) and e.releases == ()


def test_the_nightly_run_decodes_as_measured_and_the_older_costs_would_not(catalog):
    """Massed Compute, one H100 PCIe, DeepSeek-R1-Distill-Llama-8B (Llama-3.1-8B's shape), 32 in flight, 128 + 128
    tokens, vLLM's cu129-nightly image of 2026-07-16 (asynchronous scheduling on since 0.14): median TPOT 10.59 ms
    (tests/data/benchmarks, verbatim there). A held-out run. Replayed at the run's own release the prediction is
    within 10 %; at 0.8–0.13's costs, 32 sequences' CPU work a step (32 × (per_sequence_s + stream_token_s), 1.9 ms
    at the costs fitted on 2026-12-04) would make it 15 % slower or more."""
    from boundary.bench_check import predict
    from boundary.bench_data import load_runs

    run = next(r for r in load_runs(catalog)[0] if r.id == "massed-deepseek-r1-distill-llama-8b-h100-vllm-c32")
    assert run.part == "held-out" and run.scenario.engine_version == "latest"
    measured_ms = 10.5884655196847
    assert predict(run, catalog)["tpot"] * 1e3 == pytest.approx(measured_ms, rel=0.10)
    older = replace_version(run, "0.11.0")
    e = catalog.engines["vllm"]
    assert 32 * (e.per_sequence_s + e.stream_token_s) > 1.5e-3
    assert predict(older, catalog)["tpot"] * 1e3 > 1.15 * measured_ms


def replace_version(run, version: str):
    from dataclasses import replace

    return replace(run, scenario=run.scenario.model_copy(update={"engine_version": version}))


def test_the_page_takes_a_version_from_the_link_and_names_a_bad_one():
    """A link with ?engine_version=0.11.0 titles the plan 'vLLM 0.8–0.13' (no version: the latest release); one older
    than the measured releases, or not a version at all, is named in a warning while the page keeps working."""
    from test_app import run

    at = run({"engine_version": "0.11.0"})
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")  # Markdown-escaped: 0\.8
    assert not at.exception and "vLLM 0.8–0.13" in shown and "vLLM 0.14 and later" not in shown
    assert "vLLM 0.14 and later" in " ".join(m.value for m in run().markdown).replace("\\", "")  # the default: latest
    for bad in ("0.6.6", "0.11<b>"):
        at = run({"engine_version": bad})
        assert not at.exception
        said = [w.value.replace("\\", "") for w in (*at.warning, *at.error)]
        assert any("engine_version" in w for w in said), said


def test_past_the_runs_the_newer_costs_were_fitted_on_the_plan_says_so(catalog):
    """The later releases' costs come from runs of 1–32 in flight (calibrate.py writes the most into the spec); a plan
    with 64 running at those costs names the limit and the older release that bounds it, one with 16 does not."""
    assert {r.fitted_concurrency for e in catalog.engines.values() for r in e.releases} == {32}
    note = [n for n in evaluate(scenario(concurrency=64), catalog).notes if "fitted on runs of at most 32" in n]
    assert len(note) == 1 and "64 run here" in note[0] and "(vLLM 0.8–0.13)" in note[0]
    assert not [n for n in evaluate(scenario(concurrency=16), catalog).notes if "fitted on runs" in n]
    assert not [n for n in evaluate(scenario(concurrency=64, engine_version="0.13.0"), catalog).notes if "fitted on runs" in n]
    assert catalog.engines["sglang"].before("0.5.10").label == "SGLang 0.4–0.5.9"


@pytest.mark.parametrize("name, expected", [
    ("eole-gemma-3-1b-v0.13.log", "0.13.0"), ("vllm-pr4650-deepseek-v2-lite-v0.log", None)])  # fmt: skip
def test_a_pasted_log_sets_the_release_it_was_printed_by(name, expected):
    """The log's "Initializing a V1 LLM engine (v0.13.0)" line: the plan it describes uses 0.8–0.13's costs; a V0
    log of 0.5.0.post1 predates every measured release and leaves the version at its default."""
    from test_reconcile import log

    from boundary.log_fields import log_scenario_fields

    fields, _ = log_scenario_fields(log(name))
    assert fields.get("engine_version") == expected


def test_a_search_whose_cheapest_runs_past_the_fitted_runs_says_so(catalog):
    """`calc search` for Llama-3.1-8B at 20 req/s: at the latest releases' costs the cheapest serves 96 in flight, three
    times the 32 of the runs those costs come from; the note names the older costs as the bound. At those costs
    (engine_version 0.13) there is nothing to say."""
    from calc.search import search

    s = scenario(model="llama-3.1-8b", request_rate=20.0)
    said = [n for n in search(s, catalog).notes if "past the 32 of the runs" in n]
    assert len(said) == 1 and "(engine_version 0.8)" in said[0]
    older = search(s.model_copy(update={"engine_version": "0.13"}), catalog)
    assert not [n for n in older.notes if "past the 32" in n]


def test_the_fit_reads_and_writes_every_release_cost(catalog):
    """scripts/calibrate.py lays each later release's fixed costs after the engines' own in the fitted vector: the
    shipped constants, read into the vector and back, are the shipped specs (up to the eager cost it derives), and a
    release's entry moves that release's cost and no other."""
    import math

    from scripts.calibrate import EAGER_RATIO, RELEASE_OWN, _engines, _layout, _x0

    layout, x0 = _layout(catalog), _x0(catalog)
    assert len(layout) == len(x0) and all(math.isfinite(v) for v in x0)
    back = _engines(x0, catalog)
    for name, spec in catalog.engines.items():
        for j, release in enumerate(spec.releases):
            for k in RELEASE_OWN:
                shipped = getattr(release, k) if getattr(release, k) is not None else getattr(spec, k)
                assert getattr(back[name].releases[j], k) == pytest.approx(shipped, rel=1e-9), (name, k)
            assert back[name].releases[j].layer_overhead_eager_s == pytest.approx(
                release.layer_overhead_s * EAGER_RATIO, rel=1e-9)
        assert back[name].per_sequence_s == pytest.approx(spec.per_sequence_s, rel=1e-9)
    i = layout.index(("vllm", 0, "per_sequence_s"))
    moved = x0.copy()
    moved[i] += math.log(2)
    after = _engines(moved, catalog)["vllm"]
    assert after.releases[0].per_sequence_s == pytest.approx(2 * back["vllm"].releases[0].per_sequence_s)
    assert after.per_sequence_s == back["vllm"].per_sequence_s


def test_fit_only_names_pick_an_engines_entries(catalog):
    """`fit-only` names: NAME refits both engines' own constant, release.NAME each engine's later releases',
    ENGINE.NAME and ENGINE.release.NAME that engine's alone; SGLang's idle launch is in its layout only."""
    from scripts.calibrate import _layout, _selects, fit_names

    layout = _layout(catalog)
    assert ("sglang", None, "idle_launch_s") in layout and ("vllm", None, "idle_launch_s") not in layout

    def picked(name):
        return {(e, j, k) for e, j, k in layout if e and _selects(name, e, j, k)}

    assert picked("request_overhead_s") == {("vllm", None, "request_overhead_s"), ("sglang", None, "request_overhead_s")}
    assert picked("sglang.request_overhead_s") == {("sglang", None, "request_overhead_s")}
    releases = {(e, j) for e, j, _ in picked("release.request_overhead_s")}
    assert releases == {(e, j) for e in catalog.engines for j in range(len(catalog.engines[e].releases))}
    assert picked("sglang.release.request_overhead_s") == {
        ("sglang", j, "request_overhead_s") for j in range(len(catalog.engines["sglang"].releases))}
    assert "sglang.idle_launch_s" in fit_names() and "vllm.idle_launch_s" not in fit_names()


def test_a_release_newer_than_any_measured_is_said(catalog):
    """Each engine's newest_measured is the newest numbered release among the published runs; a later version is
    planned with the latest release's costs and the plan says so (SGLang '0.11.0' was silently SGLang 0.5.10 and
    later's; vLLM '9.9' vLLM 0.14 and later's)."""
    from boundary.bench_data import load_runs
    from calc.engine_spec import version_tuple

    runs = load_runs(catalog)[0]
    for name, spec in catalog.engines.items():
        numbered = [r.scenario.engine_version for r in runs if r.scenario.engine == name
                    and version_tuple(r.scenario.engine_version)]  # fmt: skip
        assert version_tuple(spec.newest_measured) == max(map(version_tuple, numbered)), name
    def noted(**kw):
        return any("is newer than any release in the published runs" in n for n in evaluate(scenario(**kw), catalog).notes)

    assert noted(engine="sglang", engine_version="0.11.0") and noted(engine_version="9.9")
    assert not noted(engine="sglang", engine_version="0.5.15") and not noted(engine_version="latest")
    assert not noted(engine_version=catalog.engines["vllm"].newest_measured)
