"""Producer and admin error paths against the scripted fake broker (tier 2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.admin import EARLIEST, LATEST, KafkaAdminClient
from kafkaconsumer.errors import (
    KafkaTimeoutError,
    MessageTooLargeError,
    NotControllerError,
    TopicAuthorizationFailedError,
)
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.record import decode_fetched_records, iter_batches
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10
REQUEST_TIMED_OUT = 7
DUPLICATE_SEQUENCE_NUMBER = 46
NOT_COORDINATOR = 16
COORDINATOR_LOAD_IN_PROGRESS = 14
TOPIC_AUTHORIZATION_FAILED = 29
THROTTLING_QUOTA_EXCEEDED = 89


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=2, topics={"t": 2}) as fake:
        yield fake


def _producer(cluster: FakeCluster, **kwargs: Any) -> KafkaProducer:
    kwargs.setdefault("retry_backoff_ms", 10)
    kwargs.setdefault("reconnect_backoff_ms", 10)
    kwargs.setdefault("reconnect_backoff_max_ms", 50)
    return KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, **kwargs)


def _produced_batches(cluster: FakeCluster) -> list[Any]:
    out: list[Any] = []
    for _, body in cluster.requests(ApiKey.PRODUCE):
        for topic in body["topic_data"]:
            for part in topic["partition_data"]:
                out.extend(iter_batches(part["records"]))
    return out


def test_retriable_error_is_retried_with_the_same_sequence(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.PRODUCE, NOT_LEADER_OR_FOLLOWER, times=2)
    with _producer(cluster) as producer:
        meta = producer.send("t", b"v", partition=1).get(timeout=20)
    assert (meta.partition, meta.offset) == (1, 0)
    assert cluster.log_offsets("t", 1) == (0, 1)  # written once
    batches = _produced_batches(cluster)
    assert len(batches) == 3
    # Idempotence: a producer id from InitProducerId, and the retries keep sequence 0.
    assert len(cluster.requests(ApiKey.INIT_PRODUCER_ID)) == 1
    assert {b.producer_id for b in batches} == {batches[0].producer_id}
    assert batches[0].producer_id >= 0
    assert [b.base_sequence for b in batches] == [0, 0, 0]


def test_lost_connection_is_retried(cluster: FakeCluster) -> None:
    cluster.script(ApiKey.PRODUCE, [Reply(close=True)])
    with _producer(cluster) as producer:
        metas = [producer.send("t", f"{i}".encode(), partition=0) for i in range(5)]
        producer.flush(timeout_ms=20000)
        assert [m.get(timeout=1).offset for m in metas] == list(range(5))
    assert cluster.log_offsets("t", 0) == (0, 5)


def test_sequences_advance_per_partition(cluster: FakeCluster) -> None:
    with _producer(cluster, linger_ms=0) as producer:
        for _ in range(3):
            producer.send("t", b"x", partition=0).get(timeout=20)
        producer.send("t", b"y", partition=1).get(timeout=20)
    by_partition: dict[int, list[int]] = {}
    for _, body in cluster.requests(ApiKey.PRODUCE):
        for topic in body["topic_data"]:
            for part in topic["partition_data"]:
                for b in iter_batches(part["records"]):
                    by_partition.setdefault(part["index"], []).append(b.base_sequence)
    assert by_partition == {0: [0, 1, 2], 1: [0]}


def test_string_serializer_encoding_keys(cluster: FakeCluster) -> None:
    """``value.serializer.encoding`` / ``serializer.encoding`` (Java's StringSerializer keys)
    are accepted by the producer and used to encode the records."""
    with _producer(
        cluster,
        key_serializer="str",
        value_serializer="str",
        value_serializer_encoding="utf-16",
        serializer_encoding="latin-1",
    ) as producer:
        producer.send("t", "hé", key="clé", partition=0).get(timeout=20)
    ((_, body),) = cluster.requests(ApiKey.PRODUCE)
    data = body["topic_data"][0]["partition_data"][0]["records"]
    (record,) = decode_fetched_records(data, "t", 0, 0).records
    assert record.value == "hé".encode("utf-16")
    assert record.key == "clé".encode("latin-1")


def test_duplicate_sequence_counts_as_success(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.PRODUCE, DUPLICATE_SEQUENCE_NUMBER)
    with _producer(cluster) as producer:
        meta = producer.send("t", b"v", partition=0).get(timeout=20)
    assert meta.offset == -1  # the broker had it already; no offset is reported


def test_non_retriable_error_fails_the_records(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.PRODUCE, MESSAGE_TOO_LARGE)
    with _producer(cluster) as producer:
        future = producer.send("t", b"v", partition=1)
        with pytest.raises(MessageTooLargeError) as info:
            future.get(timeout=20)
        assert info.value.topic == "t" and info.value.partition == 1
        assert future.failed() and future.exception is info.value
        # The producer goes on with later records.
        assert producer.send("t", b"w", partition=1).get(timeout=20).offset == 0


def test_delivery_timeout_ends_retries(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.PRODUCE, REQUEST_TIMED_OUT, times=1000)
    with _producer(cluster, delivery_timeout_ms=500, request_timeout_ms=400) as producer:
        future = producer.send("t", b"v", partition=0)
        with pytest.raises(KafkaTimeoutError, match="delivery.timeout.ms"):
            future.get(timeout=20)


def test_get_timeout_is_honoured(cluster: FakeCluster) -> None:
    # A slow answer (the connection answers in order, so everything behind it waits too).
    cluster.script(ApiKey.PRODUCE, [Reply(delay_s=5)])
    with _producer(cluster, request_timeout_ms=30000) as producer:
        future = producer.send("t", b"v", partition=0)
        with pytest.raises(KafkaTimeoutError):
            future.get(timeout=0.3)
        assert not future.is_done
        producer.close(timeout_ms=0)
        assert future.failed()


def test_acks_zero_expects_no_answer(cluster: FakeCluster) -> None:
    with _producer(cluster, acks=0) as producer:
        assert producer.send("t", b"v", partition=0).get(timeout=20).offset == -1
        producer.flush(timeout_ms=5000)
    cluster.wait_for_requests(ApiKey.PRODUCE)
    header, body = cluster.requests(ApiKey.PRODUCE)[0]
    assert body["acks"] == 0
    assert len(cluster.requests(ApiKey.INIT_PRODUCER_ID)) == 0  # acks=0 turns idempotence off


def test_topic_authorization_error_is_raised_by_send(cluster: FakeCluster) -> None:
    cluster.on(
        ApiKey.METADATA,
        lambda node, header, body: {
            "brokers": [
                {"node_id": b.node_id, "host": "127.0.0.1", "port": b.port} for b in cluster.brokers
            ],
            "controller_id": 0,
            "topics": [
                {"error_code": TOPIC_AUTHORIZATION_FAILED, "name": t["name"], "partitions": []}
                for t in body["topics"] or []
            ],
        },
    )
    with _producer(cluster, max_block_ms=5000) as producer:
        with pytest.raises(TopicAuthorizationFailedError, match="'t'"):
            producer.send("t", b"v")


# ----------------------------------------------------------------------------- admin


@pytest.fixture
def admin(cluster: FakeCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, retry_backoff_ms=10)
    yield client
    client.close()


def test_delete_records_and_list_offsets(cluster: FakeCluster, admin: KafkaAdminClient) -> None:
    cluster.append("t", 0, [(None, f"{i}".encode()) for i in range(10)])
    tp = TopicPartition("t", 0)
    assert admin.list_offsets({tp: EARLIEST})[tp].offset == 0
    assert admin.list_offsets({tp: LATEST})[tp].offset == 10
    assert admin.delete_records({tp: 6}) == {tp: 6}
    assert cluster.log_offsets("t", 0) == (6, 10)
    assert admin.list_offsets({tp: EARLIEST})[tp].offset == 6
    # Sent to the partition's leader.
    leader = cluster.leader("t", 0)[0]
    assert cluster.requests(ApiKey.DELETE_RECORDS, node_id=leader)


def test_group_calls_follow_the_coordinator(cluster: FakeCluster, admin: KafkaAdminClient) -> None:
    cluster.coordinator_id = 1
    cluster.set_committed("g", "t", 0, 42, metadata="m")
    cluster.fail(ApiKey.OFFSET_FETCH, NOT_COORDINATOR)
    cluster.fail(ApiKey.OFFSET_FETCH, COORDINATOR_LOAD_IN_PROGRESS)
    offsets = admin.list_consumer_group_offsets("g")
    assert offsets == {TopicPartition("t", 0): OffsetAndMetadata(42, "m")}
    assert len(cluster.requests(ApiKey.OFFSET_FETCH, node_id=1)) == 3
    assert not cluster.requests(ApiKey.OFFSET_FETCH, node_id=0)
    admin.alter_consumer_group_offsets("g", {TopicPartition("t", 1): 7})
    assert cluster.committed("g")[("t", 1)][0] == 7


def test_create_topics_retries_not_controller(
    cluster: FakeCluster, admin: KafkaAdminClient
) -> None:
    calls: list[int] = []

    def create(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        calls.append(node)
        code = 41 if len(calls) == 1 else 0
        return {"topics": [{"name": t["name"], "error_code": code} for t in body["topics"]]}

    cluster.on(ApiKey.CREATE_TOPICS, create)
    admin.create_topics({"new": 3})
    assert len(calls) == 2
    _, body = cluster.requests(ApiKey.CREATE_TOPICS)[-1]
    assert body["topics"][0]["num_partitions"] == 3
    assert calls[0] == 0  # the controller the metadata names

    cluster.on(
        ApiKey.CREATE_TOPICS,
        lambda node, header, body: {
            "topics": [{"name": t["name"], "error_code": 41} for t in body["topics"]]
        },
    )
    with pytest.raises(KafkaTimeoutError, match="NOT_CONTROLLER"):
        admin.create_topics({"never": 1}, timeout_ms=300)
    assert NotControllerError.retriable or NotControllerError.invalid_metadata


def test_create_partitions_retries_throttling(
    cluster: FakeCluster, admin: KafkaAdminClient
) -> None:
    """THROTTLING_QUOTA_EXCEEDED is retriable: create_partitions asks again, as the other
    calls do, instead of raising it."""
    cluster.script(
        ApiKey.CREATE_PARTITIONS,
        [
            {"results": [{"name": "t", "error_code": THROTTLING_QUOTA_EXCEEDED}]},
            {"results": [{"name": "t", "error_code": 0}]},
        ],
    )
    admin.create_partitions({"t": 4}, timeout_ms=5000)
    sent = cluster.requests(ApiKey.CREATE_PARTITIONS)
    assert len(sent) == 2
    assert sent[-1][1]["topics"][0]["count"] == 4


def test_user_code_runs_without_the_producer_lock(cluster: FakeCluster) -> None:
    """Serializers, the partitioner and record callbacks are user code: another thread must be
    able to take the producer lock while they run (docs/architecture.md, Locks)."""
    import threading

    def lock_is_free(producer: KafkaProducer) -> bool:
        free: list[bool] = []

        def probe() -> None:
            got = producer._lock.acquire(timeout=2)
            if got:
                producer._lock.release()
            free.append(got)

        t = threading.Thread(target=probe)
        t.start()
        t.join(5)
        return free == [True]

    seen: dict[str, bool] = {}
    holder: list[KafkaProducer] = []

    def serializer(data: bytes) -> bytes:
        if holder:
            seen["serializer"] = lock_is_free(holder[0])
        return data

    def partitioner(key: bytes | None, all_parts: list[int], available: list[int]) -> int:
        seen["partitioner"] = lock_is_free(holder[0])
        return 1

    with _producer(cluster, value_serializer=serializer, partitioner_class=partitioner) as producer:
        holder.append(producer)
        future = producer.send("t", b"v")
        future.add_callback(lambda _meta: seen.__setitem__("callback", lock_is_free(producer)))
        meta = future.get(timeout=20)
    assert meta.partition == 1
    assert seen == {"serializer": True, "partitioner": True, "callback": True}


def test_waiting_for_the_producer_id_does_not_hold_the_lock(cluster: FakeCluster) -> None:
    """A slow InitProducerId answer must not block other threads: the producer id is awaited
    without the producer lock, so another thread's send() and flush() return at once."""
    import threading
    import time

    delay_s = 3.0
    cluster.script(ApiKey.INIT_PRODUCER_ID, [Reply(delay_s=delay_s)])
    with _producer(cluster) as producer:
        producer.partitions_for("t")  # metadata first: only the producer id is slow
        results: list[Any] = []

        def first() -> None:
            try:
                results.append(producer.send("t", b"first", partition=0).get(timeout=20))
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                results.append(exc)

        t = threading.Thread(target=first)
        t.start()
        try:
            cluster.wait_for_requests(ApiKey.INIT_PRODUCER_ID, count=1)
            start = time.monotonic()
            second = producer.send("t", b"second", partition=1)
            elapsed = time.monotonic() - start
            assert elapsed < delay_s / 2, f"send() blocked {elapsed:.1f} s behind the producer id"
            start = time.monotonic()
            with pytest.raises(KafkaTimeoutError):
                producer.flush(timeout_ms=100)  # the producer id is still on its way
            elapsed = time.monotonic() - start
            assert elapsed < delay_s / 2, f"flush() blocked {elapsed:.1f} s behind the producer id"
            assert not second.is_done
        finally:
            t.join(30)
        assert len(results) == 1 and not isinstance(results[0], BaseException), results
        assert results[0].partition == 0
        assert second.get(timeout=20).partition == 1
    assert len(cluster.requests(ApiKey.INIT_PRODUCER_ID)) == 1


def test_describe_groups_falls_back_when_consumer_group_describe_is_unsupported(
    cluster: FakeCluster,
) -> None:
    # Kafka 3.9 advertises ConsumerGroupDescribe but answers UNSUPPORTED_VERSION while the
    # consumer protocol is off; like Java's admin, ask DescribeGroups instead.
    cluster.script(
        ApiKey.CONSUMER_GROUP_DESCRIBE, [{"groups": [{"group_id": "g-classic", "error_code": 35}]}]
    )
    with KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        described = admin.describe_groups(["g-classic"], timeout_ms=10000)
    assert described["g-classic"].group_id == "g-classic"
    assert cluster.requests(ApiKey.CONSUMER_GROUP_DESCRIBE)
    assert cluster.requests(ApiKey.DESCRIBE_GROUPS)
