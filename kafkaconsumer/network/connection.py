"""One connection to one broker (Java: ``KafkaChannel`` and the per-connection half of
``NetworkClient``).

A :class:`BrokerConnection` is a non-blocking state machine::

    DISCONNECTED -> CONNECTING -> HANDSHAKE (TLS only) -> API_VERSIONS
                 -> AUTHENTICATING (SASL only) -> READY

It owns the socket, the send buffer (partial writes resume where they stopped), the receive
buffer (partial reads accumulate until a whole size-prefixed frame is there), and the queue of
in-flight requests. Responses arrive in request order on a Kafka connection, so every response's
correlation id must match the oldest in-flight request; a mismatch or undecodable bytes close the
connection. A frame size is checked before anything is allocated for it: before READY it must
fit an ApiVersions/SASL answer (1 MiB), after READY twice the largest fetch we ask for (at least
64 MiB), as Java's ``NetworkReceive`` bounds its receives. A peer whose first bytes are a TLS
record or an HTTP (or other text protocol) reply is named in the error, logged at WARNING. The owning :class:`~kafkaconsumer.network.client.NetworkClient` registers the socket
with its selector (:meth:`BrokerConnection.interest`) and calls :meth:`BrokerConnection.on_io`.
While a large response is partly in, the socket's ``SO_RCVLOWAT`` (Linux 5.7+, see
``_LOWAT_MIN``) makes the selector report it only once a large piece of the rest has arrived.
"""

from __future__ import annotations

import collections
import enum
import errno
import logging
import mmap
import os
import re
import selectors
import socket
import struct
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer._version import __version__
from kafkaconsumer.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    SaslAuthenticationError,
    SslAuthenticationError,
    UnsupportedVersionError,
    for_code,
)
from kafkaconsumer.network.future import Future
from kafkaconsumer.network.sasl import OAuthTokenCache, SaslMechanism, create_mechanism
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_response,
    encode_request,
    negotiate_version,
)

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import ssl

    from kafkaconsumer.protocol.message_types import (
        ApiVersionsRequest,
        ApiVersionsResponse,
        SaslAuthenticateResponse,
        SaslHandshakeResponse,
    )


class _NoTls(Exception):
    """Stands for the ``ssl`` module's exception and socket classes until a TLS connection is
    made: ``ssl`` takes ~7 ms to import, a plaintext client never needs it, and the except
    clauses naming them are reached by every would-block read (BlockingIOError).

    Thread-safety: never instantiated; the names bound to it change once, under the network
    lock, when the first TLS connection is built.
    """


# Any: each is the ssl class of that name once _load_ssl ran.
_SSLError: Any = _NoTls
_SSLWantReadError: Any = _NoTls
_SSLWantWriteError: Any = _NoTls
_SSLCertVerificationError: Any = _NoTls
_SSLSocket: Any = _NoTls


def host_for_lookup(host: str) -> str | bytes:
    """``host`` as ``socket.getaddrinfo`` should get it: an ASCII name as bytes, so that the
    lookup does not load the IDNA codec (about a millisecond of start-up); others as they are
    (getaddrinfo IDNA-encodes them)."""
    return host.encode("ascii") if host.isascii() else host


def _load_ssl() -> None:
    """Bind the ``ssl`` names above (a TLS connection is being made)."""
    global _SSLError, _SSLWantReadError, _SSLWantWriteError, _SSLCertVerificationError
    global _SSLSocket
    import ssl

    _SSLError = ssl.SSLError
    _SSLWantReadError = ssl.SSLWantReadError
    _SSLWantWriteError = ssl.SSLWantWriteError
    _SSLCertVerificationError = ssl.SSLCertVerificationError
    _SSLSocket = ssl.SSLSocket


__all__ = [
    "ConnectionState",
    "BrokerConnection",
    "InFlightRequest",
    "CLIENT_SOFTWARE_NAME",
    "CLIENT_SOFTWARE_VERSION",
    "describe_foreign_peer",
]

CLIENT_SOFTWARE_NAME = "kafkaconsumer-python"
CLIENT_SOFTWARE_VERSION = __version__

