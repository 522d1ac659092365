"""ExponentialBackoff: growth, cap, constant mode and jitter bounds."""

from __future__ import annotations

import random

from kafkaconsumer.utils.backoff import ExponentialBackoff


def test_grows_and_caps_without_jitter() -> None:
    b = ExponentialBackoff(100, 2.0, 1000, jitter=0.0)
    assert [b.backoff(n) for n in range(6)] == [100, 200, 400, 800, 1000, 1000]
    assert b.backoff(10_000) == 1000


def test_constant_when_max_not_above_initial() -> None:
    b = ExponentialBackoff(250, 2.0, 100, jitter=0.0)
    assert {b.backoff(n) for n in range(5)} == {250}


def test_jitter_stays_within_bounds() -> None:
    b = ExponentialBackoff(100, 2.0, 1000, jitter=0.2, rng=random.Random(7))
    for n in range(8):
        base = min(100 * 2**n, 1000)
        for _ in range(50):
            assert int(base * 0.8) <= b.backoff(n) <= int(base * 1.2)
