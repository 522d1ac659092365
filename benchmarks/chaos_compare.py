"""Recovery after network and broker faults: kafkaconsumer against librdkafka (confluent-kafka).

Runs the chaos scenarios of ``tests/chaos/`` (their workload and faults are in
``benchmarks/harness/``) (a group of three members committing after every
batch and on revocation) once with our consumer and once with confluent-kafka's, one after the
other on the same cluster, and prints the recovery time after each heal (until every record
acknowledged before the heal is consumed), the worst delay of a record, and the records
delivered twice. Not in CI; numbers are for the report, never asserted.

* ``network``: member ``a`` behind a fault proxy, one Apache Kafka node (latency, black hole,
  a 5 s partition, resets mid-response).
* ``broker``: the three-broker cluster of ``tests/chaos/test_broker_faults.py`` (the leader's
  broker SIGKILLed and restarted, a graceful restart, the coordinator's broker stopped).

::

    python -m benchmarks.chaos_compare [--faults network|broker|all] [--rounds 1] [--only TEXT]
                                       [--fault-delay 1.0] [--seed N]

``--only`` keeps the faults whose name contains ``TEXT`` (``--only SIGKILL``: the killed
leader alone; repeat it to keep several).

Each fault starts a random time, uniform between 0 and ``--fault-delay`` seconds (default 1),
after the group is seen consuming steadily. That moment is when a member has just been handed
records and is about to commit, so without the delay every run would catch the members at the
same point of their poll-and-commit loop, which favours whichever client that point suits.
The delays come from a generator seeded with ``--seed`` (printed at the start, drawn at random
when not given), so a run can be repeated with the same delays; each run's delay is printed
with it.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from benchmarks.harness.apache_kafka import KafkaCluster  # noqa: E402
from benchmarks.harness.chaos_cluster import ProxiedKafkaCluster  # noqa: E402
from benchmarks.harness.chaos_faults import (  # noqa: E402
    FaultBuilder,
    coordinator_stopped,
    leader_killed,
    leader_restarted,
    reset_repeatedly,
    run_broker_fault,
)
from benchmarks.harness.chaos_scenario import Outcome, member_config, run_scenario  # noqa: E402
from benchmarks.harness.chaos_workload import Member  # noqa: E402
from benchmarks.harness.cluster_ops import unique_name  # noqa: E402

#: The broker faults compared (the restart and the coordinator's move apart, the broker left
#: down, unlike the CI test that proves both with one stop and start).
BROKER_FAULTS: list[tuple[str, FaultBuilder]] = [
    ("leader broker SIGKILLed, restarted 3 s later", leader_killed),
    ("leader broker restarted gracefully", leader_restarted),
    ("group coordinator's broker stopped", coordinator_stopped),
]

CLIENTS: list[tuple[str, type[Member]]] = []  # filled below, once LibrdkafkaMember exists


class LibrdkafkaMember(Member):
    """:class:`Member` with confluent-kafka's consumer: same loop, same commits."""

    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        cfg = self._config
        consumer = Consumer(
            {
                "bootstrap.servers": cfg["bootstrap_servers"],
                "group.id": cfg["group_id"],
                "client.id": cfg["client_id"],
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": cfg["session_timeout_ms"],
                "heartbeat.interval.ms": cfg["heartbeat_interval_ms"],
                "max.poll.interval.ms": cfg["max_poll_interval_ms"],
                "socket.timeout.ms": cfg["request_timeout_ms"],
                "reconnect.backoff.ms": cfg["reconnect_backoff_ms"],
                "reconnect.backoff.max.ms": cfg["reconnect_backoff_max_ms"],
                "retry.backoff.ms": cfg["retry_backoff_ms"],
                # Our metadata.max.age.ms where a scenario shortens it (broker faults).
                "topic.metadata.refresh.interval.ms": cfg.get("metadata_max_age_ms", 300_000),
                "log_level": 0,
            }
        )
        member = self

        def on_revoke(c: Any, partitions: Collection[Any]) -> None:
            member.revocations += 1
            try:
                c.commit(asynchronous=False)
            except KafkaException as exc:
                member.errors.append(f"commit on revoke: {exc!r}")

        def on_assign(c: Any, partitions: Collection[Any]) -> None:
            member.assignments.append(sorted(f"{p.topic}-{p.partition}" for p in partitions))

        try:
            consumer.subscribe([self._topic], on_assign=on_assign, on_revoke=on_revoke)
            while not self._halt.is_set():
                self.cpu_samples.append((time.monotonic(), time.thread_time()))
                msgs = consumer.consume(num_messages=200, timeout=0.2)
                offsets: dict[tuple[str, int], int] = {}
                for m in msgs:
                    if m.error():
                        self.errors.append(f"poll: {m.error()}")
                        continue
                    value, topic, partition, offset = (
                        m.value(),
                        m.topic(),
                        m.partition(),
                        m.offset(),
                    )
                    if value is None or topic is None or partition is None or offset is None:
                        self.errors.append(f"poll: a message without value or position: {m!r}")
                        continue
                    self._ledger.on_delivery(self.member, int(value))
                    offsets[(topic, partition)] = offset + 1
                if offsets:
                    began = time.monotonic()
                    try:
                        consumer.commit(
                            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                            asynchronous=False,
                        )
                    except KafkaException as exc:
                        self.errors.append(f"commit: {exc!r}")
                    self.commits.append((began, time.monotonic() - began))
        except BaseException as exc:
            self.crashed = exc
        finally:
            consumer.close()


