"""An override describes the scenario's own hypothetical part: it changes that GPU or model and nothing else."""

import pytest
from conftest import scenario

from calc.evaluate import evaluate
from calc.resolve import GPU_OVERRIDES, MODEL_OVERRIDES, for_other_gpu, other_gpu_fields

EXTREME = {"memory_gib": 200.0, "memory_bandwidth_gb_per_s": 100.0, "peak_tflop_per_s": 50.0,
           "scaleup_link_gb_per_s": 1.0, "host_link_gb_per_s": 1.0}  # fmt: skip


def options(r) -> dict:
    return {o.gpu: (o.tensor_parallel_size, round(o.capacity_rps, 9), o.cost_per_million_output_tokens)
            for o in r.gpu_options}  # fmt: skip


@pytest.fixture(scope="module")
def base(catalog):
    return evaluate(scenario(gpu="rtx-4090", request_rate=5), catalog)


@pytest.mark.parametrize("field", GPU_OVERRIDES)
def test_a_gpu_override_leaves_every_other_gpu_alone(catalog, base, field):
    r = evaluate(scenario(gpu="rtx-4090", request_rate=5, **{field: EXTREME[field]}), catalog)
    mine, theirs = options(r), options(base)
    others = set(theirs) - {"rtx-4090"}
    assert {g: mine.get(g) for g in others} == {g: theirs[g] for g in others}
    assert r.gpu != base.gpu  # …while the scenario's own GPU did change


def test_every_override_field_is_covered():
    assert set(EXTREME) == set(GPU_OVERRIDES)


def test_the_bigger_gpu_suggestion_survives_an_own_memory_override(catalog):
    # issue 15: with memory_gib set to the 4090's own value, the "bigger GPU" suggestion disappeared
    s = dict(gpu="rtx-4090", input_len=8192, max_model_len=8448)
    plain = evaluate(scenario(**s), catalog).suggestions
    same = evaluate(scenario(**s, memory_gib=catalog.gpus["rtx-4090"].memory_gib), catalog).suggestions
    assert [x.change for x in plain if x.change.startswith("gpu=")] == [x.change for x in same if x.change.startswith("gpu=")]
    bigger = next(x for x in same if x.change.startswith("gpu="))
    assert "memory_gib" not in bigger.fields or bigger.fields["memory_gib"] is None


def test_moving_to_another_gpu_drops_the_overrides_and_the_price(catalog):
    s = scenario(gpu="rtx-4090", memory_gib=24.0, gpu_hour_price=3.0)
    assert for_other_gpu(s, "rtx-4090") == s
    moved = for_other_gpu(s, "l40s")
    assert (moved.gpu, moved.memory_gib, moved.gpu_hour_price) == ("l40s", None, None)
    assert other_gpu_fields(s, "l40s") == {"gpu": "l40s", "memory_gib": None, "gpu_hour_price": None}
    l40s = next(o for o in evaluate(s, catalog).gpu_options if o.gpu == "l40s")
    per_hour = catalog.gpus["l40s"].price_per_gpu_hour * l40s.tensor_parallel_size  # its spec's price, not 3.0
    assert l40s.cost_per_million_output_tokens == pytest.approx(per_hour / (l40s.capacity_rps * 256 * 3600) * 1e6)
    big = evaluate(s.model_copy(update={"input_len": 8192, "max_model_len": 8448}), catalog).suggestions
    assert next(x for x in big if x.change.startswith("gpu=")).fields["gpu_hour_price"] is None


@pytest.mark.parametrize("field, value", [("num_hidden_layers", 14), ("num_key_value_heads", 28), ("head_dim", 64)])
def test_a_model_override_changes_the_model_everywhere_but_no_gpu(catalog, base, field, value):
    assert field in MODEL_OVERRIDES
    r = evaluate(scenario(gpu="rtx-4090", request_rate=5, **{field: value}), catalog)
    assert getattr(r.model, field) == value and r.gpu == base.gpu


def test_a_bridged_pcie_part_says_what_its_all_reduces_assume(catalog):
    """H200 NVL and H100 PCIe cards are joined by NVLink bridges of two or four (hardware_specs: scaleup_link_gpus);
    clouds also sell them unbridged (Massed Compute names its bridged H200 NVL servers `gpu_4x_h200_nvl_nvlink`), so the
    plan says which link its all-reduces ran over and how to plan the other."""

    def bridge_notes(**kw):
        return [n for n in evaluate(scenario(model="llama-3.1-70b", **kw), catalog).notes if "bridge" in n]

    (bridged,) = bridge_notes(gpu="h200-nvl", tensor_parallel_size=2)
    assert "450 GB/s a direction, up to 4 cards" in bridged and "set scaleup_link_gb_per_s to 64" in bridged
    # and what the plan would be without the bridge: the same TPOT as planning it so
    here = evaluate(scenario(model="llama-3.1-70b", gpu="h200-nvl", tensor_parallel_size=2), catalog).latency.tpot_s
    pcie = evaluate(scenario(model="llama-3.1-70b", gpu="h200-nvl", tensor_parallel_size=2, scaleup_link_gb_per_s=64),
                    catalog).latency.tpot_s  # fmt: skip
    assert pcie > here and f"(TPOT {pcie * 1e3:,.1f} ms instead of {here * 1e3:,.1f} ms here)" in bridged
    (ring,) = bridge_notes(gpu="h100-pcie", tensor_parallel_size=4)  # two bridged pairs: the ring crosses PCIe
    assert "spans more cards than one NVLink bridge joins (2)" in ring and "64 GB/s a direction" in ring
    assert bridge_notes(gpu="h200-nvl", tensor_parallel_size=2, scaleup_link_gb_per_s=64) == []  # stated: no guess
    assert bridge_notes(gpu="h100-sxm", tensor_parallel_size=2) == []  # NVSwitch joins all eight: nothing assumed
    assert bridge_notes(gpu="h200-nvl", tensor_parallel_size=1) == []
