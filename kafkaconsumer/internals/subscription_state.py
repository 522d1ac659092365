"""What the consumer is subscribed to, what it is assigned, and where it is in each partition.

Mirrors Java's ``org.apache.kafka.clients.consumer.internals.SubscriptionState``: the single
source of truth shared by the facade, the fetcher, the offset fetcher and the group coordinator.
A partition's fetch state moves through INITIALIZING -> (AWAIT_RESET | AWAIT_VALIDATION) ->
FETCHING; only FETCHING partitions with a valid position, not paused and not pending revocation,
are fetched.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from kafkaconsumer.config.auto_offset_reset import reset_duration_ns
from kafkaconsumer.errors import IllegalStateError, NoOffsetForPartitionError
from kafkaconsumer.internals.topic_partition_state import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEndOffset,
    FetchPosition,
    FetchStates,
    LeaderAndEpoch,
    LogTruncation,
    OffsetResetStrategy,
    SubscriptionType,
    TopicPartitionState,
    current_leader,
)
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kafkaconsumer.listener import ConsumerRebalanceListener

logger = logging.getLogger(__name__)

__all__ = [
    "SubscriptionType",
    "OffsetResetStrategy",
    "FetchStates",
    "LeaderAndEpoch",
    "FetchPosition",
    "EpochEndOffset",
    "LogTruncation",
    "TopicPartitionState",
    "SubscriptionState",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "current_leader",
]

_MUTUALLY_EXCLUSIVE = "Subscription to topics, partitions and pattern are mutually exclusive"


class SubscriptionState:
    """Subscription, assignment and per-partition positions (Java ``SubscriptionState``).

    Thread-safety: the user thread, the coordinator and the heartbeat thread may call in
    concurrently. Every method that changes state, or reads more than one field, takes one
    re-entrant lock. The hot-path queries are lock-free: ``subscription_type``,
    ``subscribed_pattern``, ``matches_subscribed_pattern``, ``has_pattern_subscription``,
    ``has_no_subscription_or_user_assignment``, ``has_auto_assigned_partitions``,
    ``rebalance_listener``, ``assignment_id``, ``has_default_offset_reset_policy``,
    ``num_assigned_partitions``, ``is_assigned``, ``assigned_state_or_none``, ``is_fetchable``,
    and the cache updates ``update_high_watermark`` / ``update_log_start_offset`` /
    ``update_last_stable_offset``. That is safe because each one does a single attribute read,
    a single dict operation or a single attribute store, all atomic under the GIL. The writers,
    under the lock, replace ``_assignment`` as a whole rather than editing it, so a lock-free
    reader sees the old or the new assignment. The one exception is ``move_partition_to_end``
    (a pop and a re-insert). It runs on the polling thread, which is also where the fetch path
    makes its lock-free lookups. A reader on another thread (an offset-lookup callback on the
    heartbeat thread) may miss the partition for that instant: it takes the partition as
    unassigned, and the watermark it meant to cache is dropped until the next fetch. The
    rebalance listener is only stored.
    """

    def __init__(
        self, default_reset_strategy: OffsetResetStrategy | str = OffsetResetStrategy.LATEST
    ) -> None:
        """Start unsubscribed; ``default_reset_strategy`` (a member, or the ``auto.offset.reset``
        value, ``by_duration:<duration>`` included) applies to partitions without a position."""
        # Every field below is written under _lock (the subscriptions lock); the lock-free
        # queries of the class docstring read some of them without it.
        self._lock = threading.RLock()
        self._subscription_type = SubscriptionType.NONE  # guarded by _lock
        self._subscription: frozenset[str] = frozenset()  # guarded by _lock
        self._group_subscription: frozenset[str] = frozenset()  # guarded by _lock
        self._subscribed_pattern: re.Pattern[str] | None = None  # guarded by _lock
        # dict keeps insertion order: the fetch order, rotated by move_partition_to_end.
        self._assignment: dict[TopicPartition, TopicPartitionState] = {}  # guarded by _lock
        self._default_reset_strategy = OffsetResetStrategy.parse(default_reset_strategy)  # set once
        #: The duration of ``by_duration:<duration>`` in ns (None for the other strategies).
        self.reset_duration_ns: int | None = (  # set once
            reset_duration_ns(default_reset_strategy)
            if isinstance(default_reset_strategy, str)
            else None
        )
        self._rebalance_listener: ConsumerRebalanceListener | None = None  # guarded by _lock
        self._assignment_id = 0  # guarded by _lock
        # Counts pause(), resume() and mark_pending_revocation(): with the transition number
        # and the assignment id it tells when any partition's fetchability may have changed.
        self._flag_changes = 0  # guarded by _lock
        # (transition number, assignment dict) when every partition was FETCHING / when none
        # awaited validation; see topic_partition_state._TRANSITIONS.
        self._all_fetching_at: tuple[int, dict[TopicPartition, TopicPartitionState]] | None = None
        self._none_validating_at: tuple[int, dict[TopicPartition, TopicPartitionState]] | None = (
            None
        )
        # (transition number, assignment dict) when no partition was INITIALIZING.
        self._none_initializing_at: tuple[int, dict[TopicPartition, TopicPartitionState]] | None = (
            None
        )
        # ((transition number, assignment dict), earliest retry ms or None) when no partition
        # could be reset: none awaited a reset, or all that did were backing off until then.
        # Backoffs change without a transition, so set_next_allowed_retry clears it.
        self._no_reset_until: (
            tuple[tuple[int, dict[TopicPartition, TopicPartitionState]], int | None] | None
        ) = None
        # The same for validations.
        self._no_validation_until: (
            tuple[tuple[int, dict[TopicPartition, TopicPartitionState]], int | None] | None
        ) = None

    # -- subscription --------------------------------------------------------------------
    def _set_subscription_type(self, kind: SubscriptionType) -> None:
        if self._subscription_type is SubscriptionType.NONE:
            self._subscription_type = kind
        elif self._subscription_type is not kind:
            raise IllegalStateError(_MUTUALLY_EXCLUSIVE)

    def subscribe(
        self, topics: Iterable[str], listener: ConsumerRebalanceListener | None = None
    ) -> bool:
        """Subscribe to a topic list; True when the subscription changed."""
        topic_set = frozenset(topics)
        with self._lock:
            self._rebalance_listener = listener
            self._set_subscription_type(SubscriptionType.AUTO_TOPICS)
            return self._change_subscription(topic_set)

    def subscribe_pattern(
        self, pattern: re.Pattern[str], listener: ConsumerRebalanceListener | None = None
    ) -> None:
        """Subscribe to every topic whose whole name matches ``pattern``."""
        with self._lock:
            self._rebalance_listener = listener
            self._set_subscription_type(SubscriptionType.AUTO_PATTERN)
            self._subscribed_pattern = pattern

    def subscribe_from_pattern(self, topics: Iterable[str]) -> bool:
        """Set the topics a pattern currently matches; True when they changed."""
        with self._lock:
            if self._subscription_type is not SubscriptionType.AUTO_PATTERN:
                raise IllegalStateError(
                    "attempt to subscribe from pattern while subscription "
                    f"type is {self._subscription_type.value}"
                )
            return self._change_subscription(frozenset(topics))

    def _change_subscription(self, topics: frozenset[str]) -> bool:
        if topics == self._subscription:
            return False
        self._subscription = topics
        return True

    def group_subscribe(self, topics: Iterable[str]) -> bool:
        """(Leader) widen metadata to every topic of the group; True when that adds topics."""
        with self._lock:
            if not self.has_auto_assigned_partitions():
                raise IllegalStateError(_MUTUALLY_EXCLUSIVE)
            self._group_subscription = frozenset(topics)
            return not self._subscription.issuperset(self._group_subscription)

    def reset_group_subscription(self) -> None:
        """Forget the leader-only group subscription."""
        with self._lock:
            self._group_subscription = frozenset()

    def unsubscribe(self) -> None:
        """Drop subscription, pattern and assignment, back to NONE."""
        with self._lock:
            self._subscription = frozenset()
            self._group_subscription = frozenset()
            self._assignment = {}
            self._subscribed_pattern = None
            self._subscription_type = SubscriptionType.NONE
            self._assignment_id += 1

    def subscription(self) -> frozenset[str]:
        """The subscribed topics (for a pattern: the topics it matched so far)."""
        with self._lock:
            if self.has_auto_assigned_partitions():
                return self._subscription
            return frozenset()

    @property
    def subscription_type(self) -> SubscriptionType:
        """The current :class:`SubscriptionType`."""
        return self._subscription_type

    @property
    def subscribed_pattern(self) -> re.Pattern[str] | None:
        """The subscribed pattern, or None."""
        return self._subscribed_pattern

    def matches_subscribed_pattern(self, topic: str) -> bool:
        """True when a pattern subscription exists and matches the whole topic name.

        Java's ``matchesSubscribedPattern``, kept as API of this class; the metadata matches
        :attr:`subscribed_pattern` against the cluster's topics itself."""
        pattern = self._subscribed_pattern
        return pattern is not None and pattern.fullmatch(topic) is not None

    def metadata_topics(self) -> frozenset[str]:
        """Topics whose metadata the consumer needs."""
        with self._lock:
            if not self._group_subscription:
                return self._subscription
            if self._group_subscription.issuperset(self._subscription):
                return self._group_subscription
            return self._subscription | self._group_subscription

    def needs_metadata(self, topic: str) -> bool:
        """True when ``topic`` is in the subscription or the group subscription (Java's
        ``needsMetadata``, kept as API of this class; the engine does not call it)."""
        with self._lock:
            return topic in self._subscription or topic in self._group_subscription

    def has_pattern_subscription(self) -> bool:
        """True for AUTO_PATTERN."""
        return self._subscription_type is SubscriptionType.AUTO_PATTERN

    def has_no_subscription_or_user_assignment(self) -> bool:
        """True for NONE."""
        return self._subscription_type is SubscriptionType.NONE

    def has_auto_assigned_partitions(self) -> bool:
        """True when the group assigns partitions (AUTO_TOPICS or AUTO_PATTERN)."""
        return self._subscription_type in (
            SubscriptionType.AUTO_TOPICS,
            SubscriptionType.AUTO_PATTERN,
        )

    @property
    def rebalance_listener(self) -> ConsumerRebalanceListener | None:
        """The listener given to :meth:`subscribe` (or None)."""
        return self._rebalance_listener

    @property
    def assignment_id(self) -> int:
        """Incremented on every assignment change; lets in-flight work detect staleness."""
        return self._assignment_id

    # -- assignment ----------------------------------------------------------------------
    def _ordered_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, TopicPartitionState]:
        # Keep a topic's partitions adjacent (as Java's PartitionStates) and reuse the state of
        # partitions that stay, so their position and paused flag survive.
        grouped: dict[str, list[TopicPartition]] = {}
        for tp in partitions:
            grouped.setdefault(tp.topic, []).append(tp)
        states: dict[TopicPartition, TopicPartitionState] = {}
        for tps in grouped.values():
            for tp in tps:
                if tp not in states:
                    states[tp] = self._assignment.get(tp) or TopicPartitionState()
        return states

    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> bool:
        """Manual assignment; True when the assigned set changed."""
        wanted = list(partitions)
        for tp in wanted:
            if not isinstance(tp, tuple) or len(tp) != 2:
                raise TypeError(f"expected a TopicPartition, got {tp!r}")
        with self._lock:
            self._set_subscription_type(SubscriptionType.USER_ASSIGNED)
            if set(wanted) == self._assignment.keys():
                return False
            self._assignment_id += 1
            self._assignment = self._ordered_states(wanted)
            return self._change_subscription(frozenset(tp.topic for tp in wanted))

    def assign_from_subscribed(self, partitions: Iterable[TopicPartition]) -> None:
        """Install the group's assignment (keeping state of partitions that stay)."""
        with self._lock:
            if not self.has_auto_assigned_partitions():
                raise IllegalStateError(
                    "attempt to dynamically assign partitions while manual assignment is in use"
                )
            self._assignment_id += 1
            self._assignment = self._ordered_states(partitions)

    def check_assignment_matched_subscription(self, partitions: Iterable[TopicPartition]) -> bool:
        """False when an assigned topic is outside the subscription (stale assignment)."""
        with self._lock:
            for tp in partitions:
                if self._subscribed_pattern is not None:
                    if self._subscribed_pattern.fullmatch(tp.topic) is None:
                        logger.info(
                            "assigned partition %s does not match subscribed pattern %s",
                            tp,
                            self._subscribed_pattern.pattern,
                        )
                        return False
                elif tp.topic not in self._subscription:
                    logger.info(
                        "assigned partition %s is not in the subscription %s",
                        tp,
                        sorted(self._subscription),
                    )
                    return False
            return True

    def assigned_partitions(self) -> frozenset[TopicPartition]:
        """The assigned partitions as a set."""
        with self._lock:
            return frozenset(self._assignment)

    def assigned_partitions_list(self) -> list[TopicPartition]:
        """The assigned partitions in fetch order."""
        with self._lock:
            return list(self._assignment)

    def num_assigned_partitions(self) -> int:
        """How many partitions are assigned."""
        return len(self._assignment)

    def is_assigned(self, tp: TopicPartition) -> bool:
        """True when ``tp`` is assigned."""
        return tp in self._assignment

    def _assigned_state(self, tp: TopicPartition) -> TopicPartitionState:
        state = self._assignment.get(tp)
        if state is None:
            raise IllegalStateError(
                f"No current assignment for partition {tp.topic}-{tp.partition}"
            )
        return state

    def assigned_state_or_none(self, tp: TopicPartition) -> TopicPartitionState | None:
        """The raw state of ``tp`` (None when not assigned); callers hold no lock on it."""
        return self._assignment.get(tp)

    def move_partition_to_end(self, tp: TopicPartition) -> None:
        """Rotate ``tp`` to the end of the fetch order (fairness between partitions)."""
        with self._lock:
            state = self._assignment.pop(tp, None)
            if state is not None:
                self._assignment[tp] = state

    def fetchable_partitions(
        self, is_available: Callable[[TopicPartition], bool] | None = None
    ) -> list[TopicPartition]:
        """Partitions to fetch now, in fetch order, filtered by ``is_available`` (Java's
        ``fetchablePartitions``, kept as API of this class; the fetcher walks
        :meth:`fetchable_states`)."""
        with self._lock:
            return [
                tp
                for tp, st in self._assignment.items()
                if st.is_fetchable and (is_available is None or is_available(tp))
            ]

    def fetchable_states(
        self, exclude: Collection[TopicPartition] = ()
    ) -> list[tuple[TopicPartition, TopicPartitionState]]:
        """``(partition, state)`` of every fetchable partition not in ``exclude``, in fetch
        order (the fetcher's hot path: one lock, no per-partition lookups)."""
        with self._lock:
            return [
                (tp, st)
                for tp, st in self._assignment.items()
                if st.is_fetchable and tp not in exclude
            ]

    # -- positions -----------------------------------------------------------------------
    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Move to ``offset`` (no epoch, no validation)."""
        self.seek_validated(tp, FetchPosition(offset))

    def seek_validated(self, tp: TopicPartition, position: FetchPosition) -> None:
        """Move to ``position`` and fetch from it without validation."""
        with self._lock:
            self._assigned_state(tp).seek_validated(position)

    def seek_unvalidated(self, tp: TopicPartition, position: FetchPosition) -> None:
        """Move to ``position`` and validate it first when it carries an epoch."""
        with self._lock:
            self._assigned_state(tp).seek_unvalidated(position)

    def maybe_seek_unvalidated(
        self, tp: TopicPartition, position: FetchPosition, requested: OffsetResetStrategy
    ) -> None:
        """Apply a reset result unless the partition moved on (re-seek, revoke, other reset)."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None:
                logger.debug("skipping reset of %s: no longer assigned", tp)
            elif not state.awaiting_reset:
                logger.debug("skipping reset of %s: no longer awaiting reset", tp)
            elif state.reset_strategy is not requested:
                logger.debug(
                    "skipping reset of %s: strategy changed from %s to %s",
                    tp,
                    requested,
                    state.reset_strategy,
                )
            else:
                state.seek_unvalidated(position)

    def position(self, tp: TopicPartition) -> FetchPosition | None:
        """The position of ``tp`` (None when unknown); raises when not assigned."""
        with self._lock:
            return self._assigned_state(tp).position

    def valid_position(self, tp: TopicPartition) -> FetchPosition | None:
        """The position only when it is valid (FETCHING)."""
        with self._lock:
            state = self._assigned_state(tp)
            return state.position if state.has_valid_position else None

    def set_position(self, tp: TopicPartition, position: FetchPosition) -> None:
        """Advance a valid position (the fetcher after returning records)."""
        with self._lock:
            self._assigned_state(tp).set_position(position)

    def has_valid_position(self, tp: TopicPartition) -> bool:
        """True when ``tp`` is assigned and FETCHING."""
        with self._lock:
            state = self._assignment.get(tp)
            return state is not None and state.has_valid_position

    def _unchanged_since(
        self, mark: tuple[int, dict[TopicPartition, TopicPartitionState]] | None
    ) -> bool:
        return (
            mark is not None
            and mark[0] == TopicPartitionState.last_transition
            and mark[1] is self._assignment
        )

    def has_all_fetch_positions(self) -> bool:
        """True when every assigned partition has a valid position."""
        with self._lock:
            if self._unchanged_since(self._all_fetching_at):
                return True
            mark = (TopicPartitionState.last_transition, self._assignment)
            if all(st.has_valid_position for st in self._assignment.values()):
                self._all_fetching_at = mark
                return True
            return False

    def all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Offsets to commit: the position of every partition with a valid position."""
        with self._lock:
            out: dict[TopicPartition, OffsetAndMetadata] = {}
            for tp, st in self._assignment.items():
                if st.has_valid_position and st.position is not None:
                    out[tp] = OffsetAndMetadata(st.position.offset, "", st.position.offset_epoch)
            return out

    def maybe_validate_position_for_current_leader(
        self, tp: TopicPartition, leader: LeaderAndEpoch, supports_validation: bool = True
    ) -> bool:
        """Point ``tp`` at ``leader``; True when the position now awaits validation.

        ``supports_validation`` False (the leader lacks OffsetForLeaderEpoch v3+) moves the
        position to the new leader without validation.
        """
        with self._lock:
            state = self._assigned_state(tp)
            if leader.leader is not None and not supports_validation:
                state.update_position_leader_no_validation(leader)
                return False
            return state.maybe_validate_position(leader)

    def maybe_complete_validation(
        self, tp: TopicPartition, request_position: FetchPosition, epoch_end_offset: EpochEndOffset
    ) -> LogTruncation | None:
        """Apply an OffsetForLeaderEpoch answer; a LogTruncation when no reset policy applies."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or not state.awaiting_validation:
                logger.debug("skipping validation of %s: not awaiting validation", tp)
                return None
            current = state.position
            if current != request_position:
                logger.debug(
                    "skipping validation of %s: position moved from %s to %s",
                    tp,
                    request_position,
                    current,
                )
                return None
            assert current is not None
            if (
                epoch_end_offset.end_offset == UNDEFINED_EPOCH_OFFSET
                or epoch_end_offset.leader_epoch == UNDEFINED_EPOCH
            ):
                if self.has_default_offset_reset_policy():
                    logger.info(
                        "leader has no epoch at or before %s for %s; resetting offset",
                        current.offset_epoch,
                        tp,
                    )
                    state.reset(self._default_reset_strategy)
                    return None
                logger.info(
                    "leader has no epoch at or before %s for %s and no reset policy",
                    current.offset_epoch,
                    tp,
                )
                return LogTruncation(tp, request_position, None)
            if epoch_end_offset.end_offset < current.offset:
                if self.has_default_offset_reset_policy():
                    new_pos = FetchPosition(
                        epoch_end_offset.end_offset,
                        epoch_end_offset.leader_epoch,
                        current.current_leader,
                    )
                    logger.info(
                        "truncation detected for %s at offset %d; resetting to the first "
                        "offset known to diverge, %d",
                        tp,
                        current.offset,
                        epoch_end_offset.end_offset,
                    )
                    state.seek_validated(new_pos)
                    return None
                logger.warning(
                    "truncation detected for %s at offset %d (leader end offset %d) "
                    "and no reset policy is set",
                    tp,
                    current.offset,
                    epoch_end_offset.end_offset,
                )
                return LogTruncation(
                    tp,
                    request_position,
                    OffsetAndMetadata(
                        epoch_end_offset.end_offset, "", epoch_end_offset.leader_epoch
                    ),
                )
            state.complete_validation()
            return None

    def awaiting_validation(self, tp: TopicPartition) -> bool:
        """True when ``tp`` is in AWAIT_VALIDATION."""
        with self._lock:
            return self._assigned_state(tp).awaiting_validation

    def complete_validation(self, tp: TopicPartition) -> None:
        """Mark the position of ``tp`` validated."""
        with self._lock:
            self._assigned_state(tp).complete_validation()

    # -- resets --------------------------------------------------------------------------
    @property
    def default_reset_strategy(self) -> OffsetResetStrategy:
        """The configured ``auto.offset.reset`` (as Java's ``defaultResetStrategy()``)."""
        return self._default_reset_strategy

    def has_default_offset_reset_policy(self) -> bool:
        """True unless ``auto.offset.reset`` is ``none``."""
        return self._default_reset_strategy is not OffsetResetStrategy.NONE

    def request_offset_reset(
        self,
        partitions: TopicPartition | Iterable[TopicPartition],
        strategy: OffsetResetStrategy | None = None,
    ) -> None:
        """Ask for ``partitions`` to be reset (default strategy when ``strategy`` is None)."""
        tps = [partitions] if isinstance(partitions, TopicPartition) else list(partitions)
        with self._lock:
            chosen = strategy if strategy is not None else self._default_reset_strategy
            for tp in tps:
                self._assigned_state(tp).reset(chosen)

    def is_offset_reset_needed(self, tp: TopicPartition) -> bool:
        """True when ``tp`` awaits a reset (Java's ``isOffsetResetNeeded``, kept as API of this
        class; the offset fetcher takes :meth:`partitions_needing_reset`)."""
        with self._lock:
            return self._assigned_state(tp).awaiting_reset

    def reset_strategy(self, tp: TopicPartition) -> OffsetResetStrategy | None:
        """The pending reset strategy of ``tp``."""
        with self._lock:
            return self._assigned_state(tp).reset_strategy

    def reset_strategies(
        self, partitions: Iterable[TopicPartition]
    ) -> list[tuple[TopicPartition, OffsetResetStrategy | None]]:
        """:meth:`reset_strategy` of each of ``partitions``, under one hold of the lock."""
        with self._lock:
            return [(tp, self._assigned_state(tp).reset_strategy) for tp in partitions]

    def initializing_partitions(self) -> list[TopicPartition]:
        """Partitions with neither a position nor a pending reset."""
        with self._lock:
            return [
                tp
                for tp, st in self._assignment.items()
                if st.fetch_state is FetchStates.INITIALIZING
            ]

    def reset_initializing_positions(
        self, include: Callable[[TopicPartition], bool] | None = None
    ) -> None:
        """Request the default reset for INITIALIZING partitions.

        Raises :class:`NoOffsetForPartitionError` naming them when the policy is ``none``.
        """
        with self._lock:
            # poll() asks on every network wakeup; the partitions only leave INITIALIZING.
            if include is None and self._unchanged_since(self._none_initializing_at):
                return
            mark = (TopicPartitionState.last_transition, self._assignment)
            missing: list[TopicPartition] = []
            initializing = False
            for tp, st in self._assignment.items():
                if st.fetch_state is not FetchStates.INITIALIZING:
                    continue
                initializing = True
                if include is not None and not include(tp):
                    continue
                if self._default_reset_strategy is OffsetResetStrategy.NONE:
                    missing.append(tp)
                else:
                    st.reset(self._default_reset_strategy)
            if not initializing:
                self._none_initializing_at = mark
            if missing:
                raise NoOffsetForPartitionError(missing)

    def _ready_after_backoff(
        self, awaiting: Callable[[TopicPartitionState], bool], now_ms: int
    ) -> tuple[list[TopicPartition], bool, int | None]:
        """Under ``_lock``: the partitions ``awaiting`` something and not in retry backoff,
        whether any awaits it, and the earliest end of a backoff among those that wait."""
        ready: list[TopicPartition] = []
        waiting = False
        earliest: int | None = None
        for tp, st in self._assignment.items():
            if not awaiting(st):
                continue
            waiting = True
            if st.awaiting_retry_backoff(now_ms):
                retry = st.next_retry_time_ms
                if retry is not None and (earliest is None or retry < earliest):
                    earliest = retry
            else:
                ready.append(tp)
        return ready, waiting, earliest

    def partitions_needing_reset(self, now_ms: int) -> list[TopicPartition]:
        """AWAIT_RESET partitions not in retry backoff."""
        with self._lock:
            # poll() asks on every network wakeup, also while the resets' answers are awaited
            # (every partition then backs off): the answer holds until a transition, a backoff
            # change or the earliest backoff's end.
            idle = self._no_reset_until
            if (
                idle is not None
                and self._unchanged_since(idle[0])
                and (idle[1] is None or now_ms < idle[1])
            ):
                return []
            mark = (TopicPartitionState.last_transition, self._assignment)
            ready, _, earliest = self._ready_after_backoff(lambda st: st.awaiting_reset, now_ms)
            if not ready:
                self._no_reset_until = (mark, earliest)
            return ready

    def partitions_needing_validation(self, now_ms: int) -> list[TopicPartition]:
        """AWAIT_VALIDATION partitions not in retry backoff."""
        with self._lock:
            if self._unchanged_since(self._none_validating_at):
                return []
            # As partitions_needing_reset: also while the validations' answers are awaited.
            idle = self._no_validation_until
            if (
                idle is not None
                and self._unchanged_since(idle[0])
                and (idle[1] is None or now_ms < idle[1])
            ):
                return []
            mark = (TopicPartitionState.last_transition, self._assignment)
            ready, waiting, earliest = self._ready_after_backoff(
                lambda st: st.awaiting_validation, now_ms
            )
            if not waiting:
                self._none_validating_at = mark
            elif not ready:
                self._no_validation_until = (mark, earliest)
            return ready

    def set_next_allowed_retry(self, partitions: Iterable[TopicPartition], next_ms: int) -> None:
        """Hold resets/validations of ``partitions`` until ``next_ms`` (request in flight)."""
        with self._lock:
            self._no_reset_until = self._no_validation_until = None
            for tp in partitions:
                state = self._assignment.get(tp)
                if state is not None:
                    state.next_retry_time_ms = next_ms

    def request_failed(self, partitions: Iterable[TopicPartition], next_retry_ms: int) -> None:
        """A reset or validation failed: back off until ``next_retry_ms``."""
        self.set_next_allowed_retry(partitions, next_retry_ms)

    # -- pause / revoke ------------------------------------------------------------------
    def pause(self, tp: TopicPartition) -> None:
        """Stop fetching ``tp`` (buffered data is kept)."""
        with self._lock:
            self._assigned_state(tp).paused = True
            self._flag_changes += 1

    def resume(self, tp: TopicPartition) -> None:
        """Fetch ``tp`` again."""
        with self._lock:
            self._assigned_state(tp).paused = False
            self._flag_changes += 1

    def set_fetch_end(self, tp: TopicPartition, end: int | None) -> None:
        """Fetch ``tp`` only below offset ``end`` (None: no end): a read of an offset range
        sends no fetch, and no prefetch, for what lies past it. Records already fetched past
        ``end`` are still handed out."""
        with self._lock:
            self._assigned_state(tp).fetch_end = end
            self._flag_changes += 1

    def is_paused(self, tp: TopicPartition) -> bool:
        """True when ``tp`` is assigned and paused."""
        with self._lock:
            state = self._assignment.get(tp)
            return state is not None and state.paused

    def paused_partitions(self) -> frozenset[TopicPartition]:
        """Every paused partition."""
        with self._lock:
            return frozenset(tp for tp, st in self._assignment.items() if st.paused)

    def mark_pending_revocation(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching partitions about to be revoked (cooperative rebalance)."""
        with self._lock:
            for tp in partitions:
                state = self._assignment.get(tp)
                if state is not None:
                    state.pending_revocation = True
            self._flag_changes += 1

    def clear_pending_revocation(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch these partitions again: a new assignment keeps them after all."""
        with self._lock:
            for tp in partitions:
                state = self._assignment.get(tp)
                if state is not None:
                    state.pending_revocation = False
            self._flag_changes += 1

    def fetchable_mark(self) -> tuple[int, int, int]:
        """A value that differs whenever any partition may have become fetchable or stopped
        being so (a fetch-state transition such as a seek or reset, a new assignment, pause,
        resume, pending revocation): equal marks mean the same partitions are fetchable from
        the same positions, except positions the fetcher itself advanced."""
        return (TopicPartitionState.last_transition, self._assignment_id, self._flag_changes)

    def is_fetchable(self, tp: TopicPartition) -> bool:
        """True when ``tp`` is assigned, positioned, not paused and not pending revocation."""
        state = self._assignment.get(tp)
        return state is not None and state.is_fetchable

    # -- broker offsets ------------------------------------------------------------------
    def update_high_watermark(self, tp: TopicPartition, value: int) -> None:
        """Cache the high watermark from a fetch."""
        state = self._assignment.get(tp)
        if state is not None:
            state.high_watermark = value
            state.end_offset_requested = False

    def update_log_start_offset(self, tp: TopicPartition, value: int) -> None:
        """Cache the log start offset from a fetch."""
        state = self._assignment.get(tp)
        if state is not None:
            state.log_start_offset = value

    def update_last_stable_offset(self, tp: TopicPartition, value: int) -> None:
        """Cache the last stable offset from a fetch."""
        state = self._assignment.get(tp)
        if state is not None:
            state.last_stable_offset = value

    def partition_lag(self, tp: TopicPartition, read_committed: bool = False) -> int | None:
        """End offset (LSO under read_committed, else HW) minus position; None when unknown."""
        with self._lock:
            state = self._assigned_state(tp)
            if state.position is None:
                return None
            end = state.last_stable_offset if read_committed else state.high_watermark
            return None if end is None else end - state.position.offset

    def partition_lead(self, tp: TopicPartition) -> int | None:
        """Position minus log start offset; None when unknown."""
        with self._lock:
            state = self._assigned_state(tp)
            if state.position is None or state.log_start_offset is None:
                return None
            return state.position.offset - state.log_start_offset

    def partition_lag_and_lead(
        self, tp: TopicPartition, read_committed: bool = False
    ) -> tuple[int | None, int | None]:
        """:meth:`partition_lag` and :meth:`partition_lead` read together, under one lock."""
        with self._lock:
            state = self._assigned_state(tp)
            position = state.position
            if position is None:
                return None, None
            end = state.last_stable_offset if read_committed else state.high_watermark
            start = state.log_start_offset
            return (
                None if end is None else end - position.offset,
                None if start is None else position.offset - start,
            )

    def partition_end_offset(self, tp: TopicPartition, read_committed: bool = False) -> int | None:
        """The cached end offset (LSO or HW)."""
        with self._lock:
            state = self._assigned_state(tp)
            return state.last_stable_offset if read_committed else state.high_watermark

    def request_partition_end_offset(self, tp: TopicPartition) -> None:
        """Remember that an end-offset lookup for ``tp`` was asked for."""
        with self._lock:
            self._assigned_state(tp).end_offset_requested = True

    def partition_end_offset_requested(self, tp: TopicPartition) -> bool:
        """True while an end-offset lookup for ``tp`` is outstanding."""
        with self._lock:
            return self._assigned_state(tp).end_offset_requested

    # -- preferred read replica (KIP-392) ------------------------------------------------
    def preferred_read_replica(self, tp: TopicPartition, now_ms: int) -> int | None:
        """The preferred read replica of ``tp`` unless it expired (then it is cleared)."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or state.preferred_read_replica is None:
                return None
            expire = state.preferred_read_replica_expire_ms
            if expire is not None and now_ms > expire:
                state.preferred_read_replica = None
                state.preferred_read_replica_expire_ms = None
                return None
            return state.preferred_read_replica

    def update_preferred_read_replica(
        self, tp: TopicPartition, replica_id: int, expire_ms: int
    ) -> None:
        """Fetch ``tp`` from ``replica_id`` until ``expire_ms``."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is not None:
                state.preferred_read_replica = replica_id
                state.preferred_read_replica_expire_ms = expire_ms

    def clear_preferred_read_replica(self, tp: TopicPartition) -> int | None:
        """Go back to the leader for ``tp``; returns the replica that was cleared."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None:
                return None
            previous = state.preferred_read_replica
            state.preferred_read_replica = None
            state.preferred_read_replica_expire_ms = None
            return previous

    def snapshot(self) -> Mapping[TopicPartition, TopicPartitionState]:
        """A shallow copy of the assignment map, for diagnostics and tests."""
        with self._lock:
            return dict(self._assignment)

    def __repr__(self) -> str:
        return (
            f"SubscriptionState(type={self._subscription_type.value}, "
            f"subscription={sorted(self._subscription)}, "
            f"assigned={len(self._assignment)})"
        )
