"""Share-group administration against Apache Kafka 4.4, checked against what the broker
reports: listing with the group type, describing members and assignments, start offsets and
lag, resets to the earliest offset and to a timestamp, explicit alters, deleting offsets and
groups, and group configurations."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.admin import EARLIEST, ConfigResource, KafkaAdminClient
from kafkaconsumer.errors import NonEmptyGroupError
from kafkaconsumer.internals.fetch.acknowledgements import AcknowledgeType
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.cli.conftest import run_cli
from tests.helpers import unique_name, wait_for
from tests.share.member import Member, by_node, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

BASE_TS = 1_700_000_000_000


@pytest.fixture
def admin(broker: Any) -> Iterator[KafkaAdminClient]:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    with KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


def _fetch(member: Member, want: int) -> list[Any]:
    """What ``member`` fetches until ``want`` records came, or a minute passed: the first
    fetches of a share partition can come back empty while the broker loads its state, for
    seconds on a loaded machine."""
    got: list[Any] = []
    deadline = time.monotonic() + 60
    while len(got) < want and time.monotonic() < deadline:
        got += member.fetch(want=want - len(got))
    return got


@pytest.fixture
def group(admin: KafkaAdminClient, broker: Any) -> Iterator[tuple[str, str, Member]]:
    """A share group (reading from the earliest offset) whose one member consumed and accepted
    the 10 records of a one-partition topic and is still in the group."""
    topic, group_id = unique_name("share-adm"), unique_name("share-adm-g")
    admin.create_topics({topic: 1})
    admin.incremental_alter_configs(
        {ConfigResource("group", group_id): {"share.auto.offset.reset": "earliest"}}
    )
    member = Member(broker.bootstrap_servers, group_id, topic)
    member.join()
    # A share partition starts where its log ends when it is first fetched, unless the group's
    # reset policy, which the broker applies a moment after the alter returns, says earliest:
    # fetching the empty topic once first makes the start 0 either way.
    assert member.fetch(want=0) == []
    produce(broker.bootstrap_servers, topic, 10, timestamp_ms=BASE_TS)
    got = _fetch(member, 10)
    assert len(got) == 10
    settled = member.settle(by_node(got, AcknowledgeType.ACCEPT))
    assert settled and all(a.error_code == 0 for _tp, a in settled)
    left = False
    try:
        yield topic, group_id, member
        left = True
    finally:
        if not left:
            member.leave()


def test_list_and_describe_a_share_group(admin: KafkaAdminClient, group: Any) -> None:
    topic, group_id, member = group
    listed = {g.group_id: g for g in admin.list_groups()}
    assert listed[group_id].type == "share"
    assert group_id in {g.group_id for g in admin.list_share_groups()}

    (described,) = admin.describe_share_groups([group_id]).values()
    assert described.group_id == group_id and described.state == "Stable"
    assert described.group_epoch >= 1 and described.assignor
    (m,) = described.members
    assert m.member_id == member.member_id
    assert m.assignment == (TopicPartition(topic, 0),)
    assert m.subscribed_topics == (topic,)
    missing = unique_name("share-adm-missing")
    assert admin.describe_share_groups([missing])[missing].state == "Dead"
    member.leave()
    assert admin.describe_share_groups([group_id])[group_id].members == ()


def test_offsets_lag_resets_and_deletes(admin: KafkaAdminClient, group: Any, broker: Any) -> None:
    topic, group_id, member = group
    tp = TopicPartition(topic, 0)
    wait_for(
        lambda: admin.list_share_group_offsets(group_id).get(tp),
        message="share state of the partition",
    )
    info = admin.list_share_group_offsets(group_id)[tp]
    # Kafka 4.4 reports the start offset of its persisted share state, which moves past
    # accepted records lazily: 0 or 10 here, with no lag either way.
    assert info.lag == 0
    assert info.start_offset in (0, 10)

    # Offsets can only change while the group has no members.
    with pytest.raises(NonEmptyGroupError):
        admin.alter_share_group_offsets(group_id, {tp: 0})
    member.leave()

    assert admin.reset_share_group_offsets(group_id, [tp], EARLIEST) == {tp: 0}
    info = admin.list_share_group_offsets(group_id, [tp])[tp]
    assert (info.start_offset, info.lag) == (0, 10)

    assert admin.reset_share_group_offsets(group_id, [tp], BASE_TS + 7) == {tp: 7}
    assert admin.list_share_group_offsets(group_id)[tp].start_offset == 7

    admin.alter_share_group_offsets(group_id, {tp: 4})
    assert admin.list_share_group_offsets(group_id)[tp].start_offset == 4
    # A new member starts at the altered start offset.
    again = Member(broker.bootstrap_servers, group_id, topic)
    again.join()
    got = _fetch(again, 6)
    assert sorted(r.offset for _n, r in got) == list(range(4, 10))
    again.leave()

    admin.delete_share_group_offsets(group_id, [topic])
    assert admin.list_share_group_offsets(group_id) == {}
    admin.delete_share_groups([group_id])
    wait_for(
        lambda: group_id not in {g.group_id for g in admin.list_share_groups()},
        message="deleted share group gone",
    )


def test_groups_command_lists_a_share_group_with_its_type(group: Any, broker: Any) -> None:
    _topic, group_id, _member = group
    run = run_cli("groups", "list", "--json", "--bootstrap-server", broker.bootstrap_servers)
    assert run.code == 0, run
    listed = next(g for g in json.loads(run.out) if g["group"] == group_id)
    assert (listed["type"], listed["state"]) == ("share", "Stable")
