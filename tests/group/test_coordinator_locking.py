"""Coordinator lock discipline, wakeups and backoff (fake broker).

- ``close()`` after ``wakeup()`` still commits and leaves (wakeups are disabled in close);
- no backoff and no network wait happens under the coordinator lock, and ``wakeup()``
  interrupts them;
- retries back off exponentially from retry.backoff.ms to retry.backoff.max.ms (KIP-580);
- the leader's wait for metadata is bounded by the caller's timer;
- a future completed from two threads has exactly one winner (``complete_if_pending``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import errors as Errors
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey
from tests.group.harness import Stack
from tests.helpers import wait_for
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

TOPIC = "orders"
COORDINATOR_NOT_AVAILABLE = 15


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=1, topics={TOPIC: 2}) as c:
        yield c


def test_close_after_wakeup_completes_the_final_auto_commit(cluster: FakeCluster) -> None:
    s = Stack(
        cluster.bootstrap_servers,
        "g-close",
        enable_auto_commit=True,
        auto_commit_interval_ms=600000,
    )
    s.subscribe([TOPIC])
    try:
        s.join()
        tps = sorted(s.subscriptions.assigned_partitions())
        assert tps
        for i, tp in enumerate(tps):
            s.subscriptions.seek(tp, 7 + i)
        s.client.wakeup()
    finally:
        # Raised WakeupError inside close before the fix, and the commit was never sent.
        s.close(timeout_ms=5000)
    committed = cluster.committed("g-close")
    assert {(t, p): v[0] for (t, p), v in committed.items()} == {
        (tp.topic, tp.partition): 7 + i for i, tp in enumerate(tps)
    }


def _run(fn: Any) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, errors


def test_lookup_backoff_is_outside_the_lock_and_wakeup_interrupts_it(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.FIND_COORDINATOR, COORDINATOR_NOT_AVAILABLE, times=1000)
    # A backoff far longer than the test: only wakeup() can end it.
    s = Stack(
        cluster.bootstrap_servers, "g-wake", retry_backoff_ms=60000, retry_backoff_max_ms=60000
    )
    s.subscribe([TOPIC])
    try:
        thread, errors = _run(lambda: s.coordinator.ensure_coordinator_ready(s.timer(120000)))
        wait_for(lambda: cluster.requests(ApiKey.FIND_COORDINATOR), 10, message="a FindCoordinator")
        wait_for(
            lambda: s.coordinator.lookup_backoff_ms() > 1000,
            10,
            message="the failed lookup counted",
        )
        # The heartbeat thread and the max.poll.interval check need this lock meanwhile.
        assert s.coordinator._lock.acquire(timeout=10), "coordinator lock held through a backoff"
        s.coordinator._lock.release()
        s.client.wakeup()
        thread.join(20)
        assert not thread.is_alive(), "wakeup() did not interrupt the lookup backoff"
        assert len(errors) == 1 and isinstance(errors[0], Errors.WakeupError), errors
    finally:
        s.close()


def test_lookup_retries_back_off_exponentially(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.FIND_COORDINATOR, COORDINATOR_NOT_AVAILABLE, times=4)
    s = Stack(cluster.bootstrap_servers, "g-backoff", retry_backoff_ms=20, retry_backoff_max_ms=100)
    s.subscribe([TOPIC])
    waits: list[int] = []
    original = s.coordinator.backoff_wait

    def spy(timer: Any, backoff_ms: int) -> None:
        waits.append(backoff_ms)
        original(timer, backoff_ms)

    s.coordinator.backoff_wait = spy
    try:
        assert s.coordinator.ensure_coordinator_ready(s.timer(20000))
        assert len(waits) == 4, waits
        # 20, 40, 80, then the 100 cap, each moved by up to 20%.
        for wait, base in zip(waits, [20, 40, 80, 100], strict=True):
            assert base * 0.8 - 1 <= wait <= base * 1.2, waits
        # A successful lookup resets the sequence.
        assert s.coordinator.lookup_backoff_ms() <= 24
    finally:
        s.close()


def test_leader_metadata_wait_is_bounded_by_the_callers_timer(cluster: FakeCluster) -> None:
    # A request timeout far longer than the caller's timer: the old wait used it.
    s = Stack(
        cluster.bootstrap_servers,
        "g-leader",
        request_timeout_ms=30000,
        session_timeout_ms=40000,
        max_poll_interval_ms=40000,
    )
    s.subscribe([TOPIC])
    try:
        s.join()
        # A new subscription with a topic nobody has metadata for, and metadata that never comes.
        cluster.on(ApiKey.METADATA, lambda node, header, body: Reply(drop=True))
        s.subscribe([TOPIC, "ghost"])

        def polls() -> None:
            # The rejoin goes out and its answer elects us leader within these polls.
            for _ in range(8):
                s.coordinator.poll(s.timer(300), wait_for_join_group=True)
                s.client.poll(timeout_ms=0)

        thread, errors = _run(polls)
        wait_for(
            lambda: (
                cluster.requests(ApiKey.JOIN_GROUP)
                and len(cluster.requests(ApiKey.JOIN_GROUP)) >= 2
            ),
            10,
            message="the rejoin",
        )
        thread.join(15)
        assert not thread.is_alive(), "the leader's metadata wait ignored the caller's timer"
        assert not errors, errors
        # Metadata answers again: the leader assigns and the member becomes stable.
        cluster.on(ApiKey.METADATA, None)
        # The dropped request would hold the metadata slot until request.timeout.ms.
        cluster.close_connections()
        s.join(timeout_ms=20000)
        assert {tp.topic for tp in s.subscriptions.assigned_partitions()} == {TOPIC}
    finally:
        s.close()


def _race_once() -> None:
    future: Future[int] = Future()
    outcomes: list[bool] = []
    barrier = threading.Barrier(2)

    def succeed() -> None:
        barrier.wait()
        outcomes.append(future.complete_if_pending(1))

    def fail() -> None:
        barrier.wait()
        outcomes.append(future.fail_if_pending(Errors.RebalanceInProgressError()))

    threads = [threading.Thread(target=succeed), threading.Thread(target=fail)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(outcomes) == [False, True]
    assert future.is_done and future.succeeded() != future.failed()


def test_complete_if_pending_has_one_winner() -> None:
    for _ in range(200):
        _race_once()
    done: Future[int] = Future()
    done.success(1)
    with pytest.raises(RuntimeError):
        done.success(2)
    assert not done.complete_if_pending(3) and done.value == 1
