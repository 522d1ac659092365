"""Fetch responses filled to ``fetch.max.bytes`` by a real broker, which answers the partitions
that no longer fit with no data: those are fetched again at once, while the data of the others
is handed out, and every record still arrives exactly once and in order, through ``poll()``
and ``poll_arrow()``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.internals.fetch.fetch_buffer import FetchBuffer
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 6
PER_PARTITION = 30
SIZE = 1000
# A response holds about five of the one-record batches, up to three of one partition: most
# partitions of each response come back empty although they have more. Two records a poll()
# leave the empty pieces queued behind the data for a while.
FULL = {"fetch_max_bytes": 5000, "max_partition_fetch_bytes": 3000, "max_poll_records": 2}


@pytest.fixture(scope="module")
def topic(broker: Any) -> str:
    """Thirty 1 KB records in each of six partitions, one batch per record."""
    name = create_topic(broker.bootstrap_servers, PARTITIONS, prefix="full")
    produce(
        broker.bootstrap_servers,
        name,
        simple_records(PARTITIONS, PER_PARTITION, size=SIZE),
        one_batch_per_record=True,
    )
    return name


@pytest.fixture
def refetched(monkeypatch: pytest.MonkeyPatch) -> list[TopicPartition]:
    """Every partition planned to be fetched again from the offset of its empty piece."""
    seen: list[TopicPartition] = []
    original = FetchBuffer.prefetch_points

    def prefetch_points(self: FetchBuffer, max_bytes: int) -> dict[Any, tuple[int, int]]:
        points = original(self, max_bytes)
        seen.extend(tp for tp, (start, end) in points.items() if start == end)
        return points

    monkeypatch.setattr(FetchBuffer, "prefetch_points", prefetch_points)
    return seen


def _assigned(consumer_factory: Any, topic: str) -> KafkaConsumer:
    c: KafkaConsumer = consumer_factory(**FULL)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    return c


def _expect(broker: Any, refetched: list[TopicPartition]) -> None:
    if broker.is_apache:
        # Tansu may answer every partition whatever fetch.max.bytes says.
        assert refetched


def test_poll_reads_full_responses_exactly_once(
    broker: Any, consumer_factory: Any, topic: str, refetched: list[TopicPartition]
) -> None:
    c = _assigned(consumer_factory, topic)
    offsets: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    values: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    n = 0
    while n < PARTITIONS * PER_PARTITION:
        assert time.monotonic() < deadline, f"only {n} records"
        for rec in c.poll(timeout_ms=500):
            offsets[rec.partition].append(rec.offset)
            values[rec.partition].append(rec.value)
            n += 1
    assert offsets == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}
    assert values == {
        p: [(b"v%d-" % (i * PARTITIONS + p)).ljust(SIZE, b"x") for i in range(PER_PARTITION)]
        for p in range(PARTITIONS)
    }
    assert not c.poll(timeout_ms=300)
    _expect(broker, refetched)


def test_poll_arrow_reads_full_responses_exactly_once(
    broker: Any, consumer_factory: Any, topic: str, refetched: list[TopicPartition]
) -> None:
    pytest.importorskip("pyarrow")
    c = _assigned(consumer_factory, topic)
    offsets: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    n = 0
    while n < PARTITIONS * PER_PARTITION:
        assert time.monotonic() < deadline, f"only {n} records"
        batch = c.poll_arrow(timeout_ms=500, max_records=50)
        for p, o in zip(
            batch.column("partition").to_pylist(), batch.column("offset").to_pylist(), strict=True
        ):
            offsets[p].append(o)
        n += batch.num_rows
    assert offsets == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}
    assert c.poll_arrow(timeout_ms=300).num_rows == 0
    _expect(broker, refetched)
