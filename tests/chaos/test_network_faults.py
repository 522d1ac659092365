"""Network faults between one group member and the broker, through the fault proxy.

One Apache Kafka node (module-scoped, :class:`~tests.chaos.cluster.ProxiedKafkaCluster`): member
``a`` reaches it through the proxy, members ``b`` and ``c`` and the producer directly, so the
fault hits ``a`` alone and the group has to live with it. See ``tests/chaos/scenario.py`` for
the workload and the invariants.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.errors import CommitFailedError
from tests.chaos.cluster import ProxiedKafkaCluster
from tests.chaos.scenario import member_config, run_scenario
from tests.chaos.workload import Member
from tests.helpers import unique_name
from tests.support import apache_kafka

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def proxied() -> Iterator[ProxiedKafkaCluster]:
    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")
    with ProxiedKafkaCluster(brokers=1) as cluster:
        yield cluster


@pytest.fixture
def setup(proxied: ProxiedKafkaCluster) -> Iterator[tuple[ProxiedKafkaCluster, str, str]]:
    topic = unique_name("chaos-net")
    proxied.create_topic(topic, partitions=6)
    yield proxied, topic, unique_name("chaos-g")
    proxied.restore_proxies()


def _configs(cluster: ProxiedKafkaCluster, group: str, **a_extra: Any) -> list[dict[str, Any]]:
    return [
        member_config(cluster.proxied_bootstrap, group, "a", **a_extra),
        member_config(cluster.bootstrap_servers, group, "b"),
        member_config(cluster.bootstrap_servers, group, "c"),
    ]


def _rebalances(members: list[Member]) -> int:
    return sum(len(m.assignments) for m in members)


def test_latency_above_request_timeout(setup: Any) -> None:
    cluster, topic, group = setup
    proxy = cluster.proxy(1)

    def fault(members: list[Member]) -> float:
        proxy.set_latency(3000)  # above a's request.timeout.ms of 2 s
        time.sleep(6)
        proxy.set_latency(0)
        return time.monotonic()

    out = run_scenario(
        "latency 3 s > request.timeout.ms 2 s, for 6 s",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=_configs(cluster, group, request_timeout_ms=2000),
    )
    print(out.line())
    assert not out.duplicates, out.line()


def test_black_hole_longer_than_session(setup: Any, caplog: pytest.LogCaptureFixture) -> None:
    cluster, topic, group = setup
    proxy = cluster.proxy(1)
    caplog.set_level(logging.WARNING, logger="kafkaconsumer")
    window: list[float] = []

    def fault(members: list[Member]) -> float:
        proxy.black_hole()
        window.append(time.monotonic())
        time.sleep(13)  # session.timeout.ms is 10 s: the broker expels a
        window.append(time.monotonic())
        proxy.restore()
        return time.monotonic()

    out = run_scenario(
        "black hole 13 s > session.timeout.ms 10 s",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=_configs(cluster, group),
    )
    a = out.members[0]
    cpu = a.cpu_fraction(window[0] + 1, window[1])
    warnings = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and window[0] <= r.created - _epoch_offset() <= window[1]
    ]
    out.extra["cpu of a's thread while cut off"] = f"{cpu:.3f}"
    out.extra["warnings while cut off"] = len(warnings)
    print(out.line())
    for r in warnings[:10]:
        print("   ", r.name, r.getMessage()[:160])
    assert cpu < 0.2, f"a spins while cut off: {cpu:.2f} CPU s per s"
    # The cause is logged at WARNING, rate-limited (one per node and cause per 30 s).
    assert warnings, "nothing logged at WARNING while the member was cut off"
    assert len(warnings) <= 8, [r.getMessage() for r in warnings]
    # b and c took a's partitions over, then a came back: the group rebalanced.
    assert any(len(m.assignments) > 1 for m in out.members)


# The group APIs, i.e. what only the coordinator connection carries: OffsetCommit, OffsetFetch,
# JoinGroup, Heartbeat, LeaveGroup, SyncGroup.
_GROUP_APIS = {8, 9, 11, 12, 13, 14}


def test_coordinator_connection_black_holed_longer_than_session(setup: Any) -> None:
    """Only a's coordinator connection is cut (its fetches go on): the broker expels a after
    the session, a's commits fail in the meantime, and after the heal a learns it was expelled,
    rejoins, and the group consumes everything. Records a fetched but could not commit are
    delivered again to their new owner (as with Java's client, a zombie keeps fetching until
    it hears from the coordinator): counted, not forbidden."""
    cluster, topic, group = setup
    proxy = cluster.proxy(1)

    def fault(members: list[Member]) -> float:
        proxy.black_hole_apis(_GROUP_APIS)
        time.sleep(13)
        proxy.restore()
        return time.monotonic()

    # Observed 12 s past the heal: a's dead coordinator connection costs it a
    # request.timeout.ms (5 s) to notice, then it rediscovers the coordinator and rejoins.
    out = run_scenario(
        "coordinator connection black-holed 13 s > session 10 s",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=_configs(cluster, group),
        observe_s=12,
    )
    a = out.members[0]
    out.extra["a's errors"] = len(a.errors)
    print(out.line(), a.errors[:2])
    assert len(a.assignments) >= 2, "a never rejoined"
    assert any(len(m.assignments) > 1 for m in out.members[1:])


def _epoch_offset() -> float:
    return time.time() - time.monotonic()


def test_short_black_hole_causes_no_rebalance(setup: Any) -> None:
    cluster, topic, group = setup
    proxy = cluster.proxy(1)
    before: list[int] = []

    def fault(members: list[Member]) -> float:
        before.append(_rebalances(members))
        # A partition TCP rides out (bytes held, not dropped): as a real 5 s network outage,
        # connections resume after it. (A drop-forever black hole kills every connection
        # opened during it too, and each costs a request.timeout.ms to notice.)
        proxy.partition()
        time.sleep(5)  # inside the 10 s session
        proxy.restore()
        return time.monotonic()

    out = run_scenario(
        "network partition 5 s < session.timeout.ms 10 s",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=_configs(cluster, group),
        observe_s=8,
    )
    print(out.line())
    # Observed until 13 s after the outage began: past the 10 s session of a's last heartbeat.
    assert out.assignments == before[0], "a 5 s outage made the group rebalance"
    assert not out.duplicates, out.line()


def test_resets_in_the_middle_of_fetch_responses(setup: Any) -> None:
    cluster, topic, group = setup
    proxy = cluster.proxy(1)
    rng = random.Random(16)
    cuts: list[int] = []

    def fault(members: list[Member]) -> float:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            before = proxy.accepted
            proxy.cut_mid_response(after_bytes=rng.randint(4, 3000))
            cuts.append(1)
            # Wait for the reconnection the cut causes before cutting again.
            proxy.wait_for_accepted(before + 1, timeout=3)
            time.sleep(0.3)
        return time.monotonic()

    out = run_scenario(
        "connections reset mid-response, repeatedly for 6 s",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=_configs(cluster, group),
    )
    out.extra["resets"] = len(cuts)
    print(out.line())
    assert len(cuts) >= 3
    assert not out.duplicates, out.line()


def test_manual_assignment_through_resets_and_a_black_hole(setup: Any) -> None:
    """Manual assignment (no group membership, commits still to the group): a's connections
    reset mid-response repeatedly, then black-holed for 6 s; nothing lost, none twice."""
    cluster, topic, group = setup
    proxy = cluster.proxy(1)

    def fault(members: list[Member]) -> float:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            before = proxy.accepted
            proxy.cut_mid_response(after_bytes=300)
            proxy.wait_for_accepted(before + 1, timeout=3)
            time.sleep(0.3)
        proxy.black_hole()
        time.sleep(6)
        proxy.restore()
        return time.monotonic()

    out = run_scenario(
        "manual assignment: resets for 4 s, then a 6 s black hole",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=_configs(cluster, group),
        manual_partitions=[[0, 1], [2, 3], [4, 5]],
    )
    print(out.line())
    assert not out.duplicates, out.line()


def test_member_exceeding_max_poll_interval(setup: Any) -> None:
    cluster, topic, group = setup
    slow = {"once": False}

    def c_processing() -> float:
        if slow["once"]:
            slow["once"] = False
            return 6.0  # above c's max.poll.interval.ms of 4 s
        return 0.0

    def fault(members: list[Member]) -> float:
        slow["once"] = True
        c = members[2]
        wait_until_errors = time.monotonic() + 30
        while not any("commit" in e for e in c.errors) and time.monotonic() < wait_until_errors:
            time.sleep(0.05)
        return time.monotonic()

    configs = _configs(cluster, group)
    configs[2]["max_poll_interval_ms"] = 4000
    out = run_scenario(
        "member c processes 6 s > max.poll.interval.ms 4 s",
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=configs,
        process_s=[None, None, c_processing],
    )
    c = out.members[2]
    print(out.line(), c.errors[:3])
    # c's commit after the slow batch is refused (it left the group), it says so clearly, and
    # it comes back into the group at its next poll.
    assert any(CommitFailedError.__name__ in e for e in c.errors), c.errors
    assert len(c.assignments) >= 2
