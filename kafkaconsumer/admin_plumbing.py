"""The plumbing shared by :class:`kafkaconsumer.admin.KafkaAdminClient` and its mixins.

A call's deadline (:class:`_Deadline`), the signal that an attempt should be tried again
(:class:`_Retry`), the mapping of a broker error code to its error class (:func:`_raise_error`),
and :class:`AdminPlumbing`, the client methods the mixins
(:class:`~kafkaconsumer.admin_consumer_groups.ConsumerGroupAdmin`,
:class:`~kafkaconsumer.admin_share_groups.ShareGroupAdmin`) build their requests on. It sits
below the client and the mixins so that they import it and not each other.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import timedelta
from typing import Any, NoReturn, Protocol, TypeVar

from kafkaconsumer.errors import BrokerResponseError, for_code
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import Time

__all__ = ["AdminPlumbing"]

#: The result type of one admin call.
_R = TypeVar("_R")

_GROUP_ID_NOT_FOUND = 69
_UNSUPPORTED_VERSION = 35


class _Deadline:
    """The time left to one admin call, retries included.

    Thread-safety: confined to the call that made it.
    """

    __slots__ = ("time", "end", "budget")

    def __init__(self, time: Time, budget_ms: float) -> None:
        self.time = time
        self.budget = budget_ms
        self.end = time.monotonic_ms() + budget_ms

    def remaining(self) -> float:
        return self.end - self.time.monotonic_ms()

    def request_timeout(self) -> int:
        return max(1, int(self.remaining()))


class _Retry(Exception):
    """Internal: the operation should be tried again (after re-resolving its node)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _error(code: int, message: str | None, **context: Any) -> BrokerResponseError:
    what = ", ".join(f"{k} {v!r}" for k, v in context.items())
    text = f"{message} ({what})" if message else what
    return for_code(code)(text or None, **context)


def _raise_error(
    code: int, message: str | None, *, no_retry: Collection[int] = (), **context: Any
) -> NoReturn:
    """Raise the broker error for ``code`` (context as for :func:`_error`): wrapped in
    :class:`_Retry` when it is retriable (a coordinator or controller that moved, a leader
    election, a timeout, throttling, ...) and ``code`` is not in ``no_retry``, else as is."""
    err = _error(code, message, **context)
    if err.retriable and code not in no_retry:
        raise _Retry(err)
    raise err


def _partitions(assignment: Mapping[str, Any] | None) -> tuple[TopicPartition, ...]:
    """The sorted partitions of a KIP-848 / KIP-932 describe response's assignment."""
    return tuple(
        sorted(
            TopicPartition(t["topic_name"], int(p))
            for t in (assignment or {}).get("topic_partitions") or []
            for p in t.get("partitions") or []
        )
    )


class AdminPlumbing(Protocol):
    """What the admin mixins need of ``KafkaAdminClient``: run a call with retries within its
    timeout, find nodes, send one request.

    Thread-safety: the admin client's (one lock serialises its calls).
    """

    def _call(
        self, what: str, timeout_ms: float | timedelta | None, attempt: Callable[[_Deadline], _R]
    ) -> _R: ...

    def _coordinator(self, group_id: str, deadline: _Deadline) -> int: ...

    def _any_node(self, deadline: _Deadline) -> int: ...

    def _broker_ids(self) -> list[int]: ...

    def _api_version(self, node: int, api_key: int, deadline: _Deadline) -> int | None: ...

    def _request(
        self,
        node: int,
        api_key: int,
        body: Mapping[str, Any] | Callable[[int], Mapping[str, Any]],
        deadline: _Deadline,
    ) -> Any: ...

    def _raise(self, code: int, message: str | None, **context: Any) -> NoReturn: ...
