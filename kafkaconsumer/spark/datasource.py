"""``KafkaDataSource``: a PySpark Python Data Source (short name ``kafkaconsumer``) that reads
Kafka in parallel, batch and streaming, and writes DataFrames back, with no JVM Kafka jar.

Register it once per session (``spark.dataSource.register(KafkaDataSource)``, or
:func:`kafkaconsumer.spark.register`), then use Spark's Kafka source options with
``format("kafkaconsumer")``. The driver plans offset ranges; each Spark task reads one range,
or several small ones (``minRecordsPerPartition``), with ``assign`` + ``seek`` (no group
membership) and yields Arrow record batches decoded by
:mod:`kafkaconsumer.record.arrow`, so the executors need this package (and pyarrow) installed, and
nothing else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    Filter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import ConfigError, KafkaError
from kafkaconsumer.record.arrow import HEADER_TYPE
from kafkaconsumer.spark.columns import null_empty_headers
from kafkaconsumer.spark.formats import (
    FormatOptions,
    decode_batches,
    pin,
    spark_schema,
    split_format_options,
)
from kafkaconsumer.spark.offset_ranges import iter_offset_ranges
from kafkaconsumer.spark.offsets import (
    LiveBounds,
    OffsetRange,
    from_json,
    live_bounds,
    pack_ranges,
    plan,
    resolve,
    resolve_live,
    split_ranges,
    to_json,
    topic_partitions,
    with_retries,
    within,
)
from kafkaconsumer.spark.options import KafkaOptions, OffsetSpec, parse_options
from kafkaconsumer.spark.pushdown import Pushdown
from kafkaconsumer.spark.writer import write_batches
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "KafkaDataSource",
    "KafkaPushdownDataSource",
    "SCHEMA_DDL",
    "SCHEMA_WITH_HEADERS_DDL",
    "null_empty_headers",
]

#: Spark's Kafka source schema as DDL.
SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
#: ... with ``includeHeaders``.
SCHEMA_WITH_HEADERS_DDL = SCHEMA_DDL + ", headers array<struct<key: string, value: binary>>"

_FIXED = LiveBounds(start=False, floor=False, end=False)
_UNLIMITED: tuple[int | None, int | None] = (None, None)


#: One offset range of a task, the bounds the task resolves again when it runs (batch reads:
#: see :class:`LiveBounds`), and the offsets pushed filters allow it (``[low, high)``; None:
#: unbounded).
RangeToRead = tuple[OffsetRange, LiveBounds, tuple[int | None, int | None]]


class KafkaInputPartition(InputPartition):
    """One task's offset ranges (pickled to the executor), read by one consumer: one range,
    or several small ones of different partitions (see :func:`pack_ranges`).

    Thread-safety: immutable once built.
    """

    def __init__(self, ranges: Iterable[RangeToRead]) -> None:
        """Carry ``ranges``."""
        super().__init__(tuple((tuple(r), tuple(live), tuple(lim)) for r, live, lim in ranges))

    @property
    def ranges(self) -> list[RangeToRead]:
        """The offset ranges as planned, with their live bounds and limits."""
        return [
            (OffsetRange(*r), LiveBounds(*live), (lim[0], lim[1])) for r, live, lim in self.value
        ]


def _packed(opts: KafkaOptions, ranges: list[RangeToRead]) -> list[KafkaInputPartition]:
    """The tasks of a read: ``ranges`` packed by ``minRecordsPerPartition``."""
    groups = pack_ranges(
        [r for r, _live, _lim in ranges],
        opts.min_records_per_partition,
        opts.min_partitions,
        opts.max_records_per_partition,
    )
    return [KafkaInputPartition(ranges[i] for i in group) for group in groups]


# Spark's Arrow form of its Kafka schema: microsecond timestamps, list children "element".
_SPARK_TIMESTAMP = pa.timestamp("us", tz="UTC")
_SPARK_HEADERS = pa.list_(pa.field("element", HEADER_TYPE.value_type))


def to_spark_arrow(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (``kafkaconsumer.record.arrow`` schema) in the Arrow types Spark expects of a
    Python data source: the timestamp column in microseconds, the headers' list child named
    ``element``, and a record without headers has null ``headers`` (as Spark's source)."""
    arrays = list(batch.columns)
    names = batch.schema.names
    arrays[5] = arrays[5].cast(_SPARK_TIMESTAMP)
    if len(arrays) > 7:
        arrays[7] = null_empty_headers(arrays[7]).cast(_SPARK_HEADERS)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _read(
    opts: KafkaOptions,
    ranges: list[RangeToRead],
    formats: FormatOptions | None = None,
) -> Iterator[pa.RecordBatch]:
    if formats is not None and formats.typed:
        yield from decode_batches(formats, _read(opts, ranges))
        return

    def bounds(consumer: KafkaConsumer) -> dict[TopicPartition, tuple[int, int]]:
        out: dict[TopicPartition, tuple[int, int]] = {}
        for r, live, limits in ranges:
            now = within(resolve_live(consumer, opts, r, live), limits) if any(live) else r
            out[now.tp] = (now.start, now.end)
        return out

    for batch in iter_offset_ranges(
        opts.consumer_config("executor"),
        bounds,
        include_headers=opts.include_headers,
        fail_on_data_loss=opts.fail_on_data_loss,
        poll_timeout_ms=opts.poll_timeout_ms,
    ):
        yield to_spark_arrow(batch)


