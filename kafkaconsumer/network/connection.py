"""One connection to one broker (Java: ``KafkaChannel`` and the per-connection half of
``NetworkClient``).

A :class:`BrokerConnection` is a non-blocking state machine::

    DISCONNECTED -> CONNECTING -> HANDSHAKE (TLS only) -> API_VERSIONS
                 -> AUTHENTICATING (SASL only) -> READY

It owns the socket, the send buffer (partial writes resume where they stopped), the receive
buffer and the queue of in-flight requests. Its parts, each in the module of the Java class it
mirrors: the set-up requests after TCP and TLS (ApiVersions, SASL) in
:class:`~kafkaconsumer.network.sasl_client_authenticator.SaslClientAuthenticator`; the receive
path (frames, their size bounds, ``SO_RCVLOWAT``, naming a peer that is not Kafka) in
:class:`~kafkaconsumer.network.network_receive.NetworkReceive`; the lazily bound ``ssl`` names
in :mod:`~kafkaconsumer.network.ssl_transport_layer`. The owning
:class:`~kafkaconsumer.network.client.NetworkClient` registers the socket with its selector
(:meth:`BrokerConnection.interest`) and calls :meth:`BrokerConnection.on_io`.
"""

from __future__ import annotations

import collections
import errno
import logging
import mmap
import selectors
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    SslAuthenticationError,
    UnsupportedVersionError,
)
from kafkaconsumer.network import ssl_transport_layer as tls
from kafkaconsumer.network.channel_state import ConnectionState
from kafkaconsumer.network.future import Future
from kafkaconsumer.network.in_flight_request import InFlightRequest, api_name
from kafkaconsumer.network.network_receive import (
    _CHUNK,
    _MIN_RECEIVE_LIMIT,
    _SO_RCVLOWAT,
    NetworkReceive,
    describe_foreign_peer,
    keep_spare_buffers,
)
from kafkaconsumer.network.sasl import OAuthTokenCache, SaslMechanism
from kafkaconsumer.network.sasl_client_authenticator import (
    CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION,
    SaslClientAuthenticator,
)
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import encode_request

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import ssl


def host_for_lookup(host: str) -> str | bytes:
    """``host`` as ``socket.getaddrinfo`` should get it: an ASCII name as bytes, so that the
    lookup does not load the IDNA codec (about a millisecond of start-up); others as they are
    (getaddrinfo IDNA-encodes them)."""
    return host.encode("ascii") if host.isascii() else host


__all__ = [
    "ConnectionState",
    "BrokerConnection",
    "InFlightRequest",
    "CLIENT_SOFTWARE_NAME",
    "CLIENT_SOFTWARE_VERSION",
    "describe_foreign_peer",
]


