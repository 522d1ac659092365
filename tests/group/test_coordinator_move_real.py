"""The group coordinator's broker goes away (3-broker Apache Kafka cluster): the member finds the
new coordinator (FindCoordinator after NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE or a lost
connection), keeps consuming, and its commits land there; no record is lost. A controlled
shutdown hands the group over without a rebalance, so nothing is processed twice either; a crash
may cost one rebalance (records after the last commit come again: at-least-once).
"""

from __future__ import annotations

import pytest

from benchmarks.harness.apache_kafka import KafkaCluster
from kafkaconsumer.structs import TopicPartition
from tests.group.members import Ledger, Member, produce, wait_until
from tests.helpers import unique_name, wait_for

pytestmark = [pytest.mark.integration]

PARTITIONS = 3
PER_PARTITION = 400


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_member_follows_the_coordinator_to_another_broker(
    kafka_cluster: KafkaCluster, how: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("coord")
    kafka_cluster.create_topic(topic, partitions=PARTITIONS, replication=3)
    produce(bootstrap, topic, PARTITIONS, PER_PARTITION)
    group = unique_name("g-coord")
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    ledger = Ledger()
    # Commit after every poll, so a crash re-delivers at most one poll's records.
    member = Member(
        "m",
        bootstrap,
        group,
        [topic],
        ledger,
        delay_per_poll_s=0.05,
        max_poll_records=5,
        on_poll=lambda m, recs: m.consumer.commit_sync() if len(recs) else None,
        session_timeout_ms=10000,
    )
    member.start()
    try:
        wait_until(
            lambda: member.assignment() == everything and ledger.count("m") > 20,
            60,
            "the member consuming",
            [member],
        )
        old = kafka_cluster.coordinator_of(group)
        processed = ledger.count("m")
        if how == "stop":
            kafka_cluster.stop_node(old)
        else:
            kafka_cluster.kill_node(old)
        # After a crash the controller fences the broker only when its session expires
        # (broker.session.timeout.ms); until then FindCoordinator still names it.
        new = wait_for(
            lambda: (now := kafka_cluster.coordinator_of(group, timeout=60)) != old and now,
            timeout=60,
            message="a new coordinator",
        )
        assert new in (1, 2, 3)
        wait_until(
            lambda: ledger.count("m") > processed + 50,
            90,
            "consumption after the coordinator moved",
            [member],
        )
        member.delay_per_poll_s = 0.0
        wait_until(
            lambda: len(ledger.distinct()) >= PARTITIONS * PER_PARTITION,
            90,
            "every record processed",
            [member],
        )
    finally:
        member.stop()
    assert member.error is None, member.error
    assert ledger.distinct() == {
        (topic, p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)
    }
    if how == "stop":
        assert ledger.duplicates() == []
    # The final commits reached the new coordinator.
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTp

    check = Consumer(
        {"bootstrap.servers": kafka_cluster.live_bootstrap_servers(), "group.id": group}
    )
    try:
        committed = check.committed([CkTp(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        check.close()
    assert sorted(tp.offset for tp in committed) == [PER_PARTITION] * PARTITIONS
