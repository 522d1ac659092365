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

import array
import bisect
import logging
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.errors import RecordDeserializationError
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.record import (
    ShareConsumerRecord,
    decode_fetched_records,
    iter_batches,
    share_records,
)
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["ShareCompletedFetch", "ShareConsumerRecord", "ShareInFlightBatch"]

_offset_of = attrgetter("offset")


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    """Ascending ``offsets`` as runs ``(first, last)`` of consecutive values."""
    out: list[tuple[int, int]] = []
    for offset in offsets:
        if out and out[-1][1] + 1 == offset:
            out[-1] = (out[-1][0], offset)
        else:
            out.append((offset, offset))
    return out


def _runs_with_counts(offsets: list[int], counts: dict[int, int]) -> list[tuple[int, int, int]]:
    """Ascending ``offsets`` as runs ``(first, last, count)`` of consecutive values with one
    delivery count."""
    out: list[tuple[int, int, int]] = []
    for offset in offsets:
        count = counts[offset]
        if out and out[-1][1] + 1 == offset and out[-1][2] == count:
            out[-1] = (out[-1][0], offset, count)
        else:
            out.append((offset, offset, count))
    return out


class ShareInFlightBatch:
    """What one hand-out of a partition produced: records for the user, acknowledgements made
    on the user's behalf (gaps, released or rejected records) and an error to raise.

    Thread-safety: not thread-safe; built and used on the user's thread.
    """

    __slots__ = ("tp", "records", "handed", "columns", "acknowledgements", "error")

    def __init__(self, tp: TopicPartition) -> None:
        """An empty batch of ``tp``."""
        self.tp = tp
        self.records: list[ShareConsumerRecord] = []
        #: The offsets of ``records`` as ascending runs ``(first, last)``, inclusive.
        self.handed: list[tuple[int, int]] = []
        #: From :meth:`ShareCompletedFetch.fetch_columns`: (record batch of
        #: ``record.arrow.SCHEMA_WITH_HEADERS``, the rows' leader epochs, their offsets, their
        #: delivery counts as an ``int32`` array), or None.
        self.columns: tuple[Any, Any, list[int], Any] | None = None
        self.acknowledgements = Acknowledgements()
        self.error: Errors.KafkaError | None = None


