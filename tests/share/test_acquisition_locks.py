"""Client-side acquisition-lock deadlines of a share consumer (acquisition_locks): expired
acknowledgements are taken out and completed with INVALID_RECORD_STATE, live ones stay, RENEW
restarts a deadline, acknowledged records stop being tracked."""

from __future__ import annotations

from kafkaconsumer.errors import InvalidRecordStateError
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.internals.fetch.acquisition_locks import LOCK_EXPIRED_MESSAGE, AcquisitionLocks
from kafkaconsumer.structs import TopicPartition

TP = TopicPartition("t", 0)


def acks(kind: AcknowledgeType, *offsets: int) -> Acknowledgements:
    a = Acknowledgements()
    for o in offsets:
        a.add(o, kind)
    return a


def test_expired_offsets_are_taken_out_and_completed_failed() -> None:
    locks = AcquisitionLocks()
    locks.track(TP, [0, 1], deadline_ms=1_000)
    locks.track(TP, [2, 3], deadline_ms=5_000)
    pending = acks(AcknowledgeType.ACCEPT, 0, 1, 2, 3)
    expired = locks.take_expired(TP, pending, now_ms=2_000, lock_ms=3_000)
    assert expired is not None and expired.as_dict() == {0: 1, 1: 1}
    err = expired.exception()
    assert isinstance(err, InvalidRecordStateError) and LOCK_EXPIRED_MESSAGE in str(err)
    assert pending.as_dict() == {2: 1, 3: 1}
    assert len(locks) == 0  # every offset was acknowledged for good


def test_nothing_is_taken_before_the_earliest_deadline() -> None:
    locks = AcquisitionLocks()
    locks.track(TP, [5, 6], deadline_ms=10_000)
    pending = acks(AcknowledgeType.RELEASE, 5)
    assert locks.take_expired(TP, pending, now_ms=9_999, lock_ms=10_000) is None
    assert pending.as_dict() == {5: 2}
    assert locks.deadline(TP, 5) is None and locks.deadline(TP, 6) == 10_000


def test_untracked_offsets_and_partitions_are_sent_as_they_are() -> None:
    locks = AcquisitionLocks()
    pending = acks(AcknowledgeType.ACCEPT, 1)
    assert locks.take_expired(TP, pending, now_ms=99_999, lock_ms=1) is None
    locks.track(TP, [1], deadline_ms=10)
    other = acks(AcknowledgeType.ACCEPT, 7)  # an offset never handed out (a gap, a release)
    assert locks.take_expired(TP, other, now_ms=50, lock_ms=1) is None
    assert other.as_dict() == {7: 1}


def test_renew_restarts_the_deadline_from_when_it_is_sent() -> None:
    locks = AcquisitionLocks()
    locks.track(TP, [0, 1], deadline_ms=1_000)
    renew = acks(AcknowledgeType.RENEW, 0)
    assert locks.take_expired(TP, renew, now_ms=900, lock_ms=1_000) is None
    assert renew.as_dict() == {0: 4} and locks.deadline(TP, 0) == 1_900
    later = acks(AcknowledgeType.ACCEPT, 0, 1)
    expired = locks.take_expired(TP, later, now_ms=1_500, lock_ms=1_000)
    assert expired is not None and expired.offsets() == [1]
    assert later.offsets() == [0]


def test_a_renew_too_late_is_taken_out_too() -> None:
    locks = AcquisitionLocks()
    locks.track(TP, [3], deadline_ms=100)
    late = acks(AcknowledgeType.RENEW, 3)
    expired = locks.take_expired(TP, late, now_ms=100, lock_ms=1_000)
    assert expired is not None and expired.as_dict() == {3: 4} and not late
    assert len(locks) == 0


def test_forget_and_clear() -> None:
    locks = AcquisitionLocks()
    locks.track(TP, [1], deadline_ms=1)
    locks.track(TopicPartition("t", 1), [1], deadline_ms=1)
    locks.forget(TP)
    assert len(locks) == 1
    locks.clear()
    assert len(locks) == 0


def test_acknowledged_offsets_stop_being_tracked_while_every_lock_holds() -> None:
    """Before the earliest deadline and with no RENEW, acknowledging takes offsets out of the
    tracking (some of a partition's, then the rest) and sends every acknowledgement."""
    locks = AcquisitionLocks()
    locks.track(TP, list(range(10)), deadline_ms=5_000)
    some = acks(AcknowledgeType.ACCEPT, *range(4))
    assert locks.take_expired(TP, some, now_ms=1_000, lock_ms=5_000) is None
    assert some.as_dict() == dict.fromkeys(range(4), 1)
    assert len(locks) == 6 and locks.deadline(TP, 3) is None and locks.deadline(TP, 4) == 5_000
    rest = acks(AcknowledgeType.REJECT, *range(4, 10))
    assert locks.take_expired(TP, rest, now_ms=2_000, lock_ms=5_000) is None
    assert len(rest) == 6 and len(locks) == 0
    # Once a deadline has passed the offsets are checked one by one again.
    locks.track(TP, [20, 21], deadline_ms=3_000)
    late = acks(AcknowledgeType.ACCEPT, 20, 21)
    expired = locks.take_expired(TP, late, now_ms=3_000, lock_ms=5_000)
    assert expired is not None and expired.as_dict() == {20: 1, 21: 1} and not late
