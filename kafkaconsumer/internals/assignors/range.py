"""The range assignor (Java ``RangeAssignor``), with KIP-881 rack awareness.

Per topic, partitions in numeric order are cut into contiguous ranges, one per subscribed member
in member order (static members by group instance id first, then member id); the first
``partitions % members`` members get one extra. Example: members C0, C1 and topics t0, t1 with
three partitions each give C0 = [t0-0, t0-1, t1-0, t1-1], C1 = [t0-2, t1-2].

Rack awareness (when members send racks, replica racks are known, and they are not all the
same): a first pass gives each member, within its per-topic quota, the partitions with a replica
on its rack; topics with the same partition count and the same subscribers stay co-partitioned
(partition i of all of them goes to one member). A second, plain range pass places the rest.
Per-topic balance is never traded for rack locality.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from kafkaconsumer.internals.assignors.abstract import (
    AbstractPartitionAssignor,
    ordered_members,
    use_rack_aware_assignment,
)
from kafkaconsumer.internals.consumer_protocol import Subscription
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["RangeAssignor"]


class _TopicState:
    """Per-topic bookkeeping of one range assignment.

    Thread-safety: not thread-safe; lives inside one ``assign`` call.
    """

    __slots__ = (
        "topic",
        "consumers",
        "consumer_racks",
        "partitions",
        "partition_racks",
        "unassigned",
        "assigned_count",
        "per_consumer",
        "extra_left",
        "needs_rack_aware",
    )

    def __init__(
        self,
        topic: str,
        partitions: list[TopicPartition],
        consumers: list[str],
        member_racks: Mapping[str, str],
        partition_racks: Mapping[TopicPartition, frozenset[str]],
    ) -> None:
        self.topic = topic
        self.consumers = consumers
        self.consumer_racks = {c: member_racks.get(c) for c in consumers}
        self.partitions = partitions
        # dict as an ordered set: ranges are cut in partition order.
        self.unassigned: dict[TopicPartition, None] = dict.fromkeys(partitions)
        self.assigned_count = {c: 0 for c in consumers}
        n = len(consumers)
        self.per_consumer = len(partitions) // n if n else 0
        self.extra_left = len(partitions) % n if n else 0
        all_consumer_racks = {r for r in self.consumer_racks.values() if r is not None}
        if all_consumer_racks:
            self.partition_racks = {tp: partition_racks.get(tp, frozenset()) for tp in partitions}
        else:
            self.partition_racks = {}
        all_partition_racks = {r for rs in self.partition_racks.values() for r in rs}
        self.needs_rack_aware = use_rack_aware_assignment(
            all_consumer_racks, all_partition_racks, self.partition_racks.values()
        )

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return True
        replica_racks = self.partition_racks.get(tp)
        return replica_racks is not None and rack in replica_racks

    def max_assignable(self, consumer: str) -> int:
        limit = self.per_consumer + (1 if self.extra_left > 0 else 0)
        return max(0, limit - self.assigned_count[consumer])

    def on_assigned(self, consumer: str, tps: list[TopicPartition]) -> None:
        count = self.assigned_count[consumer] + len(tps)
        self.assigned_count[consumer] = count
        if count > self.per_consumer:
            self.extra_left -= 1
        for tp in tps:
            del self.unassigned[tp]


class RangeAssignor(AbstractPartitionAssignor):
    """Contiguous per-topic ranges; the Java client's default first assignor.

    Thread-safety: stateless; safe to share.
    """

    #: The protocol name sent in JoinGroup.
    name = "range"

    def assign_partitions(
        self,
        partitions_per_topic: dict[str, list[TopicPartition]],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Mapping[TopicPartition, frozenset[str]],
    ) -> dict[str, list[TopicPartition]]:
        """Range-assign each topic among its subscribers (rack-aware when it applies)."""
        ordered = ordered_members(subscriptions)
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
        member_racks = {m: s.rack_id for m, s in subscriptions.items() if s.rack_id}
        states: list[_TopicState] = []
        for topic in sorted(partitions_per_topic):
            consumers = [m for m in ordered if topic in subscriptions[m].topics]
            if not consumers:
                continue
            states.append(
                _TopicState(
                    topic, partitions_per_topic[topic], consumers, member_racks, partition_racks
                )
            )

        if any(s.needs_rack_aware for s in states):
            self._assign_with_rack_matching(states, assignment)
        for state in states:
            self._assign_ranges(state, lambda c, tp: True, assignment)
        return assignment

    @staticmethod
    def _assign(
        consumer: str,
        tps: list[TopicPartition],
        state: _TopicState,
        assignment: dict[str, list[TopicPartition]],
    ) -> None:
        assignment[consumer].extend(tps)
        state.on_assigned(consumer, tps)

    def _assign_ranges(
        self,
        state: _TopicState,
        may_assign: Callable[[str, TopicPartition], bool],
        assignment: dict[str, list[TopicPartition]],
    ) -> None:
        for consumer in state.consumers:
            if not state.unassigned:
                break
            limit = state.max_assignable(consumer)
            if limit <= 0:
                continue
            chosen: list[TopicPartition] = []
            for tp in state.unassigned:
                if len(chosen) >= limit:
                    break
                if may_assign(consumer, tp):
                    chosen.append(tp)
            if chosen:
                self._assign(consumer, chosen, state, assignment)

    def _assign_with_rack_matching(
        self, states: list[_TopicState], assignment: dict[str, list[TopicPartition]]
    ) -> None:
        # Group topics by (subscribers, partition count): such topics are co-partitioned and
        # partition i of each must go to the same member.
        groups: dict[tuple[tuple[str, ...], int], list[_TopicState]] = {}
        for s in states:
            groups.setdefault((tuple(s.consumers), len(s.partitions)), []).append(s)
        for (consumers, num_partitions), group in groups.items():
            if len(group) > 1:
                self._assign_co_partitioned(list(consumers), num_partitions, group, assignment)
            elif group[0].needs_rack_aware:
                state = group[0]
                self._assign_ranges(state, state.racks_match, assignment)

    def _assign_co_partitioned(
        self,
        consumers: list[str],
        num_partitions: int,
        group: list[_TopicState],
        assignment: dict[str, list[TopicPartition]],
    ) -> None:
        remaining = list(consumers)
        for i in range(num_partitions):
            match = None
            for c in remaining:
                if all(
                    s.racks_match(c, s.partitions[i]) and s.max_assignable(c) > 0 for s in group
                ):
                    match = c
                    break
            if match is None:
                continue
            for s in group:
                self._assign(match, [s.partitions[i]], s, assignment)
            if all(s.max_assignable(match) == 0 for s in group):
                remaining.remove(match)
                if not remaining:
                    break
