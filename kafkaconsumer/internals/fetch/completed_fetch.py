"""One partition of a fetch response, waiting to be handed to the user (Java ``CompletedFetch``).

The raw ``records`` bytes are decoded only when the partition reaches the head of the buffer, so
at most one partition's worth of record objects exists at a time beyond what the user holds.
Records are handed out as list slices (``max.poll.records`` at a time) with no per-record work
unless a key or value deserializer is configured.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkaconsumer.errors import RecordDeserializationError
from kafkaconsumer.record import next_offset_after_batches
from kafkaconsumer.structs import TopicPartition

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import FetchResponseResponsePartition

logger = logging.getLogger(__name__)

__all__ = ["CompletedFetch", "FetchMetricsAggregator"]


def _carries_nothing(part: FetchResponseResponsePartition, size: int) -> bool:
    if size or part.get("error_code", 0):
        return False
    replica = part.get("preferred_read_replica", -1)
    if replica is not None and replica >= 0:
        return False
    diverging = part.get("diverging_epoch")
    return not diverging or diverging.get("epoch", -1) < 0


class FetchMetricsAggregator:
    """The bytes and records of one fetch response, recorded in the fetch metrics once every
    partition of it is handed out or dropped (Java ``FetchMetricsAggregator``): the fetch size
    and records-per-request metrics are per response, and one recording per response instead
    of one per partition saves most of their cost with many partitions.

    Thread-safety: not thread-safe; used by the thread that calls ``poll()``.
    """

    __slots__ = ("_metrics", "_pending", "_per_topic")

    def __init__(self, metrics: Any, partitions: Iterable[TopicPartition]) -> None:
        """Wait for each of ``partitions``, then record into ``metrics`` (a
        ``FetchManagerMetrics``)."""
        self._metrics = metrics
        self._pending = set(partitions)
        self._per_topic: dict[str, tuple[int, int]] = {}

    def record(self, tp: TopicPartition, nbytes: int, nrecords: int) -> None:
        """``tp``'s share is done; the last one records the response."""
        pending = self._pending
        if tp not in pending:
            return
        pending.discard(tp)
        total = self._per_topic.get(tp.topic, (0, 0))
        self._per_topic[tp.topic] = (total[0] + nbytes, total[1] + nrecords)
        if not pending:
            self._metrics.record_fetched(self._per_topic)