def _faults(
    cluster: ProxiedKafkaCluster,
) -> list[tuple[str, dict[str, Any], Callable[[list[Member]], float]]]:
    proxy = cluster.proxy(1)

    def latency(members: list[Member]) -> float:
        proxy.set_latency(3000)
        time.sleep(6)
        proxy.set_latency(0)
        return time.monotonic()

    def black_hole(members: list[Member]) -> float:
        proxy.black_hole()
        time.sleep(13)
        proxy.restore()
        return time.monotonic()

    def partition(members: list[Member]) -> float:
        proxy.partition()
        time.sleep(5)
        proxy.restore()
        return time.monotonic()

    def resets(members: list[Member]) -> float:
        reset_repeatedly(proxy, 6, lambda: 200)
        return time.monotonic()

    return [
        ("latency 3 s > request timeout 2 s, 6 s", {"request_timeout_ms": 2000}, latency),
        ("black hole 13 s > session 10 s", {}, black_hole),
        ("partition 5 s < session 10 s", {}, partition),
        ("resets mid-response, 6 s", {}, resets),
    ]


Row = tuple[str, str, float, float, int]


def _row(name: str, client: str, run: Callable[[], Outcome]) -> Row:
    try:
        out = run()
    except AssertionError as exc:
        print(f"{client}: {name}: FAILED {exc}", flush=True)
        return (name, client, float("nan"), float("nan"), -1)
    started, healed = out.fault_window
    longest = max(m.longest_commit(started - 1, healed) for m in out.members)
    print(f"{out.line()}; longest commit begun in the fault window {longest:.2f} s", flush=True)
    return (name, client, out.recovery_s, out.worst_delay_s, len(out.duplicates))


def _kept(name: str, only: Collection[str]) -> bool:
    return not only or any(text in name for text in only)


def _no_delay() -> float:
    return 0.0


def _announce(client: str, name: str, delay: float) -> None:
    print(f"{client}: {name}: fault {delay:.2f} s after the group consumed steadily", flush=True)


def network_rows(
    rounds: int, only: Collection[str] = (), delays: Callable[[], float] = _no_delay
) -> list[Row]:
    """The proxy faults on one node (those whose name contains a text of ``only``; all when
    empty), each with both clients, each fault ``delays()`` s after the group consumes."""
    rows: list[Row] = []
    with ProxiedKafkaCluster(brokers=1) as cluster:
        for _ in range(rounds):
            for name, a_extra, fault in _faults(cluster):
                if not _kept(name, only):
                    continue
                for client, cls in CLIENTS:
                    topic = unique_name("cmp")
                    cluster.create_topic(topic, partitions=6)
                    group = unique_name("cmp-g")
                    configs = [
                        member_config(cluster.proxied_bootstrap, group, "a", **a_extra),
                        member_config(cluster.bootstrap_servers, group, "b"),
                        member_config(cluster.bootstrap_servers, group, "c"),
                    ]
                    delay = delays()
                    _announce(client, name, delay)
                    run = functools.partial(
                        run_scenario,
                        f"{client}: {name}",
                        topic=topic,
                        direct_bootstrap=cluster.bootstrap_servers,
                        configs=configs,
                        fault=fault,
                        member_cls=cls,
                        fault_delay_s=delay,
                    )
                    try:
                        rows.append(_row(name, client, run))
                    finally:
                        cluster.restore_proxies()
    return rows


def _broker_outcome(
    cluster: Any, name: str, build: Any, cls: type[Member], delay: float
) -> Outcome:
    return run_broker_fault(cluster, name, build, cls, fault_delay_s=delay)[0]


def broker_rows(
    rounds: int, only: Collection[str] = (), delays: Callable[[], float] = _no_delay
) -> list[Row]:
    """The broker faults on three brokers (selected as :func:`network_rows` does), each with
    both clients; the cluster is healed (stopped brokers started, ISRs full) between runs."""
    rows: list[Row] = []
    with KafkaCluster(brokers=3, racks=True) as cluster:
        for _ in range(rounds):
            for name, build in BROKER_FAULTS:
                if not _kept(name, only):
                    continue
                for client, cls in CLIENTS:
                    delay = delays()
                    _announce(client, name, delay)
                    run = functools.partial(
                        _broker_outcome, cluster, f"{client}: {name}", build, cls, delay
                    )
                    try:
                        rows.append(_row(name, client, run))
                    finally:
                        cluster.heal()
    return rows


def main(argv: list[str] | None = None) -> None:
    """Run every fault with both clients (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--faults", choices=("network", "broker", "all"), default="all")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="run the faults whose name contains this (repeat it to keep several)",
    )
    ap.add_argument(
        "--fault-delay",
        type=float,
        default=1.0,
        help="start each fault a random time up to this many seconds after the group "
        "consumes steadily (0: at once)",
    )
    ap.add_argument("--seed", type=int, default=None, help="seed of the fault delays")
    args = ap.parse_args(argv)
    if args.fault_delay < 0:
        ap.error("--fault-delay must be >= 0")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"fault delays: uniform 0-{args.fault_delay:g} s, seed {seed}", flush=True)
    rng = random.Random(seed)

    def delays() -> float:
        return rng.uniform(0.0, args.fault_delay)

    rows: list[Row] = []
    if args.faults in ("network", "all"):
        rows += network_rows(args.rounds, args.only, delays)
    if args.faults in ("broker", "all"):
        rows += broker_rows(args.rounds, args.only, delays)
    print("\n| fault | client | recovery after heal (s) | worst record delay (s) | twice |")
    print("|---|---|---|---|---|")
    for name, client, rec, worst, dup in rows:
        print(f"| {name} | {client} | {rec:.2f} | {worst:.2f} | {dup} |")


CLIENTS.extend([("kafkaconsumer", Member), ("librdkafka", LibrdkafkaMember)])


if __name__ == "__main__":
    threading.current_thread().name = "chaos-compare"
    main()
