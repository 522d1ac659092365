"""The coordinator's metadata watch does its work only when metadata or the subscription changed."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.group.harness import Stack
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def stack() -> Iterator[Stack]:
    with FakeCluster(n_brokers=1, topics={"a": 1, "b": 2}) as cluster:
        s = Stack(cluster.bootstrap_servers, "g")
        try:
            yield s
        finally:
            s.close()


def _count_snapshots(s: Stack) -> list[int]:
    calls = [0]
    original = s.coordinator._update_metadata_snapshot

    def counting() -> None:
        calls[0] += 1
        original()

    s.coordinator._update_metadata_snapshot = counting
    return calls


def test_unchanged_metadata_and_subscription_skip_the_snapshot(stack: Stack) -> None:
    c = stack.coordinator
    stack.subscribe(["a"])
    c.maybe_update_subscription_metadata()
    calls = _count_snapshots(stack)
    for _ in range(3):
        c.maybe_update_subscription_metadata()
    assert calls == [0]
    stack.subscribe(["a", "b"])
    c.maybe_update_subscription_metadata()
    assert calls == [1]
    assert set(c.metadata_snapshot) == {"a", "b"}
    c.maybe_update_subscription_metadata()
    assert calls == [1]


def test_pattern_change_refreshes_the_snapshot(stack: Stack) -> None:
    c = stack.coordinator
    stack.subscribe(re.compile("a"))
    c.maybe_update_subscription_metadata()
    calls = _count_snapshots(stack)
    c.maybe_update_subscription_metadata()
    assert calls == [0]
    stack.subscriptions.unsubscribe()
    stack.subscribe(re.compile("b"))
    c.maybe_update_subscription_metadata()
    assert calls == [1]
