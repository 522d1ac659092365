"""Unit tests of SubscriptionState: subscription types, assignment changes, fetch states."""

from __future__ import annotations

import re

import pytest

from kafkaconsumer.errors import IllegalStateError, NoOffsetForPartitionError
from kafkaconsumer.internals.subscription_state import (
    EpochEndOffset,
    FetchPosition,
    FetchStates,
    LeaderAndEpoch,
    OffsetResetStrategy,
    SubscriptionState,
    SubscriptionType,
)
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.timeout(30)

T0 = TopicPartition("a", 0)
T1 = TopicPartition("a", 1)
U0 = TopicPartition("b", 0)


def test_subscription_types_are_mutually_exclusive() -> None:
    s = SubscriptionState()
    assert s.subscription_type is SubscriptionType.NONE
    assert s.subscribe(["a"])
    # mypy keeps the narrowing from the line above across subscribe(): not a real overlap.
    assert s.subscription_type is SubscriptionType.AUTO_TOPICS  # type: ignore[comparison-overlap]
    with pytest.raises(IllegalStateError):
        s.assign_from_user([T0])
    with pytest.raises(IllegalStateError):
        s.subscribe_pattern(re.compile("a.*"))
    s.unsubscribe()
    assert s.subscription_type is SubscriptionType.NONE
    s.assign_from_user([T0])
    assert s.subscription_type is SubscriptionType.USER_ASSIGNED
    with pytest.raises(IllegalStateError):
        s.subscribe(["a"])


def test_subscribe_reports_change_only_when_topics_change() -> None:
    s = SubscriptionState()
    assert s.subscribe(["a", "b"])
    assert not s.subscribe(["b", "a"])
    assert s.subscribe(["a"])
    assert s.subscription() == {"a"}


def test_pattern_subscription() -> None:
    s = SubscriptionState()
    s.subscribe_pattern(re.compile(r"orders\..*"))
    assert s.has_pattern_subscription()
    assert s.matches_subscribed_pattern("orders.eu")
    assert not s.matches_subscribed_pattern("xorders.eu")
    assert s.subscribe_from_pattern(["orders.eu", "orders.us"])
    assert not s.subscribe_from_pattern(["orders.us", "orders.eu"])
    assert s.check_assignment_matched_subscription([TopicPartition("orders.eu", 0)])
    assert not s.check_assignment_matched_subscription([TopicPartition("other", 0)])


def test_assign_from_user_keeps_state_of_partitions_that_stay() -> None:
    s = SubscriptionState()
    assert s.assign_from_user([T0, T1])
    s.seek(T0, 42)
    s.pause(T0)
    first_id = s.assignment_id
    assert not s.assign_from_user([T1, T0])  # same set: no change
    assert s.assignment_id == first_id
    assert s.assign_from_user([T0, U0])
    assert s.assigned_partitions() == {T0, U0}
    assert s.is_paused(T0)
    assert s.position(T0) == FetchPosition(42)
    assert not s.has_valid_position(U0)
    assert s.subscription() == frozenset()  # manual assignment has no subscription
    assert s.metadata_topics() == {"a", "b"}


def test_assign_from_subscribed_requires_group_subscription() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    with pytest.raises(IllegalStateError):
        s.assign_from_subscribed([T0])
    s.unsubscribe()
    s.subscribe(["a"])
    s.assign_from_subscribed([T0, T1])
    s.seek(T1, 7)
    s.pause(T1)
    s.assign_from_subscribed([T1])
    assert s.assigned_partitions() == {T1}
    assert s.is_paused(T1) and s.position(T1) == FetchPosition(7)


def test_group_subscription_widens_metadata_topics() -> None:
    s = SubscriptionState()
    s.subscribe(["a"])
    assert s.group_subscribe(["a", "b"])
    assert s.metadata_topics() == {"a", "b"}
    assert s.needs_metadata("b")
    s.reset_group_subscription()
    assert s.metadata_topics() == {"a"}


