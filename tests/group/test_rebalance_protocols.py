"""Eager and cooperative rebalances, KIP-983, metadata-driven rebalances, auto-commit, the poll
interval and static fencing, against the fake broker's Kafka-like group coordinator.

Each member is a coordinator stack polled by its own thread (:class:`Driver`), so the
JoinGroup/SyncGroup barriers work as with real consumers, without a real broker's delays.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.assignors import RebalanceProtocol
from kafkaconsumer.internals.consumer_protocol import decode_subscription
from kafkaconsumer.internals.subscription_state import FetchPosition
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.group.harness import Driver, Stack
from tests.helpers import wait_for
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(40)

TOPIC = "events"
ALL = {TopicPartition(TOPIC, p) for p in range(4)}


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(topics={TOPIC: 4}) as c:
        yield c


class Group:
    """Members of one group, each driven by its own thread; closes everything at the end."""

    def __init__(self, cluster: FakeCluster, group_id: str = "grp") -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.members: list[tuple[Stack, Driver]] = []

    def add(self, hook: Any = None, topics: Any = None, **overrides: Any) -> tuple[Stack, Driver]:
        stack = Stack(
            self.cluster.bootstrap_servers,
            self.group_id,
            client_id=f"m{len(self.members) + 1}",
            **overrides,
        )
        stack.subscribe(topics if topics is not None else [TOPIC])
        driver = Driver(stack, hook)
        self.members.append((stack, driver))
        driver.start()
        return stack, driver

    def check(self) -> None:
        for _s, d in self.members:
            if d.error is not None:
                raise AssertionError(f"{d.name} failed: {d.error!r}") from d.error

    def wait(self, condition: Any, what: str, timeout: float = 15) -> None:
        def ok() -> bool:
            self.check()
            return bool(condition())

        wait_for(ok, timeout, message=what)

    def split(self, expected: set[TopicPartition] = ALL) -> bool:
        seen: set[TopicPartition] = set()
        for s, _d in self.members:
            a = set(s.subscriptions.assigned_partitions())
            if not a or a & seen or s.coordinator.rejoin_needed_or_pending():
                return False
            seen |= a
        return seen == expected

    def close(self) -> None:
        for _s, d in self.members:
            if d.is_alive():
                d.stop()
        closed: set[int] = set()
        for s, _d in self.members:
            if id(s) not in closed:
                closed.add(id(s))
                s.close()


@pytest.fixture
def group(cluster: FakeCluster) -> Iterator[Group]:
    g = Group(cluster)
    yield g
    g.close()


def assigned(stack: Stack) -> set[TopicPartition]:
    return set(stack.subscriptions.assigned_partitions())


# ------------------------------------------------------------------------------------- eager


def test_eager_revokes_everything_before_rejoining(group: Group) -> None:
    s1, _ = group.add(partition_assignment_strategy=["range"])
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(partition_assignment_strategy=["range"])
    group.wait(group.split, "two-way split")
    assert s1.coordinator.protocol is RebalanceProtocol.EAGER
    names = s1.listener.names()
    assert names == ["assigned", "revoked", "assigned"]
    assert s1.listener.calls[1] == ("revoked", sorted(ALL))
    assert set(s1.listener.calls[2][1]) == assigned(s1)
    assert s2.listener.calls == [("assigned", sorted(assigned(s2)))]


def test_eager_auto_commit_happens_before_the_rejoin(group: Group, cluster: FakeCluster) -> None:
    opts = dict(
        partition_assignment_strategy=["range"],
        enable_auto_commit=True,
        auto_commit_interval_ms=60000,
    )

    def positioned(stack: Stack) -> None:
        # Stand in for the fetcher: every assigned partition has consumed up to offset 7.
        for tp in stack.subscriptions.assigned_partitions():
            if not stack.subscriptions.has_valid_position(tp):
                stack.subscriptions.seek_unvalidated(tp, FetchPosition(7))

    s1, _ = group.add(hook=positioned, **opts)
    group.wait(
        lambda: assigned(s1) == ALL and s1.subscriptions.has_all_fetch_positions(), "m1 positioned"
    )
    cluster.clear_requests()
    group.add(hook=positioned, **opts)
    group.wait(group.split, "two-way split")
    order = [
        h.api_key
        for h, _b in cluster.requests()
        if h.api_key in (ApiKey.OFFSET_COMMIT, ApiKey.JOIN_GROUP) and h.client_id == "m1"
    ]
    assert order[:2] == [ApiKey.OFFSET_COMMIT, ApiKey.JOIN_GROUP]
    assert {tp: v[0] for tp, v in cluster.committed("grp").items()} == {
        (tp.topic, tp.partition): 7 for tp in ALL
    }


# ------------------------------------------------------------------------------- cooperative


def test_cooperative_revokes_only_moved_partitions_and_keeps_pause_state(group: Group) -> None:
    s1, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    for tp in ALL:
        s1.subscriptions.pause(tp)
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(group.split, "two-way split")
    assert s1.coordinator.protocol is RebalanceProtocol.COOPERATIVE
    kept, moved = assigned(s1), assigned(s2)
    assert len(kept) == len(moved) == 2
    # Revoked: only what moved. Assigned after the first rebalance: nothing new.
    assert s1.listener.calls == [
        ("assigned", sorted(ALL)),
        ("revoked", sorted(moved)),
        ("assigned", []),
        ("assigned", []),
    ]
    assert s2.listener.calls[-1] == ("assigned", sorted(moved))
    # The pause survived for the partitions m1 kept.
    assert all(s1.subscriptions.is_paused(tp) for tp in kept)


def test_kip983_revocation_completes_at_next_poll_and_can_be_delayed(group: Group) -> None:
    state: dict[str, Any] = {"hold": True, "seen": set(), "delays": 0}

    def kip983(stack: Stack) -> None:
        c = stack.coordinator
        pending = c.to_be_revoked()
        if pending:
            state["seen"] = set(pending)
            # Not fetchable while waiting for revocation.
            assert all(not stack.subscriptions.is_fetchable(tp) for tp in pending)
            if state["hold"]:
                assert c.delay_revoke(pending)
                state["delays"] += 1

    s1, d1 = group.add(hook=kip983, partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: state["delays"] >= 5, "m1 delaying the revocation")
    moving = state["seen"]
    assert len(moving) == 2
    # Still owned by m1 (not revoked yet), not given to m2, listener not called.
    assert moving <= assigned(s1)
    assert not assigned(s2) & moving
    assert "revoked" not in s1.listener.names()
    state["hold"] = False
    group.wait(group.split, "hand-over after the delay")
    assert assigned(s2) == moving
    assert ("revoked", sorted(moving)) in s1.listener.calls
    assert s1.coordinator.lost_partitions() == set()


class BusyWorkers:
    """A KIP-983 poll loop with one worker per partition, as a round hook of a Driver.

    Each round it commits the pending partitions whose worker is done and delays the others.
    The test says which workers are busy. It checks the promise of ``delay_revoke`` at every
    round: a partition whose delay was granted at one round is still owned at the next.
    """

    def __init__(self, busy: set[TopicPartition], *, fail_commit: FakeCluster | None = None):
        self.busy = set(busy)
        self.fail_commit = fail_commit
        self.granted: set[TopicPartition] = set()
        self.delays = 0
        self.refused: list[set[TopicPartition]] = []
        self.commit_errors: list[BaseException] = []
        self.broken: list[str] = []

    def kept_promises(self) -> bool:
        """Fail the test at once when a granted delay was not honoured."""
        assert self.broken == []
        return True

    def __call__(self, stack: Stack) -> None:
        """One round of the application's loop, after the consumer's poll."""
        c = stack.coordinator
        owned = assigned(stack)
        if not self.granted <= owned:
            self.broken.append(f"delayed {sorted(self.granted - owned)} revoked at the next poll")
        pending = c.to_be_revoked()
        done = pending - self.busy
        if done:
            if self.fail_commit is not None:
                self.fail_commit.fail(ApiKey.OFFSET_COMMIT, 27)  # REBALANCE_IN_PROGRESS
            try:
                c.commits.commit_offsets_sync(
                    {tp: OffsetAndMetadata(5) for tp in done}, stack.timer(5000)
                )
            except Errors.KafkaError as exc:
                # The commit of the finished work failed: keep them until it succeeds.
                self.commit_errors.append(exc)
                self.busy |= done
                self.fail_commit = None
        wanted = pending & self.busy
        self.granted = set()
        if wanted:
            if c.delay_revoke(wanted):
                self.granted = wanted
                self.delays += 1
            else:
                self.refused.append(wanted)


def revoked_calls(stack: Stack) -> list[TopicPartition]:
    return [tp for name, tps in stack.listener.calls if name == "revoked" for tp in tps]


def test_kip983_partial_finish_completes_only_the_partitions_not_delayed(group: Group) -> None:
    app = BusyWorkers(ALL)
    s1, _ = group.add(hook=app, partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: app.delays >= 3, "m1 delaying the revocation")
    moving = s1.coordinator.listener_invoker.revocations.pending()
    assert len(moving) == 2
    first, second = sorted(moving)
    # The worker of one partition finishes: it is committed and handed over; the other stays.
    app.busy = {second}
    group.wait(lambda: first in assigned(s2), "the finished partition reaches m2")
    rounds = app.delays
    group.wait(
        lambda: app.kept_promises() and app.delays >= rounds + 10,
        "m1 keeps delaying the busy partition",
    )
    assert second in assigned(s1) and second not in assigned(s2)
    assert revoked_calls(s1) == [first]
    app.busy = set()
    group.wait(lambda: group.split() and assigned(s2) == moving, "second partition handed over")
    assert revoked_calls(s1) == [first, second]
    assert app.broken == [] and app.refused == []
    assert s1.coordinator.lost_partitions() == set()


def test_kip983_delay_past_the_bound_is_refused_before_the_revocation(group: Group) -> None:
    app = BusyWorkers(ALL)
    s1, _ = group.add(
        hook=app, partition_assignment_strategy=["cooperative-sticky"], max_poll_interval_ms=1500
    )
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: app.delays >= 1, "m1 delaying the revocation")
    moving = s1.coordinator.listener_invoker.revocations.pending()
    # The workers never finish: after the rebalance timeout the delay is refused, and only
    # then does the revocation complete.
    group.wait(lambda: app.kept_promises() and bool(app.refused), "delay refused at the bound")
    assert app.refused[0] == moving
    group.wait(lambda: group.split() and assigned(s2) == moving, "hand-over after the bound")
    assert sorted(revoked_calls(s1)) == sorted(moving)
    assert app.broken == []
    assert s1.coordinator.lost_partitions() == set()


def test_kip983_delay_survives_a_failed_commit_and_the_rebalance_it_starts(
    group: Group, cluster: FakeCluster
) -> None:
    app = BusyWorkers(ALL)
    s1, _ = group.add(hook=app, partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: app.delays >= 3, "m1 delaying the revocation")
    moving = s1.coordinator.listener_invoker.revocations.pending()
    # The workers finish, but committing their work fails with REBALANCE_IN_PROGRESS: the
    # application delays again, and the rebalance the failure starts must not revoke them.
    joins = len(cluster.requests(ApiKey.JOIN_GROUP))
    app.fail_commit = cluster
    app.busy = set()
    group.wait(lambda: app.commit_errors, "the commit failed")
    assert isinstance(app.commit_errors[0], Errors.RebalanceInProgressError)
    group.wait(
        lambda: (
            len(cluster.requests(ApiKey.JOIN_GROUP)) > joins
            and s1.coordinator.generation_if_stable() is not None
            and not s1.coordinator.rejoin_needed_or_pending()
        ),
        "the rebalance after the failed commit",
    )
    rounds = app.delays
    group.wait(lambda: app.kept_promises() and app.delays >= rounds + 5, "m1 keeps delaying")
    assert moving <= assigned(s1) and not moving & assigned(s2)
    assert revoked_calls(s1) == []
    app.busy = set()
    group.wait(
        lambda: group.split() and assigned(s2) == moving, "hand-over once the commit succeeded"
    )
    assert sorted(revoked_calls(s1)) == sorted(moving)
    assert {(TOPIC, tp.partition) for tp in moving} <= set(cluster.committed("grp"))
    assert app.broken == [] and app.refused == []


def test_kip983_lost_partitions_after_generation_reset(group: Group, cluster: FakeCluster) -> None:
    lost: list[set[TopicPartition]] = []

    def kip983(stack: Stack) -> None:
        got = stack.coordinator.lost_partitions()
        if got:
            lost.append(got)

    # Short timers: the coordinator still counts the old member id until its session expires.
    s1, _ = group.add(
        hook=kip983,
        partition_assignment_strategy=["cooperative-sticky"],
        session_timeout_ms=1000,
        heartbeat_interval_ms=100,
        max_poll_interval_ms=2000,
    )
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    cluster.fail(ApiKey.HEARTBEAT, 25)  # UNKNOWN_MEMBER_ID: the member was removed
    group.wait(lambda: lost, "lost partitions reported")
    assert lost[0] == ALL
    assert ("lost", sorted(ALL)) in s1.listener.calls
    # A lost partition cannot be delayed.
    assert (
        s1.coordinator.listener_invoker.revocations.delay_revoke(ALL) is False
        or not s1.coordinator.lost_partitions()
    )
    group.wait(lambda: assigned(s1) == ALL, "m1 rejoined")


def test_two_step_upgrade_from_eager_to_cooperative(group: Group, cluster: FakeCluster) -> None:
    # Step 1: every member lists [range, cooperative-sticky]: the group runs range, eagerly.
    s1, d1 = group.add(partition_assignment_strategy=["range", "cooperative-sticky"])
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    assert s1.coordinator.generation_snapshot().protocol_name == "range"
    assert s1.coordinator.protocol is RebalanceProtocol.EAGER
    # Step 2: a member that lists only cooperative-sticky joins; the common one wins.
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(group.split, "mixed group split")
    assert s1.coordinator.generation_snapshot().protocol_name == "cooperative-sticky"
    assert s2.coordinator.protocol is RebalanceProtocol.COOPERATIVE
    # ...and m1 (still eager locally) revoked everything before joining, as it must.
    assert ("revoked", sorted(ALL)) in s1.listener.calls


# --------------------------------------------------------------------- metadata and subscription


def test_partition_count_change_triggers_a_rebalance(group: Group, cluster: FakeCluster) -> None:
    s1, _ = group.add(metadata_max_age_ms=200)
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    cluster.add_topic(TOPIC, 6)
    six = {TopicPartition(TOPIC, p) for p in range(6)}
    group.wait(lambda: assigned(s1) == six, "the new partitions assigned")


def test_subscription_change_triggers_a_rejoin(group: Group, cluster: FakeCluster) -> None:
    cluster.add_topic("other", 2)
    s1, d1 = group.add()
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    d1.stop()
    s1.subscribe([TOPIC, "other"])
    d1b = Driver(s1)
    group.members.append((s1, d1b))
    d1b.start()
    expected = ALL | {TopicPartition("other", 0), TopicPartition("other", 1)}
    group.wait(lambda: assigned(s1) == expected, "both topics assigned")
    last_join = cluster.requests(ApiKey.JOIN_GROUP)[-1][1]
    assert set(decode_subscription(last_join["protocols"][0]["metadata"]).topics) == {
        TOPIC,
        "other",
    }


def test_pattern_subscription_follows_new_topics(group: Group, cluster: FakeCluster) -> None:
    import re

    s1, _ = group.add(topics=re.compile(r"ev.*"), metadata_max_age_ms=200)
    group.wait(lambda: assigned(s1) == ALL, "m1 owns events")
    cluster.add_topic("evolved", 1)
    group.wait(lambda: TopicPartition("evolved", 0) in assigned(s1), "the new topic assigned")


# ------------------------------------------------------------------------- poll interval


def test_poll_interval_expiry_leaves_group_then_stale_commit_fails(
    group: Group, cluster: FakeCluster
) -> None:
    s1, d1 = group.add(max_poll_interval_ms=800, session_timeout_ms=6000)
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    d1.stop()  # the application stops calling poll()
    leave = cluster.wait_for_requests(ApiKey.LEAVE_GROUP, 1, timeout_s=10)
    assert "poll timeout" in (leave[0][1]["members"][0]["reason"] or "")
    with pytest.raises(Errors.CommitFailedError, match="max.poll.interval.ms"):
        s1.coordinator.commits.commit_offsets_sync(
            {TopicPartition(TOPIC, 0): OffsetAndMetadata(3)}, s1.timer(5000)
        )
    s1.listener.calls.clear()
    d1b = Driver(s1)
    group.members.append((s1, d1b))
    d1b.start()
    group.wait(
        lambda: assigned(s1) == ALL and s1.coordinator.generation_if_stable() is not None,
        "m1 rejoined",
    )
    # Ownership may have moved while it was out: lost, not revoked.
    assert s1.listener.names()[0] == "lost"


def test_heartbeats_continue_while_the_user_is_busy(group: Group, cluster: FakeCluster) -> None:
    s1, d1 = group.add(
        max_poll_interval_ms=20000, session_timeout_ms=1500, heartbeat_interval_ms=100
    )
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    d1.paused.set()  # busy for longer than the session timeout
    n = len(cluster.requests(ApiKey.HEARTBEAT))
    cluster.wait_for_requests(ApiKey.HEARTBEAT, n + 20, timeout_s=10)
    d1.paused.clear()
    group.wait(
        lambda: d1.rounds > 0 and s1.coordinator.generation_if_stable() is not None,
        "still a member",
    )
    assert s1.listener.names() == ["assigned"]


# ------------------------------------------------------------------------------ static members


def test_static_member_replaced_by_same_instance_id_is_fenced(group: Group) -> None:
    s1, d1 = group.add(group_instance_id="inst-1")
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(group_instance_id="inst-1")
    wait_for(lambda: d1.error is not None, 15, message="m1 fenced")
    assert isinstance(d1.error, Errors.FencedInstanceIdError)


def test_follow_up_rejoin_waits_for_the_configured_delay(
    group: Group, cluster: FakeCluster
) -> None:
    s1, _ = group.add(
        partition_assignment_strategy=["cooperative-sticky"],
        internal_cooperative_rejoin_delay_ms=400,
    )
    assert s1.coordinator.cooperative_rejoin_delay_ms == 400
    group.wait(lambda: assigned(s1) == ALL, "m1 owns everything")
    s2, _ = group.add(partition_assignment_strategy=["cooperative-sticky"])
    group.wait(lambda: "revoked" in s1.listener.names(), "m1 revoked the moving partitions")
    group.wait(group.split, "hand-over after the delayed follow-up rebalance")
    joins = [b["reason"] for h, b in cluster.requests(ApiKey.JOIN_GROUP) if h.client_id == "m1"]
    assert joins[-1] == "need to revoke partitions and re-join"


def test_heartbeat_rebalance_in_progress_abandons_a_pending_sync_group(
    cluster: FakeCluster,
) -> None:
    from kafkaconsumer.internals.group.abstract_coordinator import MemberState
    from kafkaconsumer.internals.group.group_member import Generation
    from kafkaconsumer.network.future import Future

    s = Stack(cluster.bootstrap_servers, "grp")
    try:
        c = s.coordinator
        gen = Generation(3, "member-1", "range")
        join: Future[bytes] = Future()
        with c._lock:
            c.state = MemberState.COMPLETING_REBALANCE
            c.generation = gen
            c.join_future = join
        answered: Future[None] = Future()
        c._handle_heartbeat_response({"error_code": 27}, gen, answered)
        # The SyncGroup of generation 3 can only fail now: stop waiting for it and rejoin.
        assert answered.succeeded()
        assert join.failed() and isinstance(join.exception, Errors.RebalanceInProgressError)
        assert c.rejoin_needed
        # A stale answer for an older generation changes nothing.
        c.rejoin_needed = False
        later: Future[bytes] = Future()
        with c._lock:
            c.join_future = later
        c._handle_heartbeat_response(
            {"error_code": 27}, Generation(2, "member-1", "range"), Future()
        )
        assert not later.is_done and not c.rejoin_needed
    finally:
        s.close()


# ------------------------------------------------------------------------------------- racks


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_leader_assigns_by_replica_rack_when_members_have_racks(strategy: str) -> None:
    """KIP-881: with client.rack set and racked brokers, members get partitions on their rack."""
    with FakeCluster(n_brokers=2, topics={TOPIC: 4}) as racked:
        racked.broker(0).rack = "rack-a"
        racked.broker(1).rack = "rack-b"
        g = Group(racked, group_id="racks")
        try:
            a, _ = g.add(partition_assignment_strategy=[strategy], client_rack="rack-a")
            b, _ = g.add(partition_assignment_strategy=[strategy], client_rack="rack-b")
            # The fake cluster leads partition p on broker p % 2 (the only replica).
            on_a = {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 2)}
            on_b = {TopicPartition(TOPIC, 1), TopicPartition(TOPIC, 3)}
            g.wait(
                lambda: assigned(a) == on_a and assigned(b) == on_b,
                "each member owns the partitions of its rack",
                timeout=20,
            )
        finally:
            g.close()
