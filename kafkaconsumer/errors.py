"""The exception hierarchy of kafkaconsumer and the table of broker error codes.

Every exception the library raises derives from :class:`KafkaError`. Two families sit below it:

* client-side errors (:class:`KafkaConnectionError`, :class:`KafkaTimeoutError`,
  :class:`KafkaProtocolError`, :class:`CorruptRecordError`, :class:`ConfigError`, ...), raised by
  the client itself;
* :class:`BrokerResponseError` and one subclass per error code of the Kafka protocol, raised when
  a broker answers with that code. :func:`for_code` maps a code to its class.

Each class carries ``retriable`` (trying again may succeed) and ``invalid_metadata`` (refresh the
cluster metadata before trying again), the two facts the client's retry logic needs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from kafkaconsumer._error_base import (
    AuthenticationError,
    AuthorizationError,
    BrokerResponseError,
    KafkaError,
    SaslAuthenticationError,
)
from kafkaconsumer._error_codes import *  # noqa: F403
from kafkaconsumer._error_codes import __all__ as _generated_names

if TYPE_CHECKING:
    from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

__all__ = [
    "KafkaError",
    "KafkaConnectionError",
    "NodeNotReadyError",
    "KafkaTimeoutError",
    "KafkaProtocolError",
    "UnsupportedCodecError",
    "CorruptRecordError",
    "RecordTooLargeError",
    "ConfigError",
    "AuthenticationError",
    "SaslAuthenticationError",
    "SslAuthenticationError",
    "AuthorizationError",
    "WakeupError",
    "InterruptError",
    "CommitFailedError",
    "RetriableCommitFailedError",
    "ConcurrentModificationError",
    "IllegalStateError",
    "NoOffsetForPartitionError",
    "RecordDeserializationError",
    "SerializationError",
    "BrokerResponseError",
    "UnknownErrorCodeError",
    "LogTruncationError",
    "for_code",
    "raise_for_code",
    "error_codes",
    *_generated_names,
]


# --------------------------------------------------------------------------- client-side errors


class KafkaConnectionError(KafkaError):
    """A connection to a broker could not be made, or broke while in use."""

    retriable = True


class NodeNotReadyError(KafkaError):
    """The connection to the node is not ready to take a request yet."""

    retriable = True


class KafkaTimeoutError(KafkaError):
    """An operation did not complete within its timeout."""

    retriable = True


class KafkaProtocolError(KafkaError):
    """Bytes on the wire do not form a valid message of the Kafka protocol."""


class UnsupportedCodecError(KafkaError):
    """A record batch uses a compression codec this client cannot decode."""


class CorruptRecordError(KafkaError):
    """A record batch failed its CRC check or could not be parsed.

    ``topic``, ``partition`` and ``offset`` say where (offset of the batch's first record, or the
    fetch position when the batch header itself is unreadable).
    """

    def __init__(
        self,
        message: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        """Record ``message`` and where the corruption was found (any of them may be unknown)."""
        self.topic = topic
        self.partition = partition
        self.offset = offset
        where = ""
        if topic is not None:
            where = f" (topic {topic!r}, partition {partition}, offset {offset})"
        super().__init__(message + where)


class RecordTooLargeError(KafkaError):
    """A record batch is larger than the whole fetch response could carry.

    Raise ``max.partition.fetch.bytes`` (and ``fetch.max.bytes``) to at least ``size``.
    """

    def __init__(self, topic: str, partition: int, offset: int, size: int) -> None:
        """Record where the oversized batch starts and its ``size`` in bytes."""
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.size = size
        super().__init__(
            f"the batch at offset {offset} of {topic}-{partition} is {size} bytes, larger than "
            f"the fetch response allowed; raise max.partition.fetch.bytes to at least {size}"
        )


class ConfigError(KafkaError, ValueError):
    """A configuration key is unknown or its value is invalid."""


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake failed (untrusted or expired certificate, hostname mismatch, ...)."""


class WakeupError(KafkaError):
    """A blocking call was interrupted by ``KafkaConsumer.wakeup()``."""


class InterruptError(KafkaError):
    """A blocking call was interrupted (the calling thread is shutting down)."""


class CommitFailedError(KafkaError):
    """An offset commit cannot be completed because the group has moved on.

    Typically the consumer was removed from the group (it did not call ``poll()`` within
    ``max.poll.interval.ms``, or its session expired) and its partitions were given to another
    member. Committing offsets for them now could overwrite the new owner's progress.
    """


