"""The collector's Arrow decoder: what ``KafkaConsumer.poll_arrow()`` hands out.

Imported only when Arrow is asked for (it needs ``pyarrow``), so ``poll()`` alone never loads
it. Each partition's records become an :class:`~kafkaconsumer.record.arrow.ArrowRecords`;
the partitions one collect hands out are decoded together into one record batch (when the
Cython decoder is built), each a slice of it, so ``poll_arrow()`` returns them without a copy.
"""

from __future__ import annotations

from typing import Any

from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch
from kafkaconsumer.internals.fetch.decoders import CollectorView, DecodeOptions
from kafkaconsumer.record import arrow
from kafkaconsumer.structs import TopicPartition

__all__ = ["ArrowDecoder"]


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
        self._predecode(collector, max_records)
        return max_records

    @staticmethod
    def _predecode(collector: CollectorView, want: int) -> None:
        """Decode the buffered partitions this poll is about to hand out (about ``want``
        records) into one set of Arrow columns: each partition's records become a slice of
        one record batch, which ``poll_arrow()`` returns whole instead of concatenating the
        partitions' batches (a copy of every value).

        Only what the collector's loop would decode next, in its order: unpaused, error
        free, not stale partitions. Each keeps its result (``predecoded``) for
        :meth:`decode`; on any decoding error nothing is kept and the loop decodes each
        partition alone, raising where it would.
        """
        if not arrow.builder_available():
            return
        buffer = collector.buffer
        nil = buffer.next_in_line
        if nil is not None:
            want -= nil.records_left()
        with buffer.lock:
            queue = buffer.queued()
            undecoded = buffer.undecoded_bytes
        subs = collector.subscriptions
        expected: dict[TopicPartition, int] = {}
        chosen: list[tuple[CompletedFetch, int, int, int, bool]] = []
        builder = None
        for cf in queue:
            if want <= 0:
                break
            tp = cf.tp
            if subs.is_paused(tp) or cf.predecoded is not None:
                continue
            if cf.initialized:
                want -= cf.records_left()
                continue
            part = cf.partition_data
            if part.get("error_code", 0):
                break
            position = subs.position(tp) if subs.is_fetchable(tp) else None
            if position is None or cf.fetch_offset != expected.get(tp, position.offset):
                continue
            if builder is None:
                builder = arrow.ArrowBuilder(min(undecoded, collector.config.max_bytes))
            start = builder.num_rows
            try:
                rows, next_offset, partial = builder.decode(
                    part.get("records"),
                    tp.topic,
                    tp.partition,
                    cf.fetch_offset,
                    **collector.decode_options(cf),
                )
            except Exception:  # noqa: BLE001 - the loop decodes this partition again, alone
                return
            chosen.append((cf, start, rows, next_offset, partial))
            expected[tp] = max(next_offset, cf.fetch_offset)
            want -= rows
        if builder is None:
            return
        try:
            batch, epochs = builder.finish()
        except Exception:  # noqa: BLE001 - as above
            return
        for cf, start, rows, next_offset, partial in chosen:
            result = arrow.ArrowDecodeResult(
                batch.slice(start, rows), epochs.slice(start, rows), next_offset, partial
            )
            cf.predecoded = (result, (batch, start))

    def decode(
        self, cf: CompletedFetch, data: tuple[Any, str, int, int], options: DecodeOptions
    ) -> tuple[Any, int]:
        """``cf``'s records as :class:`ArrowRecords` (decoded ahead, or now)."""
        if cf.predecoded is not None:
            decoded, origin = cf.predecoded
            cf.predecoded = None
        else:
            decoded = arrow.decode_fetched_arrow(*data, **options)
            origin = None
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
