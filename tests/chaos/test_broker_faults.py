"""Broker faults on the three-broker Apache Kafka cluster (the session's ``kafka_cluster``).
Every member and the producer talk to the brokers directly. See ``tests/chaos/scenario.py`` for
the workload and the invariants; the fixture restarts whatever is stopped and waits for full
ISRs after each test.

In CI (:data:`FAULTS`): the broker leading a partition SIGKILLed and restarted; the group
coordinator's broker restarted gracefully, waiting while it is down until the coordinator has
moved (one broker stop and start, the costly part here, proves both the graceful restart of a
leader and the coordinator's move). ``benchmarks/chaos_compare.py`` runs
:data:`COMPARED_FAULTS` (the restart and the coordinator's move apart, the broker left down)
with librdkafka's consumer too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.chaos.scenario import Outcome, member_config, run_scenario
from tests.chaos.workload import Member
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: ``fault(cluster, topic, group, notes)`` returns the scenario's fault callable, which injects
#: the fault, heals it and returns the moment of the heal; it may add to ``notes`` (report).
FaultBuilder = Callable[[Any, str, str, dict[str, Any]], Callable[[list[Member]], float]]


def leader_killed(
    cluster: Any, topic: str, group: str, notes: dict[str, Any]
) -> Callable[[list[Member]], float]:
    """SIGKILL the broker leading partition 0, start it again 3 s later."""

    def fault(members: list[Member]) -> float:
        leader = cluster.leader_of(topic, 0)
        notes["killed broker"] = leader
        cluster.kill_node(leader)
        time.sleep(3)
        cluster.start_node(leader)
        return time.monotonic()

    return fault


def leader_restarted(
    cluster: Any, topic: str, group: str, notes: dict[str, Any]
) -> Callable[[list[Member]], float]:
    """Restart the broker leading partition 1 gracefully (controlled shutdown, start)."""

    def fault(members: list[Member]) -> float:
        cluster.restart_node(cluster.leader_of(topic, 1))
        return time.monotonic()

    return fault


def coordinator_stopped(
    cluster: Any, topic: str, group: str, notes: dict[str, Any]
) -> Callable[[list[Member]], float]:
    """Stop the group coordinator's broker (it stays down: the coordinator moves)."""

    def fault(members: list[Member]) -> float:
        old = cluster.coordinator_of(group)
        cluster.stop_node(old)
        new = cluster.coordinator_of(group)
        notes["coordinator"] = f"{old} -> {new}"
        notes["moved"] = old != new
        time.sleep(2)
        return time.monotonic()

    return fault


def coordinator_restarted(
    cluster: Any, topic: str, group: str, notes: dict[str, Any]
) -> Callable[[list[Member]], float]:
    """Stop the group coordinator's broker gracefully, wait until the coordinator has moved
    (and 2 s more), start the broker again."""
    stop = coordinator_stopped(cluster, topic, group, notes)

    def fault(members: list[Member]) -> float:
        led = [p for p in range(6) if cluster.leader_of(topic, p) == cluster.coordinator_of(group)]
        notes["partitions it led"] = len(led)
        stop(members)
        old = int(notes["coordinator"].split(" -> ")[0])
        cluster.start_node(old)
        return time.monotonic()

    return fault


FAULTS: list[tuple[str, FaultBuilder]] = [
    ("leader broker SIGKILLed, restarted 3 s later", leader_killed),
    ("coordinator's broker restarted gracefully (coordinator moves)", coordinator_restarted),
]
COMPARED_FAULTS: list[tuple[str, FaultBuilder]] = [
    ("leader broker SIGKILLed, restarted 3 s later", leader_killed),
    ("leader broker restarted gracefully", leader_restarted),
    ("group coordinator's broker stopped", coordinator_stopped),
]


def run_broker_fault(
    cluster: Any, name: str, build: FaultBuilder, member_cls: type[Member] = Member
) -> tuple[Outcome, dict[str, Any]]:
    """One fault of :data:`FAULTS` against a fresh topic (6 partitions, 3 replicas) and group."""
    topic = unique_name("chaos-brk")
    cluster.create_topic(topic, partitions=6, replication=3)
    group = unique_name("chaos-g")
    notes: dict[str, Any] = {}
    out = run_scenario(
        name,
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=build(cluster, topic, group, notes),
        configs=[
            member_config(cluster.bootstrap_servers, group, m, metadata_max_age_ms=5000)
            for m in ("a", "b", "c")
        ],
        member_cls=member_cls,
    )
    out.extra.update((k, v) for k, v in notes.items() if k != "moved")
    return out, notes


@pytest.mark.parametrize("name,build", FAULTS, ids=["leader-killed", "coordinator-restart"])
def test_broker_fault(kafka_cluster: Any, name: str, build: FaultBuilder) -> None:
    out, notes = run_broker_fault(kafka_cluster, name, build)
    print(out.line())
    assert notes.get("moved", True), "the coordinator did not move"
    # The graceful restart took leaderships away too (a fresh topic spreads them evenly).
    assert notes.get("partitions it led", 1) >= 1, out.line()
    assert not out.duplicates, out.line()
