"""The share consume request manager against the scripted fake broker (tier 2): the error paths
of ShareFetch and ShareAcknowledge that a real broker rarely produces on demand (a lost share
session, acknowledgement errors, a cut connection, a leader that moved)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.internals.fetch.share_consume_request_manager import (
    ShareConsumeRequestManager,
    ShareFetchConfig,
)
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.record import encode_batch
from kafkaconsumer.structs import TopicPartition
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

TOPIC = "t"
TP0 = TopicPartition(TOPIC, 0)
TP1 = TopicPartition(TOPIC, 1)
RAW = encode_batch([(None, b"v%d" % i, [], 1000) for i in range(3)])


def share_fetch_answer(
    *,
    error_code: int = 0,
    partition_error: int = 0,
    ack_error: int = 0,
    records: bool = True,
) -> Callable[[int, Any, dict[str, Any]], dict[str, Any]]:
    """A ShareFetch handler: every partition of the session gets offsets 0-2 acquired (delivery
    count 1) with the given errors."""
    sessions: dict[int, set[tuple[uuid.UUID, int]]] = {}

    def handle(node: int, _header: Any, body: dict[str, Any]) -> dict[str, Any]:
        held = sessions.setdefault(node, set())
        if body["share_session_epoch"] == 0:
            held.clear()
        for t in body["topics"]:
            for p in t["partitions"]:
                held.add((t["topic_id"], p["partition_index"]))
        for t in body["forgotten_topics_data"]:
            for p in t["partitions"]:
                held.discard((t["topic_id"], p))
        if error_code:
            return {"error_code": error_code, "acquisition_lock_timeout_ms": 30000}
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for topic_id, index in sorted(held):
            by_topic.setdefault(topic_id, []).append(
                {
                    "partition_index": index,
                    "error_code": partition_error,
                    "acknowledge_error_code": ack_error,
                    "current_leader": {"leader_id": -1, "leader_epoch": -1},
                    "records": RAW if records and not partition_error else b"",
                    "acquired_records": (
                        [{"first_offset": 0, "last_offset": 2, "delivery_count": 1}]
                        if records and not partition_error
                        else []
                    ),
                }
            )
        return {
            "acquisition_lock_timeout_ms": 30000,
            "responses": [{"topic_id": t, "partitions": p} for t, p in by_topic.items()],
        }

    return handle


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=2, topics={TOPIC: 2}) as c:
        yield c


@pytest.fixture
def manager(cluster: FakeCluster) -> Iterator[tuple[ShareConsumeRequestManager, Any]]:
    cfg = ConsumerConfig({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = ConsumerMetadata(cfg)
    metadata.set_topics([TOPIC])
    net = NetworkClient(NetworkSettings.from_config(cfg), metadata=metadata)
    client = ConsumerNetworkClient(net, metadata)
    client.await_metadata_update(10_000)
    mgr = ShareConsumeRequestManager(
        client, metadata, ShareFetchConfig(group_id="g", max_wait_ms=50)
    )
    try:
        yield mgr, client
    finally:
        client.close()


def pump(client: Any, done: Callable[[], bool], limit_s: float = 10.0) -> None:
    """Poll the network until ``done()`` (bounded)."""
    for _ in range(int(limit_s / 0.05)):
        if done():
            return
        client.poll(timeout_ms=50)
    raise AssertionError("condition not reached")


def accept(*offsets: int) -> Acknowledgements:
    a = Acknowledgements()
    for o in offsets:
        a.add(o, AcknowledgeType.ACCEPT)
    return a


def fetch_once(mgr: ShareConsumeRequestManager, client: Any, acks: Any = None) -> list[Any]:
    mgr.send_fetches(acks or {})
    pump(client, lambda: not mgr.has_in_flight())
    return mgr.take_completed_fetches()


def test_one_share_fetch_per_leader_with_acknowledgements_piggybacked(
    cluster: FakeCluster, manager: Any
) -> None:
    mgr, client = manager
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    mgr.set_assignment([TP0, TP1])
    fetched = fetch_once(mgr, client)
    assert sorted((cf.tp, cf.node) for cf in fetched) == [
        (TP0, cluster.leader(TOPIC, 0)[0]),
        (TP1, cluster.leader(TOPIC, 1)[0]),
    ]
    assert mgr.acquisition_lock_timeout_ms() == 30000
    first = cluster.requests(ApiKey.SHARE_FETCH)
    assert len(first) == 2 and all(b["share_session_epoch"] == 0 for _h, b in first)
    assert all(b["group_id"] == "g" and b["member_id"] == mgr.member_id for _h, b in first)

    node0 = cluster.leader(TOPIC, 0)[0]
    acks = accept(0, 1, 2)
    cluster.clear_requests()
    fetch_once(mgr, client, {node0: {TP0: acks}})
    ((_h, body),) = cluster.requests(ApiKey.SHARE_FETCH, node_id=node0)
    assert body["share_session_epoch"] == 1
    (topic,) = body["topics"]
    assert topic["partitions"] == [
        {
            "partition_index": 0,
            "acknowledgement_batches": [
                {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]}
            ],
        }
    ]
    assert mgr.take_completed_acknowledgements() == [(TP0, acks)]
    assert acks.completed and acks.exception() is None


@pytest.mark.parametrize("code", [122, 123])
def test_a_lost_share_session_is_reopened(cluster: FakeCluster, manager: Any, code: int) -> None:
    mgr, client = manager
    mgr.set_assignment([TP0])
    node = cluster.leader(TOPIC, 0)[0]
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    fetch_once(mgr, client)
    cluster.script(ApiKey.SHARE_FETCH, [{"error_code": code}])
    acks = accept(0)
    assert fetch_once(mgr, client, {node: {TP0: acks}}) == []
    # The acknowledgements of the failed request are reported failed, not dropped.
    assert acks.error_code == code and mgr.take_completed_acknowledgements() == [(TP0, acks)]
    cluster.clear_requests()
    assert [cf.tp for cf in fetch_once(mgr, client)] == [TP0]
    ((_h, body),) = cluster.requests(ApiKey.SHARE_FETCH)
    assert body["share_session_epoch"] == 0


def test_an_acknowledge_error_reaches_the_acknowledgements(
    cluster: FakeCluster, manager: Any
) -> None:
    mgr, client = manager
    mgr.set_assignment([TP0])
    node = cluster.leader(TOPIC, 0)[0]
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    fetch_once(mgr, client)
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer(ack_error=121))
    acks = accept(0, 1)
    fetch_once(mgr, client, {node: {TP0: acks}})
    err = acks.exception()
    assert err is not None and type(err).__name__ == "InvalidRecordStateError"


def test_a_cut_connection_fails_the_acknowledgements_and_resets_the_session(
    cluster: FakeCluster, manager: Any
) -> None:
    mgr, client = manager
    mgr.set_assignment([TP0])
    node = cluster.leader(TOPIC, 0)[0]
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    fetch_once(mgr, client)
    cluster.script(ApiKey.SHARE_FETCH, [Reply(close=True)])
    acks = accept(2)
    fetch_once(mgr, client, {node: {TP0: acks}})
    assert acks.completed and acks.error_code != 0
    assert mgr.take_completed_acknowledgements() == [(TP0, acks)]
    cluster.clear_requests()
    pump(client, lambda: bool(fetch_once(mgr, client)))
    assert cluster.requests(ApiKey.SHARE_FETCH)[-1][1]["share_session_epoch"] == 0


def test_not_leader_refreshes_metadata_and_the_next_fetch_goes_to_the_new_leader(
    cluster: FakeCluster, manager: Any
) -> None:
    mgr, client = manager
    mgr.set_assignment([TP0])
    old, _ = cluster.leader(TOPIC, 0)
    new = 1 - old
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer(partition_error=6), node_id=old)
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer(), node_id=new)
    cluster.set_leader(TOPIC, 0, new)
    (cf,) = fetch_once(mgr, client)
    assert cf.partition_data["error_code"] == 6 and not cf.acquired

    def moved() -> bool:
        fetched = fetch_once(mgr, client)
        return any(f.node == new and f.acquired for f in fetched)

    pump(client, moved)


def test_the_leader_named_in_not_leader_is_used_at_once_and_old_acknowledgements_fail(
    cluster: FakeCluster, manager: Any
) -> None:
    """NOT_LEADER_OR_FOLLOWER with ``current_leader`` and ``node_endpoints`` moves the partition
    to the named leader without a metadata refresh (the cluster's metadata still names the old
    one); acknowledgements of records the old leader delivered are reported failed with
    NOT_LEADER_OR_FOLLOWER, never sent to the new leader."""
    mgr, client = manager
    mgr.set_assignment([TP0])
    old, epoch = cluster.leader(TOPIC, 0)
    new = 1 - old
    endpoint = cluster.broker(new)
    served = share_fetch_answer()
    calls: list[int] = []

    def not_leader(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        calls.append(node)
        if len(calls) == 1:
            return served(node, header, body)
        partition = {
            "partition_index": 0,
            "error_code": 6,
            "current_leader": {"leader_id": new, "leader_epoch": epoch + 1},
            "records": b"",
            "acquired_records": [],
        }
        return {
            "acquisition_lock_timeout_ms": 30000,
            "responses": [{"topic_id": cluster.topic_id(TOPIC), "partitions": [partition]}],
            "node_endpoints": [
                {"node_id": new, "host": endpoint.host, "port": endpoint.port, "rack": None}
            ],
        }

    cluster.on(ApiKey.SHARE_FETCH, not_leader, node_id=old)
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer(), node_id=new)
    (first,) = fetch_once(mgr, client)
    assert first.node == old and first.acquired
    (errored,) = fetch_once(mgr, client)
    assert errored.partition_data["error_code"] == 6
    cluster.clear_requests()
    stale = accept(0, 1, 2)
    (second,) = fetch_once(mgr, client, {old: {TP0: stale}})
    assert second.node == new and second.acquired
    assert [n for n in cluster.node_ids if cluster.requests(ApiKey.SHARE_FETCH, node_id=n)] == [new]
    assert stale.error_code == 6 and mgr.take_completed_acknowledgements() == [(TP0, stale)]
    ((_h, body),) = cluster.requests(ApiKey.SHARE_FETCH, node_id=new)
    assert all(p["acknowledgement_batches"] == [] for t in body["topics"] for p in t["partitions"])
    # A later metadata answer that still names the old leader (older epoch) does not undo it.
    assert cluster.leader(TOPIC, 0) == (old, epoch)


def test_commit_without_an_open_session_reports_the_acknowledgements_failed(
    cluster: FakeCluster, manager: Any
) -> None:
    mgr, _client = manager
    acks = accept(5)
    assert mgr.send_acknowledgements({0: {TP0: acks}}) == [acks]
    assert acks.error_code == 122
    assert mgr.take_completed_acknowledgements() == [(TP0, acks)]
    assert cluster.requests(ApiKey.SHARE_ACKNOWLEDGE) == []


def test_share_acknowledge_settles_per_partition_and_close_ends_the_session(
    cluster: FakeCluster, manager: Any
) -> None:
    mgr, client = manager
    mgr.set_assignment([TP0])
    node = cluster.leader(TOPIC, 0)[0]
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    fetch_once(mgr, client)
    tid = cluster.topic_id(TOPIC)
    cluster.on(
        ApiKey.SHARE_ACKNOWLEDGE,
        lambda _n, _h, body: {
            "acquisition_lock_timeout_ms": 30000,
            "responses": [
                {
                    "topic_id": tid,
                    "partitions": [
                        {"partition_index": 0, "error_code": 121 if body["is_renew_ack"] else 0}
                    ],
                }
            ],
        },
    )
    acks = accept(0, 1)
    mgr.send_acknowledgements({node: {TP0: acks}})
    pump(client, lambda: acks.completed)
    assert acks.completed and acks.error_code == 0
    ((_h, body),) = cluster.requests(ApiKey.SHARE_ACKNOWLEDGE)
    assert body["share_session_epoch"] == 1 and body["is_renew_ack"] is False

    renew = Acknowledgements()
    renew.add(2, AcknowledgeType.RENEW)
    mgr.send_acknowledgements({node: {TP0: renew}}, close=True)
    pump(client, lambda: renew.completed and not mgr.has_in_flight())
    closing = cluster.requests(ApiKey.SHARE_ACKNOWLEDGE)[-1][1]
    assert closing["share_session_epoch"] == -1 and closing["is_renew_ack"] is True
    assert renew.error_code == 121
    # Closed: nothing more is fetched.
    assert mgr.send_fetches({}) == 0
