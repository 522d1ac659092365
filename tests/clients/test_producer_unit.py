"""Producer and admin pieces that need no broker: murmur2, partitioning, validation, timeouts."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.errors import ConfigError, KafkaTimeoutError
from kafkaconsumer.producer import KafkaProducer, default_partition, murmur2

# Values of Java's Utils.murmur2 (Apache Kafka UtilsTest), as signed 32-bit ints.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), sorted(JAVA_MURMUR2.items()))
def test_murmur2_java_values(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@settings(max_examples=300)
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    # kafka-python's murmur2 is an independent port of the Java function (unsigned result).
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data)


@given(st.binary(min_size=1, max_size=32), st.integers(min_value=1, max_value=1000))
def test_default_partition_is_positive_murmur_mod_n(key: bytes, n: int) -> None:
    p = default_partition(key, n)
    assert 0 <= p < n
    assert p == (kafka_python_murmur2(key) & 0x7FFFFFFF) % n


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(30)
def test_send_without_broker_times_out_within_max_block() -> None:
    producer = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{_dead_port()}",
        max_block_ms=300,
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=50,
    )
    try:
        with pytest.raises(KafkaTimeoutError, match="not present in metadata"):
            producer.send("t", b"v")
        # Nothing queued: flush and close return at once.
        producer.flush(timeout_ms=100)
    finally:
        producer.close(timeout_ms=0)


@pytest.mark.timeout(30)
def test_admin_without_broker_honours_timeout() -> None:
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{_dead_port()}",
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=50,
    )
    try:
        with pytest.raises(KafkaTimeoutError):
            admin.create_topics({"t": 1}, timeout_ms=300)
        with pytest.raises(KafkaTimeoutError):
            admin.list_groups(timeout_ms=200)
    finally:
        admin.close()


def test_bad_producer_config_and_input() -> None:
    with pytest.raises(ConfigError, match="compression.type"):
        KafkaProducer(bootstrap_servers="127.0.0.1:1", compression_type="brotli")
    with pytest.raises(ConfigError, match="linger"):
        KafkaProducer(bootstrap_servers="127.0.0.1:1", linger_msec=5)
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{_dead_port()}", max_block_ms=50)
    try:
        with pytest.raises(ValueError, match="topic"):
            producer.send("", b"v")
        with pytest.raises(TypeError, match="header"):
            producer.send("t", b"v", headers=[("h", "not-bytes")])  # type: ignore[list-item]
        from kafkaconsumer.errors import SerializationError

        with pytest.raises(SerializationError, match="expected bytes"):
            producer.send("t", "a str without a serializer")
    finally:
        producer.close(timeout_ms=0)
    with pytest.raises(Exception, match="closed"):
        producer.send("t", b"v")


def test_describe_decodes_consumer_assignments() -> None:
    from kafkaconsumer.internals.consumer_protocol import Assignment, encode_assignment
    from kafkaconsumer.structs import TopicPartition

    raw = encode_assignment(Assignment([TopicPartition("t", 0), TopicPartition("t", 3)]))
    group = {
        "group_id": "g",
        "group_state": "Stable",
        "protocol_type": "consumer",
        "protocol_data": "range",
        "members": [
            {
                "member_id": "m1",
                "group_instance_id": "i1",
                "client_id": "c",
                "client_host": "/127.0.0.1",
                "member_metadata": b"",
                "member_assignment": raw,
            },
            {
                "member_id": "m2",
                "group_instance_id": None,
                "client_id": "c2",
                "client_host": "h",
                "member_metadata": b"",
                "member_assignment": b"\x00garbage",
            },
        ],
    }
    desc = KafkaAdminClient._description(group, 7)
    assert desc.protocol == "range" and desc.coordinator == 7
    assert desc.members[0].assignment == (TopicPartition("t", 0), TopicPartition("t", 3))
    assert desc.members[0].group_instance_id == "i1"
    assert desc.members[1].assignment == ()  # undecodable bytes are not an error