_SIZE = struct.Struct(">i")
_CHUNK = 65536
# Response buffers of at least this size are kept (up to _POOL_SIZE per connection) and reused
# once nothing refers to them: a fresh one costs a page fault per 4 KiB (and, as a bytearray,
# a zero fill too: see _large_buffer), more than receiving into it (a third of the consumer's
# CPU with 50 MB responses).
_POOL_MIN = 1 << 20
_POOL_SIZE = 2
# While a response of at least _LOWAT_MIN bytes is partly received, the socket's SO_RCVLOWAT
# asks the selector to report it readable only once up to _LOWAT_MAX more bytes of it are in
# (never more than the rest): a multi-MiB response then takes a few large reads instead of one
# network-loop round per few hundred KiB, and the thread sleeps meanwhile (the broker shares
# the machine's cores). Linux also grows an autotuned receive buffer to hold the mark (alone it
# stays under 1 MiB on loopback, leaving the broker little room to send ahead).
#
# Only on Linux 5.7 or later: since 4.18 the kernel caps the mark at half a fixed receive
# buffer and grows an autotuned one to hold it, and since 5.7 it reports the socket readable
# below the mark when the receive window closes or memory runs short. An older kernel would
# let a small receive buffer fill below the mark and never report the socket: the response
# would wait for request.timeout.ms. A receive buffer set by receive.buffer.bytes also caps
# the mark at a quarter of it.
_LOWAT_MIN = 256 * 1024
_LOWAT_MAX = 2 << 20


def _kernel_at_least(release: str, wanted: tuple[int, int]) -> bool:
    """Whether a Linux release string (``os.uname().release``) is ``wanted`` or later."""
    found = re.match(r"(\d+)\.(\d+)", release)
    return found is not None and (int(found[1]), int(found[2])) >= wanted


def _rcvlowat_option() -> int | None:
    """SO_RCVLOWAT where the low-water mark is safe to use (see _LOWAT_MIN), else None."""
    option = getattr(socket, "SO_RCVLOWAT", None)
    if option is None or not sys.platform.startswith("linux"):
        return None
    return int(option) if _kernel_at_least(os.uname().release, (5, 7)) else None


_SO_RCVLOWAT: int | None = _rcvlowat_option()


def _large_buffer(size: int) -> mmap.mmap:
    # Anonymous memory, not bytearray(size): a bytearray is zero-filled, a pass over the whole
    # buffer before the socket writes it (7.5 ms for a 50 MiB response); the kernel hands out
    # zeroed pages only as they are first written. Freed (unmapped) with the last reference.
    return mmap.mmap(-1, size)


# The receive limit of a ready connection (Java: NetworkReceive's maxSize). A size above it is
# taken for garbage, never allocated. The largest response we expect is a fetch: about
# fetch.max.bytes, but the broker may exceed that by one oversized first batch, hence twice it;
# and never below this floor, which covers metadata of large clusters.
_MIN_RECEIVE_LIMIT = 64 * 1024 * 1024
# Before READY only ApiVersions and SASL answers arrive: a few KiB. A bigger first "size" is a
# peer that is not a Kafka listener (a TLS alert read as a size claims 336 MiB).
_SETUP_RECEIVE_LIMIT = 1024 * 1024

_UNSUPPORTED_VERSION = 35


def describe_foreign_peer(head: bytes) -> str | None:
    """Name the protocol a peer speaks from the first bytes it sent, when they are not Kafka.

    Returns None when the bytes do not look like any protocol we know (they may still be
    garbage; the caller decides from the size).
    """
    if len(head) >= 3 and head[0] in _TLS_CONTENT_TYPES and head[1] == 3 and head[2] <= 4:
        kind = _TLS_CONTENT_TYPES[head[0]]
        detail = ""
        if head[0] == 0x15 and len(head) >= 7:
            detail = f" ({_TLS_ALERTS.get(head[6], f'alert {head[6]}')})"
        return (
            f"it answered with a TLS {kind} record{detail}, so it expects TLS "
            "(security.protocol SSL or SASL_SSL)"
        )
    for prefix, name in (
        (b"HTTP/", "an HTTP server"),
        (b"SSH-", "an SSH server"),
        (b"220 ", "an SMTP or FTP server"),
        (b"+OK", "a POP3 server"),
        (b"-ERR", "a Redis server"),
    ):
        if head.startswith(prefix):
            line = head.split(b"\r", 1)[0].split(b"\n", 1)[0][:60]
            text = line.decode("ascii", "replace")
            return f"{name} answered ({text!r})"
    return None


_TLS_CONTENT_TYPES = {
    0x14: "change_cipher_spec",
    0x15: "alert",
    0x16: "handshake",
    0x17: "application_data",
}
_TLS_ALERTS = {
    10: "unexpected_message",
    40: "handshake_failure",
    42: "bad_certificate",
    47: "illegal_parameter",
    50: "decode_error",
    70: "protocol_version",
    80: "internal_error",
    112: "unrecognized_name",
}