def test_fetch_state_transitions_and_positions() -> None:
    s = SubscriptionState(OffsetResetStrategy.EARLIEST)
    s.assign_from_user([T0])
    st = s.assigned_state_or_none(T0)
    assert st is not None and st.fetch_state is FetchStates.INITIALIZING
    assert s.initializing_partitions() == [T0]
    assert not s.has_all_fetch_positions()
    s.reset_initializing_positions()
    assert s.is_offset_reset_needed(T0)
    assert s.reset_strategy(T0) is OffsetResetStrategy.EARLIEST
    assert s.partitions_needing_reset(0) == [T0]
    # A reset result for a different strategy is ignored.
    s.maybe_seek_unvalidated(T0, FetchPosition(5), OffsetResetStrategy.LATEST)
    assert s.is_offset_reset_needed(T0)
    s.maybe_seek_unvalidated(T0, FetchPosition(5), OffsetResetStrategy.EARLIEST)
    assert s.has_valid_position(T0) and s.position(T0) == FetchPosition(5)
    assert s.is_fetchable(T0)
    s.set_position(T0, FetchPosition(9, 3))
    assert s.all_consumed() == {T0: OffsetAndMetadata(9, "", 3)}


def test_set_position_requires_valid_position() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    with pytest.raises(IllegalStateError):
        s.set_position(T0, FetchPosition(1))


def test_reset_policy_none_raises_naming_partitions() -> None:
    s = SubscriptionState("none")
    s.assign_from_user([T0, T1])
    s.seek(T1, 3)
    with pytest.raises(NoOffsetForPartitionError) as info:
        s.reset_initializing_positions()
    assert info.value.partitions == {T0}


def test_retry_backoff_hides_partitions_until_due() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    s.request_offset_reset(T0)
    s.request_failed([T0], 1000)
    assert s.partitions_needing_reset(999) == []
    assert s.partitions_needing_reset(1000) == [T0]


def test_a_shorter_backoff_makes_a_reset_due_at_its_own_end() -> None:
    """A reset held for its in-flight request, then failed with a shorter backoff, is due when
    the shorter backoff ends; a new reset request makes its partition due at once."""
    s = SubscriptionState()
    s.assign_from_user([T0, T1])
    s.request_offset_reset(T0)
    s.set_next_allowed_retry([T0], 30_000)
    assert s.partitions_needing_reset(10) == []
    assert s.partitions_needing_reset(20) == []
    s.request_failed([T0], 100)
    assert s.partitions_needing_reset(99) == []
    assert s.partitions_needing_reset(100) == [T0]
    s.set_next_allowed_retry([T0], 30_000)
    assert s.partitions_needing_reset(200) == []
    s.request_offset_reset(T1)
    assert s.partitions_needing_reset(200) == [T1]
    assert s.partitions_needing_reset(30_000) == [T0, T1]


def test_a_shorter_backoff_makes_a_validation_due_at_its_own_end() -> None:
    """A validation held for its in-flight request, then failed with a shorter backoff, is due
    when the shorter backoff ends; a partition entering validation is due at once."""
    s = SubscriptionState()
    s.assign_from_user([T0, T1])
    s.seek_unvalidated(T0, FetchPosition(5, 1, LeaderAndEpoch(0, 2)))
    assert s.partitions_needing_validation(0) == [T0]
    s.set_next_allowed_retry([T0], 30_000)
    assert s.partitions_needing_validation(10) == []
    assert s.partitions_needing_validation(20) == []
    s.request_failed([T0], 100)
    assert s.partitions_needing_validation(99) == []
    assert s.partitions_needing_validation(100) == [T0]
    s.set_next_allowed_retry([T0], 30_000)
    assert s.partitions_needing_validation(200) == []
    s.seek_unvalidated(T1, FetchPosition(7, 1, LeaderAndEpoch(0, 2)))
    assert s.partitions_needing_validation(200) == [T1]
    assert s.partitions_needing_validation(30_000) == [T0, T1]


def test_initializing_partitions_of_a_new_assignment_are_reset() -> None:
    """Once no partition is initializing, partitions of a new assignment and partitions whose
    position is forgotten are reset again by reset_initializing_positions."""
    s = SubscriptionState(OffsetResetStrategy.EARLIEST)
    s.assign_from_user([T0])
    s.reset_initializing_positions()
    s.reset_initializing_positions()
    assert s.partitions_needing_reset(0) == [T0]
    s.assign_from_user([T0, U0])
    s.reset_initializing_positions()
    assert s.is_offset_reset_needed(U0)
    assert s.partitions_needing_reset(0) == [T0, U0]


