"""A request sent on a connection and waiting for its response (Java
``NetworkClient.InFlightRequest``)."""

from __future__ import annotations

from typing import Any

from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey

__all__ = ["InFlightRequest", "api_name"]


class InFlightRequest:
    """A request written (or being written) to the socket and waiting for its response.

    Thread-safety: owned by one connection; not shared.
    """

    __slots__ = (
        "correlation_id",
        "api_key",
        "api_version",
        "future",
        "deadline_ms",
        "send_ms",
        "timeout_ms",
    )

    def __init__(
        self,
        correlation_id: int,
        api_key: int,
        api_version: int,
        future: Future[Any],
        send_ms: int,
        timeout_ms: int,
    ) -> None:
        """Describe a request sent at ``send_ms`` that expires ``timeout_ms`` later; ``future``
        completes with its decoded response.
        """
        # Set once here; the request lives in its connection's in-flight queue (network lock).
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.future = future
        self.send_ms = send_ms
        self.timeout_ms = timeout_ms
        self.deadline_ms = send_ms + timeout_ms


def api_name(api_key: int) -> str:
    """The name of ``api_key`` for messages (``api N`` for a key we do not name)."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api {api_key}"
