"""Columns as Spark's Kafka source gives them, where this package's Arrow reads differ."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["null_empty_headers", "spark_headers_table"]


def null_empty_headers(headers: pa.Array) -> pa.Array:
    """``headers`` with each empty list made null: Spark's Kafka source gives a record
    without headers null ``headers``, and a query filtering on ``headers IS NULL`` must mean
    the same with either source."""
    empty = pc.equal(pc.list_value_length(headers), 0)
    if not pc.any(empty).as_py():
        return headers
    mask = pc.or_(pc.is_null(headers), empty)
    if headers.offset:
        # A sliced list array's offsets do not start at 0, which from_arrays refuses with a
        # null mask; the copy is only of the slice.
        headers = pa.concat_arrays([headers])
    return pa.ListArray.from_arrays(headers.offsets, headers.values, type=headers.type, mask=mask)


def spark_headers_table(table: pa.Table) -> pa.Table:
    """``table`` with :func:`null_empty_headers` applied to its ``headers`` column, if any."""
    i = table.schema.get_field_index("headers")
    if i < 0:
        return table
    column = table.column(i)
    chunks = [null_empty_headers(c) for c in column.chunks]
    return table.set_column(i, table.schema.field(i), pa.chunked_array(chunks, type=column.type))
