"""Unit tests of Metadata: snapshots, refresh timing, leader epochs, errors, topic expiry."""

from __future__ import annotations

import logging
import uuid
from typing import Any, cast

import pytest

from kafkaconsumer.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from kafkaconsumer.metadata import ConsumerMetadata, Metadata, Node
from kafkaconsumer.protocol.message_types import MetadataResponse
from kafkaconsumer.structs import TopicPartition
from tests.support.mock_time import MockTime

TID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def response(
    partitions: int = 2,
    epoch: int = 0,
    leader: int = 1,
    topic: str = "orders",
    error: int = 0,
    topic_id: uuid.UUID = TID,
    extra_topics: list[dict[str, Any]] | None = None,
) -> MetadataResponse:
    # Only the fields the tests vary; the decoder would fill the others with their defaults.
    parts = [
        {
            "error_code": 0,
            "partition_index": i,
            "leader_id": leader,
            "leader_epoch": epoch,
            "replica_nodes": [1, 2],
            "isr_nodes": [1],
            "offline_replicas": [],
        }
        for i in range(partitions)
    ]
    body = {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": 1, "host": "h1", "port": 9092, "rack": "r1"},
            {"node_id": 2, "host": "h2", "port": 9093, "rack": None},
        ],
        "cluster_id": "c1",
        "controller_id": 1,
        "topics": [
            {
                "error_code": error,
                "name": topic,
                "topic_id": topic_id,
                "is_internal": False,
                "partitions": [] if error else parts,
            }
        ]
        + (extra_topics or []),
    }
    return cast(MetadataResponse, body)


def test_snapshot_views() -> None:
    md = ConsumerMetadata({})
    md.update(response())
    c = md.cluster
    assert [b.node_id for b in c.brokers()] == [1, 2]
    assert c.broker(1) is not None and c.broker(1).rack == "r1"  # type: ignore[union-attr]
    tp = TopicPartition("orders", 1)
    assert c.leader_for(tp) == 1 and c.leader_epoch(tp) == 0
    p = c.partition(tp)
    assert p is not None and p.replicas == (1, 2) and p.isr == (1,)
    assert c.topic_id("orders") == TID and c.topic_name(TID) == "orders"
    assert [x.partition for x in c.partitions_for_topic("orders") or []] == [0, 1]
    assert c.partitions_for_topic("nope") is None
    assert md.update_version == 1


def test_partition_count_change_is_seen() -> None:
    md = Metadata({})
    md.update(response(partitions=2))
    assert len(md.cluster.partitions_for_topic("orders") or []) == 2
    md.update(response(partitions=5, epoch=1))
    assert len(md.cluster.partitions_for_topic("orders") or []) == 5
    assert md.cluster.leader_for(TopicPartition("orders", 4)) == 1


def test_older_leader_epoch_is_ignored() -> None:
    md = Metadata({})
    md.update(response(epoch=5, leader=1))
    md.update(response(epoch=3, leader=2))  # a stale broker's view
    tp = TopicPartition("orders", 0)
    assert md.cluster.leader_for(tp) == 1 and md.cluster.leader_epoch(tp) == 5
    assert md.update_requested()  # it asks again soon
    md.update(response(epoch=6, leader=2))
    assert md.cluster.leader_for(tp) == 2 and md.cluster.leader_epoch(tp) == 6


def test_older_leader_epoch_after_a_rebootstrap_is_taken() -> None:
    """After a rebootstrap an answer with an older epoch than the last seen one is taken (its
    topic id is new to the empty snapshot) instead of leaving the partition out."""
    md = Metadata({})
    md.update(response(epoch=5, leader=1))
    tp = TopicPartition("orders", 0)
    md.rebootstrap()
    assert md.cluster.partition(tp) is None
    md.update(response(epoch=3, leader=2))  # a broker whose view is behind the last one seen
    assert md.cluster.leader_for(tp) == 2 and md.cluster.leader_epoch(tp) == 3
    assert [p.partition for p in md.cluster.partitions_for_topic("orders") or []] == [0, 1]
    # The epoch seen is now the answer's: a later older one is ignored again.
    md.update(response(epoch=2, leader=1))
    assert md.cluster.leader_for(tp) == 2 and md.cluster.leader_epoch(tp) == 3


def test_older_leader_epoch_of_a_recreated_topic_is_taken() -> None:
    """An answer whose topic id differs from the snapshot's (the topic was recreated) is taken
    whatever its epoch; one without a topic id is still held to the epoch seen."""
    md = Metadata({})
    md.update(response(epoch=5, leader=1))
    tp = TopicPartition("orders", 0)
    recreated = uuid.UUID(int=7)
    md.update(response(epoch=0, leader=2, topic_id=recreated))
    assert md.cluster.leader_for(tp) == 2 and md.cluster.leader_epoch(tp) == 0
    assert md.cluster.topic_id("orders") == recreated
    md.rebootstrap()
    md.update(response(epoch=5, leader=1))
    md.rebootstrap()
    md.update(response(epoch=1, leader=2, topic_id=uuid.UUID(int=0)))  # no topic id
    assert md.cluster.partition(tp) is None
    assert md.update_requested()


