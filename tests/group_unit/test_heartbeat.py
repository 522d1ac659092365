"""Heartbeat, session and poll timers on a fake clock (no sleeping)."""

from __future__ import annotations

import threading

import pytest

from kafkaconsumer.internals.group.heartbeat import Heartbeat
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(30)


def make(time: MockTime, **kw: int) -> Heartbeat:
    args = dict(
        session_timeout_ms=10_000,
        heartbeat_interval_ms=3_000,
        max_poll_interval_ms=300_000,
        retry_backoff_ms=100,
    )
    args.update(kw)
    return Heartbeat(time=time, **args)


def test_heartbeat_due_after_interval() -> None:
    t = MockTime(start_ms=1_000)
    hb = make(t)
    assert not hb.should_heartbeat()
    assert hb.time_to_next_heartbeat() == 3_000
    t.advance(2_999)
    assert not hb.should_heartbeat()
    assert hb.time_to_next_heartbeat() == 1
    t.advance(1)
    assert hb.should_heartbeat()
    assert hb.time_to_next_heartbeat() == 0


def test_sent_heartbeat_restarts_interval() -> None:
    t = MockTime()
    hb = make(t)
    t.advance(3_000)
    assert hb.should_heartbeat()
    hb.sent_heartbeat()
    assert not hb.should_heartbeat()
    assert hb.time_to_next_heartbeat() == 3_000


def test_fail_heartbeat_retries_after_backoff() -> None:
    t = MockTime()
    hb = make(t)
    hb.sent_heartbeat()
    t.advance(500)
    hb.fail_heartbeat()
    # retry.backoff.ms with 20% jitter either way (KIP-580).
    assert 80 <= hb.time_to_next_heartbeat() <= 120
    t.advance(120)
    assert hb.should_heartbeat()


def test_failed_heartbeats_back_off_exponentially_up_to_the_cap() -> None:
    t = MockTime()
    hb = make(t, retry_backoff_ms=100, retry_backoff_max_ms=1_000)
    waits = []
    for _ in range(8):
        hb.fail_heartbeat()
        waits.append(hb.time_to_next_heartbeat())
    # 100, 200, 400, 800, then the 1000 cap, each moved by up to 20%.
    for wait, base in zip(waits, [100, 200, 400, 800, 1000, 1000, 1000, 1000], strict=True):
        assert base * 0.8 <= wait <= base * 1.2, waits
    # An answer resets the sequence.
    hb.received_heartbeat()
    hb.fail_heartbeat()
    assert 80 <= hb.time_to_next_heartbeat() <= 120


def test_session_expires_without_responses() -> None:
    t = MockTime()
    hb = make(t)
    t.advance(9_999)
    assert not hb.session_timeout_expired()
    t.advance(1)
    assert hb.session_timeout_expired()


def test_received_heartbeat_keeps_session_alive() -> None:
    t = MockTime()
    hb = make(t)
    for _ in range(10):
        t.advance(3_000)
        hb.sent_heartbeat()
        hb.received_heartbeat()
        assert not hb.session_timeout_expired()
    # Sending alone does not keep the session: only answers do.
    for _ in range(4):
        t.advance(3_000)
        hb.sent_heartbeat()
    assert hb.session_timeout_expired()


def test_poll_timer() -> None:
    t = MockTime()
    hb = make(t, max_poll_interval_ms=5_000)
    t.advance(4_000)
    hb.poll()
    t.advance(4_999)
    assert not hb.poll_timeout_expired()
    t.advance(1)
    assert hb.poll_timeout_expired()


def test_heartbeats_do_not_reset_poll_timer() -> None:
    t = MockTime()
    hb = make(t, max_poll_interval_ms=5_000)
    for _ in range(2):
        t.advance(2_500)
        hb.sent_heartbeat()
        hb.received_heartbeat()
    assert hb.poll_timeout_expired()
    assert not hb.session_timeout_expired()


def test_reset_timeouts_restarts_all_three() -> None:
    t = MockTime()
    hb = make(t, max_poll_interval_ms=20_000)
    t.advance(25_000)
    assert hb.session_timeout_expired() and hb.poll_timeout_expired() and hb.should_heartbeat()
    hb.reset_timeouts()
    assert not hb.session_timeout_expired()
    assert not hb.poll_timeout_expired()
    assert not hb.should_heartbeat()
    assert hb.time_to_next_heartbeat() == 3_000


def test_reset_session_timeout_only_touches_session() -> None:
    t = MockTime()
    hb = make(t, max_poll_interval_ms=12_000)
    t.advance(12_000)
    hb.reset_session_timeout()
    assert not hb.session_timeout_expired()
    assert hb.poll_timeout_expired()
    assert hb.should_heartbeat()


def test_explicit_now_overrides_clock_and_time_never_goes_back() -> None:
    t = MockTime()
    hb = make(t)
    assert hb.should_heartbeat(now=3_000)
    hb.sent_heartbeat(now=3_000)
    # An older "now" does not move the timers backwards.
    assert hb.time_to_next_heartbeat(now=1_000) == 3_000
    assert hb.session_timeout_expired(now=10_000)
    hb.received_heartbeat(now=10_000)
    assert not hb.session_timeout_expired(now=19_999)
    assert hb.session_timeout_expired(now=20_000)


@pytest.mark.parametrize(
    "kw, exc",
    [
        (dict(heartbeat_interval_ms=10_000), ValueError),  # not below the session timeout
        (dict(session_timeout_ms=0), ValueError),
        (dict(max_poll_interval_ms=-1), ValueError),
        (dict(retry_backoff_ms=-5), ValueError),
        (dict(heartbeat_interval_ms=1.5), TypeError),
    ],
)
def test_invalid_config_rejected(kw: dict[str, int], exc: type[Exception]) -> None:
    with pytest.raises(exc):
        make(MockTime(), **kw)


def test_concurrent_callers_are_safe() -> None:
    t = MockTime()
    hb = make(t)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for _ in range(2_000):
                if n % 2:
                    hb.sent_heartbeat()
                    hb.received_heartbeat()
                else:
                    hb.poll()
                    hb.should_heartbeat()
                    hb.time_to_next_heartbeat()
                    t.advance(1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(20)
    assert not errors
    assert all(not th.is_alive() for th in threads)
    assert 0 <= hb.time_to_next_heartbeat() <= 3_000
