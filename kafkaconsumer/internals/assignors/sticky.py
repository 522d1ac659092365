"""Sticky assignment (Java ``AbstractStickyAssignor`` and ``StickyAssignor``).

Goals, in order: (1) balance: with identical subscriptions member counts differ by at most one;
otherwise no partition could move to an eligible member holding at least two fewer; (2)
stickiness: a member keeps the partitions it owned as far as balance allows; (3) rack locality
(KIP-881) for partitions that move, when racks are known and matter.

Previous ownership comes from :meth:`AbstractStickyAssignor.member_data`: the eager
:class:`StickyAssignor` reads it from its own user data (the member's last assignment and
generation, as Java encodes it); the cooperative assignor reads ``owned_partitions`` and
``generation_id`` of the Subscription. When several members claim one partition, the claim with
the highest generation wins; a tie at the highest generation is a conflict and nobody keeps the
partition (Java's rule).

The algorithm is our own: an exact quota fill when all subscriptions are equal, a greedy fill
(partitions with the fewest eligible members first) followed by single-partition moves until
balanced otherwise.
"""

from __future__ import annotations

import abc
import logging
import struct
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from kafkaconsumer.internals.assignors.abstract import (
    ConsumerPartitionAssignor,
    PartitionRacks,
    PartitionsInput,
    member_sort_key,
    prepare_assignment_inputs,
    use_rack_aware_assignment,
)
from kafkaconsumer.internals.consumer_protocol import DEFAULT_GENERATION, Assignment, Subscription
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "MemberData",
    "AbstractStickyAssignor",
    "StickyAssignor",
    "resolve_previous_owners",
    "encode_sticky_user_data",
    "decode_sticky_user_data",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class MemberData:
    """What a sticky assignor knows of one member's previous state.

    Thread-safety: immutable; safe to share.
    """

    partitions: tuple[TopicPartition, ...]
    generation: int = DEFAULT_GENERATION
    rack_id: str | None = None


# -- StickyAssignor user data (Java layout: [topic, [partition]] then int32 generation) ---------


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """The eager sticky assignor's user data: previous assignment then generation (Java v1)."""
    grouped: dict[str, list[int]] = {}
    for topic, p in partitions:
        grouped.setdefault(topic, []).append(p)
    out = bytearray(_I32.pack(len(grouped)))
    for topic in grouped:
        raw = topic.encode("utf-8")
        out += _I16.pack(len(raw))
        out += raw
        out += _I32.pack(len(grouped[topic]))
        for p in grouped[topic]:
            out += _I32.pack(p)
    out += _I32.pack(generation)
    return bytes(out)


def decode_sticky_user_data(data: bytes) -> MemberData:
    """Decode sticky user data (v1 with generation, or v0 without); ValueError when malformed."""
    pos = 0

    def need(n: int) -> None:
        if n < 0 or pos + n > len(data):
            raise ValueError("sticky assignor user data is truncated")

    need(4)
    (n_topics,) = _I32.unpack_from(data, pos)
    pos += 4
    if n_topics < 0 or n_topics * 6 > len(data) - pos:
        raise ValueError(f"sticky assignor user data has a bad topic count {n_topics}")
    parts: list[TopicPartition] = []
    for _ in range(n_topics):
        need(2)
        (tlen,) = _I16.unpack_from(data, pos)
        pos += 2
        need(tlen)
        try:
            topic = data[pos : pos + tlen].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError("sticky assignor user data has a non UTF-8 topic") from exc
        pos += tlen
        need(4)
        (n_parts,) = _I32.unpack_from(data, pos)
        pos += 4
        if n_parts < 0:
            raise ValueError(f"sticky assignor user data has a bad partition count {n_parts}")
        need(4 * n_parts)
        for _ in range(n_parts):
            (p,) = _I32.unpack_from(data, pos)
            pos += 4
            parts.append(TopicPartition(topic, p))
    generation = DEFAULT_GENERATION
    if len(data) - pos >= 4:
        (generation,) = _I32.unpack_from(data, pos)
    return MemberData(partitions=tuple(parts), generation=generation)


# -- ownership ---------------------------------------------------------------------------------


