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
without it the object decoder's records are copied into the same buffers (``record._columns``:
slower, same arrays). Both produce :class:`~kafkaconsumer.record._columns.ArrowColumns`.

:class:`ArrowRecords` is what the fetch collector hands out for ``KafkaConsumer.poll_arrow()``
and :class:`ArrowBuilder` decodes the partitions of one poll into one record batch. ``pyarrow``
is needed (the ``arrow`` extra); nothing imports this module until Arrow is asked for.
"""

from __future__ import annotations

import functools
import logging
import os
from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import pyarrow as pa

from kafkaconsumer.errors import CorruptRecordError
from kafkaconsumer.record import decode_fetched_records as _decode_objects
from kafkaconsumer.record._columns import ArrowColumns, HeaderColumns
from kafkaconsumer.record._columns import columns_from_records as _columns_from_records
from kafkaconsumer.record._columns import decode_columns as _reference_columns

logger = logging.getLogger(__name__)

__all__ = [
    "HEADER_TYPE",
    "SCHEMA",
    "SCHEMA_WITH_HEADERS",
    "USING_EXTENSION",
    "ArrowBuilder",
    "ArrowDecodeResult",
    "ArrowRecords",
    "ColumnDecoder",
    "decode_fetched_arrow",
    "decode_with",
    "empty_batch",
    "join_records",
    "prepare_batches",
    "records_to_arrow",
    "repeated_int32",
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

#: ``decode_columns(data, topic, partition, fetch_offset, *, check_crcs, read_committed,
#: aborted_transactions) -> (rows, ArrowColumns, next_offset, partial)``: one of the two column
#: decoders (the Cython one, or the reference over an object decoder).
ColumnDecoder = Callable[..., tuple[int, ArrowColumns, int, bool]]

_carrow_mod: Any = None
#: True when the Cython Arrow decoder is in use.
USING_EXTENSION = False
if os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") != "1":
    try:
        from kafkaconsumer.record import _carrow
    except ImportError as exc:
        logger.debug("Cython Arrow decoder not available (%s); using the pure-Python one", exc)
    else:
        _carrow_mod = _carrow
        USING_EXTENSION = True


def _cython_columns(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    **options: Any,
) -> tuple[int, ArrowColumns, int, bool]:
    rows, cols, next_offset, partial = _carrow_mod.decode_columns(
        data, topic, partition, fetch_offset, include_headers=True, **options
    )
    return rows, cols, next_offset, partial


#: The column decoder chosen once at import: the Cython one, else the reference over the
#: active object decoder.
_active_columns: ColumnDecoder = (
    _cython_columns
    if _carrow_mod is not None
    else functools.partial(_reference_columns, _decode_objects)
)


def schema(include_headers: bool = False) -> pa.Schema:
    """Spark's Kafka source schema, with the ``headers`` column when ``include_headers``."""
    return SCHEMA_WITH_HEADERS if include_headers else SCHEMA


class _Last(NamedTuple):
    """The offset and leader epoch (None: unknown) of a partition's last record."""

    offset: int
    leader_epoch: int | None


class ArrowDecodeResult(NamedTuple):
    """What :func:`decode_fetched_arrow` returns.

    ``batch`` has the columns of :data:`SCHEMA_WITH_HEADERS` (headers always decoded);
    ``leader_epochs`` is an int32 array, one per row (-1 unknown); ``next_offset`` and
    ``partial`` mean what they mean in ``DecodeResult``; ``last`` is the last row's offset and
    leader epoch when the decoder said them (None: read from the columns when asked).

    Thread-safety: immutable.
    """

    batch: pa.RecordBatch
    leader_epochs: pa.Array
    next_offset: int
    partial: bool
    last: _Last | None = None


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