class ConnectionState(enum.Enum):
    """Where a connection is in its life.

    Thread-safety: an immutable enum.
    """

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKE = "handshake"
    API_VERSIONS = "api_versions"
    AUTHENTICATING = "authenticating"
    READY = "ready"


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
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.future = future
        self.send_ms = send_ms
        self.timeout_ms = timeout_ms
        self.deadline_ms = send_ms + timeout_ms


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api {api_key}"


class BrokerConnection:
    """A non-blocking connection to one broker, driven by the owner's selector.

    Thread-safety: not thread-safe; only the thread that owns the NetworkClient touches it.
    """

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        settings: NetworkSettings,
        *,
        now_ms: Callable[[], int],
        next_correlation_id: Callable[[], int],
        ssl_context: ssl.SSLContext | None = None,
        token_cache: OAuthTokenCache | None = None,
    ) -> None:
        """Describe a connection to broker ``node_id`` at ``host:port``; nothing is opened until
        the owner calls :meth:`connect`.
        """
        self.node_id = node_id
        self.host = host
        self.port = port
        self._settings = settings
        self._now_ms = now_ms
        self._next_cid = next_correlation_id
        self._ssl_context = ssl_context
        self._token_cache = token_cache
        protocol = settings.security_protocol
        self._use_sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        self._use_ssl = protocol in ("SSL", "SASL_SSL")
        if self._use_ssl:
            _load_ssl()
        if self._use_ssl and ssl_context is None:
            raise ValueError("an SSL connection needs an ssl_context")
        self._client_id: str = settings.client_id
        self._request_timeout_ms = settings.request_timeout_ms
        self._max_in_flight = max(1, settings.max_in_flight_requests_per_connection)
        self._rcvbuf = settings.receive_buffer_bytes
        self._sndbuf = settings.send_buffer_bytes
        largest_fetch = settings.largest_fetch_bytes
        self._max_frame = max(_MIN_RECEIVE_LIMIT, 2 * largest_fetch)

        self.state = ConnectionState.DISCONNECTED
        self.sock: socket.socket | None = None
        self._addresses: list[tuple[Any, ...]] = []
        self._setup_deadline_ms = 0
        self.connected_address: Any = None
        #: Negotiated version per api key (only keys both sides support).
        self.api_versions: dict[int, int] = {}
        #: The broker's advertised (min, max) per api key.
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self.in_flight: collections.deque[InFlightRequest] = collections.deque()
        self._send_queue: collections.deque[memoryview] = collections.deque()
        self._hdr = b""
        self._frame: bytearray | mmap.mmap | None = None
        self._frame_pos = 0
        self._frame_size = 0  # the response's size; a reused buffer may be longer
        self._pool: list[mmap.mmap] = []
        # The socket's SO_RCVLOWAT (1: the default; each new socket starts there); None where
        # it is not used, or once a socket refused one.
        self._lowat: int | None = None
        self._sasl: SaslMechanism | None = None
        self.close_error: KafkaError | None = None
        #: Set by close(); the client clears it once it has done its disconnect bookkeeping.
        self.disconnect_pending = False
        #: Set before a deliberate close (idle, bootstrap no longer needed): no backoff.
        self.quiet_close = False
        self.last_activity_ms = 0
        self.throttle_until_ms = 0
        self.ready_since_ms = 0
        #: True once a request other than the set-up ones (ApiVersions, SASL) was answered on
        #: this connection: a close before that is a failed connection attempt.
        self.served = False
        #: Whether any connection to this address ever got such an answer.
        self.ever_served = False
        #: When the broker's SASL session expires (KIP-368), 0 when it does not.
        self.reauth_at_ms = 0
        self._want_write_for_read = False
        self._want_read_for_write = False
        self._handshake_wants = selectors.EVENT_WRITE

    # ------------------------------------------------------------------ state ---------------
    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port} {self.state.value}>"

    @property
    def is_ready(self) -> bool:
        """True when the connection is authenticated and negotiated."""
        return self.state is ConnectionState.READY

    @property
    def is_connecting(self) -> bool:
        """True while the connection is being set up (any state before READY)."""
        return self.state not in (ConnectionState.READY, ConnectionState.DISCONNECTED)

    @property
    def is_disconnected(self) -> bool:
        """True once closed (or before connect)."""
        return self.state is ConnectionState.DISCONNECTED

    def can_send(self, now_ms: int) -> bool:
        """Ready, below the in-flight bound, not throttled by the broker, and not about to
        end its SASL session (then it drains and the client reconnects)."""
        return (
            self.state is ConnectionState.READY
            and len(self.in_flight) < self._max_in_flight
            and now_ms >= self.throttle_until_ms
            and not (self.reauth_at_ms and now_ms >= self.reauth_at_ms)
        )

    def interest(self) -> int:
        """The selector events this connection waits for now (0 when none)."""
        if self.sock is None or self.state is ConnectionState.DISCONNECTED:
            return 0
        if self.state is ConnectionState.CONNECTING:
            return selectors.EVENT_WRITE
        if self.state is ConnectionState.HANDSHAKE:
            return self._handshake_wants
        events = selectors.EVENT_READ
        if self._send_queue or self._want_write_for_read:
            events |= selectors.EVENT_WRITE
        return events

    def has_pending_send(self) -> bool:
        """True while request bytes wait to be written."""
        return bool(self._send_queue)

    def has_buffered_input(self) -> bool:
        """True when TLS holds decrypted bytes the selector cannot see."""
        return (
            isinstance(self.sock, _SSLSocket)
            and self.state is not ConnectionState.HANDSHAKE
            and self.sock.pending() > 0
        )

    # ------------------------------------------------------------------ connect -------------
    def connect(self, setup_timeout_ms: int) -> None:
        """Resolve the host and start a non-blocking connect to its first address.

        Raises :class:`KafkaConnectionError` when the name does not resolve or no address can
        even start a connection.
        """
        if self.state is not ConnectionState.DISCONNECTED:
            raise KafkaConnectionError(f"connection to node {self.node_id} already in progress")
        self.close_error = None
        self.served = False
        now = self._now_ms()
        self._setup_deadline_ms = now + setup_timeout_ms
        self.last_activity_ms = now
        try:
            infos = socket.getaddrinfo(host_for_lookup(self.host), self.port, 0, socket.SOCK_STREAM)
        except OSError as exc:
            raise KafkaConnectionError(
                f"cannot resolve broker host {self.host!r} (node {self.node_id}): {exc}"
            ) from exc
        lookup = self._settings.client_dns_lookup
        if lookup != "use_all_dns_ips":
            infos = infos[:1]
        self._addresses = list(infos)
        self.state = ConnectionState.CONNECTING
        self._try_next_address(None)

    def _try_next_address(self, last_error: BaseException | None) -> None:
        while self._addresses:
            family, type_, proto, _, addr = self._addresses.pop(0)
            sock = socket.socket(family, type_, proto)
            self._lowat = 1 if _SO_RCVLOWAT is not None else None
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                if self._rcvbuf > 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._rcvbuf)
                if self._sndbuf > 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._sndbuf)
                rc = sock.connect_ex(addr)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            if rc in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
                self.sock = sock
                self.connected_address = addr
                logger.debug("node %s: connecting to %s", self.node_id, addr)
                if rc == 0:
                    self._on_tcp_connected()
                return
            sock.close()
            last_error = OSError(rc, errno.errorcode.get(rc, str(rc)))
        self.state = ConnectionState.CONNECTING  # so that close() runs the normal path
        self.close(
            KafkaConnectionError(
                f"cannot connect to node {self.node_id} at {self.host}:{self.port}: {last_error}"
            )
        )

    def _on_tcp_connected(self) -> None:
        assert self.sock is not None
        if self._use_ssl:
            assert self._ssl_context is not None
            try:
                self.sock = self._ssl_context.wrap_socket(
                    self.sock, server_hostname=self.host, do_handshake_on_connect=False
                )
            except (_SSLError, ValueError) as exc:
                self.close(
                    SslAuthenticationError(
                        f"TLS set-up for node {self.node_id} ({self.host}:{self.port}) failed: {exc}"
                    )
                )
                return
            self.state = ConnectionState.HANDSHAKE
            self._handshake_wants = selectors.EVENT_READ | selectors.EVENT_WRITE
            self._do_handshake()
        else:
            self._start_api_versions()

    def _do_handshake(self) -> None:
        assert isinstance(self.sock, _SSLSocket)
        try:
            self.sock.do_handshake()
        except _SSLWantReadError:
            self._handshake_wants = selectors.EVENT_READ
            return
        except _SSLWantWriteError:
            self._handshake_wants = selectors.EVENT_WRITE
            return
        except _SSLCertVerificationError as exc:
            reason = exc.verify_message or exc.reason or str(exc)
            self.close(
                SslAuthenticationError(
                    f"TLS handshake with node {self.node_id} ({self.host}:{self.port}) failed: "
                    f"certificate verification failed: {reason}"
                )
            )
            return
        except _SSLError as exc:
            self.close(
                SslAuthenticationError(
                    f"TLS handshake with node {self.node_id} ({self.host}:{self.port}) failed: "
                    f"{exc.reason or exc}"
                )
            )
            return
        except OSError as exc:
            self.close(
                KafkaConnectionError(
                    f"connection to node {self.node_id} ({self.host}:{self.port}) broke during the "
                    f"TLS handshake: {exc}"
                )
            )
            return
        logger.debug("node %s: TLS handshake done (%s)", self.node_id, self.sock.version())
        self._start_api_versions()

    # ------------------------------------------------------------------ setup requests ------
    def _start_api_versions(self, version: int | None = None) -> None:
        self.state = ConnectionState.API_VERSIONS
        if version is None:
            version = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]
        body: ApiVersionsRequest = {
            "client_software_name": CLIENT_SOFTWARE_NAME,
            "client_software_version": CLIENT_SOFTWARE_VERSION,
        }
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

    # ------------------------------------------------------------------ requests ------------
    def send(
        self,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        expect_response: bool = True,
    ) -> Future[Any]:
        """Queue a request on a READY connection and return its future.

        ``version`` None means the highest version both sides support. Raises
        :class:`UnsupportedVersionError` when the broker lacks the API (or that version).
        """
        if self.state is not ConnectionState.READY:
            raise KafkaConnectionError(f"node {self.node_id} is not ready ({self.state.value})")
        negotiated = self.api_versions.get(api_key)
        if version is None:
            if negotiated is None:
                raise UnsupportedVersionError(
                    f"node {self.node_id} does not support {_api_name(api_key)}"
                )
            version = negotiated
        else:
            lo_hi = self.broker_versions.get(api_key)
            if lo_hi is None or not lo_hi[0] <= version <= lo_hi[1]:
                raise UnsupportedVersionError(
                    f"node {self.node_id} does not support {_api_name(api_key)} v{version}"
                )
        future: Future[Any] = Future()
        self._enqueue(
            api_key,
            version,
            body,
            future,
            self._request_timeout_ms if timeout_ms is None else int(timeout_ms),
            expect_response,
        )
        return future

    def _enqueue(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any],
        future: Future[Any],
        timeout_ms: int,
        expect_response: bool,
    ) -> None:
        cid = self._next_cid()
        frame = encode_request(api_key, version, cid, self._client_id, dict(body))
        self._send_queue.append(memoryview(frame))
        if expect_response:
            self.in_flight.append(
                InFlightRequest(cid, api_key, version, future, self._now_ms(), timeout_ms)
            )
        else:
            # Nothing will come back; complete once the bytes are queued, as Java does for
            # acks=0 produce requests.
            future.success(None)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "node %s: -> %s v%d cid=%d", self.node_id, _api_name(api_key), version, cid
            )

    # ------------------------------------------------------------------ I/O -----------------
    def on_io(self, events: int) -> None:
        """Handle selector readiness ``events`` for this connection's socket."""
        if self.sock is None:
            return
        if self.state is ConnectionState.CONNECTING:
            if events & (selectors.EVENT_WRITE | selectors.EVENT_READ):
                self._finish_connect()
            return
        if self.state is ConnectionState.HANDSHAKE:
            self._do_handshake()
            if self.state is ConnectionState.HANDSHAKE or self.sock is None:
                return
            events |= selectors.EVENT_WRITE  # the ApiVersions request is queued now
        if events & selectors.EVENT_WRITE or self._want_read_for_write:
            self._write()
        if self.state is not ConnectionState.DISCONNECTED and (
            events & selectors.EVENT_READ or self._want_write_for_read
        ):
            self._read()

    def _finish_connect(self) -> None:
        assert self.sock is not None
        err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            error = OSError(err, errno.errorcode.get(err, str(err)))
            logger.debug(
                "node %s: connect to %s failed: %s", self.node_id, self.connected_address, error
            )
            self._close_socket()
            self._try_next_address(error)
            return
        self.last_activity_ms = self._now_ms()
        self._on_tcp_connected()

    def _write(self) -> None:
        sock = self.sock
        assert sock is not None
        self._want_read_for_write = False
        queue = self._send_queue
        while queue:
            if len(queue) > 1 and len(queue[0]) < _CHUNK:
                # Coalesce small frames so that a burst of requests costs one syscall.
                parts = []
                size = 0
                while queue and size < _CHUNK:
                    part = queue.popleft()
                    parts.append(part)
                    size += len(part)
                queue.appendleft(memoryview(b"".join(parts)))
            buf = queue[0]
            try:
                sent = sock.send(buf)
            except (BlockingIOError, InterruptedError, _SSLWantWriteError):
                return
            except _SSLWantReadError:
                self._want_read_for_write = True
                return
            except OSError as exc:
                self.close(
                    KafkaConnectionError(
                        f"connection to node {self.node_id} ({self.host}:{self.port}) failed while "
                        f"sending: {exc}"
                    )
                )
                return
            self.last_activity_ms = self._now_ms()
            if sent >= len(buf):
                queue.popleft()
            else:
                queue[0] = buf[sent:]
                return

    def _read(self) -> None:
        self._want_write_for_read = False
        while self.state is not ConnectionState.DISCONNECTED:
            sock = self.sock
            assert sock is not None
            try:
                if self._frame is not None:
                    view = memoryview(self._frame)[self._frame_pos : self._frame_size]
                    want = len(view)
                    n = sock.recv_into(view)
                    view.release()
                    if n == 0:
                        self._peer_closed()
                        return
                    self.last_activity_ms = self._now_ms()
                    self._frame_pos += n
                    if self._frame_pos == self._frame_size:
                        frame = self._frame
                        self._frame = None
                        if self._lowat is not None and self._lowat > 1:
                            self._set_lowat(sock, 1)
                        self._on_frame(memoryview(frame)[: self._frame_size])
                        del frame
                    elif self._lowat is not None and self._lowat > want - n:
                        # Never above what is left: the selector would wait for bytes that
                        # are not coming.
                        self._set_lowat(sock, want - n)
                    got_all = n >= want
                else:
                    want = _CHUNK
                    chunk = sock.recv(want)
                    if not chunk:
                        self._peer_closed()
                        return
                    self.last_activity_ms = self._now_ms()
                    n = len(chunk)
                    self._on_chunk(chunk)
                    got_all = n >= want
            except (BlockingIOError, InterruptedError, _SSLWantReadError):
                return
            except _SSLWantWriteError:
                self._want_write_for_read = True
                return
            except _SSLError as exc:
                if self.state is not ConnectionState.READY:
                    # With TLS 1.3 the server rejects a client certificate only after the
                    # handshake, with an alert: before READY that is an authentication failure.
                    self.close(
                        SslAuthenticationError(
                            f"TLS with node {self.node_id} ({self.host}:{self.port}) failed: "
                            f"{exc.reason or exc}"
                        )
                    )
                else:
                    self.close(
                        KafkaConnectionError(
                            f"TLS error on the connection to node {self.node_id}: "
                            f"{exc.reason or exc}"
                        )
                    )
                return
            except ConnectionResetError as exc:
                self._peer_closed(exc)
                return
            except OSError as exc:
                self.close(
                    KafkaConnectionError(
                        f"connection to node {self.node_id} ({self.host}:{self.port}) failed while "
                        f"receiving: {exc}"
                    )
                )
                return
            if not got_all and not (isinstance(sock, _SSLSocket) and sock.pending()):
                # A short read means the kernel buffer is drained (TLS may still hold decrypted
                # bytes, hence the pending() check); the selector reports the next data.
                return

    def _on_chunk(self, chunk: bytes) -> None:
        data = memoryview(chunk)
        if self._hdr:
            need = 4 - len(self._hdr)
            self._hdr += bytes(data[:need])
            data = data[need:]
            if len(self._hdr) < 4:
                return
            size = _SIZE.unpack(self._hdr)[0]
            self._hdr = b""
            if not self._start_frame(size, data):
                return
            data = data[min(size, len(data)) :]
        pos = 0
        end = len(data)
        while self.state is not ConnectionState.DISCONNECTED and pos < end:
            if end - pos < 4:
                self._hdr = bytes(data[pos:end])
                return
            size = _SIZE.unpack_from(data, pos)[0]
            pos += 4
            if not self._start_frame(size, data[pos:]):
                return
            pos += size

    def _start_frame(self, size: int, data: memoryview) -> bool:
        """Take a frame of ``size`` starting at ``data``; False when it is incomplete/fatal."""
        limit = self._max_frame if self.state is ConnectionState.READY else _SETUP_RECEIVE_LIMIT
        if size < 0 or size > limit:
            self._reject_size(size, data, limit)
            return False
        if len(data) >= size:
            self._on_frame(data[:size])
            return True
        frame = self._frame_buffer(size)
        frame[: len(data)] = data
        self._frame = frame
        self._frame_pos = len(data)
        self._frame_size = size
        rest = size - len(data)
        # Not under TLS: the library may hold part of a record already taken off the socket,
        # so fewer bytes than the rest of the response may ever reach the kernel's queue.
        if (
            rest >= _LOWAT_MIN
            and self._lowat is not None
            and not self._use_ssl
            and self.sock is not None
        ):
            self._set_lowat(self.sock, rest)
        return False

    def _set_lowat(self, sock: socket.socket, rest: int) -> None:
        """Set SO_RCVLOWAT for a response with ``rest`` bytes still to come (1: back to the
        default); see _LOWAT_MIN."""
        try:
            if rest > 1:
                rest = min(rest, _LOWAT_MAX)
                if self._rcvbuf > 0:
                    rest = max(1, min(rest, self._rcvbuf // 4))
            if rest != self._lowat:
                sock.setsockopt(socket.SOL_SOCKET, _SO_RCVLOWAT, rest)  # type: ignore[arg-type]
                self._lowat = rest
        except OSError:
            # Not every platform takes it (Windows): read as data comes, as before.
            self._lowat = None

    def _frame_buffer(self, size: int) -> bytearray | mmap.mmap:
        """A buffer of at least ``size`` bytes for one response: a pooled one no view refers
        to any more (its responses are decoded and dropped), else a new one."""
        if size < _POOL_MIN:
            return bytearray(size)
        pool = self._pool
        for i in range(len(pool)):
            buf = pool[i]
            # Held by the pool, this variable and getrefcount's argument only: no memoryview
            # of it (data still to decode) is alive, so it may be overwritten.
            if sys.getrefcount(buf) <= 3:
                if len(buf) >= size:
                    return buf
                del buf
                pool[i] = fresh = _large_buffer(size)  # an idle buffer too small: replace it
                return fresh
        fresh = _large_buffer(size)
        if len(pool) < _POOL_SIZE:
            pool.append(fresh)
        return fresh

    def _reject_size(self, size: int, data: memoryview, limit: int) -> None:
        """Close on a size no Kafka response of this connection can have, naming what the
        peer looks like when its first bytes tell."""
        head = _SIZE.pack(size) + bytes(data[:60])
        where = f"node {self.node_id} ({self.host}:{self.port})"
        peer = describe_foreign_peer(head) if self.state is not ConnectionState.READY else None
        if peer is not None:
            message = (
                f"{where} is not a Kafka {self._protocol_name()} listener: {peer}; "
                "closing the connection"
            )
        elif self.state is ConnectionState.READY:
            message = (
                f"{where} sent a response of {size} bytes, above the receive limit of "
                f"{limit} bytes (twice fetch.max.bytes, at least "
                f"{_MIN_RECEIVE_LIMIT}); closing the connection"
            )
        else:
            message = (
                f"{where} answered with bytes that are not a Kafka response (first "
                f"bytes {head[:16].hex(' ')}); closing the connection"
            )
        # A misconfigured address or security.protocol: the network client logs it at
        # WARNING (rate-limited per node), as every failed connection.
        self.close(KafkaConnectionError(message))

    def _protocol_name(self) -> str:
        if self._use_ssl:
            return "SASL_SSL" if self._use_sasl else "SSL"
        return "SASL_PLAINTEXT" if self._use_sasl else "PLAINTEXT"

    def _on_frame(self, frame: memoryview) -> None:
        if self.state is ConnectionState.DISCONNECTED:
            return
        if len(frame) < 4:
            self.close(KafkaConnectionError(f"node {self.node_id} sent a truncated response"))
            return
        cid = _SIZE.unpack_from(frame, 0)[0]
        if not self.in_flight:
            self.close(
                KafkaConnectionError(
                    f"node {self.node_id} sent a response (correlation id {cid}) with no request "
                    "in flight"
                )
            )
            return
        req = self.in_flight[0]
        if cid != req.correlation_id:
            self.close(
                KafkaConnectionError(
                    f"correlation id mismatch from node {self.node_id}: expected "
                    f"{req.correlation_id}, got {cid}; closing the connection"
                )
            )
            return
        body: dict[str, Any] | None
        try:
            _, body = decode_response(req.api_key, req.api_version, frame)
        except KafkaProtocolError as exc:
            body = self._api_versions_v0(req, frame)
            if body is None:
                err = KafkaConnectionError(
                    f"malformed {_api_name(req.api_key)} v{req.api_version} response from node "
                    f"{self.node_id}: {exc}; closing the connection"
                )
                err.__cause__ = exc
                self.close(err)
                return
        if body.get("error_code") == _UNSUPPORTED_VERSION:
            # The broker answered ApiVersions in v0 format whatever we asked; read it as such.
            body = self._api_versions_v0(req, frame) or body
        self.in_flight.popleft()
        if self.state is ConnectionState.READY:
            self.served = self.ever_served = True
        throttle = body.get("throttle_time_ms")
        if throttle:
            self.throttle_until_ms = max(self.throttle_until_ms, self._now_ms() + int(throttle))
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("node %s: <- %s cid=%d", self.node_id, _api_name(req.api_key), cid)
        req.future.success(body)

    @staticmethod
    def _api_versions_v0(req: InFlightRequest, frame: memoryview) -> dict[str, Any] | None:
        """An ApiVersions answer read as v0, when it is an UNSUPPORTED_VERSION one."""
        if req.api_key != ApiKey.API_VERSIONS or req.api_version == 0:
            return None
        try:
            _, body = decode_response(req.api_key, 0, frame)
        except KafkaProtocolError:
            return None
        return body if body.get("error_code") == _UNSUPPORTED_VERSION else None

    def _peer_closed(self, reset: OSError | None = None) -> None:
        """The peer closed (``reset``: reset) the connection; name the likely cause."""
        how = f" ({reset})" if reset is not None else ""
        if self.state is ConnectionState.HANDSHAKE:
            self.close(
                SslAuthenticationError(
                    f"node {self.node_id} ({self.host}:{self.port}) closed the connection during the "
                    f"TLS handshake{how}"
                )
            )
        elif (
            not self.ever_served
            and not self._use_ssl
            and not self._use_sasl
            and self._frame is None
            and not self._hdr
        ):
            # An SSL listener drops a plaintext ApiVersions; a SASL listener answers it and
            # then drops the first request that is not SASL. Both close with nothing of the
            # pending answer sent. Part of a frame received means a Kafka listener cut off
            # mid-response (a proxy, a dying broker); a broker that served this address
            # before is more likely going down: neither gets the hint.
            self.close(
                KafkaConnectionError(
                    f"node {self.node_id} ({self.host}:{self.port}): the broker closed the "
                    f"connection during the handshake{how}: is this an SSL/SASL listener? "
                    "security.protocol is PLAINTEXT"
                )
            )
        else:
            self.close(
                KafkaConnectionError(
                    f"node {self.node_id} ({self.host}:{self.port}) closed the connection{how}"
                )
            )

    # ------------------------------------------------------------------ timeouts ------------
    def check_timeouts(self, now_ms: int) -> None:
        """Close the connection when its setup or its oldest request is overdue."""
        if self.state is ConnectionState.DISCONNECTED:
            return
        if self.state is not ConnectionState.READY and now_ms >= self._setup_deadline_ms:
            if self.state is ConnectionState.CONNECTING and self._addresses:
                logger.debug(
                    "node %s: connect to %s timed out; trying the next address",
                    self.node_id,
                    self.connected_address,
                )
                self._close_socket()
                self._try_next_address(TimeoutError("connection setup timed out"))
                return
            self.close(
                KafkaTimeoutError(
                    f"connection set-up to node {self.node_id} ({self.host}:{self.port}) timed out "
                    f"in state {self.state.value}"
                )
            )
            return
        for req in self.in_flight:
            if now_ms >= req.deadline_ms:
                self.close(
                    KafkaTimeoutError(
                        f"{_api_name(req.api_key)} request to node {self.node_id} timed out after "
                        f"{req.timeout_ms} ms; connection closed"
                    )
                )
                return

    def next_deadline_ms(self) -> int | None:
        """The earliest time :meth:`check_timeouts` may act, or None."""
        if self.state is ConnectionState.DISCONNECTED:
            return None
        if self.state is not ConnectionState.READY:
            return self._setup_deadline_ms
        if self.in_flight:
            return min(r.deadline_ms for r in self.in_flight)
        return None

    # ------------------------------------------------------------------ close ---------------
    def _close_socket(self) -> None:
        sock = self.sock
        self.sock = None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def close(self, error: KafkaError | None = None) -> None:
        """Close the socket and fail every in-flight request with ``error`` (or a
        connection error)."""
        if self.state is ConnectionState.DISCONNECTED and self.sock is None:
            return
        self.state = ConnectionState.DISCONNECTED
        self._close_socket()
        if error is None:
            error = KafkaConnectionError(f"connection to node {self.node_id} was closed")
        self.close_error = error
        self.disconnect_pending = True
        if isinstance(error, AuthenticationError):
            logger.error("node %s: %s", self.node_id, error)
        else:
            logger.debug("node %s: closed: %s", self.node_id, error)
        pending = list(self.in_flight)
        self.in_flight.clear()
        self._send_queue.clear()
        self._hdr = b""
        self._frame = None
        self._pool = []
        self._sasl = None
        self.api_versions = {}
        self.broker_versions = {}
        self.reauth_at_ms = 0
        self.throttle_until_ms = 0
        for req in pending:
            if not req.future.is_done:
                req.future.failure(error)
