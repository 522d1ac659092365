"""The selector-driven network client (Java: ``NetworkClient`` with its ``Selector``).

One :class:`NetworkClient` multiplexes every broker connection of one consumer on a single
``selectors.DefaultSelector``; :meth:`NetworkClient.poll` does all socket I/O. Nodes are the
brokers of the current cluster metadata, or, before the first metadata response, the
``bootstrap.servers`` addresses under pseudo node ids -1, -2, ...

Reconnects back off per node: ``reconnect.backoff.ms`` doubling per consecutive failure up to
``reconnect.backoff.max.ms``, with +/-20% jitter so that many clients do not reconnect in step.
When :attr:`NetworkClient.metadata` is set, ``poll`` also keeps it fresh (Java's
``DefaultMetadataUpdater``): it sends a Metadata request to the least-loaded node whenever the
metadata is due for a refresh.

Group coordinator traffic has a connection of its own, as in Java: node id
:func:`coordinator_node_id` (``2**31 - 1 - broker id``) addresses the same broker as ``broker
id`` over a second socket, so that a JoinGroup the broker holds for the whole rebalance never
delays (or waits behind) the fetches on the broker's own connection; a broker answers the
requests of one connection strictly in order. For the same reason :func:`seek_fetch_node_id`
(``2**30 - 1 - broker id``) names a third socket to a broker, on which the fetcher reads a
partition re-positioned by ``seek()`` while the broker holds a long-poll fetch on the first.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
import selectors
import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kafkaconsumer.errors import (
    AuthenticationError,
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NodeNotReadyError,
    RebootstrapRequiredError,
    UnsupportedVersionError,
)
from kafkaconsumer.metadata import Cluster, Metadata
from kafkaconsumer.network.client_utils import parse_bootstrap_servers, resolve_bootstrap_servers
from kafkaconsumer.network.connection import BrokerConnection
from kafkaconsumer.network.future import Future
from kafkaconsumer.network.metadata_recovery import NONE, REBOOTSTRAP, MetadataRecovery
from kafkaconsumer.network.sasl import OAuthTokenCache
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.utils.clock import SYSTEM_TIME

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import ssl

    from kafkaconsumer.protocol.message_types import MetadataResponse


__all__ = [
    "NetworkClient",
    "Clock",
    "COORDINATOR_NODE_ID_BASE",
    "coordinator_node_id",
    "SEEK_FETCH_NODE_ID_BASE",
    "seek_fetch_node_id",
    "broker_of",
]

#: Node ids ``COORDINATOR_NODE_ID_BASE - broker id`` name a broker's group coordinator
#: connection (Java: ``Integer.MAX_VALUE - node.id()`` in ``AbstractCoordinator``).
COORDINATOR_NODE_ID_BASE = 2**31 - 1


def coordinator_node_id(broker_id: int) -> int:
    """The node id of the group coordinator connection to broker ``broker_id``.

    :meth:`NetworkClient.node_address` maps it back to that broker's address, so requests sent
    to it travel on a socket of their own.
    """
    return COORDINATOR_NODE_ID_BASE - int(broker_id)


#: Node ids ``SEEK_FETCH_NODE_ID_BASE - broker id`` name a broker's second fetch connection,
#: used only for partitions seeked while a fetch to that broker is in flight.
SEEK_FETCH_NODE_ID_BASE = 2**30 - 1


def seek_fetch_node_id(broker_id: int) -> int:
    """The node id of the second fetch connection to broker ``broker_id``."""
    return SEEK_FETCH_NODE_ID_BASE - int(broker_id)


def broker_of(node_id: int, cluster: Cluster) -> int:
    """The broker a connection id addresses: ``node_id`` itself when ``cluster`` names it (or
    it is no derived id), else the broker behind a coordinator or second-fetch id."""
    if node_id < 0 or cluster.broker(node_id) is not None:
        return node_id
    for base in (COORDINATOR_NODE_ID_BASE, SEEK_FETCH_NODE_ID_BASE):
        if 0 <= base - node_id and cluster.broker(base - node_id) is not None:
            return base - node_id
    return node_id


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The first ApiVersions version that names the cluster and node expected (KIP-1242).
_CLUSTER_CHECK_V = 5
_JITTER = 0.2


class Clock(Protocol):
    """Anything with ``monotonic_ms()`` (``kafkaconsumer.utils.clock.Time`` fits).

    Thread-safety: a protocol; behind a ConsumerNetworkClient an implementation is read from
    several threads and must allow it (the ``Time`` implementations do).
    """

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin, never going backwards."""


# Repeats of one node's connection failure with the same cause are logged at WARNING at most
# this often (Java logs every one; librdkafka suppresses identical repeats).
_WARN_INTERVAL_MS = 30_000
# Figures in a cause (elapsed ms, a counter) vary between repeats of one failure.
_FIGURES = re.compile(r"\d+")


