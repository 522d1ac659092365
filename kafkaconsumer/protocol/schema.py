"""The definition format for Kafka protocol messages.

Each API is described as data: an :class:`Api` holds the request and response field lists,
each :class:`Field` names its type and the versions that carry it. The code generator in
:mod:`kafkaconsumer.protocol.codegen` turns these definitions into flat encode and decode
functions lazily: each (api, version, direction) codec is generated the first time it is used
and cached for the life of the process (``build_all_codecs()`` generates them all at once).

Version strings follow the Apache Kafka message specs: ``"0+"`` (from 0 on), ``"3-5"``
(inclusive range), ``"7"`` (a single version) and ``"none"`` (never).

Field type strings: ``int8 int16 int32 int64 uint16 uint32 float64 bool string bytes records
uuid`` and arrays of them written ``"[]int32"``, ``"[]string"``. A ``list[Field]`` as the type
means an array of structs; ``Struct([...])`` means a single (non-array) struct value.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

__all__ = [
    "PRIMITIVE_TYPES",
    "NO_DEFAULT",
    "VersionRange",
    "Field",
    "Struct",
    "Api",
]

#: Every primitive type name a :class:`Field` may use (alone or after ``[]``).
PRIMITIVE_TYPES: frozenset[str] = frozenset(
    {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "uint32",
        "float64",
        "bool",
        "string",
        "bytes",
        "records",
        "uuid",
    }
)

_ZERO_UUID = uuid.UUID(int=0)

# Default of each primitive when the definition names none, as in the Kafka specs
# (records have no meaningful empty value, so they default to null).
_TYPE_DEFAULTS: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
    "uuid": _ZERO_UUID,
}

_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_RANGE = re.compile(r"^(\d+)(?:(\+)|-(\d+))?$")


class _NoDefault:
    """Marker type for "use the type's default"; see :data:`NO_DEFAULT`."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: Sentinel meaning "no explicit default given: use the type's default".
NO_DEFAULT: Any = _NoDefault()


class VersionRange:
    """An inclusive range of versions parsed from a spec string.

    ``VersionRange("3-5").contains(4)`` is true; ``"none"`` contains nothing; ``"2+"`` has no
    upper bound (``high`` is None).

    Thread-safety: immutable after construction; safe to share.
    """

    __slots__ = ("text", "low", "high", "empty")

    def __init__(self, text: str) -> None:
        """Parse ``text``: ``"none"``, ``"N"``, ``"N+"`` or ``"N-M"``."""
        if not isinstance(text, str):
            raise TypeError(f"version range must be a str, not {type(text).__name__}")
        self.text = text.strip()
        self.low: int = 0
        self.high: int | None = None
        self.empty: bool = False
        if self.text == "none":
            self.empty = True
            return
        match = _RANGE.match(self.text)
        if match is None:
            raise ValueError(
                f"invalid version range {text!r} (expected '0+', '3-5', '7' or 'none')"
            )
        self.low = int(match.group(1))
        if match.group(2):
            self.high = None
        elif match.group(3) is not None:
            self.high = int(match.group(3))
            if self.high < self.low:
                raise ValueError(f"invalid version range {text!r}: upper bound below lower bound")
        else:
            self.high = self.low

    def contains(self, version: int) -> bool:
        """Whether ``version`` lies in this range."""
        if self.empty:
            return False
        if version < self.low:
            return False
        return self.high is None or version <= self.high

    __contains__ = contains

    def intersect(self, low: int, high: int) -> list[int]:
        """The versions of ``low..high`` (inclusive) that this range contains, ascending (kept
        as API of this class; the client does not call it)."""
        return [v for v in range(low, high + 1) if self.contains(v)]

    def __repr__(self) -> str:
        return f"VersionRange({self.text!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VersionRange):
            return NotImplemented
        return (self.empty, self.low, self.high) == (other.empty, other.low, other.high)

    def __hash__(self) -> int:
        return hash((self.empty, self.low, self.high))


class Struct:
    """A single (non-array) struct value: ``Field("assignment", Struct([...]), "0+")``.

    Thread-safety: immutable after construction; safe to share.
    """

    __slots__ = ("fields",)

    def __init__(self, fields: list[Field]) -> None:
        """Wrap the struct's ``fields``."""
        if not isinstance(fields, list) or not all(isinstance(f, Field) for f in fields):
            raise TypeError("Struct takes a list of Field")
        _check_unique(fields)
        self.fields: list[Field] = fields

    def __repr__(self) -> str:
        return f"Struct({self.fields!r})"


