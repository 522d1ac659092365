"""Small public value types: partitions, offsets, group metadata and poll results.

``TopicPartition``, ``OffsetAndMetadata``, ``OffsetAndTimestamp`` and ``ConsumerGroupMetadata``
are immutable tuples (cheap, hashable, usable as dict keys). ``Node`` and ``PartitionInfo`` live
in :mod:`kafkaconsumer.metadata`.
``ConsumerRecords`` is what ``KafkaConsumer.poll()`` returns. ``ConsumerRecord`` here is the
protocol every record satisfies; the class the decoders build is ``kafkaconsumer.ConsumerRecord``
(from :mod:`kafkaconsumer.record`, which sits above this module and imports it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

__all__ = [
    "TopicPartition",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "ConsumerGroupMetadata",
    "ConsumerRecords",
    "ConsumerRecord",
]


@runtime_checkable
class ConsumerRecord(Protocol):
    """What a record handed to the user offers, whichever decoder made it (Java
    ``ConsumerRecord``): the type checkers' view of ``kafkaconsumer.ConsumerRecord``.

    At run time ``kafkaconsumer.ConsumerRecord`` is the class of the active decoder (the Cython
    extension's or the pure-Python one); both satisfy this protocol (``tests/record`` checks
    it statically and at run time).

    ``timestamp_type`` is 0 (CreateTime), 1 (LogAppendTime) or -1 (none, magic 0). ``key`` and
    ``value`` are what the deserializers returned (bytes or None without deserializers);
    ``serialized_key_size``/``serialized_value_size`` are -1 for a null key/value. ``headers``
    is a list of ``(str, bytes | None)``; ``leader_epoch`` is None when unknown.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    leader_epoch: int | None
    serialized_key_size: int
    serialized_value_size: int

    @property
    def headers(self) -> list[tuple[str, bytes | None]]:
        """The record's headers, in order."""

    @headers.setter
    def headers(self, value: list[tuple[str, bytes | None]]) -> None: ...

    def as_tuple(self) -> tuple[Any, ...]:
        """All attributes, in declaration order."""


class TopicPartition(NamedTuple):
    """A topic name and a partition number; ``str()`` gives ``"topic-partition"`` as Java."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class _OffsetAndMetadataBase(NamedTuple):
    offset: int
    metadata: str
    leader_epoch: int | None


class OffsetAndMetadata(_OffsetAndMetadataBase):
    """An offset to commit (the next record to read), optional metadata and leader epoch.

    ``metadata=None`` becomes ``""`` and a negative ``leader_epoch`` becomes ``None``, as in
    Java; a negative offset raises ``ValueError``.
    """

    __slots__ = ()

    def __new__(
        cls, offset: int, metadata: str | None = "", leader_epoch: int | None = None
    ) -> OffsetAndMetadata:
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise TypeError(f"offset must be an int, got {offset!r}")
        if offset < 0:
            raise ValueError(f"invalid negative offset {offset}")
        if leader_epoch is not None and leader_epoch < 0:
            leader_epoch = None
        return super().__new__(cls, offset, "" if metadata is None else metadata, leader_epoch)

    @classmethod
    def _of_position(cls, offset: int, leader_epoch: int | None) -> OffsetAndMetadata:
        """For a consumer position (a valid offset): no metadata, and none of the checks of
        the constructor but the epoch's (``poll()`` makes one per partition on every call)."""
        if leader_epoch is not None and leader_epoch < 0:
            leader_epoch = None
        return tuple.__new__(cls, (offset, "", leader_epoch))


