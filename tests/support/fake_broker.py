"""A scripted, in-process fake Kafka cluster that speaks the real wire protocol (test tier 2).

It exists for the error paths a real broker rarely produces on demand: NOT_COORDINATOR in the
middle of a commit, ILLEGAL_GENERATION, FENCED_INSTANCE_ID, a coordinator that moves, a broker
that dies, a response that comes late, never, or malformed. It never replaces the real broker
of the integration tests (tier 3); it complements it.

Quick start::

    from kafkaconsumer.protocol import ApiKey
    from tests.support.fake_broker import FakeCluster, Reply, error_body

    with FakeCluster(n_brokers=2, topics={"orders": 3}) as cluster:
        config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"}
        # The next OffsetCommit fails with NOT_COORDINATOR in every partition, later ones
        # are served by the default in-memory coordinator again.
        cluster.fail(ApiKey.OFFSET_COMMIT, 16)
        # The coordinator moves to node 1: node 0 now answers group requests NOT_COORDINATOR.
        cluster.coordinator_id = 1
        # A custom handler (runs on the broker thread): delay every heartbeat by 2 s.
        cluster.on(ApiKey.HEARTBEAT, lambda node, header, body: Reply({"error_code": 0}, delay_s=2))
        ...
        sent = cluster.wait_for_requests(ApiKey.OFFSET_COMMIT, count=2)   # [(header, body), ...]

What it serves
--------------
``FakeCluster(n_brokers)`` opens one listener per broker (node ids ``0..n-1``) on free loopback
ports, all driven by one background selector thread. Each request is decoded with our own
protocol layer (``decode_request``), recorded, and answered, in this order of precedence:

1. the next entry of a queue set with :meth:`FakeCluster.script` (``cluster.script(key, [r1, r2])``
   answers the next two requests of that API with ``r1`` then ``r2``);
2. the most recent handler set with :meth:`FakeCluster.on`;
3. the default handler of that API.

A script entry or a handler result is a response body ``dict``, a :class:`Reply`, or ``None``
(meaning "let the next level answer"); a script entry may also be a callable with the handler
signature ``(node_id, header, body) -> dict | Reply | None``. Response bodies need only the
fields the test cares about: missing fields take their spec defaults, and fields the
negotiated version lacks are dropped, so one body serves every version.
``Reply(body, delay_s=..., close=..., raw=..., drop=...)`` (with no body: the default
handler's answer) delays the answer (the connection
answers in order, as a broker does, so later requests on it wait too), closes the connection
instead of answering (after the delay, if any), writes ``raw`` bytes verbatim (no size prefix is
added: use :func:`response_frame` to frame a malformed body), or never answers (``drop``).

Default handlers:

* ApiVersions: the ranges of :data:`~kafkaconsumer.protocol.SUPPORTED_VERSIONS` except the
  client telemetry APIs (GetTelemetrySubscriptions, PushTelemetry: :data:`DEFAULT_API_VERSIONS`,
  as a broker without a telemetry receiver advertises), or those given
  as ``api_versions=`` / :meth:`FakeCluster.set_api_versions` (per node if wanted). A request at a
  version we cannot decode, or above the advertised ApiVersions range, gets the v0
  UNSUPPORTED_VERSION answer a real broker gives. Other APIs are served at any version we
  can decode, advertised or not.
* Metadata: the live brokers, ``controller_id`` = the first live node, the topics of
  ``topics={"name": partitions}`` / :meth:`FakeCluster.add_topic` with leaders spread over the
  nodes (change them with :meth:`FakeCluster.set_leader`; a dead leader is reported as
  LEADER_NOT_AVAILABLE with leader -1). Unknown topics: UNKNOWN_TOPIC_OR_PARTITION, unless
  ``auto_create_topics=True``.
* FindCoordinator (v0-3 and the batched v4+): :attr:`FakeCluster.coordinator_id` (settable; the
  first node by default), or COORDINATOR_NOT_AVAILABLE while that node is dead.
* A classic-protocol group coordinator on the coordinator node (every other node answers
  NOT_COORDINATOR), modelled on Kafka's: JoinGroup v4+ without a member id first gets
  MEMBER_ID_REQUIRED (``require_member_id=False`` turns that off; static members skip it); a
  join starts a rebalance whose barrier answers every member once all known members joined
  again, or drops the missing ones after the largest rebalance timeout (no initial delay); the
  leader (kept across generations) gets the roster, SyncGroup waits for the leader's
  assignment; Heartbeat validates member and generation and says REBALANCE_IN_PROGRESS while
  the group prepares a rebalance (also after :meth:`FakeCluster.trigger_rebalance`); members
  expire after their session timeout without any request; a static member rejoining without
  its id replaces (fences, FENCED_INSTANCE_ID) the old one; LeaveGroup removes members.
  OffsetCommit validates member and generation (allowed while preparing a rebalance,
  REBALANCE_IN_PROGRESS while completing one; generation -1 without a member id is taken only
  while the group is empty, as Kafka does) and stores offsets in memory
  (:meth:`FakeCluster.committed`); OffsetFetch (v0-7 and batched v8+) returns them (-1 for
  none); DescribeGroups, ListGroups and DeleteGroups report that state. A waiting JoinGroup or
  SyncGroup holds its connection, as on a real broker.
* Partition logs in memory: :meth:`FakeCluster.append` (records, encoded with our
  ``encode_batch``) or :meth:`FakeCluster.append_batch` (v2 batches as bytes) add data; Produce
  appends too (acks=0 gets no answer). Fetch returns whole batches from the fetch offset (at
  least one, then up to the byte limits; no fetch sessions: session id 0), with
  NOT_LEADER_OR_FOLLOWER off the leader, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a stale
  or future ``current_leader_epoch``, OFFSET_OUT_OF_RANGE outside [log start, log end]; with no
  data it answers after ``max_wait_ms`` capped at ``fetch_wait_cap_s`` (0.5 s). ListOffsets
  answers latest (-1), earliest (-2), max-timestamp (-3) and by timestamp (the first batch whose
  largest timestamp reaches it: exact for one-record batches). DeleteRecords and
  :meth:`FakeCluster.set_log_start_offset` move the log start. InitProducerId hands out new
  producer ids (epoch 0) and bumps the epoch of a known one. Transactions are not modelled.
* SaslHandshake: accepts the mechanisms given as ``sasl_mechanisms=`` (UNSUPPORTED_SASL_MECHANISM
  otherwise). SaslAuthenticate: SASL_AUTHENTICATION_FAILED unless scripted, so a SASL test
  scripts the exchange it wants (``cluster.script(ApiKey.SASL_AUTHENTICATE, [...])``) and reads
  the client's tokens from :meth:`FakeCluster.requests`. Only the KIP-152 flow (SaslHandshake
  v1 then SaslAuthenticate) is spoken.
* Any other API without a script or handler: the connection is closed (as a broker closes on a
  request it cannot serve) and the event is logged.

Helpers: :func:`error_body` builds a valid response of any API and version with a given error
code in every ``error_code`` field, mirroring the request's topics/partitions/members/groups so
per-partition errors are reported where the client looks for them; :meth:`FakeCluster.fail`
scripts that for the next ``times`` requests of an API.

Recording and inspection: :meth:`FakeCluster.requests` lists the decoded ``(header, body)``
received (by api and node), :meth:`FakeCluster.wait_for_requests` waits (bounded) for them,
:meth:`FakeCluster.accepted_connections` counts connections per node; :meth:`FakeCluster.committed`,
:meth:`FakeCluster.group_state`, :meth:`FakeCluster.leader` and :meth:`FakeCluster.log_offsets`
expose the state, and :meth:`FakeCluster.set_committed` seeds it.

Faults: :meth:`FakeCluster.kill` closes a node's listener and connections (clients get
connection refused); :meth:`FakeCluster.restart` opens it again on the same port;
:meth:`FakeCluster.close_connections` drops the open connections only. Cluster state (topics,
groups, offsets, logs) survives all three.

Threading: handlers run on the broker thread, one request at a time, and must not block for
long (use ``Reply(delay_s=...)`` to be slow); they may call any :class:`FakeCluster` method. An
exception in a handler (or a body the encoder rejects) is logged, closes that connection and is
kept in :attr:`FakeCluster.errors`; with ``strict=True`` (the default) leaving the ``with``
block raises it, so a broken script never passes silently.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
import logging
import selectors
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkaconsumer.errors import KafkaProtocolError, UnsupportedVersionError
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    RequestHeader,
    decode_request,
    decode_request_header,
    encode_response,
    get_api,
)
from kafkaconsumer.protocol.schema import Field

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_API_VERSIONS",
    "FakeCluster",
    "FakeBroker",
    "Reply",
    "Handler",
    "error_body",
    "fit_body",
    "response_frame",
    "ScriptEntry",
]

#: What the fake brokers advertise by default: every API we implement but the client telemetry
#: ones (71, 72), which Apache Kafka advertises only with a telemetry receiver configured.
DEFAULT_API_VERSIONS: dict[int, tuple[int, int]] = {
    key: versions for key, versions in SUPPORTED_VERSIONS.items() if key not in (71, 72)
}

# API keys used by the defaults (plain ints so this module reads without the enum).
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, SASL_HANDSHAKE, API_VERSIONS = 15, 16, 17, 18
DELETE_RECORDS, INIT_PRODUCER_ID, SASL_AUTHENTICATE, DELETE_GROUPS = 21, 22, 36, 42

# Error codes the defaults produce.
_NONE = 0
_OFFSET_OUT_OF_RANGE = 1
_CORRUPT_MESSAGE = 2
_UNKNOWN_TOPIC_OR_PARTITION = 3
_LEADER_NOT_AVAILABLE = 5
_NOT_LEADER_OR_FOLLOWER = 6
_COORDINATOR_NOT_AVAILABLE = 15
_NOT_COORDINATOR = 16
_ILLEGAL_GENERATION = 22
_INCONSISTENT_GROUP_PROTOCOL = 23
_UNKNOWN_MEMBER_ID = 25
_REBALANCE_IN_PROGRESS = 27
_UNSUPPORTED_SASL_MECHANISM = 33
_UNSUPPORTED_VERSION = 35
_SASL_AUTHENTICATION_FAILED = 58
_NON_EMPTY_GROUP = 68
_GROUP_ID_NOT_FOUND = 69
_FENCED_LEADER_EPOCH = 74
_UNKNOWN_LEADER_EPOCH = 75
_MEMBER_ID_REQUIRED = 79
_FENCED_INSTANCE_ID = 82
_UNKNOWN_TOPIC_ID = 100
_REBOOTSTRAP_REQUIRED = 129

_AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)
_MAX_FRAME = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")
_CALL_TIMEOUT_S = 10.0


@dataclass
class Reply:
    """How to answer one request.

    ``body``: the response body (fields left out take their defaults; None: the default
    handler's answer, or all defaults for an API without one). ``delay_s``: answer (or
    close) only after this many seconds; the connection answers in order, so requests behind
    this one wait too. ``close``: close the connection instead of answering. ``raw``: write these
    bytes verbatim instead of an encoded response (see :func:`response_frame`). ``drop``: never
    answer and keep the connection open (a lost response, or a Produce with acks=0).
    """

    body: dict[str, Any] | None = None
    delay_s: float = 0.0
    close: bool = False
    raw: bytes | None = None
    drop: bool = False

    def __post_init__(self) -> None:
        if self.delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {self.delay_s}")
        if sum((self.close, self.raw is not None, self.drop)) > 1:
            raise ValueError(
                "a Reply closes the connection, sends raw bytes or drops the answer: one of them"
            )


#: A handler: ``(node_id, request_header, request_body) -> dict | Reply | None`` (None: let the
#: default handler answer).
Handler = Callable[[int, RequestHeader, dict[str, Any]], dict[str, Any] | Reply | None]
ScriptEntry = dict[str, Any] | Reply | Handler | None


def response_frame(header: RequestHeader, payload: bytes) -> bytes:
    """Frame ``payload`` (a response body, possibly malformed) as the answer to ``header``.

    Adds the size prefix and the response header (v1 with its empty tagged section when the
    request's version is flexible, except for ApiVersions which always uses v0).
    """
    api = get_api(header.api_key)
    out = _SIZE.pack(header.correlation_id)
    if api.is_flexible(header.api_version) and header.api_key != API_VERSIONS:
        out += b"\x00"
    out += payload
    return _SIZE.pack(len(out)) + out


# ------------------------------------------------------------------------------------------
# Bodies: fitting to a version and building error responses


def fit_body(
    api_key: int, version: int, body: dict[str, Any], kind: str = "response"
) -> dict[str, Any]:
    """A copy of ``body`` without the fields (at any depth) that ``version`` does not carry.

    Lets one body serve every version; the encoder fills the fields left out with defaults.
    """
    api = get_api(api_key)
    fields = api.response if kind == "response" else api.request
    return _fit(fields, version, body)


def _fit(fields: list[Field], version: int, value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_name = {f.name: f for f in fields}
    for key, item in value.items():
        f = by_name.get(key)
        if f is None:
            if key == "_unknown_tags":
                out[key] = item
            continue
        if not f.present_in(version):
            continue
        if f.struct_fields is not None and item is not None:
            if f.is_array:
                item = [
                    _fit(f.struct_fields, version, e) if isinstance(e, dict) else e for e in item
                ]
            elif isinstance(item, dict):
                item = _fit(f.struct_fields, version, item)
        out[key] = item
    return out


# Response array field -> request fields it mirrors (besides a field of the same name).
_ARRAY_SOURCES: dict[str, tuple[str, ...]] = {
    "responses": ("topics", "topic_data"),
    "coordinators": ("coordinator_keys",),
    "results": ("groups_names", "topics"),
    "groups": ("group_ids",),
    "partitions": ("partition_indexes", "partition_data"),
    "partition_responses": ("partition_data",),
    "members": (),
    "topics": ("topic_data",),
}
# Response scalar field -> request fields it copies (besides a field of the same name).
_SCALAR_SOURCES: dict[str, tuple[str, ...]] = {
    "partition_index": ("partition", "index"),
    "index": ("partition_index", "partition"),
    "partition": ("partition_index",),
    "name": ("topic",),
    "topic": ("name",),
}
_COPYABLE = {
    "string": str,
    "int8": int,
    "int16": int,
    "int32": int,
    "int64": int,
    "uuid": uuid.UUID,
}
# How a bare string or int element of a request array is named in a response struct.
_STRING_KEYS = ("name", "group_id", "key", "topic")
_INT_KEYS = ("partition_index", "partition")


def error_body(
    api_key: int, version: int, error_code: int, request: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A valid response body of ``api_key`` at ``version`` with ``error_code`` in every
    ``error_code`` field.

    With the decoded ``request``, arrays of the response mirror those of the request (topics,
    partitions, members, groups, coordinator keys) and identifying fields (names, partition
    indexes, member ids, topic ids) are copied, so a per-partition error lands on the
    partitions the client asked about. Without it, arrays are empty.
    """
    api = get_api(api_key)
    return _error_fill(api.response, version, int(error_code), request)


def _request_element(element: Any) -> dict[str, Any] | None:
    if isinstance(element, dict):
        return element
    if isinstance(element, str):
        return {k: element for k in _STRING_KEYS}
    if isinstance(element, int) and not isinstance(element, bool):
        return {k: element for k in _INT_KEYS}
    return None


def _error_fill(
    fields: list[Field], version: int, code: int, request: dict[str, Any] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        if f.name == "error_code" and f.element == "int16":
            out[f.name] = code
            continue
        if f.struct_fields is not None:
            if f.is_array:
                source: Any = None
                if request is not None:
                    for name in (f.name, *_ARRAY_SOURCES.get(f.name, ())):
                        candidate = request.get(name)
                        if isinstance(candidate, list):
                            source = candidate
                            break
                if source:
                    out[f.name] = [
                        _error_fill(f.struct_fields, version, code, _request_element(e))
                        for e in source
                    ]
            elif f.nullable.empty or not f.nullable_in(version):
                out[f.name] = _error_fill(f.struct_fields, version, code, None)
            continue
        if request is None or f.is_array or f.element not in _COPYABLE:
            continue
        for name in (f.name, *_SCALAR_SOURCES.get(f.name, ())):
            value = request.get(name)
            if isinstance(value, _COPYABLE[f.element]) and not isinstance(value, bool):
                out[f.name] = value
                break
    return out


# ------------------------------------------------------------------------------------------
# State


@dataclass
class _Batch:
    base: int
    last: int
    max_timestamp: int
    data: bytes


@dataclass
class _Partition:
    leader: int
    leader_epoch: int = 0
    log_start: int = 0
    log_end: int = 0
    batches: list[_Batch] = field(default_factory=list)


@dataclass
class _Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[_Partition]


class _Deferred:
    """An answer the group coordinator gives later (a JoinGroup or SyncGroup barrier).

    Broker thread only. ``body`` is set when it is settled; ``conn``/``header`` once the request
    that waits for it has been taken off its connection.
    """

    __slots__ = ("body", "conn", "header")

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self.conn: _Conn | None = None
        self.header: RequestHeader | None = None


@dataclass
class _Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    last_seen: float = 0.0
    join: _Deferred | None = None
    sync: _Deferred | None = None

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")


@dataclass
class _Group:
    group_id: str
    generation: int = 0
    state: str = "Empty"  # Empty, PreparingRebalance, CompletingRebalance, Stable
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, _Member] = field(default_factory=dict)
    pending_member_ids: set[str] = field(default_factory=set)
    rebalance_deadline: float | None = None
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = field(default_factory=dict)

    def instance_owner(self, instance_id: str | None) -> str | None:
        if instance_id is None:
            return None
        return next(
            (m.member_id for m in self.members.values() if m.group_instance_id == instance_id), None
        )


class FakeBroker:
    """One node of a :class:`FakeCluster`: its id, address and whether it is alive.

    Thread-safety: fields are written by the cluster's broker thread (``alive``) and read by
    tests; single reads of these attributes are safe.
    """

    def __init__(self, node_id: int, host: str) -> None:
        self.node_id = node_id
        self.host = host
        self.port = 0
        self.alive = False
        self.rack: str | None = None
        self._listener: socket.socket | None = None

    @property
    def address(self) -> str:
        """``host:port`` of this node."""
        return f"{self.host}:{self.port}"

    def __repr__(self) -> str:
        return f"FakeBroker(node_id={self.node_id}, {self.address}, alive={self.alive})"


class _Conn:
    """One client connection (broker thread only)."""

    __slots__ = ("sock", "broker", "peer", "inbuf", "outbuf", "pending", "busy", "closed")

    def __init__(self, sock: socket.socket, broker: FakeBroker, peer: str) -> None:
        self.sock = sock
        self.broker = broker
        self.peer = peer
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.pending: collections.deque[bytes] = collections.deque()
        self.busy = False
        self.closed = False


_WAKE = object()


class FakeCluster:
    """A scripted fake Kafka cluster of ``n_brokers`` nodes on loopback (see the module doc).

    Use it as a context manager (or call :meth:`start` and :meth:`stop`). ``topics``: name ->
    partition count; ``api_versions``: what ApiVersions advertises (default: everything we
    implement); ``sasl_mechanisms``: what SaslHandshake accepts; ``auto_create_topics`` /
    ``auto_create_partitions``: Metadata creates unknown topics; ``require_member_id``: the
    JoinGroup v4+ member-id round trip; ``fetch_wait_cap_s``: the longest an empty Fetch waits;
    ``strict``: raise handler errors when the ``with`` block ends.

    Thread-safety: every public method may be called from any thread, including from handlers
    running on the broker thread; state is guarded by one lock, and handlers run without it.
    """

    def __init__(
        self,
        n_brokers: int = 1,
        *,
        topics: dict[str, int] | None = None,
        api_versions: dict[int, tuple[int, int]] | None = None,
        host: str = "127.0.0.1",
        cluster_id: str = "fake-cluster",
        sasl_mechanisms: Iterable[str] = (),
        auto_create_topics: bool = False,
        auto_create_partitions: int = 1,
        require_member_id: bool = True,
        fetch_wait_cap_s: float = 0.5,
        strict: bool = True,
    ) -> None:
        if not isinstance(n_brokers, int) or n_brokers < 1:
            raise ValueError(f"n_brokers must be a positive int, got {n_brokers!r}")
        self.brokers: list[FakeBroker] = [FakeBroker(i, host) for i in range(n_brokers)]
        self.cluster_id = cluster_id
        self.sasl_mechanisms: list[str] = list(sasl_mechanisms)
        self.auto_create_topics = auto_create_topics
        self.auto_create_partitions = auto_create_partitions
        self.require_member_id = require_member_id
        self.fetch_wait_cap_s = fetch_wait_cap_s
        self.strict = strict
        #: Exceptions raised by handlers or while encoding their answers (broker thread).
        self.errors: list[BaseException] = []

        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._api_versions: dict[int | None, dict[int, tuple[int, int]]] = {
            None: dict(api_versions if api_versions is not None else DEFAULT_API_VERSIONS)
        }
        self._topics: dict[str, _Topic] = {}
        self._groups: dict[str, _Group] = {}
        self._coordinator_id = 0
        self._handlers: dict[int, list[tuple[int | None, Handler]]] = {}
        self._scripts: dict[int, collections.deque[tuple[int | None, ScriptEntry]]] = {}
        self._recorded: list[tuple[int, RequestHeader, dict[str, Any]]] = []
        self._accepted: collections.Counter[int] = collections.Counter()
        self._defaults: dict[int, Callable[[int, RequestHeader, dict[str, Any], _Conn], Any]] = {
            API_VERSIONS: self._api_versions_default,
            METADATA: self._metadata_default,
            FIND_COORDINATOR: self._find_coordinator_default,
            JOIN_GROUP: self._join_group_default,
            SYNC_GROUP: self._sync_group_default,
            HEARTBEAT: self._heartbeat_default,
            LEAVE_GROUP: self._leave_group_default,
            OFFSET_COMMIT: self._offset_commit_default,
            OFFSET_FETCH: self._offset_fetch_default,
            DESCRIBE_GROUPS: self._describe_groups_default,
            LIST_GROUPS: self._list_groups_default,
            DELETE_GROUPS: self._delete_groups_default,
            SASL_HANDSHAKE: self._sasl_handshake_default,
            SASL_AUTHENTICATE: self._sasl_authenticate_default,
            PRODUCE: self._produce_default,
            FETCH: self._fetch_default,
            LIST_OFFSETS: self._list_offsets_default,
            DELETE_RECORDS: self._delete_records_default,
            INIT_PRODUCER_ID: self._init_producer_id_default,
        }
        self._producer_ids = itertools.count(1000)
        for name, count in (topics or {}).items():
            self.add_topic(name, count)

        self._selector: selectors.BaseSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._commands: collections.deque[tuple[Callable[[], None], threading.Event]] = (
            collections.deque()
        )
        self._timers: list[tuple[float, int, _Conn, RequestHeader, Reply]] = []
        # Deferred answers settled by the coordinator, to send outside the lock.
        self._settled: list[_Deferred] = []
        self._timer_seq = itertools.count()
        self._conns: set[_Conn] = set()

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> FakeCluster:
        self.start()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.stop()
        if self.strict and exc_type is None and self.errors:
            raise AssertionError(f"fake broker handler errors: {self.errors!r}") from self.errors[0]

    def start(self) -> None:
        """Open every node's listener and start the broker thread."""
        if self._thread is not None:
            raise RuntimeError("FakeCluster already started")
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        try:
            for broker in self.brokers:
                self._open_listener(broker)
        except BaseException:
            self._close_all()
            raise
        self._thread = threading.Thread(target=self._run, name="fake-kafka-cluster", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the broker thread and close every socket (idempotent)."""
        thread = self._thread
        if thread is None:
            return
        self._stopping = True
        if threading.current_thread() is thread:
            return  # called from a handler: the loop ends after this request; stop() again to close
        self._wake()
        thread.join(timeout_s)
        if thread.is_alive():  # pragma: no cover - a handler blocked the broker thread
            logger.error("fake broker thread did not stop within %.1f s", timeout_s)
        self._thread = None
        self._close_all()

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``host:port`` of every node (dead ones included)."""
        return ",".join(b.address for b in self.brokers)

    @property
    def node_ids(self) -> list[int]:
        """The node ids of the cluster."""
        return [b.node_id for b in self.brokers]

    def broker(self, node_id: int) -> FakeBroker:
        """The node ``node_id``."""
        for b in self.brokers:
            if b.node_id == node_id:
                return b
        raise KeyError(f"no broker with node id {node_id}")

    # ---------------------------------------------------------------- scripting

    def on(self, api_key: int, handler: Handler | None, *, node_id: int | None = None) -> None:
        """Answer requests of ``api_key`` (on ``node_id`` only, if given) with ``handler``.

        The latest handler registered for a node wins; ``handler=None`` removes the handlers of
        that api (and node filter).
        """
        with self._lock:
            entries = self._handlers.setdefault(int(api_key), [])
            if handler is None:
                entries[:] = [e for e in entries if e[0] != node_id]
            else:
                entries.append((node_id, handler))

    def script(
        self, api_key: int, responses: Iterable[ScriptEntry], *, node_id: int | None = None
    ) -> None:
        """Answer the next requests of ``api_key`` (on ``node_id`` only, if given) with
        ``responses`` in order (dicts, :class:`Reply` objects, handlers or None); afterwards the
        handler or the default answers again. Appends to any script already queued."""
        with self._lock:
            queue = self._scripts.setdefault(int(api_key), collections.deque())
            for entry in responses:
                queue.append((node_id, entry))

    def fail(
        self,
        api_key: int,
        error_code: int,
        *,
        times: int = 1,
        node_id: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Script the next ``times`` requests of ``api_key`` to fail with ``error_code`` (see
        :func:`error_body`), optionally after ``delay_s``."""
        if times < 1:
            raise ValueError(f"times must be >= 1, got {times}")
        key = int(api_key)

        def answer(node: int, header: RequestHeader, body: dict[str, Any]) -> Reply:
            return Reply(error_body(key, header.api_version, error_code, body), delay_s=delay_s)

        self.script(key, [answer] * times, node_id=node_id)

    def pending_script(self, api_key: int) -> int:
        """How many scripted answers of ``api_key`` are still queued."""
        with self._lock:
            return len(self._scripts.get(int(api_key), ()))

    def set_api_versions(
        self, versions: dict[int, tuple[int, int]], *, node_id: int | None = None
    ) -> None:
        """What ApiVersions advertises (on ``node_id`` only, if given): ``{key: (min, max)}``."""
        with self._lock:
            self._api_versions[node_id] = dict(versions)

    # ---------------------------------------------------------------- recording

    def requests(
        self, api_key: int | None = None, *, node_id: int | None = None
    ) -> list[tuple[RequestHeader, dict[str, Any]]]:
        """The decoded requests received so far, oldest first, as ``(header, body)``; filtered by
        api key and node when given."""
        with self._lock:
            return [
                (header, body)
                for node, header, body in self._recorded
                if (api_key is None or header.api_key == api_key)
                and (node_id is None or node == node_id)
            ]

    def wait_for_requests(
        self,
        api_key: int | None = None,
        count: int = 1,
        *,
        node_id: int | None = None,
        timeout_s: float = 10.0,
    ) -> list[tuple[RequestHeader, dict[str, Any]]]:
        """Wait until at least ``count`` matching requests were received; returns them all.

        Raises ``AssertionError`` after ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = self.requests(api_key, node_id=node_id)
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"timed out after {timeout_s} s waiting for {count} request(s) of api "
                        f"{api_key} (got {len(found)})"
                    )
                self._changed.wait(min(remaining, 0.5))

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._recorded.clear()

    def accepted_connections(self, node_id: int) -> int:
        """How many connections ``node_id`` has accepted so far."""
        with self._lock:
            return self._accepted[node_id]

    # ---------------------------------------------------------------- topics, leaders, coordinator

    def add_topic(
        self,
        name: str,
        partitions: int,
        *,
        topic_id: uuid.UUID | None = None,
        leaders: list[int] | None = None,
    ) -> uuid.UUID:
        """Create (or replace) topic ``name``; leaders default to round-robin over the nodes.
        Returns its topic id."""
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        if leaders is not None and len(leaders) != partitions:
            raise ValueError("leaders must name one node per partition")
        ids = self.node_ids
        with self._lock:
            tid = topic_id or uuid.uuid4()
            self._topics[name] = _Topic(
                name,
                tid,
                [
                    _Partition(leaders[p] if leaders else ids[p % len(ids)])
                    for p in range(partitions)
                ],
            )
            return tid

    def topic_id(self, name: str) -> uuid.UUID:
        """The topic id of ``name``."""
        with self._lock:
            return self._topics[name].topic_id

    def set_leader(
        self, topic: str, partition: int, node_id: int, *, leader_epoch: int | None = None
    ) -> None:
        """Move the leadership of a partition (bumping its leader epoch unless given)."""
        with self._lock:
            p = self._topics[topic].partitions[partition]
            p.leader = node_id
            p.leader_epoch = p.leader_epoch + 1 if leader_epoch is None else leader_epoch

    def leader(self, topic: str, partition: int) -> tuple[int, int]:
        """``(leader node id, leader epoch)`` of a partition."""
        with self._lock:
            p = self._topics[topic].partitions[partition]
            return p.leader, p.leader_epoch

    # ---------------------------------------------------------------- partition logs

    def append(
        self, topic: str, partition: int, records: Iterable[tuple[Any, ...]], **encode_kwargs: Any
    ) -> int:
        """Append one record batch to a partition's log, as a producer would; returns its base
        offset. ``records`` are ``(key, value)`` or ``(key, value, headers, timestamp_ms)``;
        ``encode_kwargs`` go to :func:`kafkaconsumer.record.encode_batch` (compression,
        transactional, producer_id, ...)."""
        from kafkaconsumer.record import encode_batch

        rows = [r if len(r) >= 4 else (r[0], r[1], [], None) for r in records]
        with self._lock:
            p = self._topics[topic].partitions[partition]
            return self._append_batches(
                p, encode_batch(rows, base_offset=p.log_end, **encode_kwargs)
            )

    def append_batch(self, topic: str, partition: int, batches: bytes) -> int:
        """Append already encoded v2 record batches (their base offsets are rewritten to follow
        the log, as a broker does); returns the first base offset."""
        with self._lock:
            return self._append_batches(self._topics[topic].partitions[partition], bytes(batches))

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """``(log start offset, log end offset)`` of a partition."""
        with self._lock:
            p = self._topics[topic].partitions[partition]
            return p.log_start, p.log_end

    def set_log_start_offset(self, topic: str, partition: int, offset: int) -> None:
        """Delete the records below ``offset`` (as retention or DeleteRecords would)."""
        with self._lock:
            self._truncate_start(self._topics[topic].partitions[partition], offset)

    @staticmethod
    def _truncate_start(p: _Partition, offset: int) -> None:
        if not p.log_start <= offset <= p.log_end:
            raise ValueError(f"log start offset {offset} outside [{p.log_start}, {p.log_end}]")
        p.log_start = offset
        p.batches = [b for b in p.batches if b.last >= offset]

    @staticmethod
    def _append_batches(p: _Partition, data: bytes) -> int:
        # Split into v2 batches, renumber them from the log end and keep them; all or nothing.
        batches: list[_Batch] = []
        next_offset = p.log_end
        pos = 0
        while pos < len(data):
            if len(data) - pos < 61:
                raise ValueError("truncated record batch")
            (length,) = _SIZE.unpack_from(data, pos + 8)
            end = pos + 12 + length
            if length < 49 or end > len(data) or data[pos + 16] != 2:
                raise ValueError("not a complete v2 record batch")
            (last_delta,) = _SIZE.unpack_from(data, pos + 23)
            (max_ts,) = struct.unpack_from(">q", data, pos + 35)
            # Like a broker, stamp the offset and the current leader epoch (neither is under the CRC).
            raw = struct.pack(">qii", next_offset, length, p.leader_epoch) + data[pos + 16 : end]
            batches.append(_Batch(next_offset, next_offset + last_delta, max_ts, raw))
            next_offset += last_delta + 1
            pos = end
        if not batches:
            raise ValueError("no record batch to append")
        p.batches.extend(batches)
        p.log_end = next_offset
        return batches[0].base

    @property
    def coordinator_id(self) -> int:
        """The node FindCoordinator names and that serves the group APIs."""
        with self._lock:
            return self._coordinator_id

    @coordinator_id.setter
    def coordinator_id(self, node_id: int) -> None:
        self.broker(node_id)  # validates
        with self._lock:
            self._coordinator_id = node_id

    # ---------------------------------------------------------------- groups

    def committed(self, group_id: str) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        """Committed offsets of a group: ``{(topic, partition): (offset, leader_epoch, metadata)}``."""
        with self._lock:
            group = self._groups.get(group_id)
            return dict(group.offsets) if group else {}

    def set_committed(
        self,
        group_id: str,
        topic: str,
        partition: int,
        offset: int,
        leader_epoch: int = -1,
        metadata: str | None = "",
    ) -> None:
        """Store a committed offset as if a client had committed it."""
        with self._lock:
            self._group(group_id).offsets[(topic, partition)] = (offset, leader_epoch, metadata)

    def group_state(self, group_id: str) -> dict[str, Any]:
        """A snapshot of a group: ``state``, ``generation``, ``leader``, ``protocol_name`` and
        ``members`` (``{member_id: {"group_instance_id": ..., "assignment": bytes}}``)."""
        with self._lock:
            g = self._groups.get(group_id)
            if g is None:
                return {
                    "state": "Dead",
                    "generation": -1,
                    "leader": None,
                    "protocol_name": None,
                    "members": {},
                }
            return {
                "state": g.state,
                "generation": g.generation,
                "leader": g.leader,
                "protocol_name": g.protocol_name,
                "members": {
                    m.member_id: {
                        "group_instance_id": m.group_instance_id,
                        "assignment": m.assignment,
                    }
                    for m in g.members.values()
                },
            }

    def trigger_rebalance(self, group_id: str) -> None:
        """Start a rebalance of the group, as a membership change would: heartbeats get
        REBALANCE_IN_PROGRESS until every member joined again (or the rebalance timeout)."""
        with self._lock:
            g = self._groups.get(group_id)
            if g is not None and g.members:
                self._prepare_rebalance(g)

    # ---------------------------------------------------------------- faults

    def kill(self, node_id: int) -> None:
        """Close ``node_id``'s listener and connections (answers queued for it are dropped)."""
        broker = self.broker(node_id)
        self._call(lambda: self._kill(broker))

    def restart(self, node_id: int) -> None:
        """Open ``node_id``'s listener again, on the same port."""
        broker = self.broker(node_id)
        self._call(lambda: self._restart(broker))

    def close_connections(self, node_id: int | None = None) -> None:
        """Close the open client connections (of ``node_id`` only, if given); listeners stay."""
        self._call(lambda: self._close_connections(node_id))

    # ---------------------------------------------------------------- broker thread

    def _call(self, fn: Callable[[], None]) -> None:
        # Run fn on the broker thread (directly when already on it) and wait for it; its
        # exception, if any, is raised here.
        if self._thread is None or threading.current_thread() is self._thread:
            fn()
            return
        done = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                fn()
            except BaseException as exc:
                failure.append(exc)

        self._commands.append((run, done))
        self._wake()
        if not done.wait(_CALL_TIMEOUT_S):
            raise TimeoutError("fake broker thread did not run the command in time")
        if failure:
            raise failure[0]

    def _wake(self) -> None:
        if self._wake_w is not None:
            try:
                self._wake_w.send(b"x")
            except OSError:
                pass  # buffer full: a wake-up is pending anyway

    def _open_listener(self, broker: FakeBroker) -> None:
        assert self._selector is not None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((broker.host, broker.port))
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        broker.port = sock.getsockname()[1]
        broker._listener = sock
        broker.alive = True
        self._selector.register(sock, selectors.EVENT_READ, broker)

    def _kill(self, broker: FakeBroker) -> None:
        if broker._listener is not None:
            assert self._selector is not None
            self._selector.unregister(broker._listener)
            broker._listener.close()
            broker._listener = None
        broker.alive = False
        for conn in [c for c in self._conns if c.broker is broker]:
            self._close_conn(conn)

    def _restart(self, broker: FakeBroker) -> None:
        if broker._listener is None:
            self._open_listener(broker)

    def _close_connections(self, node_id: int | None) -> None:
        for conn in [c for c in self._conns if node_id is None or c.broker.node_id == node_id]:
            self._close_conn(conn)

    def _close_all(self) -> None:
        for conn in list(self._conns):
            self._close_conn(conn)
        for broker in self.brokers:
            if broker._listener is not None:
                try:
                    if self._selector is not None:
                        self._selector.unregister(broker._listener)
                except (KeyError, ValueError):
                    pass
                broker._listener.close()
                broker._listener = None
            broker.alive = False
        for sock in (self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        self._wake_r = self._wake_w = None
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        self._timers.clear()

    def _close_conn(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        try:
            if self._selector is not None:
                self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def _run(self) -> None:
        assert self._selector is not None
        selector = self._selector
        while not self._stopping:
            # Short enough for group session and rebalance deadlines to be noticed promptly.
            timeout = 0.1
            if self._timers:
                timeout = max(0.0, min(timeout, self._timers[0][0] - time.monotonic()))
            try:
                events = selector.select(timeout)
            except OSError:  # pragma: no cover - selector closed under us
                break
            for key, mask in events:
                data = key.data
                if data is _WAKE:
                    try:
                        while self._wake_r is not None and self._wake_r.recv(4096):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                elif isinstance(data, FakeBroker):
                    self._accept(data)
                elif isinstance(data, _Conn):
                    if mask & selectors.EVENT_READ and not data.closed:
                        self._read(data)
                    if mask & selectors.EVENT_WRITE and not data.closed:
                        self._flush(data)
            while self._commands:
                fn, done = self._commands.popleft()
                try:
                    fn()
                except Exception as exc:  # pragma: no cover - reported through errors
                    logger.exception("fake broker command failed")
                    self.errors.append(exc)
                finally:
                    done.set()
            with self._lock:
                self._tick_groups(time.monotonic())
            self._answer_settled()
            now = time.monotonic()
            while self._timers and self._timers[0][0] <= now:
                _, _, conn, header, reply = heapq.heappop(self._timers)
                if conn.closed:
                    continue
                conn.busy = False
                self._apply(conn, header, reply)
                self._drain(conn)
        # Release anyone waiting on a command that will never run.
        while self._commands:
            self._commands.popleft()[1].set()

    def _accept(self, broker: FakeBroker) -> None:
        if broker._listener is None or self._selector is None:
            return  # killed earlier in this round of events
        try:
            sock, addr = broker._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(sock, broker, f"/{addr[0]}")
        self._conns.add(conn)
        self._selector.register(sock, selectors.EVENT_READ, conn)
        with self._lock:
            self._accepted[broker.node_id] += 1

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close_conn(conn)
            return
        if not data:
            self._close_conn(conn)
            return
        conn.inbuf += data
        while len(conn.inbuf) >= 4:
            (size,) = _SIZE.unpack_from(conn.inbuf, 0)
            if size < 0 or size > _MAX_FRAME:
                logger.warning(
                    "fake broker %d: bad frame size %d, closing", conn.broker.node_id, size
                )
                self._close_conn(conn)
                return
            if len(conn.inbuf) < 4 + size:
                break
            conn.pending.append(bytes(conn.inbuf[4 : 4 + size]))
            del conn.inbuf[: 4 + size]
        self._drain(conn)

    def _drain(self, conn: _Conn) -> None:
        while conn.pending and not conn.busy and not conn.closed:
            self._handle(conn, conn.pending.popleft())

    def _flush(self, conn: _Conn) -> None:
        assert self._selector is not None
        if conn.outbuf:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._close_conn(conn)
                return
            del conn.outbuf[:sent]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.outbuf else 0)
        self._selector.modify(conn.sock, events, conn)

    # ---------------------------------------------------------------- request handling

    def _handle(self, conn: _Conn, frame: bytes) -> None:
        node = conn.broker.node_id
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError:
            self._unsupported_version(conn, frame)
            return
        except KafkaProtocolError as exc:
            logger.warning("fake broker %d: malformed request (%s), closing", node, exc)
            self._close_conn(conn)
            return
        with self._changed:
            self._recorded.append((node, header, body))
            self._changed.notify_all()
            entry = self._next_entry(header.api_key, node)
            if header.api_key in (HEARTBEAT, OFFSET_COMMIT, SYNC_GROUP, JOIN_GROUP):
                # Whoever answers, a member that talks to the coordinator is alive.
                group = self._groups.get(body.get("group_id", ""))
                member = group.members.get(body.get("member_id", "")) if group else None
                if member is not None:
                    member.last_seen = time.monotonic()
        try:
            result = self._resolve(entry, node, header, body, conn)
        except Exception as exc:
            logger.exception("fake broker %d: handler for api %d failed", node, header.api_key)
            self.errors.append(exc)
            self._close_conn(conn)
            return
        if isinstance(result, _Deferred):
            if result.body is None:
                # Wait for the barrier; like a broker, answer nothing else on this connection.
                result.conn, result.header = conn, header
                conn.busy = True
            else:
                self._apply(conn, header, Reply(result.body))
            self._answer_settled()
            return
        self._answer_settled()
        if result is None:
            logger.warning(
                "fake broker %d: no answer for api %d v%d, closing the connection",
                node,
                header.api_key,
                header.api_version,
            )
            self._close_conn(conn)
            return
        reply = result if isinstance(result, Reply) else Reply(result)
        if reply.delay_s > 0:
            conn.busy = True
            heapq.heappush(
                self._timers,
                (time.monotonic() + reply.delay_s, next(self._timer_seq), conn, header, reply),
            )
            return
        self._apply(conn, header, reply)

    def _next_entry(self, api_key: int, node: int) -> tuple[str, Any]:
        # Called with the lock held: pick what answers this request.
        queue = self._scripts.get(api_key)
        if queue:
            for i, (only, entry) in enumerate(queue):
                if only is None or only == node:
                    del queue[i]
                    return ("script", entry)
        for only, handler in reversed(self._handlers.get(api_key, [])):
            if only is None or only == node:
                return ("handler", handler)
        return ("default", None)

    def _answer_settled(self) -> None:
        # Send the deferred answers the coordinator settled (broker thread, lock not held).
        while True:
            with self._lock:
                if not self._settled:
                    return
                ready, self._settled = self._settled, []
            for d in ready:
                if d.conn is None or d.header is None or d.body is None:
                    continue  # answered inline by the request that created it
                conn, header = d.conn, d.header
                d.conn = None
                if conn.closed:
                    continue
                conn.busy = False
                self._apply(conn, header, Reply(d.body))
                self._drain(conn)

    def _resolve(
        self,
        entry: tuple[str, Any],
        node: int,
        header: RequestHeader,
        body: dict[str, Any],
        conn: _Conn,
    ) -> dict[str, Any] | Reply | _Deferred | None:
        kind, value = entry
        result: dict[str, Any] | Reply | _Deferred | None = None
        if kind == "script":
            result = value(node, header, body) if callable(value) else value
            if result is None:
                # A None entry defers to the handler, then the default.
                for only, handler in reversed(self._handlers.get(header.api_key, [])):
                    if only is None or only == node:
                        result = handler(node, header, body)
                        break
        elif kind == "handler":
            result = value(node, header, body)
        default = self._defaults.get(header.api_key)
        if result is None:
            if default is not None:
                with self._lock:
                    result = default(node, header, body, conn)
        elif (
            isinstance(result, Reply)
            and result.body is None
            and default is not None
            and not (result.close or result.drop or result.raw is not None)
        ):
            # A Reply without a body delays the default answer.
            with self._lock:
                answer = default(node, header, body, conn)
            if isinstance(answer, _Deferred):
                return answer  # a barrier decides when to answer
            if isinstance(answer, Reply):
                return dataclasses.replace(answer, delay_s=answer.delay_s + result.delay_s)
            return dataclasses.replace(result, body=answer)
        if isinstance(result, (Reply, _Deferred)):
            return result
        if result is not None and not isinstance(result, dict):
            raise TypeError(
                f"handler returned {type(result).__name__}, expected dict, Reply or None"
            )
        return result

    def _apply(self, conn: _Conn, header: RequestHeader, reply: Reply) -> None:
        if conn.closed:
            return
        if reply.close:
            self._close_conn(conn)
            return
        if reply.drop:
            return
        if reply.raw is not None:
            data = bytes(reply.raw)
        else:
            try:
                body = fit_body(header.api_key, header.api_version, reply.body or {})
                data = encode_response(
                    header.api_key, header.api_version, header.correlation_id, body
                )
            except Exception as exc:
                logger.exception(
                    "fake broker %d: cannot encode the answer to api %d v%d",
                    conn.broker.node_id,
                    header.api_key,
                    header.api_version,
                )
                self.errors.append(exc)
                self._close_conn(conn)
                return
        conn.outbuf += data
        self._flush(conn)

    def _unsupported_version(self, conn: _Conn, frame: bytes) -> None:
        try:
            header = decode_request_header(frame)
        except KafkaProtocolError:
            self._close_conn(conn)
            return
        if header.api_key != API_VERSIONS:
            logger.warning(
                "fake broker %d: api %d v%d unknown, closing",
                conn.broker.node_id,
                header.api_key,
                header.api_version,
            )
            self._close_conn(conn)
            return
        # As a real broker: answer ApiVersions v0 with UNSUPPORTED_VERSION and our ranges.
        with self._lock:
            body = {
                "error_code": _UNSUPPORTED_VERSION,
                "api_keys": self._api_keys(conn.broker.node_id),
            }
            self._recorded.append((conn.broker.node_id, header, {}))
            self._changed.notify_all()
        conn.outbuf += encode_response(API_VERSIONS, 0, header.correlation_id, body)
        self._flush(conn)

    # ---------------------------------------------------------------- default handlers
    # These run with the lock held and must not call user code.

    def _api_keys(self, node: int) -> list[dict[str, int]]:
        versions = self._api_versions.get(node, self._api_versions[None])
        return [
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in sorted(versions.items())
        ]

    def _api_versions_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any] | Reply:
        api_keys = self._api_keys(node)
        advertised = next((k for k in api_keys if k["api_key"] == API_VERSIONS), None)
        if advertised is not None and header.api_version > advertised["max_version"]:
            # An older broker: the v0 answer with UNSUPPORTED_VERSION, so the client retries lower.
            answer = {"error_code": _UNSUPPORTED_VERSION, "api_keys": api_keys}
            return Reply(raw=encode_response(API_VERSIONS, 0, header.correlation_id, answer))
        expected = body.get("cluster_id")
        if header.api_version >= 5 and expected is not None:
            # As an Apache Kafka 4.4 broker (KIP-1242): a client that names another cluster, or
            # another node, than this one is told to rebootstrap.
            if expected != self.cluster_id or body.get("node_id") != node:
                return {"error_code": _REBOOTSTRAP_REQUIRED, "api_keys": [], "throttle_time_ms": 0}
        return {"error_code": _NONE, "api_keys": api_keys, "throttle_time_ms": 0}

    def _live(self) -> list[FakeBroker]:
        return [b for b in self.brokers if b.alive]

    def _metadata_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        live = self._live()
        live_ids = {b.node_id for b in live}
        requested = body.get("topics")
        if requested is None or (header.api_version == 0 and not requested):
            wanted: list[tuple[str | None, uuid.UUID | None]] = [
                (name, None) for name in sorted(self._topics)
            ]
        else:
            wanted = [(t.get("name"), t.get("topic_id")) for t in requested]
        auto_create = self.auto_create_topics and body.get("allow_auto_topic_creation", True)
        topics = []
        for name, tid in wanted:
            topic: _Topic | None = None
            if name:
                topic = self._topics.get(name)
                if topic is None and auto_create:
                    self.add_topic(name, self.auto_create_partitions)
                    topic = self._topics[name]
            elif tid is not None and tid.int != 0:
                topic = next((t for t in self._topics.values() if t.topic_id == tid), None)
                if topic is None:
                    topics.append(
                        {
                            "error_code": _UNKNOWN_TOPIC_ID,
                            "topic_id": tid,
                            "name": None if header.api_version >= 12 else "",
                        }
                    )
                    continue
            if topic is None:
                topics.append({"error_code": _UNKNOWN_TOPIC_OR_PARTITION, "name": name})
                continue
            partitions = []
            for index, p in enumerate(topic.partitions):
                up = p.leader in live_ids
                leader = p.leader if up else -1
                partitions.append(
                    {
                        "error_code": _NONE if up else _LEADER_NOT_AVAILABLE,
                        "partition_index": index,
                        "leader_id": leader,
                        "leader_epoch": p.leader_epoch,
                        "replica_nodes": [p.leader],
                        "isr_nodes": [p.leader] if up else [],
                        "offline_replicas": [] if up else [p.leader],
                    }
                )
            topics.append(
                {
                    "error_code": _NONE,
                    "name": topic.name,
                    "topic_id": topic.topic_id,
                    "is_internal": False,
                    "partitions": partitions,
                    "topic_authorized_operations": _AUTHORIZED_OPERATIONS_UNKNOWN,
                }
            )
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in live
            ],
            "cluster_id": self.cluster_id,
            "controller_id": live[0].node_id if live else -1,
            "topics": topics,
            "cluster_authorized_operations": _AUTHORIZED_OPERATIONS_UNKNOWN,
        }

    def _find_coordinator_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        coordinator = self.broker(self._coordinator_id)

        def one(key: str) -> dict[str, Any]:
            if not coordinator.alive:
                return {
                    "key": key,
                    "error_code": _COORDINATOR_NOT_AVAILABLE,
                    "error_message": None,
                    "node_id": -1,
                    "host": "",
                    "port": -1,
                }
            return {
                "key": key,
                "error_code": _NONE,
                "error_message": None,
                "node_id": coordinator.node_id,
                "host": coordinator.host,
                "port": coordinator.port,
            }

        if header.api_version >= 4:
            return {
                "throttle_time_ms": 0,
                "coordinators": [one(k) for k in body.get("coordinator_keys") or []],
            }
        answer = one(body.get("key", ""))
        answer.pop("key")
        answer["throttle_time_ms"] = 0
        return answer

    # The classic group protocol, modelled on Kafka's group coordinator: a JoinGroup barrier
    # waits for every known member (or the rebalance timeout), the leader's SyncGroup releases
    # the followers' SyncGroups, members that stop heartbeating expire.

    def _settle(self, d: _Deferred | None, body: dict[str, Any]) -> None:
        if d is not None and d.body is None:
            d.body = body
            self._settled.append(d)

    def _prepare_rebalance(self, g: _Group) -> None:
        if g.state == "PreparingRebalance":
            return
        g.state = "PreparingRebalance"
        timeout_ms = max((m.rebalance_timeout_ms for m in g.members.values()), default=0)
        g.rebalance_deadline = time.monotonic() + timeout_ms / 1000.0
        for m in g.members.values():
            self._settle(m.sync, {"error_code": _REBALANCE_IN_PROGRESS})
            m.sync = None
        self._maybe_complete_join(g)

    def _remove_member(self, g: _Group, member_id: str) -> None:
        m = g.members.pop(member_id, None)
        if m is None:
            return
        self._settle(
            m.join, {"error_code": _UNKNOWN_MEMBER_ID, "generation_id": -1, "member_id": member_id}
        )
        self._settle(m.sync, {"error_code": _UNKNOWN_MEMBER_ID})
        if g.leader == member_id:
            g.leader = None
        if g.state == "PreparingRebalance":
            self._maybe_complete_join(g)
        elif g.members:
            self._prepare_rebalance(g)
        else:
            self._become_empty(g)

    def _become_empty(self, g: _Group) -> None:
        if g.state != "Empty":
            g.generation += 1
        g.state = "Empty"
        g.protocol_name = None
        g.leader = None
        g.rebalance_deadline = None

    def _maybe_complete_join(self, g: _Group, *, deadline_passed: bool = False) -> None:
        if g.state != "PreparingRebalance":
            return
        if not deadline_passed and any(m.join is None for m in g.members.values()):
            return
        for member_id in [m.member_id for m in g.members.values() if m.join is None]:
            del g.members[member_id]  # did not rejoin in time
        if not g.members:
            self._become_empty(g)
            return
        g.generation += 1
        g.state = "CompletingRebalance"
        g.rebalance_deadline = None
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        leader = g.members[g.leader]
        common = [
            name
            for name, _ in leader.protocols
            if all(any(n == name for n, _ in m.protocols) for m in g.members.values())
        ]
        g.protocol_name = common[0] if common else leader.protocols[0][0]
        now = time.monotonic()
        for m in g.members.values():
            m.assignment = b""
            m.last_seen = now
            roster = [
                {
                    "member_id": x.member_id,
                    "group_instance_id": x.group_instance_id,
                    "metadata": x.metadata_for(g.protocol_name),
                }
                for x in g.members.values()
            ]
            self._settle(
                m.join,
                {
                    "error_code": _NONE,
                    "generation_id": g.generation,
                    "protocol_type": g.protocol_type,
                    "protocol_name": g.protocol_name,
                    "leader": g.leader,
                    "skip_assignment": False,
                    "member_id": m.member_id,
                    "members": roster if m.member_id == g.leader else [],
                },
            )
            m.join = None

    def _tick_groups(self, now: float) -> None:
        # Called with the lock held on every turn of the broker loop.
        for g in list(self._groups.values()):
            if (
                g.state == "PreparingRebalance"
                and g.rebalance_deadline is not None
                and now >= g.rebalance_deadline
            ):
                self._maybe_complete_join(g, deadline_passed=True)
            for m in list(g.members.values()):
                waiting = m.join is not None or m.sync is not None
                if not waiting and now - m.last_seen > m.session_timeout_ms / 1000.0:
                    logger.info(
                        "fake coordinator: member %s of group %s expired", m.member_id, g.group_id
                    )
                    self._remove_member(g, m.member_id)

    def _member_error(
        self, g: _Group | None, member_id: str, instance_id: str | None, generation: int | None
    ) -> int:
        # Validates a request of a group member; a valid member counts as alive.
        if g is None:
            return _UNKNOWN_MEMBER_ID
        owner = g.instance_owner(instance_id)
        if owner is not None and owner != member_id:
            return _FENCED_INSTANCE_ID
        member = g.members.get(member_id)
        if member is None:
            return _UNKNOWN_MEMBER_ID
        member.last_seen = time.monotonic()
        if generation is not None and generation != g.generation:
            return _ILLEGAL_GENERATION
        return _NONE

    def _group(self, group_id: str) -> _Group:
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = _Group(group_id)
        return group

    def _not_coordinator(
        self, node: int, header: RequestHeader, body: dict[str, Any]
    ) -> dict[str, Any] | None:
        if node == self._coordinator_id:
            return None
        return error_body(header.api_key, header.api_version, _NOT_COORDINATOR, body)

    def _join_group_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> Any:
        refused = self._not_coordinator(node, header, body)
        if refused is not None:
            return refused
        g = self._group(body["group_id"])
        protocols = [(p["name"], bytes(p["metadata"] or b"")) for p in body.get("protocols") or []]
        protocol_type = body.get("protocol_type") or ""
        member_id = body.get("member_id") or ""
        instance_id = body.get("group_instance_id")
        # Brokers send a null protocol name on errors only where it may be null (v7+).
        failed: dict[str, Any] = {
            "generation_id": -1,
            "member_id": member_id,
            "protocol_name": None if header.api_version >= 7 else "",
        }
        if not protocol_type or not protocols:
            return dict(failed, error_code=_INCONSISTENT_GROUP_PROTOCOL)
        if g.members and (
            protocol_type != g.protocol_type
            or not any(
                all(
                    any(n == name for n, _ in m.protocols)
                    for m in g.members.values()
                    if m.member_id != member_id
                )
                for name, _ in protocols
            )
        ):
            return dict(failed, error_code=_INCONSISTENT_GROUP_PROTOCOL)
        if not member_id:
            member_id = f"{header.client_id or 'member'}-{uuid.uuid4()}"
            previous = g.instance_owner(instance_id)
            if previous is not None:
                # A static member restarted: the new id replaces (fences) the old one.
                old = g.members.pop(previous)
                old.member_id = member_id
                g.members[member_id] = old
                if g.leader == previous:
                    g.leader = member_id
            elif self.require_member_id and header.api_version >= 4 and instance_id is None:
                g.pending_member_ids.add(member_id)
                return dict(failed, error_code=_MEMBER_ID_REQUIRED, member_id=member_id)
        elif member_id not in g.members and member_id not in g.pending_member_ids:
            owner = g.instance_owner(instance_id)
            code = (
                _FENCED_INSTANCE_ID
                if owner is not None and owner != member_id
                else _UNKNOWN_MEMBER_ID
            )
            return dict(failed, error_code=code)
        g.pending_member_ids.discard(member_id)
        member = g.members.get(member_id)
        if member is None:
            member = g.members[member_id] = _Member(member_id, instance_id, "", "", 0, 0, [])
        member.group_instance_id = instance_id
        member.client_id = header.client_id or ""
        member.client_host = conn.peer
        member.session_timeout_ms = body.get("session_timeout_ms", 10000)
        rebalance_timeout = body.get("rebalance_timeout_ms", -1)
        member.rebalance_timeout_ms = (
            rebalance_timeout if rebalance_timeout >= 0 else member.session_timeout_ms
        )
        member.protocols = protocols
        member.last_seen = time.monotonic()
        self._settle(member.join, dict(failed, error_code=_UNKNOWN_MEMBER_ID))  # a duplicate join
        deferred = member.join = _Deferred()
        g.protocol_type = protocol_type
        if g.state == "PreparingRebalance":
            self._maybe_complete_join(g)
        else:
            self._prepare_rebalance(g)
        return deferred

    def _sync_group_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> Any:
        refused = self._not_coordinator(node, header, body)
        if refused is not None:
            return refused
        g = self._groups.get(body["group_id"])
        member_id = body.get("member_id", "")
        code = self._member_error(
            g, member_id, body.get("group_instance_id"), body.get("generation_id", -1)
        )
        if code != _NONE or g is None:
            return {"error_code": code}
        if body.get("protocol_type") not in (None, g.protocol_type) or body.get(
            "protocol_name"
        ) not in (None, g.protocol_name):
            return {"error_code": _INCONSISTENT_GROUP_PROTOCOL}
        if g.state == "PreparingRebalance":
            return {"error_code": _REBALANCE_IN_PROGRESS}
        member = g.members[member_id]
        if g.state == "Stable":
            return {
                "error_code": _NONE,
                "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name,
                "assignment": member.assignment,
            }
        deferred = member.sync = _Deferred()
        if member_id == g.leader:
            for item in body.get("assignments") or []:
                target = g.members.get(item["member_id"])
                if target is not None:
                    target.assignment = bytes(item["assignment"] or b"")
            g.state = "Stable"
            for m in g.members.values():
                self._settle(
                    m.sync,
                    {
                        "error_code": _NONE,
                        "protocol_type": g.protocol_type,
                        "protocol_name": g.protocol_name,
                        "assignment": m.assignment,
                    },
                )
                m.sync = None
        return deferred

    def _heartbeat_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        refused = self._not_coordinator(node, header, body)
        if refused is not None:
            return refused
        g = self._groups.get(body["group_id"])
        code = self._member_error(
            g,
            body.get("member_id", ""),
            body.get("group_instance_id"),
            body.get("generation_id", -1),
        )
        if code == _NONE and g is not None and g.state == "PreparingRebalance":
            code = _REBALANCE_IN_PROGRESS
        return {"error_code": code}

    def _leave_group_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        refused = self._not_coordinator(node, header, body)
        if refused is not None:
            return refused
        g = self._groups.get(body["group_id"])

        def leave(member_id: str, instance_id: str | None) -> int:
            if g is None:
                return _UNKNOWN_MEMBER_ID
            if not member_id:
                # A static member may leave by instance id alone (v3+).
                member_id = g.instance_owner(instance_id) or ""
            code = self._member_error(g, member_id, instance_id, None)
            if code == _NONE:
                self._remove_member(g, member_id)
            return code

        if header.api_version <= 2:
            return {"error_code": leave(body.get("member_id", ""), None)}
        members = []
        for m in body.get("members") or []:
            members.append(
                {
                    "member_id": m["member_id"],
                    "group_instance_id": m.get("group_instance_id"),
                    "error_code": leave(m["member_id"], m.get("group_instance_id")),
                }
            )
        return {"error_code": _NONE, "members": members}

    def _offset_commit_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        refused = self._not_coordinator(node, header, body)
        if refused is not None:
            return refused
        g = self._group(body["group_id"])
        generation = body.get("generation_id_or_member_epoch", -1)
        member_id = body.get("member_id", "")
        instance_id = body.get("group_instance_id")
        if generation < 0 and not g.members:
            code = _NONE  # a commit from outside any group (assign() users), as Kafka takes it
        elif generation >= 0 or member_id or instance_id is not None:
            code = self._member_error(g, member_id, instance_id, generation)
            if code == _NONE and g.state == "CompletingRebalance":
                code = _REBALANCE_IN_PROGRESS
        else:
            code = _UNKNOWN_MEMBER_ID
        topics = []
        for t in body.get("topics") or []:
            partitions = []
            for p in t.get("partitions") or []:
                if code == _NONE:
                    g.offsets[(t["name"], p["partition_index"])] = (
                        p["committed_offset"],
                        p.get("committed_leader_epoch", -1),
                        p.get("committed_metadata"),
                    )
                partitions.append({"partition_index": p["partition_index"], "error_code": code})
            topics.append({"name": t["name"], "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    def _fetch_offsets(
        self, group_id: str, topics: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        group = self._groups.get(group_id)
        offsets = group.offsets if group else {}
        if topics is None:
            names: dict[str, list[int]] = {}
            for name, partition in sorted(offsets):
                names.setdefault(name, []).append(partition)
            wanted = list(names.items())
        else:
            wanted = [(t["name"], list(t.get("partition_indexes") or [])) for t in topics]
        out = []
        for name, partitions in wanted:
            rows = []
            for partition in partitions:
                offset, epoch, metadata = offsets.get((name, partition), (-1, -1, ""))
                rows.append(
                    {
                        "partition_index": partition,
                        "committed_offset": offset,
                        "committed_leader_epoch": epoch,
                        "metadata": metadata,
                        "error_code": _NONE,
                    }
                )
            out.append({"name": name, "partitions": rows})
        return out

    def _offset_fetch_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        refused = self._not_coordinator(node, header, body)
        if refused is not None:
            return refused
        if header.api_version >= 8:
            groups = [
                {
                    "group_id": g["group_id"],
                    "topics": self._fetch_offsets(g["group_id"], g.get("topics")),
                    "error_code": _NONE,
                }
                for g in body.get("groups") or []
            ]
            return {"throttle_time_ms": 0, "groups": groups}
        return {
            "throttle_time_ms": 0,
            "topics": self._fetch_offsets(body["group_id"], body.get("topics")),
            "error_code": _NONE,
        }

    def _describe_groups_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        out = []
        for group_id in body.get("groups") or []:
            if node != self._coordinator_id:
                out.append({"error_code": _NOT_COORDINATOR, "group_id": group_id})
                continue
            g = self._groups.get(group_id)
            if g is None:
                out.append({"error_code": _NONE, "group_id": group_id, "group_state": "Dead"})
                continue
            known = g.state in ("Stable", "CompletingRebalance")
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata_for(g.protocol_name) if known else b"",
                    "member_assignment": m.assignment if g.state == "Stable" else b"",
                }
                for m in g.members.values()
            ]
            out.append(
                {
                    "error_code": _NONE,
                    "group_id": group_id,
                    "group_state": g.state,
                    "protocol_type": g.protocol_type or "",
                    "protocol_data": (g.protocol_name or "") if known else "",
                    "members": members,
                    "authorized_operations": _AUTHORIZED_OPERATIONS_UNKNOWN,
                }
            )
        return {"throttle_time_ms": 0, "groups": out}

    def _list_groups_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        groups = []
        if node == self._coordinator_id:
            states = set(body.get("states_filter") or [])
            types = {t.lower() for t in body.get("types_filter") or []}
            for g in sorted(self._groups.values(), key=lambda g: g.group_id):
                if states and g.state not in states:
                    continue
                if types and "classic" not in types:
                    continue
                groups.append(
                    {
                        "group_id": g.group_id,
                        "protocol_type": g.protocol_type or "",
                        "group_state": g.state,
                        "group_type": "classic",
                    }
                )
        return {"throttle_time_ms": 0, "error_code": _NONE, "groups": groups}

    def _delete_groups_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        results = []
        for group_id in body.get("groups_names") or []:
            if node != self._coordinator_id:
                code = _NOT_COORDINATOR
            elif group_id not in self._groups:
                code = _GROUP_ID_NOT_FOUND
            elif self._groups[group_id].members:
                code = _NON_EMPTY_GROUP
            else:
                del self._groups[group_id]
                code = _NONE
            results.append({"group_id": group_id, "error_code": code})
        return {"throttle_time_ms": 0, "results": results}

    def _leader_error(self, node: int, p: _Partition, current_leader_epoch: int) -> int:
        if p.leader != node:
            return _NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch >= 0 and current_leader_epoch < p.leader_epoch:
            return _FENCED_LEADER_EPOCH
        if current_leader_epoch > p.leader_epoch:
            return _UNKNOWN_LEADER_EPOCH
        return _NONE

    def _produce_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any] | Reply:
        responses = []
        for t in body.get("topic_data") or []:
            topic = self._topics.get(t["name"])
            rows = []
            for pd in t.get("partition_data") or []:
                index = pd["index"]
                row: dict[str, Any] = {"index": index, "error_code": _NONE, "base_offset": -1}
                if topic is None or not 0 <= index < len(topic.partitions):
                    row["error_code"] = _UNKNOWN_TOPIC_OR_PARTITION
                else:
                    p = topic.partitions[index]
                    row["error_code"] = self._leader_error(node, p, -1)
                    if row["error_code"] == _NONE:
                        try:
                            row["base_offset"] = self._append_batches(
                                p, bytes(pd["records"] or b"")
                            )
                        except ValueError:
                            row["error_code"] = _CORRUPT_MESSAGE
                        row["log_start_offset"] = p.log_start
                rows.append(row)
            responses.append({"name": t["name"], "partition_responses": rows})
        answer = {"responses": responses, "throttle_time_ms": 0}
        return Reply(drop=True) if body.get("acks") == 0 else answer

    def _topic_for(self, entry: dict[str, Any]) -> _Topic | None:
        name = entry.get("topic") or entry.get("name")
        if name:
            return self._topics.get(name)
        tid = entry.get("topic_id")
        return next((t for t in self._topics.values() if t.topic_id == tid), None)

    def _fetch_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any] | Reply:
        responses = []
        got_data = False
        max_bytes = body.get("max_bytes", 2**31 - 1)
        for t in body.get("topics") or []:
            topic = self._topic_for(t)
            rows = []
            for fp in t.get("partitions") or []:
                index = fp["partition"]
                row: dict[str, Any] = {
                    "partition_index": index,
                    "error_code": _NONE,
                    "records": None,
                }
                rows.append(row)
                if topic is None or not 0 <= index < len(topic.partitions):
                    unknown_id = header.api_version >= 13 and topic is None
                    row["error_code"] = (
                        _UNKNOWN_TOPIC_ID if unknown_id else _UNKNOWN_TOPIC_OR_PARTITION
                    )
                    continue
                p = topic.partitions[index]
                row.update(
                    high_watermark=p.log_end,
                    last_stable_offset=p.log_end,
                    log_start_offset=p.log_start,
                )
                row["error_code"] = self._leader_error(node, p, fp.get("current_leader_epoch", -1))
                if row["error_code"] == _NOT_LEADER_OR_FOLLOWER and p.leader in {
                    b.node_id for b in self._live()
                }:
                    row["current_leader"] = {"leader_id": p.leader, "leader_epoch": p.leader_epoch}
                if row["error_code"] != _NONE:
                    continue
                offset = fp["fetch_offset"]
                if not p.log_start <= offset <= p.log_end:
                    row["error_code"] = _OFFSET_OUT_OF_RANGE
                    continue
                chunks: list[bytes] = []
                size = 0
                limit = min(fp.get("partition_max_bytes", max_bytes), max_bytes)
                for batch in p.batches:
                    if batch.last < offset:
                        continue
                    # A broker always returns at least one whole batch, even above the limit.
                    if chunks and size + len(batch.data) > limit:
                        break
                    chunks.append(batch.data)
                    size += len(batch.data)
                if chunks:
                    row["records"] = b"".join(chunks)
                    max_bytes -= size
                    got_data = True
            topic_key = (
                {"topic_id": t.get("topic_id")}
                if header.api_version >= 13
                else {"topic": t.get("topic")}
            )
            responses.append({**topic_key, "partitions": rows})
        answer = {
            "throttle_time_ms": 0,
            "error_code": _NONE,
            "session_id": 0,
            "responses": responses,
        }
        wait_ms = body.get("max_wait_ms", 0)
        if not got_data and wait_ms > 0:
            # Like a broker waiting for data that never comes, capped to keep tests quick.
            return Reply(answer, delay_s=min(wait_ms / 1000.0, self.fetch_wait_cap_s))
        return answer

    def _list_offsets_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        topics = []
        for t in body.get("topics") or []:
            topic = self._topics.get(t["name"])
            rows = []
            for lp in t.get("partitions") or []:
                index = lp["partition_index"]
                row: dict[str, Any] = {
                    "partition_index": index,
                    "error_code": _NONE,
                    "timestamp": -1,
                    "offset": -1,
                }
                rows.append(row)
                if topic is None or not 0 <= index < len(topic.partitions):
                    row["error_code"] = _UNKNOWN_TOPIC_OR_PARTITION
                    continue
                p = topic.partitions[index]
                row["error_code"] = self._leader_error(node, p, lp.get("current_leader_epoch", -1))
                if row["error_code"] != _NONE:
                    continue
                target = lp["timestamp"]
                live = [b for b in p.batches if b.last >= p.log_start]
                if target == -1:  # latest
                    row["offset"] = p.log_end
                elif target == -2:  # earliest
                    row["offset"] = p.log_start
                elif target == -3:  # the record with the largest timestamp (KIP-734)
                    if live:
                        best = max(live, key=lambda b: b.max_timestamp)
                        row.update(offset=max(best.base, p.log_start), timestamp=best.max_timestamp)
                else:
                    # Exact for one-record batches; a batch is found by its largest timestamp.
                    hit = next((b for b in live if b.max_timestamp >= target), None)
                    if hit is not None:
                        row.update(offset=max(hit.base, p.log_start), timestamp=hit.max_timestamp)
                row["leader_epoch"] = p.leader_epoch
                row["old_style_offsets"] = [row["offset"]] if row["offset"] >= 0 else []
            topics.append({"name": t["name"], "partitions": rows})
        return {"throttle_time_ms": 0, "topics": topics}

    def _delete_records_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        topics = []
        for t in body.get("topics") or []:
            topic = self._topics.get(t["name"])
            rows = []
            for dp in t.get("partitions") or []:
                index = dp["partition_index"]
                row: dict[str, Any] = {
                    "partition_index": index,
                    "low_watermark": -1,
                    "error_code": _NONE,
                }
                rows.append(row)
                if topic is None or not 0 <= index < len(topic.partitions):
                    row["error_code"] = _UNKNOWN_TOPIC_OR_PARTITION
                    continue
                p = topic.partitions[index]
                row["error_code"] = self._leader_error(node, p, -1)
                if row["error_code"] != _NONE:
                    continue
                offset = p.log_end if dp["offset"] == -1 else dp["offset"]
                if not p.log_start <= offset <= p.log_end:
                    row["error_code"] = _OFFSET_OUT_OF_RANGE
                    continue
                self._truncate_start(p, offset)
                row["low_watermark"] = p.log_start
            topics.append({"name": t["name"], "partitions": rows})
        return {"throttle_time_ms": 0, "topics": topics}

    def _init_producer_id_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        producer_id = body.get("producer_id", -1)
        if producer_id >= 0:
            # An existing producer bumps its epoch.
            return {
                "error_code": _NONE,
                "producer_id": producer_id,
                "producer_epoch": body.get("producer_epoch", -1) + 1,
            }
        return {"error_code": _NONE, "producer_id": next(self._producer_ids), "producer_epoch": 0}

    def _sasl_handshake_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        ok = body.get("mechanism") in self.sasl_mechanisms
        return {
            "error_code": _NONE if ok else _UNSUPPORTED_SASL_MECHANISM,
            "mechanisms": list(self.sasl_mechanisms),
        }

    def _sasl_authenticate_default(
        self, node: int, header: RequestHeader, body: dict[str, Any], conn: _Conn
    ) -> dict[str, Any]:
        return {
            "error_code": _SASL_AUTHENTICATION_FAILED,
            "error_message": "the fake broker has no SASL exchange scripted",
            "auth_bytes": b"",
        }
