"""Helpers for the consumer tests: topics and records written by an independent client.

confluent-kafka (librdkafka) produces and administers, so these tests check our consumer against
bytes another implementation wrote.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]], int | None]


def create_topic(bootstrap: str, partitions: int, prefix: str = "c2") -> str:
    """Create a fresh topic with ``partitions`` partitions; returns its name."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = unique_name(prefix)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)], operation_timeout=10
    )
    futures[name].result(timeout=30)
    return name


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[Record],
    *,
    compression: str = "none",
    one_batch_per_record: bool = False,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write ``(partition, key, value, headers, timestamp_ms)`` records and wait for acks.

    ``one_batch_per_record`` flushes after each record, so every record is its own batch
    (Tansu answers ListOffsets(latest) per batch; docs/testing.md lists what Tansu cannot do).
    """
    from confluent_kafka import Producer

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "compression.type": compression,
        "linger.ms": 0 if one_batch_per_record else 20,
        "enable.idempotence": False,
        "acks": "all",
    }
    conf.update(extra or {})
    producer = Producer(conf)
    errors: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for partition, key, value, headers, ts in records:
        kwargs: dict[str, Any] = {
            "partition": partition,
            "key": key,
            "value": value,
            "on_delivery": on_delivery,
        }
        if headers:
            kwargs["headers"] = headers
        if ts is not None:
            kwargs["timestamp"] = ts
        producer.produce(topic, **kwargs)
        if one_batch_per_record:
            assert producer.flush(30) == 0
    assert producer.flush(60) == 0, "records still unacknowledged after 60 s"
    assert not errors, errors


def simple_records(partitions: int, per_partition: int, size: int = 16) -> list[Record]:
    """Deterministic records spread round-robin over ``partitions``."""
    out: list[Record] = []
    for i in range(partitions * per_partition):
        p = i % partitions
        out.append((p, b"k%d" % i, (b"v%d-" % i).ljust(size, b"x"), [], None))
    return out


def consume_exactly(
    consumer: KafkaConsumer, count: int, timeout_s: float = 30.0
) -> dict[TopicPartition, list[Any]]:
    """Poll until ``count`` records arrived (fails on more, or on timeout)."""
    got: dict[TopicPartition, list[Any]] = {}
    n = 0
    deadline = time.monotonic() + timeout_s
    while n < count:
        assert time.monotonic() < deadline, f"only {n} of {count} records after {timeout_s} s"
        for rec in consumer.poll(timeout_ms=200):
            got.setdefault(TopicPartition(rec.topic, rec.partition), []).append(rec)
            n += 1
    # Nothing beyond what was produced may show up.
    extra = consumer.poll(timeout_ms=200)
    assert len(extra) == 0, f"unexpected extra records: {list(extra)[:3]}"
    return got


def poll_until(
    consumer: KafkaConsumer, condition: Callable[[list[Any]], bool], timeout_s: float = 30.0
) -> list[Any]:
    """Poll, accumulating records, until ``condition(records)`` holds."""
    acc: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while not condition(acc):
        assert time.monotonic() < deadline, f"condition not met after {timeout_s} s"
        acc.extend(consumer.poll(timeout_ms=200))
    return acc


@pytest.fixture
def bootstrap(broker: Any) -> str:
    """The session broker's bootstrap address."""
    return str(broker.bootstrap_servers)


@pytest.fixture
def consumer_factory(bootstrap: str) -> Iterator[Callable[..., KafkaConsumer]]:
    """Build consumers on the session broker; all are closed after the test."""
    made: list[KafkaConsumer] = []

    def make(**kwargs: Any) -> KafkaConsumer:
        c = KafkaConsumer({"bootstrap.servers": bootstrap}, **kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close(timeout_ms=5000)
