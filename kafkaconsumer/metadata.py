"""The client's view of the cluster and its refresh policy (Java: ``Metadata``,
``ConsumerMetadata`` and ``Cluster``).

:class:`Cluster` is an immutable snapshot built from one Metadata response: brokers and racks,
topics, partitions with leader, leader epoch, replicas, ISR and offline replicas, and topic ids.
:class:`Metadata` owns the current snapshot and decides when to refresh it:

* every ``metadata.max.age.ms`` even when nothing asks;
* soon (after ``retry.backoff.ms``) when :meth:`Metadata.request_update` is called, which the
  layers above do on any error whose class has ``invalid_metadata`` set, and which an update
  itself does when a partition has no leader or a topic is unknown;
* while refreshes keep failing, or keep finding a topic unknown or a partition without leader,
  the wait doubles per attempt up to ``retry.backoff.max.ms`` (+/-20 % jitter; Java 3.7+,
  KIP-580); a clean update returns to ``retry.backoff.ms``. A topic error is logged once at
  WARNING, and again only when it changes (INFO when it clears);
* only for the topics in use (the subscription, the assignment and transient look-ups), or for
  all topics while a pattern subscription needs them (:meth:`Metadata.set_topics` with None).

Transient topics (looked up once, say by ``partitions_for``) are dropped after
``metadata.max.idle.ms`` without use. A partition's metadata whose leader epoch is older than the
epoch already known is ignored (a stale broker must not move the client backwards), unless its
topic id differs from the snapshot's: the topic was recreated, or a rebootstrap dropped the
snapshot (the epochs seen are kept).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkaconsumer.config import config_value
from kafkaconsumer.errors import (
    AuthorizationError,
    BrokerResponseError,
    InvalidTopicError,
    KafkaError,
    for_code,
)
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import SYSTEM_TIME

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        MetadataRequest,
        MetadataRequestTopic,
        MetadataResponse,
        MetadataResponseTopicPartition,
    )

logger = logging.getLogger(__name__)

__all__ = ["Node", "PartitionInfo", "Cluster", "Metadata", "ConsumerMetadata"]

_ZERO_UUID = uuid.UUID(int=0)
_UNKNOWN_TOPIC_OR_PARTITION = 3
_LEADER_NOT_AVAILABLE = 5


class Node(NamedTuple):
    """A broker: id, host, port and rack (None when the broker has none).

    Thread-safety: immutable (a NamedTuple).
    """

    node_id: int
    host: str
    port: int
    rack: str | None = None


class PartitionInfo(NamedTuple):
    """One partition as the metadata describes it (``leader`` is -1 when there is none).

    Thread-safety: immutable (a NamedTuple).
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()

    @property
    def topic_partition(self) -> TopicPartition:
        """The partition's :class:`TopicPartition`."""
        return TopicPartition(self.topic, self.partition)


