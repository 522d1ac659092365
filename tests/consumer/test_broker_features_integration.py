"""Broker features Tansu lacks, on Apache Kafka: the last stable offset of an open
transaction, partitions added with CreatePartitions reaching a subscribed consumer, and fetch
sessions (KIP-227) that stay incremental and survive losing the session: to a broker restart,
and to an eviction from the broker's session cache."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import Record, create_topic, poll_until, produce
from tests.helpers import unique_name, wait_for
from tests.support.broker_limits import session_timeout_ms

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
        session_timeout_ms=session_timeout_ms(bootstrap, 3000),
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
    from benchmarks.harness import apache_kafka

    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")


#: One fetch session slot in each of the broker's 8 session cache shards.
_SESSION_SLOTS = 8


@pytest.fixture(scope="module")
def own_broker() -> Iterator[Any]:
    """A single-node Apache Kafka of this module, which a test may restart, with a fetch
    session cache of one slot per shard.

    Since 3.8 the broker splits ``max.incremental.fetch.session.cache.slots`` evenly over 8
    fixed shards (integer division: fewer than 8 slots leave none at all) and hands each new
    session to the next shard in turn. With 8 slots every shard holds one session, so a crowd of
    at most 8 newcomers reaches any given session's shard, and a newcomer with more partitions
    evicts a smaller session there (KIP-227 eviction of a non-stale, unprivileged session).
    A restart empties the whole cache.
    """
    _apache_possible()
    from benchmarks.harness.apache_kafka import KafkaCluster

    with KafkaCluster(
        extra_config={"max.incremental.fetch.session.cache.slots": str(_SESSION_SLOTS)}
    ) as k:
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

    client.send = send  # type: ignore[method-assign, assignment]  # the test wraps it
    return sent


class _Watched:
    """A consumer assigned to a fresh 1-partition topic from offset 0, the ``(session_id,
    session_epoch)`` of every Fetch request it sends, and the values it has read."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.bootstrap = bootstrap
        self.topic = create_topic(bootstrap, 1, prefix)
        self.tp = TopicPartition(self.topic, 0)
        self.consumer = KafkaConsumer(
            {"bootstrap.servers": bootstrap}, fetch_max_wait_ms=100, reconnect_backoff_max_ms=200
        )
        self.fetches = record_fetches(self.consumer)
        self.consumer.assign([self.tp])
        self.consumer.seek(self.tp, 0)
        self.values: list[bytes] = []

    def consume(self, n: int) -> None:
        """Produce ``n`` more numbered records and poll until they arrived."""
        base = len(self.values)
        records: list[Record] = [(0, None, b"v%d" % (base + i), [], None) for i in range(n)]
        produce(self.bootstrap, self.topic, records)
        self.values.extend(r.value for r in poll_until(self.consumer, lambda acc: len(acc) >= n))

    def idle_until(self, condition: Callable[[], bool], message: str) -> None:
        """Keep polling (fetches are sent from poll; nothing is produced) until ``condition``."""
        wait_for(
            lambda: len(self.consumer.poll(timeout_ms=50)) == 0 and condition(),
            timeout=30,
            interval=0.01,
            message=message,
        )

    def incremental_session(self) -> int:
        """The session of the last request when that was incremental, else 0."""
        sid, epoch = self.fetches[-1]
        return sid if epoch > 0 else 0

    def check_exactly(self, count: int) -> None:
        """Every record read once, in order: none lost or duplicated."""
        assert self.values == [b"v%d" % i for i in range(count)]
        assert self.consumer.position(self.tp) == count


def test_close_ends_the_fetch_session_beside_a_held_fetch(bootstrap: str) -> None:
    """Caught up, the consumer has a fetch out that the broker holds for fetch.max.wait.ms (20 s
    here). close() must still end the fetch session, within its 10 s: the close request goes
    over the broker's second connection instead of queueing behind the held fetch."""
    from benchmarks.harness.apache_kafka import consumer_fetch_session_error

    topic = create_topic(bootstrap, 1, "close-sess")
    produce(bootstrap, topic, [(0, None, b"v%d" % i, [], None) for i in range(5)])
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap}, fetch_max_wait_ms=20000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    fetcher = consumer._fetcher  # noqa: SLF001 - the test looks at the fetch session
    try:
        poll_until(consumer, lambda acc: len(acc) >= 5)
        # Caught up: the next fetch goes out and the broker holds it (nothing new to send).
        wait_for(
            lambda: not consumer.poll(timeout_ms=50) and bool(fetcher._pending_nodes),  # noqa: SLF001
            timeout=30,
            message="a held fetch in flight",
        )
        ((_, handler),) = fetcher._sessions.items()  # noqa: SLF001
        session_id = handler.next_metadata.session_id
        assert session_id > 0, "Apache Kafka opens a fetch session for a consumer"
    finally:
        consumer.close(timeout_ms=10000)
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    assert consumer_fetch_session_error(host, int(port), session_id, 1) == 70


