"""Scenario.model_copy checks what it changes: a library user who derives a scenario with model_copy gets the same
refusal, naming the field, as one who builds it (pydantic's own model_copy validates nothing)."""

import pytest

from calc.errors import InputError
from calc.scenario import Scenario


@pytest.mark.parametrize("field, value", [("concurrency", -3), ("concurrency", 0), ("input_len", -5),
                                          ("tensor_parallel_size", 0), ("gpu_memory_utilization", 2.0),
                                          ("request_rate", -1.0), ("dtype", "fp7"), ("concurrency", float("nan"))])  # fmt: skip
def test_a_copy_refuses_what_the_constructor_refuses(field, value):
    with pytest.raises(ValueError):
        Scenario(**{field: value})
    with pytest.raises(InputError) as e:
        Scenario().model_copy(update={field: value})
    assert e.value.field == field


def test_a_copy_refuses_an_unknown_field():
    with pytest.raises(InputError, match="bogus: is not a Scenario field"):
        Scenario().model_copy(update={"bogus": 1})


def test_a_copy_stores_the_validated_value():
    # lax values coerce as the constructor coerces them: 3.0 in flight is the integer 3, a rate of 2 is 2.0
    s = Scenario().model_copy(update={"concurrency": 3.0, "request_rate": 2})
    assert s == Scenario(concurrency=3, request_rate=2.0)
    assert type(s.concurrency) is int and type(s.request_rate) is float


def test_vllms_own_longest_context_is_a_valid_max_model_len():
    """vLLM without --max-model-len serves Llama-4-Scout at its 10,485,760 positions (a start failure log names it);
    the field takes it, as a reconcile of such a log needs."""
    assert Scenario(max_model_len=10_485_760).max_model_len == 10_485_760


def test_a_ranks_share_of_a_tiny_rate_is_planned(catalog):
    """1.5e-6 req/s over 2 data-parallel ranks is 7.5e-7 a rank, below the 1e-6 a user may ask for: an internal share,
    planned (one replica), not refused."""
    from calc.evaluate import evaluate

    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", request_rate=1.5e-6, data_parallel_size=2), catalog)
    assert r.fleet.replicas == 1


def test_the_concurrency_sweep_stops_at_the_fields_bound(catalog):
    """64 ranks × 27,000 requests of 32 tokens each would sweep to 1.7 M in flight; the sweep ends at concurrency's
    bound (1,000,000), which every point's scenario must accept."""
    from calc.evaluate import evaluate
    from calc.scenario import field_bounds

    s = Scenario(model="llama-3.2-1b", gpu="b200", data_parallel_size=64, max_num_seqs=65536,
                 max_num_batched_tokens=65536, input_len=16, output_len=16, concurrency=1000)  # fmt: skip
    top = max(p.concurrency for p in evaluate(s, catalog).curves.concurrency_sweep)
    assert top <= field_bounds("concurrency")[1]
