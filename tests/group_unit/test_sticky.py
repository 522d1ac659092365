"""Sticky and cooperative-sticky assignors: hand-written cases, generation conflicts, rack
awareness, and hypothesis-driven membership sequences (balance, stickiness, cooperative safety)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import IllegalStateError
from kafkaconsumer.internals.assignors import (
    CooperativeStickyAssignor,
    RebalanceProtocol,
    StickyAssignor,
    adjust_for_cooperative,
    validate_cooperative_assignment,
)
from kafkaconsumer.internals.assignors.cooperative_sticky import (
    member_generation,
    partitions_transferring_ownership,
)
from kafkaconsumer.internals.assignors.sticky import (
    MemberData,
    decode_sticky_user_data,
    encode_sticky_user_data,
    resolve_previous_owners,
)
from kafkaconsumer.internals.consumer_protocol import Assignment
from kafkaconsumer.internals.consumer_protocol import Subscription as S
from kafkaconsumer.structs import TopicPartition as TP

from .assign_helpers import all_partitions, as_lists, check_balanced, check_valid, spread, tps

pytestmark = pytest.mark.timeout(90)


def coop(topics: list[str], owned: str = "", gen: int = 1, **kw: object) -> S:
    return S(topics, owned_partitions=tps(owned), generation_id=gen, **kw)  # type: ignore[arg-type]


def eager(topics: list[str], owned: str = "", gen: int = 1, **kw: object) -> S:
    return S(topics, user_data=encode_sticky_user_data(tps(owned), gen), **kw)  # type: ignore[arg-type]


# -- hand-written cases ------------------------------------------------------------------------


def test_fresh_group_is_balanced_and_spreads_topics() -> None:
    subs = {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])}
    for a in (StickyAssignor(), CooperativeStickyAssignor()):
        assert as_lists(a.assign({"t0": 3, "t1": 3}, subs)) == {
            "C0": ["t0-0", "t0-2", "t1-1"],
            "C1": ["t0-1", "t1-0", "t1-2"],
        }


def test_new_member_takes_only_what_balance_requires_eager() -> None:
    subs = {
        "C0": eager(["t0", "t1"], "t0-0 t0-1 t0-2"),
        "C1": eager(["t0", "t1"], "t1-0 t1-1 t1-2"),
        "C2": S(["t0", "t1"]),
    }
    got = StickyAssignor().assign({"t0": 3, "t1": 3}, subs)
    assert as_lists(got) == {"C0": ["t0-0", "t0-1"], "C1": ["t1-0", "t1-1"], "C2": ["t0-2", "t1-2"]}


def test_new_member_cooperative_target_is_the_same() -> None:
    subs = {
        "C0": coop(["t0", "t1"], "t0-0 t0-1 t0-2"),
        "C1": coop(["t0", "t1"], "t1-0 t1-1 t1-2"),
        "C2": S(["t0", "t1"]),
    }
    raw = CooperativeStickyAssignor().assign_lists({"t0": 3, "t1": 3}, subs)
    assert {m: sorted(v) for m, v in raw.items()} == {
        "C0": tps("t0-0 t0-1"),
        "C1": tps("t1-0 t1-1"),
        "C2": tps("t0-2 t1-2"),
    }


def test_cooperative_new_member_waits_for_revocation() -> None:
    subs = {
        "C0": coop(["t0", "t1"], "t0-0 t0-1 t0-2"),
        "C1": coop(["t0", "t1"], "t1-0 t1-1 t1-2"),
        "C2": S(["t0", "t1"]),
    }
    first = CooperativeStickyAssignor().assign({"t0": 3, "t1": 3}, subs)
    # t0-2 and t1-2 must first be revoked by C0/C1: nobody gets them in this generation.
    assert as_lists(first) == {"C0": ["t0-0", "t0-1"], "C1": ["t1-0", "t1-1"], "C2": []}
    # Follow-up rebalance: C0 and C1 revoked, report what they still own.
    subs2 = {
        "C0": coop(["t0", "t1"], "t0-0 t0-1", gen=2),
        "C1": coop(["t0", "t1"], "t1-0 t1-1", gen=2),
        "C2": coop(["t0", "t1"], "", gen=2),
    }
    second = CooperativeStickyAssignor().assign({"t0": 3, "t1": 3}, subs2)
    assert as_lists(second) == {
        "C0": ["t0-0", "t0-1"],
        "C1": ["t1-0", "t1-1"],
        "C2": ["t0-2", "t1-2"],
    }


def test_member_leaving_spreads_its_partitions() -> None:
    subs = {"C0": eager(["t0", "t1"], "t0-0 t0-1"), "C2": eager(["t0", "t1"], "t1-1 t1-2")}
    got = StickyAssignor().assign({"t0": 3, "t1": 3}, subs)
    assert as_lists(got) == {"C0": ["t0-0", "t0-1", "t0-2"], "C2": ["t1-0", "t1-1", "t1-2"]}


def test_all_members_leaving_gives_empty_result() -> None:
    for a in (StickyAssignor(), CooperativeStickyAssignor()):
        assert a.assign({"t": 4}, {}) == {}


def test_topics_with_zero_partitions_and_unknown_topics() -> None:
    subs = {"A": coop(["t", "gone", "empty"], "gone-0 t-0"), "B": coop(["t"])}
    got = CooperativeStickyAssignor().assign({"t": 2, "empty": 0}, subs)
    assert as_lists(got) == {"A": ["t-0"], "B": ["t-1"]}


def test_unsubscribed_owned_partition_is_released() -> None:
    # A stopped subscribing to u; u-0 goes to B, but only after A revoked it.
    subs = {"A": coop(["t"], "t-0 u-0"), "B": coop(["t", "u"], "t-1")}
    a = CooperativeStickyAssignor()
    assert sorted(a.assign_lists({"t": 2, "u": 1}, subs)["B"]) == tps("t-1 u-0")
    assert as_lists(a.assign({"t": 2, "u": 1}, subs)) == {"A": ["t-0"], "B": ["t-1"]}


def test_highest_generation_claim_wins() -> None:
    subs = {
        "A": coop(["t"], "t-0 t-1", gen=3),
        "B": coop(["t"], "t-0", gen=4),
        "C": coop(["t"], "", gen=4),
    }
    raw = CooperativeStickyAssignor().assign_lists({"t": 3}, subs)
    assert TP("t", 0) in raw["B"]
    assert TP("t", 1) in raw["A"]
    got = CooperativeStickyAssignor().assign({"t": 3}, subs)
    validate_cooperative_assignment(got, subs)


def test_same_generation_conflict_nobody_keeps_and_both_revoke_first() -> None:
    subs = {"A": coop(["t"], "t-0", gen=5), "B": coop(["t"], "t-0", gen=5), "C": coop(["t"])}
    got = CooperativeStickyAssignor().assign({"t": 3}, subs)
    assert all(TP("t", 0) not in a.partitions for a in got.values())
    validate_cooperative_assignment(got, subs)


def test_resolve_previous_owners_rules() -> None:
    claims = {
        "A": MemberData(tuple(tps("t-0 t-1 t-2")), 5),
        "B": MemberData(tuple(tps("t-0")), 5),
        "C": MemberData(tuple(tps("t-1")), 4),
        "D": MemberData(tuple(tps("t-2 t-9")), 6),
    }
    owned = resolve_previous_owners(claims, valid=set(tps("t-0 t-1 t-2 t-3")))
    # t-0: tie at generation 5 -> nobody; t-1: 5 beats 4; t-2: 6 beats 5; t-9 no longer exists.
    assert owned == {"A": tps("t-1"), "B": [], "C": [], "D": tps("t-2")}


def test_eager_sticky_generation_conflict_uses_user_data_generation() -> None:
    subs = {"A": eager(["t"], "t-0 t-1", gen=2), "B": eager(["t"], "t-1", gen=3)}
    got = StickyAssignor().assign({"t": 2}, subs)
    assert as_lists(got) == {"A": ["t-0"], "B": ["t-1"]}


def test_unequal_subscriptions_are_balanced() -> None:
    subs = {"C0": S(["t0"]), "C1": S(["t0", "t1"])}
    got = StickyAssignor().assign({"t0": 2, "t1": 2}, subs)
    assert as_lists(got) == {"C0": ["t0-0", "t0-1"], "C1": ["t1-0", "t1-1"]}
    subs = {"C0": S(["t0"]), "C1": S(["t0", "t1"]), "C2": S(["t0", "t1", "t2"])}
    got = StickyAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subs)
    check_valid(got, {"t0": 1, "t1": 2, "t2": 3}, subs)
    check_balanced(got, subs)
    assert as_lists(got) == {"C0": ["t0-0"], "C1": ["t1-0", "t1-1"], "C2": ["t2-0", "t2-1", "t2-2"]}


def test_rack_aware_sticky_places_new_partitions_locally() -> None:
    subs = {"A": S(["t"], rack_id="r1"), "B": S(["t"], rack_id="r2")}
    racks = {TP("t", p): {"r1"} if p % 2 else {"r2"} for p in range(4)}
    got = CooperativeStickyAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"A": ["t-1", "t-3"], "B": ["t-0", "t-2"]}


def test_rack_aware_sticky_moves_misplaced_partition_through_revocation() -> None:
    racks = {TP("t", p): {"r1"} if p % 2 else {"r2"} for p in range(4)}
    subs = {"A": coop(["t"], "t-0 t-1", rack_id="r1"), "B": coop(["t"], "t-2 t-3", rack_id="r2")}
    raw = CooperativeStickyAssignor().assign_lists({"t": 4}, subs, racks)
    assert {m: sorted(v) for m, v in raw.items()} == {"A": tps("t-1 t-3"), "B": tps("t-0 t-2")}
    got = CooperativeStickyAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"A": ["t-1"], "B": ["t-2"]}


# -- user data and protocol plumbing -----------------------------------------------------------


def test_sticky_user_data_java_layout() -> None:
    blob = encode_sticky_user_data(tps("t-0 t-2 u-1"), 7)
    assert blob.hex() == (
        "00000002"
        + "0001"
        + b"t".hex()
        + "00000002"
        + "00000000"
        + "00000002"
        + "0001"
        + b"u".hex()
        + "00000001"
        + "00000001"
        + "00000007"
    )
    md = decode_sticky_user_data(blob)
    assert md.partitions == tuple(tps("t-0 t-2 u-1")) and md.generation == 7
    # v0 (no generation) decodes with the default generation.
    assert decode_sticky_user_data(blob[:-4]).generation == -1
    for bad in (b"", b"\x00\x00\x00\x05", blob[:9]):
        with pytest.raises(ValueError):
            decode_sticky_user_data(bad)


def test_sticky_assignor_remembers_its_assignment() -> None:
    a = StickyAssignor()
    assert a.subscription_user_data({"t"}) is None
    a.on_assignment(Assignment(tps("t-1 t-3")), 9)
    md = a.member_data(S(["t"], user_data=a.subscription_user_data({"t"})))
    assert md.partitions == tuple(tps("t-1 t-3")) and md.generation == 9
    # Garbage user data is ignored, not fatal for the whole group.
    assert a.member_data(S(["t"], user_data=b"\x01")).partitions == ()


def test_cooperative_user_data_and_generation_fallback() -> None:
    a = CooperativeStickyAssignor()
    assert a.subscription_user_data(set()) == b"\xff\xff\xff\xff"
    a.on_assignment(Assignment(), 12)
    ud = a.subscription_user_data(set())
    assert ud == b"\x00\x00\x00\x0c"
    assert member_generation(S(["t"], user_data=ud)) == 12  # v0/v1 subscription
    assert member_generation(S(["t"], user_data=ud, generation_id=13)) == 13
    assert member_generation(S(["t"])) == -1


def test_protocols() -> None:
    assert StickyAssignor().supported_protocols == [RebalanceProtocol.EAGER]
    assert CooperativeStickyAssignor().supported_protocols == [
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    ]


def test_adjust_and_validate_for_any_cooperative_assignor() -> None:
    subs = {"A": coop(["t"], "t-0 t-1"), "B": coop(["t"], "t-2"), "C": coop(["t"], "", gen=0)}
    proposed = {
        "A": Assignment(tps("t-0")),
        "B": Assignment(tps("t-1 t-2")),
        "C": Assignment(tps("t-3")),
    }
    assert partitions_transferring_ownership(proposed, subs) == {TP("t", 1): "B"}
    with pytest.raises(IllegalStateError):
        validate_cooperative_assignment(proposed, subs)
    adjusted = adjust_for_cooperative(proposed, subs)
    assert as_lists(adjusted) == {"A": ["t-0"], "B": ["t-2"], "C": ["t-3"]}
    validate_cooperative_assignment(adjusted, subs)
    assert adjust_for_cooperative(adjusted, subs) == adjusted  # idempotent
    with pytest.raises(ValueError):
        adjust_for_cooperative({"X": Assignment()}, subs)


def test_stale_owner_claim_blocks_handover_but_not_current_owner() -> None:
    # A claims t-0 from an old generation, B owns it in the current one: B keeps it; C would
    # have to wait for both.
    subs = {"A": coop(["t"], "t-0", gen=3), "B": coop(["t"], "t-0", gen=4), "C": coop(["t"])}
    keep_b = {"A": Assignment(), "B": Assignment(tps("t-0")), "C": Assignment()}
    assert adjust_for_cooperative(keep_b, subs) == keep_b
    give_c = {"A": Assignment(), "B": Assignment(), "C": Assignment(tps("t-0"))}
    assert as_lists(adjust_for_cooperative(give_c, subs)) == {"A": [], "B": [], "C": []}


def test_inputs_validated() -> None:
    with pytest.raises(TypeError):
        StickyAssignor().assign({"t": 1}, {"A": ["t"]})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        CooperativeStickyAssignor().assign({"t": -1}, {"A": S(["t"])})
    with pytest.raises(TypeError):
        CooperativeStickyAssignor().assign([("t", 1)], {"A": S(["t"])})  # type: ignore[arg-type]


# -- membership sequences (hypothesis) ---------------------------------------------------------


def kept_bound(prev: Mapping[str, set[TP]], members: list[str], total: int) -> int:
    """Most previously owned partitions a balanced assignment can leave in place."""
    floor, extras = divmod(total, len(members))
    base = sum(min(len(prev.get(m, ())), floor) for m in members)
    over = sum(1 for m in members if len(prev.get(m, ())) > floor)
    return base + min(extras, over)


def check_sticky_step(
    prev: Mapping[str, set[TP]], new: Mapping[str, set[TP]], cluster: Mapping[str, int]
) -> None:
    existing = all_partitions(cluster)
    members = list(new)
    valid_prev = {m: prev.get(m, set()) & existing for m in members}
    total_kept = 0
    for m in members:
        kept = len(valid_prev[m] & new[m])
        # A member never gives up an owned partition while taking a new one instead.
        assert kept == min(len(valid_prev[m]), len(new[m])), m
        total_kept += kept
    assert total_kept == kept_bound(valid_prev, members, len(existing))


events = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 99)),
        st.tuples(st.just("leave"), st.integers(0, 20)),
        st.tuples(st.just("grow"), st.sampled_from(["a", "b", "c"]), st.integers(1, 3)),
    ),
    min_size=1,
    max_size=8,
)
start_cluster = st.fixed_dictionaries(
    {"a": st.integers(0, 8), "b": st.integers(0, 8), "c": st.integers(0, 8)}
)


def apply_event(ev: tuple[Any, ...], members: list[str], cluster: dict[str, int]) -> None:
    if ev[0] == "join":
        name = f"m{ev[1]:02d}"
        if name not in members:
            members.append(name)
    elif ev[0] == "leave" and len(members) > 1:
        members.pop(ev[1] % len(members))
    elif ev[0] == "grow":
        cluster[ev[1]] += ev[2]


@settings(max_examples=120, deadline=None)
@given(start_cluster, st.integers(1, 5), events)
def test_eager_sticky_sequences(
    cluster: dict[str, int], n: int, evs: list[tuple[Any, ...]]
) -> None:
    topics = sorted(cluster)
    members = [f"m{i:02d}" for i in range(n)]
    instances: dict[str, StickyAssignor] = {}
    prev: dict[str, set[TP]] = {}
    for gen, ev in enumerate([("noop",)] + evs, start=1):
        apply_event(ev, members, cluster)
        for m in members:
            instances.setdefault(m, StickyAssignor())
        subs = {
            m: S(topics, user_data=instances[m].subscription_user_data(set(topics)))
            for m in members
        }
        got = instances[members[0]].assign(cluster, subs)
        check_valid(got, cluster, subs)
        assert spread(got) <= 1
        new = {m: set(a.partitions) for m, a in got.items()}
        check_sticky_step(prev, new, cluster)
        for m in members:
            instances[m].on_assignment(got[m], gen)
        prev = new


@settings(max_examples=120, deadline=None)
@given(start_cluster, st.integers(1, 5), events)
def test_cooperative_sticky_sequences(
    cluster: dict[str, int], n: int, evs: list[tuple[Any, ...]]
) -> None:
    topics = sorted(cluster)
    members = [f"m{i:02d}" for i in range(n)]
    owned: dict[str, set[TP]] = {}
    gen = 0
    assignor = CooperativeStickyAssignor()
    for ev in [("noop",)] + evs:
        apply_event(ev, members, cluster)
        for round_no in range(2):
            subs = {
                m: S(topics, owned_partitions=sorted(owned.get(m, ())), generation_id=gen)
                for m in members
            }
            raw = assignor.assign_lists(cluster, subs)
            got = assignor.assign(cluster, subs)
            # The unadjusted target is balanced and maximally sticky.
            target = {m: set(v) for m, v in raw.items()}
            assert max(map(len, target.values())) - min(map(len, target.values())) <= 1
            check_sticky_step(owned, target, cluster)
            # Nothing goes to a new owner while another member still claims it.
            validate_cooperative_assignment(got, subs)
            check_valid(got, cluster, subs, complete=(round_no == 1))
            gen += 1
            owned = {m: set(a.partitions) for m, a in got.items()}
            if round_no == 1:
                # After the follow-up rebalance everything has landed and it is the target.
                assert owned == target


@settings(max_examples=120, deadline=None)
@given(
    start_cluster,
    st.lists(st.sets(st.sampled_from(["a", "b", "c"])), min_size=1, max_size=6),
    st.data(),
)
def test_unequal_subscriptions_valid_balanced_stable(
    cluster: dict[str, int], topic_sets: list[set[str]], data: st.DataObject
) -> None:
    subs0 = {f"m{i}": S(sorted(ts)) for i, ts in enumerate(topic_sets)}
    a = CooperativeStickyAssignor()
    first = a.assign(cluster, subs0)
    check_valid(first, cluster, subs0)
    check_balanced(first, subs0)
    # Members now own their partitions: rerunning changes nothing (stable).
    subs1 = {
        m: S(s.topics, owned_partitions=first[m].partitions, generation_id=1)
        for m, s in subs0.items()
    }
    assert a.assign(cluster, subs1) == first
    # Determinism: member order in the input does not matter.
    shuffled = dict(data.draw(st.permutations(list(subs1.items()))))
    assert a.assign(cluster, shuffled) == first
    # Eager sticky gives the same balance guarantees.
    eager_got = StickyAssignor().assign(cluster, subs0)
    check_valid(eager_got, cluster, subs0)
    check_balanced(eager_got, subs0)


@settings(max_examples=80, deadline=None)
@given(start_cluster, st.integers(1, 6), st.data())
def test_rack_aware_sticky_valid_and_balanced(
    cluster: dict[str, int], n: int, data: st.DataObject
) -> None:
    topics = sorted(cluster)
    subs = {
        f"m{i}": S(topics, rack_id=data.draw(st.sampled_from([None, "r1", "r2", "r3"])))
        for i in range(n)
    }
    racks = {
        tp: set(data.draw(st.lists(st.sampled_from(["r1", "r2", "r3"]), min_size=1, max_size=2)))
        for tp in all_partitions(cluster)
    }
    got = CooperativeStickyAssignor().assign(cluster, subs, racks)
    check_valid(got, cluster, subs)
    assert spread(got) <= 1


def test_rack_mismatch_returns_to_owner_when_nobody_better_takes_it() -> None:
    # t-1 lives on r3 only and nobody runs on r3; A (r1) is the only member with room: it keeps
    # it. C has no rack and matches everything, so it takes t-1 when it has room.
    racks = {TP("t", 0): {"r1"}, TP("t", 1): {"r3"}, TP("t", 2): {"r2"}, TP("t", 3): {"r2"}}
    subs = {"A": coop(["t"], "t-0 t-1", rack_id="r1"), "B": coop(["t"], "t-2 t-3", rack_id="r2")}
    got = CooperativeStickyAssignor().assign({"t": 4}, subs, racks)
    assert as_lists(got) == {"A": ["t-0", "t-1"], "B": ["t-2", "t-3"]}
    racks = {TP("t", 0): {"r1"}, TP("t", 1): {"r3"}, TP("t", 2): {"r2"}}
    subs = {
        "A": coop(["t"], "t-1", rack_id="r1"),
        "B": coop(["t"], "t-2", rack_id="r2"),
        "C": coop(["t"]),
    }
    raw = CooperativeStickyAssignor().assign_lists({"t": 3}, subs, racks)
    assert {m: sorted(v) for m, v in raw.items()} == {
        "A": tps("t-0"),
        "B": tps("t-2"),
        "C": tps("t-1"),
    }
