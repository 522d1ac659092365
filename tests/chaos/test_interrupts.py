"""Ctrl-C at any point of the user's thread leaves a consumer that still closes in time.

A KeyboardInterrupt can land between any two interruptible points of the main thread (see
:mod:`tests.support.interrupts`). One that lands just after a lock was taken through Python code
(a ``Condition``'s ``__enter__``, an ``acquire()`` before its ``try``) leaves the lock held for
good: the heartbeat thread then blocks on it while holding the coordinator lock, and the user's
``except KeyboardInterrupt: consumer.close()`` never returns. These tests walk the interrupt
through a sample of the points of a fetching poll and of a first poll that joins the group, and
check after each that the user's thread holds no engine lock, that another thread can take the
coordinator and network locks, that the same thread and another one can still call in (the
single-thread guard was not left owned), and that ``close()`` returns within its timeout, also
when another thread closes it.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from tests.consumer.conftest import create_topic, produce, simple_records
from tests.helpers import unique_name
from tests.support.interrupts import run_interrupted_at

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CLOSE_MS = 5000
# close() is bounded by its timeout; the slack covers a loaded CI machine, not a hang.
CLOSE_BOUND_S = CLOSE_MS / 1000 + 10


@pytest.fixture
def topic(broker: Any) -> str:
    name = create_topic(str(broker.bootstrap_servers), 3, prefix="intr")
    produce(str(broker.bootstrap_servers), name, simple_records(3, 200))
    return name


def _consumer(broker: Any, group: str) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        session_timeout_ms=30000,
        heartbeat_interval_ms=300,
        fetch_max_wait_ms=100,
        max_poll_records=20,
    )


def _engine_locks(consumer: Any) -> dict[str, Any]:
    locks = {
        "coordinator": consumer._coordinator._lock,
        "fetcher": consumer._fetcher._lock,
        "offset fetcher": consumer._offset_fetcher._lock,
        "subscriptions": consumer._subscriptions._lock,
        "metadata": consumer._metadata._lock,
        "network": consumer._client._lock,
    }
    return {name: lock for name, lock in locks.items() if hasattr(lock, "_is_owned")}


def _check_after_interrupt(consumer: Any, where: str) -> None:
    locks = _engine_locks(consumer)
    held = [name for name, lock in locks.items() if lock._is_owned()]
    assert not held, f"{where}: the interrupted thread still holds {held}"
    # The heartbeat thread needs these two; a lock left held by a stale hand-off would stop it.
    results: list[bool] = []

    # And the telemetry sender's leaf lock, which every network poll takes (a plain Lock: only
    # trying it tells whether it was left held).
    needed = [locks["coordinator"], locks["network"]]
    if consumer._telemetry is not None:
        needed.append(consumer._telemetry.sender._lock)

    def take() -> None:
        for lock in needed:
            ok = lock.acquire(timeout=10)
            results.append(ok)
            if ok:
                lock.release()

    t = threading.Thread(target=take)
    t.start()
    t.join(40)
    assert results == [True] * len(needed), f"{where}: another thread could not take the locks"
    _check_usable(consumer, where)


def _check_usable(consumer: KafkaConsumer, where: str) -> None:
    # The guard is free: no call is running, so any thread may call in.
    consumer.assignment()
    raised: list[BaseException] = []

    def call() -> None:
        try:
            consumer.assignment()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            raised.append(exc)

    t = threading.Thread(target=call)
    t.start()
    t.join(40)
    assert not raised, f"{where}: another thread could not call in: {raised[0]!r}"


def _close_in_time(consumer: KafkaConsumer, where: str, elsewhere: bool = False) -> None:
    """Close on this thread, or on another one when ``elsewhere``."""
    start = time.monotonic()
    if elsewhere:
        raised: list[BaseException] = []

        def close() -> None:
            try:
                consumer.close(timeout_ms=CLOSE_MS)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                raised.append(exc)

        t = threading.Thread(target=close)
        t.start()
        t.join(CLOSE_BOUND_S + 30)
        assert not raised, f"{where}: close() on another thread raised {raised[0]!r}"
    else:
        consumer.close(timeout_ms=CLOSE_MS)
    took = time.monotonic() - start
    assert took < CLOSE_BOUND_S, f"{where}: close() took {took:.1f} s"
    assert consumer._closed, f"{where}: not closed"


def test_interrupts_through_fetching_polls(broker: Any, topic: str) -> None:
    consumer = _consumer(broker, unique_name("intr"))
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=100)
    assert consumer.assignment()
    rng = random.Random(11)
    fired = 0
    try:
        for i in range(100):
            if i % 20 == 19:  # fetch responses with records, not only empty ones
                produce(str(broker.bootstrap_servers), topic, simple_records(3, 30))
            # The points of a poll vary with what it finds: count them in one, interrupt the next.
            _, points, _ = run_interrupted_at(lambda: consumer.poll(timeout_ms=20), 0)
            at = rng.randint(1, max(1, points))
            interrupted, _, where = run_interrupted_at(lambda: consumer.poll(timeout_ms=20), at)
            fired += interrupted
            _check_after_interrupt(consumer, f"poll interrupted at point {at}, {where}")
        # Interrupted polls never break the next ones.
        consumer.poll(timeout_ms=100)
        assert consumer.assignment()
    finally:
        _close_in_time(consumer, "after the interrupted polls")
    assert fired > 50, fired


def test_interrupts_through_a_joining_poll(broker: Any, topic: str) -> None:
    group = unique_name("intj")
    # A member already in the group, so that each join is a rebalance with revocations.
    other = _consumer(broker, group)
    other.subscribe([topic])
    deadline = time.monotonic() + 60
    while not other.assignment() and time.monotonic() < deadline:
        other.poll(timeout_ms=100)
    try:
        probe = _consumer(broker, group)
        probe.subscribe([topic])
        _, points, _ = run_interrupted_at(lambda: probe.poll(timeout_ms=3000), 0)
        _close_in_time(probe, "the probe")
        assert points > 100, points
        rng = random.Random(12)
        for n, at in enumerate(sorted(rng.sample(range(1, points + 1), min(10, points)))):
            member = _consumer(broker, group)
            member.subscribe([topic])
            try:
                stop = threading.Event()
                # The old member keeps polling meanwhile, as it would in its own process.
                keeper = threading.Thread(target=_poll_until, args=(other, stop))
                keeper.start()
                try:
                    _, _, where = run_interrupted_at(
                        functools.partial(member.poll, timeout_ms=3000), at
                    )
                    _check_after_interrupt(member, f"joining poll interrupted at {at}, {where}")
                finally:
                    stop.set()
                    keeper.join(30)
            finally:
                # Java lets any thread close a consumer no thread is inside.
                _close_in_time(
                    member, f"joining poll interrupted at point {at}", elsewhere=n % 2 == 1
                )
    finally:
        other.close(timeout_ms=CLOSE_MS)


def _poll_until(consumer: KafkaConsumer, stop: threading.Event) -> None:
    while not stop.is_set():
        consumer.poll(timeout_ms=50)
