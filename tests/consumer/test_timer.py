"""Unit tests of Timer / MockTime and timeout normalisation."""

from __future__ import annotations

import datetime

import pytest

from kafkaconsumer.utils.timer import Timer, to_timeout_ms
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(30)


def test_timer_counts_down_on_a_fake_clock() -> None:
    clock = MockTime()
    t = clock.timer(100)
    assert t.not_expired() and t.remaining_ms == 100
    clock.advance(40)
    assert t.remaining_ms == 100  # cached until update()
    t.update()
    assert t.remaining_ms == 60 and t.elapsed_ms == 40
    t.sleep(1000)  # sleeps at most the remaining time
    assert t.is_expired() and clock.monotonic_ms() == 100
    t.reset(50)
    assert t.remaining_ms == 50 and t.deadline_ms == 150
    t.reset_deadline(120)
    assert t.remaining_ms == 20


def test_timer_never_moves_backwards() -> None:
    clock = MockTime(start_ms=1000)
    t = Timer(clock, 10)
    t.update(500)
    assert t.current_time_ms == 1000


def test_to_timeout_ms() -> None:
    assert to_timeout_ms(datetime.timedelta(seconds=1.5)) == 1500
    assert to_timeout_ms(None, 7) == 7
    assert to_timeout_ms(12.9) == 12
    with pytest.raises(ValueError):
        to_timeout_ms(-1)
    with pytest.raises(TypeError):
        to_timeout_ms("10")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        to_timeout_ms(True)
    with pytest.raises(ValueError):
        to_timeout_ms(None)