class KafkaDataSource(DataSource):
    """Spark's Kafka source and sink options over this package's consumer and producer.

    Thread-safety: Spark creates one instance per query plan; not shared between threads.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("kafkaconsumer")``."""
        return "kafkaconsumer"

    def schema(self) -> str | StructType:
        """Spark's Kafka source schema (``headers`` with ``includeHeaders``; typed ``key`` and
        ``value`` with ``keyFormat``/``valueFormat``: see :mod:`kafkaconsumer.spark.formats`)."""
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        rest, formats = split_format_options(self.options)
        ddl = SCHEMA_WITH_HEADERS_DDL if include else SCHEMA_DDL
        if not formats.typed:
            return ddl
        return spark_schema(self._pinned(formats, rest), include)

    @staticmethod
    def _pinned(formats: FormatOptions, rest: dict[str, Any]) -> FormatOptions:
        topics: list[str] = []
        for name, value in rest.items():
            if str(name).lower() == "subscribe":
                topics = [t.strip() for t in str(value).split(",") if t.strip()]
        return pin(formats, topics) if formats.typed else formats

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader (offsets fixed when the read is planned; no filter pushdown)."""
        rest, formats = split_format_options(self.options)
        return KafkaBatchReader(parse_options(rest), self._pinned(formats, rest))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The micro-batch reader."""
        rest, formats = split_format_options(self.options)
        return KafkaStreamReader(parse_options(rest, streaming=True), self._pinned(formats, rest))

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWriter:
        """The batch writer (append only: a topic cannot be overwritten)."""
        if overwrite:
            raise ConfigError("a Kafka topic can only be appended to (mode overwrite)")
        return KafkaWriter(parse_options(self.options, write=True), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        """The streaming writer."""
        return KafkaStreamWriter(parse_options(self.options, write=True), schema)


class KafkaPushdownDataSource(KafkaDataSource):
    """:class:`KafkaDataSource` whose batch reads take the filters Spark pushes down (Spark
    must run with ``spark.sql.python.filterPushdown.enabled=true``, which
    :func:`kafkaconsumer.spark.register` sets).

    Thread-safety: as :class:`KafkaDataSource`.
    """

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader with filter pushdown."""
        rest, formats = split_format_options(self.options)
        return KafkaPushdownReader(parse_options(rest), self._pinned(formats, rest))


class KafkaBatchReader(DataSourceReader):
    """Plans offset ranges on the driver; reads one per task.

    Thread-safety: one instance per query; Spark calls it from one thread.
    """

    def __init__(self, opts: KafkaOptions, formats: FormatOptions | None = None) -> None:
        """Read with ``opts``, decoding keys and values as ``formats`` says."""
        self.opts = opts
        self.pushdown: Pushdown | None = None
        self.formats = formats

    def partitions(self) -> list[KafkaInputPartition]:
        """One input partition per (split) offset range, small ranges packed together (see
        :func:`pack_ranges`).

        Spark plans a Python data source once per DataFrame, while its own Kafka source
        resolves earliest, latest and timestamps for every action. So the ranges planned here
        only decide the split; each task resolves its earliest/latest/timestamp bounds again
        when it runs, and every action sees the records produced up to then. Partitions empty
        now keep a task, which may find records later.
        """
        ranges, limits = plan(self.opts, keep_empty=True, pushdown=self.pushdown)
        return _packed(
            self.opts,
            [
                (r, live, limits.get(r.tp, _UNLIMITED))
                for r, live in zip(ranges, live_bounds(self.opts, ranges), strict=True)
            ],
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Arrow record batches of the task's ranges (runs on an executor)."""
        assert isinstance(partition, KafkaInputPartition)
        yield from _read(self.opts, partition.ranges, self.formats)


class KafkaPushdownReader(KafkaBatchReader):
    """:class:`KafkaBatchReader` that narrows its offset ranges by the filters Spark pushes
    (``topic``, ``partition``, ``offset``, ``timestamp``: see
    :mod:`kafkaconsumer.spark.pushdown`). Spark 4.2 pushes filters only with
    ``spark.sql.python.filterPushdown.enabled=true`` and refuses a reader that takes them
    without it, so this reader belongs to the source that :func:`kafkaconsumer.spark.register`
    registers after setting that.

    Thread-safety: one instance per query; Spark calls it from one thread.
    """

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802
        """Keep the filters that narrow the ranges exactly; hand back the others."""
        self.pushdown, back = (self.pushdown or Pushdown()).push(filters)
        return back


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offsets in Spark's checkpoint JSON (``{"topic": {"0": 42}}``).

    ``maxOffsetsPerTrigger`` caps a micro-batch (spread over partitions by their backlog, as
    Spark does); ``minOffsetsPerTrigger`` holds a trigger back until that many records wait or
    ``maxTriggerDelay`` has passed. Partitions that appear later start at their earliest
    offset. ``Trigger.AvailableNow`` ends at the latest offsets of when the query started.
    Each micro-batch logs the backlog it leaves (records behind the latest offsets, min, avg
    and max over partitions); ``commitOffsetsToGroup`` commits each committed micro-batch's end
    offsets to a consumer group.

    Thread-safety: one instance per query; Spark calls it from one thread.
    """

    def __init__(self, opts: KafkaOptions, formats: FormatOptions | None = None) -> None:
        """Read with ``opts``, decoding keys and values as ``formats`` says."""
        self.opts = opts
        self.formats = formats
        self._last_trigger = time.monotonic()
        # Trigger.AvailableNow: the latest offsets when the query started (None otherwise).
        self._target: dict[TopicPartition, int] | None = None
        # The latest offsets the last latestOffset() saw, for reportLatestOffset().
        self._latest: dict[TopicPartition, int] | None = None
        # What commitOffsetsToGroup last committed.
        self._group_committed: dict[TopicPartition, int] | None = None

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """``Trigger.AvailableNow``: no micro-batch goes past the latest offsets of now."""

        def lookup(consumer: KafkaConsumer) -> dict[TopicPartition, int]:
            tps = topic_partitions(consumer, self.opts)
            return resolve(consumer, tps, OffsetSpec("latest"), starting=False)

        self._target = with_retries(self.opts, lookup)
        logger.info("Trigger.AvailableNow: reading up to %s", to_json(self._target))

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802
        """The latest offsets seen when the last micro-batch was planned (Spark shows them in
        the query's progress as ``latestOffset``)."""
        return None if self._latest is None else to_json(self._latest)

    def initialOffset(self) -> dict[str, Any]:
        """The starting offsets (``startingOffsets``, default latest), resolved now."""

        def lookup(consumer: KafkaConsumer) -> dict[TopicPartition, int]:
            tps = topic_partitions(consumer, self.opts)
            return resolve(
                consumer,
                tps,
                self.opts.starting,
                starting=True,
                strategy=self.opts.timestamp_strategy,
            )

        return to_json(with_retries(self.opts, lookup))

    def getDefaultReadLimit(self) -> Any:
        """``maxOffsetsPerTrigger`` as ReadMaxRows, else ``minOffsetsPerTrigger`` as
        ReadMinRows, else everything available."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        """The end of the next micro-batch within ``limit``.

        Spark asks once the micro-batch ending at ``start`` is in the checkpoint's commit log
        (a restarted query first runs its planned micro-batch again), so ``start`` is what
        ``commitOffsetsToGroup`` commits: Spark calls :meth:`commit` for a micro-batch only
        when it plans the next one that has records, so never for the last one of
        ``Trigger.AvailableNow``.
        """
        begin = from_json(start)
        self._commit_to_group(dict(begin))

        def lookup(consumer: KafkaConsumer) -> dict[TopicPartition, int]:
            tps = topic_partitions(consumer, self.opts)
            new = [tp for tp in tps if tp not in begin]
            if new:
                logger.info("new partitions %s start at their earliest offset", new)
                begin.update(resolve(consumer, new, OffsetSpec("earliest"), starting=True))
            return resolve(consumer, tps, OffsetSpec("latest"), starting=False)

        latest = with_retries(self.opts, lookup)
        for tp in list(begin):
            if tp not in latest:
                # A partition that went away keeps its offset (its topic was deleted).
                latest[tp] = begin[tp]
        self._latest = dict(latest)
        if self._target is not None:
            # Trigger.AvailableNow: nothing past the target (a partition that appeared since
            # stays where it starts).
            latest = {
                tp: max(begin[tp], min(end, self._target.get(tp, begin[tp])))
                for tp, end in latest.items()
            }
        end = self._end(begin, latest, limit)
        self._log_backlog(begin, end)
        return to_json(end)

    def _end(
        self, begin: dict[TopicPartition, int], latest: dict[TopicPartition, int], limit: Any
    ) -> dict[TopicPartition, int]:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        available = {tp: max(0, latest[tp] - begin[tp]) for tp in latest}
        total = sum(available.values())
        if isinstance(limit, ReadAllAvailable):
            self._last_trigger = time.monotonic()
            return latest
        min_rows = self.opts.min_offsets_per_trigger
        # Under Trigger.AvailableNow nothing more arrives: waiting for more would never end.
        if min_rows and total < min_rows and self._target is None:
            waited_ms = (time.monotonic() - self._last_trigger) * 1000
            if waited_ms < self.opts.max_trigger_delay_ms:
                return begin
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if max_rows is None and self.opts.max_offsets_per_trigger and min_rows:
            max_rows = self.opts.max_offsets_per_trigger
        self._last_trigger = time.monotonic()
        if max_rows is None or total <= max_rows:
            return latest
        return _rate_limit(begin, latest, available, total, max_rows)

    def _log_backlog(
        self, begin: dict[TopicPartition, int], end: dict[TopicPartition, int]
    ) -> None:
        # As Spark's source reports minOffsetsBehindLatest/avg/max: the records between the
        # micro-batch's end and the latest offsets, over partitions.
        if not self._latest:
            return
        behind = [max(0, n - end.get(tp, begin.get(tp, n))) for tp, n in self._latest.items()]
        logger.info(
            "micro-batch to %s: %d records read, backlog behind the latest offsets over %d "
            "partitions: min %d, avg %.1f, max %d",
            to_json(end),
            sum(max(0, end[tp] - begin.get(tp, end[tp])) for tp in end),
            len(behind),
            min(behind),
            sum(behind) / len(behind),
            max(behind),
        )

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[KafkaInputPartition]:
        """The offset ranges between two checkpointed offsets."""
        begin, stop = from_json(start), from_json(end)
        new = [tp for tp in stop if tp not in begin]
        if new:
            # Appeared after the start offsets were written: read from their earliest offset.
            begin.update(
                with_retries(
                    self.opts,
                    lambda consumer: resolve(consumer, new, OffsetSpec("earliest"), starting=True),
                )
            )
        ranges = []
        for tp, e in sorted(stop.items()):
            s = begin[tp]
            if e < s:
                message = (
                    f"{tp.topic}-{tp.partition}: offset went back from {s} to {e}; "
                    "some data may have been lost"
                )
                if self.opts.fail_on_data_loss:
                    raise KafkaError(message + " (failOnDataLoss=true)")
                logger.warning(message)
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, s, e))
        return _packed(
            self.opts,
            [
                (r, _FIXED, _UNLIMITED)
                for r in split_ranges(
                    ranges, self.opts.min_partitions, self.opts.max_records_per_partition
                )
            ],
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Arrow record batches of the task's ranges (runs on an executor)."""
        assert isinstance(partition, KafkaInputPartition)
        yield from _read(self.opts, partition.ranges, self.formats)

    def commit(self, end: dict[str, Any]) -> None:
        """Progress lives in Spark's checkpoint, as with Spark's source; with
        ``commitOffsetsToGroup``, ``end`` (committed by Spark) also goes to that group."""
        self._commit_to_group(from_json(end))

    def _commit_to_group(self, offsets: dict[TopicPartition, int]) -> None:
        # For Kafka's group tools and lag monitors; a failure is logged, as the checkpoint
        # stays the source of truth.
        group = self.opts.commit_group
        if group is None or offsets == self._group_committed:
            return
        cfg = dict(self.opts.kafka)
        cfg["group.id"] = group
        cfg["enable.auto.commit"] = False
        try:
            with KafkaConsumer(cfg) as consumer:
                consumer.commit_sync({tp: OffsetAndMetadata(o, "") for tp, o in offsets.items()})
        except KafkaError as exc:
            logger.warning("could not commit %s to group %s: %s", to_json(offsets), group, exc)
            return
        self._group_committed = dict(offsets)


def _rate_limit(
    begin: dict[Any, int],
    latest: dict[Any, int],
    available: dict[Any, int],
    total: int,
    max_rows: int,
) -> dict[Any, int]:
    # Each partition gets a share of max_rows in proportion to its backlog (Spark's
    # rateLimit); rounding down leaves a remainder that goes to the largest backlogs.
    out = dict(begin)
    granted = 0
    for tp, n in available.items():
        share = n * max_rows // total
        out[tp] = begin.get(tp, 0) + share
        granted += share
    for tp in sorted(available, key=lambda t: -available[t]):
        if granted >= max_rows:
            break
        if out[tp] < latest[tp]:
            out[tp] += 1
            granted += 1
    for tp in latest:
        out.setdefault(tp, latest[tp])
    return out


class _Commit(WriterCommitMessage):
    """How many records one task wrote.

    Thread-safety: immutable.
    """

    def __init__(self, count: int) -> None:
        """Record ``count``."""
        self.count = count


class KafkaWriter(DataSourceArrowWriter):
    """Writes each task's rows with this package's producer.

    Thread-safety: one instance per write; each task uses its own producer.
    """

    def __init__(self, opts: KafkaOptions, schema: StructType) -> None:
        """Write with ``opts`` the columns of ``schema``."""
        self.opts = opts
        self.columns = [f.name for f in schema.fields]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row; returns once all are acknowledged."""
        return _Commit(write_batches(self.opts, iterator))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writes with this package's producer (at least once, as Spark's sink).

    Thread-safety: one instance per query; each task uses its own producer.
    """

    def __init__(self, opts: KafkaOptions, schema: StructType) -> None:
        """Write with ``opts`` the columns of ``schema``."""
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row of the micro-batch's task."""
        return _Commit(write_batches(self.opts, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to do: every task flushed its records before reporting."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing can be taken back from Kafka; the records written stay (at least once)."""
