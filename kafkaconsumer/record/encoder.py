"""The v2 RecordBatch encoder of our producer (every codec, headers, idempotent and
transactional batches); the tests build their batches with it too."""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Sequence
from typing import Any

from kafkaconsumer.record import codecs
from kafkaconsumer.record._common import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
)
from kafkaconsumer.record._crc import crc32c

logger = logging.getLogger(__name__)

Header = tuple[str, bytes | None]
#: ``(key, value, headers, timestamp_ms)``, optionally followed by an explicit offset delta
#: (leave gaps, as log compaction does). ``timestamp_ms`` None means "now".
RecordInput = Sequence[Any]

_V2_HEAD = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
_V2_REST = struct.Struct(">hiqqqhii")  # attributes .. recordCount


def encode_varint(value: int) -> bytes:
    """Zigzag + LEB128 encoding of a signed integer (Kafka's varint and varlong)."""
    z = (value << 1) ^ (value >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _codec_id(compression: str | int) -> int:
    if isinstance(compression, int):
        if compression not in codecs.CODEC_NAMES:
            raise ValueError(f"unknown compression codec id {compression}")
        return compression
    try:
        return codecs.CODEC_IDS[compression]
    except KeyError:
        raise ValueError(
            f"unknown compression {compression!r}; use one of {sorted(codecs.CODEC_IDS)}"
        ) from None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _split(record: RecordInput, index: int) -> tuple[Any, Any, Any, int, int]:
    if len(record) not in (4, 5):
        raise ValueError(
            "each record is (key, value, headers, timestamp_ms[, offset_delta]), "
            f"got {len(record)} fields"
        )
    key, value, headers, ts = record[0], record[1], record[2], record[3]
    delta = record[4] if len(record) == 5 else index
    if ts is None:
        ts = _now_ms()
    for name, field in (("key", key), ("value", value)):
        if field is not None and not isinstance(field, (bytes, bytearray, memoryview)):
            raise TypeError(f"record {name} must be bytes or None, got {type(field).__name__}")
    return key, value, headers or (), int(ts), int(delta)


# Varints of the small values that lengths and deltas almost always are.
_SMALL_VARINTS = [encode_varint(i) for i in range(-1, 1 << 12)]


def _varint(value: int) -> bytes:
    if -1 <= value < (1 << 12) - 1:
        return _SMALL_VARINTS[value + 1]
    return encode_varint(value)


def _encode_v2_record(
    key: Any, value: Any, headers: Any, ts_delta: int, offset_delta: int
) -> bytes:
    small = _SMALL_VARINTS
    limit = (1 << 12) - 1
    parts = [
        b"\x00",
        small[ts_delta + 1] if -1 <= ts_delta < limit else encode_varint(ts_delta),
        small[offset_delta + 1] if -1 <= offset_delta < limit else encode_varint(offset_delta),
    ]
    if key is None:
        parts.append(b"\x01")
    else:
        parts.append(_varint(len(key)))
        parts.append(bytes(key))
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(_varint(len(value)))
        parts.append(bytes(value))
    if not headers:
        parts.append(b"\x00")
    else:
        parts.append(_varint(len(headers)))
        for hkey, hval in headers:
            if not isinstance(hkey, str):
                raise TypeError(f"header keys must be str, got {type(hkey).__name__}")
            raw = hkey.encode("utf-8")
            parts.append(_varint(len(raw)))
            parts.append(raw)
            if hval is None:
                parts.append(b"\x01")
            else:
                parts.append(_varint(len(hval)))
                parts.append(bytes(hval))
    body = b"".join(parts)
    return _varint(len(body)) + body


def encode_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    compression: str | int = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    timestamp_type: int = 0,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
) -> bytes:
    """Encode one record batch; each record is ``(key, value, headers, timestamp_ms)``.

    A fifth element per record gives an explicit offset delta (default: its index), to leave
    the gaps of a compacted log. ``last_offset_delta`` overrides the header field (e.g. an empty batch kept by compaction).
    """
    codec = _codec_id(compression)
    if timestamp_type not in (0, 1):
        raise ValueError(
            f"timestamp_type must be 0 (create) or 1 (log append), got {timestamp_type}"
        )
    split = [_split(r, i) for i, r in enumerate(records)]
    if split:
        base_ts = split[0][3]
        max_ts = max(r[3] for r in split)
        last_delta = max(r[4] for r in split)
    else:
        base_ts = max_ts = -1
        last_delta = 0
    if last_offset_delta is not None:
        last_delta = last_offset_delta
    payload = b"".join(
        _encode_v2_record(key, value, headers, ts - base_ts, delta)
        for key, value, headers, ts, delta in split
    )
    if codec:
        payload = codecs.compress(codec, payload)
    attrs = codec
    if timestamp_type == 1:
        attrs |= ATTR_TIMESTAMP_TYPE
    if transactional:
        attrs |= ATTR_TRANSACTIONAL
    if control:
        attrs |= ATTR_CONTROL
    rest = (
        _V2_REST.pack(
            attrs,
            last_delta,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(split),
        )
        + payload
    )
    crc = crc32c(rest)
    batch_length = 4 + 1 + 4 + len(rest)
    return _V2_HEAD.pack(base_offset, batch_length, partition_leader_epoch, 2, crc) + rest
