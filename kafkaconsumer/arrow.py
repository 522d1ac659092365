"""Kafka records as Apache Arrow: record batches decoded straight into ``pyarrow`` arrays.

The columns and types are those of Spark's Kafka source, so a ``pyarrow.RecordBatch`` from here
becomes a Spark DataFrame without conversion:

====================  =====================================================
``key``               ``binary`` (null for a null key)
``value``             ``binary`` (null for a tombstone)
``topic``             ``string``
``partition``         ``int32``
``offset``            ``int64``
``timestamp``         ``timestamp[ms, tz=UTC]``
``timestampType``     ``int32`` (0 CreateTime, 1 LogAppendTime, -1 none)
``headers``           ``list<struct<key: string, value: binary>>`` (when asked for)
====================  =====================================================

:func:`decode_fetched_arrow` is the Arrow twin of ``record.decode_fetched_records``: the same
checks (CRC32C/CRC32, every codec, v0/v1/v2, control batches, aborted transactions under
read_committed, offsets below the fetch offset dropped) and the same errors. The Cython module
``record._carrow`` fills the Arrow buffers with no Python object per record, for every format;
without it the object decoder's records are copied into the same buffers (slower, same arrays).

:meth:`KafkaConsumer.poll_arrow` hands fetched data out as Arrow; :func:`read_offset_ranges`
reads fixed offset ranges into a ``pyarrow.Table`` (the bounded read under the Spark
integration). ``pyarrow`` is needed (the ``arrow`` extra).
"""

from __future__ import annotations

import functools
import logging
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import accumulate
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import (
    ConfigError,
    CorruptRecordError,
    KafkaError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
)
from kafkaconsumer.record import _pyrecords
from kafkaconsumer.record import decode_fetched_records as _decode_objects
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = [
    "DataLossError",
    "SCHEMA",
    "SCHEMA_WITH_HEADERS",
    "USING_EXTENSION",
    "ArrowDecodeResult",
    "decode_fetched_arrow",
    "iter_offset_ranges",
    "read_offset_ranges",
    "records_to_arrow",
    "schema",
]

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
#: Spark's Kafka source schema, without headers.
SCHEMA = pa.schema(_FIELDS)
#: Spark's Kafka source schema with ``includeHeaders``.
SCHEMA_WITH_HEADERS = pa.schema([*_FIELDS, pa.field("headers", HEADER_TYPE)])

# The column tuple both decoders return (Cython: ``_carrow.decode_columns``):
#   (key_validity | None, key_nulls, key_offsets, key_data,
#    value_validity | None, value_nulls, value_offsets, value_data,
#    offsets (int64), timestamps (int64 ms), timestamp_types (int32), leader_epochs (int32, -1),
#    headers | None)
# headers = (list_offsets (int32, one per row + 1), header_count, key_offsets, key_data,
#            value_validity | None, value_nulls, value_offsets, value_data)
# Buffers are any objects with the buffer protocol; offsets start at 0.

_columns_impl: Any = None
_carrow_mod: Any = None
#: True when the Cython Arrow decoder is in use.
USING_EXTENSION = False
if os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") != "1":
    try:
        from kafkaconsumer.record import _carrow
    except ImportError as exc:
        logger.debug("Cython Arrow decoder not available (%s); using the pure-Python one", exc)
    else:
        _columns_impl = _carrow.decode_columns
        _carrow_mod = _carrow
        USING_EXTENSION = True


def schema(include_headers: bool = False) -> pa.Schema:
    """Spark's Kafka source schema, with the ``headers`` column when ``include_headers``."""
    return SCHEMA_WITH_HEADERS if include_headers else SCHEMA


class ArrowDecodeResult(NamedTuple):
    """What :func:`decode_fetched_arrow` returns.

    ``batch`` has the columns of :data:`SCHEMA_WITH_HEADERS` (headers always decoded);
    ``leader_epochs`` is an int32 array, one per row (-1 unknown); ``next_offset`` and
    ``partial`` mean what they mean in ``DecodeResult``.

    Thread-safety: immutable.
    """

    batch: pa.RecordBatch
    leader_epochs: pa.Array
    next_offset: int
    partial: bool


def _buf(obj: Any) -> pa.Buffer | None:
    return None if obj is None else pa.py_buffer(obj)


