"""KafkaShareConsumer.poll_arrow() against Apache Kafka 4.4: the acquired records as one Arrow
record batch with the consumer's columns and ``delivery_count``; implicit mode accepts the rows
at the next poll; explicit mode acknowledges rows by (topic, partition, offset), a released row
coming back with its delivery count raised; deserializers are refused."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer import AcknowledgeType
from kafkaconsumer.errors import IllegalStateError
from kafkaconsumer.record import arrow
from tests.share import test_share_consumer_integration as base

pa = pytest.importorskip("pyarrow")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

#: The fixtures and helpers of the share consumer's tests: a topic of 10 records, a group.
env = base.env
consumer = base.consumer


def _poll_rows(c: Any, want: int, limit_s: float = 60.0, **kw: Any) -> Any:
    batches = []
    rows = 0
    deadline = time.monotonic() + limit_s
    while rows < want and time.monotonic() < deadline:
        batch = c.poll_arrow(timeout_ms=500, **kw)
        if batch.num_rows:
            batches.append(batch)
            rows += batch.num_rows
    return pa.Table.from_batches(batches) if batches else None


def test_rows_with_delivery_count_accepted_at_the_next_poll(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    with consumer(bootstrap, group) as c:
        c.subscribe([topic])
        empty_names = c.poll_arrow(timeout_ms=0, include_headers=True).schema.names
        assert empty_names == [*arrow.schema(True).names, "delivery_count"]
        table = _poll_rows(c, 10)
        assert table.schema.names == [*arrow.SCHEMA.names, "delivery_count"]
        assert table.schema.field("delivery_count").type == pa.int32()
        assert sorted(table.column("offset").to_pylist()) == list(range(10))
        assert set(table.column("delivery_count").to_pylist()) == {1}
        assert set(table.column("topic").to_pylist()) == {topic}
        by_offset = dict(
            zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True)
        )
        assert by_offset == {i: b"v%d" % i for i in range(10)}
        # Implicit mode: the next poll accepted every row; nothing comes back.
        assert _poll_rows(c, 1, limit_s=3) is None


def test_explicit_rows_acknowledged_by_topic_partition_offset(
    env: tuple[str, str, str],
) -> None:
    bootstrap, topic, group = env
    with consumer(bootstrap, group, share_acknowledgement_mode="explicit") as c:
        c.subscribe([topic])
        table = _poll_rows(c, 10)
        assert table.num_rows == 10
        with pytest.raises(IllegalStateError, match="must be acknowledged"):
            c.poll_arrow(timeout_ms=0)
        for t, p, o in zip(
            table.column("topic").to_pylist(),
            table.column("partition").to_pylist(),
            table.column("offset").to_pylist(),
            strict=True,
        ):
            kind = AcknowledgeType.RELEASE if o == 3 else AcknowledgeType.ACCEPT
            c.acknowledge(t, p, o, kind)
        assert c.commit_sync(timeout_ms=30_000)
        again = _poll_rows(c, 1)
        assert again.column("offset").to_pylist() == [3]
        assert again.column("delivery_count").to_pylist() == [2]
        c.acknowledge(topic, 0, 3, AcknowledgeType.ACCEPT)


def test_deserializers_are_refused(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    with consumer(
        bootstrap,
        group,
        value_deserializer="org.apache.kafka.common.serialization.StringDeserializer",
    ) as c:
        c.subscribe([topic])
        with pytest.raises(IllegalStateError, match="raw bytes"):
            c.poll_arrow(timeout_ms=0)
