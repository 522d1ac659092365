"""The round-robin assignor (Java ``RoundRobinAssignor``).

All partitions of all subscribed topics, sorted by (topic, partition), are dealt one by one to
the members in member order (static members by group instance id first, then member id),
skipping members not subscribed to the partition's topic. With identical subscriptions the
counts differ by at most one. Example: C0, C1 and t0, t1 with three partitions each give
C0 = [t0-0, t0-2, t1-1], C1 = [t0-1, t1-0, t1-2].
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafkaconsumer.internals.assignors.abstract import AbstractPartitionAssignor, ordered_members
from kafkaconsumer.internals.consumer_protocol import Subscription
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(AbstractPartitionAssignor):
    """Deal partitions round-robin over the members.

    Thread-safety: stateless; safe to share.
    """

    #: The protocol name sent in JoinGroup.
    name = "roundrobin"

    def assign_partitions(
        self,
        partitions_per_topic: dict[str, list[TopicPartition]],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Mapping[TopicPartition, frozenset[str]],
    ) -> dict[str, list[TopicPartition]]:
        """Deal every partition to the next subscribed member in circular member order."""
        members = ordered_members(subscriptions)
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
        if not members:
            return assignment
        topic_sets = {m: frozenset(subscriptions[m].topics) for m in members}
        cursor = 0
        n = len(members)
        for topic in sorted(partitions_per_topic):
            if not any(topic in topic_sets[m] for m in members):
                continue
            for tp in partitions_per_topic[topic]:
                # At least one member takes this topic, so the scan ends within n steps.
                while topic not in topic_sets[members[cursor]]:
                    cursor = (cursor + 1) % n
                assignment[members[cursor]].append(tp)
                cursor = (cursor + 1) % n
        return assignment
