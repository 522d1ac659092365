"""poll() waits instead of spinning while a rebalance or a coordinator lookup is under way.

An auto-commit cannot be sent before the join completes or the coordinator is found, so an
expired auto-commit timer must not make ``time_to_next_poll`` zero (a busy loop that starves
the user's other threads, seen on a broker that holds JoinGroup for seconds).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkaconsumer.network.future import Future
from tests.group.harness import Stack
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(30)

TOPIC = "events"


@pytest.fixture
def stack() -> Iterator[Stack]:
    with FakeCluster(topics={TOPIC: 2}) as cluster:
        s = Stack(
            cluster.bootstrap_servers,
            "spin",
            enable_auto_commit=True,
            auto_commit_interval_ms=100,
            retry_backoff_ms=100,
        )
        s.subscribe([TOPIC])
        try:
            yield s
        finally:
            s.coordinator.close(s.timer(2000), leave_group=False)
            s.client.close()


def _expire_auto_commit(stack: Stack, now: int) -> None:
    stack.coordinator.commits.next_auto_commit_timer.update(now)
    stack.coordinator.commits.next_auto_commit_timer.reset(0)


def test_join_in_flight_waits_for_the_rebalance_not_the_auto_commit(stack: Stack) -> None:
    coordinator = stack.coordinator
    now = coordinator.time.monotonic_ms()
    coordinator.coordinator = 0  # the fake cluster's broker 0 is known as coordinator
    _expire_auto_commit(stack, now)
    coordinator.join_future = Future()  # a JoinGroup the broker is holding
    wait = coordinator.time_to_next_poll(now)
    assert 0 < wait <= 50


def test_unknown_coordinator_waits_for_the_lookup_backoff(stack: Stack) -> None:
    coordinator = stack.coordinator
    now = coordinator.time.monotonic_ms()
    coordinator.coordinator = None
    _expire_auto_commit(stack, now)
    wait = coordinator.time_to_next_poll(now)
    assert 0 < wait <= 100


def test_stable_member_with_expired_timer_commits_at_once(stack: Stack) -> None:
    coordinator = stack.coordinator
    # Join for real, then let the auto-commit timer expire: now the commit can be sent.
    assert coordinator.poll(stack.timer(10_000))
    now = coordinator.time.monotonic_ms()
    _expire_auto_commit(stack, now)
    assert coordinator.time_to_next_poll(now) == 0
