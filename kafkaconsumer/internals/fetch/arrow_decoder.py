"""The collector's Arrow decoder: what ``KafkaConsumer.poll_arrow()`` hands out.

Imported only when Arrow is asked for (it needs ``pyarrow``), so ``poll()`` alone never loads
it. Each partition's records become an :class:`~kafkaconsumer.record.arrow.ArrowRecords`;
the partitions one collect hands out are decoded together into one record batch (when the
Cython decoder is built), each a slice of it, so ``poll_arrow()`` returns them without a copy.

With several decode threads (``arrow.decode.threads``, the collector's ``decode_pool``) the
partitions after the one being assembled are CRC-checked and decompressed on the pool's
threads meanwhile (``record._carrow.prepare_batches``); the assembly stays on the polling
thread, in the collector's order, so the batch, the positions and the errors are those of a
single thread. Without the Cython decoder the pool decodes whole partitions ahead instead.
The partitions of one batch stop at ``arrow.poll.max.bytes`` of decoded keys and values.
"""

from __future__ import annotations

from typing import Any

from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch
from kafkaconsumer.internals.fetch.decode_pool import DecodePool
from kafkaconsumer.internals.fetch.decoders import CollectorView, DecodeOptions
from kafkaconsumer.record import arrow
from kafkaconsumer.structs import TopicPartition

__all__ = ["ArrowDecoder"]


def _taken(cf: CompletedFetch) -> Any:
    """The pool's finished work on ``cf`` (None: none, or it failed, and the caller does all
    of it). Work not started yet is cancelled rather than waited for: the caller is free."""
    future, cf.prepared = cf.prepared, None
    if future is None or future.cancel():
        return None
    try:
        return future.result()
    except Exception:  # noqa: BLE001 - the caller decodes the partition itself, raising there
        return None


class _Ahead:
    """Hands the partitions after the one being decoded to the pool, a window at a time.

    Thread-safety: not thread-safe; lives within one collect on the polling thread.
    """

    __slots__ = ("_pool", "_work", "_options", "_queue", "_index", "_next", "_window")

    def __init__(
        self,
        pool: DecodePool,
        queue: list[CompletedFetch],
        collector: CollectorView,
        work: Any,
    ) -> None:
        self._pool = pool
        self._work = work
        self._options = collector.decode_options
        subs = collector.subscriptions
        # What the collector is likely to decode next, in its order (a stale one among them
        # is prepared for nothing, which costs a worker's time only).
        self._queue = [
            cf
            for cf in queue
            if not cf.initialized
            and cf.predecoded is None
            and not cf.partition_data.get("error_code", 0)
            and cf.partition_data.get("records")
            and not subs.is_paused(cf.tp)
        ]
        self._index = {id(cf): i for i, cf in enumerate(self._queue)}
        self._next = 0
        self._window = pool.window()

    def before(self, cf: CompletedFetch) -> None:
        """``cf`` is decoded next: keep the window after it handed out."""
        i = self._index.get(id(cf))
        if i is None:
            return
        if self._next <= i:
            self._next = i + 1  # cf itself is the polling thread's own
        while self._next < len(self._queue) and self._next <= i + self._window:
            nxt = self._queue[self._next]
            self._next += 1
            if nxt.prepared is None and _worth_preparing(nxt.partition_data.get("records")):
                nxt.prepared = self._pool.submit(self._work, nxt, self._options(nxt))


# Uncompressed data is only handed to the pool from this size on: its preparation is a CRC
# check (about 0.1 ms a MiB), and below that the hand-over and the GIL changing hands cost
# about as much as they save (measured on 1,000 partitions of 50 KB: 0.07 us more CPU per
# record with the pool than without).
_MIN_UNCOMPRESSED_BYTES = 1 << 20
# Where the first batch's attributes are (v2: baseOffset, batchLength, partitionLeaderEpoch,
# magic, crc); their low three bits name the codec.
_ATTRIBUTES_LOW_BYTE = 22


