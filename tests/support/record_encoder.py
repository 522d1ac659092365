"""Record data a producer of ours never writes, for the decoder's tests: transaction markers
(control batches) and legacy v0/v1 message sets, which brokers still serve."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Any

from kafkaconsumer.record import codecs
from kafkaconsumer.record._common import (
    _CONTROL_KEY,
    _CONTROL_VALUE,
    ATTR_TIMESTAMP_TYPE,
    CONTROL_ABORT,
    CONTROL_COMMIT,
)
from kafkaconsumer.record.encoder import RecordInput, _codec_id, _split, encode_batch

__all__ = ["control_key", "control_value", "encode_control_batch", "encode_legacy_message_set"]


def control_key(ctype: int, version: int = 0) -> bytes:
    """The key of a control record of type ``ctype`` (0 ABORT, 1 COMMIT)."""
    return _CONTROL_KEY.pack(version, ctype)


def control_value(coordinator_epoch: int, version: int = 0) -> bytes:
    """The value of a transaction marker written by coordinator epoch ``coordinator_epoch``."""
    return _CONTROL_VALUE.pack(version, coordinator_epoch)


def encode_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int = 0,
    base_offset: int = 0,
    coordinator_epoch: int = 0,
    timestamp_ms: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker batch: one COMMIT (``commit`` true) or ABORT control record."""
    ctype = CONTROL_COMMIT if commit else CONTROL_ABORT
    return encode_batch(
        [(control_key(ctype), control_value(coordinator_epoch), [], timestamp_ms)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def _legacy_message(
    offset: int, magic: int, attrs: int, timestamp: int, key: Any, value: Any
) -> bytes:
    parts = [struct.pack(">bb", magic, attrs)]
    if magic == 1:
        parts.append(struct.pack(">q", timestamp))
    for field in (key, value):
        if field is None:
            parts.append(struct.pack(">i", -1))
        else:
            parts.append(struct.pack(">i", len(field)))
            parts.append(bytes(field))
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def encode_legacy_message_set(
    records: Sequence[RecordInput],
    *,
    magic: int = 1,
    base_offset: int = 0,
    compression: str | int = "none",
    timestamp_type: int = 0,
) -> bytes:
    """Encode a v0/v1 message set.

    Uncompressed: one message per record at ``base_offset + offset_delta``. Compressed: one
    wrapper message whose value holds the inner messages, with relative inner offsets for
    magic 1 and absolute ones for magic 0; the wrapper carries the last absolute offset and,
    for magic 1, the largest timestamp (the log-append time when ``timestamp_type`` is 1).
    Headers are not representable and must be empty.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, got {magic}")
    codec = _codec_id(compression)
    split = [_split(r, i) for i, r in enumerate(records)]
    for rec in split:
        if rec[2]:
            raise ValueError("legacy messages cannot carry headers")
    ts_attr = ATTR_TIMESTAMP_TYPE if (magic == 1 and timestamp_type == 1) else 0
    if codec == 0:
        return b"".join(
            _legacy_message(base_offset + delta, magic, ts_attr, ts, key, value)
            for key, value, _h, ts, delta in split
        )
    if not split:
        raise ValueError("a compressed legacy wrapper needs at least one record")
    inner = b"".join(
        _legacy_message(delta if magic == 1 else base_offset + delta, magic, 0, ts, key, value)
        for key, value, _h, ts, delta in split
    )
    wrapped = codecs.compress(codec, inner, magic=magic)
    last = base_offset + max(r[4] for r in split)
    wrapper_ts = max(r[3] for r in split)
    return _legacy_message(last, magic, codec | ts_attr, wrapper_ts, None, wrapped)
