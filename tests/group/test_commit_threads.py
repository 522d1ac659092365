"""Which thread runs commit interceptors and callbacks, and with which locks (fake broker).

docs/architecture.md (Locks): no user callback ever runs under a lock. An async commit's future may be
completed by the heartbeat thread, which holds the coordinator lock while it polls the network;
the interceptors and the callback must still run later, on the user's thread, with no lock held.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kafkaconsumer.internals.group.consumer_coordinator import ConsumerCoordinator
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.group.harness import Stack
from tests.helpers import wait_for
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(30)

TOPIC = "orders"
TP0 = TopicPartition(TOPIC, 0)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=1, topics={TOPIC: 1}) as c:
        yield c


class ThreadRecorder:
    """An interceptor (and commit callback) noting its thread and whether it holds the lock."""

    def __init__(self, coordinator: ConsumerCoordinator) -> None:
        self.coordinator = coordinator
        self.calls: list[tuple[str, threading.Thread, bool]] = []

    def _record(self, what: str) -> None:
        lock: Any = self.coordinator._lock
        self.calls.append((what, threading.current_thread(), bool(lock._is_owned())))

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Interceptor hook."""
        self._record("interceptor")

    def callback(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None
    ) -> None:
        """Commit callback."""
        self._record("callback" if exc is None else f"callback failed: {exc!r}")


def test_async_commit_interceptor_runs_on_the_user_thread_without_the_lock(
    cluster: FakeCluster,
) -> None:
    s = Stack(cluster.bootstrap_servers, "g")
    s.subscribe([TOPIC])
    try:
        s.join()
        c = s.coordinator
        recorder = ThreadRecorder(c)
        c.commits.interceptors = recorder
        c.commits.commit_offsets_async({TP0: OffsetAndMetadata(7)}, recorder.callback)
        with c._lock:
            (future,) = list(c.commits._in_flight_async_commits)
        # This thread does not poll: the heartbeat thread receives the answer (under the lock).
        wait_for(lambda: future.is_done, 10, message="heartbeat thread completes the commit")
        assert future.succeeded()
        assert recorder.calls == [], "user code ran on the thread that completed the future"
        s.poll_until(lambda: len(recorder.calls) >= 2, 5000)
        me = threading.current_thread()
        assert recorder.calls == [("interceptor", me, False), ("callback", me, False)]
        assert cluster.committed("g")[(TOPIC, 0)][0] == 7
    finally:
        s.close()


def test_sync_commit_interceptor_runs_on_the_user_thread_without_the_lock(
    cluster: FakeCluster,
) -> None:
    s = Stack(cluster.bootstrap_servers, "g")
    s.subscribe([TOPIC])
    try:
        s.join()
        recorder = ThreadRecorder(s.coordinator)
        s.coordinator.commits.interceptors = recorder
        assert s.coordinator.commits.commit_offsets_sync({TP0: OffsetAndMetadata(3)}, s.timer(5000))
        assert recorder.calls == [("interceptor", threading.current_thread(), False)]
    finally:
        s.close()


def test_in_flight_commit_list_is_pruned_in_place(cluster: FakeCluster) -> None:
    # Lookup callbacks on the heartbeat thread append to this list: the user's thread must
    # never replace it, or such an append could land in a discarded list.
    s = Stack(cluster.bootstrap_servers, "g")
    s.subscribe([TOPIC])
    try:
        s.join()
        c = s.coordinator
        listed = c.commits._in_flight_async_commits
        c.commits.commit_offsets_async({TP0: OffsetAndMetadata(1)})
        s.poll_until(lambda: not c.commits._pending_async(), 5000)
        assert c.commits._in_flight_async_commits is listed
        assert listed == []
    finally:
        s.close()