class Cluster:
    """An immutable snapshot of the cluster.

    Thread-safety: immutable after construction; safe to read from any thread.
    """

    def __init__(
        self,
        brokers: Iterable[Node] = (),
        partitions: Iterable[PartitionInfo] = (),
        topic_ids: Mapping[str, uuid.UUID] | None = None,
        cluster_id: str | None = None,
        controller_id: int = -1,
        unauthorized_topics: Iterable[str] = (),
        invalid_topics: Iterable[str] = (),
        internal_topics: Iterable[str] = (),
        topics_without_partitions: Iterable[str] = (),
    ) -> None:
        """Build the snapshot from already-parsed parts (see :meth:`Metadata.update`)."""
        # Every field is set here, by the thread building the snapshot, and never changed.
        self._brokers = {b.node_id: b for b in brokers}
        self._partitions: dict[TopicPartition, PartitionInfo] = {}
        self._by_topic: dict[str, list[PartitionInfo]] = {t: [] for t in topics_without_partitions}
        for p in partitions:
            self._partitions[TopicPartition(p.topic, p.partition)] = p
            self._by_topic.setdefault(p.topic, []).append(p)
        for parts in self._by_topic.values():
            parts.sort(key=lambda p: p.partition)
        self._topic_ids = {t: i for t, i in (topic_ids or {}).items() if i != _ZERO_UUID}
        self._topic_names = {i: t for t, i in self._topic_ids.items()}
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.unauthorized_topics = frozenset(unauthorized_topics)
        self.invalid_topics = frozenset(invalid_topics)
        self.internal_topics = frozenset(internal_topics)

    @classmethod
    def empty(cls) -> Cluster:
        """A cluster with nothing known."""
        return cls()

    def brokers(self) -> list[Node]:
        """Every broker, ordered by node id."""
        return [self._brokers[k] for k in sorted(self._brokers)]

    def broker(self, node_id: int) -> Node | None:
        """The broker with this id, or None."""
        return self._brokers.get(node_id)

    def topics(self) -> set[str]:
        """Names of the topics in this snapshot."""
        return set(self._by_topic)

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo] | None:
        """The topic's partitions in partition order, None when the topic is unknown."""
        parts = self._by_topic.get(topic)
        return list(parts) if parts is not None else None

    def available_partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions that have a leader now."""
        return [p for p in self._by_topic.get(topic, ()) if p.leader >= 0]

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        """Metadata of one partition, or None."""
        return self._partitions.get(tp)

    def partitions(self) -> list[PartitionInfo]:
        """Every partition in the snapshot."""
        return list(self._partitions.values())

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The node id leading the partition, None when unknown or leaderless."""
        p = self._partitions.get(tp)
        return p.leader if p is not None and p.leader >= 0 else None

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        """The leader epoch of the partition in this snapshot (None when unknown)."""
        p = self._partitions.get(tp)
        return p.leader_epoch if p is not None else None

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id (None when unknown or the broker predates topic ids)."""
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, or None."""
        return self._topic_names.get(topic_id)

    def with_leaders(self, partitions: Iterable[PartitionInfo], nodes: Iterable[Node]) -> Cluster:
        """A copy of this snapshot with ``partitions`` replacing the ones of the same topic
        partition and ``nodes`` added to (or replacing) the brokers."""
        brokers = dict(self._brokers)
        brokers.update((n.node_id, n) for n in nodes)
        parts = dict(self._partitions)
        parts.update((p.topic_partition, p) for p in partitions)
        return Cluster(
            brokers.values(),
            parts.values(),
            self._topic_ids,
            self.cluster_id,
            self.controller_id,
            self.unauthorized_topics,
            self.invalid_topics,
            self.internal_topics,
            [t for t, ps in self._by_topic.items() if not ps],
        )

    def __repr__(self) -> str:
        return (
            f"Cluster(id={self.cluster_id!r}, brokers={len(self._brokers)}, "
            f"topics={len(self._by_topic)}, partitions={len(self._partitions)})"
        )


