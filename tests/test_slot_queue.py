"""Erlang C, the wait for a free slot (calc.slot_queue): hand values, an independent algorithm, properties, and the
scalar and array forms giving the same bits."""

import math

import numpy as np
import pytest

from calc.slot_queue import (
    erlang_c,
    erlang_c_one,
    late_share,
    late_share_one,
    queue_service,
    queue_service_one,
    queue_top,
)


def erlang_b_recursion(c: int, a: float) -> float:
    """The textbook recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)): a different algorithm from the module's."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c_reference(c: int, a: float) -> float:
    if a >= c:
        return 1.0
    b = erlang_b_recursion(c, a)
    return c * b / (c - a * (1 - b))


def test_hand_values():
    # one slot: M/M/1, an arrival waits with probability ρ = a
    assert erlang_c_one(1, 0.3) == pytest.approx(0.3)
    # two slots, a = 1: (a²/2! · 2/(2−1)) / (1 + a + 1) = 1 / 3
    assert erlang_c_one(2, 1.0) == pytest.approx(1 / 3)
    # three slots, a = 2: (2³/3! · 3/(3−2)) = 4; Σ_{k<3} 2^k/k! = 1 + 2 + 2 = 5; C = 4 / (5 + 4)
    assert erlang_c_one(3, 2.0) == pytest.approx(4 / 9)
    # the call-centre example: 10 agents, 8 Erlangs → 40.9 % wait
    assert erlang_c_one(10, 8.0) == pytest.approx(0.4092, abs=1e-4)


def test_limits():
    assert erlang_c_one(5, 0.0) == 0.0
    assert erlang_c_one(5, 5.0) == 1.0 and erlang_c_one(5, 7.0) == 1.0  # at or past saturation every arrival waits
    assert erlang_c_one(256, 100.0) == 0.0  # 156 slots spare: c − a > 7 √a + 12, below 1e-10
    assert erlang_c_one(64, 63.999) > 0.99


def test_against_the_recursion_on_random_pairs():
    rng = np.random.default_rng(3)
    c = rng.integers(1, 1500, 3000)
    a = c * rng.uniform(0, 1.02, 3000)
    got = erlang_c(c, a)
    want = np.array([erlang_c_reference(int(x), float(y)) for x, y in zip(c, a, strict=True)])
    assert np.max(np.abs(got - want)) < 1e-9


def test_more_load_waits_more_and_more_slots_wait_less():
    a = np.linspace(0.01, 31.99, 400)
    assert np.all(np.diff(erlang_c(32, a)) >= 0)
    c = np.arange(9, 60)
    assert np.all(np.diff(erlang_c(c, 8.0)) <= 0)


def test_the_scalar_and_the_arrays_give_the_same_bits():
    """calc.replicas.capacity takes the scalar form, the search the array form: their decisions must agree."""
    rng = np.random.default_rng(4)
    c = rng.integers(1, 2000, 4000)
    a = c * rng.uniform(0, 1.05, 4000)
    a[:40] = 0
    got = erlang_c(np.concatenate([c, c[:500]]), np.concatenate([a, a[:500]]))  # repeats share one sum
    assert all(erlang_c_one(int(x), float(y)) == z for x, y, z in zip(c, a, got, strict=False))


def test_late_share_is_the_wait_tail():
    # c = 2, a = 1: C = 1/3; P(W > t) = C · e^(−(c − a) t / S), t = 0.2 s, S = 4 s → (1/3) e^(−0.05)
    assert late_share_one(2, 1.0, 0.2, 4.0) == pytest.approx(math.exp(-0.05) / 3)
    assert late_share_one(2, 1.0, -1.0, 4.0) == pytest.approx(1 / 3)  # no slack: every wait is late
    got = late_share(np.array([2, 2, 10]), np.array([1.0, 1.0, 8.0]), np.array([0.2, -1.0, 1.0]), np.array([4.0, 4.0, 2.0]))
    want = [late_share_one(2, 1.0, 0.2, 4.0), 1 / 3, erlang_c_one(10, 8.0) * math.exp(-2 * 1.0 / 2.0)]
    assert got == pytest.approx(want, rel=1e-12)


def test_the_queues_service_time_is_read_near_the_top_of_the_swings():
    # b = 16: 16 + ⌈3 · 4⌉ + 2 = 30 in flight; with 64 slots, 30 lies (30 − 16) / (64 − 16) of the way from the
    # E2E at 16 (8 s) to the E2E at 64 (20 s): 8 + 12 · 14/48 = 11.5 s
    assert queue_top(16, 64) == 30 and queue_top(16, 20) == 20 and queue_top(1, 1) == 1
    assert queue_service_one(16, 64, 8.0, 20.0) == pytest.approx(11.5)
    assert queue_service_one(16, 16, 8.0, 20.0) == 20.0  # every slot in flight: the full replica's E2E
    got = queue_service(np.array([16, 16, 1]), np.array([64, 20, 1]), np.array([8.0, 8.0, 3.0]), np.array([20.0, 20.0, 3.0]))
    assert got == pytest.approx([11.5, 20.0, 3.0])
