"""Bounded reads: fixed offset ranges of Kafka read into Arrow record batches.

:func:`iter_offset_ranges` yields one partition's rows per batch, :func:`read_offset_ranges`
gathers them into a ``pyarrow.Table``; the driver read (``read_kafka``) and the Python Data
Source's readers on the executors are built on them. Each read is one ``KafkaConsumer`` with
manual assignment and seeks (no group, nothing committed) that polls Arrow
(``poll_arrow()``'s decoding) until every range is read; offsets the log no longer has are data
loss (:class:`DataLossError`) or, when asked, skipped. Needs ``pyarrow``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import (
    ConfigError,
    KafkaError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
)
from kafkaconsumer.internals.fetch.arrow_decoder import ArrowDecoder
from kafkaconsumer.record.arrow import schema
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

# The reads decode as poll_arrow() does (the decoder is stateless: one serves every read).
_ARROW = ArrowDecoder()

__all__ = ["DataLossError", "Progress", "Ranges", "iter_offset_ranges", "read_offset_ranges"]


class DataLossError(KafkaError):
    """Records of a requested offset range are gone (deleted, aged out, or the log was
    truncated); ``partition`` and ``missing`` (``(first, end)``, end exclusive) say which.
    """

    def __init__(self, partition: TopicPartition, missing: tuple[int, int], why: str) -> None:
        """Name the partition, the missing offsets and why they are missing."""
        self.partition = partition
        self.missing = missing
        super().__init__(
            f"data loss in {partition.topic}-{partition.partition}: offsets "
            f"[{missing[0]}, {missing[1]}) {why}. Some data may have been lost because they are "
            "not available in Kafka any more; set failOnDataLoss (fail_on_data_loss) to false "
            "to skip them"
        )


#: ``progress(rows, bytes)`` after each batch a bounded read yields.
Progress = Callable[[int, int], None]


#: fetch.max.wait.ms of bounded reads unless configured (see _reader_config).
_BOUNDED_FETCH_MAX_WAIT_MS = 10


def _reader_config(config: Mapping[str, Any]) -> dict[str, Any]:
    cfg = dict(config)
    for key in ("key.deserializer", "value.deserializer", "interceptor.classes"):
        if cfg.get(key) is not None:
            raise ConfigError(
                f"{key} cannot be set for an Arrow read (keys and values stay raw bytes)"
            )
    # Positions come from the ranges only: nothing is committed, and a position outside the
    # log must surface as data loss, not be reset silently.
    cfg["enable.auto.commit"] = False
    cfg["auto.offset.reset"] = "none"
    # Unless told otherwise, each poll hands out all that was fetched, and a fetch brings up
    # to 8 MiB of a partition: a bounded read usually reads one partition, and few large
    # batches cost less per record downstream (Spark takes each yielded batch as one Arrow
    # message) than the 500-record polls of a consumer loop.
    cfg.setdefault("max.poll.records", 1 << 30)
    cfg.setdefault("max.partition.fetch.bytes", 8 << 20)
    # The ranges end at or below the log end, so no fetch needs to wait for new records. A
    # long poll only happens for the fetch that goes out as a partition reaches its end, and
    # closing the consumer waits for it (the request that closes the fetch session queues
    # behind it on the connection): with the default 500 ms, a Spark task of 250,000 records
    # took 0.65 s, 0.05 s of it reading; 0.065 s with 10 ms. A range that ends beyond the
    # records there are (data loss) fetches every 10 ms until its poll timeout.
    cfg.setdefault("fetch.max.wait.ms", _BOUNDED_FETCH_MAX_WAIT_MS)
    return cfg


#: Offset ranges ``{TopicPartition: (start, end)}``, or a function that works them out with
#: the reading consumer when the read starts (for bounds resolved at read time).
Ranges = (
    Mapping[TopicPartition, tuple[int, int]]
    | Callable[[KafkaConsumer], Mapping[TopicPartition, tuple[int, int]]]
)


def iter_offset_ranges(
    config: Mapping[str, Any],
    ranges: Ranges,
    *,
    include_headers: bool = False,
    fail_on_data_loss: bool = True,
    poll_timeout_ms: int = 120000,
    progress: Progress | None = None,
) -> Iterator[pa.RecordBatch]:
    """Read each partition's offsets ``[start, end)`` and yield record batches of
    :func:`schema` ``(include_headers)`` (one partition per batch, offsets ascending).

    ``config`` is a consumer configuration (``bootstrap.servers`` and any other key; no
    deserializers). Offsets the log no longer has (deleted, aged out) raise
    :class:`DataLossError` naming the partition and range, or with ``fail_on_data_loss=False``
    are skipped with a warning. Gaps inside the range (compaction, transaction markers, aborted
    records under read_committed) are not loss. ``poll_timeout_ms`` without any progress raises
    ``KafkaTimeoutError``. ``ranges`` may be a function of the reading consumer that returns
    the ranges (bounds looked up when the read starts, on the same connections).
    """
    names = schema(include_headers).names
    if not callable(ranges) and not any(int(e) > int(s) for s, e in ranges.values()):
        return  # nothing to read: no consumer, no connection
    with KafkaConsumer(_reader_config(config)) as consumer:
        if callable(ranges):
            ranges = ranges(consumer)
        pending = {tp: (int(s), int(e)) for tp, (s, e) in ranges.items() if int(e) > int(s)}
        if not pending:
            return
        consumer.assign(list(pending))
        for tp, (start, end) in pending.items():
            consumer.seek(tp, start)
            # Nothing past the range is fetched: no prefetch of data the read drops, and no
            # fetch in flight for close() to wait out.
            consumer._subscriptions.set_fetch_end(tp, end)
        idle = Timer(SYSTEM_TIME, poll_timeout_ms)
        while pending:
            try:
                fetch = consumer._poll(min(idle.remaining_ms, 1000), None, _ARROW)
            except OffsetOutOfRangeError as exc:
                lost = dict(getattr(exc, "partitions", None) or {})
                if not lost:
                    raise
                _skip_lost(consumer, lost, pending, fail_on_data_loss)
                idle.update_and_reset(poll_timeout_ms)
                continue
            moved = False
            if fetch is not None:
                for tp, recs in fetch.records.items():
                    if tp not in pending or not len(recs):
                        continue
                    moved = True
                    batch = recs.to_batch(True)
                    end = pending[tp][1]
                    offsets = batch.column(4)
                    if offsets[batch.num_rows - 1].as_py() >= end:
                        keep = pc.sum(pc.less(offsets, end)).as_py() or 0
                        batch = batch.slice(0, keep)
                    if batch.num_rows:
                        if progress is not None:
                            progress(batch.num_rows, _payload_bytes(batch))
                        yield batch.select(names)
            for tp in list(pending):
                if consumer.position(tp) >= pending[tp][1]:
                    consumer.pause([tp])
                    del pending[tp]
                    moved = True
            if moved or (fetch is not None and fetch.position_advanced):
                idle.update_and_reset(poll_timeout_ms)
                continue
            idle.update()
            if idle.is_expired():
                _check_truncated(consumer, pending, fail_on_data_loss, poll_timeout_ms)
                idle.update_and_reset(poll_timeout_ms)


def _payload_bytes(batch: pa.RecordBatch) -> int:
    # Key and value bytes in the batch's rows (a data buffer's size is its allocation, and a
    # slice shares its parent's buffer).
    total = 0
    for column in (batch.column(0), batch.column(1)):
        total += pc.sum(pc.binary_length(column)).as_py() or 0
    return int(total)


def _skip_lost(
    consumer: KafkaConsumer,
    lost: Mapping[TopicPartition, int],
    pending: dict[TopicPartition, tuple[int, int]],
    fail: bool,
) -> None:
    tps = [tp for tp in lost if tp in pending]
    first = consumer.beginning_offsets(tps)
    last = consumer.end_offsets(tps)
    for tp in tps:
        offset, end = lost[tp], pending[tp][1]
        if offset < first[tp]:
            missing, resume = (offset, min(first[tp], end)), first[tp]
            why = f"were deleted (the log now starts at {first[tp]})"
        else:
            missing, resume = (max(offset, last[tp]), end), end
            why = f"are past the log end {last[tp]} (the log was truncated)"
        if fail:
            raise DataLossError(tp, missing, why)
        logger.warning("skipping offsets [%d, %d) of %s: they %s", missing[0], missing[1], tp, why)
        if resume >= end:
            consumer.pause([tp])
            del pending[tp]
        else:
            consumer.seek(tp, resume)


def _check_truncated(
    consumer: KafkaConsumer,
    pending: dict[TopicPartition, tuple[int, int]],
    fail: bool,
    poll_timeout_ms: int,
) -> None:
    # No progress for the whole poll timeout: the range end may lie beyond what the log holds.
    last = consumer.end_offsets(list(pending))
    stuck = {tp: consumer.position(tp) for tp in pending}
    truncated = {tp: stuck[tp] for tp in pending if last[tp] <= stuck[tp]}
    if not truncated:
        raise KafkaTimeoutError(
            f"no records within {poll_timeout_ms} ms reading "
            + ", ".join(
                f"{tp.topic}-{tp.partition} [{stuck[tp]}, {pending[tp][1]})" for tp in pending
            )
        )
    _skip_lost(consumer, truncated, pending, fail)


def read_offset_ranges(
    config: Mapping[str, Any],
    ranges: Mapping[TopicPartition, tuple[int, int]],
    *,
    include_headers: bool = False,
    fail_on_data_loss: bool = True,
    poll_timeout_ms: int = 120000,
    progress: Progress | None = None,
) -> pa.Table:
    """:func:`iter_offset_ranges` gathered into one ``pyarrow.Table`` (rows grouped by
    partition, offsets ascending in each)."""
    batches = list(
        iter_offset_ranges(
            config,
            ranges,
            include_headers=include_headers,
            fail_on_data_loss=fail_on_data_loss,
            poll_timeout_ms=poll_timeout_ms,
            progress=progress,
        )
    )
    return pa.Table.from_batches(batches, schema=schema(include_headers))
