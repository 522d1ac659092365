"""Unit tests of the primitives, the definition format, version negotiation and the encoder's
rules for defaults, absent fields, nulls and unknown tagged fields."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import KafkaProtocolError, UnsupportedVersionError
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    negotiate_version,
    peek_correlation_id,
)
from kafkaconsumer.protocol import types as T
from kafkaconsumer.protocol.codegen import build_codec, generate_source
from kafkaconsumer.protocol.schema import Api, Field, Struct, VersionRange

pytestmark = pytest.mark.timeout(60)

# ---------------------------------------------------------------------------------- primitives


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16384, "808001"),
        (2**32 - 1, "ffffffff0f"),
    ],
)
def test_unsigned_varint_known_values(value: int, encoded: str) -> None:
    assert T.encode_uvarint(value).hex() == encoded
    raw = bytes.fromhex(encoded)
    assert T.read_uvarint(raw, 0, len(raw)) == (value, len(raw))


@pytest.mark.parametrize(
    ("value", "zigzag"),
    [(0, 0), (-1, 1), (1, 2), (-2, 3), (2**31 - 1, 2**32 - 2), (-(2**31), 2**32 - 1)],
)
def test_zigzag_32(value: int, zigzag: int) -> None:
    assert T.zigzag32(value) == zigzag
    assert T.unzigzag(zigzag) == value


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    raw = T.encode_varint(value)
    assert T.read_varint(raw, 0, len(raw)) == (value, len(raw))


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    raw = T.encode_varlong(value)
    assert len(raw) <= 10
    assert T.read_varlong(raw, 0, len(raw)) == (value, len(raw))


def test_varint_errors() -> None:
    with pytest.raises(KafkaProtocolError, match="truncated"):
        T.read_uvarint(b"\x80", 0, 1)
    with pytest.raises(KafkaProtocolError, match="too long"):
        T.read_uvarint(b"\xff" * 6, 0, 6)
    with pytest.raises(KafkaProtocolError, match="32 bits"):
        T.read_uvarint(b"\xff\xff\xff\xff\x7f", 0, 5)
    with pytest.raises(ValueError):
        T.encode_uvarint(-1)
    with pytest.raises(ValueError):
        T.zigzag32(2**31)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=40)))
def test_strings_round_trip(value: str | None) -> None:
    for write, read in (
        (T.write_string, T.read_string),
        (T.write_compact_string, T.read_compact_string),
    ):
        out = bytearray()
        write(out, value)
        assert read(bytes(out), 0, len(out)) == (value, len(out))


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=40)))
def test_bytes_round_trip(value: bytes | None) -> None:
    for write, read in (
        (T.write_bytes, T.read_bytes),
        (T.write_compact_bytes, T.read_compact_bytes),
    ):
        out = bytearray()
        write(out, value)
        assert read(bytes(out), 0, len(out)) == (value, len(out))


def test_string_known_encodings() -> None:
    out = bytearray()
    T.write_string(out, "ab")
    T.write_string(out, None)
    T.write_compact_string(out, "ab")
    T.write_compact_string(out, None)
    assert out.hex() == "00026162ffff03616200"


def test_string_errors() -> None:
    with pytest.raises(KafkaProtocolError, match="exceeds"):
        T.read_string(b"\x00\x05ab", 0, 4)
    with pytest.raises(KafkaProtocolError, match="invalid string length"):
        T.read_string(b"\xff\xfe", 0, 2)
    with pytest.raises(KafkaProtocolError, match="UTF-8"):
        T.read_string(b"\x00\x01\xff", 0, 3)
    with pytest.raises(ValueError):
        T.write_string(bytearray(), "x" * 40000)


def test_uuid_and_tagged_raw() -> None:
    u = uuid.uuid4()
    out = bytearray()
    T.write_uuid(out, u)
    assert T.read_uuid(bytes(out), 0, 16) == (u, 16)
    with pytest.raises(KafkaProtocolError):
        T.read_uuid(b"\x00" * 15, 0, 15)
    out = bytearray()
    T.write_tagged_raw(out, {5: b"\x01", 1: b""})
    assert out.hex() == "020100050101"  # ascending by tag
    assert T.read_tagged_raw(bytes(out), 0, len(out)) == ({1: b"", 5: b"\x01"}, len(out))


# ---------------------------------------------------------------------------------- schema


def test_version_ranges() -> None:
    assert VersionRange("0+").contains(0) and VersionRange("0+").contains(99)
    assert VersionRange("3-5").intersect(0, 9) == [3, 4, 5]
    assert VersionRange("7").intersect(0, 9) == [7]
    assert VersionRange("none").intersect(0, 9) == []
    assert VersionRange("3-5") == VersionRange("3-5")
    for bad in ("", "x", "5-3", "1-", "+1"):
        with pytest.raises(ValueError):
            VersionRange(bad)


def test_field_validation() -> None:
    with pytest.raises(ValueError, match="snake_case"):
        Field("ErrorCode", "int16")
    with pytest.raises(ValueError, match="unknown type"):
        Field("x", "int128")
    with pytest.raises(ValueError, match="tag"):
        Field("x", "int32", tag=1)
    with pytest.raises(ValueError, match="duplicate"):
        Struct([Field("a", "int8"), Field("a", "int8")])
    with pytest.raises(ValueError, match="share tag"):
        Api(
            99,
            "T",
            "0-1",
            "0+",
            [Field("a", "int8", tag=0, tagged="0+"), Field("b", "int8", tag=0, tagged="0+")],
            [],
        )
    with pytest.raises(ValueError, match="closed range"):
        Api(99, "T", "0+", "none", [], [])


def test_field_defaults() -> None:
    assert Field("a", "int32").default == 0
    assert Field("a", "string").default == ""
    assert Field("a", "records").default is None
    assert Field("a", "uuid").default == uuid.UUID(int=0)
    assert Field("a", "[]int32").default == []
    assert Field("a", Struct([Field("b", "int8", default=3)])).default == {"b": 3}
    assert Field("a", Struct([Field("b", "int8")]), nullable="0+").default is None
    f = Field("a", "[]int32")
    f.fresh_default().append(1)
    assert f.default == []


def test_tagged_field_exists_only_where_tagged() -> None:
    f = Field("t", "int32", tag=0, tagged="12+")
    assert not f.present_in(11) and f.present_in(12) and f.tagged_in(12)


# ---------------------------------------------------------------------------------- versions


def test_negotiate_version() -> None:
    ours = SUPPORTED_VERSIONS[ApiKey.FETCH]
    assert ours == (0, 17)
    assert negotiate_version(ApiKey.FETCH, 0, 15) == 15
    assert negotiate_version(ApiKey.FETCH, 4, 99) == 17
    assert negotiate_version(ApiKey.FETCH, 18, 20) is None
    assert negotiate_version(9999, 0, 5) is None


def test_supported_versions_of_core_apis() -> None:
    expected = {
        ApiKey.API_VERSIONS: (0, 5),
        ApiKey.METADATA: (0, 13),
        ApiKey.FIND_COORDINATOR: (0, 6),
        ApiKey.LIST_OFFSETS: (0, 9),
        ApiKey.FETCH: (0, 17),
        ApiKey.PRODUCE: (0, 11),
        ApiKey.SASL_HANDSHAKE: (0, 1),
        ApiKey.SASL_AUTHENTICATE: (0, 2),
        ApiKey.CREATE_TOPICS: (0, 7),
        ApiKey.DELETE_TOPICS: (0, 6),
    }
    for key, versions in expected.items():
        assert SUPPORTED_VERSIONS[key] == versions, key.name


def test_unknown_version_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionError):
        encode_request(ApiKey.FETCH, 18, 1, "c", {})
    with pytest.raises(UnsupportedVersionError):
        decode_response(ApiKey.FETCH, 99, b"\x00\x00\x00\x01")
    with pytest.raises(UnsupportedVersionError):
        encode_response(4242, 0, 1, {})
    frame = bytearray(encode_request(ApiKey.METADATA, 1, 5, "c", {"topics": None}))
    struct.pack_into(">h", frame, 6, 77)
    with pytest.raises(UnsupportedVersionError):
        decode_request(frame[4:])
    assert decode_request_header(frame[4:]) == (ApiKey.METADATA, 77, 5, "c")


# ---------------------------------------------------------------------------------- encoder rules


def _metadata_v1(body: dict[str, object]) -> bytes:
    return encode_request(ApiKey.METADATA, 1, 1, None, body)


def test_missing_fields_take_defaults_and_null_client_id() -> None:
    frame = encode_request(ApiKey.FETCH, 4, 3, None, {"max_wait_ms": 5, "topics": []})
    header, body = decode_request(frame[4:])
    assert header.client_id is None
    assert body["max_bytes"] == 0x7FFFFFFF and body["min_bytes"] == 0 and body["max_wait_ms"] == 5


def test_non_ignorable_absent_field_raises_ignorable_is_dropped() -> None:
    # include_topic_authorized_operations exists from v8 and is not ignorable.
    with pytest.raises(KafkaProtocolError, match="include_topic_authorized_operations"):
        _metadata_v1({"topics": None, "include_topic_authorized_operations": True})
    # The default value is fine at any version.
    _metadata_v1({"topics": None, "include_topic_authorized_operations": False})
    # topic_id (v10+) is ignorable: dropped at v1 without complaint.
    frame = _metadata_v1({"topics": [{"name": "a", "topic_id": uuid.uuid4()}]})
    _, body = decode_request(frame[4:])
    assert body["topics"] == [{"name": "a", "topic_id": uuid.UUID(int=0)}]


def test_null_for_non_nullable_field_raises() -> None:
    with pytest.raises(KafkaProtocolError, match="topics"):
        encode_request(ApiKey.METADATA, 0, 1, "c", {"topics": None})  # nullable only from v1
    with pytest.raises(KafkaProtocolError, match="name"):
        _metadata_v1({"topics": [{"name": None}]})


def test_bad_values_raise_protocol_error() -> None:
    with pytest.raises(KafkaProtocolError, match="Fetch v4 request"):
        encode_request(ApiKey.FETCH, 4, 1, "c", {"max_wait_ms": "soon"})
    with pytest.raises(KafkaProtocolError):
        encode_request(ApiKey.FETCH, 4, 1, "c", {"max_wait_ms": 2**40})
    with pytest.raises(KafkaProtocolError, match="must be a dict"):
        encode_request(ApiKey.FETCH, 4, 1, "c", [])  # type: ignore[arg-type]
    with pytest.raises(KafkaProtocolError):
        encode_request(ApiKey.METADATA, 1, 1, "c", {"topics": [{"name": "x" * 40000}]})


def test_unknown_tags_round_trip_at_every_level() -> None:
    body = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "_unknown_tags": {9: b"top"},
        "responses": [
            {
                "topic_id": uuid.uuid4(),
                "_unknown_tags": {7: b"t"},
                "partitions": [
                    {"partition_index": 1, "records": b"abc", "_unknown_tags": {5: b"\x00\x01"}},
                ],
            }
        ],
    }
    frame = encode_response(ApiKey.FETCH, 13, 4, body)
    _, decoded = decode_response(ApiKey.FETCH, 13, frame[4:])
    assert decoded["_unknown_tags"] == {9: b"top"}
    assert decoded["responses"][0]["_unknown_tags"] == {7: b"t"}
    assert decoded["responses"][0]["partitions"][0]["_unknown_tags"] == {5: b"\x00\x01"}
    assert (
        "_unknown_tags"
        not in decode_response(ApiKey.FETCH, 13, encode_response(ApiKey.FETCH, 13, 4, {})[4:])[1]
    )
    assert encode_response(ApiKey.FETCH, 13, 4, decoded) == frame


def test_records_accept_bytes_like_and_null() -> None:
    for records in (b"xyz", bytearray(b"xyz"), memoryview(b"xyz"), None):
        for version in (3, 9):
            frame = encode_request(
                ApiKey.PRODUCE,
                version,
                1,
                "c",
                {
                    "acks": 1,
                    "topic_data": [
                        {"name": "t", "partition_data": [{"index": 0, "records": records}]}
                    ],
                },
            )
            _, body = decode_request(frame[4:])
            got = body["topic_data"][0]["partition_data"][0]["records"]
            assert (None if got is None else bytes(got)) == (
                None if records is None else bytes(records)
            )


def test_api_versions_response_header_is_always_v0() -> None:
    frame = encode_response(ApiKey.API_VERSIONS, 3, 0x01020304, {})
    assert frame[4:8] == b"\x01\x02\x03\x04"
    assert frame[8:10] == b"\x00\x00"  # error_code follows at once: no header tag section
    assert peek_correlation_id(frame[4:]) == 0x01020304
    with pytest.raises(KafkaProtocolError):
        peek_correlation_id(b"\x00")


def test_generated_source_is_readable_and_compiles() -> None:
    api = Api(
        99,
        "Example",
        "0-1",
        "1+",
        [
            Field("a", "int32"),
            Field("b", "[]string", "1+"),
            Field("c", "uuid", tag=0, tagged="1+"),
        ],
        [],
    )
    source = generate_source(api, 1, "request")
    assert "def " in source and "unpack_from" in source
    codec = build_codec(api, 1, "request")
    out = bytearray()
    u = uuid.uuid4()
    codec.encode(out, {"a": 7, "b": ["x"], "c": u})
    assert codec.decode(memoryview(bytes(out)))[0] == {"a": 7, "b": ["x"], "c": u}
    with pytest.raises(ValueError):
        build_codec(api, 2, "request")


def test_every_registered_api_has_an_api_key_name() -> None:
    from kafkaconsumer.protocol.messages import ALL_APIS

    for api in ALL_APIS:
        assert ApiKey(api.key).value == api.key
        assert api.key in SUPPORTED_VERSIONS


def test_misspelt_field_is_rejected() -> None:
    body = {"topics": [{"topic": "t", "partitions": [{"partition_index": 0, "fetch_offset": 1}]}]}
    with pytest.raises(
        KafkaProtocolError, match=r"Fetch v12 request: unknown field\(s\) \['partition_index'\]"
    ):
        encode_request(ApiKey.FETCH, 12, 1, "c", body)
    with pytest.raises(KafkaProtocolError, match="unknown field"):
        encode_response(ApiKey.METADATA, 1, 1, {"broker": []})


def test_codec_cache_builds_each_codec_once_across_threads() -> None:
    import threading

    from kafkaconsumer.protocol.codegen import CodecCache

    api = Api(98, "Threads", "0-0", "none", [Field("a", "int32")], [Field("b", "int8")])
    cache = CodecCache({98: api})
    barrier = threading.Barrier(8)
    got: list[object] = []

    def worker() -> None:
        barrier.wait(timeout=10)
        got.append(cache.get(98, 0, "request"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(got) == 8 and all(c is got[0] for c in got)
    assert cache.get(98, 1, "request") is None and cache.get(97, 0, "request") is None
