"""One partition of a ShareFetch response, waiting to be handed out (Java ``ShareCompletedFetch``
and ``ShareInFlightBatch``).

The broker returns whole record batches but acquires, for this member, only the offset ranges
listed in ``acquired_records`` (each with its delivery count). Only records inside those ranges
are handed out, each carrying its ``delivery_count``; an acquired offset with no deliverable
record (a control record, an offset compaction removed) is acknowledged as a gap without ever
reaching the user. A record whose key or value cannot be deserialized is released (another
delivery may succeed with a fixed deserializer) and the error raised; corrupt data is rejected
(every acquired offset still held in this partition's data) and the error raised.
"""

from __future__ import annotations

import logging
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.errors import RecordDeserializationError
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.record import decode_fetched_records
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["ShareCompletedFetch", "ShareConsumerRecord", "ShareInFlightBatch"]


class ShareConsumerRecord:
    """A record delivered to a share consumer: a ``ConsumerRecord`` plus ``delivery_count``
    (how many times the broker has delivered it, 1 on the first delivery; Java
    ``ConsumerRecord.deliveryCount()``).

    Thread-safety: a plain mutable value; not synchronised.
    """

    __slots__ = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
        "serialized_key_size",
        "serialized_value_size",
        "delivery_count",
    )

    def __init__(self, record: Any, delivery_count: int) -> None:
        """Copy ``record`` (a decoded ``ConsumerRecord``) and add its ``delivery_count``."""
        self.topic: str = record.topic
        self.partition: int = record.partition
        self.offset: int = record.offset
        self.timestamp: int = record.timestamp
        self.timestamp_type: int = record.timestamp_type
        self.key: Any = record.key
        self.value: Any = record.value
        self.headers: list[tuple[str, bytes | None]] = record.headers
        self.leader_epoch: int | None = record.leader_epoch
        self.serialized_key_size: int = record.serialized_key_size
        self.serialized_value_size: int = record.serialized_value_size
        self.delivery_count: int = delivery_count

    def as_tuple(self) -> tuple[Any, ...]:
        """All attributes, in declaration order."""
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return (
            f"ShareConsumerRecord(topic={self.topic!r}, partition={self.partition}, "
            f"offset={self.offset}, delivery_count={self.delivery_count}, key={self.key!r}, "
            f"value={self.value!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareConsumerRecord):
            return NotImplemented
        return self.as_tuple() == other.as_tuple()

    __hash__ = None  # type: ignore[assignment]


class ShareInFlightBatch:
    """What one hand-out of a partition produced: records for the user, acknowledgements made
    on the user's behalf (gaps, released or rejected records) and an error to raise.

    Thread-safety: not thread-safe; built and used on the user's thread.
    """

    __slots__ = ("tp", "records", "acknowledgements", "error")

    def __init__(self, tp: TopicPartition) -> None:
        """An empty batch of ``tp``."""
        self.tp = tp
        self.records: list[ShareConsumerRecord] = []
        self.acknowledgements = Acknowledgements()
        self.error: Errors.KafkaError | None = None


class ShareCompletedFetch:
    """Buffered data of one partition from one ShareFetch response.

    Thread-safety: not thread-safe; created on the thread that reads responses, then used only
    by the thread that calls ``poll()`` (the share fetch buffer hands it over under its lock).
    """

    __slots__ = (
        "tp",
        "topic_id",
        "node",
        "partition_data",
        "acquired",
        "_offsets",
        "_next",
        "is_consumed",
        "_records",
        "_pos",
        "_initialized",
        "_pending_error",
        "received_ms",
    )

    def __init__(
        self,
        tp: TopicPartition,
        topic_id: Any,
        node: int,
        partition_data: dict[str, Any],
        received_ms: int = 0,
    ) -> None:
        """Wrap ``partition_data`` of ``tp`` from broker ``node``; nothing decoded yet."""
        self.tp = tp
        self.topic_id = topic_id
        self.node = node
        self.partition_data = partition_data
        #: When the response arrived (the acquisition locks started about then).
        self.received_ms = received_ms
        #: offset -> delivery count of every offset acquired by this response.
        self.acquired: dict[int, int] = {}
        for rng in partition_data.get("acquired_records") or ():
            count = int(rng["delivery_count"])
            for offset in range(int(rng["first_offset"]), int(rng["last_offset"]) + 1):
                self.acquired[offset] = count
        # The acquired offsets ascending; those before _next are handed out or settled.
        self._offsets = sorted(self.acquired)
        self._next = 0
        self.is_consumed = False
        self._records: list[Any] = []
        self._pos = 0
        self._initialized = False
        self._pending_error: Errors.KafkaError | None = None

    def _initialize(self, check_crcs: bool) -> Errors.KafkaError | None:
        self._initialized = True
        if not self.acquired:
            return None
        raw = self.partition_data.get("records")
        try:
            result = decode_fetched_records(
                raw, self.tp.topic, self.tp.partition, self._offsets[0], check_crcs=check_crcs
            )
        except Errors.KafkaError as exc:
            return exc
        acquired = self.acquired
        self._records = [r for r in result.records if r.offset in acquired]
        return None

    def fetch_records(
        self,
        max_records: int,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        *,
        check_crcs: bool = True,
    ) -> ShareInFlightBatch:
        """Hand out up to ``max_records`` acquired records; gaps before and between them are
        acknowledged in the batch. When the data is used up, every acquired offset left without
        a record is a gap too."""
        batch = ShareInFlightBatch(self.tp)
        if self._pending_error is not None:
            batch.error = self._pending_error
            self._pending_error = None
            return batch
        if self.is_consumed:
            return batch
        if not self._initialized:
            error = self._initialize(check_crcs)
            if error is not None:
                # The data cannot be read: none of it will ever be deliverable.
                for offset in self._offsets[self._next :]:
                    batch.acknowledgements.add(offset, AcknowledgeType.REJECT)
                self._next = len(self._offsets)
                batch.error = error
                self.is_consumed = True
                return batch
        offsets = self._offsets
        records = self._records
        topic = self.tp.topic
        while len(batch.records) < max_records and self._pos < len(records):
            rec = records[self._pos]
            self._pos += 1
            # Acquired offsets below this record have no record of their own: gaps.
            while offsets[self._next] < rec.offset:
                batch.acknowledgements.add_gap(offsets[self._next])
                self._next += 1
            self._next += 1
            count = self.acquired[rec.offset]
            is_key = True
            try:
                if key_deserializer is not None and rec.key is not None:
                    rec.key = key_deserializer.deserialize(topic, rec.key, rec.headers)
                is_key = False
                if value_deserializer is not None and rec.value is not None:
                    rec.value = value_deserializer.deserialize(topic, rec.value, rec.headers)
            except Exception as exc:  # noqa: BLE001 - any user deserializer failure
                batch.acknowledgements.add(rec.offset, AcknowledgeType.RELEASE)
                error = RecordDeserializationError(
                    topic, self.tp.partition, rec.offset, is_key, exc
                )
                if batch.records:
                    self._pending_error = error
                else:
                    batch.error = error
                return batch
            batch.records.append(ShareConsumerRecord(rec, count))
        if self._pos >= len(records):
            for offset in offsets[self._next :]:
                batch.acknowledgements.add_gap(offset)
            self._next = len(offsets)
            self.is_consumed = True
            self._records = []
        return batch

    def drain(self) -> list[int]:
        """Drop what is left; returns the acquired offsets that were never handed out (to be
        released so that another member gets them)."""
        left = self._offsets[self._next :]
        self._next = len(self._offsets)
        self._records = []
        self.is_consumed = True
        return left
