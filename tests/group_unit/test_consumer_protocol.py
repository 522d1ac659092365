"""Consumer protocol Subscription/Assignment bytes: golden bytes from the spec, round trips,
forward compatibility and malformed input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.internals.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    read_version,
)
from kafkaconsumer.structs import TopicPartition as TP

pytestmark = pytest.mark.timeout(60)

# Golden blobs written out by hand from ConsumerProtocolSubscription.json /
# ConsumerProtocolAssignment.json: int16 version, then the fields of that version.
FOO = "0003" + b"foo".hex()  # int16 length + UTF-8
SUB_FIELDS_V0 = (
    "00000001"
    + FOO  # Topics: [ "foo" ]
    + "00000002"
    + "0102"  # UserData: 2 bytes
)
OWNED = (
    "00000001"
    + FOO  # OwnedPartitions: one topic "foo"
    + "00000002"
    + "00000000"
    + "00000002"  # partitions [0, 2]
)
GOLDEN_SUB = {
    0: "0000" + SUB_FIELDS_V0,
    1: "0001" + SUB_FIELDS_V0 + OWNED,
    2: "0002" + SUB_FIELDS_V0 + OWNED + "00000007",  # GenerationId 7
    3: "0003" + SUB_FIELDS_V0 + OWNED + "00000007" + "0002" + b"r1".hex(),  # RackId "r1"
}
FULL_SUB = Subscription(
    topics=["foo"],
    user_data=b"\x01\x02",
    owned_partitions=[TP("foo", 0), TP("foo", 2)],
    generation_id=7,
    rack_id="r1",
)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_bytes(version: int) -> None:
    assert encode_subscription(FULL_SUB, version).hex() == GOLDEN_SUB[version]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_decode_keeps_fields_of_version(version: int) -> None:
    sub = decode_subscription(bytes.fromhex(GOLDEN_SUB[version]))
    assert sub.topics == ("foo",)
    assert sub.user_data == b"\x01\x02"
    assert sub.owned_partitions == ((TP("foo", 0), TP("foo", 2)) if version >= 1 else ())
    assert sub.generation_id == (7 if version >= 2 else -1)
    assert sub.rack_id == ("r1" if version >= 3 else None)


def test_subscription_nulls_golden() -> None:
    sub = Subscription(topics=["t", "u"])
    expected = (
        "0003"
        + "00000002"
        + "0001"
        + b"t".hex()
        + "0001"
        + b"u".hex()
        + "ffffffff"  # null user data
        + "00000000"  # no owned partitions
        + "ffffffff"  # generation -1
        + "ffff"
    )  # null rack
    assert encode_subscription(sub).hex() == expected
    assert decode_subscription(bytes.fromhex(expected)) == sub


def test_assignment_golden_bytes() -> None:
    a = Assignment(partitions=[TP("t", 0), TP("t", 1), TP("u", 5)], user_data=None)
    expected = (
        "0003"
        + "00000002"
        + "0001"
        + b"t".hex()
        + "00000002"
        + "00000000"
        + "00000001"
        + "0001"
        + b"u".hex()
        + "00000001"
        + "00000005"
        + "ffffffff"
    )
    assert encode_assignment(a).hex() == expected
    assert encode_assignment(a, 0).hex() == "0000" + expected[4:]
    assert decode_assignment(bytes.fromhex(expected)) == a


def test_assignment_with_user_data() -> None:
    a = Assignment(partitions=[], user_data=b"xyz")
    assert encode_assignment(a, 1).hex() == "0001" + "00000000" + "00000003" + b"xyz".hex()
    assert decode_assignment(encode_assignment(a, 1)) == a


def test_newer_subscription_version_ignores_trailing_fields() -> None:
    blob = bytes.fromhex("0009" + GOLDEN_SUB[3][4:]) + b"\x00\x00\x00\x2a" + b"future"
    sub = decode_subscription(blob)
    assert sub == FULL_SUB
    assert read_version(blob) == 9


def test_newer_assignment_version_ignores_trailing_fields() -> None:
    a = Assignment(partitions=[TP("t", 3)], user_data=b"u")
    blob = b"\x00\x07" + encode_assignment(a)[2:] + b"\x01\x02\x03"
    assert decode_assignment(blob) == a


def test_negative_version_rejected() -> None:
    with pytest.raises(KafkaProtocolError):
        decode_subscription(bytes.fromhex("ffff" + GOLDEN_SUB[0][4:]))
    with pytest.raises(KafkaProtocolError):
        decode_assignment(bytes.fromhex("8000" + "00000000ffffffff"))


@pytest.mark.parametrize(
    "blob",
    [
        "00",  # not even a version
        "0000",  # no topics array
        "0000000000",  # truncated count
        "0000" + "00000001" + "0005" + "6162",  # string shorter than its length
        "0000" + "ffffffff" + "ffffffff",  # null (non-nullable) topics array
        "0000" + "00000001" + "ffff" + "ffffffff",  # null topic name
        "0000" + "7fffffff",  # count far beyond the bytes present
        "0000" + "00000000" + "00000005" + "01",  # user data shorter than its length
        "0000" + "00000000" + "fffffffe",  # invalid negative user data length
        "0001" + "00000000" + "ffffffff" + "00000001" + "0001" + "61" + "00000002" + "00000001",
        "0000" + "00000001" + "0002" + "c328" + "ffffffff",  # invalid UTF-8
    ],
)
def test_malformed_subscription_raises_protocol_error(blob: str) -> None:
    with pytest.raises(KafkaProtocolError):
        decode_subscription(bytes.fromhex(blob))


@pytest.mark.parametrize(
    "blob",
    [
        "00",
        "0000",
        "0000" + "00000001" + "0001" + "74",
        "0000" + "00000000",
        "0000" + "40000000" + "00",
    ],
)
def test_malformed_assignment_raises_protocol_error(blob: str) -> None:
    with pytest.raises(KafkaProtocolError):
        decode_assignment(bytes.fromhex(blob))


def test_empty_assignment_blob_is_empty_assignment() -> None:
    assert decode_assignment(b"") == Assignment()


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(TypeError):
        Subscription(topics="foo")
    with pytest.raises(TypeError):
        Subscription(topics=["t"], owned_partitions=[("t", "0")])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Assignment(partitions=[], user_data="text")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        encode_subscription(Subscription(topics=["t"]), 4)
    with pytest.raises(ValueError):
        encode_assignment(Assignment(partitions=[TP("t", 2**31)]))
    with pytest.raises(TypeError):
        encode_subscription(Assignment())  # type: ignore[arg-type]
    with pytest.raises(KafkaProtocolError):
        decode_subscription("0000")  # type: ignore[arg-type]


def test_plain_tuples_become_topic_partitions() -> None:
    sub = Subscription(topics=["t"], owned_partitions=[("t", 1)])  # type: ignore[list-item]
    assert isinstance(sub.owned_partitions[0], TP)
    assert sub.owned_partitions == (TP("t", 1),)


def test_memoryview_input_decodes() -> None:
    blob = bytearray(b"\xff\xff" + bytes.fromhex(GOLDEN_SUB[3]))
    assert decode_subscription(memoryview(blob)[2:]) == FULL_SUB


# -- properties ---------------------------------------------------------------------------------

topics_st = st.text(min_size=1, max_size=12)
owned_st = st.dictionaries(
    topics_st, st.lists(st.integers(0, 2**31 - 1), max_size=5, unique=True), max_size=4
)


@st.composite
def subscriptions(draw: st.DrawFn) -> Subscription:
    owned = draw(owned_st)
    return Subscription(
        topics=draw(st.lists(topics_st, max_size=5)),
        user_data=draw(st.none() | st.binary(max_size=20)),
        owned_partitions=[TP(t, p) for t, ps in owned.items() for p in ps],
        generation_id=draw(st.integers(-1, 2**31 - 1)),
        rack_id=draw(st.none() | st.text(max_size=8)),
    )


@settings(max_examples=150, deadline=None)
@given(subscriptions())
def test_subscription_round_trip_v3(sub: Subscription) -> None:
    assert decode_subscription(encode_subscription(sub)) == sub


@settings(max_examples=100, deadline=None)
@given(subscriptions(), st.integers(0, 3))
def test_subscription_round_trip_older_versions_drop_newer_fields(
    sub: Subscription, version: int
) -> None:
    got = decode_subscription(encode_subscription(sub, version))
    assert got.topics == sub.topics and got.user_data == sub.user_data
    assert got.owned_partitions == (sub.owned_partitions if version >= 1 else ())
    assert got.generation_id == (sub.generation_id if version >= 2 else -1)
    assert got.rack_id == (sub.rack_id if version >= 3 else None)


@settings(max_examples=150, deadline=None)
@given(owned_st, st.none() | st.binary(max_size=20), st.integers(0, 3))
def test_assignment_round_trip(
    parts: dict[str, list[int]], user_data: bytes | None, version: int
) -> None:
    a = Assignment(
        partitions=[TP(t, p) for t, ps in parts.items() for p in ps], user_data=user_data
    )
    assert decode_assignment(encode_assignment(a, version)) == a


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_protocol_error_only(blob: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(blob)
        except KafkaProtocolError:
            pass


@settings(max_examples=200, deadline=None)
@given(subscriptions(), st.data())
def test_truncated_subscription_always_protocol_error(
    sub: Subscription, data: st.DataObject
) -> None:
    blob = encode_subscription(sub)
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(KafkaProtocolError):
        decode_subscription(blob[:cut])


# -- interop: kafka-python generates its encoders from the same Apache Kafka JSON specs --------


def test_interop_with_kafka_python_spec_encoder() -> None:
    md = pytest.importorskip("kafka.protocol.consumer.metadata")
    KS, KA = md.ConsumerProtocolSubscription, md.ConsumerProtocolAssignment
    theirs = KS(
        version=3,
        topics=["foo"],
        user_data=b"\x01\x02",
        owned_partitions=[KS.TopicPartition(topic="foo", partitions=[0, 2])],
        generation_id=7,
        rack_id="r1",
    ).encode()
    assert bytes(theirs) == encode_subscription(FULL_SUB)
    ours = encode_assignment(Assignment([TP("t", 0), TP("t", 1)], b"ud"))
    back = KA.decode(ours)
    assert [(tp.topic, list(tp.partitions)) for tp in back.assigned_partitions] == [("t", [0, 1])]
    assert bytes(back.user_data) == b"ud"


def test_struct_layout_is_big_endian() -> None:
    blob = encode_subscription(Subscription(topics=[], generation_id=0x01020304), 2)
    assert blob[-4:] == struct.pack(">i", 0x01020304)
