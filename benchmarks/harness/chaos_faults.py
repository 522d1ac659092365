"""Faults the chaos scenarios inject: broker stops and restarts on a three-broker cluster,
connections reset mid-reply through a fault proxy.

The chaos tests (``tests/chaos/``) run them with our consumer and assert the invariants;
``benchmarks/chaos_compare.py`` runs them with ours and librdkafka's and reports recovery times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.harness.chaos_scenario import Outcome, member_config, run_scenario
from benchmarks.harness.chaos_workload import Member
from benchmarks.harness.cluster_ops import unique_name
from benchmarks.harness.proxy import FaultProxy

__all__ = [
    "FaultBuilder",
    "coordinator_restarted",
    "coordinator_stopped",
    "leader_killed",
    "leader_restarted",
    "reset_repeatedly",
    "run_broker_fault",
]

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


def run_broker_fault(
    cluster: Any,
    name: str,
    build: FaultBuilder,
    member_cls: type[Member] = Member,
    fault_delay_s: float = 0.0,
) -> tuple[Outcome, dict[str, Any]]:
    """One broker fault (a :data:`FaultBuilder`) against a fresh topic (6 partitions, 3 replicas)
    and group; ``fault_delay_s`` as :func:`run_scenario`'s."""
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
        fault_delay_s=fault_delay_s,
    )
    out.extra.update((k, v) for k, v in notes.items() if k != "moved")
    return out, notes


def reset_repeatedly(proxy: FaultProxy, seconds: float, after_bytes: Callable[[], int]) -> int:
    """Reset connections in the middle of broker replies for ``seconds``: each cut waits for
    the reconnection it causes before the next. Returns the number of cuts."""
    cuts = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        before = proxy.accepted
        proxy.cut_mid_response(after_bytes=after_bytes())
        cuts += 1
        proxy.wait_for_accepted(before + 1, timeout=3)
        time.sleep(0.3)
    return cuts
