"""ShareFetch and ShareAcknowledge for a share-group member (Java ``ShareConsumeRequestManager``).

The member's assigned partitions are fetched from their leaders, one ShareFetch in flight per
broker, each in that broker's share session (:mod:`.share_session_handler`). Acknowledgements go
back to the broker that delivered the records: piggybacked on the next ShareFetch to it, or on
their own in a ShareAcknowledge (``commit_sync``, ``commit_async``, ``close``). Every
acknowledgement sent comes back completed, with the broker's error code for its partition or the
error the request failed with, so that the commit callback and ``commit_sync()`` report it;
none is dropped silently.

Responses become :class:`~.share_completed_fetch.ShareCompletedFetch` pieces in a buffer that the
user's thread drains. Partition errors that mean the leader moved or the metadata is stale
(NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
KAFKA_STORAGE_ERROR) ask for a metadata update. When NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH names the new leader (``current_leader`` and ``node_endpoints``, KIP-951),
the metadata takes it at once and the next fetch goes there without waiting for the refresh, as
Java's ``updatePartitionLeadership`` does. Acknowledgements of records that a broker delivered
which no longer leads the partition are not sent: they complete with NOT_LEADER_OR_FOLLOWER
(the new leader delivers those records again), as in Java. Other partition errors are handed to
the user's thread with the data, as Java does.

Acknowledgements sent by ``commit_sync`` or ``commit_async`` carry a deadline (the call's
timeout, or ``default.api.timeout.ms``): when a ShareAcknowledge answers them with a retriable
error (REQUEST_TIMED_OUT, COORDINATOR_LOAD_IN_PROGRESS, ...), for their partition or for the
whole request, they are sent again after ``retry.backoff.ms`` (doubling up to
``retry.backoff.max.ms``) until that deadline, and then complete with REQUEST_TIMED_OUT, as
Java's ``AcknowledgeRequestState`` does. Errors that mean the records' locks went with the
partition (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
UNKNOWN_TOPIC_ID), a request that failed on the network, acknowledgements piggybacked on a
ShareFetch and the closing acknowledgements are not retried, as in Java.
"""

from __future__ import annotations

import collections
import logging
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements
from kafkaconsumer.internals.fetch.share_completed_fetch import ShareCompletedFetch
from kafkaconsumer.internals.fetch.share_session_handler import ShareSessionHandler
from kafkaconsumer.metadata import Node
from kafkaconsumer.metrics.share_consumer_metrics import ShareFetchMetricsManager
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time

logger = logging.getLogger(__name__)

__all__ = ["ShareFetchConfig", "ShareConsumeRequestManager", "AcknowledgeResult"]

# Partition errors after which the metadata (leader, topic id) must be refreshed.
_REFRESH_METADATA = frozenset(
    {
        3,  # UNKNOWN_TOPIC_OR_PARTITION
        6,  # NOT_LEADER_OR_FOLLOWER
        56,  # KAFKA_STORAGE_ERROR
        74,  # FENCED_LEADER_EPOCH
        100,  # UNKNOWN_TOPIC_ID
    }
)
# The code reported for acknowledgements whose request never got an answer.
_SHARE_SESSION_NOT_FOUND = 122
_NOT_LEADER_OR_FOLLOWER = 6
_UNKNOWN_TOPIC_ID = 100
# Partition errors whose answer names the partition's current leader (KIP-951).
_LEADER_MOVED = frozenset({_NOT_LEADER_OR_FOLLOWER, 74})
_REQUEST_TIMED_OUT = 7
_NETWORK_EXCEPTION = 13
_UNKNOWN_SERVER_ERROR = -1
# Retriable errors after which acknowledgements are not sent again: the partition (and the
# acquisition locks with it) is no longer where they were sent.
_NOT_RETRIED = frozenset({3, _NOT_LEADER_OR_FOLLOWER, 74, _UNKNOWN_TOPIC_ID})