class _NodeState:
    """Reconnect bookkeeping for one node.

    Thread-safety: owned by the client thread.
    """

    __slots__ = (
        "failures",
        "backoff_until_ms",
        "last_error",
        "auth_error",
        "attempts",
        "warned_ms",
        "warned_text",
        "suppressed",
    )

    def __init__(self) -> None:
        # Every field: the client thread's (see NetworkClient: the network lock).
        self.failures = 0
        self.backoff_until_ms = 0
        self.last_error: KafkaError | None = None
        self.auth_error: AuthenticationError | None = None
        self.attempts = 0
        # Rate limit of the connection-failure WARNING (see _warn_failure); warned_text is
        # the cause with its figures masked.
        self.warned_ms: int | None = None
        self.warned_text = ""
        self.suppressed = 0


class NetworkClient:
    """Connections to every broker of one client, driven by one selector.

    Thread-safety: not thread-safe, by design; one thread at a time (the
    ConsumerNetworkClient's lock guarantees that). Only :meth:`wakeup` may be called from any
    thread.
    """

    def __init__(
        self,
        settings: NetworkSettings,
        *,
        time: Clock | None = None,
        metadata: Metadata | None = None,
    ) -> None:
        """Set up the selector and the bootstrap pseudo nodes from ``settings``; no connection
        is made yet. ``time`` has ``monotonic_ms()``; ``metadata``, when given, is kept fresh
        by :meth:`poll`.
        """
        # The settings below, up to ``metadata``, are set once here and only read after.
        self.settings = settings
        self._clock: Clock = time or SYSTEM_TIME
        protocol = settings.security_protocol
        if protocol not in _PROTOCOLS:
            raise ConfigError(
                f"security.protocol {protocol!r} is not one of {', '.join(_PROTOCOLS)}"
            )
        self._protocol = protocol
        lookup = settings.client_dns_lookup
        if lookup not in ("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"):
            raise ConfigError(
                f"client.dns.lookup {lookup!r} is not one of use_all_dns_ips, "
                "resolve_canonical_bootstrap_servers_only"
            )
        self._bootstrap = resolve_bootstrap_servers(
            parse_bootstrap_servers(settings.bootstrap_servers), lookup
        )
        security = settings.security
        self._ssl_context: ssl.SSLContext | None = None
        if protocol in ("SSL", "SASL_SSL"):
            # Imported here: ssl costs a plaintext client ~7 ms of start-up.
            from kafkaconsumer.network.ssl_context import build_ssl_context

            self._ssl_context = build_ssl_context(security)
        self._token_cache: OAuthTokenCache | None = None
        # Set once here; close() cuts a retry backoff of the refresher thread short.
        self._token_retriever: Any = None
        if protocol.startswith("SASL"):
            mech = settings.sasl_mechanism
            if mech == "OAUTHBEARER":
                cb = security.get("sasl.oauthbearer.token.callback") or security.get(
                    "sasl.oauthbearer.token.provider"
                )
                if cb is None and security.get("sasl.oauthbearer.token.endpoint.url"):
                    # Java's OAuthBearerLoginCallbackHandler: the client fetches the tokens.
                    # Imported here: http.client and json are not needed otherwise.
                    from kafkaconsumer.network.oauth_token_retriever import (
                        create_token_retriever,
                        uses_login_callback_handler,
                    )

                    if uses_login_callback_handler(security):
                        cb = self._token_retriever = create_token_retriever(security)
                if cb is None:
                    raise ConfigError(
                        "sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.token.callback"
                    )
                self._token_cache = OAuthTokenCache(
                    cb,
                    settings.sasl_login_refresh_window_factor,
                    retry_backoff_ms=settings.sasl_login_retry_backoff_ms,
                    retry_backoff_max_ms=settings.sasl_login_retry_backoff_max_ms,
                    refresh_window_jitter=settings.sasl_login_refresh_window_jitter,
                    refresh_min_period_s=settings.sasl_login_refresh_min_period_seconds,
                    refresh_buffer_s=settings.sasl_login_refresh_buffer_seconds,
                )
            elif mech not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
                raise ConfigError(
                    f"sasl.mechanism {mech!r} is not supported (PLAIN, "
                    "SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)"
                )
        self._reconnect_backoff_ms = settings.reconnect_backoff_ms
        self._reconnect_backoff_max_ms = max(
            self._reconnect_backoff_ms, settings.reconnect_backoff_max_ms
        )
        self._setup_timeout_ms = settings.socket_connection_setup_timeout_ms
        self._setup_timeout_max_ms = max(
            self._setup_timeout_ms, settings.socket_connection_setup_timeout_max_ms
        )
        self._idle_ms = settings.connections_max_idle_ms
        strategy = settings.metadata_recovery_strategy
        if strategy not in (NONE, REBOOTSTRAP):
            raise ConfigError(
                f"metadata.recovery.strategy {strategy!r} is not 'none' or 'rebootstrap'"
            )
        trigger_ms = settings.metadata_recovery_rebootstrap_trigger_ms
        if trigger_ms < 0:
            raise ConfigError("metadata.recovery.rebootstrap.trigger.ms must be >= 0")
        self._recovery = MetadataRecovery(
            strategy, trigger_ms, settings.metadata_cluster_check_enable
        )
        self._request_timeout_ms = settings.request_timeout_ms
        if self._request_timeout_ms <= 0:
            raise ConfigError("request.timeout.ms must be > 0")

        self.metadata: Metadata | None = metadata  # guards itself (Metadata._lock)
        # The fields below belong to the client thread: the one thread driving this client at
        # a time, which behind a ConsumerNetworkClient holds the network lock
        # (ConsumerNetworkClient._lock) meanwhile. The ones wakeup() touches say so.
        self._metadata_fetch: Future[Any] | None = None  # network lock
        self._close_bootstrap_pending = False  # network lock
        # Whether the broker of the connection that became ready last advertised ApiVersions
        # v5+, which carries the cluster check. A broker that knows only older versions may
        # drop a v5 request naming a cluster (the embedded Tansu does) where Apache Kafka
        # answers UNSUPPORTED_VERSION, so the check goes only to clusters that know it.
        self._cluster_check_known = False  # network lock
        #: The error that ended the most recent failed connection (any node), for messages.
        self.last_connection_error: KafkaError | None = None  # network lock
        self._selector = selectors.DefaultSelector()  # network lock
        self._conns: dict[int, BrokerConnection] = {}  # network lock
        self._registered: dict[int, int] = {}  # node id -> registered event mask
        self._registered_sock: dict[int, socket.socket] = {}  # network lock
        self._nodes: dict[int, _NodeState] = {}  # network lock
        self._cid = itertools.count(1)  # network lock
        # Set once; wakeup() writes to _wake_w from any thread (under _wake_lock).
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._wake_lock = threading.Lock()  # a leaf: the two fields below
        self._wake_pending = False  # guarded by _wake_lock
        # Written under _wake_lock by close() (the client thread), read by wakeup() under it and
        # by the client thread without it.
        self._closed = False
        self._random = random.Random()  # the client thread's
        if self._token_cache is not None:
            # Log in now, as Java's client does when it is built, so the first connection finds
            # a token (a failure is kept and reported by that connection); later refreshes run
            # on the cache's own thread. The user's callback never runs under a lock: the
            # connections (under ConsumerNetworkClient's lock) only read the cache.
            self._token_cache.refresh_if_due()
            self._token_cache.start_refresher()

    # ------------------------------------------------------------------ nodes ---------------
    def now_ms(self) -> int:
        """The client's clock."""
        return self._clock.monotonic_ms()

    @property
    def bootstrap_nodes(self) -> list[tuple[int, str, int]]:
        """``[(pseudo_id, host, port)]`` of ``bootstrap.servers`` (ids -1, -2, ...)."""
        return [(-(i + 1), h, p) for i, (h, p) in enumerate(self._bootstrap)]

    def _using_bootstrap(self) -> bool:
        return self.metadata is None or not self.metadata.cluster.brokers()

    def nodes(self) -> list[int]:
        """The node ids the client may connect to now."""
        if self._using_bootstrap():
            return [n for n, _, _ in self.bootstrap_nodes]
        assert self.metadata is not None
        return [b.node_id for b in self.metadata.cluster.brokers()]

    def node_address(self, node_id: int) -> tuple[str, int] | None:
        """Host and port of a node, or None when unknown.

        Bootstrap pseudo ids (-1, -2, ...) map to ``bootstrap.servers``; a coordinator
        connection id (:func:`coordinator_node_id`) or second fetch connection id
        (:func:`seek_fetch_node_id`) maps to its broker's address.
        """
        if node_id < 0:
            idx = -node_id - 1
            return self._bootstrap[idx] if idx < len(self._bootstrap) else None
        if self.metadata is not None:
            cluster = self.metadata.cluster
            # Real broker ids win over the derived ones (coordinator, second fetch connection),
            # so an id that is both (never seen in practice) stays a broker.
            broker = cluster.broker(broker_of(node_id, cluster))
            if broker is not None:
                return broker.host, broker.port
        # A node the metadata no longer names (a broker that left, or the coordinator while a
        # refresh is under way): reconnect where the previous connection went.
        conn = self._conns.get(node_id)
        return (conn.host, conn.port) if conn is not None else None

    def _state(self, node_id: int) -> _NodeState:
        st = self._nodes.get(node_id)
        if st is None:
            st = self._nodes[node_id] = _NodeState()
        return st

    # ------------------------------------------------------------------ readiness -----------
    def is_ready(self, node_id: int, now_ms: int | None = None) -> bool:
        """True when a request can be sent to ``node_id`` right now (no connect attempt)."""
        conn = self._conns.get(node_id)
        now = self.now_ms() if now_ms is None else now_ms
        return conn is not None and conn.can_send(now)

    def ready(self, node_id: int, now_ms: int | None = None) -> bool:
        """True when ``node_id`` can take a request now; otherwise start connecting if allowed."""
        now = self.now_ms() if now_ms is None else now_ms
        if self.is_ready(node_id, now):
            return True
        if self.can_connect(node_id, now):
            self.initiate_connect(node_id, now)
        return self.is_ready(node_id, now)

    def can_connect(self, node_id: int, now_ms: int | None = None) -> bool:
        """True when the node is disconnected and out of its reconnect backoff."""
        conn = self._conns.get(node_id)
        if conn is not None and not conn.is_disconnected:
            return False
        now = self.now_ms() if now_ms is None else now_ms
        return now >= self._state(node_id).backoff_until_ms

    def is_connecting(self, node_id: int) -> bool:
        """True while a connection to the node is being set up."""
        conn = self._conns.get(node_id)
        return conn is not None and conn.is_connecting

    def connection_failed(self, node_id: int) -> bool:
        """True when the last connection attempt to the node failed and none is under way."""
        conn = self._conns.get(node_id)
        st = self._nodes.get(node_id)
        return (conn is None or conn.is_disconnected) and st is not None and st.failures > 0

    def connection_delay(self, node_id: int, now_ms: int | None = None) -> int:
        """Milliseconds until a connect to the node may be attempted (0 = now)."""
        conn = self._conns.get(node_id)
        if conn is not None and not conn.is_disconnected:
            return 0 if conn.is_ready else 2**31
        now = self.now_ms() if now_ms is None else now_ms
        return max(0, self._state(node_id).backoff_until_ms - now)

    def send_delay(self, node_id: int, now_ms: int | None = None) -> int | None:
        """Milliseconds until a request queued for the node could be sent without I/O
        happening first: 0 now, the backoff or throttle left, or None when only socket
        activity (a response, the connect finishing) can change that."""
        now = self.now_ms() if now_ms is None else now_ms
        conn = self._conns.get(node_id)
        if conn is None or conn.is_disconnected:
            return max(0, self._state(node_id).backoff_until_ms - now)
        if conn.is_ready:
            if conn.can_send(now):
                return 0
            if now < conn.throttle_until_ms:
                return conn.throttle_until_ms - now
        return None

    def authentication_error(self, node_id: int) -> AuthenticationError | None:
        """The TLS/SASL error of the last failed attempt to the node, if it was one."""
        st = self._nodes.get(node_id)
        return st.auth_error if st is not None else None

    def last_error(self, node_id: int) -> KafkaError | None:
        """The error that ended the last connection to the node."""
        st = self._nodes.get(node_id)
        return st.last_error if st is not None else None

    def connection_attempts(self, node_id: int) -> int:
        """How many connects to the node were started: a diagnostic, read by no part of the
        client."""
        st = self._nodes.get(node_id)
        return st.attempts if st is not None else 0

    def initiate_connect(self, node_id: int, now_ms: int | None = None) -> None:
        """Start connecting to ``node_id`` (no-op when already connected or connecting).

        A node with no known address (a broker, or the broker behind a coordinator connection
        id, that the metadata does not name) is a failed attempt, as an unreachable one: it
        backs off, :meth:`connection_failed` turns True with a :class:`KafkaConnectionError`
        as :meth:`last_error`, and a metadata refresh is requested.
        """
        if self._closed:
            raise KafkaConnectionError("the network client is closed")
        conn = self._conns.get(node_id)
        if conn is not None and not conn.is_disconnected:
            return
        now = self.now_ms() if now_ms is None else now_ms
        st = self._state(node_id)
        st.attempts += 1
        address = self.node_address(node_id)
        if address is None:
            self._on_connect_failed(
                node_id,
                KafkaConnectionError(
                    f"cannot connect to node {node_id}: it is not in the cluster metadata"
                ),
                now,
                was_ready=False,
            )
            return
        host, port = address
        if conn is None or (conn.host, conn.port) != (host, port):
            conn = BrokerConnection(
                node_id,
                host,
                port,
                self.settings,
                now_ms=self.now_ms,
                next_correlation_id=self._next_correlation_id,
                ssl_context=self._ssl_context,
                token_cache=self._token_cache,
                notify_fd=self._wake_w.fileno(),
            )
            self._conns[node_id] = conn
        conn.expected_cluster = (
            self._recovery.expected_cluster(node_id, self.metadata.cluster)
            if self.metadata is not None and self._cluster_check_known
            else None
        )
        setup_timeout = self._setup_timeout_ms * (2 ** min(st.failures, 16))
        setup_timeout = int(
            min(setup_timeout, self._setup_timeout_max_ms)
            * (1 + self._random.uniform(-_JITTER, _JITTER))
        )
        logger.debug("node %s: connecting to %s:%s (attempt %d)", node_id, host, port, st.attempts)
        try:
            conn.connect(setup_timeout)
        except KafkaError as exc:
            conn.close_error = exc
            conn.disconnect_pending = True
        self._handle_connection_change(node_id, conn, now)

    def _next_correlation_id(self) -> int:
        cid = next(self._cid)
        if cid >= 2**31 - 1:
            self._cid = itertools.count(1)
            cid = next(self._cid)
        return cid

    def _handle_connection_change(self, node_id: int, conn: BrokerConnection, now_ms: int) -> None:
        """Bookkeeping after I/O: readiness resets the backoff, a close starts one."""
        if conn.disconnect_pending:
            conn.disconnect_pending = False
            self._on_disconnected(node_id, conn, conn.close_error, now_ms)
        elif conn.is_ready:
            st = self._state(node_id)
            st.failures = 0
            st.auth_error = None
            versions = conn.broker_versions.get(ApiKey.API_VERSIONS)
            self._cluster_check_known = versions is not None and versions[1] >= _CLUSTER_CHECK_V
            self._sync_registration(node_id, conn)
        else:
            self._sync_registration(node_id, conn)

    def _on_disconnected(
        self, node_id: int, conn: BrokerConnection, error: KafkaError | None, now_ms: int
    ) -> None:
        self._unregister(node_id)
        st = self._state(node_id)
        if conn.quiet_close:
            # Closed on purpose (idle, SASL session end, bootstrap no longer needed): no
            # backoff and nothing wrong with the cluster.
            conn.quiet_close = False
            conn.ready_since_ms = 0
            st.failures = 0
            st.backoff_until_ms = now_ms
            return
        # A connection closed before it answered any real request (a SASL listener dropping a
        # PLAINTEXT client after ApiVersions) failed as an attempt: back off and warn.
        was_ready = bool(conn.ready_since_ms) and conn.served
        conn.ready_since_ms = 0
        requested = self._recovery.enabled and isinstance(error, RebootstrapRequiredError)
        self._on_connect_failed(node_id, error, now_ms, was_ready=was_ready, quiet=requested)
        if requested and not self._closed:
            # The broker at this node's address belongs to another cluster or is another
            # node (KIP-1242): the metadata is stale, so start again from bootstrap.servers.
            cluster_id = conn.expected_cluster[0] if conn.expected_cluster else None
            logger.info(
                "the broker at %s:%s is not node %s of cluster %s (it answered "
                "REBOOTSTRAP_REQUIRED): rebootstrapping",
                conn.host,
                conn.port,
                node_id,
                cluster_id,
            )
            self._do_rebootstrap(now_ms)

    def _on_connect_failed(
        self,
        node_id: int,
        error: KafkaError | None,
        now_ms: int,
        *,
        was_ready: bool,
        quiet: bool = False,
    ) -> None:
        """Record a broken connection or a failed attempt: error, metadata refresh, backoff."""
        st = self._state(node_id)
        st.last_error = error
        if error is not None:
            self.last_connection_error = error
        if self.metadata is not None and not self._closed:
            # A broker went away or cannot be reached: the cluster may have changed.
            self.metadata.request_update()
        if isinstance(error, AuthenticationError):
            st.auth_error = error
            if self.metadata is not None:
                # Surfaced once per failed attempt by the next poll (Java: Metadata.fatalError).
                self.metadata.set_fatal_error(error)
        if was_ready and not isinstance(error, AuthenticationError):
            # A connection that worked and then broke: reconnect after the base backoff.
            st.failures = 1
        else:
            st.failures += 1
        backoff = self._reconnect_backoff_ms * (2 ** min(st.failures - 1, 30))
        backoff = min(backoff, self._reconnect_backoff_max_ms)
        backoff = int(backoff * (1 + self._random.uniform(-_JITTER, _JITTER)))
        st.backoff_until_ms = now_ms + backoff
        if (
            error is not None
            and not quiet
            and not isinstance(error, AuthenticationError)
            and (not was_ready or isinstance(error, KafkaTimeoutError))
        ):
            # Authentication failures are logged at ERROR where they happen. A working
            # connection that stopped answering (request timeout) is the first sign of an
            # unreachable broker: warn as for a failed attempt; a plain close (a broker's idle
            # timeout, a restart) is only logged at DEBUG and retried.
            self._warn_failure(node_id, st, error, now_ms)
        logger.debug("node %s: disconnected (%s); reconnect backoff %d ms", node_id, error, backoff)

    def _warn_failure(self, node_id: int, st: _NodeState, error: KafkaError, now_ms: int) -> None:
        """A WARNING per node with the cause: the first failure, a new cause, and otherwise
        at most once per :data:`_WARN_INTERVAL_MS` (reconnects come every second)."""
        text = str(error)
        # The same cause with other figures (a request timeout's elapsed ms) is not new.
        cause = _FIGURES.sub("#", text)
        if (
            st.warned_ms is not None
            and cause == st.warned_text
            and now_ms - st.warned_ms < _WARN_INTERVAL_MS
        ):
            st.suppressed += 1
            return
        address = self.node_address(node_id)
        where = f"{address[0]}:{address[1]}" if address is not None else "unknown address"
        name = "bootstrap server" if node_id < 0 else "node"
        more = (
            f" ({st.suppressed} more such failures since the last warning)" if st.suppressed else ""
        )
        logger.warning("connection to %s %s (%s) failed: %s%s", name, node_id, where, text, more)
        st.warned_ms = now_ms
        st.warned_text = cause
        st.suppressed = 0

    def connection_errors(self) -> str:
        """Why the cluster may be unreachable, for timeout messages: before the first metadata
        the last error of each bootstrap server, afterwards the last connection error; empty
        when no connection failed."""
        if self._using_bootstrap():
            parts = []
            for node_id, host, port in self.bootstrap_nodes:
                st = self._nodes.get(node_id)
                if st is not None and st.last_error is not None:
                    parts.append(f"{host}:{port}: {st.last_error}")
            if parts:
                return "; ".join(parts)
        last = self.last_connection_error
        return str(last) if last is not None else ""

    # ------------------------------------------------------------------ selector ------------
    def _sync_registration(self, node_id: int, conn: BrokerConnection) -> None:
        events = conn.interest()
        sock = conn.sock
        old_sock = self._registered_sock.get(node_id)
        if old_sock is not None and (sock is None or old_sock is not sock or events == 0):
            self._unregister(node_id)
        if sock is None or events == 0:
            return
        current = self._registered.get(node_id)
        if current is None:
            try:
                self._selector.register(sock, events, node_id)
            except KeyError:
                # The selector has the descriptor already: an interrupt (Ctrl-C) landed
                # between a registration and the bookkeeping below. Registered anew, so that
                # the selector watches this socket, not what it last knew by that number.
                self._selector.unregister(sock)
                self._selector.register(sock, events, node_id)
            self._registered[node_id] = events
            self._registered_sock[node_id] = sock
        elif current != events:
            self._selector.modify(sock, events, node_id)
            self._registered[node_id] = events

    def _unregister(self, node_id: int) -> None:
        sock = self._registered_sock.pop(node_id, None)
        self._registered.pop(node_id, None)
        if sock is not None:
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError, OSError):
                pass

    # ------------------------------------------------------------------ send / poll ---------
    def send(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        expect_response: bool = True,
    ) -> Future[Any]:
        """Send a request to a ready node; returns its future.

        The future fails with :class:`NodeNotReadyError` when the node is not ready (check
        :meth:`ready` first), with :class:`UnsupportedVersionError` when the broker lacks the
        API and with :class:`KafkaProtocolError` when ``body`` cannot be encoded. None of these
        raises or touches the connection: other requests go on. ``timeout_ms`` overrides
        ``request.timeout.ms`` for this request (JoinGroup needs longer); its response
        completes the future with the decoded body dict.
        """
        now = self.now_ms()
        conn = self._conns.get(node_id)
        if conn is None or not conn.can_send(now):
            return Future().failure(NodeNotReadyError(f"node {node_id} is not ready"))
        try:
            fut = conn.send(
                api_key, body, version, timeout_ms=timeout_ms, expect_response=expect_response
            )
        except KafkaError as exc:
            # The request was never queued (the encoder wraps every failure of a bad body in
            # KafkaProtocolError before anything is written), so the connection is intact:
            # only this request fails, and poll() must not see the exception.
            return Future().failure(exc)
        self._sync_registration(node_id, conn)
        return fut

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The version of ``api_key`` negotiated with the node (None: unknown/unsupported)."""
        conn = self._conns.get(node_id)
        if conn is None or not conn.api_versions:
            return None
        return conn.api_versions.get(int(api_key))

    def broker_api_versions(self, node_id: int) -> dict[int, tuple[int, int]]:
        """The (min, max) versions per api key the node advertised in ApiVersions."""
        conn = self._conns.get(node_id)
        return dict(conn.broker_versions) if conn is not None else {}

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        """Requests awaiting a response (for one node or in total)."""
        if node_id is not None:
            conn = self._conns.get(node_id)
            return len(conn.in_flight) if conn is not None else 0
        return sum(len(c.in_flight) for c in self._conns.values())

    def responses_on_reading_threads(self) -> bool:
        """True when a connection's responses are received by reading threads (see
        :meth:`BrokerConnection.responses_on_reading_threads`). A hint read without the
        network lock."""
        return any(c.responses_on_reading_threads() for c in tuple(self._conns.values()))

    def only_receiving(self) -> bool:
        """True when requests are in flight, nothing waits to be written, and every
        connection with a request in flight has a reading thread receiving its response: a
        non-blocking poll now finds nothing to do (each thread reports on the wake-up socket
        when its response is in). A hint read without the network lock."""
        in_flight = False
        for conn in tuple(self._conns.values()):
            if conn.has_pending_send():
                return False
            if conn.in_flight:
                if not conn.native_read_receiving():
                    return False
                in_flight = True
        return in_flight

    def has_in_flight(self, node_id: int, api_key: int) -> bool:
        """True when a request of ``api_key`` to the node awaits its response."""
        conn = self._conns.get(node_id)
        return conn is not None and any(r.api_key == api_key for r in conn.in_flight)

    def poll(self, timeout_ms: float) -> None:
        """Do all pending network I/O, waiting up to ``timeout_ms`` for something to happen.

        Request futures complete during this call (their callbacks run here). Connection
        timeouts, request timeouts, idle connections and the metadata refresh are handled here
        too.
        """
        if self._closed:
            raise KafkaConnectionError("the network client is closed")
        now = self.now_ms()
        metadata_wait = self._maybe_update_metadata(now)
        timeout = max(0.0, min(float(timeout_ms), float(metadata_wait)))
        for conn in list(self._conns.values()):
            deadline = conn.next_deadline_ms()
            if deadline is not None:
                timeout = min(timeout, max(0, deadline - now))
            if conn.has_buffered_input():
                timeout = 0
        with self._wake_lock:
            if self._wake_pending:
                timeout = 0
        try:
            ready = self._selector.select(timeout / 1000.0)
        except InterruptedError:
            ready = []
        # Clear the flag before draining the socket: a wakeup() racing with the drain sets it
        # again and writes a new byte, so it is never lost, and a flag left set costs at most
        # one extra non-blocking poll.
        with self._wake_lock:
            self._wake_pending = False
        for key, events in ready:
            node_id = key.data
            if node_id is None:
                self._drain_wakeup()
                continue
            target = self._conns.get(node_id)
            if target is not None:
                target.on_io(events)
        # TLS may hold decrypted bytes that the selector cannot report; a response's reading
        # thread reports through the wake-up socket.
        for conn in list(self._conns.values()):
            if conn.has_buffered_input():
                conn.on_io(selectors.EVENT_READ)
            elif conn.native_read_active():
                conn.finish_native_read()
            if not conn.native_read_active():
                conn.maybe_arm_native_read()
        now = self.now_ms()
        bootstrap_done = self._close_bootstrap_pending
        self._close_bootstrap_pending = False
        for node_id, conn in list(self._conns.items()):
            conn.check_timeouts(now)
            if conn.is_ready and not conn.in_flight and not conn.has_pending_send():
                reason = None
                if now - conn.last_activity_ms > self._idle_ms:
                    reason = "idle for connections.max.idle.ms"
                elif conn.reauth_at_ms and now >= conn.reauth_at_ms:
                    reason = "its SASL session is about to expire"
                elif node_id < 0 and bootstrap_done:
                    reason = "the cluster metadata names the brokers now"
                if reason is not None:
                    logger.debug("node %s: closing the connection: %s", node_id, reason)
                    conn.quiet_close = True
                    conn.close(
                        KafkaConnectionError(f"connection to node {node_id} closed: {reason}")
                    )
            self._handle_connection_change(node_id, conn, now)
        if self._recovery.needs_rebootstrap(now):
            logger.info(
                "no metadata from any broker for metadata.recovery.rebootstrap.trigger.ms "
                "(%d ms), or a broker asked for it: rebootstrapping",
                self._recovery.trigger_ms,
            )
            self._do_rebootstrap(now)
        self._maybe_update_metadata(now)

    def _drain_wakeup(self) -> None:
        try:
            while self._wake_r.recv(1024):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            pass

    def wakeup(self) -> None:
        """Make a blocked (or the next) :meth:`poll` return at once. Thread-safe."""
        with self._wake_lock:
            if self._wake_pending or self._closed:
                return
            self._wake_pending = True
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass  # the pipe is full, so poll is going to wake anyway
        except OSError:
            pass

    # ------------------------------------------------------------------ node choice ---------
    def least_loaded_node(self, now_ms: int | None = None) -> int | None:
        """The node with the fewest in-flight requests, preferring ready ones (Java's rule).

        Order: a ready node with no in-flight request; else the ready node with the fewest
        in flight, one without a Fetch in flight first; else a node already connecting; else
        a disconnected node out of backoff; None when every node is backing off.
        """
        now = self.now_ms() if now_ms is None else now_ms
        return self._least_loaded(self.nodes(), now)

    def _least_loaded(self, nodes: list[int], now: int) -> int | None:
        if not nodes:
            return None
        offset = self._random.randrange(len(nodes))
        best_ready: int | None = None
        # (holds a fetch, in flight): a broker answers a connection's requests in order, so
        # a request behind a long-poll Fetch waits up to fetch.max.wait.ms (a metadata
        # refresh after NOT_LEADER waited 500 ms that way while another broker was free).
        best_rank = (True, 2**31)
        connecting: int | None = None
        can_connect: int | None = None
        for i in range(len(nodes)):
            node_id = nodes[(offset + i) % len(nodes)]
            conn = self._conns.get(node_id)
            if conn is not None and conn.is_ready:
                n = len(conn.in_flight)
                if n == 0 and conn.can_send(now):
                    return node_id
                rank = (any(r.api_key == ApiKey.FETCH for r in conn.in_flight), n)
                if rank < best_rank and n < conn._max_in_flight:
                    best_ready, best_rank = node_id, rank
            elif conn is not None and conn.is_connecting:
                connecting = node_id if connecting is None else connecting
            elif can_connect is None and self.can_connect(node_id, now):
                can_connect = node_id
        if best_ready is not None:
            return best_ready
        if connecting is not None:
            return connecting
        return can_connect

    def min_backoff_ms(self, now_ms: int | None = None) -> int:
        """Milliseconds until some node may be tried again (0 when one can be now)."""
        now = self.now_ms() if now_ms is None else now_ms
        nodes = self.nodes()
        delays = [self.connection_delay(n, now) for n in nodes]
        return min(delays) if delays else self._reconnect_backoff_ms

    # ------------------------------------------------------------------ metadata ------------
    def _maybe_update_metadata(self, now_ms: int) -> int:
        """Send a Metadata request when due; return ms until the next check is needed."""
        md = self.metadata
        if md is None:
            return 2**31
        if self._metadata_fetch is not None and not self._metadata_fetch.is_done:
            return 2**31  # the response (or its timeout) wakes poll
        self._metadata_fetch = None
        wait = md.time_to_next_update(now_ms)
        if wait > 0:
            return wait
        self._recovery.on_update_due(now_ms)
        node = self.least_loaded_node(now_ms)
        if node is None and self._recovery.enabled and not self._any_ready(now_ms):
            # Every known broker is disconnected and backing off (Java: no node available
            # and no connection ready): the brokers may all have moved.
            if self._using_bootstrap():
                self._recovery.on_rebootstrap(now_ms)
            else:
                logger.info(
                    "no broker of the cluster metadata is reachable: rebootstrapping with %s",
                    ", ".join(f"{h}:{p}" for h, p in self._bootstrap),
                )
                self._do_rebootstrap(now_ms)
            node = self.least_loaded_node(now_ms)
        if node is None:
            # Every node is backing off: retry when the first backoff ends.
            return max(1, self.min_backoff_ms(now_ms))
        if self.ready(node, now_ms):
            version = self.api_version(node, ApiKey.METADATA)
            if version is None:
                md.failed_update(
                    now_ms, UnsupportedVersionError(f"node {node} does not support Metadata")
                )
                return md.time_to_next_update(now_ms)
            body = md.build_request(version)
            fut = self.send(node, ApiKey.METADATA, body, version)
            md.on_request_sent(now_ms)
            self._metadata_fetch = fut
            fut.add_callback(self._on_metadata_response)
            fut.add_errback(self._on_metadata_failure)
            return 2**31
        if self.is_connecting(node):
            return max(1, self._reconnect_backoff_ms)
        return max(1, self.connection_delay(node, now_ms))

    def _any_ready(self, now_ms: int) -> bool:
        """True when a connection to a node of :meth:`nodes` is ready (busy ones included)."""
        conns = self._conns
        return any((conn := conns.get(n)) is not None and conn.is_ready for n in self.nodes())

    def _do_rebootstrap(self, now_ms: int) -> None:
        """Close the connections to the nodes of the metadata (the bootstrap addresses when it
        names no broker) and start again from ``bootstrap.servers`` (Java:
        ``NetworkClient.handleRebootstrap``)."""
        if self.metadata is not None:
            for node_id in self.nodes():
                conn = self._conns.get(node_id)
                if conn is None or conn.is_disconnected:
                    continue
                logger.info("node %s: disconnecting, the client rebootstraps", node_id)
                conn.quiet_close = True
                conn.close(
                    KafkaConnectionError(
                        f"disconnected from node {node_id}: the client rebootstraps"
                    )
                )
                self._handle_connection_change(node_id, conn, now_ms)
            self.metadata.rebootstrap()
        self._recovery.on_rebootstrap(now_ms)

    def _on_metadata_response(self, body: MetadataResponse) -> None:
        assert self.metadata is not None
        if self._recovery.enabled and body.get("error_code") == RebootstrapRequiredError.errno:
            logger.info("a broker answered REBOOTSTRAP_REQUIRED to a Metadata request")
            self._recovery.request()
            return
        if not body.get("brokers"):
            # Java ignores an empty answer: the refresh failed, the cluster view stays.
            logger.debug("ignoring a Metadata response that names no broker")
            self.metadata.failed_update(self.now_ms())
            return
        was_bootstrap = self._using_bootstrap()
        self.metadata.update(body, now_ms=self.now_ms())
        self._recovery.on_metadata()
        if was_bootstrap and not self._using_bootstrap():
            # The first metadata names the brokers: the bootstrap connections are not needed.
            self._close_bootstrap_pending = True

    def _on_metadata_failure(self, exc: BaseException) -> None:
        assert self.metadata is not None
        self.metadata.failed_update(self.now_ms(), exc)

    # ------------------------------------------------------------------ close ---------------
    def disconnect(self, node_id: int, error: KafkaError | None = None) -> None:
        """Close the connection to ``node_id``, failing its in-flight requests."""
        conn = self._conns.get(node_id)
        if conn is None:
            return
        conn.close(error or KafkaConnectionError(f"disconnected from node {node_id}"))
        self._handle_connection_change(node_id, conn, self.now_ms())

    def connection(self, node_id: int) -> BrokerConnection | None:
        """The connection object of a node (tests and diagnostics)."""
        return self._conns.get(node_id)

    def close(self) -> None:
        """Close every connection and the selector. Idempotent."""
        if self._closed:
            return
        for node_id in list(self._conns):
            conn = self._conns[node_id]
            conn.close(KafkaConnectionError("the network client was closed"))
            self._unregister(node_id)
        self._conns.clear()
        if self._token_retriever is not None and hasattr(self._token_retriever, "close"):
            self._token_retriever.close()
        if self._token_cache is not None:
            self._token_cache.close()
        with self._wake_lock:
            self._closed = True
        try:
            self._selector.unregister(self._wake_r)
        except (KeyError, ValueError, OSError):
            pass
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def selector_fd_count(self) -> int:
        """How many sockets the selector watches (the wake-up socket included): a diagnostic
        for leaks, read by no part of the client."""
        return len(self._selector.get_map())
