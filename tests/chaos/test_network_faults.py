"""Network faults between one group member and the broker, through the fault proxy.

One Apache Kafka node (module-scoped,
:class:`~benchmarks.harness.chaos_cluster.ProxiedKafkaCluster`): member ``a`` reaches it through
the proxy, members ``b`` and ``c`` and the producer directly, so the fault hits ``a`` alone and
the group has to live with it. See ``benchmarks/harness/chaos_scenario.py`` for the workload and
the invariants.
"""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from benchmarks.harness import apache_kafka
from benchmarks.harness.chaos_cluster import ProxiedKafkaCluster
from benchmarks.harness.chaos_faults import reset_repeatedly
from benchmarks.harness.chaos_scenario import Outcome, member_config, run_scenario
from benchmarks.harness.chaos_workload import Ledger, Member, Producer, wait_until
from kafkaconsumer.errors import CommitFailedError
from tests.helpers import unique_name

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


def _run(
    setup: Any,
    name: str,
    fault: Callable[[list[Member]], float],
    *,
    a_extra: dict[str, Any] | None = None,
    configs: list[dict[str, Any]] | None = None,
    **kwargs: Any,
) -> Outcome:
    """One scenario on this module's cluster: member a behind broker 1's proxy (with
    ``a_extra`` settings), b and c direct; prints the report line."""
    cluster, topic, group = setup
    out = run_scenario(
        name,
        topic=topic,
        direct_bootstrap=cluster.bootstrap_servers,
        fault=fault,
        configs=configs or _configs(cluster, group, **(a_extra or {})),
        **kwargs,
    )
    print(out.line())
    return out


def _rebalances(members: list[Member]) -> int:
    return sum(len(m.assignments) for m in members)


#: Member a's session in the tests that let the broker expel it (the others keep 10 s).
_SHORT_SESSION_MS = 6000


def test_latency_above_request_timeout(setup: Any) -> None:
    proxy = setup[0].proxy(1)

    def fault(members: list[Member]) -> float:
        proxy.set_latency(3000)  # above a's request.timeout.ms of 2 s
        time.sleep(4)
        proxy.set_latency(0)
        return time.monotonic()

    out = _run(
        setup,
        "latency 3 s > request.timeout.ms 2 s, for 4 s",
        fault,
        a_extra={"request_timeout_ms": 2000},
    )
    assert not out.duplicates, out.line()


def _kafkaconsumer_warnings(caplog: pytest.LogCaptureFixture, since: float) -> list[Any]:
    """WARNING (and above) records of the library logged since ``since`` (time.time())."""
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and r.name.startswith("kafkaconsumer")
        and r.created >= since
    ]


def test_black_hole_longer_than_session(setup: Any, caplog: pytest.LogCaptureFixture) -> None:
    proxy = setup[0].proxy(1)
    caplog.set_level(logging.WARNING, logger="kafkaconsumer")
    window: list[float] = []  # monotonic start, end; wall-clock start, end (log records)

    def fault(members: list[Member]) -> float:
        proxy.black_hole()
        window.extend([time.monotonic(), time.time()])
        # Past a's session (the broker expels it) and until a has logged why it is cut off:
        # a request timeout (a's request.timeout.ms is 5 s) or a failed connection attempt.
        time.sleep(_SHORT_SESSION_MS / 1000 + 1)
        wait_until(
            lambda: _kafkaconsumer_warnings(caplog, window[1]),
            30,
            "a WARNING that says why member a is cut off",
        )
        window.extend([time.monotonic(), time.time()])
        proxy.restore()
        return time.monotonic()

    out = _run(
        setup,
        f"black hole > a's session.timeout.ms {_SHORT_SESSION_MS / 1000:.0f} s",
        fault,
        a_extra={"session_timeout_ms": _SHORT_SESSION_MS},
        # b and c took a's partitions over, then a came back: the group rebalanced.
        settled=lambda members: any(len(m.assignments) > 1 for m in members),
    )
    a = out.members[0]
    cpu = a.cpu_fraction(window[0] + 1, window[2])
    warnings = [r for r in _kafkaconsumer_warnings(caplog, window[1]) if r.created <= window[3]]
    out.extra["cpu of a's thread while cut off"] = f"{cpu:.3f}"
    out.extra["warnings while cut off"] = len(warnings)
    print(out.line())
    for r in warnings[:10]:
        print("   ", r.name, r.getMessage()[:160])
    assert cpu < 0.2, f"a spins while cut off: {cpu:.2f} CPU s per s"
    # The cause is logged at WARNING, rate-limited (per node and cause, at most one per 30 s).
    assert len(warnings) <= 8, [r.getMessage() for r in warnings]


