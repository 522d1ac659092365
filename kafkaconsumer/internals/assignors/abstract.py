"""The partition assignor interface (Java ``ConsumerPartitionAssignor`` / ``AbstractPartitionAssignor``).

The group leader runs one assignor over every member's :class:`Subscription` and the partitions
that exist, and sends each member its :class:`Assignment`. Assignors here are pure functions of
their inputs (plus, for the sticky ones, state remembered from the member's last assignment):
the same input always gives the same output.

Inputs of :meth:`ConsumerPartitionAssignor.assign`:

- ``cluster_partitions``: ``{topic: partition count}`` or ``{topic: [partition ids]}`` for
  the subscribed topics the leader knows. Topics missing from it, or with no partitions, are
  skipped (Java logs and skips them the same way).
- ``subscriptions``: ``{member_id: Subscription}`` (decoded JoinGroup metadata, with
  ``group_instance_id`` filled from the JoinGroup response).
- ``partition_racks``: optional ``{TopicPartition: {rack of each replica}}``; with member racks
  (``Subscription.rack_id``, v3) the range and sticky assignors prefer rack-local partitions
  (KIP-881).

Output: ``{member_id: Assignment}`` with an entry for every member, partitions sorted by
``(topic, partition)``.
"""

from __future__ import annotations

import abc
import enum
import logging
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from kafkaconsumer.internals.consumer_protocol import Assignment, Subscription
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "RebalanceProtocol",
    "ConsumerPartitionAssignor",
    "AbstractPartitionAssignor",
    "PartitionsInput",
    "PartitionRacks",
    "normalize_partitions",
    "prepare_assignment_inputs",
    "member_sort_key",
    "ordered_members",
    "use_rack_aware_assignment",
]

#: ``{topic: partition count}`` or ``{topic: partition ids}``.
PartitionsInput = Mapping[str, "int | Sequence[int]"]
#: ``{TopicPartition: racks of its replicas}``.
PartitionRacks = Mapping[TopicPartition, AbstractSet[str]]


class RebalanceProtocol(enum.IntEnum):
    """How members hand partitions over (Java ``ConsumerPartitionAssignor.RebalanceProtocol``).

    EAGER: every member revokes all its partitions before joining. COOPERATIVE: members keep
    their partitions across the rebalance and revoke only those the new assignment moves away;
    moved partitions reach their new owner in a follow-up rebalance.

    Thread-safety: an immutable enum.
    """

    EAGER = 0
    COOPERATIVE = 1


def normalize_partitions(cluster_partitions: PartitionsInput) -> dict[str, list[TopicPartition]]:
    """``{topic: sorted TopicPartitions}`` from counts or id lists; empty topics are dropped."""
    if not isinstance(cluster_partitions, Mapping):
        raise TypeError(
            "cluster_partitions must map topic -> partition count or partition ids, "
            f"got {type(cluster_partitions).__name__}"
        )
    out: dict[str, list[TopicPartition]] = {}
    for topic, spec in cluster_partitions.items():
        if not isinstance(topic, str):
            raise TypeError(f"topic names must be str, got {topic!r}")
        if isinstance(spec, bool):
            raise TypeError(f"partitions of {topic!r} must be a count or a list of ids, got bool")
        if isinstance(spec, int):
            if spec < 0:
                raise ValueError(f"partition count of {topic!r} must be >= 0, got {spec}")
            ids: list[int] = list(range(spec))
        else:
            ids = sorted(set(spec))
            for p in ids:
                if not isinstance(p, int) or isinstance(p, bool) or p < 0:
                    raise ValueError(f"partition ids of {topic!r} must be ints >= 0, got {p!r}")
        if ids:
            out[topic] = [TopicPartition(topic, p) for p in ids]
        else:
            logger.debug("Skipping assignment for topic %s: it has no partitions", topic)
    return out


def member_sort_key(member_id: str, subscription: Subscription) -> tuple[int, str, str]:
    """Java ``MemberInfo`` order: static members (by group instance id) first, then member id."""
    if subscription.group_instance_id is not None:
        return (0, subscription.group_instance_id, member_id)
    return (1, member_id, "")


def ordered_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """The member ids in Java ``MemberInfo`` order (see :func:`member_sort_key`)."""
    return sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m]))


