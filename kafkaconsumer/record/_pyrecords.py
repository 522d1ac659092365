"""Pure-Python reference decoder of Kafka record batches (v2 RecordBatch, legacy v0/v1).

This is the specification the Cython module (``_crecords.pyx``) must match record for record;
the parity tests run both on the same bytes. It is also the fallback when the extension is not
built, so it is written for speed too: one pass per batch, varints decoded inline for the
common one-byte case, one slice per key and value, no per-record helper objects.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError
from kafkaconsumer.record._common import (
    ATTR_CODEC_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    LEGACY_LOG_OVERHEAD,
    LEGACY_MIN_SIZE,
    NO_PRODUCER_ID,
    TIMESTAMP_LOG_APPEND,
    TIMESTAMP_NONE,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    V2_MIN_BATCH_LENGTH,
    AbortedTransactions,
    DecodeResult,
    decompress_payload,
)
from kafkaconsumer.record._crc import crc32c

logger = logging.getLogger(__name__)

BytesLike = bytes | bytearray | memoryview

_LOG_HEADER = struct.Struct(">qi")
# partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp,
# producerId, producerEpoch, baseSequence, recordCount
_V2_HEADER = struct.Struct(">ibIhiqqqhii")
# crc, magic, attributes
_LEGACY_HEAD = struct.Struct(">Ibb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

_MIN_BATCH_LENGTH = min(min(LEGACY_MIN_SIZE.values()), V2_MIN_BATCH_LENGTH)


class ConsumerRecord:
    """One record as handed to the user (Java ``ConsumerRecord``).

    ``timestamp_type`` is 0 (CreateTime), 1 (LogAppendTime) or -1 (none, magic 0).
    ``key``/``value`` are bytes or None until the fetcher replaces them with deserialized
    values; ``serialized_key_size``/``serialized_value_size`` are -1 for a null key/value.
    ``headers`` is a list of ``(str, bytes | None)``; ``leader_epoch`` is None when unknown.

    Thread-safety: a plain mutable value; not synchronised.
    """

    __slots__ = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "_headers",
        "leader_epoch",
        "serialized_key_size",
        "serialized_value_size",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: Any,
        value: Any,
        headers: list[tuple[str, bytes | None]] | None,
        leader_epoch: int | None,
        serialized_key_size: int,
        serialized_value_size: int,
    ) -> None:
        """Set every attribute; ``headers`` None means no headers (a list is made on access)."""
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = headers
        self.leader_epoch = leader_epoch
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def headers(self) -> list[tuple[str, bytes | None]]:
        """List of ``(str, bytes | None)``; created on first access when the record has none."""
        headers = self._headers
        if headers is None:
            headers = self._headers = []
        return headers

    @headers.setter
    def headers(self, value: list[tuple[str, bytes | None]]) -> None:
        self._headers = value

    def as_tuple(self) -> tuple[Any, ...]:
        """All attributes, in declaration order (comparisons, tests)."""
        return (
            self.topic,
            self.partition,
            self.offset,
            self.timestamp,
            self.timestamp_type,
            self.key,
            self.value,
            self.headers,
            self.leader_epoch,
            self.serialized_key_size,
            self.serialized_value_size,
        )

    def __eq__(self, other: object) -> bool:
        as_tuple = getattr(other, "as_tuple", None)
        if as_tuple is None:
            return NotImplemented
        return bool(self.as_tuple() == as_tuple())

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # mutable: the fetcher rewrites key/value

    def __repr__(self) -> str:
        return (
            f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, "
            f"offset={self.offset}, timestamp={self.timestamp}, "
            f"timestamp_type={self.timestamp_type}, key={self.key!r}, value={self.value!r}, "
            f"headers={self.headers!r}, leader_epoch={self.leader_epoch})"
        )


class ShareConsumerRecord:
    """A record delivered to a share consumer: a ``ConsumerRecord`` plus ``delivery_count``
    (how many times the broker has delivered it, 1 on the first delivery; Java
    ``ConsumerRecord.deliveryCount()``).

    Thread-safety: a plain mutable value; not synchronised.
    """

    __slots__ = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
        "serialized_key_size",
        "serialized_value_size",
        "delivery_count",
    )

    def __init__(self, record: Any, delivery_count: int) -> None:
        """Copy ``record`` (a decoded ``ConsumerRecord``) and add its ``delivery_count``."""
        self.topic: str = record.topic
        self.partition: int = record.partition
        self.offset: int = record.offset
        self.timestamp: int = record.timestamp
        self.timestamp_type: int = record.timestamp_type
        self.key: Any = record.key
        self.value: Any = record.value
        self.headers: list[tuple[str, bytes | None]] = record.headers
        self.leader_epoch: int | None = record.leader_epoch
        self.serialized_key_size: int = record.serialized_key_size
        self.serialized_value_size: int = record.serialized_value_size
        self.delivery_count: int = delivery_count

    def as_tuple(self) -> tuple[Any, ...]:
        """All attributes, in declaration order."""
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return (
            f"ShareConsumerRecord(topic={self.topic!r}, partition={self.partition}, "
            f"offset={self.offset}, delivery_count={self.delivery_count}, key={self.key!r}, "
            f"value={self.value!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareConsumerRecord):
            return NotImplemented
        return self.as_tuple() == other.as_tuple()

    __hash__ = None  # type: ignore[assignment]


def share_records(
    records: list[Any], start: int, stop: int, delivery_count: int
) -> list[ShareConsumerRecord]:
    """``records[start:stop]`` as :class:`ShareConsumerRecord` with ``delivery_count``."""
    return [ShareConsumerRecord(r, delivery_count) for r in records[start:stop]]


class BatchInfo(NamedTuple):
    """Header of one batch, as :func:`iter_batches` yields it (legacy: wrapper message).

    Thread-safety: immutable.
    """

    base_offset: int
    last_offset: int
    magic: int
    crc: int
    attributes: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    size: int

    @property
    def compression(self) -> int:
        """Codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & ATTR_CODEC_MASK

    @property
    def is_transactional(self) -> bool:
        """The transactional flag (v2 only)."""
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        """The control flag (v2 only)."""
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime, -1 none (magic 0)."""
        if self.magic == 0:
            return TIMESTAMP_NONE
        return (self.attributes & ATTR_TIMESTAMP_TYPE) >> 3


class _Corrupt(Exception):
    """Internal: parsing failed; the caller adds topic, partition and offset."""


def _zigzag(buf: bytes, pos: int, max_shift: int, what: str) -> tuple[int, int]:
    """Zigzag varint at ``pos`` of at most ``max_shift // 7 + 1`` bytes: (value, next position)."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > max_shift:
            raise _Corrupt(what)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint of at most 5 bytes (int32) at ``pos``: (value, next position)."""
    return _zigzag(buf, pos, 28, "varint is longer than 5 bytes")


def _varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint of at most 10 bytes (int64) at ``pos``: (value, next position)."""
    return _zigzag(buf, pos, 63, "varlong is longer than 10 bytes")


