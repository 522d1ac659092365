"""Fetch requests and their responses (Java ``Fetcher`` / ``AbstractFetch``).

``send_fetches`` builds one Fetch request per broker (the partition leader, or the preferred
read replica of KIP-392 when ``client.rack`` is set), diffed against that broker's fetch session
(KIP-227). Responses are split into one :class:`CompletedFetch` per partition and queued in the
:class:`FetchBuffer`; the :class:`FetchCollector` hands them out on the user's thread
(``collect_fetch`` delegates to it, as Java's ``Fetcher.collectFetch`` does).

Prefetch (as librdkafka's queue): while a partition's one piece of buffered data is being handed
out, it is fetched again from where that data ends (read from its batch headers), so that the
next response is on its way while the user processes records. Only partitions known to have
more data (below the high watermark, so the broker answers at once instead of holding the
request for ``fetch.max.wait.ms``), at most two pieces per partition, and only while undecoded
buffered bytes stay under ``fetch.max.bytes``. Prefetched data is handed out only if the
position still equals its fetch offset (a seek or an error in between makes it stale, and it
is dropped), so seeks, pauses and ``max.poll.records`` keep the Java semantics.

A partition seeked (or reset, or validated) while its broker holds a long-poll fetch is fetched
at once over a second connection to that broker (``seek_fetch_node_id``, sessionless), not
after ``fetch.max.wait.ms``: the broker answers one connection's requests in order. Its later
fetches (prefetches) stay on that connection until the held fetch returns; the offset fetcher
sends the reset's or validation's lookup there too, and ``close`` its fetch-session close
requests.

Hot path: response bytes -> buffer -> collector -> decoder (``decode_fetched_records``, Cython)
-> list of ``ConsumerRecord`` -> slices to the user. With the default bytes deserializers no
per-record Python code runs here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch, FetchMetricsAggregator
from kafkaconsumer.internals.fetch.decoders import ObjectDecoder, RecordDecoder
from kafkaconsumer.internals.fetch.fetch_buffer import FetchBuffer
from kafkaconsumer.internals.fetch.fetch_collector import Fetch, FetchCollector
from kafkaconsumer.internals.fetch.fetch_config import FetchConfig
from kafkaconsumer.internals.fetch.fetch_session import (
    ZERO_UUID,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from kafkaconsumer.internals.interfaces import ClusterView, FetchClient, FetchMetadata
from kafkaconsumer.internals.subscription_state import (
    LeaderAndEpoch,
    SubscriptionState,
    TopicPartitionState,
    current_leader,
)
from kafkaconsumer.metadata import Node
from kafkaconsumer.network.client import seek_fetch_node_id
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        FetchRequest,
        FetchRequestForgottenTopicsData,
        FetchRequestTopic,
        FetchRequestTopicPartition,
        FetchResponse,
        FetchResponseResponsePartition,
    )

logger = logging.getLogger(__name__)

__all__ = ["Fetch", "FetchConfig", "Fetcher"]

# Fetch v13 replaced topic names by topic ids.
_TOPIC_ID_MIN_VERSION = 13
_READ_COMMITTED = 1
_FETCH_SESSION_TOPIC_ID_ERROR = Errors.FetchSessionTopicIdError.errno
# Partition errors whose answer may name the new leader (KIP-951, Fetch v12+ current_leader).
_LEADER_MOVED = frozenset(
    {Errors.NotLeaderOrFollowerError.errno, Errors.FencedLeaderEpochError.errno}
)


def _leader_hint(part: FetchResponseResponsePartition) -> tuple[int, int] | None:
    """The ``(leader id, leader epoch)`` a partition's error answer names, if it names one."""
    leader = part.get("current_leader")
    if not leader:
        return None
    node, epoch = leader.get("leader_id", -1), leader.get("leader_epoch", -1)
    return (int(node), int(epoch)) if node >= 0 and epoch >= 0 else None


class _FetchTarget(NamedTuple):
    """One fetch request to send: the node, what to put in it, and its version.

    Thread-safety: immutable (a NamedTuple).
    """

    node: int  # the connection: the broker's id, or its seek_fetch_node_id
    data: FetchRequestData
    version: int | None  # None: the negotiated version, known only once connected
    broker: int  # the broker that serves it
    # On a second connection: a partition in it is behind its high watermark (or that is not
    # known), so the broker answers at once instead of holding it.
    behind: bool = False