def _process_cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/stat")
def test_cut_off_process_does_not_spin(setup: Any) -> None:
    """A group member and a manual-assign consumer, each in a process of its own behind the
    proxy: while the cluster is unreachable (every connection black-holed, then every new one
    refused) the whole process (poll loop, heartbeat thread, network) stays well under 20% of
    one core, and it says why at WARNING."""
    cluster, topic, group = setup
    proxy = cluster.proxy(1)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    kinds = {"group member": ["--group", group], "manual assign": ["--assign"]}
    procs = {
        kind: subprocess.Popen(
            [sys.executable, "-m", "tests.chaos.cut_off_child", cluster.proxied_bootstrap, topic]
            + extra,
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for kind, extra in kinds.items()
    }
    producer = Producer(cluster.bootstrap_servers, topic, Ledger(), rate=50)
    producer.start()
    cpu: dict[tuple[str, str], float] = {}
    try:
        for kind, proc in procs.items():
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "consuming", f"{kind} never consumed"
        for fault, apply in (("black hole", proxy.black_hole), ("refused", proxy.refuse)):
            proxy.restore()
            apply()
            time.sleep(1)  # the connections notice first (timeouts, resets)
            begin = {k: (_process_cpu_s(p.pid), time.monotonic()) for k, p in procs.items()}
            time.sleep(4)
            for kind, proc in procs.items():
                c0, t0 = begin[kind]
                cpu[(kind, fault)] = (_process_cpu_s(proc.pid) - c0) / (time.monotonic() - t0)
    finally:
        proxy.restore()
        producer.stop()
        outputs = {}
        for kind, proc in procs.items():
            try:
                outputs[kind] = proc.communicate("", timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                outputs[kind] = proc.communicate()
    print("process CPU while cut off:", {f"{k} / {f}": f"{v:.3f}" for (k, f), v in cpu.items()})
    for kind, (stdout, stderr) in outputs.items():
        assert procs[kind].returncode == 0, (kind, stderr[-2000:])
        assert "closed" in stdout, (kind, stdout, stderr[-2000:])
        # The cause, at WARNING: the request that timed out or the connection that failed.
        warned = [line for line in stderr.splitlines() if line.startswith("WARNING:kafkaconsumer")]
        assert warned, (kind, stderr[-2000:])
    for (kind, fault), fraction in cpu.items():
        assert fraction < 0.2, f"{kind} spins while {fault}: {fraction:.2f} CPU s per s"


# The group APIs, i.e. what only the coordinator connection carries: OffsetCommit, OffsetFetch,
# JoinGroup, Heartbeat, LeaveGroup, SyncGroup.
_GROUP_APIS = {8, 9, 11, 12, 13, 14}


def test_coordinator_connection_black_holed_longer_than_session(setup: Any) -> None:
    """Only a's coordinator connection is cut (its fetches go on): the broker expels a after
    the session, a's commits fail in the meantime, and after the heal a learns it was expelled,
    rejoins, and the group consumes everything. Records a fetched but could not commit are
    delivered again to their new owner (as with Java's client, a zombie keeps fetching until
    it hears from the coordinator): counted, not forbidden."""
    proxy = setup[0].proxy(1)

    def fault(members: list[Member]) -> float:
        proxy.black_hole_apis(_GROUP_APIS)
        time.sleep(_SHORT_SESSION_MS / 1000 + 1.5)
        proxy.restore()
        return time.monotonic()

    # After the heal a's dead coordinator connection costs it a request.timeout.ms (5 s) to
    # notice; then it rediscovers the coordinator and rejoins.
    out = _run(
        setup,
        f"coordinator connection black-holed > a's session {_SHORT_SESSION_MS / 1000:.0f} s",
        fault,
        a_extra={"session_timeout_ms": _SHORT_SESSION_MS},
        settled=lambda members: (
            len(members[0].assignments) >= 2 and any(len(m.assignments) > 1 for m in members[1:])
        ),
    )
    a = out.members[0]
    out.extra["a's errors"] = len(a.errors)
    print(a.errors[:2])
    # The commit refused after the expulsion says so, and does not blame the poll loop.
    assert any("CommitFailedError" in e and "UNKNOWN_MEMBER_ID" in e for e in a.errors), a.errors


def test_short_black_hole_causes_no_rebalance(setup: Any) -> None:
    proxy = setup[0].proxy(1)
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

    # Observed until 10.5 s after the outage began: a's last heartbeat before it was at most
    # 1 s (heartbeat.interval.ms) earlier, so its 10 s session would have expired by then.
    out = _run(setup, "network partition 5 s < session.timeout.ms 10 s", fault, observe_s=5.5)
    assert out.assignments == before[0], "a 5 s outage made the group rebalance"
    assert not out.duplicates, out.line()


def test_resets_in_the_middle_of_fetch_responses(setup: Any) -> None:
    proxy = setup[0].proxy(1)
    rng = random.Random(16)
    cuts: list[int] = []

    def fault(members: list[Member]) -> float:
        cuts.append(reset_repeatedly(proxy, 4, lambda: rng.randint(4, 3000)))
        return time.monotonic()

    out = _run(setup, "connections reset mid-response, repeatedly for 4 s", fault)
    out.extra["resets"] = cuts[0]
    assert cuts[0] >= 3
    assert not out.duplicates, out.line()


def test_manual_assignment_through_resets_and_a_black_hole(setup: Any) -> None:
    """Manual assignment (no group membership, commits still to the group): a's connections
    reset mid-response repeatedly, then black-holed for 5 s; nothing lost, none twice."""
    proxy = setup[0].proxy(1)

    def fault(members: list[Member]) -> float:
        reset_repeatedly(proxy, 3, lambda: 300)
        proxy.black_hole()
        time.sleep(5)
        proxy.restore()
        return time.monotonic()

    out = _run(
        setup,
        "manual assignment: resets for 3 s, then a 5 s black hole",
        fault,
        manual_partitions=[[0, 1], [2, 3], [4, 5]],
    )
    assert not out.duplicates, out.line()


def test_member_exceeding_max_poll_interval(setup: Any) -> None:
    cluster, _, group = setup
    slow = {"once": False}

    def c_processing() -> float:
        if slow["once"]:
            slow["once"] = False
            return 4.5  # above c's max.poll.interval.ms of 3 s
        return 0.0

    def fault(members: list[Member]) -> float:
        slow["once"] = True
        c = members[2]
        wait_until(lambda: any("commit" in e for e in c.errors), 30, "c's commit to fail")
        return time.monotonic()

    configs = _configs(cluster, group)
    configs[2]["max_poll_interval_ms"] = 3000
    out = _run(
        setup,
        "member c processes 4.5 s > max.poll.interval.ms 3 s",
        fault,
        configs=configs,
        process_s=[None, None, c_processing],
        # c comes back into the group at its next poll.
        settled=lambda members: len(members[2].assignments) >= 2,
    )
    c = out.members[2]
    print(c.errors[:3])
    # c's commit after the slow batch is refused (it left the group) and says why.
    assert any(
        CommitFailedError.__name__ in e and "max.poll.interval.ms (3000 ms)" in e for e in c.errors
    ), c.errors
