"""Membership of a KIP-848 consumer group (``group.protocol=consumer``), Java's ``ConsumerMembershipManager``.

The broker runs the assignment; the member only heartbeats (ConsumerGroupHeartbeat, API 68)
with its subscription and the partitions it owns, and reconciles towards the target assignment
the broker returns. This module is the member's state machine and heartbeat content, without
I/O: :class:`~kafkaconsumer.internals.group.consumer_heartbeat_request_manager.ConsumerHeartbeatRequestManager`
sends what :meth:`ConsumerMembershipManager.build_heartbeat` returns (on the heartbeat thread)
and the consumer coordinator reconciles on the user's thread in ``poll()``.

States (Java's ``MemberState``)::

    UNSUBSCRIBED -> JOINING (epoch 0) -> RECONCILING (new target) -> ACKNOWLEDGING (callbacks ran,
    next heartbeat reports the owned partitions) -> STABLE
    FENCED (FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: release partitions as lost, rejoin epoch 0)
    PREPARE_LEAVING -> LEAVING (epoch -1, or -2 for a static member) -> UNSUBSCRIBED
    STALE (max.poll.interval.ms expired: left the group; the next poll() rejoins)
    FATAL (an error the member cannot recover from; raised by the next poll())

Heartbeats are full (every field) when joining and after any error, and deltas otherwise: a
field is sent only when it changed since the last heartbeat the broker answered (null means
"unchanged", as the protocol defines).
"""

from __future__ import annotations

import base64
import enum
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkaconsumer.structs import TopicPartition

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import ConsumerGroupHeartbeatResponse

logger = logging.getLogger(__name__)

__all__ = [
    "ConsumerMemberState",
    "ConsumerMembershipManager",
    "HeartbeatFields",
    "JOIN_GROUP_EPOCH",
    "LEAVE_GROUP_EPOCH",
    "LEAVE_GROUP_STATIC_EPOCH",
]

#: Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
JOIN_GROUP_EPOCH = 0
LEAVE_GROUP_EPOCH = -1
LEAVE_GROUP_STATIC_EPOCH = -2


class ConsumerMemberState(enum.Enum):
    """Java's ``MemberState`` for the consumer protocol.

    Thread-safety: immutable enum values; the manager's field holding one is guarded by the
    coordinator lock.
    """

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    STALE = "STALE"
    FATAL = "FATAL"

    def in_group(self) -> bool:
        """True while the member holds a valid epoch (commits may carry it)."""
        return self in (
            ConsumerMemberState.RECONCILING,
            ConsumerMemberState.ACKNOWLEDGING,
            ConsumerMemberState.STABLE,
        )