@dataclass(frozen=True)
class ShareFetchConfig:
    """The share-fetch settings, read once from the share consumer's configuration.

    Thread-safety: immutable.
    """

    group_id: str
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    max_records: int = 500
    batch_size: int = 500
    #: 0 batch_optimized, 1 record_limit (KIP-1206).
    acquire_mode: int = 0
    check_crcs: bool = True
    #: The first wait before acknowledgements are sent again after a retriable error, and
    #: its cap (it doubles per attempt, with 20% jitter).
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000


#: One partition's acknowledgements as the broker settled them.
AcknowledgeResult = tuple[TopicPartition, Acknowledgements]


def _leader_named(part: Any) -> tuple[int, int] | None:
    """``(leader_id, leader_epoch)`` of a partition answer's ``current_leader``, or None when
    the broker named none."""
    current = part.get("current_leader") or {}
    leader = int(current.get("leader_id", -1))
    epoch = int(current.get("leader_epoch", -1))
    return (leader, epoch) if leader >= 0 and epoch >= 0 else None


def _code_for(exc: BaseException) -> int:
    """The error code standing for a request that failed with ``exc``."""
    code = getattr(exc, "errno", None)
    if isinstance(code, int):
        return code
    if isinstance(exc, Errors.KafkaTimeoutError):
        return _REQUEST_TIMED_OUT
    if isinstance(exc, (Errors.KafkaConnectionError, Errors.NodeNotReadyError)):
        return _NETWORK_EXCEPTION
    return _UNKNOWN_SERVER_ERROR


