"""A blocking call keeps the fetch state moving while it waits, on a real broker.

The coordinator is made to keep a ``committed()`` lookup waiting: a transaction left open holds
offsets of the group (KIP-447), so a read_committed lookup is answered UNSTABLE_OFFSET_COMMIT
and retried until its timeout. Meanwhile the position, seeked with its leader epoch and so
waiting for validation at the leader (KIP-320), is validated and fetched from: the first
``poll()`` after the call hands the records out without waiting for the broker.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.errors import KafkaTimeoutError
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.consumer.conftest import create_topic, poll_until, produce, simple_records
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CONSUMER_GROUP_HEARTBEAT = 68


def _open_offsets_transaction(bootstrap: str, group: str, tp: TopicPartition) -> Any:
    """A confluent-kafka transactional producer whose open transaction holds an offset of
    ``group`` for ``tp``; the caller aborts it."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CTP

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_name("txn")})
    producer.init_transactions(30)
    producer.begin_transaction()
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.send_offsets_to_transaction(
            [CTP(tp.topic, tp.partition, 1)], member.consumer_group_metadata(), 30
        )
    finally:
        member.close()
    return producer


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_committed_validates_and_fetches_while_the_coordinator_keeps_it_waiting(
    broker: Any, consumer_factory: Any, protocol: str
) -> None:
    """While committed() waits (here until its timeout), the position awaiting validation is
    validated at the leader and fetched from; nothing is handed out before the next poll(),
    which returns the records at once."""
    if broker.is_tansu:
        pytest.skip("Tansu has no OffsetForLeaderEpoch and no transactional offsets")
    if protocol == "consumer" and not broker.supports(CONSUMER_GROUP_HEARTBEAT):
        pytest.skip("the broker has no ConsumerGroupHeartbeat (KIP-848)")
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, 1, prefix="waitfetch")
    produce(bootstrap, topic, simple_records(1, 10))
    tp = TopicPartition(topic, 0)
    group = unique_name("waitfetch")
    c = consumer_factory(
        group_id=group,
        group_protocol=protocol,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    c.assign([tp])
    c.seek(tp, 0)
    assert len(poll_until(c, lambda acc: len(acc) >= 10)) == 10
    txn = _open_offsets_transaction(bootstrap, group, tp)
    try:
        # With the leader epoch (0: a new topic's), the position is validated at the leader
        # (KIP-320) before it is fetched from.
        c.seek(tp, OffsetAndMetadata(3, "", 0))
        with pytest.raises(KafkaTimeoutError):
            c.committed([tp], timeout_ms=3000)
        assert c.position(tp, timeout_ms=0) == 3
        records = c.poll(timeout_ms=0)
        assert [r.offset for r in records] == list(range(3, 10))
    finally:
        txn.abort_transaction(30)
