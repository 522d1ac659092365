"""On the session's 3-broker Apache Kafka cluster: a partition leader stopped in the
middle of consumption loses and duplicates nothing in manual-assign mode, and the position is
validated against the new leader (OffsetForLeaderEpoch, KIP-320); a real log truncation by
unclean leader election is detected (LogTruncationError with ``auto.offset.reset=none``, else a
reset to the divergence point, as in Java); with ``client.rack`` the fetches go to the replica in
the consumer's rack (KIP-392), proven by the broker that answered.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from benchmarks.harness.apache_kafka import ApacheKafkaError
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import LogTruncationError
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import poll_until, produce
from tests.helpers import unique_name, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def record_requests(c: KafkaConsumer) -> list[tuple[int, int]]:
    """Log ``(node, api_key)`` of every request the consumer sends."""
    sent: list[tuple[int, int]] = []
    client = c._client  # noqa: SLF001 - the test watches the wire
    original = client.send

    def send(node: int, api_key: int, *args: Any, **kwargs: Any) -> Any:
        sent.append((node, api_key))
        return original(node, api_key, *args, **kwargs)

    client.send = send  # type: ignore[method-assign, assignment]  # the test wraps it
    return sent


def values(start: int, n: int) -> list[bytes]:
    return [b"r%05d" % i for i in range(start, start + n)]


def test_leader_stopped_mid_consumption_loses_and_duplicates_nothing(kafka_cluster: Any) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("lead")
    kafka_cluster.create_topic(topic, partitions=1, replication=3)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, [(0, None, v, [], None) for v in values(0, 300)])
    c = KafkaConsumer(
        {"bootstrap.servers": bootstrap},
        max_poll_records=20,
        metadata_max_age_ms=2000,
        reconnect_backoff_max_ms=200,
    )
    try:
        sent = record_requests(c)
        c.assign([tp])
        c.seek(tp, 0)
        got = poll_until(c, lambda acc: len(acc) >= 100)
        leader = kafka_cluster.leader_of(topic, 0)
        before = len(sent)
        kafka_cluster.stop_node(leader)
        produce(bootstrap, topic, [(0, None, v, [], None) for v in values(300, 100)])
        got += poll_until(c, lambda acc: len(got) + len(acc) >= 400, timeout_s=90)
        assert [r.value for r in got] == values(0, 400)
        assert [r.offset for r in got] == list(range(400))
        assert c.position(tp) == 400
        # The new leader was asked to validate the position (KIP-320).
        assert any(key == ApiKey.OFFSET_FOR_LEADER_EPOCH for _, key in sent[before:]), sent[before:]
        assert kafka_cluster.leader_of(topic, 0) != leader
    finally:
        c.close(timeout_ms=5000)


def test_leader_named_by_the_old_leader_is_followed_without_metadata(
    kafka_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIP-951: a preferred-leader election moves the leadership while both brokers run; the
    old leader's Fetch answer names the new one, and the consumer fetches from it although every
    Metadata answer is withheld from it after the first records."""
    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient

    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("hint")
    kafka_cluster.create_topic(topic, partitions=1, replication=3)
    tp = TopicPartition(topic, 0)
    preferred = kafka_cluster.leader_of(topic, 0)
    # A restart hands the leadership to another replica; the election below gives it back.
    kafka_cluster.restart_node(preferred)
    kafka_cluster.wait_in_sync([topic])
    interim = kafka_cluster.leader_of(topic, 0)
    assert interim != preferred
    produce(bootstrap, topic, [(0, None, v, [], None) for v in values(0, 100)])
    c = KafkaConsumer(
        {"bootstrap.servers": bootstrap}, max_poll_records=20, metadata_max_age_ms=300_000
    )
    try:
        sent = record_requests(c)
        c.assign([tp])
        c.seek(tp, 0)
        got = poll_until(c, lambda acc: len(acc) >= 100)
        withheld: list[Any] = []
        monkeypatch.setattr(
            c._metadata,  # noqa: SLF001 - the test keeps refreshes from the consumer
            "update",
            lambda response, now_ms=None: withheld.append(response),
        )
        before = len(sent)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.elect_leaders(ElectionType.PREFERRED, [CTopicPartition(topic, 0)])
        futures.result(30)
        wait_for(
            lambda: kafka_cluster.leader_of(topic, 0) == preferred,
            timeout=30,
            message="the preferred replica to lead again",
        )
        produce(bootstrap, topic, [(0, None, v, [], None) for v in values(100, 100)])
        got += poll_until(c, lambda acc: len(got) + len(acc) >= 200, timeout_s=60)
        assert [r.value for r in got] == values(0, 200)
        assert [r.offset for r in got] == list(range(200))
        assert any(node == preferred and key == ApiKey.FETCH for node, key in sent[before:])
    finally:
        c.close(timeout_ms=5000)