class CompletedFetch:
    """Buffered data of one partition from one fetch response.

    ``next_fetch_offset`` starts at the offset the request asked for and moves past every record
    handed out, and past filtered control/aborted batches when ``fetch_records`` reaches the end
    (also when there was no record at all); the fetcher compares it with the subscription
    position before each hand-out to drop stale data, and moves the position to it after.

    Thread-safety: not thread-safe; created under the fetch buffer's lock and then used only by the
    thread that calls ``poll()``.
    """

    __slots__ = (
        "tp",
        "partition_data",
        "fetch_offset",
        "node",
        "next_fetch_offset",
        "last_epoch",
        "initialized",
        "is_consumed",
        "records",
        "_pos",
        "_end_offset",
        "_pending_error",
        "size_in_bytes",
        "records_total",
        "metrics_recorded",
        "_end_hint",
        "buffered_bytes",
        "predecoded",
        "prepared",
        "aggregator",
        "carries_nothing",
    )

    def __init__(
        self,
        tp: TopicPartition,
        partition_data: FetchResponseResponsePartition,
        fetch_offset: int,
        node: int,
    ) -> None:
        """Wrap ``partition_data`` of ``tp`` from a fetch sent at ``fetch_offset`` to broker
        ``node``; nothing is decoded yet.
        """
        self.tp = tp
        #: The decoded response dict of this partition (error code, watermarks, records).
        self.partition_data = partition_data
        self.fetch_offset = fetch_offset
        #: The broker the data came from (the leader or a preferred read replica).
        self.node = node
        self.next_fetch_offset = fetch_offset
        self.last_epoch: int | None = None
        self.initialized = False
        self.is_consumed = False
        self.records: list[Any] = []
        self._pos = 0
        self._end_offset = fetch_offset
        self._pending_error: RecordDeserializationError | None = None
        raw = partition_data.get("records")
        self.size_in_bytes = len(raw) if raw is not None else 0
        #: Whether the broker answered with nothing but watermarks: no records, no error, no
        #: preferred read replica, no diverging epoch. A response full at ``fetch.max.bytes``
        #: answers the partitions it had no room for so, as does a long poll that ended
        #: without data.
        self.carries_nothing = _carries_nothing(partition_data, self.size_in_bytes)
        #: Records decoded from this partition's data (for the fetch metrics).
        self.records_total = 0
        self.metrics_recorded = False
        self._end_hint: int | None = -1  # -1: not scanned yet
        #: Its share of the buffer's count of undecoded bytes: guarded by the fetch buffer's
        #: lock (``FetchBuffer`` sets it as the piece enters and leaves the queue).
        self.buffered_bytes = 0
        #: ``(ArrowDecodeResult, origin)`` when decoded ahead with other partitions of a poll
        #: (``arrow_decoder.ArrowDecoder.prepare``), installed by its next initialization.
        self.predecoded: tuple[Any, Any] | None = None
        #: The decode pool's work on this data (a ``Future``: CRCs checked and batches
        #: decompressed ahead, ``arrow_decoder``); set and taken by the polling thread.
        self.prepared: Any = None
        #: The response's metrics, told when this partition is handed out or dropped.
        self.aggregator: FetchMetricsAggregator | None = None

    def end_offset_hint(self) -> int | None:
        """Where the data after this one starts, known before decoding (for prefetching).

        None when there is none to know: an error response, no complete batch, legacy
        messages, or data already drained.
        """
        if self.is_consumed:
            return None
        if self.initialized:
            return self._end_offset if self._end_offset > self.fetch_offset else None
        hint = self._end_hint
        if hint == -1:
            hint = None
            if not self.partition_data.get("error_code", 0):
                raw = self.partition_data.get("records")
                if raw:
                    hint = next_offset_after_batches(raw)
                    if hint is not None and hint <= self.fetch_offset:
                        hint = None
            self._end_hint = hint
        return hint

    def records_left(self) -> int:
        """Decoded records not handed out yet."""
        return len(self.records) - self._pos if self.initialized and not self.is_consumed else 0

    def set_decoded(self, records: list[Any], next_offset: int) -> None:
        """Install the decoded records and the offset after the last complete batch."""
        self.records = records
        self.records_total = len(records)
        self._pos = 0
        self._end_offset = max(next_offset, self.fetch_offset)
        # The raw bytes are no longer needed; dropping them lets the response buffer go once
        # every partition of it is decoded.
        self.partition_data["records"] = None
        self._drop_prepared()
        self.initialized = True

    def _finish(self) -> None:
        # Skip past batches that yielded no records (control batches, aborted transactions).
        # This happens only inside fetch_records, after the fetcher checked that the data
        # starts at the position, so that it then moves the position here too (Java
        # FetchCollector): done earlier, the data would look stale and be fetched forever.
        if self._end_offset > self.next_fetch_offset:
            self.next_fetch_offset = self._end_offset
        self.is_consumed = True
        self.records = []
        self._report()

    def _report(self) -> None:
        aggregator = self.aggregator
        if aggregator is not None:
            self.aggregator = None
            aggregator.record(self.tp, self.size_in_bytes, self.records_total)

    def convert_remaining(self, convert: Any) -> None:
        """Replace the records not yet handed out by ``convert(those records)`` (an
        application switching between ``poll()`` and ``poll_arrow()`` mid-partition)."""
        self.records = convert(self.records[self._pos :])
        self._pos = 0

    def drain(self) -> None:
        """Discard whatever is left (stale position, revoked or unfetchable partition)."""
        self.is_consumed = True
        self.records = []
        self._pending_error = None
        self._drop_prepared()
        self._report()

    def _drop_prepared(self) -> None:
        prepared, self.prepared = self.prepared, None
        if prepared is not None:
            prepared.cancel()  # not started: not done at all (started: it just finishes)

    def fetch_records(
        self, max_records: int, key_deserializer: Any = None, value_deserializer: Any = None
    ) -> list[Any]:
        """Hand out up to ``max_records`` records and advance ``next_fetch_offset``.

        With deserializers, a failure on the first record raises
        :class:`RecordDeserializationError` and leaves the position on that record; a failure
        after some records returns those and raises on the next call.
        """
        if self._pending_error is not None:
            raise self._pending_error
        if self.is_consumed:
            return []
        start = self._pos
        stop = min(start + max_records, len(self.records))
        chunk = self.records[start:stop]
        if key_deserializer is not None or value_deserializer is not None:
            ok = self._deserialize(chunk, key_deserializer, value_deserializer)
            if ok < len(chunk):
                chunk = chunk[:ok]
                stop = start + ok
        if chunk:
            last = chunk[-1]
            self.next_fetch_offset = last.offset + 1
            self.last_epoch = last.leader_epoch
        self._pos = stop
        if self._pending_error is not None:
            if not chunk:
                raise self._pending_error
            return chunk
        if stop >= len(self.records):
            self._finish()
        return chunk

    def _deserialize(self, chunk: list[Any], key_des: Any, value_des: Any) -> int:
        """Deserialize in place; returns how many records succeeded before a failure."""
        topic = self.tp.topic
        for i, rec in enumerate(chunk):
            is_key = True
            try:
                if key_des is not None and rec.key is not None:
                    rec.key = key_des.deserialize(topic, rec.key, rec.headers)
                is_key = False
                if value_des is not None and rec.value is not None:
                    rec.value = value_des.deserialize(topic, rec.value, rec.headers)
            except Exception as exc:  # noqa: BLE001 - any user deserializer failure
                self._pending_error = RecordDeserializationError(
                    self.tp.topic, self.tp.partition, rec.offset, is_key, exc
                )
                return i
        return len(chunk)
