"""The column contract of the Arrow decoders, and its pure-Python reference.

Both Arrow decoders produce the buffers of one record batch as :class:`ArrowColumns`: the
Cython one (``_carrow.decode_columns``, no Python object per record) and the reference here,
which decodes with an object decoder and lays its records out column by column.
``record.arrow`` turns the buffers into ``pyarrow`` arrays. This module needs no ``pyarrow``.

Buffers are any objects with the buffer protocol; offsets start at 0; a validity bitmap is
None when no row is null.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from itertools import accumulate
from typing import Any, NamedTuple

from kafkaconsumer.record._common import DecodeResult

__all__ = ["ArrowColumns", "HeaderColumns", "columns_from_records", "decode_columns"]


class HeaderColumns(NamedTuple):
    """The buffers of the ``headers`` column (a list of ``struct<key: string, value:
    binary>``).

    Thread-safety: immutable.
    """

    list_offsets: Any  # int32, one per row + 1: where each row's headers start
    num_headers: int  # headers of all rows together
    key_offsets: Any  # int32, num_headers + 1
    key_data: Any  # UTF-8 bytes of the keys
    value_validity: Any | None
    value_nulls: int
    value_offsets: Any  # int32, num_headers + 1
    value_data: Any


class ArrowColumns(NamedTuple):
    """The buffers of one decoded partition's (or one builder's) rows, column by column.

    Thread-safety: immutable.
    """

    key_validity: Any | None
    key_nulls: int
    key_offsets: Any  # int32, rows + 1
    key_data: Any
    value_validity: Any | None
    value_nulls: int
    value_offsets: Any  # int32, rows + 1
    value_data: Any
    offsets: Any  # int64
    timestamps: Any  # int64, milliseconds
    timestamp_types: Any  # int32: 0 CreateTime, 1 LogAppendTime, -1 none
    leader_epochs: Any  # int32, -1 unknown
    headers: HeaderColumns | None  # None when headers were not asked for


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


def columns_from_records(records: Iterable[Any]) -> tuple[int, ArrowColumns]:
    """``(rows, columns)`` of ConsumerRecords with raw bytes keys and values.

    Column by column with built-ins (join, accumulate, array) rather than row by row: the
    pure-Python Arrow path then costs little more than the object decoder under it."""
    recs = records if isinstance(records, list) else list(records)
    kvalid, knulls, koffs, kdata = _binary_column([r.key for r in recs])
    vvalid, vnulls, voffs, vdata = _binary_column([r.value for r in recs])
    headers = [r.headers for r in recs]
    loffs = array("i", [0])
    loffs.extend(accumulate(len(h) for h in headers))
    pairs = [pair for h in headers for pair in h]
    hkeys = [k.encode("utf-8") for k, _v in pairs]
    hkoffs = array("i", [0])
    hkoffs.extend(accumulate(len(k) for k in hkeys))
    hvvalid, hvnulls, hvoffs, hvdata = _binary_column([v for _k, v in pairs])
    return len(recs), ArrowColumns(
        key_validity=kvalid,
        key_nulls=knulls,
        key_offsets=koffs,
        key_data=kdata,
        value_validity=vvalid,
        value_nulls=vnulls,
        value_offsets=voffs,
        value_data=vdata,
        offsets=array("q", [r.offset for r in recs]),
        timestamps=array("q", [r.timestamp for r in recs]),
        timestamp_types=array("i", [r.timestamp_type for r in recs]),
        leader_epochs=array("i", [-1 if r.leader_epoch is None else r.leader_epoch for r in recs]),
        headers=HeaderColumns(
            loffs, len(pairs), hkoffs, b"".join(hkeys), hvvalid, hvnulls, hvoffs, hvdata
        ),
    )


#: An object decoder: ``record.decode_fetched_records``'s signature.
ObjectDecoder = Callable[..., DecodeResult]


def decode_columns(
    decode: ObjectDecoder,
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
) -> tuple[int, ArrowColumns, int, bool]:
    """``_carrow.decode_columns`` (headers included) done with the object decoder ``decode``:
    ``(rows, columns, next_offset, partial)``, the same checks and errors."""
    result = decode(
        data,
        topic,
        partition,
        fetch_offset,
        check_crcs=check_crcs,
        read_committed=read_committed,
        aborted_transactions=aborted_transactions,
    )
    rows, cols = columns_from_records(result.records)
    return rows, cols, result.next_offset, result.partial