def test_client_rack_fetches_from_the_replica_in_its_rack(kafka_cluster: Any) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("rack")
    kafka_cluster.create_topic(topic, partitions=1, replication=3)
    tp = TopicPartition(topic, 0)
    leader = kafka_cluster.leader_of(topic, 0)
    follower = next(b for b in (1, 2, 3) if b != leader)
    produce(bootstrap, topic, [(0, None, v, [], None) for v in values(0, 200)])
    c = KafkaConsumer(
        {"bootstrap.servers": bootstrap},
        client_rack=f"rack-{follower}",
        max_poll_records=10,
        fetch_max_wait_ms=100,
    )
    try:
        sent = record_requests(c)
        c.assign([tp])
        c.seek(tp, 0)
        got = poll_until(c, lambda acc: len(acc) >= 200)
        assert [r.value for r in got] == values(0, 200)
        fetched_from = [node for node, key in sent if key == ApiKey.FETCH]
        # The leader answers the first fetch with the preferred read replica; from then on
        # the follower in our rack serves them.
        assert fetched_from[0] == leader, fetched_from
        assert follower in fetched_from, fetched_from
        later = fetched_from[fetched_from.index(follower) :]
        assert set(later) == {follower}, fetched_from
        # New data keeps coming from the follower too.
        produce(bootstrap, topic, [(0, None, v, [], None) for v in values(200, 20)])
        more = poll_until(c, lambda acc: len(acc) >= 20)
        assert [r.value for r in more] == values(200, 20)
        fetched_from = [node for node, key in sent if key == ApiKey.FETCH]
        assert set(fetched_from[len(later) + fetched_from.index(follower) :]) <= {follower}, (
            fetched_from
        )
    finally:
        c.close(timeout_ms=5000)


def _unclean_leader_election(cluster: Any, topic: str) -> None:
    """Start broker 2, a replica that missed records, while ``topic``-0's only in-sync replica
    (broker 1) is down: the controller elects it (unclean.leader.election.enable on the topic)."""
    cluster.start_node(2)

    def elected() -> bool:
        try:
            return bool(cluster.leader_of(topic, 0, timeout=1) == 2)
        except ApacheKafkaError:  # still no leader
            return False

    wait_for(
        elected,
        timeout=60,
        interval=0.2,
        message=f"the controller to elect broker 2 uncleanly for {topic}-0",
    )


def _poll_until_error(c: KafkaConsumer, timeout_s: float = 60.0) -> LogTruncationError:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            got = c.poll(timeout_ms=200)
        except LogTruncationError as exc:
            return exc
        assert len(got) == 0, f"records after the truncation: {list(got)[:3]}"
    raise AssertionError(f"no LogTruncationError within {timeout_s} s")


def test_unclean_leader_election_truncation_is_detected(
    kafka_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A real log truncation: the follower (2) is stopped, the leader (1) takes 10 more records
    alone and is stopped, 2 becomes leader by unclean election and takes 5 different records at
    the same offsets, then 1 comes back and truncates its log to 2's. Consumers that had read up
    to offset 20 detect the divergence through OffsetForLeaderEpoch: with
    ``auto.offset.reset=none`` poll raises LogTruncationError naming the partition and the
    first divergent offset (10); otherwise the position goes back to 10 and the new records are
    read, as the Java client does (and logs)."""
    caplog.set_level(logging.INFO, logger="kafkaconsumer.internals.subscription_state")
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("unclean")
    kafka_cluster.create_topic(
        topic,
        assignment=[[1, 2]],
        config={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"},
    )
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, [(0, None, v, [], None) for v in values(0, 10)])
    common: dict[str, Any] = {"reconnect_backoff_max_ms": 200, "metadata_max_age_ms": 2000}
    strict = KafkaConsumer({"bootstrap.servers": bootstrap}, auto_offset_reset="none", **common)
    lenient = KafkaConsumer(
        {"bootstrap.servers": bootstrap}, auto_offset_reset="earliest", **common
    )
    try:
        for c in (strict, lenient):
            c.assign([tp])
            c.seek(tp, 0)
            assert [r.value for r in poll_until(c, lambda acc: len(acc) >= 10)] == values(0, 10)
        kafka_cluster.stop_node(2)
        wait_for(lambda: kafka_cluster.replicas_of(topic)[1] == [1], 30, 0.2, "ISR [1]")
        produce(
            kafka_cluster.live_bootstrap_servers(),
            topic,
            [(0, None, v, [], None) for v in values(10, 10)],
        )
        for c in (strict, lenient):
            assert [r.value for r in poll_until(c, lambda acc: len(acc) >= 10)] == values(10, 10)
            assert c.position(tp) == 20
        kafka_cluster.stop_node(1)
        _unclean_leader_election(kafka_cluster, topic)
        new = [b"new-%d" % i for i in range(5)]
        produce(
            kafka_cluster.live_bootstrap_servers(), topic, [(0, None, v, [], None) for v in new]
        )

        error = _poll_until_error(strict)
        assert error.divergent_offsets[tp].offset == 10, error.divergent_offsets
        assert str(tp) in str(error) and "20" in str(error) and "10" in str(error), str(error)

        got = poll_until(lenient, lambda acc: len(acc) >= 5, timeout_s=60)
        assert [(r.offset, r.value) for r in got] == list(zip(range(10, 15), new, strict=True))
        assert any(
            "truncation detected" in r.getMessage() and "resetting" in r.getMessage()
            for r in caplog.records
        )

        # The old leader comes back, truncates to the new leader's log and follows it.
        kafka_cluster.start_node(1)
        kafka_cluster.wait_in_sync([topic])
        with KafkaConsumer({"bootstrap.servers": bootstrap}, client_rack="rack-1") as reader:
            reader.assign([tp])
            reader.seek(tp, 0)
            log = [r.value for r in poll_until(reader, lambda acc: len(acc) >= 15)]
        assert log == values(0, 10) + new
    finally:
        strict.close(timeout_ms=5000)
        lenient.close(timeout_ms=5000)
