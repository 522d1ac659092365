"""Our consumer protocol bytes against another implementation through a real broker.

One of our consumers and one librdkafka consumer (confluent-kafka, an independent C
implementation of the consumer protocol and assignors) join the same group; whichever is
elected leader, the other must decode its Subscription/Assignment bytes, and together they
must own every partition exactly once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 6


def _create_topic(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = unique_name("g1interop")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[
        topic
    ].result(timeout=30)
    return topic


class _Ours(threading.Thread):
    """Our consumer polling in a thread; publishes its assignment."""

    def __init__(self, settings: dict[str, Any], topic: str) -> None:
        super().__init__(daemon=True, name="g1-ours")
        self.consumer = KafkaConsumer(settings)
        self.topic = topic
        self.assignment: set[TopicPartition] = set()
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            while not self.stop.is_set():
                self.consumer.poll(100)
                self.assignment = set(self.consumer.assignment())
        except BaseException as exc:  # noqa: BLE001 - surfaced by the test
            self.error = exc


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "strategy, ours_first",
    [
        # Eager: only our leader's Assignment bytes and librdkafka's Subscription bytes matter.
        ("range", True),
        # Cooperative: owned partitions and generations cross in both directions, and the moved
        # partitions must be revoked before the other member gets them (two rebalances).
        ("cooperative-sticky", True),
        ("cooperative-sticky", False),
    ],
    ids=["range-ours-leads", "coop-ours-leads", "coop-rdkafka-leads"],
)
def test_group_with_librdkafka_member(broker: Any, strategy: str, ours_first: bool) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    bootstrap = broker.bootstrap_servers
    topic = _create_topic(bootstrap)
    group = unique_name("g1group")
    ours = _Ours(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "max.poll.interval.ms": 30000,
            "enable.auto.commit": False,
            "metadata.max.age.ms": 2000,
        },
        topic,
    )
    theirs = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 2000,
        }
    )
    all_partitions = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    try:
        if ours_first:
            ours.start()
            deadline = time.monotonic() + 60
            # Let ours become the (only, hence leading) member before librdkafka joins.
            while ours.assignment != all_partitions and time.monotonic() < deadline:
                assert ours.error is None, ours.error
                time.sleep(0.05)
            assert ours.assignment == all_partitions
            theirs.subscribe([topic])
        else:
            theirs.subscribe([topic])
            deadline = time.monotonic() + 60
            while len(theirs.assignment()) < PARTITIONS and time.monotonic() < deadline:
                theirs.poll(0.1)
            assert len(theirs.assignment()) == PARTITIONS
            ours.start()
        deadline = time.monotonic() + 90
        split_ok = False
        while time.monotonic() < deadline:
            theirs.poll(0.1)
            assert ours.error is None, ours.error
            mine = set(ours.assignment)
            their = {TopicPartition(tp.topic, tp.partition) for tp in theirs.assignment()}
            if mine and their and not (mine & their) and mine | their == all_partitions:
                split_ok = True
                break
        assert split_ok, (
            f"no clean split: ours={sorted(ours.assignment)} theirs={sorted(theirs.assignment())}"
        )
    finally:
        ours.stop.set()
        ours.join(15)
        ours.consumer.close(timeout_ms=5000)
        theirs.close()
