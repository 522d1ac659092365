"""Deserializers for record keys and values (and serializers for the producer).

A deserializer turns the bytes of a key or value into a Python object. Specs accepted by
``key.deserializer`` / ``value.deserializer`` and by :func:`resolve_deserializer`:

* ``None``, ``"bytes"``, ``bytes`` or the Java ``ByteArrayDeserializer`` / ``BytesDeserializer`` /
  ``ByteBufferDeserializer`` names: no deserialization. :func:`resolve_deserializer` returns
  ``None`` for these, and the fetcher then skips the call entirely.
* a short name: ``"str"`` (``"string"``), ``"int"`` (``"integer"``), ``"long"``, ``"short"``,
  ``"float"``, ``"double"``, ``"uuid"``, ``"json"``, ``"boolean"``, ``"void"``; or the Java class
  name of the same deserializer (``org.apache.kafka.common.serialization.StringDeserializer``...).
  The numeric ones read big-endian two's complement / IEEE 754 bytes as Java writes them.
* an object with ``deserialize(topic, data, headers=None)`` (a :class:`Deserializer`);
* a class (instantiated without arguments; ``configure(configs, is_key)`` is called when present);
* an import path ``"package.module:Name"`` or ``"package.module.Name"`` of such a class/object;
* ``str`` (the type) means UTF-8 text and ``uuid.UUID`` the UUID deserializer;
* any other callable: ``fn(data)``, ``fn(topic, data)`` or ``fn(topic, data, headers)``; the
  arity is detected once, when it is resolved. Builtins work as one-argument callables, so
  ``int`` parses decimal text (``b"42"`` -> 42); use ``"int"`` for Java's 4-byte integers.

``None`` data (a null key or a tombstone value) deserializes to ``None`` for every built-in and
without calling a plain callable.
Serializers mirror all of this for the producer (:func:`resolve_serializer`).
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from kafkaconsumer.errors import ConfigError, SerializationError

logger = logging.getLogger(__name__)

__all__ = [
    "Deserializer",
    "Serializer",
    "ByteArrayDeserializer",
    "StringDeserializer",
    "IntegerDeserializer",
    "LongDeserializer",
    "ShortDeserializer",
    "FloatDeserializer",
    "DoubleDeserializer",
    "BooleanDeserializer",
    "UUIDDeserializer",
    "JsonDeserializer",
    "VoidDeserializer",
    "FunctionDeserializer",
    "ByteArraySerializer",
    "StringSerializer",
    "IntegerSerializer",
    "LongSerializer",
    "ShortSerializer",
    "FloatSerializer",
    "DoubleSerializer",
    "BooleanSerializer",
    "UUIDSerializer",
    "JsonSerializer",
    "VoidSerializer",
    "FunctionSerializer",
    "resolve_deserializer",
    "resolve_serializer",
    "validate_deserializer_spec",
    "validate_serializer_spec",
]

Headers = Sequence[tuple[str, "bytes | None"]]

_JAVA_PKG = "org.apache.kafka.common.serialization."


class Deserializer:
    """Base class of deserializers (Java ``Deserializer``).

    Subclasses implement :meth:`deserialize`; :meth:`configure` and :meth:`close` are optional.
    """

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Called once with the consumer's configuration before first use."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Turn ``data`` (None for a null key/value) into an object."""
        raise NotImplementedError

    def close(self) -> None:
        """Release resources; called when the consumer closes."""


class Serializer:
    """Base class of serializers (Java ``Serializer``)."""

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Called once with the producer's configuration before first use."""

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Turn ``data`` into bytes (None stays None: a null key or a tombstone)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release resources; called when the producer closes."""


# --------------------------------------------------------------------------- deserializers


class ByteArrayDeserializer(Deserializer):
    """Returns the bytes unchanged (the default; the fetcher never calls it)."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Return ``data`` as ``bytes``."""
        return None if data is None else bytes(data)


