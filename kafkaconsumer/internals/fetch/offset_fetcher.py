"""Offset lookups: position resets, position validation, and the blocking offsets API.

Java: ``OffsetFetcher`` / ``OffsetsForLeaderEpochUtils``. Every lookup groups partitions by
their leader and sends one ListOffsets (or OffsetForLeaderEpoch) request per broker: over the
broker's second fetch connection while its own has a fetch out, which the broker may hold for
``fetch.max.wait.ms`` (see ``_connection_for``).

* :meth:`OffsetFetcher.reset_positions_if_needed` is asynchronous: it sends ListOffsets for
  partitions awaiting a reset and applies answers as they arrive (the partition backs off on
  failure, per partition).
* :meth:`OffsetFetcher.validate_positions_if_needed` re-points positions at the current leader
  and, where the broker has OffsetForLeaderEpoch v3+, detects log truncation. Brokers without
  the API (Tansu) skip validation.
* :meth:`OffsetFetcher.offsets_by_times` blocks (bounded by a timer) for
  ``beginning_offsets`` / ``end_offsets`` / ``offsets_for_times``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import config_value
from kafkaconsumer.errors import LogTruncationError
from kafkaconsumer.internals.interfaces import ClusterView, OffsetClient, OffsetMetadata
from kafkaconsumer.internals.subscription_state import (
    EpochEndOffset,
    FetchPosition,
    LeaderAndEpoch,
    LogTruncation,
    OffsetResetStrategy,
    SubscriptionState,
    current_leader,
)
from kafkaconsumer.network.client import seek_fetch_node_id
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import OffsetAndTimestamp, TopicPartition
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        ListOffsetsRequest,
        ListOffsetsRequestTopicPartition,
        ListOffsetsResponse,
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochRequestTopicPartition,
        OffsetForLeaderEpochResponse,
    )

logger = logging.getLogger(__name__)

__all__ = ["OffsetFetcher", "LogTruncationError", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP"]

#: ListOffsets special timestamps.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
_READ_COMMITTED = 1
# OffsetForLeaderEpoch must be v3+ for a consumer to validate positions (KIP-320).
_MIN_VALIDATION_VERSION = 3

_RETRIABLE_LIST_OFFSETS = frozenset(
    {
        Errors.NotLeaderOrFollowerError.errno,
        Errors.ReplicaNotAvailableError.errno,
        Errors.KafkaStorageError.errno,
        Errors.OffsetNotAvailableError.errno,
        Errors.LeaderNotAvailableError.errno,
        Errors.FencedLeaderEpochError.errno,
        Errors.UnknownLeaderEpochError.errno,
        Errors.UnknownTopicOrPartitionError.errno,
    }
)


def _strategy_timestamp(strategy: OffsetResetStrategy) -> int:
    """The ListOffsets timestamp of EARLIEST or LATEST (callers skip NONE; BY_DURATION's is
    :meth:`OffsetFetcher._reset_timestamp`)."""
    return EARLIEST_TIMESTAMP if strategy is OffsetResetStrategy.EARLIEST else LATEST_TIMESTAMP


class _ListOffsetResult:
    """Outcome of one round of ListOffsets requests.

    Thread-safety: not thread-safe; filled by the response handling of one lookup round.
    """

    __slots__ = ("fetched", "to_retry")

    def __init__(self) -> None:
        self.fetched: dict[TopicPartition, tuple[int, int, int | None]] = {}
        self.to_retry: set[TopicPartition] = set()


def _describe(truncation: LogTruncation) -> str:
    """``topic-p at offset N (epoch E)`` and where the leader's log diverges from it."""
    pos = truncation.fetch_position
    where = f"{truncation.topic_partition} at offset {pos.offset} (epoch {pos.offset_epoch})"
    if truncation.divergent_offset is None:
        return f"{where}: the leader has no epoch at or before it"
    return f"{where}: the leader's log diverges from offset {truncation.divergent_offset.offset}"


