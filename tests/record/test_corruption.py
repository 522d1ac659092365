"""Every kind of damage gives its clear error, from both decoders."""

from __future__ import annotations

import struct
import zlib
from types import ModuleType

import crc32c
import pytest
import zstandard

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError, UnsupportedCodecError
from kafkaconsumer.record import codecs, encode_batch, encode_varint
from tests.support.record_encoder import encode_legacy_message_set

TOPIC = "damaged"


def _fix_crc(batch: bytes | bytearray) -> bytes:
    """Recompute a v2 batch's CRC so that only the intended damage remains."""
    raw = bytearray(batch)
    raw[17:21] = struct.pack(">I", crc32c.crc32c(bytes(raw[21:])))
    return bytes(raw)


def _v2_with_records(records_payload: bytes, count: int, base_offset: int = 40) -> bytes:
    """A v2 batch around hand-written record bytes (uncompressed), with a correct CRC."""
    rest = (
        struct.pack(">hiqqqhii", 0, max(count - 1, 0), 1000, 1000, -1, -1, -1, count)
        + records_payload
    )
    head = struct.pack(">qiib", base_offset, 4 + 1 + 4 + len(rest), -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(rest)) + rest


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def _expect_corrupt(impl: ModuleType, data: bytes, offset: int, match: str) -> None:
    with pytest.raises(CorruptRecordError, match=match) as info:
        impl.decode_fetched_records(data, TOPIC, 4, 0)
    assert (info.value.topic, info.value.partition, info.value.offset) == (TOPIC, 4, offset)


def test_bad_crc_v2(impl: ModuleType) -> None:
    batch = bytearray(encode_batch([(b"k", b"value", [], 1)], base_offset=40))
    batch[-2] ^= 0x01  # the last byte of the value (the record ends with its header count)
    _expect_corrupt(impl, bytes(batch), 40, "CRC32C mismatch")
    # check_crcs=False skips the check (the damaged byte is inside the value).
    result = impl.decode_fetched_records(bytes(batch), TOPIC, 4, 0, check_crcs=False)
    assert result.records[0].value == b"valud"


def test_bad_crc_legacy(impl: ModuleType) -> None:
    message = bytearray(
        encode_legacy_message_set([(b"k", b"value", [], 1)], magic=1, base_offset=9)
    )
    message[-1] ^= 0x01
    _expect_corrupt(impl, bytes(message), 9, "CRC32 mismatch")


def test_bad_crc_inside_compressed_legacy_wrapper(impl: ModuleType) -> None:
    inner_good = encode_legacy_message_set([(b"k", b"value", [], 1)], magic=0, base_offset=3)
    inner = bytearray(inner_good)
    inner[-1] ^= 0x01  # damage the inner message; its CRC no longer matches
    wrapped = codecs.compress(codecs.CODEC_GZIP, bytes(inner))
    body = struct.pack(">bb", 0, codecs.CODEC_GZIP) + struct.pack(">i", -1)
    body += struct.pack(">i", len(wrapped)) + wrapped
    wrapper = struct.pack(">qiI", 3, 4 + len(body), zlib.crc32(body)) + body
    _expect_corrupt(impl, wrapper, 3, "CRC32 mismatch in a compressed message")


def test_truncation_inside_a_record(impl: ModuleType) -> None:
    # The record says it is 20 bytes long but the batch ends after 8.
    body = b"\x00\x00\x00\x01\x0a" + b"abc"
    data = _v2_with_records(encode_varint(20) + body, 1)
    _expect_corrupt(impl, data, 40, "does not fit the batch")


def test_truncated_value_inside_record(impl: ModuleType) -> None:
    # Value length 50 inside a record of 8 bytes.
    body = b"\x00\x00\x00\x01" + encode_varint(50) + b"abc"
    data = _v2_with_records(_record(body), 1)
    _expect_corrupt(impl, data, 40, "value overruns the record")


