"""The Arrow decoders a test can choose: the pure-Python reference and the active one.

The library picks its Arrow decoder once at import (the Cython one when built); tests that
compare both call the reference through :func:`reference_decode_fetched_arrow`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from kafkaconsumer.record import _columns, _pyrecords
from kafkaconsumer.record.arrow import ArrowDecodeResult, decode_with

_REFERENCE_COLUMNS = functools.partial(_columns.decode_columns, _pyrecords.decode_fetched_records)


def reference_decode_fetched_arrow(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
) -> ArrowDecodeResult:
    """``decode_fetched_arrow`` through the pure-Python decoders (objects, then columns)."""
    return decode_with(
        _REFERENCE_COLUMNS,
        data,
        topic,
        partition,
        fetch_offset,
        check_crcs=check_crcs,
        read_committed=read_committed,
        aborted_transactions=aborted_transactions,
    )