class ShareConsumeRequestManager:
    """Sends a member's ShareFetch and ShareAcknowledge requests and collects their outcome.

    Thread-safety: every method may be called from the user's thread while responses complete
    on whichever thread polls the network client; ``_lock`` guards the sessions, the in-flight
    set, the buffer and the completed acknowledgements. No user code runs under it.
    """

    def __init__(
        self,
        client: Any,
        metadata: Any,
        config: ShareFetchConfig,
        *,
        time: Time = SYSTEM_TIME,
        metrics: ShareFetchMetricsManager | None = None,
    ) -> None:
        """Fetch through ``client`` (a ``ConsumerNetworkClient``) with the leaders and topic ids
        of ``metadata`` (a ``ConsumerMetadata``); with ``metrics``, record the share fetch
        sensors there."""
        self._client = client
        self._sensors = metrics  # set once here
        self._metadata = metadata
        self.config = config
        self._time = time
        self._lock = threading.Lock()
        self.member_id: str = str(uuid.uuid4())  # written by the member's owner before use
        self._assignment: frozenset[TopicPartition] = frozenset()  # guarded by _lock
        self._sessions: dict[int, ShareSessionHandler] = {}  # guarded by _lock
        self._in_flight: set[int] = set()  # guarded by _lock: nodes with a request out
        # Nodes whose queued acknowledgements go out when their request in flight completes
        # (True: and close the session).
        self._ack_waiting: dict[int, bool] = {}  # guarded by _lock
        self._buffer: collections.deque[ShareCompletedFetch] = collections.deque()  # _lock
        self._completed_acks: list[AcknowledgeResult] = []  # guarded by _lock
        self._acquisition_lock_timeout_ms: int | None = None  # guarded by _lock
        self._closed = False  # guarded by _lock
        self._backoff = ExponentialBackoff(
            config.retry_backoff_ms, 2.0, config.retry_backoff_max_ms, 0.2
        )
        # Smoothed round trip of the ShareFetches that brought records (None before one).
        self._fetch_latency_ms: float | None = None  # guarded by _lock
        # Acknowledgements to send again after a retriable error: (due ms, node, tp, acks).
        self._retries: list[tuple[int, int, TopicPartition, Acknowledgements]] = []  # _lock

    # ------------------------------------------------------------------ state ---------------
    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """The partitions the member now owns (from the share-group heartbeat)."""
        with self._lock:
            self._assignment = frozenset(partitions)

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions being fetched."""
        with self._lock:
            return self._assignment

    def acquisition_lock_timeout_ms(self) -> int | None:
        """The acquisition lock duration the brokers last reported, or None before any."""
        with self._lock:
            return self._acquisition_lock_timeout_ms

    def fetch_latency_ms(self) -> float | None:
        """The smoothed round trip (ms) of the ShareFetches that brought records, or None
        before the first."""
        with self._lock:
            return self._fetch_latency_ms

    def has_in_flight(self, node: int | None = None) -> bool:
        """Whether a request is out (to ``node``, or to any broker)."""
        with self._lock:
            return bool(self._in_flight) if node is None else node in self._in_flight

    def _session(self, node: int) -> ShareSessionHandler:
        handler = self._sessions.get(node)
        if handler is None or handler.member_id != self.member_id:
            handler = self._sessions[node] = ShareSessionHandler(node, self.member_id)
        return handler

    def _queue_acknowledgements(
        self, handler: ShareSessionHandler, tp: TopicPartition, acks: Acknowledgements
    ) -> None:
        """Under ``_lock``: queue ``acks`` in ``handler``'s session, or complete them failed when
        they cannot be applied there (Java ``acknowledgementsCannotBeSentError``): the topic id
        is gone, or the broker that delivered the records no longer leads the partition (its
        share partition, with the records' locks, went with the leadership; the new leader
        delivers the records again)."""
        cluster = self._metadata.fetch()
        topic_id = cluster.topic_id(tp.topic)
        if topic_id is None:
            acks.complete(_UNKNOWN_TOPIC_ID, "the topic id is no longer known")
            self._completed_acks.append((tp, acks))
            return
        leader = cluster.leader_for(tp)
        if leader is not None and leader != handler.node:
            logger.debug(
                "node %s no longer leads %s (node %s does): failing its acknowledgements",
                handler.node,
                tp,
                leader,
            )
            acks.complete(
                _NOT_LEADER_OR_FOLLOWER,
                f"node {handler.node} is no longer the leader of {tp} (node {leader} is)",
            )
            self._completed_acks.append((tp, acks))
            return
        handler.add_partition_to_acknowledge(tp, topic_id, acks)

    def _apply_leaders(
        self, leaders: Mapping[TopicPartition, tuple[int, int]], response: Any
    ) -> None:
        """Take the new leaders a broker named with NOT_LEADER_OR_FOLLOWER or
        FENCED_LEADER_EPOCH (``current_leader``, ``node_endpoints``) into the metadata at once,
        so that the next request goes to them without waiting for a metadata refresh."""
        if not leaders:
            return
        nodes = [
            Node(int(e["node_id"]), str(e["host"]), int(e["port"]), e.get("rack"))
            for e in response.get("node_endpoints") or ()
        ]
        moved = self._metadata.update_partition_leadership(leaders, nodes)
        if moved:
            logger.info("share fetch: new leaders from the broker for %s", sorted(moved))

    # ------------------------------------------------------------------ buffer --------------
    def take_completed_fetches(self) -> list[ShareCompletedFetch]:
        """Remove and return the buffered partitions, oldest first."""
        with self._lock:
            out = list(self._buffer)
            self._buffer.clear()
        return out

    def has_buffered(self) -> bool:
        """Whether fetched data waits in the buffer."""
        with self._lock:
            return bool(self._buffer)

    def take_completed_acknowledgements(self) -> list[AcknowledgeResult]:
        """Remove and return the acknowledgements the brokers settled (or that failed)."""
        with self._lock:
            out = self._completed_acks
            self._completed_acks = []
        if self._sensors is not None:
            self._sensors.record_acknowledgements_failed(
                sum(len(acks) for _tp, acks in out if acks.error_code)
            )
        return out

    def record_acknowledgements_failed(self, count: int) -> None:
        """Count ``count`` acknowledgements that failed before being sent (their acquisition
        lock ran out) in the acknowledgement error sensors, as the broker's refusals are."""
        if self._sensors is not None and count:
            self._sensors.record_acknowledgements_failed(count)

    # ------------------------------------------------------------------ fetch ---------------
    def _leader(self, tp: TopicPartition) -> tuple[int, uuid.UUID] | None:
        cluster = self._metadata.fetch()
        leader = cluster.leader_for(tp)
        topic_id = cluster.topic_id(tp.topic)
        if leader is None or leader < 0 or topic_id is None:
            return None
        return leader, topic_id

    def send_fetches(
        self,
        acknowledgements: Mapping[int, Mapping[TopicPartition, Acknowledgements]],
        *,
        skip: frozenset[int] = frozenset(),
    ) -> int:
        """Send a ShareFetch to each leader of an assigned partition that has none in flight,
        carrying ``acknowledgements`` (by the node that delivered the records) for that node.
        Acknowledgements for a node with a request in flight, or that leads no assigned
        partition, wait in its session for the next request (see :meth:`send_acknowledgements`).
        Nodes in ``skip`` get no fetch (their fetched records are still being handed out).
        Returns how many requests were sent."""
        with self._lock:
            if self._closed:
                return 0
            by_node: dict[int, list[tuple[TopicPartition, uuid.UUID]]] = {}
            need_metadata = False
            for tp in sorted(self._assignment):
                found = self._leader(tp)
                if found is None:
                    need_metadata = True
                    continue
                by_node.setdefault(found[0], []).append((tp, found[1]))
            for node, node_acks in acknowledgements.items():
                handler = self._session(node)
                for tp, acks in node_acks.items():
                    self._queue_acknowledgements(handler, tp, acks)
            sends: list[tuple[int, dict[str, Any], dict[TopicPartition, Acknowledgements]]] = []
            for node, partitions in by_node.items():
                if node in self._in_flight or node in skip:
                    continue
                handler = self._session(node)
                for tp, topic_id in partitions:
                    handler.add_partition_to_fetch(tp, topic_id)
                body, sent_acks = handler.build_share_fetch()
                self._in_flight.add(node)
                sends.append((node, body, sent_acks))
        if need_metadata:
            self._metadata.request_update()
        for node, body, sent_acks in sends:
            self._send_fetch(node, body, sent_acks)
        return len(sends)

    def _fetch_body(self, session_part: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        return {
            "group_id": cfg.group_id,
            "member_id": self.member_id,
            "max_wait_ms": cfg.max_wait_ms,
            "min_bytes": cfg.min_bytes,
            "max_bytes": cfg.max_bytes,
            "max_records": cfg.max_records,
            "batch_size": cfg.batch_size,
            "share_acquire_mode": cfg.acquire_mode,
            **session_part,
        }

    def _renew(self, acks: Mapping[TopicPartition, Acknowledgements]) -> bool:
        return any(a.has_renew() for a in acks.values())

    def _send_fetch(
        self, node: int, session_part: dict[str, Any], acks: dict[TopicPartition, Acknowledgements]
    ) -> None:
        body = self._fetch_body(session_part)
        body["is_renew_ack"] = self._renew(acks)
        sent_ms = self._time.monotonic_ms()
        future: Future[Any] = self._client.send(node, ApiKey.SHARE_FETCH, body)
        self._record_sent(acks)
        future.add_callback(self._on_fetch_response, node, acks, sent_ms)
        future.add_errback(self._on_failure, node, acks)

    def _record_sent(self, acks: Mapping[TopicPartition, Acknowledgements]) -> None:
        if self._sensors is not None and acks:
            self._sensors.record_acknowledgements_sent(sum(len(a) for a in acks.values()))

    def _record_fetched(self, response: Any, latency_ms: int) -> None:
        if self._sensors is None:
            return
        size = records = 0
        for topic in response.get("responses", ()):
            for part in topic["partitions"]:
                data = part.get("records")
                size += len(data) if data else 0
                for rng in part.get("acquired_records") or ():
                    records += int(rng["last_offset"]) - int(rng["first_offset"]) + 1
        throttle = int(response.get("throttle_time_ms", 0) or 0)
        self._sensors.record_fetch(latency_ms, size, records, throttle)

    def _on_fetch_response(
        self,
        node: int,
        acks: dict[TopicPartition, Acknowledgements],
        sent_ms: int,
        response: Any,
    ) -> None:
        received = self._time.monotonic_ms()
        self._record_fetched(response, received - sent_ms)
        refresh = False
        leaders: dict[TopicPartition, tuple[int, int]] = {}
        with self._lock:
            self._in_flight.discard(node)
            handler = self._sessions.get(node)
            top = int(response.get("error_code", 0))
            usable = handler.handle_response(top) if handler is not None else False
            brought = False
            timeout = response.get("acquisition_lock_timeout_ms")
            if timeout:
                self._acquisition_lock_timeout_ms = int(timeout)
            settled: set[TopicPartition] = set()
            if usable:
                cluster = self._metadata.fetch()
                for topic in response.get("responses", ()):
                    name = cluster.topic_name(topic["topic_id"])
                    for part in topic["partitions"]:
                        if name is None:
                            refresh = True
                            continue
                        tp = TopicPartition(name, part["partition_index"])
                        partition_acks = acks.get(tp)
                        if partition_acks is not None:
                            partition_acks.complete(
                                int(part.get("acknowledge_error_code", 0)),
                                part.get("acknowledge_error_message"),
                            )
                            self._completed_acks.append((tp, partition_acks))
                            settled.add(tp)
                        code = int(part.get("error_code", 0))
                        if code in _REFRESH_METADATA:
                            refresh = True
                            named = _leader_named(part) if code in _LEADER_MOVED else None
                            if named is not None:
                                leaders[tp] = named
                        brought = brought or bool(part.get("acquired_records"))
                        if code or part.get("acquired_records"):
                            self._buffer.append(
                                ShareCompletedFetch(tp, topic["topic_id"], node, part, received)
                            )
                if top == _UNKNOWN_TOPIC_ID:
                    refresh = True
            if brought:
                # Only answers with records: one that waited fetch.max.wait.ms for records
                # says nothing about the round trip.
                last = self._fetch_latency_ms
                sample = float(received - sent_ms)
                self._fetch_latency_ms = sample if last is None else last + 0.2 * (sample - last)
            # Acknowledgements the response did not answer failed with its top-level error.
            code = top or _UNKNOWN_SERVER_ERROR
            for tp, partition_acks in acks.items():
                if tp not in settled:
                    partition_acks.complete(code, response.get("error_message"))
                    self._completed_acks.append((tp, partition_acks))
        self._apply_leaders(leaders, response)
        if refresh:
            self._metadata.request_update()
        if top and top not in (122, 123):
            logger.warning("ShareFetch to node %s failed with error %s", node, top)
        self._after_response(node)

    def _on_failure(
        self, node: int, acks: dict[TopicPartition, Acknowledgements], exc: BaseException
    ) -> None:
        with self._lock:
            self._in_flight.discard(node)
            handler = self._sessions.get(node)
            if handler is not None:
                handler.handle_error(exc)
            code = _code_for(exc)
            for tp, partition_acks in acks.items():
                partition_acks.complete(code, str(exc))
                self._completed_acks.append((tp, partition_acks))
        if getattr(exc, "invalid_metadata", False) or isinstance(
            exc, (Errors.KafkaConnectionError, Errors.NodeNotReadyError)
        ):
            self._metadata.request_update()
        logger.debug("share request to node %s failed: %r", node, exc)
        self._after_response(node)

    # ------------------------------------------------------------------ acknowledge ---------
    def send_acknowledgements(
        self,
        acknowledgements: Mapping[int, Mapping[TopicPartition, Acknowledgements]],
        *,
        close: bool = False,
        deadline_ms: int | None = None,
    ) -> list[Acknowledgements]:
        """Send ``acknowledgements`` (by the node that delivered the records) in ShareAcknowledge
        requests, plus whatever waits in each session; with ``close``, to every broker with a
        session, closing it. A broker with a request in flight gets them once it answered (one
        request per share session at a time, so that the epochs stay in order).
        Acknowledgements for a broker without an open session cannot be applied (its records
        were released when the session ended) and complete at once with
        SHARE_SESSION_NOT_FOUND. With ``deadline_ms`` (monotonic), a retriable answer sends them
        again until then (see :meth:`retry_acknowledgements`); closing sends those waiting to
        be retried along, once. Returns the acknowledgements handed in; each completes when
        settled (see :meth:`take_completed_acknowledgements`)."""
        sends: list[tuple[int, dict[str, Any], dict[TopicPartition, Acknowledgements]]] = []
        handed: list[Acknowledgements] = []
        with self._lock:
            nodes = set(acknowledgements)
            if close:
                nodes |= set(self._sessions)
                for _due, node, tp, acks in self._retries:
                    acks.retry_deadline_ms = None
                    self._queue_acknowledgements(self._session(node), tp, acks)
                    nodes.add(node)
                self._retries = []
            for node in sorted(nodes):
                handler = self._session(node)
                for tp, acks in acknowledgements.get(node, {}).items():
                    handed.append(acks)
                    acks.retry_deadline_ms = None if close else deadline_ms
                    self._queue_acknowledgements(handler, tp, acks)
                if node in self._in_flight:
                    self._ack_waiting[node] = close or self._ack_waiting.get(node, False)
                    continue
                send = self._build_acknowledge(node, close)
                if send is not None:
                    sends.append(send)
            if close:
                self._closed = True
        for send in sends:
            self._send_acknowledge(*send)
        return handed

    def _build_acknowledge(
        self, node: int, close: bool
    ) -> tuple[int, dict[str, Any], dict[TopicPartition, Acknowledgements]] | None:
        # Under _lock: the ShareAcknowledge for node's queued acknowledgements, or None.
        handler = self._session(node)
        if handler.is_new_session:
            for tp, acks in handler.take_pending_acknowledgements().items():
                acks.complete(_SHARE_SESSION_NOT_FOUND, "no open share session with the broker")
                self._completed_acks.append((tp, acks))
            return None
        if close:
            handler.notify_close()
        built = handler.build_share_acknowledge()
        if built is None or (not built[1] and not close):
            return None
        self._in_flight.add(node)
        return node, built[0], built[1]

    def _send_acknowledge(
        self, node: int, session_part: dict[str, Any], acks: dict[TopicPartition, Acknowledgements]
    ) -> None:
        body = {
            "group_id": self.config.group_id,
            "member_id": self.member_id,
            "is_renew_ack": self._renew(acks),
            **session_part,
        }
        future: Future[Any] = self._client.send(node, ApiKey.SHARE_ACKNOWLEDGE, body)
        self._record_sent(acks)
        future.add_callback(self._on_acknowledge_response, node, acks)
        future.add_errback(self._on_failure, node, acks)

    def _after_response(self, node: int) -> None:
        """A request to ``node`` completed: send the acknowledgements that waited for it."""
        with self._lock:
            close = self._ack_waiting.pop(node, None)
            send = None if close is None else self._build_acknowledge(node, close)
        if send is not None:
            self._send_acknowledge(*send)

    def _on_acknowledge_response(
        self, node: int, acks: dict[TopicPartition, Acknowledgements], response: Any
    ) -> None:
        refresh = False
        leaders: dict[TopicPartition, tuple[int, int]] = {}
        with self._lock:
            self._in_flight.discard(node)
            handler = self._sessions.get(node)
            top = int(response.get("error_code", 0))
            if handler is not None:
                handler.handle_response(top)
            timeout = response.get("acquisition_lock_timeout_ms")
            if timeout:
                self._acquisition_lock_timeout_ms = int(timeout)
            settled: set[TopicPartition] = set()
            cluster = self._metadata.fetch()
            for topic in response.get("responses", ()):
                name = cluster.topic_name(topic["topic_id"])
                if name is None:
                    continue
                for part in topic["partitions"]:
                    tp = TopicPartition(name, part["partition_index"])
                    partition_acks = acks.get(tp)
                    code = int(part.get("error_code", 0))
                    if code in _REFRESH_METADATA:
                        refresh = True
                        named = _leader_named(part) if code in _LEADER_MOVED else None
                        if named is not None:
                            leaders[tp] = named
                    if partition_acks is None:
                        continue
                    settled.add(tp)
                    if not self._retry_later(node, tp, partition_acks, code):
                        partition_acks.complete(code, part.get("error_message"))
                        self._completed_acks.append((tp, partition_acks))
            code = top or _UNKNOWN_SERVER_ERROR
            for tp, partition_acks in acks.items():
                if tp not in settled and not self._retry_later(node, tp, partition_acks, code):
                    partition_acks.complete(code, response.get("error_message"))
                    self._completed_acks.append((tp, partition_acks))
        self._apply_leaders(leaders, response)
        if refresh:
            self._metadata.request_update()
        self._after_response(node)

    def _retry_later(
        self, node: int, tp: TopicPartition, acks: Acknowledgements, code: int
    ) -> bool:
        """Under ``_lock``: whether ``acks``, answered with ``code``, are taken care of here: a
        retriable error other than a moved partition, while the member is not closing, is
        scheduled again after the backoff before their deadline, and completes them with
        REQUEST_TIMED_OUT once it has passed (the retries ran out of time, whichever answer came
        last). False: the caller completes them with ``code``."""
        deadline = acks.retry_deadline_ms
        if (
            not code
            or deadline is None
            or self._closed
            or code in _NOT_RETRIED
            or not getattr(Errors.for_code(code), "retriable", False)
        ):
            return False
        now = self._time.monotonic_ms()
        if now >= deadline:
            acks.complete(
                _REQUEST_TIMED_OUT,
                f"acknowledgements not applied before the timeout after {acks.attempts + 1} "
                f"attempts (last error {code})",
            )
            self._completed_acks.append((tp, acks))
            return True
        acks.attempts += 1
        acks.error_code = code
        due = now + self._backoff.backoff(acks.attempts - 1)
        logger.debug(
            "acknowledgements of %s answered with retriable error %s (attempt %d): again in %d ms",
            tp,
            code,
            acks.attempts,
            due - now,
        )
        self._retries.append((due, node, tp, acks))
        return True

    def retry_acknowledgements(self) -> int | None:
        """Send again the acknowledgements whose retry backoff is over (to a broker with no
        request in flight), and complete with REQUEST_TIMED_OUT those whose deadline passed.
        Returns the milliseconds until the next retry is due, or None when none waits."""
        sends: list[tuple[int, dict[str, Any], dict[TopicPartition, Acknowledgements]]] = []
        with self._lock:
            if not self._retries:
                return None
            now = self._time.monotonic_ms()
            waiting: list[tuple[int, int, TopicPartition, Acknowledgements]] = []
            ready: set[int] = set()
            for entry in self._retries:
                due, node, tp, acks = entry
                deadline = acks.retry_deadline_ms
                if deadline is not None and now >= deadline:
                    acks.complete(
                        _REQUEST_TIMED_OUT,
                        f"acknowledgements not applied before the timeout after {acks.attempts} "
                        f"attempts (last error {acks.error_code})",
                    )
                    self._completed_acks.append((tp, acks))
                elif due > now or node in self._in_flight:
                    waiting.append(entry)
                else:
                    self._queue_acknowledgements(self._session(node), tp, acks)
                    ready.add(node)
            self._retries = waiting
            for node in sorted(ready):
                send = self._build_acknowledge(node, False)
                if send is not None:
                    sends.append(send)
            next_due = min((due for due, *_ in waiting), default=None)
        for send in sends:
            self._send_acknowledge(*send)
        return None if next_due is None else max(0, next_due - now)

    def release_sessions(self) -> None:
        """Forget every share session (the member left the group or was fenced): the brokers
        release what the member held when its sessions end."""
        with self._lock:
            self._sessions.clear()