def test_bad_varint(impl: ModuleType) -> None:
    # A key length of eleven continuation bytes: longer than any varint.
    body = b"\x00\x00\x00" + b"\xff" * 11 + b"\x00"
    data = _v2_with_records(_record(body), 1)
    _expect_corrupt(impl, data, 40, "varint")


def test_bad_varlong_timestamp_delta(impl: ModuleType) -> None:
    body = b"\x00" + b"\xff" * 11 + b"\x00\x01\x01\x00"
    data = _v2_with_records(_record(body), 1)
    _expect_corrupt(impl, data, 40, "varlong|varint")


@pytest.mark.parametrize("field", ["key", "value"])
def test_negative_lengths(impl: ModuleType, field: str) -> None:
    if field == "key":
        body = b"\x00\x00\x00" + encode_varint(-5) + encode_varint(1) + b"v" + b"\x00"
    else:
        body = b"\x00\x00\x00" + encode_varint(-1) + encode_varint(-7) + b"\x00"
    data = _v2_with_records(_record(body), 1)
    _expect_corrupt(impl, data, 40, f"negative {field} length")


def test_negative_header_count(impl: ModuleType) -> None:
    body = b"\x00\x00\x00" + encode_varint(-1) + encode_varint(0) + encode_varint(-3)
    data = _v2_with_records(_record(body), 1)
    _expect_corrupt(impl, data, 40, "negative header count")


def test_negative_record_count(impl: ModuleType) -> None:
    data = _v2_with_records(b"", -2)
    _expect_corrupt(impl, data, 40, "negative record count")


def test_record_count_larger_than_the_records(impl: ModuleType) -> None:
    body = b"\x00\x00\x00" + encode_varint(-1) + encode_varint(1) + b"v" + b"\x00"
    data = _v2_with_records(_record(body), 2)
    _expect_corrupt(impl, data, 40, "truncated inside the batch")


def test_bytes_left_after_records(impl: ModuleType) -> None:
    body = b"\x00\x00\x00" + encode_varint(-1) + encode_varint(1) + b"v" + b"\x00"
    data = _v2_with_records(_record(body) + b"\x00\x00", 1)
    _expect_corrupt(impl, data, 40, "left after")


def test_invalid_utf8_header_key(impl: ModuleType) -> None:
    header = encode_varint(2) + b"\xff\xfe" + encode_varint(-1)
    body = b"\x00\x00\x00" + encode_varint(-1) + encode_varint(0) + encode_varint(1) + header
    data = _v2_with_records(_record(body), 1)
    _expect_corrupt(impl, data, 40, "UTF-8")


def test_negative_batch_length(impl: ModuleType) -> None:
    data = struct.pack(">qi", 12, -40) + b"\x00" * 60
    _expect_corrupt(impl, data, 12, "below the minimum")


def test_v2_batch_too_short_for_its_header(impl: ModuleType) -> None:
    data = struct.pack(">qiib", 12, 20, -1, 2) + b"\x00" * 15
    _expect_corrupt(impl, data, 12, "below the minimum")


def test_unknown_magic(impl: ModuleType) -> None:
    batch = bytearray(encode_batch([(None, b"v", [], 1)], base_offset=8))
    batch[16] = 7
    _expect_corrupt(impl, bytes(batch), 8, "unknown magic")


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_id(impl: ModuleType, codec_id: int) -> None:
    batch = bytearray(encode_batch([(None, b"v", [], 1)], base_offset=8))
    batch[22] = (batch[22] & ~0x07) | codec_id
    with pytest.raises(UnsupportedCodecError, match=f"codec id {codec_id}.*{TOPIC}-4"):
        impl.decode_fetched_records(_fix_crc(batch), TOPIC, 4, 0)


def test_garbage_compressed_payload(impl: ModuleType) -> None:
    batch = bytearray(encode_batch([(None, b"v" * 50, [], 1)], base_offset=8, compression="gzip"))
    batch[70:80] = b"\x00" * 10
    _expect_corrupt(impl, _fix_crc(batch), 8, "cannot decompress")


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb(impl: ModuleType, codec: str, small_decompression_limit: int) -> None:
    # 4 MiB of zeros: within the codec's abilities, beyond the (shrunk) 1 MiB bound.
    batch = encode_batch([(None, bytes(4 << 20), [], 1)], base_offset=8, compression=codec)
    _expect_corrupt(impl, batch, 8, f"limit of {small_decompression_limit} bytes")


