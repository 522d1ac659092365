"""The roots of the exception hierarchy, below both :mod:`kafkaconsumer.errors` and the generated
:mod:`kafkaconsumer._error_codes` (which needs them as bases). Import them from
:mod:`kafkaconsumer.errors`.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "KafkaError",
    "AuthenticationError",
    "SaslAuthenticationError",
    "AuthorizationError",
    "BrokerResponseError",
]


class KafkaError(Exception):
    """Root of every exception raised by kafkaconsumer."""

    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False


class AuthenticationError(KafkaError):
    """The client could not authenticate to a broker (TLS or SASL)."""


class SaslAuthenticationError(AuthenticationError):
    """SASL authentication failed; the broker's message is included when it sent one."""


class AuthorizationError(KafkaError):
    """The authenticated principal is not allowed to do this."""


class BrokerResponseError(KafkaError):
    """A broker answered with a non-zero error code.

    Subclasses exist for every code; ``errno``, ``name`` and ``description`` identify it.
    Keyword arguments given at construction are kept as attributes, so callers can say which
    objects the error applies to; the ones the client sets are declared below (``None`` when
    not given). :class:`TopicAuthorizationFailedError` also has ``unauthorized_topics``.
    """

    errno: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN"
    description: ClassVar[str] = ""

    #: The broker's error message, when it sent one.
    message: str | None
    #: The topic the error is about.
    topic: str | None = None
    #: The partition (of ``topic``) the error is about.
    partition: int | None = None
    #: The partitions the error is about, with the offset asked for where that applies.
    partitions: Any = None
    #: The consumer group the error is about.
    group_id: str | None = None

    def __init__(self, message: str | None = None, **context: Any) -> None:
        """Build the message from the class's code and ``message`` (or its description); each
        ``context`` keyword (``topic=``, ``partition=``, ...) becomes an attribute.
        """
        self.message = message
        for key, value in context.items():
            setattr(self, key, value)
        text = f"[Error {self.errno}] {self.name}: {message or self.description}"
        super().__init__(text)
