"""Kafka record batches: decode (v2 RecordBatch and legacy v0/v1 message sets), encode, codecs
and CRC checks.

Two implementations share one interface: the Cython module ``_crecords`` (fast path) and the
pure-Python reference ``_pyrecords``. The choice is made once, at import:
``KAFKACONSUMER_NO_EXTENSIONS=1`` forces the reference; otherwise the extension is used when
it was built. :data:`USING_EXTENSION` tells which one is active.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from kafkaconsumer.record import _pyrecords
from kafkaconsumer.record._common import (
    AbortedTransactions,
    ControlRecord,
    DecodeResult,
    next_offset_after_batches,
    parse_control_record,
)
from kafkaconsumer.record._pyrecords import BatchInfo, iter_batches
from kafkaconsumer.record.codecs import set_decompression_limits
from kafkaconsumer.record.encoder import (
    encode_batch,
    encode_control_batch,
    encode_legacy_message_set,
    encode_varint,
)

logger = logging.getLogger(__name__)

_impl: Any = _pyrecords
#: True when the Cython decoder is in use.
USING_EXTENSION = False

if os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") != "1":
    try:
        from kafkaconsumer.record import _crecords  # type: ignore[attr-defined]
    except ImportError as exc:
        logger.debug("Cython record decoder not available (%s); using the pure-Python one", exc)
    else:
        _impl = _crecords
        USING_EXTENSION = True

#: The record class of the active implementation.
ConsumerRecord = _impl.ConsumerRecord
#: ``decode_fetched_records(data, topic, partition, fetch_offset, *, check_crcs=True,
#: read_committed=False, aborted_transactions=None) -> DecodeResult`` of the active
#: implementation.
decode_fetched_records = _impl.decode_fetched_records

__all__ = [
    "USING_EXTENSION",
    "AbortedTransactions",
    "BatchInfo",
    "ConsumerRecord",
    "ControlRecord",
    "DecodeResult",
    "decode_fetched_records",
    "encode_batch",
    "encode_control_batch",
    "encode_legacy_message_set",
    "encode_varint",
    "iter_batches",
    "next_offset_after_batches",
    "parse_control_record",
    "set_decompression_limits",
]