class Field:
    """One field of a message, a struct, or an array element struct.

    ``name`` is the snake_case of the Kafka spec name (``PartitionIndex`` -> ``partition_index``).
    ``type`` is a primitive name, ``"[]<primitive>"``, a list of Fields (array of structs) or a
    :class:`Struct`. ``versions`` are the versions carrying the field; ``nullable`` the versions
    where it may be null; a tagged field has ``tag`` and ``tagged`` (the versions where it sits
    in the tagged-field section; it is in no other place). ``default`` overrides the type's
    default; ``ignorable`` says a non-default value may be silently dropped at a version lacking
    the field (otherwise encoding it raises ``KafkaProtocolError``, as the Java client does).

    Thread-safety: immutable after construction; safe to share.
    """

    __slots__ = (
        "name",
        "type",
        "versions",
        "nullable",
        "tag",
        "tagged",
        "default",
        "ignorable",
        "is_array",
        "element",
        "struct_fields",
    )

    def __init__(
        self,
        name: str,
        type: str | list[Field] | Struct,  # noqa: A002 - name fixed by the definition format
        versions: str = "0+",
        *,
        nullable: str = "none",
        tag: int | None = None,
        tagged: str = "none",
        default: Any = NO_DEFAULT,
        ignorable: bool = False,
    ) -> None:
        """Define a field; see the class docstring for the meaning of each argument."""
        if not isinstance(name, str) or not _SNAKE.match(name):
            raise ValueError(f"field name must be snake_case, got {name!r}")
        self.name: str = name
        self.type: str | list[Field] | Struct = type
        self.versions: VersionRange = VersionRange(versions)
        self.nullable: VersionRange = VersionRange(nullable)
        self.tagged: VersionRange = VersionRange(tagged)
        if tag is not None and (not isinstance(tag, int) or tag < 0):
            raise ValueError(f"field {name}: tag must be a non-negative int, got {tag!r}")
        if tag is None and not self.tagged.empty:
            raise ValueError(f"field {name}: tagged versions given without a tag")
        if tag is not None and self.tagged.empty:
            raise ValueError(f"field {name}: tag given without tagged versions")
        self.tag: int | None = tag
        self.ignorable: bool = bool(ignorable)
        # element: the primitive name of the value or of the array elements, or None for structs.
        self.struct_fields: list[Field] | None = None
        self.element: str | None = None
        if isinstance(type, Struct):
            self.is_array = False
            self.struct_fields = type.fields
        elif isinstance(type, list):
            if not all(isinstance(f, Field) for f in type):
                raise TypeError(f"field {name}: an array-of-struct type must be a list of Field")
            _check_unique(type)
            self.is_array = True
            self.struct_fields = type
        elif isinstance(type, str):
            if type.startswith("[]"):
                self.is_array = True
                self.element = type[2:]
            else:
                self.is_array = False
                self.element = type
            if self.element not in PRIMITIVE_TYPES:
                raise ValueError(f"field {name}: unknown type {type!r}")
            if self.is_array and self.element == "records":
                raise ValueError(f"field {name}: arrays of records are not a Kafka type")
        else:
            raise TypeError(f"field {name}: invalid type {type!r}")
        if default is NO_DEFAULT:
            default = self._type_default()
        self.default: Any = default

    def _type_default(self) -> Any:
        if self.is_array:
            return []
        if self.struct_fields is not None:
            # A single struct defaults to null when it can be null, else to its fields' defaults.
            if not self.nullable.empty:
                return None
            return {f.name: f.fresh_default() for f in self.struct_fields}
        assert self.element is not None
        return _TYPE_DEFAULTS[self.element]

    def fresh_default(self) -> Any:
        """The default value, copied when mutable so callers may change it safely."""
        d = self.default
        if isinstance(d, list):
            return list(d)
        if isinstance(d, dict):
            return {k: (list(v) if isinstance(v, list) else v) for k, v in d.items()}
        return d

    def present_in(self, version: int) -> bool:
        """Whether this field exists at ``version`` (in the body or the tagged section).

        A tagged field exists only where both ``versions`` and ``tagged`` contain the version:
        it is never a regular field.
        """
        if self.tag is not None:
            return self.versions.contains(version) and self.tagged.contains(version)
        return self.versions.contains(version)

    def tagged_in(self, version: int) -> bool:
        """Whether at ``version`` the field lives in the tagged-field section."""
        return (
            self.tag is not None
            and self.tagged.contains(version)
            and self.versions.contains(version)
        )

    def nullable_in(self, version: int) -> bool:
        """Whether the field may be null at ``version``."""
        return self.nullable.contains(version)

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r}, {self.versions.text!r})"


class Api:
    """One Kafka API: its key, name, supported version range, flexible versions and the
    request and response field lists.

    ``Api(1, "Fetch", "0-17", "12+", request=[...], response=[...])``.

    Thread-safety: immutable after construction; safe to share.
    """

    __slots__ = (
        "key",
        "name",
        "versions",
        "flexible",
        "request",
        "response",
        "min_version",
        "max_version",
    )

    def __init__(
        self,
        key: int,
        name: str,
        versions: str,
        flexible: str,
        request: list[Field],
        response: list[Field],
    ) -> None:
        """Define an API from its version ranges (spec strings) and request/response fields."""
        if not isinstance(key, int) or key < 0:
            raise ValueError(f"api key must be a non-negative int, got {key!r}")
        self.key: int = key
        self.name: str = name
        self.versions: VersionRange = VersionRange(versions)
        if self.versions.empty or self.versions.high is None:
            raise ValueError(
                f"api {name}: versions must be a closed range such as '0-12', got {versions!r}"
            )
        self.flexible: VersionRange = VersionRange(flexible)
        for fields in (request, response):
            if not isinstance(fields, list) or not all(isinstance(f, Field) for f in fields):
                raise TypeError(f"api {name}: request and response must be lists of Field")
            _check_unique(fields)
        self.request: list[Field] = request
        self.response: list[Field] = response
        self.min_version: int = self.versions.low
        self.max_version: int = self.versions.high

    def is_flexible(self, version: int) -> bool:
        """Whether ``version`` uses the flexible (compact, tagged-field) encoding."""
        return self.flexible.contains(version)

    def __repr__(self) -> str:
        return f"Api({self.key}, {self.name!r}, {self.versions.text!r})"


def _check_unique(fields: list[Field]) -> None:
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate field names: {dup}")
    tagged = [f for f in fields if f.tag is not None]
    for i, a in enumerate(tagged):
        for b in tagged[i + 1 :]:
            # Two fields may share a tag only if no version carries both.
            if a.tag == b.tag and any(a.tagged_in(v) and b.tagged_in(v) for v in range(128)):
                raise ValueError(f"fields {a.name} and {b.name} share tag {a.tag}")
