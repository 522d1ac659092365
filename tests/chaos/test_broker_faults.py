"""Broker faults on the three-broker Apache Kafka cluster (the session's ``kafka_cluster``):
the leader of a partition killed and restarted, a graceful restart, the group coordinator's
broker stopped so that the coordinator moves. Every member and the producer talk to the brokers
directly. See ``tests/chaos/scenario.py`` for the workload and the invariants; the fixture
restarts whatever is stopped and waits for full ISRs after each test.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.chaos.scenario import member_config, run_scenario
from tests.chaos.workload import Member
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _setup(cluster: Any) -> tuple[str, str, list[dict[str, Any]]]:
    topic = unique_name("chaos-brk")
    cluster.create_topic(topic, partitions=6, replication=3)
    group = unique_name("chaos-g")
    return (
        topic,
        group,
        [
            member_config(cluster.bootstrap_servers, group, name, metadata_max_age_ms=5000)
            for name in ("a", "b", "c")
        ],
    )


def test_partition_leader_killed_and_restarted(kafka_cluster: Any) -> None:
    topic, group, configs = _setup(kafka_cluster)
    victim: list[int] = []

    def fault(members: list[Member]) -> float:
        leader = kafka_cluster.leader_of(topic, 0)
        victim.append(leader)
        kafka_cluster.kill_node(leader)  # SIGKILL
        time.sleep(3)
        kafka_cluster.start_node(leader)
        return time.monotonic()

    out = run_scenario(
        "leader broker SIGKILLed, restarted 3 s later",
        topic=topic,
        direct_bootstrap=kafka_cluster.bootstrap_servers,
        fault=fault,
        configs=configs,
    )
    out.extra["killed broker"] = victim[0]
    print(out.line())
    assert not out.duplicates, out.line()


def test_graceful_broker_restart(kafka_cluster: Any) -> None:
    topic, group, configs = _setup(kafka_cluster)

    def fault(members: list[Member]) -> float:
        kafka_cluster.restart_node(kafka_cluster.leader_of(topic, 1))
        return time.monotonic()

    out = run_scenario(
        "leader broker restarted gracefully",
        topic=topic,
        direct_bootstrap=kafka_cluster.bootstrap_servers,
        fault=fault,
        configs=configs,
    )
    print(out.line())
    assert not out.duplicates, out.line()


def test_coordinator_broker_stopped_coordinator_moves(kafka_cluster: Any) -> None:
    topic, group, configs = _setup(kafka_cluster)
    moved: list[int] = []

    def fault(members: list[Member]) -> float:
        old = kafka_cluster.coordinator_of(group)
        kafka_cluster.stop_node(old)
        new = kafka_cluster.coordinator_of(group)
        moved.extend([old, new])
        time.sleep(2)
        return time.monotonic()

    out = run_scenario(
        "group coordinator's broker stopped",
        topic=topic,
        direct_bootstrap=kafka_cluster.bootstrap_servers,
        fault=fault,
        configs=configs,
    )
    out.extra["coordinator"] = f"{moved[0]} -> {moved[1]}"
    print(out.line())
    assert moved[0] != moved[1]
    assert not out.duplicates, out.line()
