"""Rebalance cost: a member joins or leaves a busy group; eager, cooperative and KIP-848.

Scenarios (the same for every client and protocol): a producer writes one record to each of the
``--partitions`` partitions every 10 ms. ``join``: member A subscribes and consumes everything;
after a warm-up, member B subscribes to the same group. ``leave``: A and B share the partitions;
after a warm-up, B closes (leaving the group). We record when each record is delivered and to
whom, then report, from B's ``subscribe`` (join) or ``close`` (leave):

* ``settle s``: time until every partition is consumed again without a gap by its final owner
  (a partition counts as consumed again from the start of its last gap-free run, gaps being
  pauses longer than ``--gap-ms``);
* ``kept recs``: records A delivered until the settle time from the partitions A kept (those
  an incremental rebalance need not stop);
* ``kept max gap s``: the longest pause on those kept partitions in that window (an eager
  rebalance stops them all; a cooperative one, or the consumer protocol, should not).

Clients: this one (``kafkaconsumer``), kafka-python and confluent-kafka, with ``range``
(eager) and ``cooperative-sticky`` (classic protocol, same session/heartbeat settings), and
``consumer`` (KIP-848, ``group.protocol=consumer``: the broker assigns and sets the heartbeat
interval; not in kafka-python). Auto-commit is on. Against the embedded Tansu broker unless
``--broker`` says otherwise (``apache`` starts Apache Kafka, or the bootstrap servers of a
running cluster); Tansu has no consumer protocol, so use Apache Kafka 4.x for it::

    python benchmarks/rebalance.py
    python benchmarks/rebalance.py --clients kafkaconsumer --after 15
    python benchmarks/rebalance.py --broker apache
    python benchmarks/rebalance.py --broker 127.0.0.1:9092 --clients kafkaconsumer,confluent-kafka \
        --protocols range,cooperative-sticky,consumer --scenarios join,leave \
        --consumer-heartbeat-interval-ms 300

A timing is a benchmark, never a test assertion. Tansu answers every JoinGroup round only after
about half the session timeout, so absolute times there are dominated by the broker.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.brokers import add_broker_arguments, bench_broker, choice  # noqa: E402
from benchmarks.harness.cluster_ops import set_group_config  # noqa: E402

CLIENTS = ("kafkaconsumer", "kafka-python", "confluent-kafka")
PROTOCOLS = ("range", "cooperative-sticky", "consumer")
SCENARIOS = ("join", "leave")

Event = tuple[float, str, int]  # (monotonic time, member, partition)


class _Log:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []

    def add(self, member: str, partitions: list[int]) -> None:
        now = time.monotonic()
        with self.lock:
            self.events.extend((now, member, p) for p in partitions)


# --------------------------------------------------------------------------- members
# Each member runs ``loop(stop)`` in a thread: subscribe, consume until stop is set, close.


@dataclasses.dataclass
class _Member:
    """Who a member is: its cluster, group, topic, protocol (or assignor) and name."""

    bootstrap: str
    group: str
    topic: str
    protocol: str
    name: str
    log: _Log
    settings: dict[str, int]

    def unpack(self) -> tuple[str, str, str, str, str, _Log, dict[str, int]]:
        """The fields in order (a shallow astuple: the log is shared, not copied)."""
        return (
            self.bootstrap,
            self.group,
            self.topic,
            self.protocol,
            self.name,
            self.log,
            self.settings,
        )


def _config(
    bootstrap: str,
    group: str,
    protocol: str,
    name: str,
    settings: dict[str, int],
    **classic_extra: Any,
) -> dict[str, Any]:
    """The settings of a member, in the key names this client and librdkafka share."""
    group_settings: dict[str, Any] = {"group.protocol": "consumer"}
    if protocol != "consumer":
        group_settings = {
            "partition.assignment.strategy": protocol,
            **classic_extra,
            **{k: v for k, v in settings.items() if not k.startswith("_")},
        }
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "auto.offset.reset": "latest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 1000,
        **group_settings,
    }


def _consume(
    consumer: Any,
    topic: str,
    name: str,
    log: _Log,
    stop: threading.Event,
    poll: Callable[[], list[int]],
) -> None:
    """Subscribe, log the partition of every record ``poll()`` returns until stopped, close."""
    consumer.subscribe([topic])
    while not stop.is_set():
        parts = poll()
        if parts:
            log.add(name, parts)
    consumer.close()


def _ours(m: _Member) -> Callable[[threading.Event], None]:
    bootstrap, group, topic, protocol, name, log, settings = m.unpack()

    def loop(stop: threading.Event) -> None:
        from kafkaconsumer.consumer import KafkaConsumer

        c = KafkaConsumer(
            _config(
                bootstrap,
                group,
                protocol,
                name,
                settings,
                **{"internal.cooperative.rejoin.delay.ms": settings.get("_rejoin_delay_ms", 0)},
            )
        )
        _consume(c, topic, name, log, stop, lambda: [r.partition for r in c.poll(100)])

    return loop


def _kafka_python(m: _Member) -> Callable[[threading.Event], None]:
    bootstrap, group, topic, protocol, name, log, settings = m.unpack()

    def loop(stop: threading.Event) -> None:
        import kafka
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        assignor = RangePartitionAssignor if protocol == "range" else CooperativeStickyAssignor
        c = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            partition_assignment_strategy=[assignor],
            auto_offset_reset="latest",
            enable_auto_commit=True,
            auto_commit_interval_ms=1000,
            session_timeout_ms=settings["session.timeout.ms"],
            heartbeat_interval_ms=settings["heartbeat.interval.ms"],
        )

        def poll() -> list[int]:
            batch = c.poll(timeout_ms=100)
            return [tp.partition for tp, recs in batch.items() for _r in recs]

        _consume(c, topic, name, log, stop, poll)

    return loop


def _confluent(m: _Member) -> Callable[[threading.Event], None]:
    bootstrap, group, topic, protocol, name, log, settings = m.unpack()

    def loop(stop: threading.Event) -> None:
        from confluent_kafka import Consumer

        c = Consumer(_config(bootstrap, group, protocol, name, settings))

        def poll() -> list[int]:
            return [int(m.partition() or 0) for m in c.consume(500, 0.1) if m.error() is None]

        _consume(c, topic, name, log, stop, poll)

    return loop


MEMBERS = {"kafkaconsumer": _ours, "kafka-python": _kafka_python, "confluent-kafka": _confluent}


# --------------------------------------------------------------------------- scenario


def _produce_forever(bootstrap: str, topic: str, partitions: int, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": False})
    i = 0
    while not stop.is_set():
        for part in range(partitions):
            p.produce(topic, value=b"%d" % i, partition=part)
        p.poll(0)
        i += 1
        stop.wait(0.01)
    p.flush(10)


def _create_topic(bootstrap: str, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"rebalance-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep it alive until the result
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    fs[topic].result(30)
    return topic


def analyse(
    events: list[Event],
    t0: float,
    partitions: int,
    gap_s: float,
    kept_before: set[int] | None = None,
) -> dict[str, Any]:
    """Settle time, records and longest gap on the partitions A kept (see module doc).

    ``kept_before``: the partitions A owned before t0 (leave scenario); None (join scenario):
    A's partitions at the end.
    """
    by_part: dict[int, list[tuple[float, str]]] = {p: [] for p in range(partitions)}
    for t, member, p in sorted(events):
        by_part[p].append((t, member))
    settle_at: dict[int, float] = {}
    owner: dict[int, str] = {}
    for p, evs in by_part.items():
        if not evs:
            return {"settle": float("nan"), "kept": 0, "gap": float("nan"), "kept_parts": 0}
        final = evs[-1][1]
        owner[p] = final
        start = evs[-1][0]
        # Walk back while the final owner delivered without a long pause.
        for i in range(len(evs) - 1, 0, -1):
            prev_t, prev_m = evs[i - 1]
            if prev_m != final or evs[i][0] - prev_t > gap_s:
                start = evs[i][0]
                break
        else:
            start = evs[0][0]
        settle_at[p] = max(start, t0)
    end = max(settle_at.values())
    kept = [
        p
        for p in range(partitions)
        if owner[p] == "A" and (kept_before is None or p in kept_before)
    ]
    kept_recs = 0
    max_gap = 0.0
    for p in kept:
        times = [t for t, m in by_part[p] if m == "A" and t0 <= t <= end + gap_s]
        kept_recs += sum(1 for t in times if t <= end)
        last = t0
        for t in times:
            max_gap = max(max_gap, t - last)
            last = t
    return {"settle": end - t0, "kept": kept_recs, "gap": max_gap, "kept_parts": len(kept)}


def run_scenario(
    bootstrap: str,
    client: str,
    protocol: str,
    partitions: int,
    warmup_s: float,
    after_s: float,
    gap_s: float,
    settings: dict[str, int],
    scenario: str = "join",
) -> dict[str, Any]:
    """One client, one protocol: A alone then B joins, or A and B then B leaves."""
    topic = _create_topic(bootstrap, partitions)
    group = f"rebalance-{client}-{protocol}-{uuid.uuid4().hex[:6]}"
    if protocol == "consumer" and settings.get("_consumer_heartbeat_ms"):
        # A consumer-protocol group's heartbeat interval is a broker-side group config.
        interval = str(settings["_consumer_heartbeat_ms"])
        set_group_config(bootstrap, group, {"consumer.heartbeat.interval.ms": interval})
    log = _Log()
    stop_producer = threading.Event()
    producer = threading.Thread(
        target=_produce_forever, args=(bootstrap, topic, partitions, stop_producer), daemon=True
    )
    producer.start()
    make = MEMBERS[client]
    stops = {n: threading.Event() for n in ("A", "B")}
    threads = {
        n: threading.Thread(
            target=make(_Member(bootstrap, group, topic, protocol, n, log, settings)),
            args=(stops[n],),
            daemon=True,
        )
        for n in ("A", "B")
    }
    threads["A"].start()
    # Warm-up: A must be consuming every partition before B comes.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with log.lock:
            seen = {p for _t, _m, p in log.events[-20 * partitions :]}
        if len(seen) == partitions:
            break
        time.sleep(0.1)
    kept_before: set[int] | None = None
    if scenario == "leave":
        threads["B"].start()
        # Both members must be consuming (every partition, by one of them) before B leaves.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            now = time.monotonic()
            with log.lock:
                recent = [(m, p) for t, m, p in log.events if t > now - 1.0]
            owners = {p: m for m, p in recent}
            if len(owners) == partitions and {"A", "B"} <= set(owners.values()):
                break
            time.sleep(0.1)
    time.sleep(warmup_s)
    t0 = time.monotonic()
    if scenario == "leave":
        with log.lock:
            kept_before = {p for t, m, p in log.events if m == "A" and t > t0 - 1.0}
        stops["B"].set()
        threads["B"].join(30)
    else:
        threads["B"].start()
    time.sleep(after_s)
    for n in ("B", "A"):
        stops[n].set()
    for th in threads.values():
        th.join(30)
    stop_producer.set()
    producer.join(10)
    with log.lock:
        events = [e for e in log.events if e[0] >= t0 - 2 * gap_s]
    stops_at = max((e[0] for e in events), default=t0)
    # Ignore the shutdown itself: only what happened before anyone stopped counts.
    horizon = t0 + after_s - 0.5
    result = analyse([e for e in events if e[0] <= horizon], t0, partitions, gap_s, kept_before)
    result["last_event_s"] = stops_at - t0
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_broker_arguments(ap)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--scenarios", default="join", help=f"comma-separated: {', '.join(SCENARIOS)}")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds of A alone")
    ap.add_argument("--after", type=float, default=25.0, help="seconds observed after B joins")
    ap.add_argument("--gap-ms", type=float, default=500.0)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=300)
    ap.add_argument(
        "--consumer-heartbeat-interval-ms",
        type=int,
        default=0,
        help="consumer protocol: the group's heartbeat interval, set on the broker "
        "(group config consumer.heartbeat.interval.ms); 0: the broker's default",
    )
    ap.add_argument(
        "--cooperative-rejoin-delay-ms",
        type=int,
        default=0,
        help="this client only: delay of the cooperative follow-up rejoin",
    )
    args = ap.parse_args(argv)
    settings = {
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "_rejoin_delay_ms": args.cooperative_rejoin_delay_ms,
        "_consumer_heartbeat_ms": args.consumer_heartbeat_interval_ms,
    }
    clients = [c for c in args.clients.split(",") if c]
    protocols = [p for p in args.protocols.split(",") if p]
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s!r}; known: {', '.join(SCENARIOS)}")
    for c in clients:
        if c not in MEMBERS:
            ap.error(f"unknown client {c!r}; known: {', '.join(MEMBERS)}")

    rows = []
    with bench_broker(choice(args)) as broker:
        for scenario in scenarios:
            for client in clients:
                for protocol in protocols:
                    if client == "kafka-python" and protocol == "consumer":
                        continue  # kafka-python has no consumer group protocol
                    r = run_scenario(
                        broker.bootstrap,
                        client,
                        protocol,
                        args.partitions,
                        args.warmup,
                        args.after,
                        args.gap_ms / 1000.0,
                        settings,
                        scenario,
                    )
                    rows.append((scenario, client, protocol, r))
                    print(
                        f"# {scenario:5} {client:16} {protocol:19} settle {r['settle']:.2f} s  "
                        f"kept recs {r['kept']}  kept max gap {r['gap']:.2f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    print(
        f"\nbroker: {broker.label}; "
        f"{args.partitions} partitions, 1 record/partition/10 ms; session "
        f"{args.session_timeout_ms} ms, heartbeat {args.heartbeat_interval_ms} ms (classic); "
        f"consumer protocol heartbeat "
        f"{f'{args.consumer_heartbeat_interval_ms} ms' if args.consumer_heartbeat_interval_ms else 'as the broker sets it'}\n"
    )
    print(
        f"| scenario | {'client':16} | {'protocol':19} | settle s | kept partitions | "
        f"kept recs | kept max gap s |"
    )
    print(
        f"|----------|{'-' * 18}|{'-' * 21}|---------:|----------------:|----------:|"
        f"---------------:|"
    )
    for scenario, client, protocol, r in rows:
        print(
            f"| {scenario:8} | {client:16} | {protocol:19} | {r['settle']:8.2f} | "
            f"{r['kept_parts']:15d} | {r['kept']:9d} | {r['gap']:14.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
