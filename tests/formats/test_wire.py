"""The Confluent wire format: frame, schema-id headers and Protobuf message indexes."""

from __future__ import annotations

import uuid

import pytest

from kafkaconsumer.errors import SerializationError
from kafkaconsumer.formats.wire import (
    describe_schema_id,
    frame,
    read_message_indexes,
    split_frame,
    write_message_indexes,
)


def test_frame_round_trip() -> None:
    framed = split_frame(frame(0x01020304, b"payload"))
    assert framed.schema_id == 0x01020304
    assert bytes(framed.payload) == b"payload"
    assert frame(7, b"x") == b"\x00\x00\x00\x00\x07x"


def test_header_names_the_schema_of_an_unframed_payload() -> None:
    value_header = [("__value_schema_id", b"\x00\x00\x00\x00\x09")]
    framed = split_frame(b"raw avro", value_header)
    assert (framed.schema_id, bytes(framed.payload)) == (9, b"raw avro")
    # The key looks at its own header: with only the value's, the key must be framed.
    key = split_frame(frame(3, b"k"), value_header, is_key=True)
    assert key.schema_id == 3
    both = [("__key_schema_id", b"\x00\x00\x00\x00\x05"), *value_header]
    assert split_frame(b"k", both, is_key=True).schema_id == 5


def test_guid_header_names_the_schema_by_its_canonical_string() -> None:
    """Magic byte 1 and 16 bytes in the schema-id header give the GUID as Confluent's
    registry spells it in GET /schemas/guids/{guid}; the data is all payload."""
    guid = uuid.UUID("0f8e4b7c-2a1d-4c3e-9b5a-6d7e8f901234")
    framed = split_frame(b"raw", [("__value_schema_id", b"\x01" + guid.bytes)])
    assert framed.schema_id == "0f8e4b7c-2a1d-4c3e-9b5a-6d7e8f901234"
    assert bytes(framed.payload) == b"raw"
    assert describe_schema_id(framed.schema_id) == f"schema GUID {guid}"
    assert describe_schema_id(7) == "schema id 7"


@pytest.mark.parametrize(
    ("data", "headers", "why"),
    [
        (b"\x00\x00\x01", None, "too short"),
        (b"\x01\x00\x00\x00\x01rest", None, "unknown magic byte 1"),
        (b"{}", [("__value_schema_id", b"\x00\x01")], "2 bytes"),
        (b"{}", [("__value_schema_id", b"\x01" + bytes(15))], "16-byte GUID"),
    ],
)
def test_bad_frames_say_why(data: bytes, headers: list[tuple[str, bytes]] | None, why: str) -> None:
    with pytest.raises(SerializationError, match=why):
        split_frame(data, headers)


@pytest.mark.parametrize("indexes", [[0], [1], [0, 2], [3, 0, 1], [200, 70000]])
def test_message_indexes_round_trip(indexes: list[int]) -> None:
    encoded = write_message_indexes(indexes) + b"msg"
    decoded, rest = read_message_indexes(memoryview(encoded))
    assert decoded == indexes
    assert bytes(rest) == b"msg"


def test_message_indexes_are_zigzag_varints() -> None:
    # [1] is the count 1 and the index 1, each zigzag-encoded as 2.
    assert write_message_indexes([1]) == b"\x02\x02"
    assert write_message_indexes([0]) == b"\x00"
    with pytest.raises(SerializationError, match="truncated"):
        read_message_indexes(memoryview(b"\x04\x02"))