def _encoding_from(
    configs: Mapping[str, Any], is_key: bool, kind: str = "deserializer"
) -> str | None:
    """``key.<kind>.encoding`` / ``value.<kind>.encoding``, else ``<kind>.encoding`` (Java's
    StringDeserializer / StringSerializer rule)."""
    specific = configs.get(f"key.{kind}.encoding" if is_key else f"value.{kind}.encoding")
    return specific or configs.get(f"{kind}.encoding")


class StringDeserializer(Deserializer):
    """Decodes text (UTF-8 unless ``encoding`` or the ``*.deserializer.encoding`` keys say)."""

    def __init__(self, encoding: str = "utf-8") -> None:
        """Decode with ``encoding`` (checked now; :meth:`configure` may replace it)."""
        "".encode(encoding)  # fail now on an unknown encoding, not on the first record
        self.encoding = encoding

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Pick up ``key.deserializer.encoding`` / ``value.deserializer.encoding``."""
        enc = _encoding_from(configs, is_key)
        if enc:
            self.encoding = enc

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Decode ``data`` to ``str``."""
        if data is None:
            return None
        try:
            return str(data, self.encoding)
        except UnicodeDecodeError as exc:
            raise SerializationError(
                f"cannot decode {len(data)} bytes as {self.encoding}: {exc}"
            ) from exc