def repeated_int32(value: int, rows: int) -> pa.Array:
    """An int32 array of ``rows`` times ``value``, built from one buffer (``pa.repeat``
    appends row by row)."""
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
    cols: ArrowColumns,
    topic: str,
    partition: int,
    segments: tuple[Any, Any, Any] | None = None,
) -> tuple[pa.RecordBatch, pa.Array]:
    if segments is None:  # one partition's rows
        topics = _repeated_topic(topic, rows)
        partitions = repeated_int32(partition, rows)
    else:  # a builder's rows, each with its own topic and partition
        topic_offsets, topic_data, partition_data = segments
        topics = _binary(pa.string(), rows, None, 0, topic_offsets, topic_data)
        partitions = pa.Array.from_buffers(
            pa.int32(), rows, [None, _buf(partition_data)], null_count=0
        )
    arrays = [
        _binary(
            pa.binary(), rows, cols.key_validity, cols.key_nulls, cols.key_offsets, cols.key_data
        ),
        _binary(
            pa.binary(),
            rows,
            cols.value_validity,
            cols.value_nulls,
            cols.value_offsets,
            cols.value_data,
        ),
        topics,
        partitions,
        pa.Array.from_buffers(pa.int64(), rows, [None, _buf(cols.offsets)], null_count=0),
        pa.Array.from_buffers(
            pa.timestamp("ms", tz="UTC"), rows, [None, _buf(cols.timestamps)], null_count=0
        ),
        pa.Array.from_buffers(pa.int32(), rows, [None, _buf(cols.timestamp_types)], null_count=0),
    ]
    hdr = cols.headers
    if hdr is None:
        empty = array("i", [0])
        hdr = HeaderColumns(empty * (rows + 1), 0, empty, b"", None, 0, empty, b"")
    if hdr.num_headers:
        hkeys = _binary(pa.string(), hdr.num_headers, None, 0, hdr.key_offsets, hdr.key_data)
        hvalues = _binary(
            pa.binary(),
            hdr.num_headers,
            hdr.value_validity,
            hdr.value_nulls,
            hdr.value_offsets,
            hdr.value_data,
        )
        struct = pa.StructArray.from_arrays([hkeys, hvalues], fields=list(HEADER_TYPE.value_type))
    else:
        struct = _no_headers()
    arrays.append(
        pa.Array.from_buffers(
            HEADER_TYPE, rows, [None, _buf(hdr.list_offsets)], null_count=0, children=[struct]
        )
    )
    epoch_array = pa.Array.from_buffers(
        pa.int32(), rows, [None, _buf(cols.leader_epochs)], null_count=0
    )
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA_WITH_HEADERS), epoch_array


def records_to_arrow(
    records: list[Any], topic: str, partition: int
) -> tuple[pa.RecordBatch, pa.Array]:
    """ConsumerRecords of one partition (raw bytes keys and values) as ``(batch,
    leader_epochs)`` with :data:`SCHEMA_WITH_HEADERS`."""
    rows, cols = _columns_from_records(records)
    return _assemble(rows, cols, topic, partition)


def decode_with(
    columns: ColumnDecoder,
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
) -> ArrowDecodeResult:
    """:func:`decode_fetched_arrow` with the column decoder ``columns``."""
    rows, cols, next_offset, partial = columns(
        data,
        topic,
        partition,
        fetch_offset,
        check_crcs=check_crcs,
        read_committed=read_committed,
        aborted_transactions=aborted_transactions,
    )
    batch, epochs = _assemble(rows, cols, topic, partition)
    _check_header_keys(batch, cols, topic=topic, partition=partition, offset=fetch_offset)
    return ArrowDecodeResult(batch, epochs, next_offset, partial)


def _check_header_keys(batch: pa.RecordBatch, cols: ArrowColumns, **where: Any) -> None:
    # Header keys must be UTF-8 for a string column (the object decoder checks each).
    hdr = cols.headers
    if hdr is None or not hdr.num_headers:
        return
    try:
        batch.column(7).values.field(0).validate(full=True)
    except pa.ArrowInvalid:
        raise CorruptRecordError("header key is not valid UTF-8", **where) from None


def decode_fetched_arrow(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
) -> ArrowDecodeResult:
    """Decode a Fetch response partition's ``records`` into one Arrow record batch.

    Same contract, checks and errors as ``record.decode_fetched_records`` (docs/internals.md,
    record/), with the records as the columns of :data:`SCHEMA_WITH_HEADERS` instead of objects.
    """
    return decode_with(
        _active_columns,
        data,
        topic,
        partition,
        fetch_offset,
        check_crcs=check_crcs,
        read_committed=read_committed,
        aborted_transactions=aborted_transactions,
    )


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

    @property
    def data_bytes(self) -> int:
        """Key and value bytes decoded so far."""
        return int(self._cols.data_bytes)

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
        prepared: Any = None,
    ) -> tuple[int, int, bool]:
        """Append a Fetch response partition's records (the checks and errors of
        :func:`decode_fetched_arrow`); ``(rows, next_offset, partial)``. After an error the
        builder holds part of the partition and must be dropped. ``prepared``:
        :func:`prepare_batches` of ``data``, whose checked and decompressed batches are
        taken from there."""
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
            prepared=prepared,
        )
        return int(rows), int(next_offset), bool(partial)

    def last_row(self) -> _Last | None:
        """The offset and leader epoch of the last row decoded so far (None before the first):
        read right after a partition's :meth:`decode`, that partition's last record."""
        last = self._cols.last_row()
        if last is None:
            return None
        offset, epoch = last
        return _Last(offset, None if epoch < 0 else epoch)

    def finish(self) -> tuple[pa.RecordBatch, pa.Array]:
        """The rows as one batch of :data:`SCHEMA_WITH_HEADERS` and their leader epochs.

        Raises :class:`CorruptRecordError` (with no partition: decode each partition alone to
        find it) when a header key is not UTF-8."""
        cols = self._cols
        rows = int(cols.num_rows)
        columns = cols.result()
        batch, epochs = _assemble(rows, columns, "", -1, cols.segments())
        _check_header_keys(batch, columns)
        return batch, epochs


