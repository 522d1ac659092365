"""``close(CloseOptions)`` (KIP-1092) on a real broker: whether the member leaves the group or
stays in it, as the broker's group description shows right after close().

Classic protocol: a dynamic member leaves by default, a static one stays; LEAVE_GROUP makes a
static member leave, REMAIN_IN_GROUP keeps a dynamic one. Consumer protocol (KIP-848): a
static member stays with epoch -2 by default and when asked to remain, and leaves with epoch -1
on LEAVE_GROUP; a dynamic member leaves by default and stays when asked to remain.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer import CloseOptions, GroupMembershipOperation, KafkaConsumer
from kafkaconsumer.admin import KafkaAdminClient
from tests.group.members import create_topic
from tests.helpers import unique_name

pytestmark = pytest.mark.integration

CONSUMER_GROUP_HEARTBEAT = 68
DEFAULT = GroupMembershipOperation.DEFAULT
LEAVE = GroupMembershipOperation.LEAVE_GROUP
REMAIN = GroupMembershipOperation.REMAIN_IN_GROUP


@pytest.mark.parametrize(
    ("protocol", "static", "operation", "stays"),
    [
        ("classic", False, DEFAULT, False),
        ("classic", False, REMAIN, True),
        ("classic", True, DEFAULT, True),
        ("classic", True, LEAVE, False),
        ("consumer", False, DEFAULT, False),
        ("consumer", False, REMAIN, True),
        ("consumer", True, DEFAULT, True),
        ("consumer", True, LEAVE, False),
        ("consumer", True, REMAIN, True),
    ],
)
def test_close_options_membership(
    broker: Any, protocol: str, static: bool, operation: GroupMembershipOperation, stays: bool
) -> None:
    """After close(CloseOptions(operation)) the broker lists the member or not, per protocol
    and membership kind."""
    if broker.is_tansu:
        pytest.skip("Tansu 0.6 describes a Stable group with an empty member list")
    if protocol == "consumer" and not broker.supports(CONSUMER_GROUP_HEARTBEAT):
        pytest.skip(f"the {broker.kind} broker has no consumer group protocol")
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, 2, prefix="close-options")
    group = unique_name("close-options")
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
    }
    if static:
        config["group.instance.id"] = unique_name("instance")
    admin = KafkaAdminClient({"bootstrap.servers": bootstrap})
    consumer = KafkaConsumer(config)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer was never assigned partitions"
            consumer.poll(200)
        assert len(admin.describe_groups([group])[group].members) == 1
        consumer.close(CloseOptions(operation, timeout_ms=10000))
        members = admin.describe_groups([group])[group].members
        if stays:
            assert len(members) == 1, "the member left the group"
            if static:
                assert members[0].group_instance_id == config["group.instance.id"]
        else:
            assert members == (), f"the member is still in the group: {members}"
    finally:
        consumer.close(0)
        admin.close()
