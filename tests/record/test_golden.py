"""Golden values written out from the specifications, not computed by our code."""

from __future__ import annotations

import zlib
from types import ModuleType

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaconsumer.record import codecs, encode_batch, encode_varint, iter_batches

# The check value of each CRC over the ASCII digits "123456789" (from the CRC catalogue):
# CRC-32C (Castagnoli, used by the v2 RecordBatch) and CRC-32 (IEEE, used by v0/v1 messages).
CHECK_INPUT = b"123456789"


def test_crc32c_check_value() -> None:
    assert crc32c.crc32c(CHECK_INPUT) == 0xE3069283


def test_crc32_check_value() -> None:
    assert zlib.crc32(CHECK_INPUT) == 0xCBF43926


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        # zigzag maps 0, -1, 1, -2, 2 ... to 0, 1, 2, 3, 4 ...; then base-128, low group first
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-2, "03"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (150, "ac02"),
        (-129, "8102"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
        (2**63 - 1, "feffffffffffffffff01"),
        (-(2**63), "ffffffffffffffffff01"),
    ],
)
def test_varint_zigzag_encoding(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded


def test_xxh32_reference_values() -> None:
    # Reference values of XXH32 with seed 0 (used to repair magic-0 lz4 frame headers).
    assert codecs.xxh32(b"") == 0x02CC5D05
    assert codecs.xxh32(b"a") == 0x550D7456
    assert codecs.xxh32(b"abc") == 0x32D153FF


# One complete v2 RecordBatch, field by field from the RecordBatch layout of the protocol
# documentation. Two records; the second is 1 offset and 2 ms after the first.
GOLDEN_BATCH = bytes.fromhex(
    "0000000000000005"  # baseOffset 5
    "00000046"  # batchLength 70 (every byte after this field)
    "00000003"  # partitionLeaderEpoch 3
    "02"  # magic 2
    "97c8748e"  # crc: CRC-32C of everything from attributes to the end
    "0000"  # attributes: no compression, CreateTime, not transactional, not control
    "00000001"  # lastOffsetDelta 1
    "00000000000003e8"  # baseTimestamp 1000
    "00000000000003ea"  # maxTimestamp 1002
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000002"  # records count 2
    # record 0
    "1a"  # length 13 (zigzag 26)
    "00"  # attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "02"
    "6b"  # key length 1, "k"
    "04"
    "7661"  # value length 2, "va"
    "02"  # 1 header
    "02"
    "68"  # header key length 1, "h"
    "02"
    "78"  # header value length 1, "x"
    # record 1
    "0c"  # length 6
    "00"  # attributes
    "04"  # timestampDelta 2
    "02"  # offsetDelta 1
    "01"  # key length -1: null key
    "00"  # value length 0: empty value
    "00"  # no headers
)


def test_golden_batch_crc_is_crc32c_of_the_tail() -> None:
    assert crc32c.crc32c(GOLDEN_BATCH[21:]) == 0x97C8748E
    assert len(GOLDEN_BATCH) == 12 + 70


def test_encoder_writes_the_golden_batch() -> None:
    encoded = encode_batch(
        [(b"k", b"va", [("h", b"x")], 1000), (None, b"", [], 1002)],
        base_offset=5,
        partition_leader_epoch=3,
    )
    assert encoded == GOLDEN_BATCH


def test_iter_batches_reads_the_golden_header() -> None:
    (info,) = list(iter_batches(GOLDEN_BATCH))
    assert (info.base_offset, info.last_offset, info.magic, info.crc) == (5, 6, 2, 0x97C8748E)
    assert (info.base_timestamp, info.max_timestamp, info.record_count) == (1000, 1002, 2)
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (-1, -1, -1)
    assert info.partition_leader_epoch == 3
    assert not info.is_transactional and not info.is_control and info.compression == 0


def test_decoders_read_the_golden_batch(impl: ModuleType) -> None:
    result = impl.decode_fetched_records(GOLDEN_BATCH, "golden", 7, 0)
    assert result.next_offset == 7
    assert result.partial is False
    first, second = result.records
    assert (first.topic, first.partition, first.offset) == ("golden", 7, 5)
    assert (first.timestamp, first.timestamp_type) == (1000, 0)
    assert (first.key, first.value, first.headers) == (b"k", b"va", [("h", b"x")])
    assert first.leader_epoch == 3
    assert (first.serialized_key_size, first.serialized_value_size) == (1, 2)
    assert (second.offset, second.timestamp, second.key, second.value) == (6, 1002, None, b"")
    assert second.headers == []
    assert (second.serialized_key_size, second.serialized_value_size) == (-1, 0)


def test_golden_legacy_v1_message(impl: ModuleType) -> None:
    # A v1 message: offset, size, crc (CRC-32 from magic on), magic, attributes, timestamp,
    # key (int32 length), value (int32 length).
    body = bytes.fromhex("010000000000000003e8000000016b000000027661")
    message = (
        bytes.fromhex("0000000000000009")  # offset 9
        + (4 + len(body)).to_bytes(4, "big")  # size: crc + body
        + zlib.crc32(body).to_bytes(4, "big")
        + body
    )
    result = impl.decode_fetched_records(message, "legacy", 0, 0)
    (record,) = result.records
    assert (record.offset, record.timestamp, record.timestamp_type) == (9, 1000, 0)
    assert (record.key, record.value, record.headers, record.leader_epoch) == (
        b"k",
        b"va",
        [],
        None,
    )
    assert result.next_offset == 10


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value: int) -> None:
    from kafkaconsumer.record import _pyrecords, encoder

    encoded = encode_varint(value)
    assert encoder._varint(value) == encoded
    assert _pyrecords._varlong(encoded, 0) == (value, len(encoded))
    if -(2**31) <= value < 2**31:
        assert _pyrecords._varint(encoded, 0) == (value, len(encoded))