def test_pause_resume_and_pending_revocation_gate_fetching() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0, T1])
    s.seek(T0, 0)
    s.seek(T1, 0)
    assert s.fetchable_partitions() == [T0, T1]
    s.pause(T0)
    assert s.fetchable_partitions() == [T1]
    assert s.paused_partitions() == {T0}
    s.resume(T0)
    s.mark_pending_revocation([T1])
    assert s.fetchable_partitions() == [T0]
    with pytest.raises(IllegalStateError):
        s.pause(U0)


def test_move_partition_to_end_rotates_fetch_order() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0, T1, U0])
    for tp in (T0, T1, U0):
        s.seek(tp, 0)
    s.move_partition_to_end(T0)
    assert s.fetchable_partitions() == [T1, U0, T0]


def test_validation_with_epochs() -> None:
    s = SubscriptionState(OffsetResetStrategy.EARLIEST)
    s.assign_from_user([T0])
    s.seek_unvalidated(T0, FetchPosition(100, 4, LeaderAndEpoch(1, 5)))
    assert s.awaiting_validation(T0)
    assert not s.is_fetchable(T0)
    pos = s.position(T0)
    assert pos is not None
    # The leader has the epoch and its end offset is beyond our position: valid.
    assert s.maybe_complete_validation(T0, pos, EpochEndOffset(4, 150)) is None
    assert s.is_fetchable(T0)


def test_truncation_resets_to_divergence_with_policy() -> None:
    s = SubscriptionState(OffsetResetStrategy.EARLIEST)
    s.assign_from_user([T0])
    s.seek_unvalidated(T0, FetchPosition(100, 4, LeaderAndEpoch(1, 5)))
    pos = s.position(T0)
    assert pos is not None
    assert s.maybe_complete_validation(T0, pos, EpochEndOffset(4, 80)) is None
    assert s.position(T0) == FetchPosition(80, 4, LeaderAndEpoch(1, 5))
    assert s.is_fetchable(T0)


def test_truncation_without_policy_is_reported() -> None:
    s = SubscriptionState(OffsetResetStrategy.NONE)
    s.assign_from_user([T0])
    s.seek_unvalidated(T0, FetchPosition(100, 4, LeaderAndEpoch(1, 5)))
    pos = s.position(T0)
    assert pos is not None
    trunc = s.maybe_complete_validation(T0, pos, EpochEndOffset(4, 80))
    assert trunc is not None and trunc.divergent_offset == OffsetAndMetadata(80, "", 4)
    # A stale answer (position moved meanwhile) is ignored.
    s.seek(T0, 5)
    assert s.maybe_complete_validation(T0, pos, EpochEndOffset(4, 80)) is None


def test_leader_change_triggers_validation_only_when_supported() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0, T1])
    s.seek_validated(T0, FetchPosition(10, 2, LeaderAndEpoch(1, 2)))
    s.seek_validated(T1, FetchPosition(10, 2, LeaderAndEpoch(1, 2)))
    assert s.maybe_validate_position_for_current_leader(T0, LeaderAndEpoch(2, 3), True)
    assert s.awaiting_validation(T0)
    assert not s.maybe_validate_position_for_current_leader(T1, LeaderAndEpoch(2, 3), False)
    assert s.is_fetchable(T1)
    assert s.position(T1) == FetchPosition(10, 2, LeaderAndEpoch(2, 3))


def test_lag_and_watermarks() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    s.seek(T0, 10)
    assert s.partition_lag(T0) is None
    s.update_high_watermark(T0, 25)
    s.update_last_stable_offset(T0, 20)
    s.update_log_start_offset(T0, 4)
    assert s.partition_lag(T0) == 15
    assert s.partition_lag(T0, read_committed=True) == 10
    assert s.partition_lead(T0) == 6
    assert s.partition_lag_and_lead(T0) == (15, 6)
    assert s.partition_lag_and_lead(T0, read_committed=True) == (10, 6)


def test_preferred_read_replica_expires() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    s.update_preferred_read_replica(T0, 3, expire_ms=100)
    assert s.preferred_read_replica(T0, 50) == 3
    assert s.preferred_read_replica(T0, 101) is None
    s.update_preferred_read_replica(T0, 3, expire_ms=100)
    assert s.clear_preferred_read_replica(T0) == 3
    assert s.preferred_read_replica(T0, 0) is None


def test_reset_strategy_parse() -> None:
    assert OffsetResetStrategy.parse("Earliest") is OffsetResetStrategy.EARLIEST
    with pytest.raises(ValueError):
        OffsetResetStrategy.parse("smallest")
