"""Broker features Tansu lacks, on Apache Kafka (issue 9): the last stable offset of an open
transaction, partitions added with CreatePartitions reaching a subscribed consumer, and fetch
sessions (KIP-227) that stay incremental and survive losing the session."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, poll_until, produce
from tests.helpers import unique_name, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def _apache_only(broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip(
            "Tansu 0.6 has no LSO for open transactions, no CreatePartitions and no fetch sessions"
        )


def test_open_transaction_holds_read_committed_at_the_last_stable_offset(
    bootstrap: str, consumer_factory: Callable[..., KafkaConsumer]
) -> None:
    from confluent_kafka import Producer

    topic = create_topic(bootstrap, 1, "lso")
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, [(0, None, b"plain-%d" % i, [], None) for i in range(3)])
    txn = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique_name("txn"), "linger.ms": 5}
    )
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(4):
        txn.produce(topic, value=b"open-%d" % i, partition=0)
    assert txn.flush(30) == 0
    committed = consumer_factory(isolation_level="read_committed")
    uncommitted = consumer_factory(isolation_level="read_uncommitted")
    for c in (committed, uncommitted):
        c.assign([tp])
        c.seek_to_beginning([tp])
    # read_committed: end_offsets is the LSO, the first offset of the open transaction.
    assert committed.end_offsets([tp], timeout_ms=10_000)[tp] == 3
    assert uncommitted.end_offsets([tp], timeout_ms=10_000)[tp] == 7
    got = poll_until(committed, lambda acc: len(acc) >= 3 and committed.position(tp) == 3)
    assert [r.value for r in got] == [b"plain-%d" % i for i in range(3)]
    assert committed.current_lag(tp) == 0
    assert len(committed.poll(timeout_ms=500)) == 0  # nothing past the LSO
    got_all = poll_until(uncommitted, lambda acc: len(acc) >= 7)
    assert [r.value for r in got_all][3:] == [b"open-%d" % i for i in range(4)]
    txn.commit_transaction(30)
    rest = poll_until(committed, lambda acc: len(acc) >= 4 and committed.position(tp) == 8)
    assert [r.value for r in rest] == [b"open-%d" % i for i in range(4)]
    assert committed.end_offsets([tp], timeout_ms=10_000)[tp] == 8


def test_partitions_added_with_create_partitions_reach_a_subscribed_consumer(
    bootstrap: str, consumer_factory: Callable[..., KafkaConsumer]
) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = create_topic(bootstrap, 1, "grow")
    c = consumer_factory(
        group_id=unique_name("g"),
        auto_offset_reset="earliest",
        session_timeout_ms=3000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1000,
    )
    c.subscribe([topic])
    produce(bootstrap, topic, [(0, None, b"p0", [], None)])
    poll_until(c, lambda acc: len(acc) >= 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    # The next metadata refresh (metadata.max.age.ms) shows three partitions: the consumer
    # rejoins and is assigned the new ones.
    poll_until(c, lambda acc: len(c.assignment()) == 3, timeout_s=40)
    produce(bootstrap, topic, [(2, None, b"p2", [], None)])
    got = poll_until(c, lambda acc: len(acc) >= 1)
    assert [(r.partition, r.value) for r in got] == [(2, b"p2")]


# -- fetch sessions (KIP-227) ------------------------------------------------------------------


def _apache_possible() -> None:
    from tests.support import apache_kafka

    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")


@pytest.fixture(scope="module")
def own_broker() -> Iterator[Any]:
    """A single-node Apache Kafka of this module, which the test may restart.

    A restart empties the broker's fetch session cache: the deterministic way to lose a
    session (Kafka 3.8+ shards the cache, so a one-slot cache holds no session at all and
    eviction by a bigger session picks a random shard).
    """
    _apache_possible()
    from tests.support.apache_kafka import KafkaCluster

    with KafkaCluster() as k:
        yield k


def record_fetches(c: KafkaConsumer) -> list[tuple[int, int]]:
    """Log ``(session_id, session_epoch)`` of every Fetch request the consumer sends."""
    sent: list[tuple[int, int]] = []
    client = c._fetcher._client  # noqa: SLF001 - the test watches the wire
    original = client.send

    def send(node: int, api_key: int, body: Any, *args: Any, **kwargs: Any) -> Any:
        if api_key == ApiKey.FETCH:
            sent.append((int(body["session_id"]), int(body["session_epoch"])))
        return original(node, api_key, body, *args, **kwargs)

    client.send = send
    return sent


def test_fetch_sessions_are_incremental_and_survive_losing_the_session(own_broker: Any) -> None:
    bootstrap = own_broker.bootstrap_servers
    small = create_topic(bootstrap, 1, "sess-a")
    tp = TopicPartition(small, 0)
    a = KafkaConsumer(
        {"bootstrap.servers": bootstrap}, fetch_max_wait_ms=100, reconnect_backoff_max_ms=200
    )
    try:
        fetches = record_fetches(a)
        a.assign([tp])
        a.seek(tp, 0)
        values: list[bytes] = []

        def consume(n: int) -> None:
            produce(
                bootstrap,
                small,
                [(0, None, b"v%d" % (len(values) + i), [], None) for i in range(n)],
            )
            want = len(values) + n
            values.extend(
                r.value for r in poll_until(a, lambda acc: len(values) + len(acc) >= want)
            )

        def idle_until(condition: Callable[[], bool], message: str) -> None:
            # Fetches are sent from poll(): keep polling (nothing new is produced meanwhile).
            wait_for(
                lambda: len(a.poll(timeout_ms=50)) == 0 and condition(),
                timeout=30,
                interval=0.01,
                message=message,
            )

        consume(5)
        # The first request opens a session (epoch 0), the following ones are incremental.
        idle_until(lambda: sum(1 for _, e in fetches if e > 0) >= 3, "incremental fetches")
        assert fetches[0][1] == 0
        assert all(sid == fetches[1][0] and sid > 0 for sid, e in fetches if e > 0)
        first_session = fetches[-1][0]
        consume(5)
        own_broker.restart_node(1)
        consume(5)
        idle_until(
            lambda: any(sid not in (0, first_session) and e > 0 for sid, e in fetches),
            "a new incremental session after the restart",
        )
        # The lost session was replaced by a full fetch that opened a new one.
        full_after = [i for i, (_, e) in enumerate(fetches) if e == 0 and i > 0]
        assert full_after, fetches
        # No record lost or duplicated.
        assert values == [b"v%d" % i for i in range(15)]
        assert a.position(tp) == 15
    finally:
        a.close(timeout_ms=5000)
