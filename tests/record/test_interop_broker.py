"""Batches written by an independent producer (confluent-kafka / librdkafka) to the real broker
decode to exactly what was sent, for every codec, on both decoders."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import pytest

from kafkaconsumer.record import iter_batches
from tests.helpers import unique_name

from .raw_fetch import RawBrokerClient

confluent_kafka = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
N_RECORDS = 250
BASE_TS = 1_700_000_000_000


def _records() -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]:
    out = []
    for i in range(N_RECORDS):
        key = None if i % 10 == 0 else b"key-%04d" % i
        value = None if i % 37 == 5 else (b"value %d; " % i) * (1 + i % 40)
        headers: list[tuple[str, bytes | None]] = [(f"h{j}", b"x" * j) for j in range(i % 3)]
        if i % 11 == 0:
            headers.append(("null-header", None))
        out.append((key, value, headers, BASE_TS + i * 7))
    return out


def _create_topic(bootstrap: str, topic: str) -> None:
    client = admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = client.create_topics([admin.NewTopic(topic, num_partitions=1, replication_factor=1)])
    futures[topic].result(timeout=30)


def _produce(bootstrap: str, topic: str, codec: str, records: list[Any]) -> None:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 20,
            "batch.num.messages": 60,
            "acks": "all",
        }
    )
    failures: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    for key, value, headers, ts in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers or None,
            timestamp=ts,
            on_delivery=on_delivery,
        )
        producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0 and not failures, failures


def _fetch_all(
    bootstrap: str, topic: str, impl: ModuleType, expected: int
) -> tuple[list[Any], list[int]]:
    with RawBrokerClient(bootstrap.split(",")[0]) as boot:
        leader = boot.leader(topic, 0)
    records: list[Any] = []
    codecs_seen: list[int] = []
    offset = 0
    deadline = time.monotonic() + 30
    with RawBrokerClient(leader) as client:
        while len(records) < expected:
            assert time.monotonic() < deadline, f"only {len(records)} of {expected} records"
            part = client.fetch(topic, 0, offset, max_bytes=64 * 1024)
            assert part["error_code"] == 0, part
            data = part["records"]
            if data is not None:
                codecs_seen.extend(b.compression for b in iter_batches(data))
            result = impl.decode_fetched_records(data, topic, 0, offset)
            records.extend(result.records)
            offset = result.next_offset
    return records, codecs_seen


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_confluent_kafka_batches_decode_exactly(broker: Any, impl: ModuleType, codec: str) -> None:
    topic = unique_name(f"rec-{codec}")
    sent = _records()
    _create_topic(broker.bootstrap_servers, topic)
    _produce(broker.bootstrap_servers, topic, codec, sent)
    got, codecs_seen = _fetch_all(broker.bootstrap_servers, topic, impl, len(sent))
    assert [r.offset for r in got] == list(range(len(sent)))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == sent
    assert {(r.topic, r.partition, r.timestamp_type) for r in got} == {(topic, 0, 0)}
    assert [r.serialized_value_size for r in got] == [
        -1 if v is None else len(v) for _k, v, _h, _t in sent
    ]
    # The broker keeps the producer's compression (compression.type=producer by default).
    # librdkafka sends a batch uncompressed when compressing would not make it smaller (a
    # batch of one short record can end up so), so "none" batches may be mixed in.
    assert CODEC_IDS[codec] in codecs_seen
    assert set(codecs_seen) <= {CODEC_IDS[codec], 0}
    assert len(codecs_seen) > 1


def _abort_then_commit(bootstrap: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A transactional producer aborts 3 records, then commits 3. Returns the topic and its
    partition 0 fetched read_uncommitted and read_committed (once both markers are in)."""
    topic = unique_name("rec-txn")
    _create_topic(bootstrap, topic)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique_name("txn"), "linger.ms": 5}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"aborted-%d" % i)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"committed-%d" % i)
    producer.commit_transaction(30)
    with RawBrokerClient(bootstrap.split(",")[0]) as boot:
        leader = boot.leader(topic, 0)
    deadline = time.monotonic() + 30
    with RawBrokerClient(leader) as client:
        while True:
            uncommitted = client.fetch(topic, 0, 0)
            batches = list(iter_batches(bytes(uncommitted["records"] or b"")))
            if sum(b.is_control for b in batches) >= 2:
                break
            assert time.monotonic() < deadline, f"markers never appeared: {batches}"
            time.sleep(0.1)
        committed = client.fetch(topic, 0, 0, isolation_level=1)
    return topic, uncommitted, committed


def test_transaction_markers_from_the_broker(broker: Any, impl: ModuleType) -> None:
    """The broker's COMMIT/ABORT markers decode as control batches, never reach the user,
    and still move the position past them."""
    topic, part, _committed = _abort_then_commit(broker.bootstrap_servers)
    data = bytes(part["records"])
    controls = [b for b in iter_batches(data) if b.is_control]
    assert len(controls) == 2
    assert all(b.is_transactional and b.record_count == 1 for b in controls)
    result = impl.decode_fetched_records(data, topic, 0, 0)
    assert [r.value for r in result.records] == [
        b"aborted-0",
        b"aborted-1",
        b"aborted-2",
        b"committed-0",
        b"committed-1",
        b"committed-2",
    ]
    assert result.next_offset == controls[-1].base_offset + 1


def test_read_committed_with_the_brokers_aborted_list(broker: Any, impl: ModuleType) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu does not report aborted transactions to read_committed fetches")
    topic, _part, committed = _abort_then_commit(broker.bootstrap_servers)
    aborted = committed["aborted_transactions"]
    assert aborted, committed
    result = impl.decode_fetched_records(
        committed["records"], topic, 0, 0, read_committed=True, aborted_transactions=aborted
    )
    assert [r.value for r in result.records] == [b"committed-0", b"committed-1", b"committed-2"]
