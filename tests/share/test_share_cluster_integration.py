"""KafkaShareConsumer on the three-broker Apache Kafka 4.4 cluster (the session's
``kafka_cluster``, whose share-state topic has three replicas and min.isr 1): the partition's
leader stopped, and the share coordinator's broker stopped, while the consumer holds records.
Nothing is lost (every record ends accepted, none accepted twice), and the acknowledgements the
fault kept from applying are reported failed in the commit callback, never dropped silently."""

from __future__ import annotations

import base64
import collections
import time
from typing import Any

import pytest

from kafkaconsumer import AcknowledgeType, KafkaShareConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name
from tests.share.member import Member, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOTAL = 60


def _share_coordinator(bootstrap: str, group: str, topic: str) -> int:
    """The broker id of the share coordinator of ``group``'s state for ``topic``-0
    (FindCoordinator with the share key type)."""
    member = Member(bootstrap, group, topic)
    try:
        topic_id = member.metadata.fetch().topic_id(topic)
        assert topic_id is not None
        # The key names the topic id as Kafka prints a Uuid: URL-safe base64, no padding.
        key_id = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()
        node = member.metadata.fetch().brokers()[0].node_id
        for _ in range(100):
            body = member.call(
                node,
                ApiKey.FIND_COORDINATOR,
                {"key_type": 2, "coordinator_keys": [f"{group}:{key_id}:0"]},
            )
            (c,) = body["coordinators"]
            if c["error_code"] == 0:
                return int(c["node_id"])
            time.sleep(0.1)
        raise AssertionError("no share coordinator")
    finally:
        member.client.close()


@pytest.mark.parametrize("fault", ["partition leader", "share coordinator"])
def test_a_stopped_broker_loses_nothing_and_failed_acknowledgements_are_reported(
    kafka_cluster: Any, fault: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    if ApiKey.SHARE_FETCH not in kafka_cluster.api_versions():
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    group = unique_name("share-cl-g")
    for _ in range(6):
        topic = unique_name("share-cl")
        kafka_cluster.create_topic(topic, partitions=1, replication=3)
        leader = kafka_cluster.leader_of(topic)
        coordinator = _share_coordinator(bootstrap, group, topic)
        # Each fault on its own: a coordinator that is not also the partition's leader.
        if fault == "partition leader" or coordinator != leader:
            break
    else:
        pytest.skip("the share coordinator kept landing on the partition's leader")
    with KafkaAdminClient(bootstrap_servers=bootstrap) as admin:
        admin.incremental_alter_configs(
            {
                ConfigResource("group", group): {
                    "share.auto.offset.reset": "earliest",
                    "share.record.lock.duration.ms": "15000",
                }
            }
        )
    produce(bootstrap, topic, TOTAL)
    tp = TopicPartition(topic, 0)
    accepted: collections.Counter[int] = collections.Counter()
    reported: dict[int, list[str]] = {}

    def on_commit(offsets: dict[TopicPartition, set[int]], exc: Any) -> None:
        for offset in offsets[tp]:
            reported.setdefault(offset, []).append(type(exc).__name__)
            if exc is None:
                accepted[offset] += 1

    c = KafkaShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group},
        share_acknowledgement_mode="explicit",
        max_poll_records=10,
        fetch_max_wait_ms=200,
    )
    try:
        c.set_acknowledgement_commit_callback(on_commit)
        c.subscribe([topic])
        held: list[Any] = []
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:
            held = list(c.poll(timeout_ms=300))
        assert held
        victim = leader if fault == "partition leader" else coordinator
        kafka_cluster.stop_node(victim)
        # Acknowledged while (or after) the broker went away: applied, or reported failed.
        for r in held:
            c.acknowledge(r, AcknowledgeType.ACCEPT)
        c.commit_sync(timeout_ms=30_000)
        assert {r.offset for r in held} <= set(reported), "an acknowledgement was dropped"
        deadline = time.monotonic() + 180
        while set(accepted) != set(range(TOTAL)) and time.monotonic() < deadline:
            batch: list[Any] = list(c.poll(timeout_ms=300))
            for r in batch:
                c.acknowledge(r, AcknowledgeType.ACCEPT)
            c.commit_sync(timeout_ms=30_000)
    finally:
        c.close(timeout_ms=10_000)
    failed = {o for o, outcomes in reported.items() if any(x != "NoneType" for x in outcomes)}
    print(f"{fault} stopped (node {victim}): {len(failed)} acknowledgements reported failed")
    assert sorted(accepted) == list(range(TOTAL)), "records were lost"
    assert set(accepted.values()) == {1}, "records were accepted twice"
    if fault == "partition leader":
        # The leader went away with the held records' locks: their acknowledgements failed.
        assert {r.offset for r in held} <= failed