def new_member_id() -> str:
    """A member id of our own (KIP-1082, ConsumerGroupHeartbeat v1): a random UUID, base64url."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class HeartbeatFields:
    """What the member last told the broker, to send deltas (None = never sent).

    Thread-safety: immutable.
    """

    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: frozenset[tuple[uuid.UUID, int]] | None = None


class ConsumerMembershipManager:
    """The member's state, epoch, assignment and heartbeat content (no I/O).

    Thread-safety: not thread-safe by itself; every call is made with its member's group lock held
    (the heartbeat thread builds requests and handles answers, the user's thread reconciles).
    """

    def __init__(
        self,
        group_id: str,
        *,
        group_instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        server_assignor: str | None,
    ) -> None:
        """An unsubscribed member with an id of its own (kept for the consumer's lifetime)."""
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.rack_id = rack_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.member_id = new_member_id()  # guarded by the member's group lock, as below
        self.member_epoch = JOIN_GROUP_EPOCH
        self.state = ConsumerMemberState.UNSUBSCRIBED
        #: The partitions this member owns (acknowledged or being acknowledged), by topic id.
        self.current: dict[uuid.UUID, frozenset[int]] = {}
        #: The latest target assignment from the broker (None: none received since joining).
        self.target: dict[uuid.UUID, frozenset[int]] | None = None
        self.heartbeat_interval_ms = 0
        self.sent: HeartbeatFields | None = None
        self.fatal_error: BaseException | None = None
        #: The owned set the last heartbeat in flight reported (to move ACKNOWLEDGING -> STABLE).
        self._in_flight_owned: frozenset[tuple[uuid.UUID, int]] | None = None

    # ----------------------------------------------------------------------- transitions
    def transition_to_joining(self) -> None:
        """Subscribe (or rejoin): epoch 0, a full heartbeat, nothing owned."""
        logger.info("group %s: member %s joining with epoch 0", self.group_id, self.member_id)
        self.state = ConsumerMemberState.JOINING
        self.member_epoch = JOIN_GROUP_EPOCH
        self.current = {}
        self.target = None
        self.sent = None

    def transition_to_fenced(self) -> None:
        """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the user's thread releases everything as lost."""
        if self.state in (
            ConsumerMemberState.LEAVING,
            ConsumerMemberState.UNSUBSCRIBED,
            ConsumerMemberState.FATAL,
            ConsumerMemberState.STALE,
        ):
            return
        logger.info(
            "group %s: member %s fenced at epoch %d; releasing its partitions as lost and "
            "rejoining",
            self.group_id,
            self.member_id,
            self.member_epoch,
        )
        self.state = ConsumerMemberState.FENCED
        self.sent = None

    def transition_to_stale(self) -> None:
        """max.poll.interval.ms expired and the leave heartbeat went out."""
        self.state = ConsumerMemberState.STALE
        self.member_epoch = JOIN_GROUP_EPOCH
        self.target = None
        self.sent = None

    def transition_to_leaving(self) -> int:
        """Leave: returns the epoch to send (-1, or -2 for a static member that will rejoin)."""
        self.state = ConsumerMemberState.LEAVING
        return LEAVE_GROUP_STATIC_EPOCH if self.group_instance_id is not None else LEAVE_GROUP_EPOCH

    def transition_to_unsubscribed(self) -> None:
        """Left the group (or never joined)."""
        self.state = ConsumerMemberState.UNSUBSCRIBED
        self.member_epoch = JOIN_GROUP_EPOCH
        self.current = {}
        self.target = None
        self.sent = None

    def transition_to_fatal(self, error: BaseException) -> None:
        """An unrecoverable error: the next poll() raises it."""
        self.state = ConsumerMemberState.FATAL
        self.fatal_error = error
        self.sent = None

    def on_heartbeat_failure(self) -> None:
        """A heartbeat failed (retriable or not): the next one is full."""
        self.sent = None
        self._in_flight_owned = None

    # ----------------------------------------------------------------------- heartbeat
    def sends_heartbeats(self) -> bool:
        """True in the states where the heartbeat thread keeps the membership alive."""
        return self.state in (
            ConsumerMemberState.JOINING,
            ConsumerMemberState.RECONCILING,
            ConsumerMemberState.ACKNOWLEDGING,
            ConsumerMemberState.STABLE,
        )

    def owned_set(self) -> frozenset[tuple[uuid.UUID, int]]:
        """The owned partitions as ``(topic id, partition)`` pairs."""
        return frozenset((tid, p) for tid, parts in self.current.items() for p in parts)

    def build_heartbeat(self, topics: Iterable[str] | None, regex: str | None) -> dict[str, Any]:
        """The next heartbeat body: full after joining or an error, else only what changed.

        ``topics``: the subscribed names (None with a broker-side regex); ``regex``: the
        broker-side pattern (None otherwise).
        """
        sent = self.sent
        full = sent is None or self.member_epoch == JOIN_GROUP_EPOCH
        names = tuple(sorted(topics)) if topics is not None else None
        owned = self.owned_set()
        body: dict[str, Any] = {
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": self.member_epoch,
        }
        new = HeartbeatFields(
            self.group_instance_id,
            self.rack_id,
            self.rebalance_timeout_ms,
            names,
            regex,
            self.server_assignor,
            owned,
        )
        if full or sent is None:
            body.update(
                instance_id=self.group_instance_id,
                rack_id=self.rack_id,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                subscribed_topic_names=list(names) if names is not None else None,
                subscribed_topic_regex=regex,
                server_assignor=self.server_assignor,
                topic_partitions=_owned_body(self.current),
            )
            if names is None and regex is None:
                body["subscribed_topic_names"] = []
        else:
            if new.instance_id != sent.instance_id:
                body["instance_id"] = new.instance_id
            if new.rack_id != sent.rack_id:
                body["rack_id"] = new.rack_id
            if new.rebalance_timeout_ms != sent.rebalance_timeout_ms:
                body["rebalance_timeout_ms"] = new.rebalance_timeout_ms
            if names != sent.subscribed_topic_names:
                # Moving to a broker-side regex clears the names the broker holds ([]).
                body["subscribed_topic_names"] = list(names) if names is not None else []
            if regex != sent.subscribed_topic_regex:
                # An empty regex clears the one the broker holds (as the Java client sends).
                body["subscribed_topic_regex"] = regex if regex is not None else ""
            if new.server_assignor != sent.server_assignor:
                body["server_assignor"] = new.server_assignor
            if owned != sent.owned:
                body["topic_partitions"] = _owned_body(self.current)
        self.sent = new
        self._in_flight_owned = owned
        return body

    def build_leave_heartbeat(self, epoch: int) -> dict[str, Any]:
        """The leave heartbeat (epoch -1, or -2 for a static member)."""
        return {
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": epoch,
            "instance_id": self.group_instance_id,
        }

    def on_heartbeat_success(self, response: ConsumerGroupHeartbeatResponse) -> bool:
        """Apply an answer; True when a new target assignment needs reconciling."""
        if self.state not in (
            ConsumerMemberState.JOINING,
            ConsumerMemberState.RECONCILING,
            ConsumerMemberState.ACKNOWLEDGING,
            ConsumerMemberState.STABLE,
        ):
            # Answered after the member left, was fenced or went stale: nothing to apply.
            logger.debug(
                "group %s: ignoring a heartbeat answer in state %s", self.group_id, self.state.value
            )
            return False
        member_id = response.get("member_id")
        if member_id:
            self.member_id = str(member_id)
        self.member_epoch = int(response.get("member_epoch", self.member_epoch))
        interval = int(response.get("heartbeat_interval_ms", 0) or 0)
        if interval > 0:
            self.heartbeat_interval_ms = interval
        acked = self._in_flight_owned
        self._in_flight_owned = None
        if self.state is ConsumerMemberState.ACKNOWLEDGING and acked == self.owned_set():
            self.state = ConsumerMemberState.STABLE
        assignment = response.get("assignment")
        if assignment is not None:
            target: dict[uuid.UUID, frozenset[int]] = {}
            for entry in assignment.get("topic_partitions") or []:
                parts = frozenset(int(p) for p in entry.get("partitions") or [])
                if parts:
                    target[entry["topic_id"]] = parts
            self.target = target
        if self.target is not None and self.target != self.current:
            if self.state is not ConsumerMemberState.RECONCILING:
                self.state = ConsumerMemberState.RECONCILING
            return True
        if self.state is ConsumerMemberState.JOINING and self.target is not None:
            # The target is what we own (nothing): acknowledge it.
            self.state = ConsumerMemberState.ACKNOWLEDGING
        return False

    def complete_reconciliation(self, owned: dict[uuid.UUID, frozenset[int]]) -> None:
        """The user's thread applied (part of) the target: report it in the next heartbeat."""
        self.current = {tid: parts for tid, parts in owned.items() if parts}
        if self.state is ConsumerMemberState.RECONCILING:
            self.state = ConsumerMemberState.ACKNOWLEDGING

    def reconciliation_pending(self) -> bool:
        """True when the user's thread has a target to apply."""
        return (
            self.state is ConsumerMemberState.RECONCILING
            and self.target is not None
            and self.target != self.current
        )


def _owned_body(current: Mapping[uuid.UUID, frozenset[int]]) -> list[dict[str, Any]]:
    return [
        {"topic_id": tid, "partitions": sorted(parts)}
        for tid, parts in sorted(current.items(), key=lambda kv: str(kv[0]))
    ]


def resolve(
    assignment: Mapping[uuid.UUID, frozenset[int]], names: Mapping[uuid.UUID, str]
) -> tuple[set[TopicPartition], dict[uuid.UUID, frozenset[int]]]:
    """Split a target by topic id into partitions whose topic name is known, and the rest."""
    resolved: set[TopicPartition] = set()
    unresolved: dict[uuid.UUID, frozenset[int]] = {}
    for tid, parts in assignment.items():
        name = names.get(tid)
        if name is None:
            unresolved[tid] = parts
        else:
            resolved.update(TopicPartition(name, p) for p in parts)
    return resolved, unresolved
