"""The cooperative sticky assignor (Java ``CooperativeStickyAssignor``) and the cooperative rule.

Under the COOPERATIVE protocol members keep consuming their partitions during a rebalance and
report them in ``Subscription.owned_partitions`` (with ``generation_id``). The assignment must
never hand a partition to a new member while another member still claims it: the owner first
revokes it (it sees the partition missing from its new assignment), then rejoins, and the
follow-up rebalance gives the partition to its new owner. :func:`adjust_for_cooperative` is that
"revoke first" step (Java's ``adjustAssignment``); :class:`CooperativeStickyAssignor` applies it
to its own result, and a coordinator may apply it to any COOPERATIVE assignor's output (it is
idempotent). :func:`validate_cooperative_assignment` is the leader-side safety check.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from kafkaconsumer.errors import IllegalStateError
from kafkaconsumer.internals.assignors.abstract import (
    PartitionRacks,
    PartitionsInput,
    RebalanceProtocol,
)
from kafkaconsumer.internals.assignors.sticky import AbstractStickyAssignor, MemberData
from kafkaconsumer.internals.consumer_protocol import DEFAULT_GENERATION, Assignment, Subscription
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "CooperativeStickyAssignor",
    "member_generation",
    "adjust_for_cooperative",
    "partitions_transferring_ownership",
    "validate_cooperative_assignment",
]

_I32 = struct.Struct(">i")


def member_generation(subscription: Subscription) -> int:
    """The generation a member's owned partitions belong to.

    ``generation_id`` of the Subscription (v2+), else the int32 the cooperative sticky assignor
    of older clients put in its user data, else -1.
    """
    if subscription.generation_id >= 0:
        return subscription.generation_id
    data = subscription.user_data
    if data is not None and len(data) >= 4:
        return int(_I32.unpack_from(data, 0)[0])
    return DEFAULT_GENERATION


def _current_claimants(
    subscriptions: Mapping[str, Subscription],
) -> dict[TopicPartition, tuple[int, list[str]]]:
    """Per partition: the highest generation claiming it and every member claiming it."""
    claims: dict[TopicPartition, dict[str, int]] = {}
    for m, sub in subscriptions.items():
        gen = member_generation(sub)
        for tp in sub.owned_partitions:
            claims.setdefault(TopicPartition(*tp), {})[m] = gen
    out: dict[TopicPartition, tuple[int, list[str]]] = {}
    for tp, by_member in claims.items():
        top = max(by_member.values())
        out[tp] = (top, sorted(by_member))
    return out


def _held_by_other(
    tp: TopicPartition,
    member: str,
    claims: Mapping[TopicPartition, tuple[int, list[str]]],
    subscriptions: Mapping[str, Subscription],
) -> bool:
    entry = claims.get(tp)
    if entry is None:
        return False
    top, claimants = entry
    if member in claimants and member_generation(subscriptions[member]) == top:
        # The new owner is a current owner: it keeps the partition unless another member ties
        # with it at the top generation (a conflict: both must let go first).
        return any(c != member and member_generation(subscriptions[c]) == top for c in claimants)
    # The member is not a current owner: anyone else still claiming it must revoke first,
    # even with an older generation (it may still be consuming).
    return any(c != member for c in claimants)


def partitions_transferring_ownership(
    assignments: Mapping[str, Assignment | Sequence[TopicPartition]],
    subscriptions: Mapping[str, Subscription],
) -> dict[TopicPartition, str]:
    """Partitions an assignment gives to a member while another still claims them.

    Returns ``{partition: member it was assigned to}``.
    """
    claims = _current_claimants(subscriptions)
    out: dict[TopicPartition, str] = {}
    for m, a in assignments.items():
        tps = a.partitions if isinstance(a, Assignment) else a
        for tp in tps:
            if _held_by_other(TopicPartition(*tp), m, claims, subscriptions):
                out[TopicPartition(*tp)] = m
    return out


def adjust_for_cooperative(
    assignments: Mapping[str, Assignment], subscriptions: Mapping[str, Subscription]
) -> dict[str, Assignment]:
    """Remove from each member the partitions another member still claims ("revoke first").

    The previous owner finds them missing from its own assignment, revokes them and rejoins;
    the next rebalance assigns them. Members absent from ``subscriptions`` are an error.
    """
    missing = set(assignments) - set(subscriptions)
    if missing:
        raise ValueError(f"assignments for members without a subscription: {sorted(missing)}")
    moving = partitions_transferring_ownership(assignments, subscriptions)
    if not moving:
        return dict(assignments)
    logger.info(
        "Cooperative rebalance: %d partition(s) will be revoked from their current owner "
        "before being reassigned: %s",
        len(moving),
        sorted(moving),
    )
    out: dict[str, Assignment] = {}
    for m, a in assignments.items():
        kept = tuple(tp for tp in a.partitions if moving.get(TopicPartition(*tp)) != m)
        out[m] = a if len(kept) == len(a.partitions) else Assignment(kept, a.user_data)
    return out


def validate_cooperative_assignment(
    assignments: Mapping[str, Assignment], subscriptions: Mapping[str, Subscription]
) -> None:
    """Raise IllegalStateError when an assignment moves a partition without revoking it first.

    The leader calls this on the output of a COOPERATIVE assignor (Java's
    ``validateCooperativeAssignment``).
    """
    moving = partitions_transferring_ownership(assignments, subscriptions)
    if moving:
        raise IllegalStateError(
            "Assignor supporting the COOPERATIVE protocol gave partitions to a new owner in the "
            f"same rebalance that revoked them: {sorted(moving)}"
        )


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Java ``CooperativeStickyAssignor`` (``"cooperative-sticky"``).

    Same balance and stickiness as :class:`~kafkaconsumer.internals.assignors.sticky.StickyAssignor`,
    with ownership taken from the Subscriptions' ``owned_partitions`` and ``generation_id``, and
    the result passed through :func:`adjust_for_cooperative`. The user data is the member's
    generation as an int32, for leaders running older clients that read it from there.

    Thread-safety: see :class:`~kafkaconsumer.internals.assignors.abstract.ConsumerPartitionAssignor`.
    """

    def __init__(self) -> None:
        """Start with no remembered generation (it is learnt in :meth:`on_assignment`)."""
        self._generation = DEFAULT_GENERATION

    #: The protocol name sent in JoinGroup.
    name = "cooperative-sticky"

    @property
    def supported_protocols(self) -> list[RebalanceProtocol]:
        """COOPERATIVE (preferred), and EAGER for groups that still run eager members."""
        return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """Remember the generation to report it in the next Subscription's user data."""
        self._generation = generation

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        """The last generation as a big-endian int32."""
        return _I32.pack(self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        """Owned partitions and generation straight from the Subscription."""
        return MemberData(
            partitions=tuple(subscription.owned_partitions),
            generation=member_generation(subscription),
            rack_id=subscription.rack_id,
        )

    def assign(
        self,
        cluster_partitions: PartitionsInput,
        subscriptions: Mapping[str, Subscription],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """Sticky assignment, minus partitions that must be revoked by their owner first."""
        raw = super().assign(cluster_partitions, subscriptions, partition_racks)
        return adjust_for_cooperative(raw, subscriptions)