def test_fetch_sessions_are_incremental_and_survive_losing_the_session(own_broker: Any) -> None:
    w = _Watched(own_broker.bootstrap_servers, "sess-a")
    fetches = w.fetches
    try:
        w.consume(5)
        # The first request opens a session (epoch 0), the following ones are incremental.
        w.idle_until(lambda: sum(1 for _, e in fetches if e > 0) >= 3, "incremental fetches")
        assert fetches[0][1] == 0
        assert all(sid == fetches[1][0] and sid > 0 for sid, e in fetches if e > 0)
        first_session = fetches[-1][0]
        w.consume(5)
        own_broker.restart_node(1)
        w.consume(5)
        w.idle_until(
            lambda: any(sid not in (0, first_session) and e > 0 for sid, e in fetches),
            "a new incremental session after the restart",
        )
        # The lost session was replaced by a full fetch that opened a new one.
        full_after = [i for i, (_, e) in enumerate(fetches) if e == 0 and i > 0]
        assert full_after, fetches
        w.check_exactly(15)
    finally:
        w.consumer.close(timeout_ms=5000)


def test_evicted_fetch_session_is_replaced_by_a_full_fetch(
    own_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A crowd of follower (privileged) sessions evicts the consumer's session from the broker's
    cache: its next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND, it falls back to full
    fetches (sessionless while the cache is full), opens a new session once there is room and
    goes on incrementally, with no record lost or duplicated.

    A crowd of consumers could not do it in a test's time: a consumer session may evict another
    only when that one is over two minutes old (a fixed broker constant); a follower's session
    may evict any consumer session at once.
    """
    from benchmarks.harness.apache_kafka import follower_fetch_session

    caplog.set_level(logging.INFO, logger="kafkaconsumer.internals.fetch.fetch_session")
    host, port = "127.0.0.1", own_broker.node(1).ports["PLAINTEXT"]
    crowd_topic = create_topic(own_broker.bootstrap_servers, 1, "evict-crowd")
    w = _Watched(own_broker.bootstrap_servers, "evict-a")
    fetches = w.fetches
    crowd: list[int] = []

    def not_found() -> int:
        return sum("not found; starting a new session" in r.getMessage() for r in caplog.records)

    def close_crowd() -> None:
        while crowd:
            session_id = crowd.pop()
            if session_id:
                follower_fetch_session(
                    host, port, crowd_topic, replica_id=2, session_id=session_id, close=True
                )

    try:
        w.consume(5)
        w.idle_until(lambda: w.incremental_session() > 0, "an incremental session")
        first_session = w.incremental_session()
        # One new session per shard in turn: the 8 follower sessions reach every shard, the
        # consumer's among them (bounded at 16 in case the broker's turn was elsewhere).
        for _ in range(2 * _SESSION_SLOTS):
            crowd.append(follower_fetch_session(host, port, crowd_topic, replica_id=2))
            if len(crowd) >= _SESSION_SLOTS:
                # Two more requests: the answer to the first was handled before the second.
                sent = len(fetches)

                def two_more(n: int = sent) -> bool:
                    return len(fetches) >= n + 2

                w.idle_until(two_more, "the consumer's next fetches")
                if not_found():
                    break
        assert not_found() == 1, f"eviction not seen after {len(crowd)} follower sessions"
        # The broker's shard of a session id: ids are dealt out in 8 equal ranges.
        shard_range = (2**31 - 1) // 8
        assert first_session // shard_range in {sid // shard_range for sid in crowd if sid}
        evicted_at = len(fetches)
        # Full of follower sessions, the cache has no room: full, sessionless fetches.
        w.consume(5)
        assert all(epoch == 0 for _, epoch in fetches[evicted_at:]), fetches[evicted_at:]
        close_crowd()
        w.idle_until(
            lambda: w.incremental_session() not in (0, first_session),
            "a new incremental session once the cache has room",
        )
        w.consume(5)
        full = sum(1 for _, epoch in fetches if epoch == 0)
        incremental = len(fetches) - full
        assert full >= 3 and incremental > full, (full, incremental, fetches)
        assert not_found() == 1
        w.check_exactly(15)
    finally:
        with contextlib.suppress(OSError):
            close_crowd()
        w.consumer.close(timeout_ms=5000)