class RetriableCommitFailedError(KafkaError):
    """An asynchronous offset commit failed with a retriable error (the coordinator moved, a
    request timed out); a later commit of newer offsets may succeed."""

    retriable = True


class ConcurrentModificationError(KafkaError):
    """A second thread called into a consumer that is not thread-safe."""


class IllegalStateError(KafkaError):
    """The call is not valid in the consumer's current state."""


class NoOffsetForPartitionError(KafkaError):
    """Partitions have no position and ``auto.offset.reset`` is ``none``."""

    def __init__(self, partitions: Iterable[Any]) -> None:
        """Record the ``partitions`` that have no position."""
        self.partitions = set(partitions)
        names = ", ".join(sorted(str(p) for p in self.partitions))
        super().__init__(f"no position and no reset policy for partitions: {names}")


class RecordDeserializationError(KafkaError):
    """A key or value deserializer failed on a record.

    The consumer's position stays on that record; ``seek`` past ``offset`` to skip it.
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        is_key: bool,
        cause: BaseException,
    ) -> None:
        """Record which record failed, whether its key (``is_key``) or value, and the ``cause``."""
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.is_key = is_key
        self.cause = cause
        what = "key" if is_key else "value"
        super().__init__(
            f"could not deserialize the {what} of the record at offset {offset} of "
            f"{topic}-{partition}: {cause!r}; seek past it to go on"
        )


class SerializationError(KafkaError):
    """A serializer or deserializer could not convert a value (Java ``SerializationException``).

    The consumer wraps it in :class:`RecordDeserializationError`, which says where it happened.
    """


# --------------------------------------------------------------------------- broker error codes
# One subclass of BrokerResponseError per code lives in _error_codes.py, generated by
# tools/gen_errors.py from its table and imported at the end of this module.


class UnknownErrorCodeError(BrokerResponseError):
    """The broker sent an error code this client does not know; treated as retriable.

    :func:`for_code` gives each unknown code one subclass (the same class every time), named
    ``UnknownErrorCode<code>Error``, whose ``errno`` is that code.
    """

    errno = -2
    name = "UNKNOWN_ERROR_CODE"
    description = "The broker sent an error code this client does not know."
    retriable = True


class LogTruncationError(OffsetOutOfRangeError):  # noqa: F405  (a generated class)
    """The log was truncated below the consumer's position and ``auto.offset.reset`` is none.

    ``divergent_offsets`` maps each partition to the first offset known to diverge (Java
    ``LogTruncationException.divergentOffsets``).
    """

    def __init__(
        self, message: str, divergent_offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """Record ``message`` and the ``divergent_offsets`` found per partition."""
        super().__init__(message)
        self.divergent_offsets: dict[TopicPartition, OffsetAndMetadata] = dict(divergent_offsets)


def _collect() -> dict[int, type[BrokerResponseError]]:
    table: dict[int, type[BrokerResponseError]] = {}
    for name in _generated_names:
        cls = globals()[name]
        table[cls.errno] = cls
    return table


_BY_CODE: dict[int, type[BrokerResponseError]] = _collect()
# Classes made for codes newer than this client, one per code so that `except` and `is` work.
_UNKNOWN_BY_CODE: dict[int, type[UnknownErrorCodeError]] = {}
_UNKNOWN_LOCK = threading.Lock()


def error_codes() -> dict[int, type[BrokerResponseError]]:
    """Return a copy of the code -> exception class table (every code Kafka defines)."""
    return dict(_BY_CODE)


def for_code(code: int) -> type[BrokerResponseError]:
    """Return the exception class of a broker error code.

    An unknown code maps to a subclass of :class:`UnknownErrorCodeError` that keeps the code (one
    class per code), as the Java client treats unknown codes as retriable. Code 0 (no error) is a
    ``ValueError``.
    """
    if code == 0:
        raise ValueError("error code 0 means success")
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    with _UNKNOWN_LOCK:
        unknown = _UNKNOWN_BY_CODE.get(code)
        if unknown is None:
            unknown = type(
                f"UnknownErrorCode{code}Error".replace("-", "Minus"),
                (UnknownErrorCodeError,),
                {"errno": code, "__doc__": f"The broker sent error code {code}, unknown here."},
            )
            _UNKNOWN_BY_CODE[code] = unknown
        return unknown


def raise_for_code(code: int, message: str | None = None, **context: Any) -> None:
    """Raise the exception of ``code`` (with ``message`` and context attributes); no-op on 0."""
    if code:
        _raise(for_code(code), message, context)


def _raise(
    cls: type[BrokerResponseError], message: str | None, context: dict[str, Any]
) -> NoReturn:
    raise cls(message, **context)
