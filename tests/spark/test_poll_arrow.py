"""``KafkaConsumer.poll_arrow`` on a real broker: the same records, positions and commits as
``poll()``."""

from __future__ import annotations

from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from kafkaconsumer.admin import KafkaAdminClient  # noqa: E402
from kafkaconsumer.consumer import KafkaConsumer  # noqa: E402
from kafkaconsumer.errors import IllegalStateError  # noqa: E402
from kafkaconsumer.producer import KafkaProducer  # noqa: E402
from kafkaconsumer.record import ConsumerRecord, arrow  # noqa: E402
from kafkaconsumer.structs import TopicPartition  # noqa: E402
from tests.helpers import unique_name, wait_for  # noqa: E402
from tests.support.broker_limits import session_timeout_ms  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _produce(bootstrap: str, topic: str, n: int, partitions: int = 2) -> None:
    with KafkaAdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics({topic: partitions})
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "compression.type": "zstd"})
    try:
        for i in range(n):
            producer.send(
                topic,
                value=b"value-%d" % i,
                key=None if i % 7 == 0 else b"k%d" % i,
                headers=[("i", b"%d" % i)] if i % 2 else None,
                partition=i % partitions,
            )
        producer.flush()
    finally:
        producer.close()


def _rows(table: Any) -> list[tuple[Any, ...]]:
    ms = table.column("timestamp").cast(pa.int64()).to_pylist()
    return sorted(
        (
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            t,
            r["timestampType"],
            [(h["key"], h["value"]) for h in r["headers"]],
        )
        for r, t in zip(table.to_pylist(), ms, strict=True)
    )


def _poll_objects(cfg: dict[str, Any], tps: list[TopicPartition], n: int) -> list[ConsumerRecord]:
    """The first ``n`` records of ``tps`` through ``poll()``, for comparison."""
    expected: list[ConsumerRecord] = []
    with KafkaConsumer(cfg) as consumer:
        consumer.assign(tps)

        def more_objects() -> bool:
            expected.extend(consumer.poll(200))
            return len(expected) >= n

        wait_for(more_objects, timeout=30, interval=0, message=f"{n} records")
    return expected


def test_poll_arrow_returns_what_poll_returns(broker: Any) -> None:
    topic = unique_name("arrow")
    _produce(broker.bootstrap_servers, topic, 500)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    cfg = {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}
    got: list[Any] = []
    with KafkaConsumer(cfg) as consumer:
        consumer.assign(tps)

        def more() -> bool:
            batch = consumer.poll_arrow(200, max_records=64, include_headers=True)
            assert batch.num_rows <= 64
            assert batch.schema == arrow.SCHEMA_WITH_HEADERS
            got.append(batch)
            rows: int = sum(b.num_rows for b in got)
            return rows >= 500

        wait_for(more, timeout=30, interval=0, message="500 rows")
        assert consumer.position(tps[0]) == 250 and consumer.position(tps[1]) == 250
        assert consumer.poll_arrow(0).schema == arrow.SCHEMA
    table = pa.Table.from_batches(got)
    expected = _poll_objects(cfg, tps, 500)
    assert _rows(table) == sorted(
        (r.partition, r.offset, r.key, r.value, r.timestamp, r.timestamp_type, list(r.headers))
        for r in expected
    )


def test_poll_arrow_joins_the_partitions_of_a_poll_without_copying(
    broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The partitions one poll hands out are decoded into one set of columns: the batch is a
    slice of it, never a concatenation, and its topic and partition columns are per row."""
    topics = [unique_name("arrow"), unique_name("arrow")]
    for topic in topics:
        _produce(broker.bootstrap_servers, topic, 300, partitions=3)
    tps = [TopicPartition(t, p) for t in topics for p in range(3)]
    cfg = {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}

    def no_copy(batches: Any) -> Any:
        raise AssertionError(f"poll_arrow concatenated {len(batches)} batches")

    if arrow.builder_available():
        monkeypatch.setattr(arrow, "concat_batches", no_copy)
    got: list[Any] = []
    with KafkaConsumer(cfg) as consumer:
        consumer.assign(tps)

        def more() -> bool:
            got.append(consumer.poll_arrow(200, max_records=100_000, include_headers=True))
            rows: int = sum(b.num_rows for b in got)
            return rows >= 600

        wait_for(more, timeout=30, interval=0, message="600 rows")
    # Batches spanning partitions of both topics (else there would be nothing to join).
    spans = [
        set(zip(b.column("topic").to_pylist(), b.column("partition").to_pylist(), strict=True))
        for b in got
    ]
    assert max(len({t for t, _p in span}) for span in spans) == 2
    table = pa.Table.from_batches(got)
    expected = _poll_objects(cfg, tps, 600)
    ms = table.column("timestamp").cast(pa.int64()).to_pylist()
    rows = sorted(
        (r["topic"], r["partition"], r["offset"], r["key"], r["value"], t, r["headers"])
        for r, t in zip(table.to_pylist(), ms, strict=True)
    )
    assert rows == sorted(
        (
            r.topic,
            r.partition,
            r.offset,
            r.key,
            r.value,
            r.timestamp,
            [{"key": k, "value": v} for k, v in r.headers],
        )
        for r in expected
    )


def test_poll_arrow_commits_and_mixes_with_poll(broker: Any) -> None:
    topic = unique_name("arrow")
    group = unique_name("g")
    _produce(broker.bootstrap_servers, topic, 300, partitions=1)
    cfg = {
        "bootstrap.servers": broker.bootstrap_servers,
        "auto.offset.reset": "earliest",
        "group.id": group,
        "enable.auto.commit": False,
        "session.timeout.ms": session_timeout_ms(broker.bootstrap_servers, 3000),
        "heartbeat.interval.ms": 1000,
        "max.poll.records": 50,
    }
    seen: list[int] = []
    with KafkaConsumer(cfg) as consumer:
        consumer.subscribe([topic])

        def first_rows() -> bool:
            seen.extend(consumer.poll_arrow(200).column("offset").to_pylist())
            return bool(seen)

        wait_for(first_rows, timeout=30, interval=0, message="the first rows")
        assert len(seen) <= 50
        # Switch to poll() mid-partition: it continues exactly after the Arrow rows.
        records = consumer.poll(2000)
        seen.extend(r.offset for r in records)
        consumer.commit_sync()
        committed = consumer.committed([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
        assert committed is not None and committed.offset == seen[-1] + 1
    assert seen == list(range(len(seen)))
    with KafkaConsumer(cfg) as consumer:
        consumer.subscribe([topic])
        rest: list[int] = []

        def remaining() -> bool:
            rest.extend(consumer.poll_arrow(200).column("offset").to_pylist())
            return len(seen) + len(rest) >= 300

        wait_for(remaining, timeout=30, interval=0, message="the rest")
    assert seen + rest == list(range(300))


def test_poll_arrow_refuses_deserializers(broker: Any) -> None:
    cfg = {"bootstrap.servers": broker.bootstrap_servers, "value.deserializer": "string"}
    with KafkaConsumer(cfg) as consumer:
        consumer.assign([TopicPartition(unique_name("arrow"), 0)])
        with pytest.raises(IllegalStateError, match="deserializer"):
            consumer.poll_arrow(0)
        with pytest.raises(ValueError):
            consumer.poll_arrow(0, max_records=0)