class Fetcher:
    """Sends fetches and turns responses into buffered data for ``poll()``.

    Thread-safety: response callbacks may run on any thread that polls the network client
    (including the heartbeat thread), so the session handlers and the in-flight bookkeeping
    are guarded by one lock, the buffer's (``_lock``); ``send_fetches`` and ``collect_fetch``
    run on the user's thread, and the collector never calls user code (deserializers) while
    holding that lock.
    """

    def __init__(
        self,
        client: FetchClient,
        metadata: FetchMetadata,
        subscriptions: SubscriptionState,
        config: FetchConfig | Mapping[str, Any],
        *,
        time: Time | None = None,
        metrics: Any = None,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
    ) -> None:
        """Fetch through ``client`` for the partitions of ``subscriptions``, using ``metadata``
        for leaders; ``config`` is a :class:`FetchConfig` or the consumer configuration.
        """
        # Set here and never replaced (the client, metadata and subscriptions are thread-safe;
        # the config is immutable).
        self._client = client
        self._metadata = metadata
        self._subscriptions = subscriptions
        self._config = (
            config if isinstance(config, FetchConfig) else FetchConfig.from_config(config)
        )
        self._time = time if time is not None else SYSTEM_TIME
        self._metrics = metrics
        # The buffer, its collector and the default decoder are set here and never replaced.
        self._buffer = FetchBuffer(self._config.read_committed)
        #: The buffer's lock, which also guards the fields below marked with it.
        self._lock = self._buffer.lock
        self._collector = FetchCollector(
            self._buffer, metadata, subscriptions, self._config, self._time, metrics
        )
        #: What collect_fetch decodes with unless told otherwise: record objects.
        self._object_decoder = ObjectDecoder(key_deserializer, value_deserializer)
        self._sessions: dict[int, FetchSessionHandler] = {}  # guarded by _lock
        self._pending_nodes: set[int] = set()  # guarded by _lock
        # Second fetch connections with a fetch in flight (see _prepare_fetch_requests).
        self._seek_pending: set[int] = set()  # guarded by _lock
        # Those of them whose fetch the broker answers at once (see _busy_nodes).
        self._seek_reading: set[int] = set()  # guarded by _lock
        # Per connection with a fetch in flight: the fetch-state transition number when it
        # went out, and the offset it asked for per partition. Guarded by _lock.
        self._in_flight: dict[int, tuple[int, dict[TopicPartition, int]]] = {}
        # The subscription's fetchable_mark when the last fetch went out; None while a second
        # connection is in use (a partition seeked after its broker's fetch went out can be
        # fetched whenever that connection is free, whatever the mark says). Guarded by _lock.
        self._sent_at_mark: tuple[int, int, int] | None = None
        # _broker_count's cache: the metadata snapshot it counted, and its count. Guarded by
        # _lock (read and written in _prepare_fetch_requests only).
        self._counted_cluster: ClusterView | None = None
        self._brokers_in_cluster = 0
        self._closed = False  # guarded by _lock
        self._isolation = _READ_COMMITTED if self._config.read_committed else 0  # immutable
        # What _prepare_fetch_requests last walked every fetchable partition for and found
        # nothing to send (see there); reset whenever a fetch goes out or comes back. Guarded
        # by _lock.
        self._nothing_to_fetch_at: tuple[Any, ...] | None = None
        # The state (fetch states, metadata, buffer, piece being handed out) in which the last
        # walk held every request back for partitions still being handed out; the walk is
        # skipped while it holds. Guarded by _lock.
        self._held_at: tuple[Any, ...] | None = None
        # Whether a prefetch waits for the other partitions of its node (see
        # set_prefetch_waits_for_node). Written by the user's thread, read under _lock.
        self._prefetch_waits_for_node = True
        # Set once by send_after_background_responses, before fetching.
        self._on_network_thread: Callable[[], bool] | None = None

    # -- sending -------------------------------------------------------------------------
    def _session(self, node: int, seek_connection: bool = False) -> FetchSessionHandler:
        handler = self._sessions.get(node)
        if handler is None:
            # A second connection's fetches are sessionless: each names its few partitions.
            enabled = self._config.fetch_sessions and not seek_connection
            handler = FetchSessionHandler(node, enabled=enabled)
            self._sessions[node] = handler
        return handler

    def _current_leader(self, tp: TopicPartition) -> LeaderAndEpoch:
        return current_leader(self._metadata.cluster, tp)

    def _select_read_replica(
        self, tp: TopicPartition, leader: int, now_ms: int, unavailable: dict[int, bool]
    ) -> int:
        replica = self._subscriptions.preferred_read_replica(tp, now_ms)
        if replica is None:
            return leader
        if self._is_unavailable(replica, unavailable):
            logger.debug(
                "preferred read replica %s of %s is unavailable; using leader %s",
                replica,
                tp,
                leader,
            )
            self._subscriptions.clear_preferred_read_replica(tp)
            return leader
        return replica

    def _is_unavailable(self, node: int, cache: dict[int, bool]) -> bool:
        """Whether ``node`` cannot take a request now, asked once per node per ``cache``
        (one ``send_fetches``): each question takes the network client's lock.
        """
        known = cache.get(node)
        if known is not None:
            return known
        result = self._client.is_unavailable(node)
        cache[node] = result
        return result

    @staticmethod
    def _topic_id(cluster: ClusterView, topic: str) -> uuid.UUID:
        tid = cluster.topic_id(topic)
        return ZERO_UUID if tid is None else tid

    def _prepare_fetch_requests(self) -> list[_FetchTarget]:
        pending = self._pending_nodes
        subs = self._subscriptions
        if pending and len(pending) >= self._broker_count():
            # Every broker has a fetch in flight and no partition was seeked since, or every
            # broker's second connection has one too: nothing can go out. poll() asks on each
            # network wakeup, so this is the hot case (the second while a re-read after a
            # seek runs over the second connections).
            if subs.fetchable_mark() == self._sent_at_mark:
                return []
            seek_pending = self._seek_pending
            if len(seek_pending) >= len(pending) and all(
                seek_fetch_node_id(node) in seek_pending for node in pending
            ):
                return []
        buffer = self._buffer
        count = buffer.buffered_count()
        if count >= subs.num_assigned_partitions() and (self._pending_nodes or not count):
            # The common case while records flow: everything assigned still has data waiting,
            # and a fetch is in flight (prefetching is considered when it returns).
            return []
        fetchable_mark = subs.fetchable_mark()
        cluster = self._metadata.cluster
        nil = buffer.next_in_line
        held = (fetchable_mark, cluster, buffer.changes, nil, nil is not None and nil.is_consumed)
        if held == self._held_at:
            # Every request the walk could send waits for partitions still being handed out
            # (see below), and nothing was handed out or changed since.
            return []
        prefetch = buffer.prefetch_points(self._config.max_bytes)
        if prefetch:
            count = len(buffer.buffered_partitions().difference(prefetch))
        if count >= subs.num_assigned_partitions():
            return []
        # While partitions drain one by one, every poll would walk all the others only to find
        # them caught up on a node that still sends buffered data (an O(partitions) cost per
        # poll, O(partitions^2) per pass over the buffer). The walk's answer depends on the
        # partitions' fetch states, the buffered set, the prefetch points and the leaders. Once
        # a walk found nothing, and while no fetch went out or came back (that clears the
        # mark) and no fetch state or leader changed, only the partitions drained since can
        # change the answer: those are checked instead of walking all.
        # (Partitions that joined the buffered set since only leave the walk, and the buffer
        # tells which left without a copy of the set: the check stays O(1) per drained one.)
        last = self._nothing_to_fetch_at
        mark = (fetchable_mark, buffer.buffered_token(), cluster)
        if last is not None and not prefetch and last[2] is mark[2] and last[0] == mark[0]:
            drained = buffer.left_since(last[1])
            if drained is not None and self._drained_caught_up(drained):
                self._nothing_to_fetch_at = mark
                return []
        buffered = buffer.buffered_partitions()
        if prefetch:
            buffered.difference_update(prefetch)
        remember = not prefetch
        now = self._time.monotonic_ms()
        builders: dict[int, FetchSessionHandler.Builder] = {}
        brokers_of: dict[int, int] = {}
        lagging: set[int] = set()
        # Second connections whose fetch reads a partition below its high watermark (or one
        # not known yet): the broker answers it at once.
        seek_behind: set[int] = set()
        seek_fetching = self._seek_fetching()
        unavailable: dict[int, bool] = {}
        fetch_size = self._config.fetch_size
        # Topic ids from the snapshot the walk is marked with, looked up once per topic (each
        # read of the metadata's snapshot takes its lock).
        topic_ids: dict[str, uuid.UUID] = {}
        for tp, state in subs.fetchable_states(buffered):
            position = state.position
            if position is None:
                continue
            leader = position.current_leader.leader
            if leader is None:
                current = self._current_leader(tp)
                if current.leader is None:
                    logger.debug("no leader known for %s; requesting metadata", tp)
                    self._metadata.request_update()
                    remember = False
                    continue
                # Positions set by seek() carry no leader yet; adopt the current one.
                subs.maybe_validate_position_for_current_leader(
                    tp, current, supports_validation=False
                )
                position = state.position
                if position is None:
                    continue
                leader = current.leader
            node = leader
            if state.preferred_read_replica is not None:
                # The replica expires with time, not with any change the mark sees.
                remember = False
                node = self._select_read_replica(tp, leader, now, unavailable)
            offset = position.offset
            hw = state.high_watermark
            ahead = prefetch.get(tp)
            if ahead is not None:
                if ahead[0] != offset:
                    continue  # the buffered data is stale (a seek): it goes first
                offset = ahead[1]
                hw = None  # known to lag: prefetch points stop short of the end
            end = state.fetch_end
            if end is not None and offset >= end:
                continue  # a bounded read has (or is handed out) all it wants here
            broker = node
            if tp in seek_fetching:
                continue
            if node in pending:
                sent_at, asked = self._in_flight.get(node, (0, {}))
                if state.transitioned_at <= sent_at or asked.get(tp) == offset:
                    continue
                # Seeked (or reset, or validated) since the broker's fetch went out: that fetch
                # may be held for fetch.max.wait.ms (the broker answers a connection's requests
                # in order), so the new position is read at once over a second connection;
                # the old fetch's data for it is stale and dropped when it arrives.
                node = seek_fetch_node_id(broker)
                if node in self._seek_pending:
                    continue
                if hw is None or offset < hw:
                    seek_behind.add(node)
                hw = None  # fetch it whatever the broker's other partitions hold
            if self._is_unavailable(node, unavailable):
                remember = False  # a node becomes ready with time, not with the mark
                continue
            builder = builders.get(node)
            if builder is None:
                builder = builders[node] = self._session(node, node != broker).new_builder()
                brokers_of[node] = broker
            if hw is None or offset < hw:
                lagging.add(node)
            epoch = position.current_leader.epoch
            topic_id = topic_ids.get(tp.topic)
            if topic_id is None:
                topic_id = topic_ids[tp.topic] = self._topic_id(mark[2], tp.topic)
            builder.add(
                tp,
                PartitionData(
                    topic_id,
                    offset,
                    -1,
                    fetch_size,
                    -1 if epoch is None else epoch,
                    -1,
                ),
            )
        targets = []
        busy_nodes: set[int] | None = None
        draining: set[int] | None = None
        held_back = False
        for node, builder in builders.items():
            if (
                prefetch
                and self._prefetch_waits_for_node
                and all(tp in prefetch for tp in builder.partitions())
            ):
                # Only partitions that still have records buffered, while others of this node
                # become fetchable as the application takes their older pieces: wait for
                # those, so that one full request goes out, not a small one that the rest
                # would then queue behind (one fetch per connection at a time).
                if draining is None:
                    draining = buffer.nodes_draining_to_prefetch(subs)
                if node in draining:
                    held_back = True
                    continue
            if node not in lagging:
                if busy_nodes is None:
                    busy_nodes = self._busy_nodes()
                if node in busy_nodes:
                    # Every partition here is caught up, so the broker would hold the request
                    # for fetch.max.wait.ms, and the buffered partitions from this node could
                    # not be fetched until it returns. Wait: they join the next request instead.
                    continue
            data = builder.build()
            version = self._fetch_version(node, data.can_use_topic_ids)
            targets.append(_FetchTarget(node, data, version, brokers_of[node], node in seek_behind))
        if not targets and remember:
            self._nothing_to_fetch_at = mark
        self._held_at = held if held_back and not targets else None
        return targets

    def _broker_count(self) -> int:
        """How many brokers the current metadata names (counted once per snapshot)."""
        cluster = self._metadata.cluster
        if cluster is not self._counted_cluster:
            self._counted_cluster = cluster
            self._brokers_in_cluster = len(cluster.brokers())
        return self._brokers_in_cluster

    def _drained_caught_up(self, drained: Iterable[TopicPartition]) -> bool:
        """Whether the walk would still send nothing with ``drained`` (partitions whose buffered
        data was handed out since the last walk found nothing) among its candidates: each is
        unfetchable, or caught up with its leader still sending buffered data or fetched
        from already (caller holds the lock)."""
        subs = self._subscriptions
        for tp in drained:
            state = subs.assigned_state_or_none(tp)
            if state is None or not state.is_fetchable or state.position is None:
                continue
            if state.fetch_end is not None and state.position.offset >= state.fetch_end:
                continue
            leader = state.position.current_leader.leader
            hw = state.high_watermark
            if (
                leader is None
                or state.preferred_read_replica is not None
                or hw is None
                or state.position.offset < hw
            ):
                return False
            if leader in self._pending_nodes:
                sent_at, asked = self._in_flight.get(leader, (0, {}))
                if state.transitioned_at > sent_at and asked.get(tp) != state.position.offset:
                    return False  # the walk would fetch it on the second connection
            elif not self._sends_buffered_data(leader):
                return False
        return True

    def _sends_buffered_data(self, node: int) -> bool:
        """Whether ``node`` sent buffered data of an unpaused partition, or reads some over its
        second connection (see _busy_nodes)."""
        if seek_fetch_node_id(node) in self._seek_reading:
            return True
        return self._buffer.node_has_data(node, self._subscriptions)

    def _seek_fetching(self) -> set[TopicPartition]:
        """The partitions a second-connection fetch is reading now (caller holds the lock)."""
        out: set[TopicPartition] = set()
        for node in self._seek_pending:
            out.update(self._in_flight.get(node, (0, {}))[1])
        return out

    def _fetch_done(self, node: int) -> None:
        """Bookkeeping when the fetch on connection ``node`` is answered or fails, or could
        not be sent (caller holds the lock)."""
        self._pending_nodes.discard(node)
        if node in self._seek_pending:
            self._seek_pending.discard(node)
            self._seek_reading.discard(node)
            # What that fetch brought is prefetched over the same connection while the
            # broker's own still holds its fetch: the next poll must walk.
            self._sent_at_mark = None
        self._in_flight.pop(node, None)
        self._nothing_to_fetch_at = None
        self._held_at = None

    def _busy_nodes(self) -> set[int]:
        """The nodes that sent the buffered data of unpaused partitions, or are reading some
        over their second connection (caller holds the lock).

        Paused partitions are left out: their data stays buffered until resumed, and counting
        them would keep every caught-up partition of their node from being fetched meanwhile.
        A second-connection fetch of data the broker has counts: its partitions will want more
        once it returns, and a caught-up fetch sent on the first connection meanwhile would be
        held for fetch.max.wait.ms with them waiting behind it. (One of caught-up partitions
        does not: the broker may hold it, and the others' new data should not wait for that.)
        """
        nodes = self._buffer.nodes_with_data(self._subscriptions)
        # (seek_fetch_node_id is its own inverse: it maps a second connection to its broker.)
        nodes.update(seek_fetch_node_id(n) for n in self._seek_reading)
        return nodes

    def _fetch_version(self, node: int, can_use_topic_ids: bool) -> int | None:
        """The Fetch version for ``node``; None lets the client pick the negotiated one.

        Until the connection is up the version is unknown; then only a request that works at
        any version (every topic has an id, or v12 is forced) is queued.
        """
        version = self._client.api_version(node, ApiKey.FETCH)
        if version is None:
            return None if can_use_topic_ids else _TOPIC_ID_MIN_VERSION - 1
        if not can_use_topic_ids and version >= _TOPIC_ID_MIN_VERSION:
            return _TOPIC_ID_MIN_VERSION - 1
        return int(version)

    def _build_body(self, target: _FetchTarget) -> FetchRequest:
        cfg = self._config
        data = target.data
        topics: list[FetchRequestTopic] = []
        by_topic: dict[str, list[FetchRequestTopicPartition]] = {}
        for tp, pd in data.to_send.items():
            parts = by_topic.get(tp.topic)
            if parts is None:
                parts = by_topic[tp.topic] = []
                topics.append({"topic": tp.topic, "topic_id": pd.topic_id, "partitions": parts})
            parts.append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": pd.current_leader_epoch,
                    "fetch_offset": pd.fetch_offset,
                    "last_fetched_epoch": pd.last_fetched_epoch,
                    "log_start_offset": pd.log_start_offset,
                    "partition_max_bytes": pd.max_bytes,
                }
            )
        forgotten: list[FetchRequestForgottenTopicsData] = []
        if data.to_forget or data.to_replace:
            # Forgotten under the id the session had (a recreated topic: the old id).
            f_by_topic: dict[tuple[str, uuid.UUID], list[int]] = {}
            old_ids = data.forgotten_topic_ids
            for tp in list(data.to_forget) + list(data.to_replace):
                key = (tp.topic, old_ids.get(tp, ZERO_UUID))
                f_by_topic.setdefault(key, []).append(tp.partition)
            for (topic, tid), parts_ in f_by_topic.items():
                forgotten.append({"topic": topic, "topic_id": tid, "partitions": parts_})
        return {
            "replica_id": -1,
            "max_wait_ms": cfg.max_wait_ms,
            "min_bytes": cfg.min_bytes,
            "max_bytes": cfg.max_bytes,
            "isolation_level": self._isolation,
            "session_id": data.metadata.session_id,
            "session_epoch": data.metadata.epoch,
            "topics": topics,
            "forgotten_topics_data": forgotten,
            "rack_id": cfg.client_rack,
        }

    def send_fetches(self) -> int:
        """Send a fetch to every broker that has fetchable partitions and none in flight.

        Returns how many requests were sent.
        """
        with self._lock:
            if self._closed:
                return 0
            targets = self._prepare_fetch_requests()
            sent = 0
            if targets:
                self._sent_at_mark = (
                    None
                    if any(t.node != t.broker for t in targets)
                    else self._subscriptions.fetchable_mark()
                )
            for target in targets:
                body = self._build_body(target)
                if target.node == target.broker:
                    self._pending_nodes.add(target.node)
                else:
                    self._seek_pending.add(target.node)
                    if target.behind:
                        self._seek_reading.add(target.node)
                self._in_flight[target.node] = (
                    TopicPartitionState.last_transition,
                    {tp: pd.fetch_offset for tp, pd in target.data.session_partitions.items()},
                )
                self._nothing_to_fetch_at = None
                start = self._time.monotonic_ms()
                # send() never raises: a closed client fails the future, handled below.
                future = self._client.send(target.node, ApiKey.FETCH, body, version=target.version)
                future.add_callback(self._then_send_next(self._make_success_handler(target, start)))
                future.add_errback(self._make_failure_handler(target))
                sent += 1
                logger.debug(
                    "sent %s fetch to node %s (v%s) for %d partitions",
                    "full" if target.data.is_full else "incremental",
                    target.node,
                    target.version,
                    len(target.data.to_send),
                )
            return sent

    def _then_send_next(
        self, handle: Callable[[FetchResponse], None]
    ) -> Callable[[FetchResponse], None]:
        """``handle``, then, on the consumer's network thread (see
        :meth:`send_after_background_responses`), the next fetches, in one hold of the lock:
        the fetch that follows the response's data (a prefetch) goes out before any of that
        data can be handed out, and the broker serves it while the user's thread is busy. The
        user's thread, which handles a response inside ``poll()``, sends them itself. What is
        sent is planned as on the user's thread: positions, pauses and the prefetch bound are
        read under their locks, and a fetch planned from a position the user moved meanwhile
        brings stale data, which the collector drops."""

        def on_success(response: FetchResponse) -> None:
            with self._lock:
                handle(response)
                on_network_thread = self._on_network_thread
                if on_network_thread is not None and on_network_thread():
                    self.send_fetches()

        return on_success

    def _make_success_handler(
        self, target: _FetchTarget, start_ms: int
    ) -> Callable[[FetchResponse], None]:
        def on_success(response: FetchResponse) -> None:
            try:
                self._handle_fetch_response(target, response, start_ms)
            except Exception as exc:  # noqa: BLE001 - a callback must not break the network poll
                # A bug here must not pass for an empty fetch: the session restarts full and
                # the user's next poll() raises it.
                logger.exception("failed to handle the fetch response from node %s", target.node)
                with self._lock:
                    handler = self._sessions.get(target.node)
                    if handler is not None:
                        handler.handle_error(exc)
                    error = Errors.KafkaError(
                        f"handling the fetch response from node {target.node} failed: {exc!r}"
                    )
                    error.__cause__ = exc
                    self._buffer.set_error(error)
            finally:
                with self._lock:
                    self._fetch_done(target.node)

        return on_success

    def _make_failure_handler(self, target: _FetchTarget) -> Callable[[BaseException], None]:
        def on_failure(exc: BaseException) -> None:
            with self._lock:
                self._fetch_done(target.node)
                handler = self._sessions.get(target.node)
                if handler is not None:
                    handler.handle_error(exc)
            # Forget the preferred replica: the leader may tell us of a better one.
            for tp in target.data.session_partitions:
                self._subscriptions.clear_preferred_read_replica(tp)
            if getattr(exc, "invalid_metadata", False) or isinstance(
                exc, (Errors.KafkaConnectionError, Errors.NodeNotReadyError)
            ):
                self._metadata.request_update()
            logger.debug("fetch to node %s failed: %r", target.node, exc)

        return on_failure

    def _handle_fetch_response(
        self, target: _FetchTarget, response: FetchResponse, start_ms: int
    ) -> None:
        data = target.data
        session_parts = data.session_partitions
        resolved: list[tuple[TopicPartition, FetchResponseResponsePartition]] = []
        hints: dict[TopicPartition, tuple[int, int]] = {}
        with self._lock:
            if self._closed:
                return
            # The session handler is only used under the lock (it is not thread-safe).
            handler = self._sessions.get(target.node)
            for topic_resp in response.get("responses", ()):
                # v13+ answers carry ids and empty names; older ones names and the zero id.
                tid = topic_resp.get("topic_id")
                if tid is not None and tid != ZERO_UUID:
                    name = handler.topic_name(tid) if handler is not None else None
                    if name is None:
                        name = self._metadata.cluster.topic_name(tid)
                    if name is None:
                        logger.debug("fetch response names unknown topic id %s", tid)
                        continue
                else:
                    name = topic_resp.get("topic")
                for part in topic_resp.get("partitions", ()):
                    resolved.append((TopicPartition(name, part["partition_index"]), part))
            if handler is not None and not handler.handle_response(
                response.get("error_code", 0),
                response.get("session_id", 0),
                (tp for tp, _ in resolved),
                response.get("throttle_time_ms", 0),
            ):
                if response.get("error_code", 0) == _FETCH_SESSION_TOPIC_ID_ERROR:
                    self._metadata.request_update()
                return
            aggregator = None
            if self._metrics is not None:
                aggregator = FetchMetricsAggregator(
                    self._metrics, [tp for tp, _ in resolved if tp in session_parts]
                )
            for tp, part in resolved:
                req = session_parts.get(tp)
                if req is None:
                    # Java treats this as a broker bug; ignoring it is safe: we re-fetch.
                    logger.debug("fetch response has %s, which the request did not ask for", tp)
                    continue
                if part.get("error_code", 0) in _LEADER_MOVED:
                    hint = _leader_hint(part)
                    if hint is not None:
                        hints[tp] = hint
                cf = CompletedFetch(tp, part, req.fetch_offset, target.broker)
                cf.aggregator = aggregator
                self._buffer.append(cf)
        if hints:
            self._apply_leader_hints(hints, response)
        metrics = self._metrics
        if metrics is not None:
            metrics.record_fetch_latency(self._time.monotonic_ms() - start_ms)
            throttle = response.get("throttle_time_ms", 0)
            if throttle:
                metrics.record_throttle_time(throttle)

    def _apply_leader_hints(
        self, hints: Mapping[TopicPartition, tuple[int, int]], response: FetchResponse
    ) -> None:
        """KIP-951: a broker that is no longer a partition's leader names the new one (and,
        v16+, its address), so the metadata takes it at once instead of after a refresh;
        the next ``poll()`` points the position there (validating it) and fetches. A new
        leader not connected yet is connected to now: the user's thread may be busy (a
        commit waiting on a broker that is shutting down), and the handshake then overlaps
        that wait."""
        brokers = [
            Node(int(e["node_id"]), str(e["host"]), int(e["port"]), e.get("rack"))
            for e in response.get("node_endpoints") or ()
            if e.get("node_id", -1) >= 0
        ]
        moved = self._metadata.update_partition_leadership(hints, brokers)
        if moved:
            logger.debug("leaders moved (from the fetch response): %s", sorted(map(str, moved)))
            for node in {hints[tp][0] for tp in moved}:
                self._client.try_connect(node)

    def in_flight_fetches(self) -> int:
        """How many fetch requests are sent and not yet answered (one per node at most)."""
        return len(self._pending_nodes)

    def send_after_background_responses(self, on_network_thread: Callable[[], bool]) -> None:
        """Have a response handled where ``on_network_thread()`` is true send the next
        fetches at once (see _then_send_next). Called once, by the consumer, before fetching.
        """
        self._on_network_thread = on_network_thread

    def set_prefetch_waits_for_node(self, on: bool) -> None:
        """Whether a request of prefetches only waits while other partitions of its node
        still have an older piece being handed out (on for ``poll()``, whose thread receives
        its own responses and hands partitions out one by one; off while a network thread
        receives for ``poll_arrow()``, which takes a poll's partitions at once: measured there,
        waiting made the reads slower)."""
        self._prefetch_waits_for_node = on

    def has_fetch_in_flight(self) -> bool:
        """True from just before a fetch is sent until its answer is handled (a hint read
        without the lock, for the background receiver: set operations are atomic)."""
        return bool(self._pending_nodes) or bool(self._seek_pending)

    # -- collecting (the collector's work, on the user's thread) -------------------------
    def has_available_fetches(self) -> bool:
        """True when buffered data exists for a partition that can hand it out now."""
        return self._buffer.has_fetchable(self._subscriptions)

    def has_completed_fetches(self) -> bool:
        """True when any response data is queued (fetchable or not)."""
        return bool(len(self._buffer))

    def collect_fetch(
        self, max_records: int | None = None, decoder: RecordDecoder | None = None
    ) -> Fetch:
        """Hand out up to ``max_records`` (default ``max.poll.records``) buffered records,
        advancing positions (:meth:`FetchCollector.collect_fetch`). ``decoder`` is what they
        are decoded by: record objects through the deserializers unless another is given
        (``arrow_decoder.ArrowDecoder`` for ``poll_arrow()``).
        """
        return self._collector.collect_fetch(
            self._object_decoder if decoder is None else decoder, max_records
        )

    def retire_answers_without_records(self) -> int:
        """Drop buffered answers that bring nothing to hand out, so that their partitions can
        be fetched again (:meth:`FetchCollector.retire_answers_without_records`); user's
        thread."""
        return self._collector.retire_answers_without_records()

    # -- housekeeping --------------------------------------------------------------------
    def clear_buffered_data_for_unassigned_partitions(
        self, assigned: Iterable[TopicPartition]
    ) -> None:
        """Drop buffered data of partitions no longer in ``assigned``."""
        self._buffer.clear_unassigned(assigned)

    def close(self, timer: Timer | None = None) -> None:
        """Close fetch sessions (best effort, within ``timer``) and drop buffered data."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._buffer.clear()
            self._collector.close()
            closers = [(node, h.close_metadata()) for node, h in self._sessions.items()]
            held = set(self._pending_nodes)
            second_busy = set(self._seek_pending)
        if timer is None or timer.is_expired():
            return
        futures = []
        for node, meta in closers:
            if meta is None:
                continue
            # The broker answers a connection's requests in order and may hold the fetch out
            # on the broker's own connection for fetch.max.wait.ms: closing the session there
            # made close() wait that long. A session belongs to the broker, not to a
            # connection, so the second connection closes it at once (the offset fetcher's
            # rule for its lookups, read here from the fetcher's own in-flight records).
            second = seek_fetch_node_id(node)
            if (
                node in held
                and second not in second_busy
                and not self._client.is_unavailable(second)
            ):
                node = second
            body = {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": self._config.max_bytes,
                "isolation_level": self._isolation,
                "session_id": meta.session_id,
                "session_epoch": meta.epoch,
                "topics": [],
                "forgotten_topics_data": [],
                "rack_id": self._config.client_rack,
            }
            futures.append(self._client.send(node, ApiKey.FETCH, body))
        for fut in futures:
            timer.update()
            if timer.is_expired():
                break
            try:
                self._client.poll(timeout_ms=timer.remaining_ms, future=fut)
            except Errors.KafkaError as exc:  # closing the sessions is best effort
                logger.debug("could not close the fetch sessions: %s", exc)
                break
