"""KafkaAdminClient against the session broker, checked with confluent-kafka where possible."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import TopicPartition as CKTopicPartition

from kafkaconsumer.admin import EARLIEST, LATEST, KafkaAdminClient
from kafkaconsumer.errors import (
    GroupIdNotFoundError,
    NonEmptyGroupError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.helpers import unique_name, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def admin(broker: Any) -> Any:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


def _produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    # One record per batch: Tansu 0.6 answers ListOffsets(latest) with the last batch's base
    # offset + 1, which is only the high watermark when batches hold one record.
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        for i in range(count):
            producer.send(topic, f"v{i}".encode(), partition=partition).get(timeout=30)


def test_create_list_delete_topics(admin: Any) -> None:
    a, b = unique_name("adm-a"), unique_name("adm-b")
    admin.create_topics({a: 3, b: 1})
    topics = wait_for(
        lambda: (t := admin.list_topics()) and a in t and b in t and t,
        message="created topics listed",
    )
    assert topics[a] == 3 and topics[b] == 1  # type: ignore[index]
    with pytest.raises(TopicAlreadyExistsError, match=a) as info:
        admin.create_topics({a: 3})
    assert info.value.topic == a
    admin.create_topics({a: 3}, if_not_exists=True)
    admin.delete_topics([a, b])
    wait_for(
        lambda: a not in admin.list_topics() and b not in admin.list_topics(),
        message="deleted topics gone",
    )
    missing = unique_name("adm-missing")
    with pytest.raises(UnknownTopicOrPartitionError, match=missing):
        admin.delete_topics([missing])


def test_create_topics_rejects_bad_input(admin: Any) -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        admin.create_topics({"x": 0})
    with pytest.raises(ValueError):
        admin.create_topics({"": 1})


def test_create_partitions(broker: Any, admin: Any) -> None:
    topic = unique_name("adm-parts")
    admin.create_topics({topic: 1})
    try:
        admin.create_partitions({topic: 3}, timeout_ms=10000)
    except UnsupportedVersionError:
        pytest.skip("this broker has no CreatePartitions (Tansu 0.6)")
    wait_for(lambda: admin.list_topics().get(topic) == 3, message="3 partitions")


def test_list_offsets_and_delete_records(broker: Any, admin: Any) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu 0.6 closes the connection on DeleteRecords")
    topic = unique_name("adm-records")
    admin.create_topics({topic: 1})
    _produce(broker.bootstrap_servers, topic, 0, 10)
    tp = TopicPartition(topic, 0)
    before = admin.list_offsets({tp: EARLIEST})[tp].offset
    assert before == 0
    assert admin.list_offsets({tp: LATEST})[tp].offset == 10
    assert admin.delete_records({tp: 4}) == {tp: 4}
    assert admin.list_offsets({tp: EARLIEST})[tp].offset == 4
    # An independent look at the log start.
    consumer = CKConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": unique_name("wm")}
    )
    try:
        low, high = consumer.get_watermark_offsets(CKTopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    assert (low, high) == (4, 10)


def test_list_offsets_latest(broker: Any, admin: Any) -> None:
    topic = unique_name("adm-lo")
    admin.create_topics({topic: 2})
    _produce(broker.bootstrap_servers, topic, 1, 7)
    res = admin.list_offsets({TopicPartition(topic, 0): LATEST, TopicPartition(topic, 1): LATEST})
    assert res[TopicPartition(topic, 0)].offset == 0
    assert res[TopicPartition(topic, 1)].offset == 7
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.list_offsets({TopicPartition(topic, 9): LATEST}, timeout_ms=5000)


def test_groups_with_a_confluent_member(broker: Any, admin: Any) -> None:
    topic = unique_name("adm-grp-topic")
    group = unique_name("adm-grp")
    admin.create_topics({topic: 2})
    _produce(broker.bootstrap_servers, topic, 0, 3)
    consumer = CKConsumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "client.id": "ck-member",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), "the confluent consumer never got an assignment"
        consumer.commit(offsets=[CKTopicPartition(topic, 0, 2)], asynchronous=False)

        listed = wait_for(
            lambda: [g for g in admin.list_groups() if g.group_id == group], message="group listed"
        )
        assert listed[0].protocol_type == "consumer"  # type: ignore[index]
        desc = admin.describe_groups([group])[group]
        assert desc.state == "Stable"
        assert desc.protocol_type == "consumer"
        # Tansu 0.6 answers ConsumerGroupDescribe for a classic group with no members (Kafka
        # answers GROUP_ID_NOT_FOUND, and DescribeGroups then lists them): members need Kafka.
        if not broker.is_tansu:
            assert len(desc.members) == 1
            member = desc.members[0]
            assert member.client_id == "ck-member"
            assert set(member.assignment) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}

        offsets = admin.list_consumer_group_offsets(group)
        assert offsets == {TopicPartition(topic, 0): OffsetAndMetadata(2)}
        only = admin.list_consumer_group_offsets(group, [TopicPartition(topic, 1)])
        assert only == {}
        if not broker.is_tansu:  # Tansu 0.6 deletes live groups
            with pytest.raises(NonEmptyGroupError, match=group):
                admin.delete_consumer_groups([group], timeout_ms=5000)
    finally:
        consumer.close()

    admin.alter_consumer_group_offsets(
        group, {TopicPartition(topic, 0): 1, TopicPartition(topic, 1): OffsetAndMetadata(0)}
    )
    assert admin.list_consumer_group_offsets(group) == {
        TopicPartition(topic, 0): OffsetAndMetadata(1),
        TopicPartition(topic, 1): OffsetAndMetadata(0),
    }
    checker = CKConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        committed = checker.committed([CKTopicPartition(topic, 0)], timeout=10)
    finally:
        checker.close()
    assert committed[0].offset == 1

    admin.delete_consumer_groups([group])
    wait_for(
        lambda: group not in {g.group_id for g in admin.list_groups()}, message="group deleted"
    )
    if not broker.is_tansu:  # Tansu 0.6 answers success for unknown groups
        with pytest.raises(GroupIdNotFoundError, match=group):
            admin.delete_consumer_groups([group], timeout_ms=5000)


def test_describe_unknown_group(admin: Any) -> None:
    group = unique_name("adm-none")
    desc = admin.describe_groups([group])[group]
    assert desc.state in ("Dead", "Empty", "Unknown") and desc.members == ()