def resolve_previous_owners(
    claims: Mapping[str, MemberData], valid: AbstractSet[TopicPartition] | None = None
) -> dict[str, list[TopicPartition]]:
    """Who keeps which previously owned partition: the single highest-generation claimant.

    ``valid`` (optional) limits the result to partitions that may still be owned. Partitions
    claimed by two members at the same highest generation are owned by nobody.
    """
    by_partition: dict[TopicPartition, dict[str, int]] = {}
    for member_id in sorted(claims):
        data = claims[member_id]
        for tp in data.partitions:
            if valid is not None and tp not in valid:
                continue
            by_partition.setdefault(tp, {})[member_id] = data.generation
    owned: dict[str, list[TopicPartition]] = {m: [] for m in claims}
    for tp in sorted(by_partition):
        claimants = by_partition[tp]
        top = max(claimants.values())
        winners = [m for m, g in claimants.items() if g == top]
        if len(winners) == 1:
            owned[winners[0]].append(tp)
        else:
            logger.warning(
                "Partition %s is claimed by members %s in the same generation %d; "
                "none of them keeps it",
                tp,
                sorted(winners),
                top,
            )
    return owned


# -- the assignment itself ---------------------------------------------------------------------


class _StickyRun:
    """One sticky assignment computation (keeps the shared state of its phases together).

    Thread-safety: not thread-safe; lives inside one ``assign`` call.
    """

    def __init__(
        self,
        partitions: dict[str, list[TopicPartition]],
        subscriptions: Mapping[str, Subscription],
        member_data: Mapping[str, MemberData],
        partition_racks: Mapping[TopicPartition, frozenset[str]],
    ) -> None:
        self.members = sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m]))
        self.order = {m: i for i, m in enumerate(self.members)}
        self.topics = {m: frozenset(subscriptions[m].topics) for m in self.members}
        self.all_partitions = sorted(tp for tps in partitions.values() for tp in tps)
        self.member_rack: dict[str, str] = {}
        for m in self.members:
            rack = member_data[m].rack_id
            if rack:
                self.member_rack[m] = rack
        all_partition_racks = {r for tp in self.all_partitions for r in partition_racks.get(tp, ())}
        self.partition_racks = partition_racks
        self.rack_aware = use_rack_aware_assignment(
            set(self.member_rack.values()),
            all_partition_racks,
            [partition_racks.get(tp, frozenset()) for tp in self.all_partitions],
        )
        valid = set(self.all_partitions)
        owned = resolve_previous_owners(member_data, valid)
        self.previous_owner: dict[TopicPartition, str] = {}
        self.owned: dict[str, list[TopicPartition]] = {}
        for m in self.members:
            keep = []
            for tp in owned[m]:
                if tp.topic not in self.topics[m]:
                    continue  # the member no longer subscribes to it
                self.previous_owner[tp] = m
                if self.rack_aware and self.racks_mismatch(m, tp):
                    # Rack alignment outranks stickiness (as in Java): a mis-placed partition is
                    # placed afresh; it returns to its owner only when nobody better takes it.
                    continue
                keep.append(tp)
            self.owned[m] = keep
        self.assignment: dict[str, list[TopicPartition]] = {m: [] for m in self.members}

    def racks_mismatch(self, member: str, tp: TopicPartition) -> bool:
        rack = self.member_rack.get(member)
        if rack is None:
            return False
        return rack not in self.partition_racks.get(tp, frozenset())

    def _pick(self, tp: TopicPartition, candidates: Sequence[str], count: Mapping[str, int]) -> str:
        # Rack-local first (when racks matter), then least loaded, then the previous owner,
        # then member order: deterministic and balance-preserving.
        prev = self.previous_owner.get(tp)
        rack = self.rack_aware

        def key(m: str) -> tuple[int, int, int, int]:
            return (
                1 if rack and self.racks_mismatch(m, tp) else 0,
                count[m],
                0 if m == prev else 1,
                self.order[m],
            )

        return min(candidates, key=key)

    def run(self) -> dict[str, list[TopicPartition]]:
        if not self.members:
            return {}
        first = self.topics[self.members[0]]
        if all(self.topics[m] == first for m in self.members):
            self._constrained()
        else:
            self._general()
        return self.assignment

    def _constrained(self) -> None:
        """Equal subscriptions: exact quotas, keep owned partitions up to them, fill the rest."""
        members = self.members
        total = len(self.all_partitions)
        floor, extras = divmod(total, len(members))
        count = {m: 0 for m in members}
        kept: set[TopicPartition] = set()
        for m in members:
            own = self.owned[m][:floor]
            self.assignment[m].extend(own)
            kept.update(own)
            count[m] = len(own)
        for m in members:
            if extras == 0:
                break
            if len(self.owned[m]) > floor:
                tp = self.owned[m][floor]
                self.assignment[m].append(tp)
                kept.add(tp)
                count[m] += 1
                extras -= 1
        for tp in self.all_partitions:
            if tp in kept:
                continue
            candidates = [
                m for m in members if count[m] < floor or (count[m] == floor and extras > 0)
            ]
            m = self._pick(tp, candidates, count)
            if count[m] == floor:
                extras -= 1
            self.assignment[m].append(tp)
            count[m] += 1

    def _general(self) -> None:
        """Different subscriptions: keep owned, fill the scarcest partitions first, then move
        single partitions from the most loaded members until no move improves balance."""
        eligible: dict[TopicPartition, list[str]] = {}
        for tp in self.all_partitions:
            eligible[tp] = [m for m in self.members if tp.topic in self.topics[m]]
        count = {m: len(self.owned[m]) for m in self.members}
        owner: dict[TopicPartition, str] = {}
        for m in self.members:
            self.assignment[m].extend(self.owned[m])
            for tp in self.owned[m]:
                owner[tp] = m
        unassigned = [tp for tp in self.all_partitions if tp not in owner and eligible[tp]]
        unassigned.sort(key=lambda tp: (len(eligible[tp]), tp))
        for tp in unassigned:
            m = self._pick(tp, eligible[tp], count)
            self.assignment[m].append(tp)
            owner[tp] = m
            count[m] += 1

        originally = {m: set(self.owned[m]) for m in self.members}
        moved = True
        while moved:
            moved = False
            for a in sorted(self.members, key=lambda m: (-count[m], self.order[m])):
                # Give away partitions the member did not own before first.
                for tp in sorted(self.assignment[a], key=lambda p: (p in originally[a], p)):
                    targets = [b for b in eligible[tp] if b != a and count[b] < count[a] - 1]
                    if not targets:
                        continue
                    b = (
                        self._pick(tp, targets, count)
                        if self.rack_aware
                        else min(targets, key=lambda x: (count[x], self.order[x]))
                    )
                    self.assignment[a].remove(tp)
                    self.assignment[b].append(tp)
                    count[a] -= 1
                    count[b] += 1
                    moved = True


