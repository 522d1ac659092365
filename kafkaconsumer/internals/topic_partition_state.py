"""One assigned partition's state and the values it is made of (Java's
``SubscriptionState.TopicPartitionState``, ``FetchPosition``, ``FetchStates`` and
``LogTruncation``, with ``OffsetResetStrategy`` and ``Metadata.LeaderAndEpoch``).

A partition's fetch state moves through INITIALIZING -> (AWAIT_RESET | AWAIT_VALIDATION) ->
FETCHING; :class:`~kafkaconsumer.internals.subscription_state.SubscriptionState` owns every
:class:`TopicPartitionState` and guards it with its lock.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from kafkaconsumer.config.auto_offset_reset import BY_DURATION_PREFIX, reset_duration_ns
from kafkaconsumer.errors import IllegalStateError
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kafkaconsumer.internals.interfaces import ClusterView

__all__ = [
    "SubscriptionType",
    "OffsetResetStrategy",
    "FetchStates",
    "LeaderAndEpoch",
    "FetchPosition",
    "EpochEndOffset",
    "LogTruncation",
    "TopicPartitionState",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "current_leader",
]

#: Sentinels used by OffsetForLeaderEpoch responses when the broker knows no such epoch.
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

# Every fetch-state transition stores a fresh number from this counter (next() is atomic under
# the GIL) in TopicPartitionState.last_transition: a number seen before a transition is never
# seen again after it, so "same number, same assignment dict" means "no partition changed
# state", and poll() can skip its per-partition walks (flat cost from 8 to 1000 partitions).
_TRANSITIONS = itertools.count(1)


class SubscriptionType(enum.Enum):
    """How partitions reach this consumer: not at all, by topic list, by pattern, or by hand.

    Thread-safety: an immutable enum.
    """

    NONE = "NONE"
    AUTO_TOPICS = "AUTO_TOPICS"
    AUTO_PATTERN = "AUTO_PATTERN"
    USER_ASSIGNED = "USER_ASSIGNED"


class OffsetResetStrategy(enum.Enum):
    """``auto.offset.reset``: where to start when there is no valid position.

    Thread-safety: an immutable enum.
    """

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"
    #: ``by_duration:<ISO-8601 duration>`` (KIP-1106): its duration is the subscription state's.
    BY_DURATION = "by_duration"

    @classmethod
    def parse(cls, value: str | OffsetResetStrategy) -> OffsetResetStrategy:
        """Accept the config string (any case; ``by_duration:<duration>``) or a member; raise
        ``ValueError`` otherwise."""
        if isinstance(value, OffsetResetStrategy):
            return value
        if isinstance(value, str):
            if value.startswith(BY_DURATION_PREFIX):
                reset_duration_ns(value)  # ValueError when it does not parse
                return cls.BY_DURATION
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        raise ValueError(
            "auto.offset.reset must be one of earliest, latest, none or by_duration:<duration>; "
            f"got {value!r}"
        )


class FetchStates(enum.Enum):
    """The per-partition fetch state machine.

    Thread-safety: an immutable enum.
    """

    INITIALIZING = "INITIALIZING"
    FETCHING = "FETCHING"
    AWAIT_RESET = "AWAIT_RESET"
    AWAIT_VALIDATION = "AWAIT_VALIDATION"

    # Members are singletons compared by identity: hashing by identity (in C) keeps the
    # transition table's lookups, made four times per partition as a consumer starts, off
    # Enum's Python-level __hash__.
    __hash__ = object.__hash__

    @property
    def requires_position(self) -> bool:
        """States that must carry a position."""
        return self in _REQUIRES_POSITION


_REQUIRES_POSITION = frozenset({FetchStates.FETCHING, FetchStates.AWAIT_VALIDATION})


_VALID_TRANSITIONS: dict[FetchStates, frozenset[FetchStates]] = {
    FetchStates.INITIALIZING: frozenset(
        {FetchStates.FETCHING, FetchStates.AWAIT_RESET, FetchStates.AWAIT_VALIDATION}
    ),
    FetchStates.FETCHING: frozenset(
        {FetchStates.FETCHING, FetchStates.AWAIT_RESET, FetchStates.AWAIT_VALIDATION}
    ),
    FetchStates.AWAIT_RESET: frozenset({FetchStates.FETCHING, FetchStates.AWAIT_RESET}),
    FetchStates.AWAIT_VALIDATION: frozenset(
        {FetchStates.FETCHING, FetchStates.AWAIT_RESET, FetchStates.AWAIT_VALIDATION}
    ),
}


class LeaderAndEpoch(NamedTuple):
    """The leader node id and leader epoch of a partition as metadata last reported them.

    Thread-safety: immutable (a NamedTuple).
    """

    leader: int | None = None
    epoch: int | None = None


_NO_LEADER = LeaderAndEpoch(None, None)


def current_leader(cluster: ClusterView, tp: TopicPartition) -> LeaderAndEpoch:
    """The leader of ``tp`` and its epoch in the metadata snapshot ``cluster`` (None for
    either when unknown or negative).
    """
    leader = cluster.leader_for(tp)
    if leader is not None and leader < 0:
        leader = None
    epoch = cluster.leader_epoch(tp)
    if epoch is not None and epoch < 0:
        epoch = None
    return LeaderAndEpoch(leader, epoch)


class FetchPosition(NamedTuple):
    """The next offset to fetch, the epoch of the record before it, and the leader to ask.

    Thread-safety: immutable (a NamedTuple).
    """

    offset: int
    offset_epoch: int | None = None
    current_leader: LeaderAndEpoch = _NO_LEADER


class EpochEndOffset(NamedTuple):
    """One partition of an OffsetForLeaderEpoch answer.

    Thread-safety: immutable (a NamedTuple).
    """

    leader_epoch: int
    end_offset: int


class LogTruncation(NamedTuple):
    """A truncation detected while validating a position and not resolved by a reset policy.

    Thread-safety: immutable (a NamedTuple).
    """

    topic_partition: TopicPartition
    fetch_position: FetchPosition
    divergent_offset: OffsetAndMetadata | None


class TopicPartitionState:
    """State of one assigned partition: fetch state, position, paused flag and broker offsets.

    Thread-safety: guarded by the owning ``SubscriptionState._lock``; never shared alone. The
    broker offsets (high watermark, log start, last stable) are also stored without it by the
    fetch path (``SubscriptionState.update_high_watermark`` and its siblings: one attribute
    store each).
    """

    __slots__ = (
        "fetch_state",
        "position",
        "high_watermark",
        "log_start_offset",
        "last_stable_offset",
        "paused",
        "fetch_end",
        "pending_revocation",
        "reset_strategy",
        "next_retry_time_ms",
        "preferred_read_replica",
        "preferred_read_replica_expire_ms",
        "end_offset_requested",
        "transitioned_at",
    )

    #: The number of the latest transition of any partition's fetch state (see _TRANSITIONS).
    last_transition: ClassVar[int] = 0

    def __init__(self) -> None:
        """Start in the INITIALIZING state with no position."""
        # Guarded by the owning SubscriptionState._lock, unless marked.
        self.fetch_state = FetchStates.INITIALIZING  # subscriptions lock
        self.position: FetchPosition | None = None  # subscriptions lock
        self.high_watermark: int | None = None  # also stored lock-free by the fetch path
        self.log_start_offset: int | None = None  # also stored lock-free by the fetch path
        self.last_stable_offset: int | None = None  # also stored lock-free by the fetch path
        self.paused = False  # subscriptions lock
        #: No fetch reads from this offset on (a bounded read's end; None: no end).
        self.fetch_end: int | None = None  # subscriptions lock
        self.pending_revocation = False  # subscriptions lock
        self.reset_strategy: OffsetResetStrategy | None = None  # subscriptions lock
        self.next_retry_time_ms: int | None = None  # subscriptions lock
        self.preferred_read_replica: int | None = None  # subscriptions lock
        self.preferred_read_replica_expire_ms: int | None = None  # subscriptions lock
        self.end_offset_requested = False  # subscriptions lock; also cleared lock-free
        #: The number (see _TRANSITIONS) of this partition's latest fetch-state transition.
        self.transitioned_at = 0

    def _transition(
        self,
        new_state: FetchStates,
        position: FetchPosition | None = None,
        on_transition: Callable[[], None] | None = None,
    ) -> bool:
        # Invalid transitions are ignored (as Java does), e.g. AWAIT_RESET -> AWAIT_VALIDATION
        # when a metadata update races a pending reset.
        if new_state not in _VALID_TRANSITIONS[self.fetch_state]:
            return False
        self.fetch_state = new_state
        TopicPartitionState.last_transition = self.transitioned_at = next(_TRANSITIONS)
        if position is not None:
            self.position = position
        if on_transition is not None:
            on_transition()
        if new_state in _REQUIRES_POSITION:
            if self.position is None:
                raise IllegalStateError(f"transitioned to {new_state.value} without a position")
        else:
            self.position = None
        return True

    # -- queries -------------------------------------------------------------------------
    @property
    def has_valid_position(self) -> bool:
        """True in FETCHING."""
        return self.fetch_state is FetchStates.FETCHING

    @property
    def awaiting_reset(self) -> bool:
        """True in AWAIT_RESET."""
        return self.fetch_state is FetchStates.AWAIT_RESET

    @property
    def awaiting_validation(self) -> bool:
        """True in AWAIT_VALIDATION."""
        return self.fetch_state is FetchStates.AWAIT_VALIDATION

    def awaiting_retry_backoff(self, now_ms: int) -> bool:
        """True while a failed reset or validation must not be retried yet."""
        return self.next_retry_time_ms is not None and now_ms < self.next_retry_time_ms

    @property
    def is_fetchable(self) -> bool:
        """Fetch only positioned, unpaused partitions that are not about to be revoked."""
        return (
            not self.paused
            and not self.pending_revocation
            and self.fetch_state is FetchStates.FETCHING
        )

    # -- transitions ---------------------------------------------------------------------
    def reset(self, strategy: OffsetResetStrategy) -> None:
        """Enter AWAIT_RESET with ``strategy``."""

        def apply() -> None:
            self.reset_strategy = strategy
            self.next_retry_time_ms = None

        self._transition(FetchStates.AWAIT_RESET, on_transition=apply)

    def seek_validated(self, position: FetchPosition) -> None:
        """Take ``position`` as valid and start fetching from it."""

        def apply() -> None:
            self.reset_strategy = None
            self.next_retry_time_ms = None

        self._transition(FetchStates.FETCHING, position, apply)

    def seek_unvalidated(self, position: FetchPosition) -> None:
        """Take ``position`` and validate it against the leader epoch when it has one."""
        self.seek_validated(position)
        self._validate_position(position)

    def _validate_position(self, position: FetchPosition) -> None:
        if position.offset_epoch is not None and position.current_leader.epoch is not None:

            def clear_retry() -> None:
                self.next_retry_time_ms = None

            self._transition(FetchStates.AWAIT_VALIDATION, position, clear_retry)
        else:
            # Without an epoch there is nothing to validate against.
            self._transition(FetchStates.FETCHING, position)

    def maybe_validate_position(self, current: LeaderAndEpoch) -> bool:
        """Re-point the position at a new leader; True when validation is now needed."""
        if self.fetch_state is FetchStates.AWAIT_RESET or current.leader is None:
            return False
        if self.position is not None and self.position.current_leader != current:
            self._validate_position(self.position._replace(current_leader=current))
            self.preferred_read_replica = None
            self.preferred_read_replica_expire_ms = None
        return self.fetch_state is FetchStates.AWAIT_VALIDATION

    def update_position_leader_no_validation(self, current: LeaderAndEpoch) -> None:
        """Re-point the position at a new leader that cannot validate (old broker)."""
        if self.position is not None:
            self._transition(FetchStates.FETCHING, self.position._replace(current_leader=current))

    def complete_validation(self) -> None:
        """AWAIT_VALIDATION -> FETCHING."""
        if self.fetch_state is FetchStates.AWAIT_VALIDATION:
            self._transition(FetchStates.FETCHING)

    def set_position(self, position: FetchPosition) -> None:
        """Advance the position of a FETCHING partition (after records were returned)."""
        if not self.has_valid_position:
            raise IllegalStateError("cannot set a new position without a valid current position")
        self.position = position
