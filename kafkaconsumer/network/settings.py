"""The network layer's settings, typed (Java: the arguments ``NetworkClient`` is built with).

:class:`NetworkSettings` is built once from a validated client configuration
(:class:`~kafkaconsumer.config.ConsumerConfig`, ``ProducerConfig`` or ``AdminClientConfig``) by
:meth:`NetworkSettings.from_config`. It holds no defaults of its own: every value comes from the
configuration, whose key definitions are the one place a default is written. The network
client, its connections and the ConsumerNetworkClient read attributes of it, not keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kafkaconsumer.config import CONSUMER_MAX_IN_FLIGHT_REQUESTS, AbstractConfig

__all__ = ["NetworkSettings"]

_MAX_IN_FLIGHT = "max.in.flight.requests.per.connection"


class NetworkSettings(NamedTuple):
    """What the network client needs from a client configuration.

    A named tuple, not a dataclass: importing ``dataclasses`` (with ``inspect``) cost a short
    script about 4 ms of start-up.

    Thread-safety: immutable; shared freely.
    """

    bootstrap_servers: Any
    client_id: str
    client_dns_lookup: str
    security_protocol: str
    request_timeout_ms: int
    retry_backoff_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    socket_connection_setup_timeout_ms: int
    socket_connection_setup_timeout_max_ms: int
    connections_max_idle_ms: int
    max_in_flight_requests_per_connection: int
    receive_buffer_bytes: int
    send_buffer_bytes: int
    #: The largest response a fetch may ask for (``fetch.max.bytes`` or
    #: ``max.partition.fetch.bytes``, whichever is larger; 0 for clients that do not fetch):
    #: a connection accepts a response frame up to twice this.
    largest_fetch_bytes: int
    metadata_recovery_strategy: str
    metadata_recovery_rebootstrap_trigger_ms: int
    metadata_cluster_check_enable: bool
    sasl_mechanism: str
    sasl_login_refresh_window_factor: float
    sasl_login_refresh_window_jitter: float
    sasl_login_refresh_min_period_seconds: int
    sasl_login_refresh_buffer_seconds: int
    sasl_login_retry_backoff_ms: int
    sasl_login_retry_backoff_max_ms: int
    #: The whole configuration, for the TLS context and the SASL mechanisms, which read the
    #: ``ssl.*`` and ``sasl.*`` keys they need by name.
    security: Mapping[str, Any]

    @classmethod
    def from_config(cls, config: AbstractConfig) -> NetworkSettings:
        """The settings of ``config``'s client.

        The Java consumer has no ``max.in.flight.requests.per.connection`` key: it builds its
        network client with a fixed bound (:data:`~kafkaconsumer.config.
        CONSUMER_MAX_IN_FLIGHT_REQUESTS`); the producer and admin configurations have the key.
        """
        c = config
        fetch_sizes = [
            int(c[k]) for k in ("fetch.max.bytes", "max.partition.fetch.bytes") if k in c
        ]
        return cls(
            bootstrap_servers=c["bootstrap.servers"],
            client_id=str(c["client.id"] or ""),
            client_dns_lookup=str(c["client.dns.lookup"]),
            security_protocol=str(c["security.protocol"]).upper(),
            request_timeout_ms=int(c["request.timeout.ms"]),
            retry_backoff_ms=int(c["retry.backoff.ms"]),
            reconnect_backoff_ms=int(c["reconnect.backoff.ms"]),
            reconnect_backoff_max_ms=int(c["reconnect.backoff.max.ms"]),
            socket_connection_setup_timeout_ms=int(c["socket.connection.setup.timeout.ms"]),
            socket_connection_setup_timeout_max_ms=int(c["socket.connection.setup.timeout.max.ms"]),
            connections_max_idle_ms=int(c["connections.max.idle.ms"]),
            max_in_flight_requests_per_connection=int(
                c[_MAX_IN_FLIGHT] if _MAX_IN_FLIGHT in c else CONSUMER_MAX_IN_FLIGHT_REQUESTS
            ),
            receive_buffer_bytes=int(c["receive.buffer.bytes"]),
            send_buffer_bytes=int(c["send.buffer.bytes"]),
            largest_fetch_bytes=max(fetch_sizes, default=0),
            metadata_recovery_strategy=str(c["metadata.recovery.strategy"]).lower(),
            metadata_recovery_rebootstrap_trigger_ms=int(
                c["metadata.recovery.rebootstrap.trigger.ms"]
            ),
            metadata_cluster_check_enable=bool(c["metadata.cluster.check.enable"]),
            sasl_mechanism=str(c["sasl.mechanism"]).upper(),
            sasl_login_refresh_window_factor=float(c["sasl.login.refresh.window.factor"]),
            sasl_login_refresh_window_jitter=float(c["sasl.login.refresh.window.jitter"]),
            sasl_login_refresh_min_period_seconds=int(c["sasl.login.refresh.min.period.seconds"]),
            sasl_login_refresh_buffer_seconds=int(c["sasl.login.refresh.buffer.seconds"]),
            sasl_login_retry_backoff_ms=int(c["sasl.login.retry.backoff.ms"]),
            sasl_login_retry_backoff_max_ms=int(c["sasl.login.retry.backoff.max.ms"]),
            security=c,
        )
