"""MetadataRecovery: the rebootstrap trigger timer, the broker's request, and which connections
carry the cluster check."""

from __future__ import annotations

import pytest

from kafkaconsumer.metadata import Cluster, Node
from kafkaconsumer.network.client import coordinator_node_id, seek_fetch_node_id
from kafkaconsumer.network.metadata_recovery import MetadataRecovery

pytestmark = pytest.mark.timeout(30)

CLUSTER = Cluster([Node(1, "h", 9092, None), Node(2, "h", 9093, None)], cluster_id="abc")


def test_timer_fires_only_after_the_trigger_without_metadata() -> None:
    r = MetadataRecovery("rebootstrap", 1000, True)
    assert not r.needs_rebootstrap(10_000)  # nothing due yet
    r.on_update_due(10_000)
    r.on_update_due(10_500)  # a later due refresh keeps the first start
    assert not r.needs_rebootstrap(11_000)  # exactly the trigger: not past it
    assert r.needs_rebootstrap(11_001)


def test_metadata_stops_the_timer_and_a_rebootstrap_restarts_it() -> None:
    r = MetadataRecovery("rebootstrap", 1000, True)
    r.on_update_due(0)
    r.on_metadata()
    assert not r.needs_rebootstrap(5_000)
    r.on_update_due(5_000)
    assert r.needs_rebootstrap(6_001)
    r.on_rebootstrap(6_001)
    assert not r.needs_rebootstrap(7_001)
    assert r.needs_rebootstrap(7_002)


def test_broker_request_is_due_at_once_and_cleared_by_the_rebootstrap() -> None:
    r = MetadataRecovery("rebootstrap", 300_000, True)
    r.request()
    assert r.needs_rebootstrap(0)
    r.on_rebootstrap(0)
    assert not r.needs_rebootstrap(1)


def test_strategy_none_never_rebootstraps() -> None:
    r = MetadataRecovery("none", 0, True)
    r.on_update_due(0)
    r.request()
    assert not r.enabled
    assert not r.needs_rebootstrap(10**9)


def test_zero_trigger_fires_on_the_next_millisecond() -> None:
    r = MetadataRecovery("rebootstrap", 0, True)
    r.on_update_due(100)
    assert not r.needs_rebootstrap(100)
    assert r.needs_rebootstrap(101)


def test_expected_cluster_only_for_known_brokers() -> None:
    r = MetadataRecovery("rebootstrap", 300_000, True)
    assert r.expected_cluster(1, CLUSTER) == ("abc", 1)
    assert r.expected_cluster(2, CLUSTER) == ("abc", 2)
    assert r.expected_cluster(-1, CLUSTER) is None  # a bootstrap address
    assert r.expected_cluster(3, CLUSTER) is None  # not in the metadata
    # Coordinator and second fetch connections address broker 1 under other ids.
    assert r.expected_cluster(coordinator_node_id(1), CLUSTER) is None
    assert r.expected_cluster(seek_fetch_node_id(1), CLUSTER) is None
    # Before the first metadata there is no cluster id to check.
    assert r.expected_cluster(1, Cluster([Node(1, "h", 9092, None)])) is None


@pytest.mark.parametrize(("strategy", "check"), [("none", True), ("rebootstrap", False)])
def test_expected_cluster_off(strategy: str, check: bool) -> None:
    """The check is sent only with strategy rebootstrap and metadata.cluster.check.enable."""
    r = MetadataRecovery(strategy, 300_000, check)
    assert r.expected_cluster(1, CLUSTER) is None