class Metadata:
    """The current cluster snapshot and when to refresh it.

    Thread-safety: every method takes one internal lock, so the user thread, the heartbeat
    thread and the network poll may call in concurrently; :attr:`cluster` returns an immutable
    snapshot.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *, time: Any = None) -> None:
        """Start with an empty cluster and the refresh settings of ``config``; ``time`` has
        ``monotonic_ms()`` (the system clock when None).
        """
        cfg = config or {}
        # Settings, set once here and only read after: _clock, the max ages, retry_backoff_ms,
        # _refresh_backoff, allow_auto_topic_creation. Every other field is guarded by _lock.
        self._clock = time or SYSTEM_TIME
        self.metadata_max_age_ms = int(config_value(cfg, "metadata.max.age.ms"))
        self.retry_backoff_ms = int(config_value(cfg, "retry.backoff.ms"))
        self._refresh_backoff = ExponentialBackoff(
            self.retry_backoff_ms, 2.0, int(config_value(cfg, "retry.backoff.max.ms")), 0.2
        )
        # Refreshes in a row that failed or left something to retry; the wait before the next
        # one, drawn once per attempt (jitter included).
        self._attempts = 0  # guarded by _lock
        self._backoff_ms = self.retry_backoff_ms  # guarded by _lock
        # The error last logged per topic, so that a lasting condition is logged once.
        self._logged_topic_errors: dict[str, str] = {}  # guarded by _lock
        self.metadata_max_idle_ms = int(config_value(cfg, "metadata.max.idle.ms"))
        self.allow_auto_topic_creation = bool(config_value(cfg, "allow.auto.create.topics"))
        self._lock = threading.RLock()  # the metadata lock
        self._cluster = Cluster.empty()  # written under _lock; read without it (replaced whole)
        self._update_version = 0  # guarded by _lock
        self._request_version = 0  # guarded by _lock
        self._sent_request_version = 0  # guarded by _lock
        self._need_full_update = True  # the first fetch happens at once
        self._last_refresh_ms = 0  # any attempt, success or failure
        self._last_success_ms = 0  # guarded by _lock
        self._topics: set[str] = set()  # guarded by _lock
        self._need_all_topics = False  # guarded by _lock
        self._transient: dict[str, int] = {}  # topic -> last use (ms)
        self._last_seen_epochs: dict[TopicPartition, int] = {}  # guarded by _lock
        self._fatal: KafkaError | None = None  # guarded by _lock
        self._topic_errors: dict[str, BrokerResponseError] = {}  # guarded by _lock
        self._last_error: BaseException | None = None  # guarded by _lock

    # ------------------------------------------------------------------ views ---------------
    @property
    def cluster(self) -> Cluster:
        """The current immutable snapshot."""
        # Read without the lock: the snapshot is replaced whole (one reference, written under
        # the lock), and every poll reads it several times.
        return self._cluster

    @property
    def update_version(self) -> int:
        """Incremented by every successful update."""
        with self._lock:
            return self._update_version

    def fetch(self) -> Cluster:
        """Java's name for :attr:`cluster`."""
        return self.cluster

    # ------------------------------------------------------------------ topics --------------
    def set_topics(self, topics: Iterable[str] | None) -> None:
        """The topics the client uses; None means every topic (for pattern subscriptions).

        A refresh is requested when the set gains a topic the snapshot lacks.
        """
        with self._lock:
            if topics is None:
                changed = not self._need_all_topics
                self._need_all_topics = True
            else:
                new = {str(t) for t in topics}
                for t in new:
                    if not t:
                        raise ValueError("a topic name must not be empty")
                changed = self._need_all_topics or bool(new - self._topics - self._cluster.topics())
                self._need_all_topics = False
                self._topics = new
            if changed:
                self._request_update_for_new_topics_locked()

    def need_all_topics(self) -> bool:
        """True while every topic's metadata is fetched (kept as API of this class; the client
        does not call it)."""
        with self._lock:
            return self._need_all_topics

    def add_transient_topics(self, topics: Iterable[str]) -> None:
        """Fetch these topics too until unused for ``metadata.max.idle.ms``."""
        with self._lock:
            now = self._clock.monotonic_ms()
            added = False
            for t in topics:
                if t not in self._transient and t not in self._topics:
                    added = True
                self._transient[t] = now
            if added:
                self._request_update_for_new_topics_locked()

    def touch(self, topic: str) -> None:
        """Mark a transient topic as used now (kept as API of this class; the client does not
        call it)."""
        with self._lock:
            if topic in self._transient:
                self._transient[topic] = self._clock.monotonic_ms()

    def topics(self) -> set[str]:
        """The topics whose metadata is fetched (empty with all-topics mode)."""
        with self._lock:
            return set(self._topics) | set(self._transient)

    def _expire_transient(self, now_ms: int) -> None:
        for t, used in list(self._transient.items()):
            if now_ms - used > self.metadata_max_idle_ms:
                logger.debug("metadata: dropping topic %r, unused for %d ms", t, now_ms - used)
                del self._transient[t]

    # ------------------------------------------------------------------ scheduling ----------
    def request_update(self) -> int:
        """Ask for a refresh as soon as the retry backoff allows; returns the current version."""
        with self._lock:
            return self._request_update_locked()

    def _request_update_locked(self) -> int:
        self._need_full_update = True
        self._request_version += 1
        return self._update_version

    def _request_update_for_new_topics_locked(self) -> int:
        # As Java's requestUpdateForNewTopics: a topic just taken into use is fetched at once,
        # not after the retry backoff of the last refresh. An offset lookup right after a
        # partitionsFor (or any lookup of a topic outside the assignment) would otherwise wait
        # retry.backoff.ms for the refresh that names its leaders.
        self._last_refresh_ms = 0
        return self._request_update_locked()

    def rebootstrap(self) -> None:
        """Forget the cluster (brokers, partitions, cluster id), so that the network client
        goes back to ``bootstrap.servers``, and ask for a full refresh (Java:
        ``Metadata.rebootstrap``, with ``metadata.recovery.strategy=rebootstrap``).

        :attr:`update_version` does not move: whoever waits for metadata waits for the answer
        of the new bootstrap.
        """
        with self._lock:
            logger.info("metadata: rebootstrapping, the cluster view is dropped")
            self._cluster = Cluster.empty()
            self._request_update_locked()

    def handle_error(self, error: BaseException) -> bool:
        """Request a refresh when ``error``'s class says the metadata is stale
        (``invalid_metadata``, e.g. NOT_LEADER_OR_FOLLOWER); True when it did."""
        if getattr(error, "invalid_metadata", False):
            self.request_update()
            return True
        return False

    def update_requested(self) -> bool:
        """True when a refresh was asked for and has not happened yet."""
        with self._lock:
            return self._need_full_update

    def time_to_next_update(self, now_ms: int) -> int:
        """Milliseconds until a Metadata request should be sent (0 = now)."""
        with self._lock:
            if self._need_full_update:
                expire = 0
            else:
                expire = max(0, self._last_success_ms + self.metadata_max_age_ms - now_ms)
            backoff = (
                max(0, self._last_refresh_ms + self._backoff_ms - now_ms)
                if self._last_refresh_ms
                else 0
            )
            return max(expire, backoff)

    def build_request(self, version: int) -> MetadataRequest:
        """The Metadata request body for the topics in use (all topics when needed)."""
        with self._lock:
            self._expire_transient(self._clock.monotonic_ms())
            if self._need_all_topics:
                topics: list[MetadataRequestTopic] | None = None
            else:
                names = sorted(self._topics | set(self._transient))
                # With no topic this is an empty list: brokers only, except in Metadata v0,
                # which has no null and reads an empty list as all topics (the larger answer
                # is accepted).
                topics = [{"name": t, "topic_id": _ZERO_UUID} for t in names]
            return {
                "topics": topics,
                "allow_auto_topic_creation": self.allow_auto_topic_creation,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }

    def on_request_sent(self, now_ms: int) -> None:
        """Record that a refresh is in flight (resets the retry backoff clock)."""
        with self._lock:
            self._last_refresh_ms = now_ms
            self._sent_request_version = self._request_version

    def failed_update(self, now_ms: int, error: BaseException | None = None) -> None:
        """A Metadata request failed; the next try backs off exponentially."""
        with self._lock:
            self._last_refresh_ms = now_ms
            self._last_error = error
            self._next_attempt_locked(retry=True)
        logger.debug("metadata update failed: %s", error)

    def _next_attempt_locked(self, retry: bool) -> None:
        if retry:
            self._backoff_ms = self._refresh_backoff.backoff(self._attempts)
            self._attempts += 1
        else:
            self._attempts = 0
            self._backoff_ms = self.retry_backoff_ms

    def _log_topic_errors_locked(
        self, errors: Mapping[str, BrokerResponseError], codes: Mapping[str, int]
    ) -> None:
        logged = self._logged_topic_errors
        for name, err in errors.items():
            text = (
                "does not exist (yet)" if codes[name] == _UNKNOWN_TOPIC_OR_PARTITION else str(err)
            )
            if logged.get(name) != text:
                logged[name] = text
                logger.warning("metadata: topic %r %s", name, text)
        for name in [n for n in logged if n not in errors]:
            del logged[name]
            if name in self._topics or name in self._transient:
                logger.info("metadata: topic %r is available now", name)

    # ------------------------------------------------------------------ update --------------
    def update(self, response: MetadataResponse, now_ms: int | None = None) -> None:
        """Install a new snapshot from a decoded Metadata response body."""
        with self._lock:
            now = self._clock.monotonic_ms() if now_ms is None else now_ms
            brokers = [
                Node(int(b["node_id"]), str(b["host"]), int(b["port"]), b.get("rack"))
                for b in response.get("brokers") or []
            ]
            old = self._cluster
            partitions: list[PartitionInfo] = []
            topic_ids: dict[str, uuid.UUID] = {}
            unauthorized: list[str] = []
            invalid: list[str] = []
            internal: list[str] = []
            no_partitions: list[str] = []
            errors: dict[str, BrokerResponseError] = {}
            codes: dict[str, int] = {}
            retry_soon = False
            for t in response.get("topics") or []:
                name = t.get("name")
                code = int(t.get("error_code", 0))
                tid = t.get("topic_id")
                if name is None and isinstance(tid, uuid.UUID):
                    name = old.topic_name(tid)
                if name is None:
                    continue
                if code:
                    err_cls = for_code(code)
                    err = err_cls(f"metadata for topic {name!r}", topic=name)
                    errors[name] = err
                    codes[name] = code
                    if issubclass(err_cls, AuthorizationError):
                        unauthorized.append(name)
                    elif issubclass(err_cls, InvalidTopicError):
                        invalid.append(name)
                    else:
                        if err_cls.retriable or err_cls.invalid_metadata:
                            retry_soon = True
                    continue
                new_id: uuid.UUID | None = None
                if isinstance(tid, uuid.UUID) and tid != _ZERO_UUID:
                    topic_ids[name] = new_id = tid
                if t.get("is_internal"):
                    internal.append(name)
                parts = t.get("partitions") or []
                if not parts:
                    no_partitions.append(name)
                for p in parts:
                    info = self._partition_info(name, p, old, new_id)
                    if info is None:
                        continue
                    if int(p.get("error_code", 0)) == _LEADER_NOT_AVAILABLE or info.leader < 0:
                        retry_soon = True
                    partitions.append(info)
            # A response for fewer topics than all keeps nothing of the old snapshot: it was
            # asked for exactly the topics in use.
            cluster = Cluster(
                brokers,
                partitions,
                topic_ids,
                response.get("cluster_id"),
                int(response.get("controller_id", -1)),
                unauthorized,
                invalid,
                internal,
                no_partitions,
            )
            self._cluster = cluster
            self._topic_errors = errors
            self._update_version += 1
            self._last_success_ms = now
            self._last_refresh_ms = now
            # A request made after this response's request was sent still needs its own
            # refresh (a topic added meanwhile is not in this response).
            self._need_full_update = (
                retry_soon
                or self._need_full_update
                and self._request_version > self._sent_request_version
            )
            self._last_error = None
            self._next_attempt_locked(retry=retry_soon)
            self._log_topic_errors_locked(
                {n: e for n, e in errors.items() if n not in unauthorized and n not in invalid},
                codes,
            )
            if unauthorized or invalid:
                first = (unauthorized or invalid)[0]
                self._fatal = errors[first]
        logger.debug("metadata updated: %r", cluster)

    def _partition_info(
        self,
        topic: str,
        p: MetadataResponseTopicPartition,
        old: Cluster,
        topic_id: uuid.UUID | None,
    ) -> PartitionInfo | None:
        """The partition's entry of the new snapshot: the answer's, or the old snapshot's (None:
        none) when the answer's leader epoch is older than one already seen for the same topic.

        As in Java's ``Metadata.updateLatestMetadata``, an answer whose topic id (``topic_id``,
        None when the answer has none) differs from the old snapshot's is taken whatever its
        epoch: the topic was deleted and recreated, or the old snapshot is gone (a rebootstrap
        keeps the epochs seen but not the cluster view, which would otherwise drop the
        partition until a broker reports an epoch as new as the last one seen).
        """
        index = int(p["partition_index"])
        tp = TopicPartition(topic, index)
        epoch_raw = p.get("leader_epoch", -1)
        epoch = int(epoch_raw) if epoch_raw is not None and int(epoch_raw) >= 0 else None
        info = PartitionInfo(
            topic,
            index,
            int(p.get("leader_id", -1)),
            epoch,
            tuple(p.get("replica_nodes") or ()),
            tuple(p.get("isr_nodes") or ()),
            tuple(p.get("offline_replicas") or ()),
        )
        known = self._last_seen_epochs.get(tp)
        if epoch is not None:
            if known is not None and epoch < known:
                if topic_id is None or topic_id == old.topic_id(topic):
                    # A broker with an older view answered: keep what we had (if anything) and
                    # look again soon.
                    logger.debug("metadata: ignoring %s leader epoch %d < %d", tp, epoch, known)
                    self._request_update_locked()
                    return old.partition(tp)
                logger.info(
                    "metadata: %s leader epoch reset from %d to %d (topic id %s, was %s)",
                    tp,
                    known,
                    epoch,
                    topic_id,
                    old.topic_id(topic),
                )
            self._last_seen_epochs[tp] = epoch
        return info

    # ------------------------------------------------------------------ epochs --------------
    def update_last_seen_epoch_if_newer(self, tp: TopicPartition, epoch: int) -> bool:
        """Record a leader epoch seen elsewhere (a fetch response); True when it is newer.

        A newer epoch than the snapshot's means the metadata is stale: a refresh is requested.
        """
        with self._lock:
            known = self._last_seen_epochs.get(tp)
            if known is None or epoch > known:
                self._last_seen_epochs[tp] = epoch
                current = self._cluster.leader_epoch(tp)
                if current is None or epoch > current:
                    self._request_update_locked()
                return True
            return False

    def update_partition_leadership(
        self, leaders: Mapping[TopicPartition, tuple[int, int]], nodes: Iterable[Node] = ()
    ) -> set[TopicPartition]:
        """Apply the leaders a broker named in an error answer (KIP-951: ``current_leader``
        and ``node_endpoints`` of a Fetch or ShareFetch answer), as Java's
        ``Metadata.updatePartitionLeadership``: ``{tp: (leader_id, leader_epoch)}``; returns
        the partitions whose leader changed.

        A leader is taken only when its epoch is newer than the snapshot's (and than any
        epoch seen since), the partition is known and the leader's address is known (from
        ``nodes``, which win over the snapshot's, or the snapshot). The snapshot is replaced
        (its other partitions kept) without counting as a refresh: :attr:`update_version`
        and the refresh schedule stay as they are, so a wait for a refresh still waits.
        """
        nodes = list(nodes)
        with self._lock:
            old = self._cluster
            known = {n.node_id for n in nodes} | {b.node_id for b in old.brokers()}
            updated: list[PartitionInfo] = []
            for tp, (leader, epoch) in leaders.items():
                info = old.partition(tp)
                if info is None or leader < 0 or epoch < 0:
                    continue
                if info.leader_epoch is not None and epoch <= info.leader_epoch:
                    continue
                seen = self._last_seen_epochs.get(tp)
                if seen is not None and epoch < seen:
                    continue
                if leader not in known:
                    logger.debug("metadata: no address for %s's new leader %d", tp, leader)
                    continue
                updated.append(info._replace(leader=leader, leader_epoch=epoch))
                self._last_seen_epochs[tp] = epoch
            if not updated:
                return set()
            self._cluster = old.with_leaders(updated, nodes)
        logger.debug(
            "metadata: leaders from an error answer: %s",
            ", ".join(
                f"{p.topic_partition} -> {p.leader} (epoch {p.leader_epoch})" for p in updated
            ),
        )
        return {p.topic_partition for p in updated}

    # ------------------------------------------------------------------ errors --------------
    def set_fatal_error(self, error: KafkaError) -> None:
        """Keep an error (authentication) for :meth:`maybe_throw_any_exception`."""
        with self._lock:
            self._fatal = error

    def maybe_throw_any_exception(self) -> None:
        """Raise (once) a fatal error of the last update: authentication or authorization
        failures, invalid topics."""
        with self._lock:
            err = self._fatal
            self._fatal = None
        if err is not None:
            raise err

    def topic_error(self, topic: str) -> BrokerResponseError | None:
        """The error the last update reported for the topic (unknown, unauthorized, ...)."""
        with self._lock:
            return self._topic_errors.get(topic)

    def maybe_throw_exception_for_topic(self, topic: str) -> None:
        """Raise the last update's error for ``topic``, if it had one (Java's
        ``maybeThrowExceptionForTopic``, kept as API of this class; the client reads
        :meth:`topic_error`)."""
        err = self.topic_error(topic)
        if err is not None:
            raise err

    @property
    def last_error(self) -> BaseException | None:
        """Why the last refresh failed (None after a success)."""
        with self._lock:
            return self._last_error


class ConsumerMetadata(Metadata):
    """Metadata for a consumer: the subscription's topics, internal topics excluded from
    pattern matching unless ``exclude.internal.topics`` is false.

    Thread-safety: as :class:`Metadata` (one internal lock).
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *, time: Any = None) -> None:
        """As :class:`Metadata`, honouring the consumer's metadata keys in ``config``."""
        super().__init__(config, time=time)
        cfg = config or {}
        # Set once here and only read after.
        self.exclude_internal_topics = bool(config_value(cfg, "exclude.internal.topics"))

    def matching_topics(self, pattern: Any) -> set[str]:
        """Topics of the snapshot whose names match ``pattern`` (a compiled regex or str)."""
        import re

        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        cluster = self.cluster
        return {
            t
            for t in cluster.topics()
            if rx.fullmatch(t)
            and not (self.exclude_internal_topics and t in cluster.internal_topics)
        }