def prepare_batches(
    data: bytes | bytearray | memoryview | None, fetch_offset: int, check_crcs: bool = True
) -> Any:
    """A partition's batches CRC-checked and decompressed ahead of :meth:`ArrowBuilder.decode`
    (``prepared=``), on any thread; None for no data. Needs the Cython decoder
    (:func:`builder_available`). A batch it cannot prepare is left to the decode, which
    raises there as it would without preparation."""
    if _carrow_mod is None:
        raise RuntimeError("the Cython Arrow decoder is not available")
    if data is None:
        return None
    return _carrow_mod.prepare_batches(data, fetch_offset, check_crcs)


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


class ArrowRecords:
    """Decoded records of one partition as Arrow, in the shape ``CompletedFetch`` hands out.

    Supports what the fetcher does with a record list: ``len``, slicing (zero copy), ``[-1]``
    (the last record's offset and leader epoch) and ``extend``. ``batches`` are record batches
    of :data:`SCHEMA_WITH_HEADERS`.

    Thread-safety: not thread-safe; owned by the thread that polls.
    """

    __slots__ = ("batches", "epochs", "origins", "_len", "_last")

    def __init__(
        self,
        batches: list[pa.RecordBatch],
        epochs: list[pa.Array],
        origins: list[tuple[pa.RecordBatch, int] | None] | None = None,
        last: _Last | None = None,
    ) -> None:
        """Wrap ``batches`` and their per-row leader ``epochs`` (same lengths). ``origins``
        says, per batch, which larger batch it is a slice of and where it starts there (None:
        not a slice), so that neighbouring slices are joined without a copy. ``last``: the
        last row's offset and epoch when known (else read from the columns when asked)."""
        self.batches = batches
        self.epochs = epochs
        self.origins: list[tuple[pa.RecordBatch, int] | None] = (
            origins if origins is not None else [None for _ in batches]
        )
        self._len = sum(b.num_rows for b in batches)
        # The fetcher asks for the last record of every slice it hands out; reading it from
        # the columns builds two pyarrow scalars, about a quarter of what handing out a
        # partition's piece cost over 1,000 partitions.
        self._last = last if self._len else None

    @classmethod
    def from_result(
        cls, result: ArrowDecodeResult, origin: tuple[pa.RecordBatch, int] | None = None
    ) -> ArrowRecords:
        """The records of one :func:`decode_fetched_arrow` result (``origin``: see above)."""
        return cls([result.batch], [result.leader_epochs], [origin], result.last)

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
        if self._last is None:
            for batch, epochs in zip(reversed(self.batches), reversed(self.epochs), strict=True):
                if batch.num_rows:
                    row = batch.num_rows - 1
                    epoch = epochs[row].as_py()
                    self._last = _Last(batch.column(4)[row].as_py(), None if epoch < 0 else epoch)
                    break
        return self._last

    def _slice(self, start: int, length: int) -> ArrowRecords:
        if start == 0 and length >= self._len:
            # All of it (a partition handed out whole): the same batches, nothing sliced.
            return ArrowRecords(
                list(self.batches), list(self.epochs), list(self.origins), self._last
            )
        last = self._last if start + length >= self._len else None
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
        return ArrowRecords(batches, epochs, origins, last)

    def extend(self, other: ArrowRecords) -> None:
        """Append ``other``'s batches."""
        self.batches.extend(other.batches)
        self.epochs.extend(other.epochs)
        self.origins.extend(other.origins)
        if other._len:
            self._last = other._last
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
    first = origins[0]
    if first is not None:
        parent, start = first
        end = start
        for batch, origin in zip(batches, origins, strict=True):
            if origin is None or origin[0] is not parent or origin[1] != end:
                break
            end += batch.num_rows
        else:
            return _columns(parent.slice(start, end - start), include_headers)
    if len(batches) == 1:
        return _columns(batches[0], include_headers)
    return concat_batches([_columns(b, include_headers) for b in batches])


#: The positions of SCHEMA's columns in SCHEMA_WITH_HEADERS (the same, headers last).
_WITHOUT_HEADERS = list(range(len(SCHEMA)))


def _columns(batch: pa.RecordBatch, include_headers: bool) -> pa.RecordBatch:
    """``batch`` (of SCHEMA_WITH_HEADERS) with the columns of :func:`schema`
    ``(include_headers)``: selected by position, which costs less than by name (every poll
    does it)."""
    return batch if include_headers else batch.select(_WITHOUT_HEADERS)


def empty_batch(include_headers: bool = False) -> pa.RecordBatch:
    """A record batch with no rows and :func:`schema` ``(include_headers)``."""
    target = schema(include_headers)
    return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in target], schema=target)