class BrokerConnection(SaslClientAuthenticator, NetworkReceive):
    """A non-blocking connection to one broker, driven by the owner's selector.

    Thread-safety: not thread-safe; only the thread that drives the owning NetworkClient
    touches it (behind a ConsumerNetworkClient, whichever thread holds the network lock,
    ``ConsumerNetworkClient._lock``).
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
        notify_fd: int | None = None,
    ) -> None:
        """Describe a connection to broker ``node_id`` at ``host:port``; nothing is opened until
        the owner calls :meth:`connect`. ``notify_fd``, a descriptor the owner's selector
        watches, lets large responses be received on a thread of their own that writes to it
        when done (see ``network_receive.NATIVE_READ_MIN``); the owner then calls
        :meth:`finish_native_read`.
        """
        # Set once here and only read after: up to _max_frame.
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
            tls.load_ssl()
        if self._use_ssl and ssl_context is None:
            raise ValueError("an SSL connection needs an ssl_context")
        self._client_id: str = settings.client_id
        self._request_timeout_ms = settings.request_timeout_ms
        self._max_in_flight = max(1, settings.max_in_flight_requests_per_connection)
        self._rcvbuf = settings.receive_buffer_bytes
        self._sndbuf = settings.send_buffer_bytes
        largest_fetch = settings.largest_fetch_bytes
        self._max_frame = max(_MIN_RECEIVE_LIMIT, 2 * largest_fetch)

        # The connection's state: every field below is written only by the thread driving the
        # owning NetworkClient, under the network lock (see the class docstring).
        self.state = ConnectionState.DISCONNECTED  # network lock
        self.sock: socket.socket | None = None  # network lock
        self._addresses: list[tuple[Any, ...]] = []  # network lock
        self._setup_deadline_ms = 0  # network lock
        self.connected_address: Any = None  # network lock
        #: Negotiated version per api key (only keys both sides support).
        self.api_versions: dict[int, int] = {}  # network lock
        #: The broker's advertised (min, max) per api key.
        self.broker_versions: dict[int, tuple[int, int]] = {}  # network lock
        self.in_flight: collections.deque[InFlightRequest] = collections.deque()  # network lock
        self._send_queue: collections.deque[memoryview] = collections.deque()  # network lock
        self._hdr = b""  # network lock
        self._frame: bytearray | mmap.mmap | None = None  # network lock
        self._frame_pos = 0  # network lock
        self._frame_size = 0  # the response's size; a reused buffer may be longer
        self._pool: list[mmap.mmap] = []  # network lock
        # The socket's SO_RCVLOWAT (1: the default; each new socket starts there); None where
        # it is not used, or once a socket refused one.
        self._lowat: int | None = None  # network lock
        self._notify_fd = notify_fd
        # The thread receiving the rest of a large response (a FrameRead), if one runs.
        self._native: Any = None  # network lock
        # The size of the last response when it was large enough for a reading thread (else
        # 0): the next one is then read by a thread from its first byte.
        self._large_size = 0  # network lock
        self._sasl: SaslMechanism | None = None  # network lock
        self.close_error: KafkaError | None = None  # network lock
        #: Set by close(); the client clears it once it has done its disconnect bookkeeping.
        self.disconnect_pending = False  # network lock
        #: Set before a deliberate close (idle, bootstrap no longer needed): no backoff.
        self.quiet_close = False  # network lock
        self.last_activity_ms = 0  # network lock
        self.throttle_until_ms = 0  # network lock
        self.ready_since_ms = 0  # network lock
        #: True once a request other than the set-up ones (ApiVersions, SASL) was answered on
        #: this connection: a close before that is a failed connection attempt.
        self.served = False  # network lock
        #: Whether any connection to this address ever got such an answer.
        self.ever_served = False  # network lock
        #: When the broker's SASL session expires (KIP-368), 0 when it does not.
        self.reauth_at_ms = 0  # network lock
        self._want_write_for_read = False  # network lock
        self._want_read_for_write = False  # network lock
        self._handshake_wants = selectors.EVENT_WRITE  # network lock
        #: ``(cluster id, node id)`` the ApiVersions request of the next connection attempt
        #: names for the broker to check (KIP-1242), or None; the owner sets it before
        #: :meth:`connect`.
        self.expected_cluster: tuple[str, int] | None = None  # network lock

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
        # While a reading thread has the receive side, the selector must not report the
        # socket readable: the thread wakes the owner through notify_fd instead.
        events = 0 if self._native is not None else selectors.EVENT_READ
        if self._send_queue or self._want_write_for_read:
            events |= selectors.EVENT_WRITE
        return events

    def has_pending_send(self) -> bool:
        """True while request bytes wait to be written."""
        return bool(self._send_queue)

    def has_buffered_input(self) -> bool:
        """True when TLS holds decrypted bytes the selector cannot see."""
        return (
            isinstance(self.sock, tls.SSLSocket)
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
            except (tls.SSLError, ValueError) as exc:
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
        assert isinstance(self.sock, tls.SSLSocket)
        try:
            self.sock.do_handshake()
        except tls.SSLWantReadError:
            self._handshake_wants = selectors.EVENT_READ
            return
        except tls.SSLWantWriteError:
            self._handshake_wants = selectors.EVENT_WRITE
            return
        except tls.SSLCertVerificationError as exc:
            reason = exc.verify_message or exc.reason or str(exc)
            self.close(
                SslAuthenticationError(
                    f"TLS handshake with node {self.node_id} ({self.host}:{self.port}) failed: "
                    f"certificate verification failed: {reason}"
                )
            )
            return
        except tls.SSLError as exc:
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
                    f"node {self.node_id} does not support {api_name(api_key)}"
                )
            version = negotiated
        else:
            lo_hi = self.broker_versions.get(api_key)
            if lo_hi is None or not lo_hi[0] <= version <= lo_hi[1]:
                raise UnsupportedVersionError(
                    f"node {self.node_id} does not support {api_name(api_key)} v{version}"
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
            logger.debug("node %s: -> %s v%d cid=%d", self.node_id, api_name(api_key), version, cid)

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
            except (BlockingIOError, InterruptedError, tls.SSLWantWriteError):
                return
            except tls.SSLWantReadError:
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
                        f"{api_name(req.api_key)} request to node {self.node_id} timed out after "
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
        # The reading thread must be gone before the descriptor is closed (and reused).
        self.cancel_native_read()
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
        keep_spare_buffers(self._pool)
        self._pool = []
        self._sasl = None
        self.api_versions = {}
        self.broker_versions = {}
        self.reauth_at_ms = 0
        self.throttle_until_ms = 0
        for req in pending:
            if not req.future.is_done:
                req.future.failure(error)
