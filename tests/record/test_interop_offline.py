"""Bytes from independent implementations (kafka-python, aiokafka) decode to what they were
given, and our encoder's bytes decode the same in kafka-python's reader. No broker needed."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from kafkaconsumer.record import encode_batch
from tests.support.record_encoder import encode_legacy_message_set

kp_default = pytest.importorskip("kafka.record.default_records")
kp_legacy = pytest.importorskip("kafka.record.legacy_records")
kp_memory = pytest.importorskip("kafka.record.memory_records")

# kafka-python's import uses importlib.resources APIs that Python deprecates.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:(read_text|open_text) is deprecated:DeprecationWarning"
)

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
RECORDS = [
    (b"key-%d" % i if i % 3 else None, (b"value %d " % i) * (i % 7), i * 11) for i in range(40)
]
HEADERS = [("trace", b"abc"), ("empty", b""), ("none", None), ("unicode-\u00e9", b"\x00\xff")]


def _headers(i: int) -> list[tuple[str, bytes | None]]:
    return HEADERS[: i % 5]


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_kafka_python_v2_batches(impl: ModuleType, codec: str) -> None:
    builder = kp_default.DefaultRecordBatchBuilder(2, CODEC_IDS[codec], 0, -1, -1, -1, 1 << 20)
    for i, (key, value, ts) in enumerate(RECORDS):
        builder.append(i * 2, 1_600_000_000_000 + ts, key, value, _headers(i))
    data = bytes(builder.build())
    result = impl.decode_fetched_records(data, "kp", 1, 0)
    got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in result.records]
    assert got == [
        (i * 2, key, value, 1_600_000_000_000 + ts, _headers(i))
        for i, (key, value, ts) in enumerate(RECORDS)
    ]
    assert result.next_offset == (len(RECORDS) - 1) * 2 + 1


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])  # no zstd before v2
def test_kafka_python_legacy_message_sets(impl: ModuleType, magic: int, codec: str) -> None:
    # kafka-python writes magic-0 lz4 with the old, wrong frame header checksum (KAFKA-1493).
    if codec == "lz4" and magic == 0:
        pytest.importorskip("xxhash", reason="kafka-python needs xxhash for magic-0 lz4")
    builder = kp_legacy.LegacyRecordBatchBuilder(magic, CODEC_IDS[codec], 1 << 20)
    for i, (key, value, ts) in enumerate(RECORDS):
        builder.append(i, 1_600_000_000_000 + ts if magic else None, key, value)
    raw = bytearray(builder.build())
    if codec != "none":
        # A producer leaves the wrapper offset at 0; the broker stores the last absolute
        # offset there, which is what a consumer fetches.
        raw[:8] = (len(RECORDS) - 1).to_bytes(8, "big")
    data = bytes(raw)
    result = impl.decode_fetched_records(data, "kp", 1, 5)
    got = [(r.offset, r.key, r.value) for r in result.records]
    assert got == [(i, k, v) for i, (k, v, _t) in enumerate(RECORDS)][5:]
    if magic == 1:
        assert [r.timestamp for r in result.records] == [
            1_600_000_000_000 + ts for _k, _v, ts in RECORDS[5:]
        ]
    else:
        assert {(r.timestamp, r.timestamp_type) for r in result.records} == {(-1, -1)}
    assert result.next_offset == len(RECORDS)


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_aiokafka_v2_batches(impl: ModuleType, codec: str) -> None:
    aio = pytest.importorskip("aiokafka.record.default_records")
    builder = aio.DefaultRecordBatchBuilder(2, CODEC_IDS[codec], 1, 77, 3, 0, 1 << 20)
    for i, (key, value, ts) in enumerate(RECORDS):
        builder.append(i, 1_600_000_000_000 + ts, key, value, _headers(i))
    data = bytes(builder.build())
    result = impl.decode_fetched_records(data, "aio", 0, 0)
    got = [(r.offset, r.key, r.value, r.headers) for r in result.records]
    assert got == [(i, k, v, _headers(i)) for i, (k, v, _t) in enumerate(RECORDS)]


def _kp_read(data: bytes) -> list[tuple[Any, ...]]:
    records = kp_memory.MemoryRecords(data)
    out: list[tuple[Any, ...]] = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, list(r.headers)))
    return out


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_kafka_python_reads_our_v2_batches(codec: str) -> None:
    records = [(k, v, _headers(i), 1000 + ts) for i, (k, v, ts) in enumerate(RECORDS)]
    data = encode_batch(records, base_offset=100, compression=codec) + encode_batch(
        records[:3], base_offset=140, compression=codec
    )
    expected = [(100 + i, t, k, v, h) for i, (k, v, h, t) in enumerate(records)]
    expected += [(140 + i, t, k, v, h) for i, (k, v, h, t) in enumerate(records[:3])]
    assert _kp_read(data) == expected


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kafka_python_reads_our_legacy_message_sets(magic: int, codec: str) -> None:
    if codec == "lz4" and magic == 0:
        pytest.importorskip("xxhash", reason="kafka-python needs xxhash for magic-0 lz4")
    records: list[tuple[Any, ...]] = [(k, v, [], 1000 + ts) for k, v, ts in RECORDS]
    data = encode_legacy_message_set(records, magic=magic, base_offset=10, compression=codec)
    got = _kp_read(data)
    assert [(o, k, v) for o, _t, k, v, _h in got] == [
        (10 + i, k, v) for i, (k, v, _h, _t) in enumerate(records)
    ]
