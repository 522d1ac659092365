"""One chaos scenario: a producer, a group of three members, one fault, the invariants.

:func:`run_scenario` starts the :class:`~benchmarks.harness.chaos_workload.Producer` and three
:class:`~benchmarks.harness.chaos_workload.Member` threads, waits until the group consumes (and
``fault_delay_s`` more), applies the fault (a callable that injects it, waits, heals it and returns the moment it healed), then
measures the recovery time: from the heal until every record acknowledged before the heal has been
consumed. It goes on for ``observe_s`` after the heal, and until ``settled(members)`` when given (a
condition the test waits for rather than a fixed time), and counts the assignments the members
received so far (a rebalance adds one per member). It stops the producer, waits until every
acknowledged record is consumed, stops the members and checks that none crashed. It returns a
:class:`Outcome` for the test's own checks (duplicates, rebalances, CPU while cut off) and prints
one line for the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.chaos_workload import Ledger, Member, Producer, wait_until

__all__ = ["Outcome", "run_scenario", "member_config", "RESULTS"]

#: Every outcome of this session, for a summary at the end (see conftest.py).
RESULTS: list[Outcome] = []


def member_config(bootstrap: str, group: str, name: str, **extra: Any) -> dict[str, Any]:
    """A member's consumer settings: commits by hand, a 10 s session (so that a 5 s fault stays
    inside it), a bounded rebalance (max.poll.interval.ms 20 s) and quick reconnects."""
    cfg: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "client_id": name,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": 10_000,
        "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 20_000,
        "request_timeout_ms": 5000,
        "default_api_timeout_ms": 20_000,
        "reconnect_backoff_ms": 50,
        "reconnect_backoff_max_ms": 1000,
        "retry_backoff_ms": 100,
        "max_poll_records": 200,
    }
    cfg.update(extra)
    return cfg


@dataclass
class Outcome:
    """What a scenario measured."""

    name: str
    recovery_s: float
    acked: int
    consumed: int
    duplicates: dict[int, int]
    members: list[Member]
    fault_window: tuple[float, float]
    #: Assignments handed to the members (all of them) up to the end of the observation.
    assignments: int
    #: The longest a record acknowledged from 1 s before the fault to the heal waited (s).
    worst_delay_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """One line for the report."""
        return (
            f"{self.name}: recovered {self.recovery_s:.2f} s after the heal, worst record "
            f"delay {self.worst_delay_s:.2f} s; "
            f"{self.consumed}/{self.acked} records, {len(self.duplicates)} delivered twice"
            + "".join(f"; {k} {v}" for k, v in self.extra.items())
        )


def run_scenario(
    name: str,
    *,
    direct_bootstrap: str,
    topic: str,
    configs: list[dict[str, Any]],
    fault: Callable[[list[Member]], float],
    rate: float = 150.0,
    process_s: list[Callable[[], float] | None] | None = None,
    recovery_timeout: float = 90.0,
    observe_s: float = 0.0,
    settled: Callable[[list[Member]], bool] | None = None,
    member_cls: type[Member] = Member,
    manual_partitions: list[list[int]] | None = None,
    fault_delay_s: float = 0.0,
) -> Outcome:
    """Run one fault against a group of ``len(configs)`` members (see the module docstring).

    ``member_cls`` may be another client's twin of :class:`Member` (benchmarks/chaos_compare.py
    runs librdkafka through the same scenarios). ``manual_partitions`` (one list per member)
    makes the members assign those partitions instead of subscribing.

    ``fault_delay_s`` is waited between the moment the group is seen consuming steadily and the
    fault. That moment is when a member has just been handed records, so it is about to commit:
    without a delay every run would hit the members at the same point of their loop (a
    comparison draws the delay at random, see benchmarks/chaos_compare.py)."""
    ledger = Ledger()
    producer = Producer(direct_bootstrap, topic, ledger, rate=rate)
    members = [
        member_cls(
            cfg["client_id"],
            cfg,
            topic,
            ledger,
            process_s=(process_s or [None] * len(configs))[i],
            partitions=manual_partitions[i] if manual_partitions else None,
        )
        for i, cfg in enumerate(configs)
    ]
    producer.start()
    for m in members:
        m.start()
    try:
        wait_until(
            lambda: all(m.assignments and m.assignments[-1] for m in members),
            60,
            "every member to get partitions",
        )
        wait_until(
            lambda: ledger.counts()[1] >= 100 and ledger.caught_up(time.monotonic() - 1),
            60,
            "the group to consume steadily",
        )
        if fault_delay_s > 0:
            time.sleep(fault_delay_s)
        started = time.monotonic()
        healed = fault(members)
        recovery = wait_until(
            lambda: ledger.caught_up(healed),
            recovery_timeout,
            f"{name}: the group to catch up after the heal",
        )
        # Keep running for observe_s after the heal (a late session expiry would show), then
        # count the group's rebalances before shutdown adds its own.
        time.sleep(max(0.0, healed + observe_s - time.monotonic()))
        if settled is not None:
            wait_until(lambda: settled(members), 60, f"{name}: the group to settle")
        assignments = sum(len(m.assignments) for m in members)
        worst = ledger.worst_delay(started - 1, healed)
        producer.stop()
        wait_until(
            lambda: not ledger.missing(),
            60,
            f"{name}: every acknowledged record to be consumed (missing {ledger.missing()[:20]})",
        )
    finally:
        producer.stop()
        for m in members:
            m.halt()
        for m in members:
            m.stop()
    for m in members:
        assert m.crashed is None, f"{m.member} died: {m.crashed!r}"
        assert not m.is_alive(), f"{m.member} did not stop"
    assert not producer.errors, producer.errors[:5]
    acked, consumed = ledger.counts()
    outcome = Outcome(
        name,
        recovery,
        acked,
        consumed,
        ledger.duplicates(),
        members,
        (started, healed),
        assignments,
        worst,
    )
    RESULTS.append(outcome)
    return outcome