def test_last_seen_epoch_from_fetch_requests_update() -> None:
    md = Metadata({})
    md.update(response(epoch=2))
    assert not md.update_requested()
    tp = TopicPartition("orders", 0)
    assert md.update_last_seen_epoch_if_newer(tp, 4)
    assert md.update_requested()
    assert not md.update_last_seen_epoch_if_newer(tp, 3)
    md.update(response(epoch=3, leader=2))  # older than what a fetch showed us
    assert md.cluster.leader_epoch(tp) == 2


def test_leaders_named_by_a_fetch_answer_replace_only_their_partitions() -> None:
    md = Metadata({})
    md.update(response(epoch=2, leader=1))
    before = md.cluster
    p0, p1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    moved = md.update_partition_leadership({p0: (2, 3)})
    assert moved == {p0}
    after = md.cluster
    assert after is not before
    assert after.leader_for(p0) == 2 and after.leader_epoch(p0) == 3
    info = after.partition(p0)
    assert info is not None and info.replicas == (1, 2) and info.isr == (1,)
    assert after.leader_for(p1) == 1 and after.leader_epoch(p1) == 2
    assert after.topic_id("orders") == TID and after.cluster_id == "c1"
    # Not a refresh: the version and the schedule stay.
    assert md.update_version == 1 and not md.update_requested()
    # A later refresh from a broker that has not learnt the move keeps the newer leader.
    md.update(response(epoch=2, leader=1))
    assert md.cluster.leader_for(p0) == 2 and md.cluster.leader_epoch(p0) == 3


def test_fetch_answer_leaders_that_are_not_newer_or_unknown_are_ignored() -> None:
    md = Metadata({})
    md.update(response(epoch=4, leader=1))
    p0, p1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    snapshot = md.cluster
    assert md.update_partition_leadership({p0: (2, 4), p1: (2, 3)}) == set()  # not newer
    assert md.update_partition_leadership({p0: (7, 5)}) == set()  # no address for node 7
    assert md.update_partition_leadership({TopicPartition("other", 0): (2, 9)}) == set()
    assert md.cluster is snapshot


def test_fetch_answer_brokers_give_a_new_leader_its_address() -> None:
    md = Metadata({})
    md.update(response(epoch=0, leader=1))
    p0 = TopicPartition("orders", 0)
    moved = md.update_partition_leadership(
        {p0: (7, 1)}, [Node(7, "h7", 9097, "r7"), Node(1, "elsewhere", 1, None)]
    )
    assert moved == {p0}
    cluster = md.cluster
    assert cluster.leader_for(p0) == 7
    assert cluster.broker(7) == Node(7, "h7", 9097, "r7")
    # The answer's addresses win over the snapshot's, as in Java.
    assert cluster.broker(1) == Node(1, "elsewhere", 1, None)


def test_refresh_timing_with_fake_clock() -> None:
    clock = MockTime(start_ms=1000)
    md = Metadata({"metadata.max.age.ms": 10_000, "retry.backoff.ms": 100}, time=clock)
    assert md.time_to_next_update(clock.monotonic_ms()) == 0  # first fetch at once
    md.on_request_sent(1000)
    md.update(response(), now_ms=1010)
    assert md.time_to_next_update(1010) == 10_000
    assert md.time_to_next_update(11_010) == 0
    md.request_update()
    assert md.time_to_next_update(1050) == 60  # retry backoff from the last attempt
    assert md.time_to_next_update(1110) == 0
    md.on_request_sent(1110)
    md.failed_update(1120, RuntimeError("boom"))
    # The backoff restarts at the failure: retry.backoff.ms, +/-20 % jitter.
    assert 80 <= md.time_to_next_update(1120) <= 120


def test_a_topic_taken_into_use_is_fetched_without_the_retry_backoff() -> None:
    clock = MockTime(start_ms=1000)
    md = Metadata({"metadata.max.age.ms": 10_000, "retry.backoff.ms": 100}, time=clock)
    md.on_request_sent(1000)
    md.update(response(), now_ms=1010)
    # A lookup of a topic the client does not use yet (offsets of any topic, as
    # partitionsFor then beginningOffsets): its leaders are fetched at once.
    md.add_transient_topics(["lookup"])
    assert md.time_to_next_update(1020) == 0
    md.on_request_sent(1020)
    md.update(response(), now_ms=1030)
    # A topic already looked up asks through the usual backoff.
    md.add_transient_topics(["lookup"])
    md.request_update()
    assert md.time_to_next_update(1040) == 90
    md.on_request_sent(1130)
    md.update(response(), now_ms=1140)
    # So does a subscription or assignment that gains a topic, and not one that loses one.
    md.set_topics(["orders", "new"])
    assert md.time_to_next_update(1150) == 0
    md.on_request_sent(1150)
    md.update(response(), now_ms=1160)
    md.set_topics(["orders"])
    md.request_update()
    assert md.time_to_next_update(1170) == 90


def test_request_made_while_in_flight_survives_the_response() -> None:
    md = Metadata({})
    md.on_request_sent(0)
    md.set_topics(["late"])  # added after the request went out
    md.update(response(), now_ms=5)
    assert md.update_requested()