# Columns are made from buffers: ``pa.scalar``/``pa.array`` convert Python values, which makes
# pyarrow import pandas when it is installed (about half a second on the first poll_arrow()),
# and ``pa.repeat`` appends row by row.
def _repeat_string_buffers(data: bytes, rows: int) -> tuple[Any, Any]:
    if _carrow_mod is not None:
        offsets, repeated = _carrow_mod.repeat_string_buffers(data, rows)
        return offsets, repeated
    return array("i", [len(data) * i for i in range(rows + 1)]), data * rows


def _repeated_topic(topic: str, rows: int) -> pa.Array:
    offsets, data = _repeat_string_buffers(topic.encode("utf-8"), rows)
    return pa.Array.from_buffers(
        pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=0
    )


def _repeated_int32(value: int, rows: int) -> pa.Array:
    return pa.Array.from_buffers(
        pa.int32(), rows, [None, pa.py_buffer(array("i", [value]) * rows)], null_count=0
    )


@functools.lru_cache(maxsize=1)
def _no_headers() -> pa.Array:
    """The (empty) child array of a headers column in which no row has a header."""
    empty = array("i", [0])
    keys = _binary(pa.string(), 0, None, 0, empty, b"")
    values = _binary(pa.binary(), 0, None, 0, empty, b"")
    return pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE.value_type))


def _binary(
    typ: pa.DataType, rows: int, valid: Any, nulls: int, offsets: Any, data: Any
) -> pa.Array:
    return pa.Array.from_buffers(
        typ, rows, [_buf(valid), _buf(offsets), _buf(data)], null_count=nulls
    )


def _assemble(
    rows: int,
    cols: tuple[Any, ...],
    topic: str,
    partition: int,
    segments: tuple[Any, Any, Any] | None = None,
) -> tuple[pa.RecordBatch, pa.Array]:
    (
        kvalid,
        knulls,
        koffs,
        kdata,
        vvalid,
        vnulls,
        voffs,
        vdata,
        offsets,
        timestamps,
        ts_types,
        epochs,
        hdr,
    ) = cols
    if segments is None:  # one partition's rows
        topics = _repeated_topic(topic, rows)
        partitions = _repeated_int32(partition, rows)
    else:  # a builder's rows, each with its own topic and partition
        topic_offsets, topic_data, partition_data = segments
        topics = _binary(pa.string(), rows, None, 0, topic_offsets, topic_data)
        partitions = pa.Array.from_buffers(
            pa.int32(), rows, [None, _buf(partition_data)], null_count=0
        )
    arrays = [
        _binary(pa.binary(), rows, kvalid, knulls, koffs, kdata),
        _binary(pa.binary(), rows, vvalid, vnulls, voffs, vdata),
        topics,
        partitions,
        pa.Array.from_buffers(pa.int64(), rows, [None, _buf(offsets)], null_count=0),
        pa.Array.from_buffers(
            pa.timestamp("ms", tz="UTC"), rows, [None, _buf(timestamps)], null_count=0
        ),
        pa.Array.from_buffers(pa.int32(), rows, [None, _buf(ts_types)], null_count=0),
    ]
    if hdr is None:
        hdr = (array("i", [0]) * (rows + 1), 0, array("i", [0]), b"", None, 0, array("i", [0]), b"")
    list_offsets, count, hkoffs, hkdata, hvvalid, hvnulls, hvoffs, hvdata = hdr
    if count:
        hkeys = _binary(pa.string(), count, None, 0, hkoffs, hkdata)
        hvalues = _binary(pa.binary(), count, hvvalid, hvnulls, hvoffs, hvdata)
        struct = pa.StructArray.from_arrays([hkeys, hvalues], fields=list(HEADER_TYPE.value_type))
    else:
        struct = _no_headers()
    arrays.append(
        pa.Array.from_buffers(
            HEADER_TYPE, rows, [None, _buf(list_offsets)], null_count=0, children=[struct]
        )
    )
    epoch_array = pa.Array.from_buffers(pa.int32(), rows, [None, _buf(epochs)], null_count=0)
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA_WITH_HEADERS), epoch_array


