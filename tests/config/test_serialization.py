"""Deserializers and serializers: built-ins, Java names, callables, resolution errors."""

from __future__ import annotations

import json
import math
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaconsumer.errors import ConfigError, SerializationError
from kafkaconsumer.serialization import (
    Deserializer,
    DoubleDeserializer,
    FunctionDeserializer,
    IntegerDeserializer,
    JsonDeserializer,
    LongDeserializer,
    Serializer,
    StringDeserializer,
    resolve_deserializer,
    resolve_serializer,
    validate_deserializer_spec,
)

J = "org.apache.kafka.common.serialization."


@pytest.mark.parametrize(
    "spec",
    [
        None,
        "bytes",
        bytes,
        J + "ByteArrayDeserializer",
        J + "BytesDeserializer",
        J + "ByteBufferDeserializer",
        "BYTES",
    ],
)
def test_identity_specs_resolve_to_none(spec: Any) -> None:
    assert resolve_deserializer(spec) is None


@pytest.mark.parametrize(
    ("spec", "data", "expected"),
    [
        ("str", "héllo".encode(), "héllo"),
        (J + "StringDeserializer", b"abc", "abc"),
        ("int", b"\x00\x00\x01\x00", 256),
        (J + "IntegerDeserializer", b"\xff\xff\xff\xff", -1),
        ("long", b"\x80" + b"\x00" * 7, -(2**63)),
        (J + "LongDeserializer", (42).to_bytes(8, "big"), 42),
        ("short", b"\x7f\xff", 32767),
        (J + "ShortDeserializer", b"\xff\xfe", -2),
        ("double", struct.pack(">d", 1.5), 1.5),
        (J + "DoubleDeserializer", struct.pack(">d", -0.25), -0.25),
        ("float", struct.pack(">f", 0.5), 0.5),
        (J + "FloatDeserializer", struct.pack(">f", 2.0), 2.0),
        ("boolean", b"\x01", True),
        (J + "BooleanDeserializer", b"\x00", False),
        (
            "uuid",
            b"12345678-1234-5678-1234-567812345678",
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
        ),
        (J + "UUIDDeserializer", b"00000000-0000-0000-0000-000000000001", uuid.UUID(int=1)),
        ("json", b'{"a": [1, 2]}', {"a": [1, 2]}),
        ("void", None, None),
        (J + "VoidDeserializer", None, None),
    ],
)
def test_builtin_deserializers(spec: str, data: bytes | None, expected: Any) -> None:
    deser = resolve_deserializer(spec)
    assert deser is not None
    assert deser.deserialize("t", data, []) == expected
    # Null data stays None for every built-in.
    assert deser.deserialize("t", None) is None


@pytest.mark.parametrize(
    ("spec", "data"),
    [
        ("int", b"\x00\x01"),
        ("long", b"\x00"),
        ("short", b"\x00\x00\x00"),
        ("double", b""),
        ("float", b"12345"),
        ("boolean", b"\x02"),
        ("boolean", b""),
        ("uuid", b"nope"),
        ("json", b"{not json"),
        ("str", b"\xff\xfe\xfd"),
        ("void", b"x"),
    ],
)
def test_builtin_deserializers_reject_bad_bytes(spec: str, data: bytes) -> None:
    deser = resolve_deserializer(spec)
    assert deser is not None
    with pytest.raises(SerializationError):
        deser.deserialize("t", data)


def test_java_byte_layout_matches_struct() -> None:
    # Java's IntegerSerializer writes big-endian two's complement: 0x12345678 -> 12 34 56 78.
    assert IntegerDeserializer().deserialize("t", bytes([0x12, 0x34, 0x56, 0x78])) == 0x12345678
    assert LongDeserializer().deserialize("t", bytes(7) + b"\x05") == 5
    assert math.isnan(DoubleDeserializer().deserialize("t", struct.pack(">d", float("nan"))))


def test_string_encoding_from_config() -> None:
    deser = resolve_deserializer(
        "str", configs={"value.deserializer.encoding": "utf-16-be"}, is_key=False
    )
    assert isinstance(deser, StringDeserializer)
    assert deser.deserialize("t", "hé".encode("utf-16-be")) == "hé"
    key = resolve_deserializer(
        "str",
        configs={"deserializer.encoding": "latin-1", "key.deserializer.encoding": None},
        is_key=True,
    )
    assert key is not None and key.deserialize("t", b"\xe9") == "é"
    assert StringDeserializer("latin-1").deserialize("t", b"\xe9") == "é"
    with pytest.raises(LookupError):
        StringDeserializer("no-such-encoding")


