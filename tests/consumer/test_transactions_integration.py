"""Positions past control batches and aborted transactions, on a real broker.

A fetch whose complete batches are all commit/abort markers or aborted data returns no records,
but its next fetch offset lies beyond the position: the position must move there (as Java's
``FetchCollector`` does), or the same fetch is sent forever. confluent-kafka's transactional
producer writes the data, so the markers and the aborted-transaction lists come from the broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic
from tests.helpers import unique_name, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
SMALL_FETCH = {"max_partition_fetch_bytes": 300, "fetch_max_bytes": 500}


@pytest.fixture(autouse=True)
def _needs_transactions(broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu does not report aborted transactions or write standard markers")


class Txn:
    """A confluent-kafka transactional producer; each transaction is committed or aborted."""

    def __init__(self, bootstrap: str, compression: str = "none") -> None:
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": unique_name("txn"),
                "compression.type": compression,
                "linger.ms": 5,
                "message.max.bytes": 2_000_000,
            }
        )
        self.producer.init_transactions(30)
        self.bootstrap = bootstrap
        #: The log end offset each partition has once every marker is written.
        self.log_end: dict[tuple[str, int], int] = {}

    def write(self, topic: str, records: list[tuple[int, bytes]], commit: bool) -> None:
        """Write ``(partition, value)`` records in one transaction, then commit or abort it."""
        self.producer.begin_transaction()
        for partition, value in records:
            self.producer.produce(topic, value=value, partition=partition)
            # Keep the local queue short when a transaction is large.
            self.producer.poll(0)
        for partition in {p for p, _ in records}:
            key = (topic, partition)
            count = sum(1 for p, _ in records if p == partition)
            self.log_end[key] = self.log_end.get(key, 0) + count + 1  # + the marker
        if commit:
            self.producer.commit_transaction(60)
        else:
            # abort_transaction purges what is still queued: flush first so that the aborted
            # records are in the log.
            assert self.producer.flush(60) == 0
            self.producer.abort_transaction(60)

    def wait_for_markers(self) -> None:
        """Wait until the markers are in every partition's log: a transaction ends for the
        producer before the coordinator has written them."""
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as CTP

        probe = Consumer({"bootstrap.servers": self.bootstrap, "group.id": unique_name("probe")})
        try:
            for (topic, partition), end in self.log_end.items():
                ctp = CTP(topic, partition)

                def written(ctp: Any = ctp, end: int = end) -> bool:
                    return bool(probe.get_watermark_offsets(ctp, timeout=5, cached=False)[1] >= end)

                wait_for(
                    written,
                    timeout=30,
                    interval=0.05,
                    message=f"markers of {topic}-{partition}",
                )
        finally:
            probe.close()

    def close(self) -> None:
        """Flush what is left (nothing, once every transaction ended); wait for the markers."""
        self.producer.flush(10)
        self.wait_for_markers()


def read_all(
    consumer: KafkaConsumer, tps: list[TopicPartition], expected: int, timeout_s: float = 30.0
) -> dict[TopicPartition, list[bytes]]:
    """Poll until ``expected`` records arrived and every position reached the log end."""
    end = consumer.end_offsets(tps, timeout_ms=10_000)
    got: dict[TopicPartition, list[bytes]] = {tp: [] for tp in tps}
    n = 0
    deadline = time.monotonic() + timeout_s
    while True:
        for rec in consumer.poll(timeout_ms=100):
            got[TopicPartition(rec.topic, rec.partition)].append(rec.value)
            n += 1
        if n >= expected and all(consumer.position(tp) >= end[tp] for tp in tps):
            break
        assert time.monotonic() < deadline, (
            f"{n} of {expected} records, positions "
            f"{ {tp.partition: consumer.position(tp) for tp in tps} }, log ends "
            f"{ {tp.partition: end[tp] for tp in tps} } after {timeout_s} s"
        )
    assert n == expected, f"{n} records, expected {expected}"
    return got


def check_caught_up(consumer: KafkaConsumer, tps: list[TopicPartition]) -> None:
    """``position``, ``end_offsets`` and ``current_lag`` agree: nothing left to read."""
    end = consumer.end_offsets(tps, timeout_ms=10_000)
    for tp in tps:
        assert consumer.position(tp) == end[tp], (tp, consumer.position(tp), end[tp])
        lag = consumer.current_lag(tp)
        assert lag in (0, None), (tp, lag)


def values(n: int, prefix: bytes, size: int = 20) -> list[bytes]:
    return [(prefix + b"-%d-" % i).ljust(size, b"x") for i in range(n)]


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
@pytest.mark.parametrize("codec", CODECS)
def test_interleaved_transactions_with_small_fetches_are_read_in_full(
    bootstrap: str, consumer_factory: Callable[..., KafkaConsumer], codec: str, isolation: str
) -> None:
    topic = create_topic(bootstrap, 2, "txn-mix")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    txn = Txn(bootstrap, codec)
    committed: dict[int, list[bytes]] = {0: [], 1: []}
    everything: dict[int, list[bytes]] = {0: [], 1: []}
    # 20 transactions of 50 records over both partitions; every third one is aborted.
    for t in range(20):
        vals = values(50, b"t%d" % t)
        recs = [(i % 2, v) for i, v in enumerate(vals)]
        commit = t % 3 != 2
        txn.write(topic, recs, commit)
        for p, v in recs:
            everything[p].append(v)
            if commit:
                committed[p].append(v)
    txn.close()
    c = consumer_factory(isolation_level=isolation, **SMALL_FETCH)
    c.assign(tps)
    c.seek_to_beginning(tps)
    want = committed if isolation == "read_committed" else everything
    got = read_all(c, tps, sum(len(v) for v in want.values()))
    assert got == {tps[p]: want[p] for p in (0, 1)}
    check_caught_up(c, tps)


@pytest.mark.parametrize("fetch", ["small", "default"])
def test_aborted_transaction_larger_than_a_partition_fetch_is_passed(
    bootstrap: str, consumer_factory: Callable[..., KafkaConsumer], fetch: str
) -> None:
    # With default sizes the aborted transaction is ~3 MB (three partition fetches of 1 MiB);
    # with small ones 200 kB against 16 kB fetches.
    topic = create_topic(bootstrap, 1, "txn-big")
    tp = TopicPartition(topic, 0)
    txn = Txn(bootstrap)
    if fetch == "default":
        size, count, extra = 1000, 3000, {}
    else:
        size, count, extra = 1000, 200, {"max_partition_fetch_bytes": 16384}
    txn.write(topic, [(0, v) for v in values(count, b"aborted", size)], commit=False)
    tail = values(5, b"committed")
    txn.write(topic, [(0, v) for v in tail], commit=True)
    txn.close()
    c = consumer_factory(isolation_level="read_committed", **extra)
    c.assign([tp])
    c.seek_to_beginning([tp])
    got = read_all(c, [tp], 5)
    assert got[tp] == tail
    check_caught_up(c, [tp])


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
@pytest.mark.parametrize("fetch", ["small", "default"])
def test_marker_at_the_log_end_is_passed(
    bootstrap: str, consumer_factory: Callable[..., KafkaConsumer], isolation: str, fetch: str
) -> None:
    topic = create_topic(bootstrap, 1, "txn-end")
    tp = TopicPartition(topic, 0)
    txn = Txn(bootstrap)
    first = values(10, b"c")
    txn.write(topic, [(0, v) for v in first], commit=True)
    txn.wait_for_markers()
    extra = SMALL_FETCH if fetch == "small" else {}
    c = consumer_factory(isolation_level=isolation, **extra)
    c.assign([tp])
    c.seek_to_beginning([tp])
    # A committed transaction: the log ends with its commit marker.
    assert read_all(c, [tp], 10)[tp] == first
    check_caught_up(c, [tp])
    # Then an aborted one: the log ends with its abort marker.
    aborted = values(7, b"a")
    txn.write(topic, [(0, v) for v in aborted], commit=False)
    txn.close()
    got = read_all(c, [tp], 0 if isolation == "read_committed" else 7)
    if isolation == "read_uncommitted":
        assert got[tp] == aborted
    check_caught_up(c, [tp])