def _bitmap(flags: list[bool]) -> bytearray | None:
    """An Arrow validity bitmap of ``flags`` (True: valid); None when all are valid."""
    if all(flags):
        return None
    # Eight flags per byte, least significant bit first: as an int's bits, reversed per byte.
    bits = int("".join("1" if f else "0" for f in reversed(flags)) or "0", 2)
    return bytearray(bits.to_bytes((len(flags) + 7) // 8 or 1, "little"))


def _binary_column(values: list[Any]) -> tuple[bytearray | None, int, array[int], bytes]:
    """(validity, null count, int32 offsets, data) of a binary column of bytes-or-None."""
    present = [v is not None for v in values]
    data = b"".join([v for v in values if v is not None])
    offsets = array("i", [0])
    offsets.extend(accumulate(len(v) if v is not None else 0 for v in values))
    return _bitmap(present), len(values) - sum(present), offsets, data


def _columns_from_records(records: Iterable[Any]) -> tuple[int, tuple[Any, ...]]:
    """The column tuple of ConsumerRecords (the pure-Python decoder, legacy conversions).

    Column by column with built-ins (join, accumulate, array) rather than row by row: the
    pure-Python Arrow path then costs little more than the object decoder under it."""
    recs = records if isinstance(records, list) else list(records)
    kvalid, knulls, koffs, kdata = _binary_column([r.key for r in recs])
    vvalid, vnulls, voffs, vdata = _binary_column([r.value for r in recs])
    offsets = array("q", [r.offset for r in recs])
    timestamps = array("q", [r.timestamp for r in recs])
    ts_types = array("i", [r.timestamp_type for r in recs])
    epochs = array("i", [-1 if r.leader_epoch is None else r.leader_epoch for r in recs])
    headers = [r.headers for r in recs]
    loffs = array("i", [0])
    loffs.extend(accumulate(len(h) for h in headers))
    pairs = [pair for h in headers for pair in h]
    hkeys = [k.encode("utf-8") for k, _v in pairs]
    hkoffs = array("i", [0])
    hkoffs.extend(accumulate(len(k) for k in hkeys))
    hvvalid, hvnulls, hvoffs, hvdata = _binary_column([v for _k, v in pairs])
    hdr = (loffs, len(pairs), hkoffs, b"".join(hkeys), hvvalid, hvnulls, hvoffs, hvdata)
    return len(recs), (
        kvalid,
        knulls,
        koffs,
        kdata,
        vvalid,
        vnulls,
        voffs,
        vdata,
        offsets,
        timestamps,
        ts_types,
        epochs,
        hdr,
    )


def records_to_arrow(
    records: list[Any], topic: str, partition: int
) -> tuple[pa.RecordBatch, pa.Array]:
    """ConsumerRecords of one partition (raw bytes keys and values) as ``(batch,
    leader_epochs)`` with :data:`SCHEMA_WITH_HEADERS`."""
    rows, cols = _columns_from_records(records)
    return _assemble(rows, cols, topic, partition)


def decode_fetched_arrow(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
    _force_python: bool = False,
) -> ArrowDecodeResult:
    """Decode a Fetch response partition's ``records`` into one Arrow record batch.

    Same contract, checks and errors as ``record.decode_fetched_records`` (docs/internals.md,
    record/), with the records as the columns of :data:`SCHEMA_WITH_HEADERS` instead of objects.
    """
    if _columns_impl is not None and not _force_python:
        rows, cols, next_offset, partial = _columns_impl(
            data,
            topic,
            partition,
            fetch_offset,
            check_crcs=check_crcs,
            read_committed=read_committed,
            aborted_transactions=aborted_transactions,
            include_headers=True,
        )
    else:
        decode = _pyrecords.decode_fetched_records if _force_python else _decode_objects
        result = decode(
            data,
            topic,
            partition,
            fetch_offset,
            check_crcs=check_crcs,
            read_committed=read_committed,
            aborted_transactions=aborted_transactions,
        )
        rows, cols = _columns_from_records(result.records)
        next_offset, partial = result.next_offset, result.partial
    batch, epochs = _assemble(rows, cols, topic, partition)
    hdr = cols[12]
    if hdr is not None and hdr[1]:
        # Header keys must be UTF-8 for a string column (the object decoder checks each).
        try:
            batch.column(7).values.field(0).validate(full=True)
        except pa.ArrowInvalid:
            raise CorruptRecordError(
                "header key is not valid UTF-8",
                topic=topic,
                partition=partition,
                offset=fetch_offset,
            ) from None
    return ArrowDecodeResult(batch, epochs, next_offset, partial)


class ArrowBuilder:
    """Several partitions' fetched data decoded into one set of columns: the partitions one
    poll hands out become one record batch (each partition's rows a slice of it), which
    ``poll_arrow()`` returns without concatenating. Needs the Cython decoder
    (:func:`builder_available`).

    Thread-safety: not thread-safe; used within one poll.
    """

    __slots__ = ("_cols",)

    def __init__(self, size_hint: int) -> None:
        """An empty builder; ``size_hint`` is a first guess of the value bytes."""
        if _carrow_mod is None:
            raise RuntimeError("the Cython Arrow decoder is not available")
        self._cols = _carrow_mod.new_builder(max(size_hint, 0), True)

    @property
    def num_rows(self) -> int:
        """Rows decoded so far."""
        return int(self._cols.num_rows)

    def decode(
        self,
        data: bytes | bytearray | memoryview | None,
        topic: str,
        partition: int,
        fetch_offset: int,
        *,
        check_crcs: bool = True,
        read_committed: bool = False,
        aborted_transactions: Iterable[Mapping[str, int]] | None = None,
    ) -> tuple[int, int, bool]:
        """Append a Fetch response partition's records (the checks and errors of
        :func:`decode_fetched_arrow`); ``(rows, next_offset, partial)``. After an error the
        builder holds part of the partition and must be dropped."""
        rows, _cols, next_offset, partial = _carrow_mod.decode_columns(
            data,
            topic,
            partition,
            fetch_offset,
            check_crcs=check_crcs,
            read_committed=read_committed,
            aborted_transactions=aborted_transactions,
            include_headers=True,
            into=self._cols,
        )
        return int(rows), int(next_offset), bool(partial)

    def finish(self) -> tuple[pa.RecordBatch, pa.Array]:
        """The rows as one batch of :data:`SCHEMA_WITH_HEADERS` and their leader epochs.

        Raises :class:`CorruptRecordError` (with no partition: decode each partition alone to
        find it) when a header key is not UTF-8."""
        cols = self._cols
        rows = int(cols.num_rows)
        columns = cols.result()
        batch, epochs = _assemble(rows, columns, "", -1, cols.segments())
        hdr = columns[12]
        if hdr is not None and hdr[1]:
            try:
                batch.column(7).values.field(0).validate(full=True)
            except pa.ArrowInvalid:
                raise CorruptRecordError("header key is not valid UTF-8") from None
        return batch, epochs


def builder_available() -> bool:
    """Whether :class:`ArrowBuilder` can be used (the Cython decoder is loaded)."""
    return _carrow_mod is not None


def arrow_to_records(
    batch: pa.RecordBatch, leader_epochs: pa.Array, record_cls: Callable[..., Any]
) -> list[Any]:
    """Rows of a :data:`SCHEMA_WITH_HEADERS` batch as ConsumerRecords (one object per row: used
    only when an application switches from ``poll_arrow`` to ``poll`` mid-partition)."""
    out = []
    cols = batch.to_pydict()
    ts = batch.column(5).cast(pa.int64()).to_pylist()
    epochs = leader_epochs.to_pylist()
    for i in range(batch.num_rows):
        key, value = cols["key"][i], cols["value"][i]
        headers = [(h["key"], h["value"]) for h in cols["headers"][i]] or None
        out.append(
            record_cls(
                cols["topic"][i],
                cols["partition"][i],
                cols["offset"][i],
                ts[i],
                cols["timestampType"][i],
                key,
                value,
                headers,
                None if epochs[i] < 0 else epochs[i],
                -1 if key is None else len(key),
                -1 if value is None else len(value),
            )
        )
    return out


class _Last(NamedTuple):
    offset: int
    leader_epoch: int | None


class ArrowRecords:
    """Decoded records of one partition as Arrow, in the shape ``CompletedFetch`` hands out.

    Supports what the fetcher does with a record list: ``len``, slicing (zero copy), ``[-1]``
    (the last record's offset and leader epoch) and ``extend``. ``batches`` are record batches
    of :data:`SCHEMA_WITH_HEADERS`.

    Thread-safety: not thread-safe; owned by the thread that polls.
    """

    __slots__ = ("batches", "epochs", "origins", "_len")

    def __init__(
        self,
        batches: list[pa.RecordBatch],
        epochs: list[pa.Array],
        origins: list[tuple[pa.RecordBatch, int] | None] | None = None,
    ) -> None:
        """Wrap ``batches`` and their per-row leader ``epochs`` (same lengths). ``origins``
        says, per batch, which larger batch it is a slice of and where it starts there (None:
        not a slice), so that neighbouring slices are joined without a copy."""
        self.batches = batches
        self.epochs = epochs
        self.origins: list[tuple[pa.RecordBatch, int] | None] = (
            origins if origins is not None else [None for _ in batches]
        )
        self._len = sum(b.num_rows for b in batches)

    @classmethod
    def from_result(
        cls, result: ArrowDecodeResult, origin: tuple[pa.RecordBatch, int] | None = None
    ) -> ArrowRecords:
        """The records of one :func:`decode_fetched_arrow` result (``origin``: see above)."""
        return cls([result.batch], [result.leader_epochs], [origin])

    def __len__(self) -> int:
        return int(self._len)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                raise ValueError("ArrowRecords slices have no step")
            return self._slice(start, max(stop - start, 0))
        if index != -1 or not self._len:
            raise IndexError("ArrowRecords gives only its last record by index")
        batch, epochs = self.batches[-1], self.epochs[-1]
        epoch = epochs[batch.num_rows - 1].as_py()
        return _Last(batch.column(4)[batch.num_rows - 1].as_py(), None if epoch < 0 else epoch)

    def _slice(self, start: int, length: int) -> ArrowRecords:
        batches: list[pa.RecordBatch] = []
        epochs: list[pa.Array] = []
        origins: list[tuple[pa.RecordBatch, int] | None] = []
        for batch, epoch, origin in zip(self.batches, self.epochs, self.origins, strict=True):
            n = batch.num_rows
            if length <= 0:
                break
            if start >= n:
                start -= n
                continue
            take = min(n - start, length)
            batches.append(batch.slice(start, take))
            epochs.append(epoch.slice(start, take))
            origins.append(None if origin is None else (origin[0], origin[1] + start))
            length -= take
            start = 0
        return ArrowRecords(batches, epochs, origins)

    def extend(self, other: ArrowRecords) -> None:
        """Append ``other``'s batches."""
        self.batches.extend(other.batches)
        self.epochs.extend(other.epochs)
        self.origins.extend(other.origins)
        self._len += other._len

    def to_batch(self, include_headers: bool) -> pa.RecordBatch:
        """One record batch of :func:`schema` ``(include_headers)``."""
        return join_records([self], include_headers)

    def to_records(self, record_cls: Callable[..., Any]) -> list[Any]:
        """The rows as ConsumerRecords (one object per row)."""
        out: list[Any] = []
        for batch, epochs in zip(self.batches, self.epochs, strict=True):
            out.extend(arrow_to_records(batch, epochs, record_cls))
        return out


def concat_batches(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    """One record batch of ``batches`` (same schema), copied together."""
    return pa.concat_batches(batches)


def join_records(parts: Iterable[ArrowRecords], include_headers: bool) -> pa.RecordBatch:
    """The rows of ``parts``, in order, as one record batch of :func:`schema`
    ``(include_headers)``: a slice of the batch they were decoded into when they follow each
    other there (one poll's partitions, decoded by an :class:`ArrowBuilder`), else a copy."""
    batches: list[pa.RecordBatch] = []
    origins: list[tuple[pa.RecordBatch, int] | None] = []
    for recs in parts:
        for batch, origin in zip(recs.batches, recs.origins, strict=True):
            if batch.num_rows:
                batches.append(batch)
                origins.append(origin)
    if not batches:
        return empty_batch(include_headers)
    names = schema(include_headers).names
    first = origins[0]
    if first is not None:
        parent, start = first
        end = start
        for batch, origin in zip(batches, origins, strict=True):
            if origin is None or origin[0] is not parent or origin[1] != end:
                break
            end += batch.num_rows
        else:
            return parent.slice(start, end - start).select(names)
    if len(batches) == 1:
        return batches[0].select(names)
    return concat_batches([b.select(names) for b in batches])


def empty_batch(include_headers: bool = False) -> pa.RecordBatch:
    """A record batch with no rows and :func:`schema` ``(include_headers)``."""
    target = schema(include_headers)
    return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in target], schema=target)


# ----------------------------------------------------------------------------- bounded reads


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
        for tp, (start, _end) in pending.items():
            consumer.seek(tp, start)
        idle = Timer(SYSTEM_TIME, poll_timeout_ms)
        while pending:
            try:
                fetch = consumer._poll(min(idle.remaining_ms, 1000), None, True)
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
