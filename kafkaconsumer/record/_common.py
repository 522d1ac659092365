"""Pieces shared by both record decoders: the result type, control records, and the
read_committed bookkeeping of aborted transactions (run once per batch, never per record)."""

from __future__ import annotations

import heapq
import logging
import struct
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafkaconsumer.errors import CorruptRecordError, UnsupportedCodecError
from kafkaconsumer.record import codecs
from kafkaconsumer.structs import ConsumerRecord as ConsumerRecord

logger = logging.getLogger(__name__)

# v2 batch attributes (int16)
ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

# Byte layout of the v2 batch header.
V2_HEADER_SIZE = 61
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21
# Everything of the header after the batchLength field: the smallest legal batchLength.
V2_MIN_BATCH_LENGTH = V2_HEADER_SIZE - 12
# Legacy message: offset (8) + size (4), then crc, magic, attributes, [timestamp], key, value.
LEGACY_LOG_OVERHEAD = 12
LEGACY_MIN_SIZE = {0: 14, 1: 22}

NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1
TIMESTAMP_NONE = -1
TIMESTAMP_CREATE = 0
TIMESTAMP_LOG_APPEND = 1

CONTROL_ABORT = 0
CONTROL_COMMIT = 1

_CONTROL_KEY = struct.Struct(">hh")
_BASE_AND_LENGTH = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_CONTROL_VALUE = struct.Struct(">hi")


def next_offset_after_batches(data: Any) -> int | None:
    """The offset after the last complete v2 batch of fetched ``data``, from batch headers
    alone (nothing decoded or checked); None when ``data`` holds no complete batch or any
    legacy (v0/v1) message, whose offsets only decoding tells.

    The fetcher prefetches a partition from here while its earlier data is still being handed
    out; the decoder's own ``next_offset`` is the truth, and data fetched from a wrong guess is
    dropped as stale.
    """
    end = len(data)
    pos = 0
    result = None
    while end - pos > 16:  # up to the magic byte
        if data[pos + 16] != 2:
            return None
        base, length = _BASE_AND_LENGTH.unpack_from(data, pos)
        if length < V2_MIN_BATCH_LENGTH or pos + LEGACY_LOG_OVERHEAD + length > end:
            break
        result = base + _INT32.unpack_from(data, pos + 23)[0] + 1
        pos += LEGACY_LOG_OVERHEAD + length
    return result


class ControlRecord(NamedTuple):
    """A parsed transaction marker: ``type`` is 0 for ABORT, 1 for COMMIT (others unknown).

    Thread-safety: immutable.
    """

    version: int
    type: int
    coordinator_epoch: int


def parse_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Parse a control record's key (version, type) and value (version, coordinator epoch).

    Raises ``ValueError`` when the key is missing or too short; a missing or short value (not a
    transaction marker) gives coordinator epoch -1.
    """
    if key is None or len(key) < _CONTROL_KEY.size:
        raise ValueError("control record key is missing or shorter than 4 bytes")
    version, ctype = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise ValueError(f"control record key has a negative version {version}")
    epoch = -1
    if value is not None and len(value) >= _CONTROL_VALUE.size:
        _, epoch = _CONTROL_VALUE.unpack_from(value)
    return ControlRecord(version, ctype, epoch)


class DecodeResult:
    """What :func:`decode_fetched_records` returns.

    ``records``: records at or after the fetch offset, in offset order, without control records
    and (under read_committed) without records of aborted transactions. ``next_offset``: the
    offset after the last complete batch seen (never below the fetch offset). ``partial``: the
    data ended with an incomplete batch (normal: the broker cuts responses at the size limit).

    Thread-safety: a plain value; not synchronised.
    """

    __slots__ = ("records", "next_offset", "partial")

    def __init__(self, records: list[ConsumerRecord], next_offset: int, partial: bool) -> None:
        """Hold the decoded ``records``, the ``next_offset`` to fetch and whether the data ended
        in a ``partial`` batch.
        """
        self.records = records
        self.next_offset = next_offset
        self.partial = partial

    def __repr__(self) -> str:
        return (
            f"DecodeResult(records=<{len(self.records)} records>, "
            f"next_offset={self.next_offset}, partial={self.partial})"
        )


class AbortedTransactions:
    """read_committed filter, as the Java client's CompletedFetch does it.

    The fetch response lists aborted transactions as (producer id, first offset). They sit in a
    min-heap by first offset; when a batch is reached whose last offset is at or after a
    transaction's first offset, that producer id becomes aborted. Its transactional batches are
    then dropped until the ABORT marker (a control batch) of that producer removes it again.

    Thread-safety: not thread-safe; one instance serves one decode call.
    """

    __slots__ = ("_heap", "_aborted")

    def __init__(self, aborted_transactions: Iterable[Mapping[str, int]] | None) -> None:
        """Index the fetch response's ``aborted_transactions`` (``first_offset``, ``producer_id``)
        by first offset.
        """
        heap: list[tuple[int, int]] = []
        for txn in aborted_transactions or ():
            heap.append((int(txn["first_offset"]), int(txn["producer_id"])))
        heapq.heapify(heap)
        self._heap = heap
        self._aborted: set[int] = set()

    def skip_batch(
        self,
        producer_id: int,
        last_offset: int,
        transactional: bool,
        control: bool,
        first_key: bytes | None,
        first_value: bytes | None,
    ) -> bool:
        """Account for one batch; True when its records belong to an aborted transaction.

        ``first_key``/``first_value`` are the first record's key and value, only consulted for
        control batches (to recognise the ABORT marker).
        """
        if producer_id == NO_PRODUCER_ID:
            return False
        heap = self._heap
        while heap and heap[0][0] <= last_offset:
            self._aborted.add(heapq.heappop(heap)[1])
        if control and first_key is not None:
            try:
                marker = parse_control_record(first_key, first_value)
            except ValueError:
                marker = None
            if marker is not None and marker.type == CONTROL_ABORT:
                self._aborted.discard(producer_id)
                return False
        return transactional and producer_id in self._aborted


def decompress_payload(
    codec: int,
    payload: bytes | bytearray | memoryview,
    magic: int,
    topic: str,
    partition: int,
    offset: int,
) -> bytes:
    """Decompress a batch payload, turning codec failures into the client's errors.

    Raises ``UnsupportedCodecError`` for an unknown codec id and ``CorruptRecordError`` for
    malformed data or a payload beyond the decompression bound (the message names the limit).
    """
    if codec not in codecs.CODEC_NAMES or codec == codecs.CODEC_NONE:
        raise UnsupportedCodecError(
            f"unknown compression codec id {codec} in the batch at offset {offset} "
            f"of {topic}-{partition}"
        )
    try:
        return codecs.decompress(codec, payload, magic=magic)
    except codecs.DecompressionLimitExceeded as exc:
        raise CorruptRecordError(
            str(exc), topic=topic, partition=partition, offset=offset
        ) from None
    except codecs.CodecError as exc:
        raise CorruptRecordError(
            f"cannot decompress the batch: {exc}", topic=topic, partition=partition, offset=offset
        ) from None