def _parse_v2_records(
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    out: list[Any],
    topic: str,
    partition: int,
    base_offset: int,
    min_offset: int,
    base_ts: int,
    max_ts: int,
    log_append: bool,
    leader_epoch: int | None,
) -> None:
    """Parse ``count`` v2 records of ``buf[pos:end]``, appending those at or after
    ``min_offset`` to ``out`` as ConsumerRecord. Raises _Corrupt or IndexError."""
    record_cls = ConsumerRecord
    new = object.__new__
    append = out.append
    ts_type = 1 if log_append else 0
    for _ in range(count):
        # record length
        b = buf[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = _varint(buf, pos)
        rec_end = pos + length
        if length < 6 or rec_end > end:
            raise _Corrupt(f"record length {length} does not fit the batch")
        pos += 1  # record attributes: unused
        b = buf[pos]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            ts_delta, pos = _varlong(buf, pos)
        b = buf[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            offset_delta, pos = _varint(buf, pos)
        offset = base_offset + offset_delta
        if offset < min_offset:
            pos = rec_end
            continue
        # key
        b = buf[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            klen = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            klen, pos = _varint(buf, pos)
        if klen >= 0:
            key: bytes | None = buf[pos : pos + klen]
            pos += klen
            if pos > rec_end:
                raise _Corrupt("key overruns the record")
        elif klen == -1:
            key = None
        else:
            raise _Corrupt(f"negative key length {klen}")
        # value
        b = buf[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            vlen, pos = _varint(buf, pos)
        if vlen >= 0:
            value: bytes | None = buf[pos : pos + vlen]
            pos += vlen
            if pos > rec_end:
                raise _Corrupt("value overruns the record")
        elif vlen == -1:
            value = None
        else:
            raise _Corrupt(f"negative value length {vlen}")
        # headers
        b = buf[pos]
        if b < 0x80:
            hcount = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            hcount = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            hcount, pos = _varint(buf, pos)
        headers: list[tuple[str, bytes | None]] | None = None
        if hcount:
            if hcount < 0:
                raise _Corrupt(f"negative header count {hcount}")
            headers = []
            for _h in range(hcount):
                hklen, pos = _varint(buf, pos)
                if hklen < 0:
                    raise _Corrupt(f"negative header key length {hklen}")
                if pos + hklen > rec_end:
                    raise _Corrupt("header key overruns the record")
                try:
                    hkey = buf[pos : pos + hklen].decode("utf-8")
                except UnicodeDecodeError:
                    raise _Corrupt("header key is not valid UTF-8") from None
                pos += hklen
                hvlen, pos = _varint(buf, pos)
                if hvlen >= 0:
                    hval: bytes | None = buf[pos : pos + hvlen]
                    pos += hvlen
                    if pos > rec_end:
                        raise _Corrupt("header value overruns the record")
                elif hvlen == -1:
                    hval = None
                else:
                    raise _Corrupt(f"negative header value length {hvlen}")
                headers.append((hkey, hval))
        if pos != rec_end:
            raise _Corrupt(
                f"record at offset {offset} declares {length} bytes but holds {length + pos - rec_end}"
            )
        # Slot stores on a bare instance cost half of an __init__ call with 11 arguments.
        rec = new(record_cls)
        rec.topic = topic
        rec.partition = partition
        rec.offset = offset
        rec.timestamp = max_ts if log_append else base_ts + ts_delta
        rec.timestamp_type = ts_type
        rec.key = key
        rec.value = value
        rec._headers = headers
        rec.leader_epoch = leader_epoch
        rec.serialized_key_size = klen if klen >= 0 else -1
        rec.serialized_value_size = vlen if vlen >= 0 else -1
        append(rec)
    if pos != end:
        raise _Corrupt(f"{end - pos} bytes left after the batch's {count} records")


def _read_v2_keys(
    buf: bytes, pos: int, end: int, count: int
) -> list[tuple[bytes | None, bytes | None]]:
    """Keys and values of a (control) batch's records; full validation as for data records."""
    out: list[Any] = []
    _parse_v2_records(buf, pos, end, count, out, "", 0, 0, -(1 << 63), 0, 0, False, None)
    return [(r.key, r.value) for r in out]


def _corrupt(msg: str, topic: str, partition: int, offset: int) -> CorruptRecordError:
    return CorruptRecordError(msg, topic=topic, partition=partition, offset=offset)


def _decode_v2(
    buf: bytes,
    pos: int,
    size: int,
    base_offset: int,
    out: list[Any],
    topic: str,
    partition: int,
    fetch_offset: int,
    check_crcs: bool,
    txns: AbortedTransactions | None,
) -> int:
    """Decode one complete v2 batch at ``buf[pos:pos+size]``; returns its next offset."""
    if size - LEGACY_LOG_OVERHEAD < V2_MIN_BATCH_LENGTH:
        raise _corrupt(
            f"v2 batch length {size - 12} is below the minimum", topic, partition, base_offset
        )
    (
        leader_epoch,
        _magic,
        crc,
        attrs,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        _epoch,
        _seq,
        count,
    ) = _V2_HEADER.unpack_from(buf, pos + LEGACY_LOG_OVERHEAD)
    end = pos + size
    if check_crcs:
        actual = crc32c(memoryview(buf)[pos + V2_ATTRIBUTES_OFFSET : end])
        if actual != crc:
            raise _corrupt(
                f"CRC32C mismatch: batch says {crc:#010x}, bytes give {actual:#010x}",
                topic,
                partition,
                base_offset,
            )
    if count < 0:
        raise _corrupt(f"negative record count {count}", topic, partition, base_offset)
    next_offset: int = base_offset + last_delta + 1
    if attrs & ATTR_CONTROL:
        if txns is not None:
            first_key: bytes | None = None
            first_value: bytes | None = None
            if producer_id != NO_PRODUCER_ID and count:
                payload, ppos, pend = _payload(buf, pos, end, attrs, topic, partition, base_offset)
                try:
                    pairs = _read_v2_keys(payload, ppos, pend, count)
                except (_Corrupt, IndexError) as exc:
                    raise _corrupt(_why(exc), topic, partition, base_offset) from None
                first_key, first_value = pairs[0]
            txns.skip_batch(
                producer_id,
                next_offset - 1,
                bool(attrs & ATTR_TRANSACTIONAL),
                True,
                first_key,
                first_value,
            )
        # Control records never reach the user; they only advance the position.
        return next_offset
    if txns is not None and txns.skip_batch(
        producer_id, next_offset - 1, bool(attrs & ATTR_TRANSACTIONAL), False, None, None
    ):
        return next_offset
    if next_offset <= fetch_offset or count == 0:
        return next_offset
    payload, ppos, pend = _payload(buf, pos, end, attrs, topic, partition, base_offset)
    try:
        _parse_v2_records(
            payload,
            ppos,
            pend,
            count,
            out,
            topic,
            partition,
            base_offset,
            fetch_offset,
            base_ts,
            max_ts,
            bool(attrs & ATTR_TIMESTAMP_TYPE),
            None if leader_epoch < 0 else leader_epoch,
        )
    except (_Corrupt, IndexError) as exc:
        raise _corrupt(_why(exc), topic, partition, base_offset) from None
    return next_offset


def _why(exc: Exception) -> str:
    if isinstance(exc, IndexError):
        return "record data is truncated inside the batch"
    return str(exc)


def _payload(
    buf: bytes, pos: int, end: int, attrs: int, topic: str, partition: int, base_offset: int
) -> tuple[bytes, int, int]:
    codec = attrs & ATTR_CODEC_MASK
    start = pos + V2_HEADER_SIZE
    if codec == 0:
        return buf, start, end
    data = decompress_payload(codec, memoryview(buf)[start:end], 2, topic, partition, base_offset)
    return data, 0, len(data)


# ----------------------------------------------------------------------------- legacy v0/v1


def _parse_legacy_message(
    buf: bytes, pos: int, end: int
) -> tuple[int, int, int, int, int, int, bytes | None, bytes | None, int]:
    """One legacy message at ``buf[pos:end]``: (offset, crc, magic, attrs, timestamp,
    crc_start, key, value, message_end)."""
    offset, size = _LOG_HEADER.unpack_from(buf, pos)
    msg_end = pos + LEGACY_LOG_OVERHEAD + size
    if msg_end > end:
        raise _Corrupt("message overruns its container")
    p = pos + LEGACY_LOG_OVERHEAD
    crc, magic, attrs = _LEGACY_HEAD.unpack_from(buf, p)
    if magic not in LEGACY_MIN_SIZE:
        raise _Corrupt(f"unknown magic byte {magic}")
    if size < LEGACY_MIN_SIZE[magic]:
        raise _Corrupt(f"message size {size} is below the minimum for magic {magic}")
    crc_start = p + 4
    p += 6
    timestamp = -1
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, p)
        p += 8
    (klen,) = _INT32.unpack_from(buf, p)
    p += 4
    if klen >= 0:
        if p + klen > msg_end:
            raise _Corrupt("key overruns the message")
        key: bytes | None = buf[p : p + klen]
        p += klen
    elif klen == -1:
        key = None
    else:
        raise _Corrupt(f"negative key length {klen}")
    if p + 4 > msg_end:
        raise _Corrupt("message is truncated before its value")
    (vlen,) = _INT32.unpack_from(buf, p)
    p += 4
    if vlen >= 0:
        if p + vlen > msg_end:
            raise _Corrupt("value overruns the message")
        value: bytes | None = buf[p : p + vlen]
        p += vlen
    elif vlen == -1:
        value = None
    else:
        raise _Corrupt(f"negative value length {vlen}")
    if p != msg_end:
        raise _Corrupt(f"{msg_end - p} unexpected bytes after the message value")
    return offset, crc, magic, attrs, timestamp, crc_start, key, value, msg_end


def _decode_legacy(
    buf: bytes,
    pos: int,
    size: int,
    out: list[Any],
    topic: str,
    partition: int,
    fetch_offset: int,
    check_crcs: bool,
) -> int:
    """Decode one complete legacy message (maybe a compressed wrapper); returns next offset."""
    try:
        offset, crc, magic, attrs, timestamp, crc_start, key, value, end = _parse_legacy_message(
            buf, pos, pos + size
        )
    except (_Corrupt, struct.error, IndexError) as exc:
        wrapper_offset = _LOG_HEADER.unpack_from(buf, pos)[0]
        raise _corrupt(_why_legacy(exc), topic, partition, wrapper_offset) from None
    if check_crcs:
        actual = zlib.crc32(memoryview(buf)[crc_start:end])
        if actual != crc:
            raise _corrupt(
                f"CRC32 mismatch: message says {crc:#010x}, bytes give {actual:#010x}",
                topic,
                partition,
                offset,
            )
    codec = attrs & ATTR_CODEC_MASK
    ts_type = TIMESTAMP_NONE if magic == 0 else (attrs & ATTR_TIMESTAMP_TYPE) >> 3
    if codec == 0:
        if offset >= fetch_offset:
            out.append(
                ConsumerRecord(
                    topic,
                    partition,
                    offset,
                    timestamp,
                    ts_type,
                    key,
                    value,
                    None,
                    None,
                    -1 if key is None else len(key),
                    -1 if value is None else len(value),
                )
            )
        return offset + 1
    if offset + 1 <= fetch_offset:
        return offset + 1
    if value is None:
        raise _corrupt("compressed wrapper message has no value", topic, partition, offset)
    inner = decompress_payload(codec, value, magic, topic, partition, offset)
    messages = []
    ipos = 0
    iend = len(inner)
    try:
        while ipos < iend:
            msg = _parse_legacy_message(inner, ipos, iend)
            messages.append(msg)
            ipos = msg[8]
    except (_Corrupt, struct.error, IndexError) as exc:
        raise _corrupt(
            "inner message set of a compressed message: " + _why_legacy(exc),
            topic,
            partition,
            offset,
        ) from None
    if not messages:
        return offset + 1
    # Magic 1 wrappers hold relative inner offsets (0..n-1); the wrapper carries the last
    # absolute one. Magic 0 inner messages carry absolute offsets.
    base = offset - messages[-1][0] if magic > 0 else 0
    log_append = magic > 0 and ts_type == TIMESTAMP_LOG_APPEND
    for ioffset, icrc, imagic, iattrs, its, icrc_start, ikey, ivalue, iend_ in messages:
        if check_crcs:
            actual = zlib.crc32(memoryview(inner)[icrc_start:iend_])
            if actual != icrc:
                raise _corrupt(
                    f"CRC32 mismatch in a compressed message: says {icrc:#010x}, bytes give {actual:#010x}",
                    topic,
                    partition,
                    base + ioffset,
                )
        if iattrs & ATTR_CODEC_MASK:
            raise _corrupt("compressed message nests compression", topic, partition, offset)
        abs_offset = base + ioffset
        if abs_offset < fetch_offset:
            continue
        if log_append:
            rts, rtype = timestamp, TIMESTAMP_LOG_APPEND
        elif imagic == 0:
            rts, rtype = -1, TIMESTAMP_NONE
        else:
            rts, rtype = its, (iattrs & ATTR_TIMESTAMP_TYPE) >> 3
        out.append(
            ConsumerRecord(
                topic,
                partition,
                abs_offset,
                rts,
                rtype,
                ikey,
                ivalue,
                None,
                None,
                -1 if ikey is None else len(ikey),
                -1 if ivalue is None else len(ivalue),
            )
        )
    return offset + 1


def _why_legacy(exc: Exception) -> str:
    if isinstance(exc, (IndexError, struct.error)):
        return "message data is truncated"
    return str(exc)


# ----------------------------------------------------------------------------- entry points


def decode_fetched_records(
    data: BytesLike | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
) -> DecodeResult:
    """Decode a Fetch response partition's ``records`` into ConsumerRecords.

    See docs/internals.md (record/) for the contract. Raises ``CorruptRecordError`` (bad CRC,
    malformed bytes, decompression bomb), ``UnsupportedCodecError`` (unknown codec id) and
    ``RecordTooLargeError`` (the first batch is larger than the whole response).
    """
    out: list[Any] = []
    if data is None:
        return DecodeResult(out, fetch_offset, False)
    buf = data if isinstance(data, bytes) else bytes(data)
    n = len(buf)
    txns = AbortedTransactions(aborted_transactions) if read_committed else None
    next_offset = fetch_offset
    partial = False
    pos = 0
    while pos < n:
        if n - pos < LEGACY_LOG_OVERHEAD:
            partial = True
            break
        base_offset, length = _LOG_HEADER.unpack_from(buf, pos)
        if length < _MIN_BATCH_LENGTH:
            raise _corrupt(
                f"batch length {length} is below the minimum", topic, partition, base_offset
            )
        size = LEGACY_LOG_OVERHEAD + length
        if n - pos < size:
            partial = True
            if pos == 0:
                raise RecordTooLargeError(topic, partition, fetch_offset, size)
            break
        magic = buf[pos + 16]
        if magic == 2:
            batch_next = _decode_v2(
                buf, pos, size, base_offset, out, topic, partition, fetch_offset, check_crcs, txns
            )
        elif magic == 0 or magic == 1:
            batch_next = _decode_legacy(
                buf, pos, size, out, topic, partition, fetch_offset, check_crcs
            )
        else:
            raise _corrupt(f"unknown magic byte {magic}", topic, partition, base_offset)
        if batch_next > next_offset:
            next_offset = batch_next
        pos += size
    return DecodeResult(out, next_offset, partial)


def iter_batches(data: BytesLike) -> Iterator[BatchInfo]:
    """Headers of the complete batches in ``data`` (no CRC check, no decompression).

    Legacy messages are reported one per (possibly compressed wrapper) message. Stops at a
    partial trailing batch.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    pos = 0
    n = len(buf)
    while n - pos >= LEGACY_LOG_OVERHEAD + 5:
        base_offset, length = _LOG_HEADER.unpack_from(buf, pos)
        size = LEGACY_LOG_OVERHEAD + length
        if length < _MIN_BATCH_LENGTH or n - pos < size:
            return
        magic = buf[pos + 16]
        if magic == 2 and length >= V2_MIN_BATCH_LENGTH:
            (ple, _m, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, seq, count) = (
                _V2_HEADER.unpack_from(buf, pos + LEGACY_LOG_OVERHEAD)
            )
            yield BatchInfo(
                base_offset,
                base_offset + last_delta,
                2,
                crc,
                attrs,
                ple,
                base_ts,
                max_ts,
                pid,
                pepoch,
                seq,
                count,
                size,
            )
        elif magic in (0, 1):
            crc, _m, attrs = _LEGACY_HEAD.unpack_from(buf, pos + LEGACY_LOG_OVERHEAD)
            ts = _INT64.unpack_from(buf, pos + 18)[0] if magic == 1 else -1
            yield BatchInfo(
                base_offset, base_offset, magic, crc, attrs, -1, ts, ts, -1, -1, -1, 1, size
            )
        else:
            return
        pos += size