def _int32_array(values: array.array[int]) -> Any:
    """``values`` (typecode ``i``) as a ``pyarrow`` int32 array, from their buffer.

    Not ``pa.array(list)``: its first call in a process imports pandas when installed (a
    quarter of a second of CPU, in the first ``poll_arrow()``)."""
    import pyarrow as pa

    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])


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
        "_ranges",
        "_counts",
        "_acquired",
        "_offsets",
        "_next",
        "is_consumed",
        "_records",
        "_batch_ends",
        "_columns",
        "_row_offsets",
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
        ranges = sorted(
            (int(r["first_offset"]), int(r["last_offset"]), int(r["delivery_count"]))
            for r in partition_data.get("acquired_records") or ()
        )
        if any(ranges[i][0] <= ranges[i - 1][1] for i in range(1, len(ranges))):
            # Overlapping ranges (brokers send none): the later one wins for an offset.
            by_offset = self._acquired_map(ranges)
            offsets = sorted(by_offset)
            ranges = _runs_with_counts(offsets, by_offset)
        else:
            offsets = []
            for first, last, _count in ranges:
                offsets.extend(range(first, last + 1))
        # The acquired offsets ascending; those before _next are handed out or settled.
        self._offsets = offsets
        # (first, last, delivery count) of each acquired run, ascending and disjoint.
        self._ranges = ranges
        self._counts = {count for _f, _l, count in ranges}
        self._acquired: dict[int, int] | None = None
        self._next = 0
        self.is_consumed = False
        self._records: list[Any] = []
        self._batch_ends: list[int] = []
        # Decoded as Arrow columns instead (poll_arrow()): (record batch of the acquired rows,
        # their leader epochs) and each row's offset; None while decoded as objects.
        self._columns: tuple[Any, Any] | None = None
        self._row_offsets: list[int] = []
        self._pos = 0
        self._initialized = False
        self._pending_error: Errors.KafkaError | None = None

    @staticmethod
    def _acquired_map(ranges: list[tuple[int, int, int]]) -> dict[int, int]:
        out: dict[int, int] = {}
        for first, last, count in ranges:
            out.update(dict.fromkeys(range(first, last + 1), count))
        return out

    @property
    def acquired(self) -> dict[int, int]:
        """offset -> delivery count of every offset acquired by this response."""
        if self._acquired is None:
            self._acquired = self._acquired_map(self._ranges)
        return self._acquired

    def _initialize(self, check_crcs: bool) -> Errors.KafkaError | None:
        self._initialized = True
        if not self._offsets:
            return None
        raw = self.partition_data.get("records")
        try:
            result = decode_fetched_records(
                raw, self.tp.topic, self.tp.partition, self._offsets[0], check_crcs=check_crcs
            )
        except Errors.KafkaError as exc:
            return exc
        records = result.records
        # Only the acquired runs' records: slices found by bisection (offsets ascend).
        kept: list[Any] = []
        for first, last, _count in self._ranges:
            lo = bisect.bisect_left(records, first, key=_offset_of)
            hi = bisect.bisect_right(records, last, lo, key=_offset_of)
            kept.extend(records[lo:hi])
        self._records = kept
        if raw:
            self._batch_ends = [b.last_offset for b in iter_batches(raw)]
        return None

    def _begin(
        self, initialize: Callable[[bool], Errors.KafkaError | None], check_crcs: bool
    ) -> tuple[ShareInFlightBatch, bool]:
        """The start of a hand-out: a new batch, and True when it is already the answer (an
        error kept from before, the data used up, or a failed first decode)."""
        batch = ShareInFlightBatch(self.tp)
        if self._pending_error is not None:
            batch.error = self._pending_error
            self._pending_error = None
            return batch, True
        if self.is_consumed:
            return batch, True
        if not self._initialized:
            error = initialize(check_crcs)
            if error is not None:
                return self._reject_all(batch, error), True
        return batch, False

    def fetch_records(
        self,
        max_records: int,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        *,
        check_crcs: bool = True,
        whole_batches: bool = False,
    ) -> ShareInFlightBatch:
        """Hand out up to ``max_records`` acquired records (with ``whole_batches``, then on to
        the end of the record batch the last one is in, as Java's share consumer does under
        ``share.acquire.mode=batch_optimized``); gaps before and between them are
        acknowledged in the batch. When the data is used up, every acquired offset left
        without a record is a gap too."""
        batch, done = self._begin(self._initialize, check_crcs)
        if done:
            return batch
        if self._columns is not None:
            # Decoded as columns by an earlier poll_arrow(): the rows become records.
            return self._rows_as_records(
                self.fetch_columns(max_records, check_crcs=check_crcs, whole_batches=whole_batches)
            )
        records = self._records
        stop = min(self._pos + max(max_records, 0), len(records))
        if whole_batches and self._pos < stop < len(records):
            stop = self._batch_stop(stop)
        if key_deserializer is None and value_deserializer is None:
            self._hand_out(batch, stop)
        else:
            self._hand_out_deserialized(batch, stop, key_deserializer, value_deserializer)
        if self._pos >= len(records) and batch.error is None and self._pending_error is None:
            for offset in self._offsets[self._next :]:
                batch.acknowledgements.add_gap(offset)
            self._next = len(self._offsets)
            self.is_consumed = True
            self._records = []
        return batch

    def _batch_stop(self, stop: int) -> int:
        # Past ``stop`` (exclusive) to the end of the record batch of the record before it.
        ends = self._batch_ends
        if self._columns is not None:
            rows = self._row_offsets
            i = bisect.bisect_left(ends, rows[stop - 1])
            return stop if i == len(ends) else bisect.bisect_right(rows, ends[i], stop)
        records = self._records
        i = bisect.bisect_left(ends, records[stop - 1].offset)
        if i == len(ends):
            return stop
        return bisect.bisect_right(records, ends[i], stop, key=_offset_of)

    def _count_of(self, offset: int) -> int:
        if len(self._counts) == 1:
            return next(iter(self._counts))
        return self.acquired[offset]

    def _hand_out(self, batch: ShareInFlightBatch, stop: int) -> None:
        # Records pos..stop with their delivery counts: no Python work per record beyond
        # making it, unless gaps lie among them.
        records = self._records
        chunk = records[self._pos : stop]
        self._pos = stop
        if not chunk:
            return
        offsets = self._offsets
        first_index = self._next
        last_index = first_index + len(chunk) - 1
        if last_index < len(offsets) and offsets[last_index] == chunk[-1].offset:
            # As many acquired offsets as records up to the last one: no gaps among them.
            self._next = last_index + 1
            batch.handed = self._runs_between(offsets[first_index], chunk[-1].offset)
        else:
            for rec in chunk:
                while offsets[self._next] < rec.offset:
                    batch.acknowledgements.add_gap(offsets[self._next])
                    self._next += 1
                self._next += 1
            batch.handed = _runs([rec.offset for rec in chunk])
        if len(self._counts) == 1:
            count = next(iter(self._counts))
            batch.records = share_records(records, stop - len(chunk), stop, count)
        else:
            acquired = self.acquired
            batch.records = [ShareConsumerRecord(rec, acquired[rec.offset]) for rec in chunk]

    def _runs_between(self, low: int, high: int) -> list[tuple[int, int]]:
        # The acquired runs clipped to low..high.
        out: list[tuple[int, int]] = []
        for first, last, _count in self._ranges:
            if last < low:
                continue
            if first > high:
                break
            out.append((max(first, low), min(last, high)))
        return out

    def _hand_out_deserialized(
        self, batch: ShareInFlightBatch, stop: int, key_deserializer: Any, value_deserializer: Any
    ) -> None:
        offsets = self._offsets
        records = self._records
        topic = self.tp.topic
        while self._pos < stop:
            rec = records[self._pos]
            self._pos += 1
            # Acquired offsets below this record have no record of their own: gaps.
            while offsets[self._next] < rec.offset:
                batch.acknowledgements.add_gap(offsets[self._next])
                self._next += 1
            self._next += 1
            count = self._count_of(rec.offset)
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
                break
            batch.records.append(ShareConsumerRecord(rec, count))
        batch.handed = _runs([rec.offset for rec in batch.records])

    def _reject_all(
        self, batch: ShareInFlightBatch, error: Errors.KafkaError
    ) -> ShareInFlightBatch:
        # The data cannot be read: none of it will ever be deliverable.
        for offset in self._offsets[self._next :]:
            batch.acknowledgements.add(offset, AcknowledgeType.REJECT)
        self._next = len(self._offsets)
        batch.error = error
        self.is_consumed = True
        return batch

    # ------------------------------------------------------------------ Arrow columns
    def fetch_columns(
        self, max_records: int, *, check_crcs: bool = True, whole_batches: bool = False
    ) -> ShareInFlightBatch:
        """:meth:`fetch_records` for ``poll_arrow()``: the rows in ``batch.columns``, decoded
        by the Arrow column decoder (no object per record), with a ``delivery_count`` array
        built from the acquired ranges. Keys and values stay raw bytes. Needs ``pyarrow``."""
        batch, done = self._begin(self._initialize_columns, check_crcs)
        if done:
            return batch
        if self._columns is None:
            # Decoded as objects by an earlier poll(): the records become rows.
            return self._records_as_rows(
                self.fetch_records(max_records, check_crcs=check_crcs, whole_batches=whole_batches)
            )
        rows = self._row_offsets
        start = self._pos
        stop = min(start + max(max_records, 0), len(rows))
        if whole_batches and start < stop < len(rows):
            stop = self._batch_stop(stop)
        self._pos = stop
        if stop > start:
            offsets = self._offsets
            handed = rows[start:stop]
            last_index = self._next + len(handed) - 1
            if last_index < len(offsets) and offsets[last_index] == handed[-1]:
                batch.handed = self._runs_between(offsets[self._next], handed[-1])
                self._next = last_index + 1
            else:
                for offset in handed:
                    while offsets[self._next] < offset:
                        batch.acknowledgements.add_gap(offsets[self._next])
                        self._next += 1
                    self._next += 1
                batch.handed = _runs(handed)
            record_batch, epochs = self._columns
            batch.columns = (
                record_batch.slice(start, stop - start),
                epochs.slice(start, stop - start),
                handed,
                self._delivery_counts(handed),
            )
        if self._pos >= len(rows):
            for offset in self._offsets[self._next :]:
                batch.acknowledgements.add_gap(offset)
            self._next = len(self._offsets)
            self.is_consumed = True
            self._columns = None
            self._row_offsets = []
        return batch

    def _initialize_columns(self, check_crcs: bool) -> Errors.KafkaError | None:
        import pyarrow as pa

        from kafkaconsumer.record import arrow

        self._initialized = True
        if not self._offsets:
            return None
        raw = self.partition_data.get("records")
        try:
            result = arrow.decode_fetched_arrow(
                raw, self.tp.topic, self.tp.partition, self._offsets[0], check_crcs=check_crcs
            )
        except Errors.KafkaError as exc:
            return exc
        record_batch, epochs = result.batch, result.leader_epochs
        offsets: list[int] = record_batch.column("offset").to_pylist()
        # Only the acquired runs' rows (offsets ascend).
        spans = []
        for first, last, _count in self._ranges:
            lo = bisect.bisect_left(offsets, first)
            hi = bisect.bisect_right(offsets, last, lo)
            if hi > lo:
                spans.append((lo, hi))
        if spans != [(0, len(offsets))]:
            record_batch = (
                arrow.concat_batches([record_batch.slice(lo, hi - lo) for lo, hi in spans])
                if spans
                else record_batch.slice(0, 0)
            )
            epochs = (
                pa.concat_arrays([epochs.slice(lo, hi - lo) for lo, hi in spans])
                if spans
                else epochs.slice(0, 0)
            )
            offsets = [offset for lo, hi in spans for offset in offsets[lo:hi]]
        self._columns = (record_batch, epochs)
        self._row_offsets = offsets
        if raw:
            self._batch_ends = [b.last_offset for b in iter_batches(raw)]
        return None

    def _delivery_counts(self, offsets: list[int]) -> Any:
        if len(self._counts) == 1:
            return _int32_array(array.array("i", [next(iter(self._counts))]) * len(offsets))
        acquired = self.acquired
        return _int32_array(array.array("i", [acquired[offset] for offset in offsets]))

    def _records_as_rows(self, batch: ShareInFlightBatch) -> ShareInFlightBatch:

        from kafkaconsumer.record import arrow

        if batch.records:
            record_batch, epochs = arrow.records_to_arrow(
                batch.records, self.tp.topic, self.tp.partition
            )
            counts = _int32_array(array.array("i", [r.delivery_count for r in batch.records]))
            batch.columns = (record_batch, epochs, [r.offset for r in batch.records], counts)
            batch.records = []
        return batch

    def _rows_as_records(self, batch: ShareInFlightBatch) -> ShareInFlightBatch:
        from kafkaconsumer.record import ConsumerRecord, arrow

        if batch.columns is not None:
            record_batch, epochs, _offsets, counts = batch.columns
            plain = arrow.arrow_to_records(record_batch, epochs, ConsumerRecord)
            batch.records = [
                ShareConsumerRecord(rec, count)
                for rec, count in zip(plain, counts.to_pylist(), strict=True)
            ]
            batch.columns = None
        return batch

    def remaining(self) -> int:
        """How many acquired offsets are not handed out or settled yet."""
        return len(self._offsets) - self._next

    def drain(self) -> list[int]:
        """Drop what is left; returns the acquired offsets that were never handed out (to be
        released so that another member gets them)."""
        left = self._offsets[self._next :]
        self._next = len(self._offsets)
        self._records = []
        self.is_consumed = True
        return left
