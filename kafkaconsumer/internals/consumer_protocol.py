"""The embedded "consumer" group protocol: Subscription and Assignment bytes (Java ``ConsumerProtocol``).

The group coordinator treats the JoinGroup protocol metadata and the SyncGroup assignments as
opaque bytes; consumers agree on this layout among themselves. Every blob starts with an
``int16`` version followed by the fields of that version, in order (big-endian, non-flexible
encoding: ``string`` = int16 length + UTF-8, ``bytes`` = int32 length + data with -1 for null,
arrays = int32 count + elements).

Subscription (``ConsumerProtocolSubscription``)::

    v0: Topics [string], UserData nullable bytes
    v1: + OwnedPartitions [Topic string, Partitions [int32]]
    v2: + GenerationId int32 (default -1)
    v3: + RackId nullable string (default null)

Assignment (``ConsumerProtocolAssignment``; v0-v3 share one layout)::

    AssignedPartitions [Topic string, Partitions [int32]], UserData nullable bytes

Compatibility rule (Java's): a blob whose version is newer than the newest we know is decoded
with our newest layout, and the bytes after the fields we know are ignored; so new versions may
only append fields. A negative version or truncated/malformed bytes raise
:class:`~kafkaconsumer.errors.KafkaProtocolError`.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "PROTOCOL_TYPE",
    "SUBSCRIPTION_MAX_VERSION",
    "ASSIGNMENT_MAX_VERSION",
    "DEFAULT_GENERATION",
    "Subscription",
    "Assignment",
    "encode_subscription",
    "decode_subscription",
    "encode_assignment",
    "decode_assignment",
    "read_version",
]

#: The JoinGroup ``protocol_type`` of consumer groups.
PROTOCOL_TYPE = "consumer"
#: Newest Subscription layout we read and write.
SUBSCRIPTION_MAX_VERSION = 3
#: Newest Assignment version we write (all versions share the v0 layout).
ASSIGNMENT_MAX_VERSION = 3
#: Generation id meaning "not known / not a member" (Java ``DEFAULT_GENERATION``).
DEFAULT_GENERATION = -1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _tp_tuple(partitions: Iterable[TopicPartition], what: str) -> tuple[TopicPartition, ...]:
    out = []
    for tp in partitions:
        if not isinstance(tp, tuple) or len(tp) != 2:
            raise TypeError(f"{what} must hold TopicPartition(topic, partition), got {tp!r}")
        topic, partition = tp
        if (
            not isinstance(topic, str)
            or not isinstance(partition, int)
            or isinstance(partition, bool)
        ):
            raise TypeError(f"{what} must hold TopicPartition(str, int), got {tp!r}")
        out.append(tp if isinstance(tp, TopicPartition) else TopicPartition(topic, partition))
    return tuple(out)


def _check_user_data(user_data: object) -> bytes | None:
    if user_data is None:
        return None
    if isinstance(user_data, (bytes, bytearray, memoryview)):
        return bytes(user_data)
    raise TypeError(f"user_data must be bytes or None, got {type(user_data).__name__}")


@dataclass(frozen=True)
class Subscription:
    """One member's JoinGroup metadata: what it subscribes to and what it owns now.

    ``generation_id`` is -1 when unknown (v0/v1 blobs, or a member that never joined).
    ``group_instance_id`` is NOT encoded: the coordinator fills it from the JoinGroup response
    (static members sort first in range and round-robin, as in Java).
    Sequences given as lists are stored as tuples; the object is immutable.

    Thread-safety: immutable; safe to share.
    """

    topics: Sequence[str]
    user_data: bytes | None = None
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        topics = self.topics
        if isinstance(topics, (str, bytes)):
            raise TypeError("topics must be a sequence of topic names, not a single string")
        topics_t = tuple(topics)
        for t in topics_t:
            if not isinstance(t, str):
                raise TypeError(f"topic names must be str, got {t!r}")
        object.__setattr__(self, "topics", topics_t)
        object.__setattr__(self, "user_data", _check_user_data(self.user_data))
        object.__setattr__(
            self, "owned_partitions", _tp_tuple(self.owned_partitions, "owned_partitions")
        )
        if not isinstance(self.generation_id, int) or isinstance(self.generation_id, bool):
            raise TypeError(f"generation_id must be int, got {self.generation_id!r}")
        if self.rack_id is not None and not isinstance(self.rack_id, str):
            raise TypeError(f"rack_id must be str or None, got {self.rack_id!r}")


@dataclass(frozen=True)
class Assignment:
    """The partitions (and assignor user data) the leader gives one member.

    Thread-safety: immutable; safe to share.
    """

    partitions: Sequence[TopicPartition] = ()
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", _tp_tuple(self.partitions, "partitions"))
        object.__setattr__(self, "user_data", _check_user_data(self.user_data))


# -- encoding -----------------------------------------------------------------------------------


def _put_string(out: bytearray, s: str) -> None:
    raw = s.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string too long for the consumer protocol ({len(raw)} bytes)")
    out += _I16.pack(len(raw))
    out += raw


def _put_nullable_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I16.pack(-1)
    else:
        _put_string(out, s)


def _put_nullable_bytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        out += _I32.pack(-1)
    else:
        out += _I32.pack(len(b))
        out += b


def _put_int32(out: bytearray, value: int, what: str) -> None:
    try:
        out += _I32.pack(value)
    except struct.error:
        raise ValueError(f"{what} {value} does not fit in int32") from None


def _put_topic_partitions(out: bytearray, partitions: Sequence[TopicPartition]) -> None:
    # Group by topic in first-seen order (as Java does), keeping each topic's partition order,
    # so a list already grouped by topic round-trips unchanged.
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    out += _I32.pack(len(grouped))
    for topic, parts in grouped.items():
        _put_string(out, topic)
        out += _I32.pack(len(parts))
        for p in parts:
            _put_int32(out, p, "partition")


def _check_version(version: int, max_version: int, what: str) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise TypeError(f"{what} version must be int, got {version!r}")
    if version < 0 or version > max_version:
        raise ValueError(f"{what} version must be in 0..{max_version}, got {version}")


def encode_subscription(
    subscription: Subscription, version: int = SUBSCRIPTION_MAX_VERSION
) -> bytes:
    """Encode ``subscription`` at ``version`` (0..3); fields the version lacks are dropped."""
    if not isinstance(subscription, Subscription):
        raise TypeError(f"expected Subscription, got {type(subscription).__name__}")
    _check_version(version, SUBSCRIPTION_MAX_VERSION, "subscription")
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(subscription.topics))
    for topic in subscription.topics:
        _put_string(out, topic)
    _put_nullable_bytes(out, subscription.user_data)
    if version >= 1:
        _put_topic_partitions(out, subscription.owned_partitions)
    if version >= 2:
        _put_int32(out, subscription.generation_id, "generation_id")
    if version >= 3:
        _put_nullable_string(out, subscription.rack_id)
    return bytes(out)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_MAX_VERSION) -> bytes:
    """Encode ``assignment`` at ``version`` (0..3; the layout is the same for all of them)."""
    if not isinstance(assignment, Assignment):
        raise TypeError(f"expected Assignment, got {type(assignment).__name__}")
    _check_version(version, ASSIGNMENT_MAX_VERSION, "assignment")
    out = bytearray(_I16.pack(version))
    _put_topic_partitions(out, assignment.partitions)
    _put_nullable_bytes(out, assignment.user_data)
    return bytes(out)


# -- decoding -----------------------------------------------------------------------------------


class _Reader:
    """Bounds-checked big-endian reader; every failure is a KafkaProtocolError.

    Thread-safety: not thread-safe; one reader per decode call.
    """

    __slots__ = ("_buf", "_pos", "_what")

    def __init__(self, data: bytes | bytearray | memoryview, what: str) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise KafkaProtocolError(f"{what}: expected bytes, got {type(data).__name__}")
        self._buf = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
        self._pos = 0
        self._what = what

    def _need(self, n: int, field_name: str) -> None:
        if n < 0 or self._pos + n > len(self._buf):
            raise KafkaProtocolError(
                f"{self._what}: truncated while reading {field_name} "
                f"(need {n} bytes at offset {self._pos}, have {len(self._buf) - self._pos})"
            )

    def remaining(self) -> int:
        return len(self._buf) - self._pos

    def int16(self, field_name: str) -> int:
        self._need(2, field_name)
        (v,) = _I16.unpack_from(self._buf, self._pos)
        self._pos += 2
        return int(v)

    def int32(self, field_name: str) -> int:
        self._need(4, field_name)
        (v,) = _I32.unpack_from(self._buf, self._pos)
        self._pos += 4
        return int(v)

    def _sized(self, n: int, field_name: str) -> bytes | None:
        """The ``n`` bytes after a length prefix; None for the null length -1."""
        if n == -1:
            return None
        if n < 0:
            raise KafkaProtocolError(f"{self._what}: invalid length {n} for {field_name}")
        self._need(n, field_name)
        raw = bytes(self._buf[self._pos : self._pos + n])
        self._pos += n
        return raw

    def nullable_string(self, field_name: str) -> str | None:
        raw = self._sized(self.int16(field_name), field_name)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KafkaProtocolError(f"{self._what}: {field_name} is not valid UTF-8") from exc

    def string(self, field_name: str) -> str:
        s = self.nullable_string(field_name)
        if s is None:
            raise KafkaProtocolError(f"{self._what}: non-nullable {field_name} was null")
        return s

    def nullable_bytes(self, field_name: str) -> bytes | None:
        return self._sized(self.int32(field_name), field_name)

    def array_len(self, field_name: str, min_element_size: int) -> int:
        n = self.int32(field_name)
        if n < 0:
            # -1 is a null array; none of our arrays is nullable.
            raise KafkaProtocolError(
                f"{self._what}: non-nullable array {field_name} has length {n}"
            )
        # Refuse counts the remaining bytes cannot hold, before allocating anything.
        if n * min_element_size > self.remaining():
            raise KafkaProtocolError(
                f"{self._what}: array {field_name} claims {n} elements but only "
                f"{self.remaining()} bytes remain"
            )
        return n

    def topic_partitions(self, field_name: str) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for _ in range(self.array_len(field_name, 6)):
            topic = self.string(f"{field_name}.topic")
            for _ in range(self.array_len(f"{field_name}.partitions", 4)):
                out.append(TopicPartition(topic, self.int32(f"{field_name}.partitions")))
        return out


def read_version(data: bytes | bytearray | memoryview) -> int:
    """The int16 version that starts a Subscription or Assignment blob."""
    return _Reader(data, "consumer protocol").int16("version")


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Decode JoinGroup member metadata of the consumer protocol (any version >= 0)."""
    r = _Reader(data, "subscription")
    version = r.int16("version")
    if version < 0:
        raise KafkaProtocolError(f"subscription: unsupported version {version}")
    # Newer versions only append fields: read what we know, ignore the rest.
    v = min(version, SUBSCRIPTION_MAX_VERSION)
    topics = [r.string("topics") for _ in range(r.array_len("topics", 2))]
    user_data = r.nullable_bytes("user_data")
    owned: list[TopicPartition] = []
    generation_id = DEFAULT_GENERATION
    rack_id: str | None = None
    if v >= 1:
        owned = r.topic_partitions("owned_partitions")
    if v >= 2:
        generation_id = r.int32("generation_id")
    if v >= 3:
        rack_id = r.nullable_string("rack_id")
    return Subscription(
        topics=tuple(topics),
        user_data=user_data,
        owned_partitions=tuple(owned),
        generation_id=generation_id,
        rack_id=rack_id,
    )


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Decode a SyncGroup member assignment of the consumer protocol (any version >= 0).

    An empty blob (what a coordinator hands a member the leader gave nothing) decodes to an
    empty Assignment, as the Java consumer treats it.
    """
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data) == 0:
        return Assignment()
    r = _Reader(data, "assignment")
    version = r.int16("version")
    if version < 0:
        raise KafkaProtocolError(f"assignment: unsupported version {version}")
    partitions = r.topic_partitions("assigned_partitions")
    user_data = r.nullable_bytes("user_data")
    return Assignment(partitions=tuple(partitions), user_data=user_data)
