"""Range and round-robin assignors: hand-written cases, rack awareness, balance, determinism."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaconsumer.internals.assignors import RangeAssignor, RoundRobinAssignor
from kafkaconsumer.internals.consumer_protocol import Subscription as S
from kafkaconsumer.structs import TopicPartition as TP

from .assign_helpers import as_lists, check_valid, spread

pytestmark = pytest.mark.timeout(60)


# -- range -------------------------------------------------------------------------------------


def test_range_java_doc_example() -> None:
    subs = {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])}
    got = RangeAssignor().assign({"t0": 3, "t1": 3}, subs)
    assert as_lists(got) == {"C0": ["t0-0", "t0-1", "t1-0", "t1-1"], "C1": ["t0-2", "t1-2"]}


def test_range_different_subscriptions() -> None:
    subs = {"C0": S(["t0"]), "C1": S(["t0", "t1"])}
    got = RangeAssignor().assign({"t0": 3, "t1": 2}, subs)
    assert as_lists(got) == {"C0": ["t0-0", "t0-1"], "C1": ["t0-2", "t1-0", "t1-1"]}


def test_range_more_members_than_partitions() -> None:
    subs = {m: S(["t"]) for m in ("c", "a", "b")}
    got = RangeAssignor().assign({"t": 2}, subs)
    assert as_lists(got) == {"c": [], "a": ["t-0"], "b": ["t-1"]}


def test_range_skips_unknown_and_empty_topics() -> None:
    subs = {"A": S(["t", "missing", "empty"])}
    got = RangeAssignor().assign({"t": 1, "empty": 0, "unsubscribed": 4}, subs)
    assert as_lists(got) == {"A": ["t-0"]}


def test_range_explicit_partition_ids() -> None:
    subs = {"A": S(["t"]), "B": S(["t"])}
    got = RangeAssignor().assign({"t": [5, 1, 3]}, subs)
    assert as_lists(got) == {"A": ["t-1", "t-3"], "B": ["t-5"]}


def test_range_static_members_sort_first_by_instance_id() -> None:
    subs = {
        "a": S(["t"]),
        "z": S(["t"], group_instance_id="i1"),
        "y": S(["t"], group_instance_id="i0"),
    }
    got = RangeAssignor().assign({"t": 3}, subs)
    assert as_lists(got) == {"y": ["t-0"], "z": ["t-1"], "a": ["t-2"]}


def test_range_no_members() -> None:
    assert RangeAssignor().assign({"t": 3}, {}) == {}


def test_range_rack_aware_prefers_local_partitions() -> None:
    subs = {"C0": S(["t"], rack_id="a"), "C1": S(["t"], rack_id="b")}
    racks = {TP("t", 0): {"b"}, TP("t", 1): {"a"}, TP("t", 2): {"b"}, TP("t", 3): {"a"}}
    got = RangeAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"C0": ["t-1", "t-3"], "C1": ["t-0", "t-2"]}
    # Without racks it is the plain range.
    assert as_lists(RangeAssignor().assign({"t": 4}, subs)) == {
        "C0": ["t-0", "t-1"],
        "C1": ["t-2", "t-3"],
    }


def test_range_rack_aware_never_trades_balance() -> None:
    subs = {"C0": S(["t"], rack_id="a"), "C1": S(["t"], rack_id="b")}
    racks = {TP("t", 0): {"b"}, TP("t", 1): {"a"}, TP("t", 2): {"a"}, TP("t", 3): {"a"}}
    got = RangeAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"C0": ["t-1", "t-2"], "C1": ["t-0", "t-3"]}


def test_range_rack_aware_keeps_co_partitioning() -> None:
    subs = {"C0": S(["t0", "t1"], rack_id="a"), "C1": S(["t0", "t1"], rack_id="b")}
    racks = {TP(t, p): ({"b"} if p == 0 else {"a"}) for t in ("t0", "t1") for p in range(2)}
    got = RangeAssignor().assign({"t0": 2, "t1": 2}, subs, racks)
    assert as_lists(got) == {"C0": ["t0-1", "t1-1"], "C1": ["t0-0", "t1-0"]}


def test_range_rack_unused_when_every_partition_is_on_every_rack() -> None:
    subs = {"C0": S(["t"], rack_id="b"), "C1": S(["t"], rack_id="a")}
    racks = {TP("t", p): {"a", "b"} for p in range(4)}
    got = RangeAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"C0": ["t-0", "t-1"], "C1": ["t-2", "t-3"]}


def test_range_member_without_rack_matches_any_partition() -> None:
    # As in Java, a member without a rack "matches" every partition in the rack pass, so it
    # takes its range first; C1 then gets the rack-local partition left (t-2) and t-3.
    subs = {"C0": S(["t"]), "C1": S(["t"], rack_id="b")}
    racks = {TP("t", 0): {"b"}, TP("t", 1): {"a"}, TP("t", 2): {"b"}, TP("t", 3): {"a"}}
    got = RangeAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"C0": ["t-0", "t-1"], "C1": ["t-2", "t-3"]}
    subs = {"C0": S(["t"], rack_id="b"), "C1": S(["t"])}
    got = RangeAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"C0": ["t-0", "t-2"], "C1": ["t-1", "t-3"]}


# -- round robin -------------------------------------------------------------------------------


def test_roundrobin_java_doc_example() -> None:
    subs = {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])}
    got = RoundRobinAssignor().assign({"t0": 3, "t1": 3}, subs)
    assert as_lists(got) == {"C0": ["t0-0", "t0-2", "t1-1"], "C1": ["t0-1", "t1-0", "t1-2"]}


def test_roundrobin_different_subscriptions_java_doc_example() -> None:
    subs = {"C0": S(["t0"]), "C1": S(["t0", "t1"]), "C2": S(["t0", "t1", "t2"])}
    got = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subs)
    assert as_lists(got) == {"C0": ["t0-0"], "C1": ["t1-0"], "C2": ["t1-1", "t2-0", "t2-1", "t2-2"]}


def test_roundrobin_static_members_first() -> None:
    subs = {"a": S(["t"]), "b": S(["t"], group_instance_id="x")}
    got = RoundRobinAssignor().assign({"t": 3}, subs)
    assert as_lists(got) == {"a": ["t-1"], "b": ["t-0", "t-2"]}


def test_roundrobin_member_with_no_topics_gets_nothing() -> None:
    subs = {"a": S([]), "b": S(["t"])}
    got = RoundRobinAssignor().assign({"t": 2}, subs)
    assert as_lists(got) == {"a": [], "b": ["t-0", "t-1"]}


# -- properties --------------------------------------------------------------------------------

clusters = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 9), min_size=1, max_size=4
)
member_ids = st.lists(
    st.text("mnopqrst", min_size=1, max_size=3), min_size=1, max_size=7, unique=True
)


@settings(max_examples=150, deadline=None)
@given(clusters, member_ids)
def test_equal_subscriptions_are_complete_and_balanced(
    cluster: dict[str, int], members: list[str]
) -> None:
    subs = {m: S(sorted(cluster)) for m in members}
    rr = RoundRobinAssignor().assign(cluster, subs)
    check_valid(rr, cluster, subs)
    assert spread(rr) <= 1
    rg = RangeAssignor().assign(cluster, subs)
    check_valid(rg, cluster, subs)
    # Range balances per topic.
    for topic in cluster:
        per = [sum(1 for tp in a.partitions if tp.topic == topic) for a in rg.values()]
        assert max(per) - min(per) <= 1


@settings(max_examples=150, deadline=None)
@given(clusters, member_ids, st.data())
def test_any_subscriptions_valid_and_deterministic(
    cluster: dict[str, int], members: list[str], data: st.DataObject
) -> None:
    topics = sorted(cluster) + ["unknown"]
    subs = {
        m: S(
            data.draw(st.lists(st.sampled_from(topics), unique=True)),
            rack_id=data.draw(st.sampled_from([None, "r1", "r2"])),
        )
        for m in members
    }
    racks = {
        TP(t, p): set(data.draw(st.lists(st.sampled_from(["r1", "r2", "r3"]), max_size=2)))
        for t, n in cluster.items()
        for p in range(n)
    }
    reordered = dict(reversed(list(subs.items())))
    for assignor in (RangeAssignor(), RoundRobinAssignor()):
        got = assignor.assign(cluster, subs, racks)
        check_valid(got, dict(cluster, unknown=0), subs)
        assert got == assignor.assign(cluster, reordered, racks)