def _worth_preparing(raw: Any) -> bool:
    """Whether the pool's work on this data saves more than it costs: compressed data (its
    decompression is most of its decoding), or a large uncompressed piece."""
    if not raw:
        return False
    if len(raw) >= _MIN_UNCOMPRESSED_BYTES:
        return True
    return len(raw) > _ATTRIBUTES_LOW_BYTE and raw[16] == 2 and bool(raw[_ATTRIBUTES_LOW_BYTE] & 7)


def _data_bytes(batch: Any) -> int:
    """Key and value bytes of a batch decoded alone (its data buffers are its own)."""
    total = 0
    for column in (batch.column(0), batch.column(1)):
        data = column.buffers()[2]
        total += data.size if data is not None else 0
    return total


def _prepare_batches(cf: CompletedFetch, options: DecodeOptions) -> Any:
    return arrow.prepare_batches(
        cf.partition_data.get("records"), cf.fetch_offset, options["check_crcs"]
    )


def _decode_whole(cf: CompletedFetch, options: DecodeOptions) -> Any:
    tp = cf.tp
    return arrow.decode_fetched_arrow(
        cf.partition_data.get("records"), tp.topic, tp.partition, cf.fetch_offset, **options
    )


class ArrowDecoder:
    """Records as Arrow columns (raw bytes keys and values, no deserializers).

    Thread-safety: stateless; used on the user's thread.
    """

    __slots__ = ()

    def prepare(self, collector: CollectorView, max_records: int) -> int:
        """Decode ahead the partitions this collect will hand out, into one record batch."""
        nil = collector.buffer.next_in_line
        left = nil.records_left() if nil is not None else 0
        if left:
            # What an earlier poll left of a partition is a slice of that poll's columns:
            # handed out alone it needs no copy (joined to other partitions it would be
            # concatenated), and the partitions after it are then decoded together.
            return min(max_records, left)
        return self._predecode(collector, max_records)

    @staticmethod
    def _predecode(collector: CollectorView, want: int) -> int:
        """Decode the buffered partitions this poll is about to hand out (about ``want``
        records) into one set of Arrow columns: each partition's records become a slice of
        one record batch, which ``poll_arrow()`` returns whole instead of concatenating the
        partitions' batches (a copy of every value). Without the Cython decoder each is
        decoded into a batch of its own.

        Only what the collector's loop would decode next, in its order: unpaused, error
        free, not stale partitions. Each keeps its result (``predecoded``) for
        :meth:`decode`; on any decoding error nothing is kept and the loop decodes each
        partition alone, raising where it would. Returns how many records the collect may
        hand out: ``want``, or fewer when the decoding stopped early (the partitions decoded
        until then): at ``arrow.poll.max.bytes``, at a second piece of a partition after
        another partition's (the rows are handed out grouped by partition, so the batch would
        otherwise not be one slice of the columns), or at the end of what was buffered when
        the decoding started.
        """
        max_records = want
        buffer = collector.buffer
        pool = collector.decode_pool
        shared = arrow.builder_available()
        nil = buffer.next_in_line
        if nil is not None:
            want -= nil.records_left()
        with buffer.lock:
            queue = buffer.queued()
            undecoded = buffer.undecoded_bytes
        subs = collector.subscriptions
        cap = collector.config.arrow_poll_max_bytes
        ahead = (
            _Ahead(pool, queue, collector, _prepare_batches if shared else _decode_whole)
            if pool.active
            else None
        )
        expected: dict[TopicPartition, int] = {}
        chosen: list[tuple[CompletedFetch, int, int, int, bool, Any]] = []
        # The partitions in the builder, and the last one: poll_arrow() groups its rows by
        # partition, so a second piece of a partition decoded after another partition's rows
        # would make the batch a concatenation (a copy of every row) instead of a slice.
        in_builder: set[TopicPartition] = set()
        last_tp: TopicPartition | None = None
        builder = None
        decoded_bytes = 0
        limit = max_records
        for cf in queue:
            if want <= 0:
                break
            if decoded_bytes >= cap:
                # Bounded by bytes: this poll hands out what is decoded (and what earlier
                # polls decoded of the partitions counted above), the rest waits.
                limit = max_records - want
                break
            tp = cf.tp
            if subs.is_paused(tp) or cf.predecoded is not None:
                continue
            if cf.initialized:
                want -= cf.records_left()
                continue
            if cf.carries_nothing:
                continue  # the collector takes its watermarks; nothing to decode
            part = cf.partition_data
            if part.get("error_code", 0):
                break
            position = subs.position(tp) if subs.is_fetchable(tp) else None
            if position is None or cf.fetch_offset != expected.get(tp, position.offset):
                continue
            if shared and tp != last_tp and tp in in_builder:
                # That piece waits for the next poll (while a fetch's partitions drain, two
                # responses are buffered, and each poll would otherwise copy its batch).
                limit = max_records - want
                break
            if ahead is not None:
                ahead.before(cf)
            ready = _taken(cf)
            if not shared:
                # Without the Cython decoder each partition is a batch of its own (decoded by
                # the pool, or now); poll_arrow() concatenates them.
                try:
                    if not isinstance(ready, arrow.ArrowDecodeResult):
                        ready = arrow.decode_fetched_arrow(
                            part.get("records"),
                            tp.topic,
                            tp.partition,
                            cf.fetch_offset,
                            **collector.decode_options(cf),
                        )
                except Exception:  # noqa: BLE001 - the loop decodes it again, raising there
                    return max_records
                cf.predecoded = (ready, None)
                decoded_bytes += _data_bytes(ready.batch)
                rows, next_offset = ready.batch.num_rows, ready.next_offset
            else:
                if builder is None:
                    builder = arrow.ArrowBuilder(min(undecoded, collector.config.max_bytes, cap))
                start = builder.num_rows
                try:
                    rows, next_offset, partial = builder.decode(
                        part.get("records"),
                        tp.topic,
                        tp.partition,
                        cf.fetch_offset,
                        prepared=ready,
                        **collector.decode_options(cf),
                    )
                except Exception:  # noqa: BLE001 - the loop decodes this partition alone
                    return max_records
                # The builder's last row is this partition's only when it gave rows.
                last = builder.last_row() if rows else None
                chosen.append((cf, start, rows, next_offset, partial, last))
                decoded_bytes = builder.data_bytes
                in_builder.add(tp)
                last_tp = tp
            expected[tp] = max(next_offset, cf.fetch_offset)
            want -= rows
        else:
            if builder is not None and want > 0:
                # Every buffered partition is decoded: a response landing meanwhile (the
                # network thread appends while this poll decodes) waits for the next poll,
                # whose columns it starts, instead of joining this batch by a copy.
                limit = max_records - want
        if builder is None:
            return limit
        try:
            batch, epochs = builder.finish()
        except Exception:  # noqa: BLE001 - as above
            return max_records
        for cf, start, rows, next_offset, partial, last in chosen:
            result = arrow.ArrowDecodeResult(
                batch.slice(start, rows),
                epochs.slice(start, rows),
                next_offset,
                partial,
                last,
            )
            cf.predecoded = (result, (batch, start))
        return limit

    def decode(
        self, cf: CompletedFetch, data: tuple[Any, str, int, int], options: DecodeOptions
    ) -> tuple[Any, int]:
        """``cf``'s records as :class:`ArrowRecords` (decoded ahead, or now)."""
        if cf.predecoded is not None:
            decoded, origin = cf.predecoded
            cf.predecoded = None
        else:
            origin = None
            ready = _taken(cf)
            if isinstance(ready, arrow.ArrowDecodeResult):  # decoded whole by the pool
                decoded = ready
            else:
                decoded = arrow.decode_fetched_arrow(*data, **options)
        return arrow.ArrowRecords.from_result(decoded, origin), decoded.next_offset

    def take(self, cf: CompletedFetch, max_records: int) -> Any:
        """A zero-copy slice of ``cf``'s Arrow records."""
        if isinstance(cf.records, list):
            # Decoded for poll(); poll_arrow() wants Arrow.
            def to_arrow(rest: list[Any]) -> Any:
                batch, epochs = arrow.records_to_arrow(rest, cf.tp.topic, cf.tp.partition)
                return arrow.ArrowRecords([batch], [epochs])

            cf.convert_remaining(to_arrow)
        return cf.fetch_records(max_records)