class _FixedLayout:
    """One number in a fixed ``struct`` layout, named by the subclass's ``layout=`` keyword;
    the Java class name in errors is the subclass's own name.
    """

    _struct: struct.Struct
    _java: str

    def __init_subclass__(cls, layout: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if layout:
            cls._struct = struct.Struct(layout)
            cls._java = cls.__name__


class _StructDeserializer(_FixedLayout, Deserializer):
    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Read one big-endian number from exactly the right number of bytes."""
        if data is None:
            return None
        if len(data) != self._struct.size:
            raise SerializationError(
                f"size of data received by {self._java} is {len(data)}, not {self._struct.size}"
            )
        return self._struct.unpack(data)[0]


class IntegerDeserializer(_StructDeserializer, layout=">i"):
    """4-byte big-endian signed int (Java ``IntegerDeserializer``)."""


class LongDeserializer(_StructDeserializer, layout=">q"):
    """8-byte big-endian signed long (Java ``LongDeserializer``)."""


class ShortDeserializer(_StructDeserializer, layout=">h"):
    """2-byte big-endian signed short (Java ``ShortDeserializer``)."""


class FloatDeserializer(_StructDeserializer, layout=">f"):
    """4-byte IEEE 754 float (Java ``FloatDeserializer``)."""


class DoubleDeserializer(_StructDeserializer, layout=">d"):
    """8-byte IEEE 754 double (Java ``DoubleDeserializer``)."""


class BooleanDeserializer(Deserializer):
    """One byte, 0 or 1 (Java ``BooleanDeserializer``)."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Return True for 0x01, False for 0x00."""
        if data is None:
            return None
        if len(data) != 1:
            raise SerializationError(
                f"size of data received by BooleanDeserializer is {len(data)}, not 1"
            )
        if data[0] == 1:
            return True
        if data[0] == 0:
            return False
        raise SerializationError(f"BooleanDeserializer: byte {data[0]} is neither 0 nor 1")


class UUIDDeserializer(StringDeserializer):
    """A UUID written as its text form (Java ``UUIDDeserializer``), returned as ``uuid.UUID``."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Parse the text form of a UUID."""
        text = super().deserialize(topic, data, headers)
        if text is None:
            return None
        try:
            return uuid.UUID(text)
        except ValueError as exc:
            raise SerializationError(f"not a UUID: {text[:64]!r}") from exc


class JsonDeserializer(Deserializer):
    """Parses JSON text (UTF-8, -16 or -32 as ``json.loads`` detects)."""

    def __init__(self, **loads_kwargs: Any) -> None:
        """Keep ``loads_kwargs`` for ``json.loads``."""
        import json  # here, not at start-up: most consumers never build one

        self._loads = json.loads
        self._loads_kwargs = loads_kwargs

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Return the decoded JSON document."""
        if data is None:
            return None
        try:
            return self._loads(bytes(data), **self._loads_kwargs)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SerializationError(f"invalid JSON: {exc}") from exc


class VoidDeserializer(Deserializer):
    """Accepts only null data (Java ``VoidDeserializer``); returns None."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Return None, or raise when there is data."""
        if data is not None:
            raise SerializationError("VoidDeserializer: data should be null")
        return None


def _arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` takes (1, 2 or 3)."""
    try:
        import inspect  # only for a plain function given as a (de)serializer

        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1  # builtins without a signature (e.g. bytes.decode) take the data alone
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    if len(required) > 3:
        raise TypeError(f"{fn!r} needs {len(required)} arguments; expected 1, 2 or 3")
    names = [p.name for p in positional[:3]]
    if "headers" in names:
        return names.index("headers") + 1  # fn(topic, data, headers=None) wants the headers
    if required:
        # Required parameters decide the convention: optional ones (an encoding, a flag) are
        # left to their defaults.
        return len(required)
    if any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
        return 3
    return 1


class FunctionDeserializer(Deserializer):
    """Wraps a callable ``fn(data)``, ``fn(topic, data)`` or ``fn(topic, data, headers)``.

    ``None`` data (a null key or a tombstone) gives ``None`` without calling the function, so
    a plain ``lambda b: b.decode()`` works on every record; use a :class:`Deserializer` object
    to handle null data yourself.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        """Wrap ``fn``; how many arguments it takes is found once, here."""
        if not callable(fn):
            raise TypeError(f"{fn!r} is not callable")
        self.fn = fn
        self.arity = _arity(fn)
        # One closure per arity, built once, keeps the per-record cost to a single extra call.
        if self.arity == 1:

            def call(topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
                return None if data is None else fn(data)
        elif self.arity == 2:

            def call(topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
                return None if data is None else fn(topic, data)
        else:

            def call(topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
                return None if data is None else fn(topic, data, headers)

        self.deserialize = call  # type: ignore[method-assign]

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Call the wrapped function (replaced per instance in ``__init__``)."""
        raise NotImplementedError  # pragma: no cover - replaced in __init__

    def __repr__(self) -> str:
        return f"FunctionDeserializer({self.fn!r})"


# --------------------------------------------------------------------------- serializers


class ByteArraySerializer(Serializer):
    """Passes bytes-like values through (``bytes``, ``bytearray``, ``memoryview``)."""

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Return ``data`` as bytes; other types raise :class:`SerializationError`."""
        if data is None:
            return None
        if isinstance(data, bytes):
            return data
        if isinstance(data, (bytearray, memoryview)):
            return bytes(data)
        raise SerializationError(
            f"expected bytes, got {type(data).__name__}; set a serializer (e.g. 'str')"
        )


class StringSerializer(Serializer):
    """Encodes ``str`` as UTF-8 (or ``encoding``)."""

    def __init__(self, encoding: str = "utf-8") -> None:
        """Encode with ``encoding`` (checked now; :meth:`configure` may replace it)."""
        "".encode(encoding)
        self.encoding = encoding

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Pick up ``key.serializer.encoding`` / ``value.serializer.encoding`` (else
        ``serializer.encoding``) when present."""
        enc = _encoding_from(configs, is_key, "serializer")
        if enc:
            self.encoding = enc

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Encode a string."""
        if data is None:
            return None
        if not isinstance(data, str):
            raise SerializationError(f"StringSerializer expects str, got {type(data).__name__}")
        return data.encode(self.encoding)


class _StructSerializer(_FixedLayout, Serializer):
    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Write one big-endian number."""
        if data is None:
            return None
        try:
            return self._struct.pack(data)
        except struct.error as exc:
            raise SerializationError(f"{self._java} cannot write {data!r}: {exc}") from exc


class IntegerSerializer(_StructSerializer, layout=">i"):
    """4-byte big-endian signed int."""


class LongSerializer(_StructSerializer, layout=">q"):
    """8-byte big-endian signed long."""


class ShortSerializer(_StructSerializer, layout=">h"):
    """2-byte big-endian signed short."""


class FloatSerializer(_StructSerializer, layout=">f"):
    """4-byte IEEE 754 float."""


class DoubleSerializer(_StructSerializer, layout=">d"):
    """8-byte IEEE 754 double."""


class BooleanSerializer(Serializer):
    """One byte, 0 or 1."""

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Write a bool."""
        if data is None:
            return None
        if not isinstance(data, bool):
            raise SerializationError(f"BooleanSerializer expects bool, got {type(data).__name__}")
        return b"\x01" if data else b"\x00"


class UUIDSerializer(Serializer):
    """Writes a UUID's text form (Java ``UUIDSerializer``)."""

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Write ``str(uuid)`` as UTF-8."""
        if data is None:
            return None
        if isinstance(data, str):
            data = uuid.UUID(data)
        if not isinstance(data, uuid.UUID):
            raise SerializationError(f"UUIDSerializer expects a UUID, got {type(data).__name__}")
        return str(data).encode("utf-8")


class JsonSerializer(Serializer):
    """Writes JSON text as UTF-8 (compact separators)."""

    def __init__(self, **dumps_kwargs: Any) -> None:
        """Keep ``dumps_kwargs`` for ``json.dumps``."""
        import json

        dumps_kwargs.setdefault("separators", (",", ":"))
        self._dumps = json.dumps
        self._dumps_kwargs = dumps_kwargs

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Encode ``data`` as JSON (None stays a null record, not the text ``null``)."""
        if data is None:
            return None
        try:
            return self._dumps(data, **self._dumps_kwargs).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"cannot encode {type(data).__name__} as JSON: {exc}") from exc


class VoidSerializer(Serializer):
    """Accepts only None."""

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Return None, or raise when there is data."""
        if data is not None:
            raise SerializationError("VoidSerializer: data should be None")
        return None


class FunctionSerializer(Serializer):
    """Wraps ``fn(data)``, ``fn(topic, data)`` or ``fn(topic, data, headers)`` returning bytes."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        """Wrap ``fn``; how many arguments it takes is found once, here."""
        if not callable(fn):
            raise TypeError(f"{fn!r} is not callable")
        self.fn = fn
        self.arity = _arity(fn)

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        """Call the function (None stays None); its result must be bytes-like or None."""
        if data is None:
            return None
        if self.arity == 1:
            out = self.fn(data)
        elif self.arity == 2:
            out = self.fn(topic, data)
        else:
            out = self.fn(topic, data, headers)
        if out is None or isinstance(out, bytes):
            return out
        if isinstance(out, (bytearray, memoryview)):
            return bytes(out)
        raise SerializationError(
            f"serializer {self.fn!r} returned {type(out).__name__}, expected bytes"
        )

    def __repr__(self) -> str:
        return f"FunctionSerializer({self.fn!r})"


# --------------------------------------------------------------------------- resolution

_IDENTITY_NAMES = {
    "bytes",
    "bytearray",
    "byte_array",
    "bytearraydeserializer",
    "raw",
    _JAVA_PKG + "ByteArrayDeserializer",
    _JAVA_PKG + "BytesDeserializer",
    _JAVA_PKG + "ByteBufferDeserializer",
}

_DESERIALIZERS: dict[str, type[Deserializer]] = {
    "str": StringDeserializer,
    "string": StringDeserializer,
    "utf8": StringDeserializer,
    "utf-8": StringDeserializer,
    "int": IntegerDeserializer,
    "integer": IntegerDeserializer,
    "int32": IntegerDeserializer,
    "long": LongDeserializer,
    "int64": LongDeserializer,
    "short": ShortDeserializer,
    "int16": ShortDeserializer,
    "float": FloatDeserializer,
    "float32": FloatDeserializer,
    "double": DoubleDeserializer,
    "float64": DoubleDeserializer,
    "boolean": BooleanDeserializer,
    "bool": BooleanDeserializer,
    "uuid": UUIDDeserializer,
    "json": JsonDeserializer,
    "void": VoidDeserializer,
    _JAVA_PKG + "StringDeserializer": StringDeserializer,
    _JAVA_PKG + "IntegerDeserializer": IntegerDeserializer,
    _JAVA_PKG + "LongDeserializer": LongDeserializer,
    _JAVA_PKG + "ShortDeserializer": ShortDeserializer,
    _JAVA_PKG + "FloatDeserializer": FloatDeserializer,
    _JAVA_PKG + "DoubleDeserializer": DoubleDeserializer,
    _JAVA_PKG + "BooleanDeserializer": BooleanDeserializer,
    _JAVA_PKG + "UUIDDeserializer": UUIDDeserializer,
    _JAVA_PKG + "VoidDeserializer": VoidDeserializer,
}

_SERIALIZER_IDENTITY = {
    "bytes",
    "bytearray",
    "byte_array",
    "raw",
    _JAVA_PKG + "ByteArraySerializer",
    _JAVA_PKG + "BytesSerializer",
    _JAVA_PKG + "ByteBufferSerializer",
}

_SERIALIZERS: dict[str, type[Serializer]] = {
    "str": StringSerializer,
    "string": StringSerializer,
    "utf8": StringSerializer,
    "utf-8": StringSerializer,
    "int": IntegerSerializer,
    "integer": IntegerSerializer,
    "int32": IntegerSerializer,
    "long": LongSerializer,
    "int64": LongSerializer,
    "short": ShortSerializer,
    "int16": ShortSerializer,
    "float": FloatSerializer,
    "float32": FloatSerializer,
    "double": DoubleSerializer,
    "float64": DoubleSerializer,
    "boolean": BooleanSerializer,
    "bool": BooleanSerializer,
    "uuid": UUIDSerializer,
    "json": JsonSerializer,
    "void": VoidSerializer,
    _JAVA_PKG + "StringSerializer": StringSerializer,
    _JAVA_PKG + "IntegerSerializer": IntegerSerializer,
    _JAVA_PKG + "LongSerializer": LongSerializer,
    _JAVA_PKG + "ShortSerializer": ShortSerializer,
    _JAVA_PKG + "FloatSerializer": FloatSerializer,
    _JAVA_PKG + "DoubleSerializer": DoubleSerializer,
    _JAVA_PKG + "BooleanSerializer": BooleanSerializer,
    _JAVA_PKG + "UUIDSerializer": UUIDSerializer,
    _JAVA_PKG + "VoidSerializer": VoidSerializer,
}


def _lookup_name(spec: str, table: Mapping[str, Any], identity: set[str], what: str) -> Any:
    """Map a name to a built-in class, the identity marker, or an imported object."""
    key = spec.strip()
    if key in table:
        return table[key]
    if key.lower() in table:
        return table[key.lower()]
    if key in identity or key.lower() in identity:
        return _IDENTITY
    if key.startswith("org.apache.kafka."):
        raise ConfigError(
            f"unknown Java {what} {key!r}; supported: "
            + ", ".join(sorted(k.rsplit(".", 1)[1] for k in table if k.startswith(_JAVA_PKG)))
        )
    if ":" not in key and "." not in key:
        names = sorted({k for k in table if "." not in k} | {"bytes"})
        raise ConfigError(f"unknown {what} {key!r}; known names: {', '.join(names)}")
    from kafkaconsumer.utils.loader import resolve_object

    return resolve_object(key, key=what)


_IDENTITY = object()


def _instantiate(obj: Any, method: str, configs: Mapping[str, Any] | None, is_key: bool) -> Any:
    if isinstance(obj, type):
        obj = obj()
    if (
        configs is not None
        and callable(getattr(obj, "configure", None))
        and callable(getattr(obj, method, None))
    ):
        obj.configure(configs, is_key)
    return obj


def resolve_deserializer(
    spec: Any, *, configs: Mapping[str, Any] | None = None, is_key: bool = False
) -> Deserializer | None:
    """Turn a ``key.deserializer``/``value.deserializer`` spec into a deserializer.

    Returns ``None`` when the data should stay raw ``bytes`` (no call needed). ``configs`` (the
    consumer's configuration) is passed to ``configure(configs, is_key)`` when the deserializer
    has that method. Raises :class:`ConfigError` for a spec that names nothing usable.
    """
    if spec is None or spec is bytes or spec is bytearray or spec is ByteArrayDeserializer:
        return None
    if isinstance(spec, ByteArrayDeserializer):
        return None
    if isinstance(spec, str):
        spec = _lookup_name(spec, _DESERIALIZERS, _IDENTITY_NAMES, "deserializer")
        if spec is _IDENTITY:
            return None
    if spec is str:
        spec = StringDeserializer
    elif spec is uuid.UUID:
        spec = UUIDDeserializer
    if isinstance(spec, type):
        if issubclass(spec, ByteArrayDeserializer):
            return None
        if not callable(getattr(spec, "deserialize", None)):
            if spec.__module__ == "builtins":
                return FunctionDeserializer(spec)  # int, float, ...: parse the data directly
            raise ConfigError(f"class {spec.__qualname__} has no deserialize() method")
        obj: Deserializer = _instantiate(spec, "deserialize", configs, is_key)
        return obj
    if callable(getattr(spec, "deserialize", None)):
        if configs is not None and callable(getattr(spec, "configure", None)):
            spec.configure(configs, is_key)
        return cast(Deserializer, spec)
    if callable(spec):
        return FunctionDeserializer(spec)
    raise ConfigError(
        f"cannot use {spec!r} as a deserializer: expected a name, a callable, "
        "an object with deserialize(), a class or an import path"
    )


def resolve_serializer(
    spec: Any, *, configs: Mapping[str, Any] | None = None, is_key: bool = False
) -> Serializer:
    """Turn a ``key.serializer``/``value.serializer`` spec into a serializer.

    ``None`` (unset) gives :class:`ByteArraySerializer`, which accepts only bytes-like values.
    """
    if spec is None or spec is bytes or spec is bytearray:
        return ByteArraySerializer()
    if isinstance(spec, str):
        spec = _lookup_name(spec, _SERIALIZERS, _SERIALIZER_IDENTITY, "serializer")
        if spec is _IDENTITY:
            return ByteArraySerializer()
    if spec is str:
        spec = StringSerializer
    elif spec is uuid.UUID:
        spec = UUIDSerializer
    if isinstance(spec, type):
        if not callable(getattr(spec, "serialize", None)):
            if spec.__module__ == "builtins":
                return FunctionSerializer(spec)
            raise ConfigError(f"class {spec.__qualname__} has no serialize() method")
        serializer: Serializer = _instantiate(spec, "serialize", configs, is_key)
        return serializer
    if callable(getattr(spec, "serialize", None)):
        if configs is not None and callable(getattr(spec, "configure", None)):
            spec.configure(configs, is_key)
        return cast(Serializer, spec)
    if callable(spec):
        return FunctionSerializer(spec)
    raise ConfigError(
        f"cannot use {spec!r} as a serializer: expected a name, a callable, "
        "an object with serialize(), a class or an import path"
    )


def validate_deserializer_spec(spec: Any) -> None:
    """Raise :class:`ConfigError` when ``spec`` cannot be resolved, without instantiating it."""
    _validate(spec, "deserialize", _DESERIALIZERS, _IDENTITY_NAMES, "deserializer")


def validate_serializer_spec(spec: Any) -> None:
    """Raise :class:`ConfigError` when ``spec`` cannot be resolved, without instantiating it."""
    _validate(spec, "serialize", _SERIALIZERS, _SERIALIZER_IDENTITY, "serializer")


def _validate(
    spec: Any, method: str, table: Mapping[str, Any], identity: set[str], what: str
) -> None:
    if spec is None:
        return
    if isinstance(spec, str):
        spec = _lookup_name(spec, table, identity, what)
        if spec is _IDENTITY:
            return
    if spec in (bytes, bytearray, str, uuid.UUID):
        return
    if isinstance(spec, type):
        if not callable(getattr(spec, method, None)) and spec.__module__ != "builtins":
            raise ConfigError(f"class {spec.__qualname__} has no {method}() method")
        return
    if callable(getattr(spec, method, None)):
        return
    if callable(spec):
        try:
            _arity(spec)
        except TypeError as exc:
            raise ConfigError(f"{what} {spec!r}: {exc}") from None
        return
    raise ConfigError(
        f"cannot use {spec!r} as a {what}: expected a name, a callable, an object with "
        f"{method}(), a class or an import path"
    )
