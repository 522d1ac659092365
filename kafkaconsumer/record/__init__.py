"""Kafka record batches: decode (v2 RecordBatch and legacy v0/v1 message sets), encode, codecs
and CRC checks.

Two implementations share one interface: the Cython module ``_crecords`` (fast path) and the
pure-Python reference ``_pyrecords``. The choice is made once, at import:
``KAFKACONSUMER_NO_EXTENSIONS=1`` forces the reference; otherwise the extension is used when
it was built, and a ``RuntimeWarning`` (why it is missing, what it costs, how to fix it) is
issued at import when it was not. :data:`USING_EXTENSION` tells which one is active.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kafkaconsumer.record import _pyrecords
from kafkaconsumer.record._common import (
    AbortedTransactions,
    ControlRecord,
    DecodeResult,
    parse_control_record,
)
from kafkaconsumer.record._common import (
    next_offset_after_batches as _py_next_offset,
)
from kafkaconsumer.record._pyrecords import BatchInfo, iter_batches
from kafkaconsumer.record.codecs import set_decompression_limits

if TYPE_CHECKING:
    from kafkaconsumer.record.encoder import encode_batch, encode_varint

_ENCODER_NAMES = frozenset(("encode_batch", "encode_varint"))


def __getattr__(name: str) -> Any:
    # The encoder (the producer's) loads on first use: a consumer never
    # encodes, and it is ~1.5 ms of start-up.
    if name in _ENCODER_NAMES:
        from kafkaconsumer.record import encoder

        return getattr(encoder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


logger = logging.getLogger(__name__)

#: True when the Cython decoder is in use.
USING_EXTENSION = False
_impl: ModuleType = _pyrecords


def _missing_extension_warning(exc: ImportError) -> str:
    """Say why the compiled decoder is missing, what it costs and how to get it."""
    from pathlib import Path  # only on this error path

    here = Path(__file__).resolve().parent
    built = sorted(p.name for p in here.glob("_crecords*") if p.suffix in (".so", ".pyd"))
    if built:
        cause = f"the compiled record decoder ({', '.join(built)}) failed to load: {exc}"
    else:
        cause = (
            "the compiled record decoder was not built when kafkaconsumer was installed "
            "(no C compiler or no Cython at install time)"
        )
    return (
        f"kafkaconsumer: {cause}. Using the pure-Python decoder, which decodes records up to "
        "17x slower. Fix: install a C compiler (and Python headers) and reinstall kafkaconsumer "
        "(or install a binary wheel); set KAFKACONSUMER_NO_EXTENSIONS=1 to choose the "
        "pure-Python decoder without this warning."
    )


if os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") != "1":
    try:
        from kafkaconsumer.record import _crecords
    except ImportError as exc:
        warnings.warn(_missing_extension_warning(exc), RuntimeWarning, stacklevel=2)
    else:
        _impl = _crecords
        USING_EXTENSION = True

if TYPE_CHECKING:
    # Type checkers see the protocol both record classes satisfy.
    from kafkaconsumer.record._common import ConsumerRecord
    from kafkaconsumer.record._pyrecords import ShareConsumerRecord, share_records
else:
    #: The record class of the active implementation.
    ConsumerRecord = _impl.ConsumerRecord
    #: The share consumer's record class of the active implementation (with
    #: ``delivery_count``).
    ShareConsumerRecord = _impl.ShareConsumerRecord
    #: ``share_records(records, start, stop, delivery_count)``: ``records[start:stop]`` as
    #: ShareConsumerRecords (the extension copies the fields without Python calls).
    share_records = _impl.share_records

#: ``decode_fetched_records(data, topic, partition, fetch_offset, *, check_crcs=True,
#: read_committed=False, aborted_transactions=None) -> DecodeResult`` of the active
#: implementation.
decode_fetched_records: Callable[..., DecodeResult] = _impl.decode_fetched_records
#: ``next_offset_after_batches(data) -> int | None``: where fetched ``data``'s complete v2
#: batches end, from their headers alone (the extension's C loop when it is active).
next_offset_after_batches: Callable[[Any], int | None] = getattr(
    _impl, "next_offset_after_batches", _py_next_offset
)

__all__ = [
    "USING_EXTENSION",
    "AbortedTransactions",
    "BatchInfo",
    "ConsumerRecord",
    "ControlRecord",
    "DecodeResult",
    "ShareConsumerRecord",
    "decode_fetched_records",
    "encode_batch",
    "encode_varint",
    "iter_batches",
    "next_offset_after_batches",
    "parse_control_record",
    "set_decompression_limits",
    "share_records",
]
