"""On the session's 3-broker Apache Kafka cluster (issue 9): a partition leader stopped in the
middle of consumption loses and duplicates nothing in manual-assign mode, and the position is
validated against the new leader (OffsetForLeaderEpoch, KIP-320); with ``client.rack`` the
fetches go to the replica in the consumer's rack (KIP-392), proven by the broker that answered.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import poll_until, produce
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def record_requests(c: KafkaConsumer) -> list[tuple[int, int]]:
    """Log ``(node, api_key)`` of every request the consumer sends."""
    sent: list[tuple[int, int]] = []
    client = c._client  # noqa: SLF001 - the test watches the wire
    original = client.send

    def send(node: int, api_key: int, *args: Any, **kwargs: Any) -> Any:
        sent.append((node, api_key))
        return original(node, api_key, *args, **kwargs)

    client.send = send
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
