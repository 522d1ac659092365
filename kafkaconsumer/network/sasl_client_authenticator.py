"""The set-up requests of a broker connection once TCP (and TLS) is up: ApiVersions
negotiation, then the SASL handshake and token exchange (Java ``SaslClientAuthenticator``, and
the ApiVersions step of ``NetworkClient``).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer._version import __version__
from kafkaconsumer.errors import (
    AuthenticationError,
    KafkaError,
    RebootstrapRequiredError,
    SaslAuthenticationError,
    UnsupportedVersionError,
    for_code,
)
from kafkaconsumer.network.channel_state import ConnectionState
from kafkaconsumer.network.future import Future
from kafkaconsumer.network.sasl import OAuthTokenCache, SaslMechanism, create_mechanism
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    negotiate_version,
)

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        ApiVersionsRequest,
        ApiVersionsResponse,
        SaslAuthenticateResponse,
        SaslHandshakeResponse,
    )

logger = logging.getLogger(__name__)

__all__ = ["SaslClientAuthenticator", "CLIENT_SOFTWARE_NAME", "CLIENT_SOFTWARE_VERSION"]

CLIENT_SOFTWARE_NAME = "kafkaconsumer-python"
CLIENT_SOFTWARE_VERSION = __version__

_UNSUPPORTED_VERSION = UnsupportedVersionError.errno
_REBOOTSTRAP_REQUIRED = RebootstrapRequiredError.errno


class SaslClientAuthenticator(abc.ABC):
    """The set-up steps of :class:`~kafkaconsumer.network.connection.BrokerConnection`:
    API_VERSIONS -> AUTHENTICATING (SASL only) -> READY.

    The fields below are declared here for the type checker; ``BrokerConnection.__init__``
    sets them, and its comments say who writes them.

    Thread-safety: as ``BrokerConnection``: only the thread that owns the NetworkClient, under
    the network lock.
    """

    state: ConnectionState
    node_id: int
    host: str
    port: int
    api_versions: dict[int, int]
    broker_versions: dict[int, tuple[int, int]]
    reauth_at_ms: int
    ready_since_ms: int
    _now_ms: Callable[[], int]
    _settings: NetworkSettings
    _token_cache: OAuthTokenCache | None
    _sasl: SaslMechanism | None
    _use_sasl: bool
    _request_timeout_ms: int
    expected_cluster: tuple[str, int] | None

    @abc.abstractmethod
    def close(self, error: KafkaError | None = None) -> None:
        """Close the connection and fail what is in flight with ``error``."""

    @abc.abstractmethod
    def _enqueue(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any],
        future: Future[Any],
        timeout_ms: int,
        expect_response: bool,
    ) -> None:
        """Queue a request's frame and, when it expects one, await its response."""

    def _start_api_versions(self, version: int | None = None) -> None:
        self.state = ConnectionState.API_VERSIONS
        if version is None:
            version = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]
        body: ApiVersionsRequest = {
            "client_software_name": CLIENT_SOFTWARE_NAME,
            "client_software_version": CLIENT_SOFTWARE_VERSION,
        }
        if self.expected_cluster is not None:
            # A broker of another cluster, or another node behind this address, answers
            # REBOOTSTRAP_REQUIRED (ApiVersions v5+; older versions leave the fields out).
            body["cluster_id"], body["node_id"] = self.expected_cluster
        fut: Future[Any] = Future()
        fut.add_callback(self._on_api_versions, version)
        fut.add_errback(self._on_setup_failure)
        self._enqueue(ApiKey.API_VERSIONS, version, body, fut, self._request_timeout_ms, True)

    def _on_api_versions(self, version: int, body: ApiVersionsResponse) -> None:
        if self.state is not ConnectionState.API_VERSIONS:
            return
        code = body.get("error_code", 0)
        keys = body.get("api_keys") or []
        ranges = {int(k["api_key"]): (int(k["min_version"]), int(k["max_version"])) for k in keys}
        if code == _UNSUPPORTED_VERSION:
            # The broker answers an ApiVersions version it does not know with its own range, so
            # the client retries once with the highest version both sides know.
            broker = ranges.get(ApiKey.API_VERSIONS)
            ours = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
            retry = negotiate_version(ApiKey.API_VERSIONS, *broker) if broker else ours[0]
            if retry is None or retry >= version:
                self.close(
                    UnsupportedVersionError(
                        f"node {self.node_id} supports no ApiVersions version we know"
                    )
                )
                return
            self._start_api_versions(retry)
            return
        if code == _REBOOTSTRAP_REQUIRED:
            self.close(
                for_code(code)(
                    f"node {self.node_id} ({self.host}:{self.port}) is not the broker the "
                    "cluster metadata names: another cluster or another node answers there"
                )
            )
            return
        if code:
            self.close(for_code(code)(f"ApiVersions to node {self.node_id} failed"))
            return
        self.broker_versions = ranges
        negotiated: dict[int, int] = {}
        for key, (lo, hi) in ranges.items():
            if key in SUPPORTED_VERSIONS:
                v = negotiate_version(key, lo, hi)
                if v is not None:
                    negotiated[key] = v
        self.api_versions = negotiated
        if self._use_sasl:
            self._start_sasl()
        else:
            self._become_ready()

    def _start_sasl(self) -> None:
        self.state = ConnectionState.AUTHENTICATING
        hs_version = self.api_versions.get(ApiKey.SASL_HANDSHAKE)
        if (
            hs_version is None
            or hs_version < 1
            or ApiKey.SASL_AUTHENTICATE not in self.api_versions
        ):
            self.close(
                SaslAuthenticationError(
                    f"node {self.node_id} does not support SaslHandshake v1 / SaslAuthenticate"
                )
            )
            return
        try:
            self._sasl = create_mechanism(self._settings.security, self._token_cache)
        except KafkaError as exc:
            self.close(exc)
            return
        fut: Future[Any] = Future()
        fut.add_callback(self._on_sasl_handshake)
        fut.add_errback(self._on_setup_failure)
        self._enqueue(
            ApiKey.SASL_HANDSHAKE,
            hs_version,
            {"mechanism": self._sasl.name},
            fut,
            self._request_timeout_ms,
            True,
        )

    def _on_sasl_handshake(self, body: SaslHandshakeResponse) -> None:
        assert self._sasl is not None
        code = body.get("error_code", 0)
        if code:
            enabled = ", ".join(body.get("mechanisms") or []) or "none"
            self.close(
                SaslAuthenticationError(
                    f"node {self.node_id} does not accept SASL mechanism {self._sasl.name} "
                    f"(broker enables: {enabled})"
                )
            )
            return
        try:
            token = self._sasl.initial_response()
        except KafkaError as exc:
            self.close(exc)
            return
        self._send_sasl_token(token)

    def _send_sasl_token(self, token: bytes) -> None:
        fut: Future[Any] = Future()
        fut.add_callback(self._on_sasl_authenticate)
        fut.add_errback(self._on_setup_failure)
        self._enqueue(
            ApiKey.SASL_AUTHENTICATE,
            self.api_versions[ApiKey.SASL_AUTHENTICATE],
            {"auth_bytes": token},
            fut,
            self._request_timeout_ms,
            True,
        )

    def _on_sasl_authenticate(self, body: SaslAuthenticateResponse) -> None:
        assert self._sasl is not None
        code = body.get("error_code", 0)
        if code:
            message = body.get("error_message") or "authentication failed"
            self.close(
                SaslAuthenticationError(
                    f"SASL {self._sasl.name} authentication with node {self.node_id} failed: "
                    f"{message}"
                )
            )
            return
        try:
            reply = self._sasl.evaluate_challenge(bytes(body.get("auth_bytes") or b""))
        except AuthenticationError as exc:
            self.close(exc)
            return
        if reply is not None:
            self._send_sasl_token(reply)
            return
        if not self._sasl.is_complete():
            self.close(
                SaslAuthenticationError(
                    f"SASL {self._sasl.name} with node {self.node_id} ended incomplete"
                )
            )
            return
        lifetime = int(body.get("session_lifetime_ms") or 0)
        if lifetime > 0:
            # Reconnect a little before the broker would end the session (KIP-368); the client
            # closes the connection when idle then, rather than re-authenticating in place.
            self.reauth_at_ms = self._now_ms() + int(lifetime * 0.85)
        logger.debug("node %s: SASL %s authenticated", self.node_id, self._sasl.name)
        self._sasl = None
        self._become_ready()

    def _on_setup_failure(self, exc: BaseException) -> None:
        # The connection is already closed (the failure came from close()); nothing to add.
        logger.debug("node %s: setup request failed: %s", self.node_id, exc)

    def _become_ready(self) -> None:
        self.state = ConnectionState.READY
        self.ready_since_ms = self._now_ms()
        logger.debug("node %s (%s:%s) ready", self.node_id, self.host, self.port)
