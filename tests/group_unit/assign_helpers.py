"""Shared checks for the assignor tests."""

from __future__ import annotations

from collections.abc import Mapping

from kafkaconsumer.internals.consumer_protocol import Assignment, Subscription
from kafkaconsumer.structs import TopicPartition as TP


def tps(spec: str) -> list[TP]:
    """``"t0-0 t0-1 t1-2"`` -> TopicPartitions (topic names must not contain '-')."""
    out = []
    for item in spec.split():
        topic, _, p = item.rpartition("-")
        out.append(TP(topic, int(p)))
    return out


def as_lists(result: Mapping[str, Assignment]) -> dict[str, list[str]]:
    """``{member: ["t0-0", ...]}`` for readable expected values."""
    return {m: [str(tp) for tp in a.partitions] for m, a in result.items()}


def all_partitions(cluster: Mapping[str, int]) -> set[TP]:
    return {TP(t, p) for t, n in cluster.items() for p in range(n)}


def check_valid(
    result: Mapping[str, Assignment],
    cluster: Mapping[str, int],
    subs: Mapping[str, Subscription],
    complete: bool = True,
) -> None:
    """Every partition at most once, only to subscribers; all assigned when ``complete``."""
    assert set(result) == set(subs)
    seen: set[TP] = set()
    for m, a in result.items():
        for tp in a.partitions:
            assert tp not in seen, f"{tp} assigned twice"
            seen.add(tp)
            assert tp.topic in subs[m].topics, f"{tp} given to {m} which does not subscribe"
            assert tp.partition < cluster[tp.topic]
    if complete:
        wanted = {
            tp for tp in all_partitions(cluster) if any(tp.topic in s.topics for s in subs.values())
        }
        assert seen == wanted, f"unassigned: {sorted(wanted - seen)}"


def spread(result: Mapping[str, Assignment]) -> int:
    counts = [len(a.partitions) for a in result.values()]
    return max(counts) - min(counts) if counts else 0


def check_balanced(result: Mapping[str, Assignment], subs: Mapping[str, Subscription]) -> None:
    """Java's definition: no partition could move to an eligible member with 2+ fewer."""
    count = {m: len(a.partitions) for m, a in result.items()}
    for m, a in result.items():
        for tp in a.partitions:
            for other, s in subs.items():
                if other != m and tp.topic in s.topics:
                    assert count[other] >= count[m] - 1, (
                        f"{tp} could move from {m} ({count[m]}) to {other} ({count[other]})"
                    )