class OffsetFetcher:
    """ListOffsets / OffsetForLeaderEpoch lookups for the consumer.

    Thread-safety: called from the user's thread; response callbacks may run on whichever
    thread polls the network client, so the little shared state (the cached reset error) is
    guarded by a lock.
    SubscriptionState is itself thread-safe.
    """

    def __init__(
        self,
        client: OffsetClient,
        metadata: OffsetMetadata,
        subscriptions: SubscriptionState,
        config: Mapping[str, Any],
        *,
        time: Time | None = None,
    ) -> None:
        """Look offsets up through ``client`` for ``subscriptions``, using ``metadata`` for leaders."""
        # Set here and never replaced: the client and the subscriptions are thread-safe.
        self._client = client
        self._metadata = metadata
        self._subscriptions = subscriptions
        self._time = time if time is not None else SYSTEM_TIME
        self._request_timeout_ms = int(config_value(config, "request.timeout.ms"))
        # A partition whose reset or validation failed is retried after retry.backoff.ms, the
        # same wait each time, as Java's OffsetFetcherUtils does: a leader that has just taken
        # over answers UNKNOWN_LEADER_EPOCH or NOT_LEADER a few times in a row while it catches
        # up, and a growing wait (100, 200, 400, 800 ms) kept the partition from fetching for
        # up to a second after the leader was ready.
        self._retry_backoff_ms = int(config_value(config, "retry.backoff.ms"))
        # KIP-580: each round of a blocking lookup waits longer, from retry.backoff.ms up to
        # its max.
        self._backoff = ExponentialBackoff(
            self._retry_backoff_ms,
            2.0,
            int(config_value(config, "retry.backoff.max.ms")),
            0.2,
        )
        self._isolation = (
            _READ_COMMITTED if config.get("isolation.level") == "read_committed" else 0
        )
        self._lock = threading.Lock()  # a leaf lock: nothing is taken while it is held
        self._cached_reset_error: BaseException | None = None  # guarded by _lock
        self._cached_validation_error: BaseException | None = None  # guarded by _lock
        # The metadata snapshot (compared by identity: snapshots are immutable) and assignment
        # a validation pass last ran for. Written by the user's thread only.
        self._validated_for: tuple[ClusterView, int] | None = None

    # -- helpers -------------------------------------------------------------------------
    def _retry_later(self, partitions: Iterable[TopicPartition], now: int) -> None:
        """Back the partitions' next reset or validation off by retry.backoff.ms."""
        self._subscriptions.request_failed(partitions, now + self._retry_backoff_ms)

    def _leader(self, tp: TopicPartition) -> LeaderAndEpoch:
        return current_leader(self._metadata.cluster, tp)

    def _connection_for(self, node: int) -> int:
        """The connection a lookup on broker ``node`` goes over: the broker's own, or its
        second fetch connection while a fetch is out on the own one, and the second has none
        and is not failing to connect.

        The broker answers a connection's requests in order and may hold a fetch for
        ``fetch.max.wait.ms`` (everything caught up): the reset after a
        ``seek_to_beginning()``, or a validation, would wait behind it.
        """
        if node < 0 or not self._client.has_pending(node, ApiKey.FETCH):
            return node
        second = seek_fetch_node_id(node)
        if self._client.has_pending(second, ApiKey.FETCH) or self._client.is_unavailable(second):
            # Busy too, or failing to connect: the first connection answers in the end.
            return node
        return second

    def _lacks_api(self, node: int, api: ApiKey) -> bool:
        """True when the node is connected and did not advertise ``api`` at all.

        Read through ``ConsumerNetworkClient.execute``, under the network client's lock (the
        connection table may change under a concurrent poll).
        """
        versions = self._client.execute(lambda client: client.broker_api_versions(node))
        return bool(versions) and int(api) not in versions

    def _supports_validation(self, node: int) -> bool:
        """Whether ``node`` can answer OffsetForLeaderEpoch v3+.

        Unknown (not connected yet) counts as supported, as in Java; a broker that turns out
        to lack the API fails the request and the position is trusted.
        """
        version = self._client.api_version(node, ApiKey.OFFSET_FOR_LEADER_EPOCH)
        if version is not None:
            return version >= _MIN_VALIDATION_VERSION
        return not self._lacks_api(node, ApiKey.OFFSET_FOR_LEADER_EPOCH)

    def _group_by_leader(
        self,
        timestamps: Mapping[TopicPartition, int],
    ) -> tuple[dict[int, dict[TopicPartition, tuple[int, int]]], set[TopicPartition]]:
        """Split ``timestamps`` per leader node; also return partitions with no leader."""
        by_node: dict[int, dict[TopicPartition, tuple[int, int]]] = {}
        no_leader: set[TopicPartition] = set()
        cluster = self._metadata.cluster  # one snapshot (each read takes the metadata lock)
        for tp, ts in timestamps.items():
            leader = current_leader(cluster, tp)
            if leader.leader is None:
                no_leader.add(tp)
                continue
            by_node.setdefault(leader.leader, {})[tp] = (
                ts,
                -1 if leader.epoch is None else leader.epoch,
            )
        if no_leader and not self._metadata.update_requested():
            # A refresh already asked for (the first one of a new consumer, in flight while
            # poll() asks again on each wakeup) brings these leaders or ends with none, and
            # then the next call asks again: another request now would only repeat it (a full
            # one, of every partition's metadata).
            self._metadata.request_update()
        return by_node, no_leader

    def _list_offsets_body(
        self, partitions: Mapping[TopicPartition, tuple[int, int]]
    ) -> ListOffsetsRequest:
        topics: dict[str, list[ListOffsetsRequestTopicPartition]] = {}
        for tp, (ts, epoch) in partitions.items():
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "current_leader_epoch": epoch,
                    "timestamp": ts,
                    "max_num_offsets": 1,
                }
            )
        return {
            "replica_id": -1,
            "isolation_level": self._isolation,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }

    def _parse_list_offsets(
        self,
        response: ListOffsetsResponse,
        asked: Iterable[TopicPartition],
        result: _ListOffsetResult,
    ) -> None:
        asked_set = set(asked)
        unauthorized: set[str] = set()
        for topic in response.get("topics", ()):
            name = topic.get("name")
            for part in topic.get("partitions", ()):
                tp = TopicPartition(name, part["partition_index"])
                if tp not in asked_set:
                    continue
                asked_set.discard(tp)
                code = part.get("error_code", 0)
                if code == 0:
                    offset = part.get("offset", -1)
                    old = part.get("old_style_offsets")
                    if old:
                        offset = old[0]
                    epoch = part.get("leader_epoch", -1)
                    result.fetched[tp] = (
                        offset,
                        part.get("timestamp", -1),
                        None if epoch is None or epoch < 0 else epoch,
                    )
                elif code in _RETRIABLE_LIST_OFFSETS:
                    logger.debug(
                        "ListOffsets for %s failed with %s; will retry",
                        tp,
                        Errors.for_code(code).name,
                    )
                    self._metadata.request_update()
                    result.to_retry.add(tp)
                elif code == Errors.UnsupportedForMessageFormatError.errno:
                    # Old message format: no timestamp index; the answer is "no offset".
                    result.fetched[tp] = (-1, -1, None)
                elif code == Errors.TopicAuthorizationFailedError.errno:
                    unauthorized.add(tp.topic)
                else:
                    logger.warning(
                        "ListOffsets for %s failed with %s; will retry",
                        tp,
                        Errors.for_code(code).name,
                    )
                    result.to_retry.add(tp)
        # Partitions the broker left out of its answer are retried too.
        result.to_retry.update(asked_set)
        if unauthorized:
            raise Errors.TopicAuthorizationFailedError(
                f"not authorized to list offsets of topics {sorted(unauthorized)}",
                unauthorized_topics=unauthorized,
            )

    # -- blocking lookups ----------------------------------------------------------------
    def offsets_by_times(
        self, timestamps: Mapping[TopicPartition, int], timer: Timer
    ) -> dict[TopicPartition, tuple[int, int, int | None]]:
        """Look up ``(offset, timestamp, leader_epoch)`` for each partition, blocking.

        Raises :class:`KafkaTimeoutError` when ``timer`` expires first.
        """
        remaining = dict(timestamps)
        found: dict[TopicPartition, tuple[int, int, int | None]] = {}
        if not remaining:
            return found
        # Lookups may name topics outside the assignment; metadata must cover them.
        self._metadata.add_transient_topics({tp.topic for tp in remaining})
        attempt = 0
        while True:
            result = _ListOffsetResult()
            by_node, no_leader = self._group_by_leader(remaining)
            result.to_retry.update(no_leader)
            pending: list[tuple[Any, dict[TopicPartition, tuple[int, int]]]] = []
            for node, parts in by_node.items():
                try:
                    fut = self._client.send(
                        self._connection_for(node),
                        ApiKey.LIST_OFFSETS,
                        self._list_offsets_body(parts),
                    )
                except Errors.KafkaError as exc:
                    logger.debug("could not send ListOffsets to node %s: %s", node, exc)
                    result.to_retry.update(parts)
                    continue
                pending.append((fut, parts))
            for fut, parts in pending:
                timer.update()
                while not fut.is_done and timer.not_expired():
                    self._client.poll(timeout_ms=timer.remaining_ms, future=fut)
                    timer.update()
                if not fut.is_done:
                    break
                if fut.failed():
                    failure = fut.exception
                    if not getattr(failure, "retriable", False):
                        assert failure is not None
                        raise failure
                    logger.debug("ListOffsets failed (%s); will retry", failure)
                    result.to_retry.update(parts)
                    if getattr(failure, "invalid_metadata", False) or isinstance(
                        failure, Errors.KafkaConnectionError
                    ):
                        self._metadata.request_update()
                else:
                    self._parse_list_offsets(fut.value, parts, result)
            for tp, value in result.fetched.items():
                found[tp] = value
                remaining.pop(tp, None)
            if not remaining:
                return found
            timer.update()
            if timer.is_expired():
                raise Errors.KafkaTimeoutError(
                    f"failed to get offsets by times in {timer.elapsed_ms} ms "
                    f"(partitions without an answer: {sorted(str(tp) for tp in remaining)})"
                )
            # As Java: when the round asked for metadata (a leader unknown or moved), retry as
            # soon as it lands; otherwise back off. Both used to run, so a first lookup whose
            # leaders were not known yet always waited retry.backoff.ms after the metadata.
            if self._metadata.update_requested():
                self._await_metadata(timer)
            else:
                timer.sleep(min(self._backoff.backoff(attempt), timer.remaining_ms))
            attempt += 1

    def _await_metadata(self, timer: Timer) -> None:
        if timer.is_expired():
            return
        try:
            self._client.await_metadata_update(min(timer.remaining_ms, self._request_timeout_ms))
        except Errors.KafkaTimeoutError:
            pass
        timer.update()

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timer: Timer
    ) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        res = self.offsets_by_times({tp: EARLIEST_TIMESTAMP for tp in partitions}, timer)
        return {tp: v[0] for tp, v in res.items()}

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timer: Timer
    ) -> dict[TopicPartition, int]:
        """The end offset of each partition (LSO under read_committed, else high watermark)."""
        res = self.offsets_by_times({tp: LATEST_TIMESTAMP for tp in partitions}, timer)
        return {tp: v[0] for tp, v in res.items()}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timer: Timer
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one (None when there is none)."""
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"the target time for partition {tp} is {ts}; it must be >= 0")
        res = self.offsets_by_times(timestamps, timer)
        out: dict[TopicPartition, OffsetAndTimestamp | None] = {}
        for tp in timestamps:
            offset, ts, epoch = res[tp]
            if offset >= 0 and ts < 0:
                # A correct broker always returns the matched record's timestamp.
                logger.warning(
                    "broker answered the timestamp lookup of %s with offset %d but "
                    "no timestamp; treating it as not found",
                    tp,
                    offset,
                )
            out[tp] = None if offset < 0 or ts < 0 else OffsetAndTimestamp(offset, ts, epoch)
        return out

    def request_end_offset_async(self, tp: TopicPartition) -> None:
        """Look up the end offset of ``tp`` in the background and cache it (for lag)."""
        self._metadata.add_transient_topics([tp.topic])
        by_node, no_leader = self._group_by_leader({tp: LATEST_TIMESTAMP})
        for node, parts in by_node.items():
            try:
                fut = self._client.send(
                    self._connection_for(node), ApiKey.LIST_OFFSETS, self._list_offsets_body(parts)
                )
            except Errors.KafkaError as exc:
                logger.debug("could not send end-offset lookup to node %s: %s", node, exc)
                continue

            def on_success(
                response: ListOffsetsResponse, parts: dict[TopicPartition, tuple[int, int]] = parts
            ) -> None:
                result = _ListOffsetResult()
                try:
                    self._parse_list_offsets(response, parts, result)
                except Errors.KafkaError:
                    return
                for p, (offset, _ts, _epoch) in result.fetched.items():
                    if offset < 0:
                        continue
                    if self._isolation == _READ_COMMITTED:
                        self._subscriptions.update_last_stable_offset(p, offset)
                    else:
                        self._subscriptions.update_high_watermark(p, offset)

            fut.add_callback(on_success)

    # -- asynchronous resets -------------------------------------------------------------
    def reset_positions_if_needed(self, *, raise_error: bool = True) -> None:
        """Send ListOffsets for partitions awaiting a reset; answers are applied as they come.

        Re-raises (once) a non-retriable error from an earlier reset attempt. With
        ``raise_error`` False (a blocking call other than ``poll()`` keeping fetch positions
        moving), such an error is left for ``poll()`` to raise and nothing is sent meanwhile.
        """
        with self._lock:
            err = self._cached_reset_error
            if err is not None and not raise_error:
                return
            self._cached_reset_error = None
        if err is not None:
            raise err
        now = self._time.monotonic_ms()
        needing = self._subscriptions.partitions_needing_reset(now)
        if not needing:
            return
        timestamps: dict[TopicPartition, int] = {}
        strategies: dict[TopicPartition, OffsetResetStrategy] = {}
        for tp, strategy in self._subscriptions.reset_strategies(needing):
            if strategy is None or strategy is OffsetResetStrategy.NONE:
                continue
            timestamps[tp] = self._reset_timestamp(strategy)
            strategies[tp] = strategy
        if not timestamps:
            return
        # Partitions whose leader is unknown wait for the metadata update that
        # _group_by_leader asked for, not for a backoff (as Java): the next poll after it lands
        # sends their ListOffsets.
        by_node, _no_leader = self._group_by_leader(timestamps)
        for node, parts in by_node.items():
            self._subscriptions.set_next_allowed_retry(parts, now + self._request_timeout_ms)
            try:
                fut = self._client.send(
                    self._connection_for(node), ApiKey.LIST_OFFSETS, self._list_offsets_body(parts)
                )
            except Errors.KafkaError as exc:
                logger.debug("could not send reset ListOffsets to node %s: %s", node, exc)
                self._retry_later(parts, now)
                continue
            fut.add_callback(self._reset_success(parts, strategies))
            fut.add_errback(self._reset_failure(parts))

    def _reset_timestamp(self, strategy: OffsetResetStrategy) -> int:
        """The ListOffsets timestamp of a reset: EARLIEST and LATEST's codes, or for
        BY_DURATION the wall-clock time that long ago (Java's ``Instant.now().minus``)."""
        if strategy is not OffsetResetStrategy.BY_DURATION:
            return _strategy_timestamp(strategy)
        duration_ns = self._subscriptions.reset_duration_ns
        if duration_ns is None:
            raise Errors.IllegalStateError("by_duration reset strategy without a duration")
        return (self._time.wall_ms() * 1_000_000 - duration_ns) // 1_000_000

    def _reset_success(
        self,
        parts: dict[TopicPartition, tuple[int, int]],
        strategies: dict[TopicPartition, OffsetResetStrategy],
    ) -> Callable[[ListOffsetsResponse], None]:
        def on_success(response: ListOffsetsResponse) -> None:
            result = _ListOffsetResult()
            try:
                self._parse_list_offsets(response, parts, result)
            except Errors.KafkaError as exc:
                with self._lock:
                    self._cached_reset_error = exc
                return
            now = self._time.monotonic_ms()
            if result.to_retry:
                self._retry_later(result.to_retry, now)
                self._metadata.request_update()
            cluster = self._metadata.cluster  # one snapshot (each read takes the metadata lock)
            for tp, (offset, _ts, epoch) in result.fetched.items():
                if offset < 0 and strategies[tp] is OffsetResetStrategy.BY_DURATION:
                    # No record that recent: the next one written is the first in the window.
                    self._reset_to_end_if_still_awaiting(tp)
                    continue
                if offset < 0:
                    # No answer for this partition; back off and ask again.
                    self._retry_later([tp], now)
                    continue
                position = FetchPosition(offset, epoch, current_leader(cluster, tp))
                logger.info(
                    "resetting offset for %s to position %d (%s)", tp, offset, strategies[tp].value
                )
                self._subscriptions.maybe_seek_unvalidated(tp, position, strategies[tp])

        return on_success

    def _reset_to_end_if_still_awaiting(self, tp: TopicPartition) -> None:
        subs = self._subscriptions
        if subs.is_assigned(tp) and subs.reset_strategy(tp) is OffsetResetStrategy.BY_DURATION:
            logger.info(
                "no record of %s is as recent as auto.offset.reset's by_duration asks; "
                "resetting it to the log end",
                tp,
            )
            subs.request_offset_reset([tp], OffsetResetStrategy.LATEST)

    def _reset_failure(self, parts: dict[TopicPartition, tuple[int, int]]) -> Any:
        def on_failure(exc: BaseException) -> None:
            now = self._time.monotonic_ms()
            self._retry_later(parts, now)
            self._metadata.request_update()
            if not getattr(exc, "retriable", False):
                with self._lock:
                    if self._cached_reset_error is None:
                        self._cached_reset_error = exc
            logger.debug("reset ListOffsets failed for %s: %r", sorted(map(str, parts)), exc)

        return on_failure

    # -- validation ----------------------------------------------------------------------
    def has_validation_error(self) -> bool:
        """Whether a validation found an error that waits to be raised (a hint read without
        the lock: an error set meanwhile is seen by the next call)."""
        return self._cached_validation_error is not None

    def validate_positions_if_needed(self, *, raise_error: bool = True) -> None:
        """Point positions at the current leaders and validate them where the broker can.

        Raises :class:`LogTruncationError` found by an earlier validation when no reset policy
        applies. With ``raise_error`` False, such an error is left for ``poll()`` to raise and
        nothing is done meanwhile (as :meth:`reset_positions_if_needed`).
        """
        with self._lock:
            err = self._cached_validation_error
            if err is not None and not raise_error:
                return
            self._cached_validation_error = None
        if err is not None:
            raise err
        subs = self._subscriptions
        # Leaders only move with a new metadata snapshot (a refresh, or leaders a fetch answer
        # named); skip the walk over every partition otherwise (poll() calls this each time).
        key = (self._metadata.cluster, subs.assignment_id)
        if key != self._validated_for:
            self._validated_for = key
            self._point_positions_at_current_leaders()
        now = self._time.monotonic_ms()
        needing = subs.partitions_needing_validation(now)
        if not needing:
            return
        by_node: dict[int, dict[TopicPartition, FetchPosition]] = {}
        for tp in needing:
            position = subs.position(tp)
            if position is None or position.current_leader.leader is None:
                continue
            by_node.setdefault(position.current_leader.leader, {})[tp] = position
        for node, positions in by_node.items():
            subs.set_next_allowed_retry(positions, now + self._request_timeout_ms)
            topics: dict[str, list[OffsetForLeaderEpochRequestTopicPartition]] = {}
            for tp, pos in positions.items():
                topics.setdefault(tp.topic, []).append(
                    {
                        "partition": tp.partition,
                        "current_leader_epoch": (
                            -1 if pos.current_leader.epoch is None else pos.current_leader.epoch
                        ),
                        # Only positions with an epoch await validation: -1 is never sent.
                        "leader_epoch": -1 if pos.offset_epoch is None else pos.offset_epoch,
                    }
                )
            body: OffsetForLeaderEpochRequest = {
                "replica_id": -1,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            }
            try:
                fut = self._client.send(
                    self._connection_for(node), ApiKey.OFFSET_FOR_LEADER_EPOCH, body
                )
            except Errors.KafkaError as exc:
                logger.debug("could not send OffsetForLeaderEpoch to node %s: %s", node, exc)
                self._retry_later(positions, now)
                continue
            fut.add_callback(self._validation_success(positions))
            fut.add_errback(self._validation_failure(positions))

    def _point_positions_at_current_leaders(self) -> None:
        subs = self._subscriptions
        # Asked once per leader, not per partition: each question takes the network lock.
        supports_by_node: dict[int, bool] = {}
        cluster = self._metadata.cluster  # one snapshot (each read takes the metadata lock)
        for tp in subs.assigned_partitions_list():
            leader = current_leader(cluster, tp)
            supports = True
            node = leader.leader
            if node is not None:
                known = supports_by_node.get(node)
                if known is None:
                    known = supports_by_node[node] = self._supports_validation(node)
                supports = known
            try:
                subs.maybe_validate_position_for_current_leader(tp, leader, supports)
            except Errors.IllegalStateError:
                continue  # unassigned meanwhile

    def _validation_success(
        self, positions: dict[TopicPartition, FetchPosition]
    ) -> Callable[[OffsetForLeaderEpochResponse], None]:
        def on_success(response: OffsetForLeaderEpochResponse) -> None:
            subs = self._subscriptions
            now = self._time.monotonic_ms()
            truncations: list[LogTruncation] = []
            answered: set[TopicPartition] = set()
            for topic in response.get("topics", ()):
                name = topic.get("topic")
                for part in topic.get("partitions", ()):
                    tp = TopicPartition(name, part["partition"])
                    pos = positions.get(tp)
                    if pos is None:
                        continue
                    answered.add(tp)
                    code = part.get("error_code", 0)
                    if code == 0:
                        trunc = subs.maybe_complete_validation(
                            tp,
                            pos,
                            EpochEndOffset(
                                part.get("leader_epoch", -1), part.get("end_offset", -1)
                            ),
                        )
                        if trunc is not None:
                            truncations.append(trunc)
                    elif code == Errors.TopicAuthorizationFailedError.errno:
                        with self._lock:
                            self._cached_validation_error = Errors.TopicAuthorizationFailedError(
                                f"not authorized to read topic {tp.topic}",
                                unauthorized_topics={tp.topic},
                            )
                    else:
                        logger.debug(
                            "OffsetForLeaderEpoch for %s failed with %s; retrying",
                            tp,
                            Errors.for_code(code).name,
                        )
                        self._retry_later([tp], now)
                        self._metadata.request_update()
            missing = set(positions) - answered
            if missing:
                self._retry_later(missing, now)
            if truncations:
                divergent = {
                    t.topic_partition: t.divergent_offset
                    for t in truncations
                    if t.divergent_offset is not None
                }
                with self._lock:
                    self._cached_validation_error = LogTruncationError(
                        "truncation detected: " + "; ".join(sorted(map(_describe, truncations))),
                        divergent,
                    )

        return on_success

    def _validation_failure(self, positions: dict[TopicPartition, FetchPosition]) -> Any:
        def on_failure(exc: BaseException) -> None:
            now = self._time.monotonic_ms()
            self._retry_later(positions, now)
            if isinstance(exc, Errors.UnsupportedVersionError):
                # Broker lacks the API after all: trust the positions.
                for tp in positions:
                    try:
                        self._subscriptions.complete_validation(tp)
                    except Errors.IllegalStateError:
                        pass
                return
            self._metadata.request_update()
            logger.debug("OffsetForLeaderEpoch failed: %r", exc)

        return on_failure
