"""Type stub of the Cython Arrow decoder (``_carrow.pyx``); its pure-Python twin is
``record._columns`` (the same :class:`ArrowColumns`).

``tests/record/test_record_typing.py`` checks that every public name of the built extension is
declared here.
"""

from collections.abc import Iterable, Mapping
from typing import overload

from kafkaconsumer.record._columns import ArrowColumns

def pooled_bytes() -> int:
    """Bytes of freed column memory kept for reuse."""

def column_bytes() -> tuple[int, int]:
    """``(now, peak)`` bytes of column memory in use (kept blocks not counted)."""

def reset_column_peak() -> None:
    """Start a new peak for :func:`column_bytes` from what is in use now."""

def release_pooled() -> int:
    """Free the column memory kept for reuse; returns the bytes freed."""

class Grow:
    """A growable byte buffer (buffer protocol) that backs one Arrow buffer."""

    def __init__(self, cap: int = 64) -> None: ...
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class _Columns:
    """The column buffers of one decode call, or of a builder (:func:`new_builder`)."""

    @property
    def num_rows(self) -> int:
        """Rows decoded so far."""

    @property
    def data_bytes(self) -> int:
        """Key and value bytes decoded so far."""

    def last_row(self) -> tuple[int, int] | None:
        """``(offset, leader epoch)`` of the last row decoded, or None before the first."""

    def segments(self) -> tuple[Grow, Grow, Grow]:
        """``(topic_offsets, topic_data, partitions)`` of a builder's rows."""

    def result(self) -> ArrowColumns:
        """The buffers, column by column."""

class Prepared:
    """One partition's v2 batches CRC-checked and decompressed ahead of decoding."""

    @property
    def size(self) -> int:
        """Length of the data it was made from."""

    @property
    def crc_checked(self) -> bool:
        """Whether the CRCs of its batches were checked."""

    @property
    def num_batches(self) -> int:
        """Batches prepared (from the start of the data, in order)."""

    @property
    def payload_bytes(self) -> int:
        """Bytes of decompressed payloads held."""

def prepare_batches(
    data: bytes | bytearray | memoryview, fetch_offset: int, check_crcs: bool = True
) -> Prepared:
    """Check the CRC-32C of ``data``'s v2 batches and decompress their records ahead of
    ``decode_columns(..., prepared=)``; stops, raising nothing, at a batch it cannot prepare."""

def new_builder(data_size: int, include_headers: bool) -> _Columns:
    """Columns that several ``decode_columns(..., into=builder)`` calls append to."""

@overload
def decode_columns(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
    include_headers: bool = False,
    into: None = None,
    prepared: Prepared | None = None,
) -> tuple[int, ArrowColumns, int, bool]:
    """Decode a Fetch response partition's ``records`` into Arrow column buffers."""

@overload
def decode_columns(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
    include_headers: bool = False,
    into: _Columns,
    prepared: Prepared | None = None,
) -> tuple[int, None, int, bool]:
    """Append the records to the builder ``into``; ``columns`` is None."""

def repeat_string_buffers(data: bytes, rows: int) -> tuple[Grow, Grow]:
    """``(offsets, data)`` buffers of a column holding ``data`` in each of ``rows`` rows."""

def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of a bytes-like object, continuing from ``crc``: what the decoders check."""

def crc32c_hardware(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """:func:`crc32c` with the SSE 4.2 instruction (for tests; ValueError where the processor
    lacks it)."""

def crc32c_table(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """:func:`crc32c` with the table method (for tests)."""

def crc32c_hardware_available() -> bool:
    """Whether :func:`crc32c` uses the processor's CRC-32C instruction."""
