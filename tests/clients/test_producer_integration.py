"""KafkaProducer against the session broker, read back by confluent-kafka (an independent reader)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTopicPartition

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.errors import MessageTooLargeError, UnknownTopicOrPartitionError
from kafkaconsumer.producer import KafkaProducer, default_partition
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def read_back(
    bootstrap: str, topic: str, partition: int, count: int, timeout_s: float = 30.0
) -> list[Any]:
    """Read ``count`` messages of one partition from offset 0 with confluent-kafka (assign)."""
    consumer = CKConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name("reader"),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([CKTopicPartition(topic, partition, 0)])
        out: list[Any] = []
        import time

        deadline = time.monotonic() + timeout_s
        while len(out) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=count - len(out), timeout=0.5):
                if msg.error() is None:
                    out.append(msg)
        return out
    finally:
        consumer.close()


@pytest.fixture
def admin(broker: Any) -> Any:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_each_codec_is_readable_by_confluent(broker: Any, admin: Any, codec: str) -> None:
    topic = unique_name(f"prod-{codec}")
    admin.create_topics({topic: 1})
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        compression_type=codec,
        key_serializer="str",
        value_serializer="str",
        linger_ms=5,
    ) as producer:
        futures = [
            producer.send(
                topic,
                f"value-{i}" * (1 + i % 7),
                key=f"k{i}",
                headers=[("h", str(i).encode()), ("null", None)],
                partition=0,
                timestamp_ms=1_700_000_000_000 + i,
            )
            for i in range(200)
        ]
        producer.flush(timeout_ms=30000)
        metas = [f.get(timeout=1) for f in futures]
    assert [m.offset for m in metas] == list(range(200))
    assert all(m.partition == 0 and m.topic == topic for m in metas)
    messages = read_back(broker.bootstrap_servers, topic, 0, 200)
    assert len(messages) == 200
    for i, msg in enumerate(messages):
        assert msg.offset() == i
        assert msg.key() == f"k{i}".encode()
        assert msg.value() == (f"value-{i}" * (1 + i % 7)).encode()
        assert msg.timestamp()[1] == 1_700_000_000_000 + i
        assert msg.headers() == [("h", str(i).encode()), ("null", None)]


def test_key_partitioning_matches_java_and_librdkafka(broker: Any, admin: Any) -> None:
    topic = unique_name("prod-keys")
    admin.create_topics({topic: 4})
    keys = [f"key-{i}".encode() for i in range(40)]
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        ours = [producer.send(topic, b"ours", key=k).get(timeout=30).partition for k in keys]
    assert ours == [default_partition(k, 4) for k in keys]
    # librdkafka's murmur2_random partitioner is documented as Java-compatible.
    theirs: dict[bytes | None, int | None] = {}
    ck = CKProducer(
        {"bootstrap.servers": broker.bootstrap_servers, "partitioner": "murmur2_random"}
    )
    for k in keys:
        ck.produce(
            topic,
            b"theirs",
            key=k,
            on_delivery=lambda err, msg: theirs.__setitem__(msg.key(), msg.partition()),
        )
    assert ck.flush(30) == 0
    assert [theirs[k] for k in keys] == ours
    assert len(set(ours)) > 1


def test_null_keys_stick_then_spread(broker: Any, admin: Any) -> None:
    topic = unique_name("prod-sticky")
    admin.create_topics({topic: 3})
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, batch_size=200, linger_ms=1000
    ) as producer:
        futures = [producer.send(topic, b"x" * 50) for _ in range(60)]
        producer.flush(timeout_ms=30000)
        partitions = [f.get(timeout=1).partition for f in futures]
    # Consecutive records share a partition until a batch fills, then move on.
    assert partitions[0] == partitions[1]
    assert len(set(partitions)) > 1


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks_settings(broker: Any, admin: Any, acks: Any) -> None:
    topic = unique_name("prod-acks")
    admin.create_topics({topic: 1})
    # One batch (long linger, then flush): with acks=0 requests are pipelined without any
    # answer, and Tansu 0.6 has been seen to drop records of concurrent acks=0 requests.
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, acks=acks, linger_ms=60000
    ) as producer:
        metas = [producer.send(topic, f"{i}".encode(), partition=0) for i in range(20)]
        producer.flush(timeout_ms=30000)
        offsets = [f.get(timeout=1).offset for f in metas]
        # Read while the producer is open: with acks=0 nothing says the broker has processed
        # the last request, and a broker may drop it when the connection closes.
        values = [m.value() for m in read_back(broker.bootstrap_servers, topic, 0, 20)]
    if acks == 0:
        assert offsets == [-1] * 20  # nothing comes back with acks=0
    else:
        assert offsets == list(range(20))
    assert values == [f"{i}".encode() for i in range(20)]


def test_errors_name_topic_and_partition(broker: Any, admin: Any) -> None:
    topic = unique_name("prod-err")
    admin.create_topics({topic: 2})
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, max_request_size=10_000, max_block_ms=10_000
    ) as producer:
        with pytest.raises(UnknownTopicOrPartitionError, match=f"partition 5.*{topic}"):
            producer.send(topic, b"v", partition=5)
        with pytest.raises(MessageTooLargeError, match="max.request.size"):
            producer.send(topic, b"x" * 20_000)
        assert producer.partitions_for(topic) == [0, 1]
        # The producer still works after refusing bad input.
        assert producer.send(topic, b"ok", partition=1).get(timeout=30).offset == 0
