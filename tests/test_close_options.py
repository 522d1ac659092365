"""CloseOptions (KIP-1092): construction, Java's spellings, and how close() reads them."""

from __future__ import annotations

import datetime

import pytest

from kafkaconsumer import CloseOptions, GroupMembershipOperation, KafkaConsumer


def test_defaults_and_builders() -> None:
    """The defaults are DEFAULT and no timeout; the builders return changed copies."""
    options = CloseOptions()
    assert options.group_membership_operation is GroupMembershipOperation.DEFAULT
    assert options.timeout_ms is None
    changed = CloseOptions.timeout(5000).with_group_membership_operation(
        CloseOptions.GroupMembershipOperation.LEAVE_GROUP
    )
    assert changed == CloseOptions(GroupMembershipOperation.LEAVE_GROUP, 5000)
    assert options.timeout_ms is None
    later = CloseOptions.membership(GroupMembershipOperation.REMAIN_IN_GROUP).with_timeout(
        datetime.timedelta(seconds=2)
    )
    assert later.timeout_ms == datetime.timedelta(seconds=2)
    assert later.group_membership_operation is GroupMembershipOperation.REMAIN_IN_GROUP


@pytest.mark.parametrize(
    ("operation", "leave_group"),
    [
        (GroupMembershipOperation.DEFAULT, None),
        (GroupMembershipOperation.LEAVE_GROUP, True),
        (GroupMembershipOperation.REMAIN_IN_GROUP, False),
    ],
)
def test_operation_maps_to_leave_group(
    operation: GroupMembershipOperation, leave_group: bool | None
) -> None:
    """Each operation is the close(leave_group=...) value the group members act on."""
    assert CloseOptions(operation).leave_group() is leave_group


def test_wrong_operation_type_raises() -> None:
    """A string instead of a GroupMembershipOperation is refused."""
    with pytest.raises(TypeError, match="GroupMembershipOperation"):
        CloseOptions("LEAVE_GROUP")  # type: ignore[arg-type]


def test_close_takes_options_and_refuses_leave_group_beside_them() -> None:
    """close(CloseOptions) closes the consumer; leave_group next to options is a TypeError."""
    consumer = KafkaConsumer({"bootstrap.servers": "localhost:1"})
    with pytest.raises(TypeError, match="leave_group"):
        consumer.close(CloseOptions(), leave_group=True)
    consumer.close(CloseOptions.timeout(0))
    consumer.close(CloseOptions.timeout(0))