def test_decompression_bomb_zstd_without_content_size(
    impl: ModuleType, small_decompression_limit: int
) -> None:
    plain = encode_batch([(None, bytes(4 << 20), [], 1)], base_offset=8)
    payload = zstandard.ZstdCompressor(write_content_size=False).compress(plain[61:])
    batch = bytearray(plain[:61] + payload)
    batch[8:12] = struct.pack(">i", len(batch) - 12)
    batch[22] = codecs.CODEC_ZSTD
    _expect_corrupt(impl, _fix_crc(batch), 8, "limit of")


def test_decompression_bomb_in_legacy_wrapper(
    impl: ModuleType, small_decompression_limit: int
) -> None:
    data = encode_legacy_message_set(
        [(None, bytes(4 << 20), [], 1)], magic=1, base_offset=5, compression="lz4"
    )
    _expect_corrupt(impl, data, 5, "limit of")


def test_first_batch_larger_than_the_response(impl: ModuleType) -> None:
    batch = encode_batch([(None, b"v" * 1000, [], 1)], base_offset=100)
    with pytest.raises(RecordTooLargeError) as info:
        impl.decode_fetched_records(batch[:500], TOPIC, 4, 100)
    assert info.value.size == len(batch)
    assert (info.value.topic, info.value.partition, info.value.offset) == (TOPIC, 4, 100)
    assert str(len(batch)) in str(info.value) and "max.partition.fetch.bytes" in str(info.value)


def test_partial_trailing_batch_is_not_an_error(impl: ModuleType) -> None:
    first = encode_batch([(None, b"a", [], 1)], base_offset=0)
    second = encode_batch([(None, b"b", [], 1)], base_offset=1)
    for cut in (1, 11, 12, 30, len(second) - 1):
        result = impl.decode_fetched_records(first + second[:cut], TOPIC, 4, 0)
        assert [r.value for r in result.records] == [b"a"]
        assert (result.next_offset, result.partial) == (1, True)


def test_tiny_response_is_partial(impl: ModuleType) -> None:
    result = impl.decode_fetched_records(b"\x00" * 7, TOPIC, 4, 55)
    assert (result.records, result.next_offset, result.partial) == ([], 55, True)


@pytest.mark.parametrize("data", [None, b"", memoryview(b"")])
def test_empty_responses(impl: ModuleType, data: bytes | memoryview | None) -> None:
    result = impl.decode_fetched_records(data, TOPIC, 4, 17)
    assert (result.records, result.next_offset, result.partial) == ([], 17, False)


def test_legacy_damage(impl: ModuleType) -> None:
    message = bytearray(encode_legacy_message_set([(b"key", b"v", [], 1)], magic=0, base_offset=2))
    # key length says 100 bytes
    message[18:22] = struct.pack(">i", 100)
    message[12:16] = struct.pack(">I", zlib.crc32(bytes(message[16:])))
    _expect_corrupt(impl, bytes(message), 2, "key overruns")
    message[18:22] = struct.pack(">i", -9)
    message[12:16] = struct.pack(">I", zlib.crc32(bytes(message[16:])))
    _expect_corrupt(impl, bytes(message), 2, "negative key length")


def test_nested_compression_is_refused(impl: ModuleType) -> None:
    inner = encode_legacy_message_set([(None, b"v", [], 1)], magic=1, compression="gzip")
    wrapped = codecs.compress(codecs.CODEC_GZIP, inner)
    body = struct.pack(">bbq", 1, codecs.CODEC_GZIP, 1) + struct.pack(">i", -1)
    body += struct.pack(">i", len(wrapped)) + wrapped
    wrapper = struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body
    _expect_corrupt(impl, wrapper, 0, "nests compression")
