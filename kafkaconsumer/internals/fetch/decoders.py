"""How the fetch collector turns a partition's fetched bytes into what ``poll()`` hands out.

A :class:`RecordDecoder` is handed to the collector with each collect: :class:`ObjectDecoder`
(``poll()``: record objects, through the configured deserializers) or
``arrow_decoder.ArrowDecoder`` (``poll_arrow()``: Arrow record batches, raw bytes). The collector
does everything else the same way for both: positions, pausing, ``max.poll.records``, errors.
An application may switch between the two mid-partition: each converts what the other decoded.
"""

from __future__ import annotations

from typing import Any, Protocol

from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch
from kafkaconsumer.internals.fetch.decode_pool import DecodePool
from kafkaconsumer.internals.fetch.fetch_buffer import FetchBuffer
from kafkaconsumer.internals.fetch.fetch_config import FetchConfig
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.record import ConsumerRecord, decode_fetched_records

__all__ = ["CollectorView", "DecodeOptions", "ObjectDecoder", "RecordDecoder"]

#: The keyword arguments every decoder takes for one partition's data: ``check_crcs``,
#: ``read_committed`` and ``aborted_transactions``.
DecodeOptions = dict[str, Any]


class CollectorView(Protocol):
    """What a decoder may read of the collector that calls it (``FetchCollector``).

    Thread-safety: the collector's; used on the user's thread.
    """

    buffer: FetchBuffer
    subscriptions: SubscriptionState
    config: FetchConfig
    decode_pool: DecodePool

    def decode_options(self, cf: CompletedFetch) -> DecodeOptions:
        """The keyword arguments every decoder takes for ``cf``'s data."""
        ...


class RecordDecoder(Protocol):
    """One way of decoding and handing out fetched records (a strategy of the collector).

    Thread-safety: used on the user's thread only, within ``poll()``.
    """

    def prepare(self, collector: CollectorView, max_records: int) -> int:
        """Called once per collect before any record is handed out; returns the number of
        records this collect may hand out (at most ``max_records``)."""
        ...

    def decode(
        self, cf: CompletedFetch, data: tuple[Any, str, int, int], options: DecodeOptions
    ) -> tuple[Any, int]:
        """Decode ``data`` (``records, topic, partition, fetch_offset``) of ``cf``:
        ``(records, next_offset)`` with ``records`` in the form :meth:`take` hands out."""
        ...

    def take(self, cf: CompletedFetch, max_records: int) -> Any:
        """Hand out up to ``max_records`` of ``cf``'s decoded records (converting what the other
        decoder left of it first)."""
        ...


class ObjectDecoder:
    """Records as ``ConsumerRecord`` objects, keys and values through the deserializers.

    Thread-safety: immutable after construction; used on the user's thread.
    """

    __slots__ = ("_key_deserializer", "_value_deserializer")

    def __init__(self, key_deserializer: Any = None, value_deserializer: Any = None) -> None:
        """Deserialize keys and values with these (None: raw bytes)."""
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer

    def prepare(self, collector: CollectorView, max_records: int) -> int:
        """Nothing to prepare: each partition is decoded when it reaches the head."""
        return max_records

    def decode(
        self, cf: CompletedFetch, data: tuple[Any, str, int, int], options: DecodeOptions
    ) -> tuple[Any, int]:
        """The active object decoder (Cython or pure Python) on ``data``."""
        result = decode_fetched_records(*data, **options)
        return result.records, result.next_offset

    def take(self, cf: CompletedFetch, max_records: int) -> Any:
        """A list slice of ``cf``'s records, deserialized."""
        if not isinstance(cf.records, list):
            # Decoded for poll_arrow(); poll() wants ConsumerRecords.
            cf.convert_remaining(lambda rest: rest.to_records(ConsumerRecord))
        return cf.fetch_records(max_records, self._key_deserializer, self._value_deserializer)
