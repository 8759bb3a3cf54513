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