class _OffsetAndTimestampBase(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int | None


class OffsetAndTimestamp(_OffsetAndTimestampBase):
    """The result of ``offsets_for_times``: the first offset at or after a timestamp.

    Offset and timestamp must be non-negative (Java checks the same).
    """

    __slots__ = ()

    def __new__(
        cls, offset: int, timestamp: int, leader_epoch: int | None = None
    ) -> OffsetAndTimestamp:
        if offset < 0:
            raise ValueError(f"invalid negative offset {offset}")
        if timestamp < 0:
            raise ValueError(f"invalid negative timestamp {timestamp}")
        if leader_epoch is not None and leader_epoch < 0:
            leader_epoch = None
        return super().__new__(cls, offset, timestamp, leader_epoch)


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's group identity (Java ``ConsumerGroupMetadata``), e.g. for transactional
    producers committing on behalf of a consumer."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class ConsumerRecords:
    """The records one ``poll()`` returned, grouped by partition (Java ``ConsumerRecords``).

    Iterate it for every record (partition by partition, each in offset order); ``len()`` and
    :meth:`count` give the total. ``records(tp)`` gives one partition's list and
    ``records(topic)`` an iterator over one topic's records. ``next_offsets()`` holds, per
    partition, the position after this batch (Java 3.9 ``nextOffsets``): ``poll()`` fills it,
    so ``commit_sync(records.next_offsets())`` commits exactly what was returned.

    Thread-safety: not modified after construction; safe to read from several threads.
    """

    __slots__ = ("_records", "_count", "_next_offsets")

    EMPTY: ClassVar[ConsumerRecords]

    def __init__(
        self,
        records: Mapping[Any, Sequence[ConsumerRecord]] | None = None,
        next_offsets: Mapping[Any, Any] | None = None,
    ) -> None:
        """Group ``records`` (partition -> records; empty lists dropped); ``next_offsets`` maps a
        partition to the offset (and metadata) the next poll would fetch.
        """
        # Partitions with no records are dropped so partitions() matches Java (only those
        # that returned data).
        self._records: dict[TopicPartition, Sequence[ConsumerRecord]] = (
            {tp: recs for tp, recs in records.items() if recs} if records else {}
        )
        self._count = sum(len(recs) for recs in self._records.values())
        self._next_offsets = dict(next_offsets) if next_offsets else {}

    def __iter__(self) -> Iterator[ConsumerRecord]:
        records = self._records
        if len(records) == 1:
            # Most polls return one partition's records (max.poll.records is far below a
            # fetch's): the list's own iterator, without a chain step per record.
            (recs,) = records.values()
            return iter(recs)
        return itertools.chain.from_iterable(records.values())

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __repr__(self) -> str:
        return f"ConsumerRecords(count={self._count}, partitions={len(self._records)})"

    def count(self) -> int:
        """Total number of records."""
        return self._count

    def is_empty(self) -> bool:
        """True when no partition returned records."""
        return self._count == 0

    def partitions(self) -> set[TopicPartition]:
        """The partitions that have records in this result."""
        return set(self._records)

    def records(
        self, tp_or_topic: TopicPartition | str
    ) -> Sequence[ConsumerRecord] | Iterator[ConsumerRecord]:
        """One partition's records (a list, empty when none), or, given a topic name, an
        iterator over all of that topic's records."""
        if isinstance(tp_or_topic, str):
            topic = tp_or_topic
            return itertools.chain.from_iterable(
                recs for tp, recs in self._records.items() if tp[0] == topic
            )
        return self._records.get(tp_or_topic, [])

    def by_partition(self) -> Mapping[TopicPartition, Sequence[ConsumerRecord]]:
        """A read-only view of partition -> records."""
        return self._records

    def next_offsets(self) -> dict[TopicPartition, Any]:
        """Per partition, the offset (OffsetAndMetadata) after the records returned."""
        return dict(self._next_offsets)

    @classmethod
    def _of(
        cls,
        records: dict[TopicPartition, Sequence[ConsumerRecord]],
        count: int,
        next_offsets: dict[TopicPartition, Any],
    ) -> ConsumerRecords:
        """``poll()``'s constructor: ``records`` (no empty lists) holds ``count`` records, and
        both dicts are the caller's to give away (nothing is copied or checked)."""
        out = object.__new__(cls)
        out._records = records
        out._count = count
        out._next_offsets = next_offsets
        return out

    @classmethod
    def from_records(cls, records: Iterable[ConsumerRecord]) -> ConsumerRecords:
        """Group a flat iterable of records by their ``(topic, partition)``."""
        grouped: dict[TopicPartition, list[ConsumerRecord]] = {}
        for rec in records:
            tp = TopicPartition(rec.topic, rec.partition)
            grouped.setdefault(tp, []).append(rec)
        return cls(grouped)


ConsumerRecords.EMPTY = ConsumerRecords()