class AbstractStickyAssignor(ConsumerPartitionAssignor):
    """Shared sticky algorithm; subclasses say where previous ownership comes from.

    Thread-safety: see :class:`ConsumerPartitionAssignor`.
    """

    @abc.abstractmethod
    def member_data(self, subscription: Subscription) -> MemberData:
        """Previous ownership and generation of one member, from its Subscription."""

    def assign(
        self,
        cluster_partitions: PartitionsInput,
        subscriptions: Mapping[str, Subscription],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """Balanced, then sticky, then rack-local assignment of every member."""
        raw = self.assign_lists(cluster_partitions, subscriptions, partition_racks)
        return {m: Assignment(partitions=tuple(sorted(raw.get(m, [])))) for m in subscriptions}

    def assign_lists(
        self,
        cluster_partitions: PartitionsInput,
        subscriptions: Mapping[str, Subscription],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, list[TopicPartition]]:
        """Like :meth:`assign` but returns plain partition lists (no Assignment wrapping)."""
        partitions, racks = prepare_assignment_inputs(
            cluster_partitions, subscriptions, partition_racks
        )
        data = {}
        for m, sub in subscriptions.items():
            md = self.member_data(sub)
            if md.rack_id is None and sub.rack_id:
                md = MemberData(md.partitions, md.generation, sub.rack_id)
            data[m] = md
        return _StickyRun(partitions, subscriptions, data, racks).run()


class StickyAssignor(AbstractStickyAssignor):
    """Java ``StickyAssignor`` (``"sticky"``): sticky, eager protocol.

    Each member remembers its last assignment and generation (:meth:`on_assignment`) and sends
    them as its Subscription user data, in the Java byte layout, so Java members interoperate.

    Thread-safety: see :class:`ConsumerPartitionAssignor`.
    """

    def __init__(self) -> None:
        """Start with no remembered assignment (it is learnt in :meth:`on_assignment`)."""
        self._member_assignment: tuple[TopicPartition, ...] | None = None
        self._generation = DEFAULT_GENERATION

    #: The protocol name sent in JoinGroup.
    name = "sticky"

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """Remember the assignment to report it in the next rebalance."""
        self._member_assignment = tuple(assignment.partitions)
        self._generation = generation

    def subscription_user_data(self, topics: AbstractSet[str]) -> bytes | None:
        """The previous assignment and generation (None before the first assignment)."""
        if self._member_assignment is None:
            return None
        return encode_sticky_user_data(self._member_assignment, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        """Decode the member's previous assignment from its user data (empty when absent)."""
        data = subscription.user_data
        if not data:
            return MemberData(partitions=(), rack_id=subscription.rack_id)
        try:
            md = decode_sticky_user_data(data)
        except ValueError as exc:
            # One member's bad user data must not fail the whole group's assignment.
            logger.warning("Ignoring undecodable sticky user data: %s", exc)
            return MemberData(partitions=(), rack_id=subscription.rack_id)
        return MemberData(md.partitions, md.generation, subscription.rack_id)
