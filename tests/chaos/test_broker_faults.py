"""Broker faults on the three-broker Apache Kafka cluster (the session's ``kafka_cluster``).
Every member and the producer talk to the brokers directly. See
``benchmarks/harness/chaos_scenario.py`` for the workload and the invariants; the fixture
restarts whatever is stopped and waits for full ISRs after each test.

In CI (:data:`FAULTS`): the broker leading a partition SIGKILLed and restarted; the group
coordinator's broker restarted gracefully, waiting while it is down until the coordinator has
moved (one broker stop and start, the costly part here, proves both the graceful restart of a
leader and the coordinator's move). The faults themselves are in
``benchmarks/harness/chaos_faults.py``, which ``benchmarks/chaos_compare.py`` also runs (the
restart and the coordinator's move apart, the broker left down) with librdkafka's consumer.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness.chaos_faults import (
    FaultBuilder,
    coordinator_restarted,
    leader_killed,
    run_broker_fault,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FAULTS: list[tuple[str, FaultBuilder]] = [
    ("leader broker SIGKILLed, restarted 3 s later", leader_killed),
    ("coordinator's broker restarted gracefully (coordinator moves)", coordinator_restarted),
]


@pytest.mark.parametrize("name,build", FAULTS, ids=["leader-killed", "coordinator-restart"])
def test_broker_fault(kafka_cluster: Any, name: str, build: FaultBuilder) -> None:
    out, notes = run_broker_fault(kafka_cluster, name, build)
    print(out.line())
    assert notes.get("moved", True), "the coordinator did not move"
    # The graceful restart took leaderships away too (a fresh topic spreads them evenly).
    assert notes.get("partitions it led", 1) >= 1, out.line()
    assert not out.duplicates, out.line()
