"""The chaos fault Tansu can take: its broker killed and restarted on the same port.

Tansu keeps everything in memory, so a restart loses the topic, its records and the group. The
test re-creates the topic, writes new records and checks that the group member notices (the
coordinator no longer knows it: it rejoins, its assignment is handed out again), resumes, and
consumes every new record exactly once, with no thread lost.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.embedded import EmbeddedBroker, free_port
from tests.consumer.conftest import produce, simple_records
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.own_embedded_broker, pytest.mark.timeout(120)]


def _create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics(
        [NewTopic(topic, num_partitions=2, replication_factor=1)], operation_timeout=10
    )[topic].result(timeout=30)


def _consume(
    consumer: KafkaConsumer, want: int, seen: list[tuple[int, int, bytes]], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while len(seen) < want:
        assert time.monotonic() < deadline, f"consumed {len(seen)} of {want}"
        for r in consumer.poll(timeout_ms=200):
            seen.append((r.partition, r.offset, bytes(r.value)))
        if seen:
            consumer.commit_sync()


def test_tansu_killed_and_restarted_loses_data_consumer_resumes() -> None:
    port = free_port()
    topic = unique_name("chaos-tansu")
    broker = EmbeddedBroker(port=port).start()
    consumer: KafkaConsumer | None = None
    try:
        bootstrap = broker.bootstrap_servers
        _create(bootstrap, topic)
        produce(bootstrap, topic, simple_records(2, 10))
        assignments: list[Any] = []

        from kafkaconsumer.listener import ConsumerRebalanceListener

        class Track(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                assignments.append(sorted(assigned))

        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=unique_name("chaos-tg"),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=3000,
            heartbeat_interval_ms=300,
            reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=500,
            metadata_max_age_ms=2000,
        )
        consumer.subscribe([topic], listener=Track())
        before: list[tuple[int, int, bytes]] = []
        _consume(consumer, 20, before, 60)
        joined = len(assignments)

        broker.kill()
        broker = EmbeddedBroker(port=port).start()  # same port, empty: the data is gone
        _create(bootstrap, topic)
        produce(bootstrap, topic, simple_records(2, 7, size=24))

        after: list[tuple[int, int, bytes]] = []
        _consume(consumer, 14, after, 60)
        time.sleep(0.5)
        for r in consumer.poll(timeout_ms=500):
            after.append((r.partition, r.offset, bytes(r.value)))
        # The member rejoined the group the restart forgot and got the partitions again.
        assert len(assignments) > joined
        assert len(after) == 14, after
        assert len(set(after)) == 14
        assert {len(v) for _p, _o, v in after} == {24}  # only the new records
    finally:
        if consumer is not None:
            consumer.close(timeout_ms=5000)
        broker.stop()