def test_callables_by_arity() -> None:
    one = resolve_deserializer(lambda data: ("one", data))
    two = resolve_deserializer(lambda topic, data: ("two", topic, data))
    three = resolve_deserializer(lambda topic, data, headers: ("three", topic, data, headers))
    assert one is not None and one.deserialize("t", b"x", [("h", b"v")]) == ("one", b"x")
    assert two is not None and two.deserialize("t", b"x", None) == ("two", "t", b"x")
    assert three is not None and three.deserialize("t", b"x", [("h", b"v")]) == (
        "three",
        "t",
        b"x",
        [("h", b"v")],
    )

    def defaults(data: bytes, extra: int = 1, more: int = 2, most: int = 3) -> Any:
        return data

    # Optional parameters keep their defaults: only the required ones decide the arity.
    d = resolve_deserializer(defaults)
    assert isinstance(d, FunctionDeserializer) and d.arity == 1
    assert d.deserialize("t", b"z") == b"z"

    def with_headers(topic: str, data: bytes, headers: Any = None) -> Any:
        return (topic, data, headers)

    h = resolve_deserializer(with_headers)
    assert isinstance(h, FunctionDeserializer) and h.arity == 3
    assert h.deserialize("t", b"x", [("k", b"v")]) == ("t", b"x", [("k", b"v")])
    varargs = resolve_deserializer(lambda *args: args)
    assert varargs is not None and varargs.deserialize("t", b"x", []) == ("t", b"x", [])

    def too_many(a: Any, b: Any, c: Any, d: Any) -> Any:
        return a

    with pytest.raises(ConfigError):
        validate_deserializer_spec(too_many)


def test_builtin_callables_take_data_only() -> None:
    as_int = resolve_deserializer(int)
    assert as_int is not None and as_int.deserialize("t", b"42") == 42
    as_text = resolve_deserializer(str)
    assert isinstance(as_text, StringDeserializer)
    decode = resolve_deserializer(bytes.decode)
    assert decode is not None and decode.deserialize("t", b"ok") == "ok"


class Upper(Deserializer):
    """Test deserializer recording its configuration."""

    configured: tuple[Any, bool] | None = None

    def configure(self, configs: Any, is_key: bool) -> None:
        self.configured = (configs, is_key)

    def deserialize(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
        return None if data is None else data.upper()


def test_classes_objects_and_import_paths() -> None:
    configs = {"a": 1}
    from_class = resolve_deserializer(Upper, configs=configs, is_key=True)
    assert isinstance(from_class, Upper) and from_class.configured == (configs, True)
    instance = Upper()
    assert resolve_deserializer(instance) is instance
    by_path = resolve_deserializer(f"{__name__}:Upper")
    assert isinstance(by_path, Upper)
    by_dotted = resolve_deserializer(f"{__name__}.Upper")
    assert isinstance(by_dotted, Upper)
    assert by_dotted.deserialize("t", b"ab") == b"AB"
    json_obj = resolve_deserializer(JsonDeserializer(parse_float=str))
    assert json_obj is not None and json_obj.deserialize("t", b"[1.5]") == ["1.5"]


class NoMethod:
    """Neither callable nor a deserializer."""


def test_bad_specs_raise_config_error() -> None:
    for spec in [
        "nosuch",
        12,
        "org.apache.kafka.common.serialization.XDeserializer",
        "nosuchmodule_zz:Thing",
        f"{__name__}:Missing",
        NoMethod,
        NoMethod(),
    ]:
        with pytest.raises(ConfigError):
            resolve_deserializer(spec)
        with pytest.raises(ConfigError):
            validate_deserializer_spec(spec)


# ----------------------------------------------------------------------------- serializers


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        (None, b"raw", b"raw"),
        ("bytes", bytearray(b"ba"), b"ba"),
        ("str", "héllo", "héllo".encode()),
        (J + "StringSerializer", "x", b"x"),
        ("int", 256, b"\x00\x00\x01\x00"),
        ("long", -1, b"\xff" * 8),
        ("short", 2, b"\x00\x02"),
        ("double", 1.5, struct.pack(">d", 1.5)),
        ("float", 0.5, struct.pack(">f", 0.5)),
        ("boolean", True, b"\x01"),
        ("uuid", uuid.UUID(int=1), b"00000000-0000-0000-0000-000000000001"),
        ("json", {"a": 1}, b'{"a":1}'),
        (lambda v: v.encode() * 2, "ab", b"abab"),
    ],
)
def test_serializers(spec: Any, value: Any, expected: bytes) -> None:
    ser = resolve_serializer(spec)
    assert ser.serialize("t", value) == expected
    assert ser.serialize("t", None) is None


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        (None, "text"),
        ("str", 5),
        ("int", 2**31),
        ("short", 1.5),
        ("boolean", 1),
        ("json", object()),
        (lambda v: 5, "x"),
    ],
)
def test_serializers_reject(spec: Any, value: Any) -> None:
    with pytest.raises(SerializationError):
        resolve_serializer(spec).serialize("t", value)


def test_serializer_object() -> None:
    class Ser(Serializer):
        def serialize(self, topic: str, data: Any, headers: Any = None) -> bytes | None:
            return f"{topic}:{data}".encode()

    assert resolve_serializer(Ser).serialize("t", 1) == b"t:1"
    with pytest.raises(ConfigError):
        resolve_serializer("nosuch")


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_long_round_trip(value: int) -> None:
    data = resolve_serializer("long").serialize("t", value)
    deser = resolve_deserializer("long")
    assert deser is not None and deser.deserialize("t", data) == value


@given(st.text())
def test_string_round_trip(value: str) -> None:
    data = resolve_serializer("str").serialize("t", value)
    deser = resolve_deserializer("str")
    assert deser is not None and deser.deserialize("t", data) == value


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=10,
    )
)
def test_json_round_trip(value: Any) -> None:
    data = resolve_serializer("json").serialize("t", value)
    if value is None:
        assert data is None
        return
    assert data == json.dumps(value, separators=(",", ":")).encode()
    deser = resolve_deserializer("json")
    assert deser is not None and deser.deserialize("t", data) == value
