"""ConsumerRebalanceListener defaults and the KIP-983 revocation bookkeeping."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from kafkaconsumer.listener import (
    ConsumerRebalanceListener,
    NoOpConsumerRebalanceListener,
    RevocationControl,
    RevocationTracker,
)
from kafkaconsumer.structs import TopicPartition as TP

pytestmark = pytest.mark.timeout(30)

A, B, C = TP("t", 0), TP("t", 1), TP("t", 2)


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TP]]] = []

    def on_partitions_revoked(self, revoked: Collection[TP]) -> None:
        self.calls.append(("revoked", set(revoked)))

    def on_partitions_assigned(self, assigned: Collection[TP]) -> None:
        self.calls.append(("assigned", set(assigned)))


def test_lost_defaults_to_revoked_like_java() -> None:
    r = Recorder()
    r.on_partitions_lost([A, B])
    assert r.calls == [("revoked", {A, B})]


def test_lost_can_be_overridden() -> None:
    class L(Recorder):
        def on_partitions_lost(self, lost: Collection[TP]) -> None:
            self.calls.append(("lost", set(lost)))

    r = L()
    r.on_partitions_lost([C])
    assert r.calls == [("lost", {C})]


def test_defaults_are_no_ops_so_subclasses_override_only_what_they_need() -> None:
    class OnlyAssigned(NoOpConsumerRebalanceListener):
        def __init__(self) -> None:
            self.assigned: list[set[TP]] = []

        def on_partitions_assigned(self, assigned: Collection[TP]) -> None:
            self.assigned.append(set(assigned))

    listener = OnlyAssigned()
    listener.on_partitions_revoked([A])
    listener.on_partitions_lost([B])
    listener.on_partitions_assigned([C])
    assert listener.assigned == [{C}]
    assert isinstance(listener, ConsumerRebalanceListener)


def test_tracker_is_a_revocation_control() -> None:
    assert isinstance(RevocationTracker(), RevocationControl)


def test_revoke_completes_in_the_next_poll() -> None:
    tr = RevocationTracker()
    assert tr.start_poll() == set()
    tr.request_revoke([A, B])
    assert tr.to_be_revoked() == {A, B}
    assert tr.start_poll() == {A, B}
    assert tr.to_be_revoked() == set()


def test_delay_revoke_pushes_completion_one_poll() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A, B])
    assert tr.delay_revoke([A]) is True
    assert tr.to_be_revoked() == {B}
    assert tr.start_poll() == {B}  # poll N+1 completes B only
    assert tr.to_be_revoked() == {A}  # A is now due at the next poll
    assert tr.start_poll() == {A}


def test_delay_can_be_repeated_each_poll() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A])
    for _ in range(3):
        assert tr.delay_revoke([A])
        assert tr.start_poll() == set()
        assert tr.to_be_revoked() == {A}
    assert tr.start_poll() == {A}


def test_lost_partitions_cannot_be_delayed_and_are_reported_for_one_poll() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A, B])
    tr.delay_revoke([A])
    tr.mark_lost([A])
    assert tr.lost_partitions() == {A}
    assert tr.pending() == {B}
    assert tr.delay_revoke([A, B]) is False  # A was lost; B is still delayed
    assert tr.to_be_revoked() == set()
    assert tr.start_poll() == set()
    assert tr.lost_partitions() == set()  # cleared when the next poll starts
    assert tr.start_poll() == {B}


def test_delay_of_unrelated_partition_is_ignored() -> None:
    tr = RevocationTracker()
    assert tr.delay_revoke([C]) is True
    assert tr.pending() == set()


def test_request_for_already_delayed_partition_keeps_the_delay() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A])
    tr.delay_revoke([A])
    tr.request_revoke([A])
    assert tr.to_be_revoked() == set()
    assert tr.pending() == {A}


def test_clear_returns_pending() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A])
    tr.request_revoke([B])
    tr.delay_revoke([B])
    tr.mark_lost([C])
    assert tr.clear() == {A, B}
    assert tr.pending() == set() and tr.lost_partitions() == set()


def test_returned_sets_are_copies() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A])
    tr.to_be_revoked().clear()
    assert tr.to_be_revoked() == {A}


def test_completing_some_partitions_keeps_the_delay_of_the_others() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A, B])
    assert tr.delay_revoke([A, B])
    assert tr.start_poll() == set()
    assert tr.delay_revoke([B])  # A is finished, B is not
    assert tr.start_poll() == {A}
    assert tr.to_be_revoked() == {B}


def test_delay_is_refused_once_the_bound_passed_and_only_then() -> None:
    now = [1000]
    tr = RevocationTracker(lambda: now[0])
    tr.request_revoke([A, B], bound_ms=500)
    now[0] = 1499
    assert tr.delay_revoke([A, B]) is True
    assert tr.start_poll() == set()
    now[0] = 1500
    assert tr.delay_revoke([A, B]) is False
    assert tr.to_be_revoked() == {A, B}  # refused: due at the next poll
    assert tr.start_poll() == {A, B}


def test_bound_counts_from_the_first_request() -> None:
    now = [0]
    tr = RevocationTracker(lambda: now[0])
    tr.request_revoke([A], bound_ms=100)
    tr.delay_revoke([A])
    now[0] = 90
    tr.request_revoke([A], bound_ms=100)  # asked again by a later rebalance
    now[0] = 100
    assert tr.start_poll() == set()
    assert tr.delay_revoke([A]) is False


def test_forget_drops_a_pending_revocation() -> None:
    tr = RevocationTracker()
    tr.request_revoke([A, B])
    tr.delay_revoke([B])
    tr.forget([A, B])
    assert tr.pending() == set()
    assert tr.start_poll() == set()