def use_rack_aware_assignment(
    consumer_racks: AbstractSet[str],
    partition_racks: AbstractSet[str],
    racks_per_partition: Iterable[AbstractSet[str]],
) -> bool:
    """KIP-881's rule (Java ``useRackAwareAssignment``): use racks only when some consumer rack
    holds replicas, and not every partition has replicas on every rack (else any choice is
    equally local)."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    return not all(set(r) == set(partition_racks) for r in racks_per_partition)


def _check_subscriptions(subscriptions: Mapping[str, Subscription]) -> None:
    if not isinstance(subscriptions, Mapping):
        raise TypeError(
            f"subscriptions must map member id -> Subscription, got {type(subscriptions).__name__}"
        )
    for member_id, sub in subscriptions.items():
        if not isinstance(member_id, str):
            raise TypeError(f"member ids must be str, got {member_id!r}")
        if not isinstance(sub, Subscription):
            raise TypeError(
                f"subscription of {member_id!r} must be a Subscription, got {type(sub).__name__}"
            )


def prepare_assignment_inputs(
    cluster_partitions: PartitionsInput,
    subscriptions: Mapping[str, Subscription],
    partition_racks: PartitionRacks | None,
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, frozenset[str]]]:
    """Validate ``subscriptions`` and normalise the inputs every assignor starts from.

    Returns the partitions of the subscribed topics only (unknown topics were never in the map)
    and each partition's set of replica racks (empty rack names dropped).
    """
    _check_subscriptions(subscriptions)
    partitions = normalize_partitions(cluster_partitions)
    subscribed = {t for sub in subscriptions.values() for t in sub.topics}
    partitions = {t: ps for t, ps in partitions.items() if t in subscribed}
    racks: dict[TopicPartition, frozenset[str]] = {}
    if partition_racks:
        for tp, rs in partition_racks.items():
            racks[TopicPartition(*tp)] = frozenset(r for r in rs if r)
    return partitions, racks


class ConsumerPartitionAssignor(abc.ABC):
    """A partition assignment strategy the group leader runs (Java ``ConsumerPartitionAssignor``).

    Thread-safety: an assignor belongs to one consumer; the coordinator calls it from the thread
    that runs the rebalance (no internal locking).
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The protocol name sent in JoinGroup (``"range"``, ``"cooperative-sticky"``...)."""

    @property
    def supported_protocols(self) -> list[RebalanceProtocol]:
        """Rebalance protocols this assignor supports, preferred first (default EAGER only)."""
        return [RebalanceProtocol.EAGER]

    @property
    def version(self) -> int:
        """Version of the assignor's own user data format (Java ``version()``)."""
        return 0

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        """User data for this member's Subscription (None by default)."""
        return None

    @abc.abstractmethod
    def assign(
        self,
        cluster_partitions: PartitionsInput,
        subscriptions: Mapping[str, Subscription],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """Compute every member's Assignment (see the module docstring for the inputs)."""

    def on_assignment(self, assignment: Assignment, generation: int) -> None:  # noqa: B027
        """Called on every member (leader or not) with its assignment after SyncGroup.

        Optional hook: stateless assignors ignore it, so the default does nothing.
        """


class AbstractPartitionAssignor(ConsumerPartitionAssignor):
    """Base for assignors that need only partitions and subscriptions and send no user data.

    Subclasses implement :meth:`assign_partitions`; this class validates and normalises the
    inputs and wraps the result into sorted :class:`Assignment` objects, one per member.

    Thread-safety: see :class:`ConsumerPartitionAssignor`.
    """

    def assign(
        self,
        cluster_partitions: PartitionsInput,
        subscriptions: Mapping[str, Subscription],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """Validate inputs, run :meth:`assign_partitions`, wrap the result per member."""
        partitions, racks = prepare_assignment_inputs(
            cluster_partitions, subscriptions, partition_racks
        )
        raw = self.assign_partitions(partitions, subscriptions, racks)
        out: dict[str, Assignment] = {}
        for member_id in subscriptions:
            tps = raw.get(member_id, [])
            out[member_id] = Assignment(partitions=tuple(sorted(tps)))
        unknown = set(raw) - set(subscriptions)
        if unknown:
            raise ValueError(f"assignor {self.name} assigned to unknown members {sorted(unknown)}")
        return out

    @abc.abstractmethod
    def assign_partitions(
        self,
        partitions_per_topic: dict[str, list[TopicPartition]],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Mapping[TopicPartition, frozenset[str]],
    ) -> dict[str, list[TopicPartition]]:
        """Assign; ``partitions_per_topic`` holds only subscribed topics with partitions."""
