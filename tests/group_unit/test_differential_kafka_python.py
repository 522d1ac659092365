"""Differential check: range and round-robin agree with kafka-python's independent ports of the
Java algorithms (dynamic members, no racks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaconsumer.internals.assignors import RangeAssignor, RoundRobinAssignor
from kafkaconsumer.internals.consumer_protocol import Subscription as S

pytestmark = pytest.mark.timeout(60)

kp_range = pytest.importorskip("kafka.coordinator.assignors.range")
kp_rr = pytest.importorskip("kafka.coordinator.assignors.roundrobin")


@dataclass
class _Meta:
    topics: list[str]


@dataclass
class _Member:
    member_id: str
    metadata: _Meta
    group_instance_id: str | None = None


@dataclass
class _Cluster:
    counts: dict[str, int] = field(default_factory=dict)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self.counts.get(topic)
        return set(range(n)) if n else None


def _theirs(result: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {
        m: sorted((t, p) for t, ps in a.assigned_partitions for p in ps) for m, a in result.items()
    }


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 9), min_size=1),
    st.lists(st.text("xyz", min_size=1, max_size=3), min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_same_result_as_kafka_python(
    cluster: dict[str, int], members: list[str], data: st.DataObject
) -> None:
    subs = {
        m: S(sorted(data.draw(st.sets(st.sampled_from(sorted(cluster)), min_size=1))))
        for m in members
    }
    kp_members = [_Member(m, _Meta(list(s.topics))) for m, s in subs.items()]
    got = {m: sorted(a.partitions) for m, a in RangeAssignor().assign(cluster, subs).items()}
    assert got == _theirs(kp_range.RangePartitionAssignor.assign(_Cluster(cluster), kp_members))
    # kafka-python's round robin mis-steps when a member skips a topic (it rebinds the member
    # id to a tuple), so compare round robin on identical subscriptions only.
    same = {m: S(sorted(cluster)) for m in members}
    kp_same = [_Member(m, _Meta(sorted(cluster))) for m in members]
    got = {m: sorted(a.partitions) for m, a in RoundRobinAssignor().assign(cluster, same).items()}
    assert got == _theirs(kp_rr.RoundRobinPartitionAssignor.assign(_Cluster(cluster), kp_same))