def test_topic_errors_are_surfaced_with_names() -> None:
    md = ConsumerMetadata({})
    md.set_topics(["orders", "secret"])
    md.update(
        response(
            error=3,
            extra_topics=[
                {
                    "error_code": 29,
                    "name": "secret",
                    "topic_id": uuid.UUID(int=0),
                    "is_internal": False,
                    "partitions": [],
                }
            ],
        )
    )
    err = md.topic_error("orders")
    assert isinstance(err, UnknownTopicOrPartitionError) and getattr(err, "topic", None) == "orders"
    with pytest.raises(UnknownTopicOrPartitionError, match="orders"):
        md.maybe_throw_exception_for_topic("orders")
    assert md.update_requested()  # unknown topic: look again after the backoff
    assert "secret" in md.cluster.unauthorized_topics
    with pytest.raises(TopicAuthorizationFailedError, match="secret"):
        md.maybe_throw_any_exception()
    md.maybe_throw_any_exception()  # raised once


def test_request_body_topics() -> None:
    md = ConsumerMetadata({"allow.auto.create.topics": False})
    md.set_topics(["b", "a"])
    body = md.build_request(12)
    assert body["topics"] is not None
    assert [t["name"] for t in body["topics"]] == ["a", "b"]
    assert body["allow_auto_topic_creation"] is False
    md.set_topics(None)  # pattern subscription: everything
    assert md.build_request(12)["topics"] is None
    assert md.need_all_topics()


def requested(md: Metadata) -> set[str | None]:
    """The topic names of the next Metadata request (asking for some topics, not all)."""
    topics = md.build_request(12)["topics"]
    assert topics is not None
    return {t["name"] for t in topics}


def test_transient_topics_expire_after_idle() -> None:
    clock = MockTime(start_ms=0)
    md = Metadata({"metadata.max.idle.ms": 1000}, time=clock)
    md.set_topics(["kept"])
    md.add_transient_topics(["lookup"])
    assert requested(md) == {"kept", "lookup"}
    clock.advance(600)
    md.touch("lookup")
    clock.advance(600)
    assert requested(md) == {"kept", "lookup"}
    clock.advance(1001)
    assert requested(md) == {"kept"}


def test_pattern_matching_excludes_internal() -> None:
    md = ConsumerMetadata({})
    md.update(
        response(
            extra_topics=[
                {
                    "error_code": 0,
                    "name": "__consumer_offsets",
                    "topic_id": uuid.uuid4(),
                    "is_internal": True,
                    "partitions": [],
                },
                {
                    "error_code": 0,
                    "name": "orders-eu",
                    "topic_id": uuid.uuid4(),
                    "is_internal": False,
                    "partitions": [],
                },
            ]
        )
    )
    assert md.matching_topics("orders.*") == {"orders", "orders-eu"}
    assert md.matching_topics(".*") == {"orders", "orders-eu"}
    md2 = ConsumerMetadata({"exclude.internal.topics": False})
    md2.update(
        md_resp := response(
            extra_topics=[
                {
                    "error_code": 0,
                    "name": "__consumer_offsets",
                    "topic_id": uuid.uuid4(),
                    "is_internal": True,
                    "partitions": [],
                }
            ]
        )
    )
    assert md_resp and "__consumer_offsets" in md2.matching_topics(".*")


def test_handle_error_requests_update_only_for_invalid_metadata() -> None:
    from kafkaconsumer.errors import NotLeaderOrFollowerError, OffsetOutOfRangeError

    md = Metadata({})
    md.update(response())
    assert not md.handle_error(OffsetOutOfRangeError())
    assert not md.update_requested()
    assert md.handle_error(NotLeaderOrFollowerError())
    assert md.update_requested()


def test_missing_topic_backs_off_exponentially_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kafkaconsumer.metadata")
    clock = MockTime(start_ms=1000)
    md = ConsumerMetadata({"retry.backoff.ms": 100, "retry.backoff.max.ms": 1000}, time=clock)
    md.set_topics(["orders"])
    waits = []
    now = 1000
    for _ in range(8):
        now += md.time_to_next_update(now)
        md.on_request_sent(now)
        md.update(response(error=3), now_ms=now)
        waits.append(md.time_to_next_update(now))
    # 100, 200, 400, 800, then the 1000 cap, each +/-20 %.
    for wait, base in zip(waits, [100, 200, 400, 800, 1000, 1000, 1000, 1000], strict=True):
        assert 0.8 * base <= wait <= 1.2 * base, waits
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == ["metadata: topic 'orders' does not exist (yet)"]
    # A different error is logged, once.
    for _ in range(3):
        md.update(response(error=5), now_ms=now)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and "orders" in warned[1], warned
    # The topic shows up: INFO once, and the next refresh waits only retry.backoff.ms again.
    md.request_update()
    md.update(response(), now_ms=now)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "metadata: topic 'orders' is available now"
    ]
    md.request_update()
    assert md.time_to_next_update(now) == 100
    # Gone again: logged again.
    md.update(response(error=3), now_ms=now)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 3, warned
