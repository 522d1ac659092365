"""``kafkaconsumer demo``: a consumer group at work, on a local broker or your cluster.

Starts the embedded broker (unless ``--bootstrap-server`` names a cluster), produces a stream
of sample order events into a new topic, and runs a group of three consumers in threads.
Members join and leave while records flow (member-1 alone, then member-2 and member-3 together,
then member-2 leaves and joins again), so the group rebalances four times (cooperatively by
default); each member commits after every batch and counts a batch only once its commit
succeeded (a batch whose commit is refused during a rebalance is read again). A live view shows
each member's records, rate, lag and partitions; the summary gives records per member,
duplicates and losses (checked by each event's sequence number and by partition and offset),
each rebalance's duration and the throughput. The exit status is 1 if any record was lost or
read twice.

Session timeouts are short (1.5 s): the embedded Tansu broker answers a JoinGroup only after
about half the session timeout, and a member that joins an established group on it may wait out
a whole session timeout before its first assignment (its SyncGroup is held while the leader
rejoins to hand over revoked partitions, and the heartbeats behind it on the same connection go
unanswered until the session timer gives up on the coordinator). Members 2 and 3 join in one
rebalance for the same reason: each join of a cooperative group costs two JoinGroup rounds.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Collection, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, TextIO

from kafkaconsumer.listener import ConsumerRebalanceListener

from ._common import CommandError

__all__ = ["add_parser", "run_demo", "PROTOCOLS"]

#: Short classic timers so that the demo's members join and leave quickly; under the consumer
#: protocol the broker owns them (and the client refuses them). On a cluster given with
#: ``--bootstrap-server`` the session timeout is raised to the broker's
#: ``group.min.session.timeout.ms`` (6 s by Kafka's default), which it would otherwise refuse.
_CLASSIC_TIMERS = {"session.timeout.ms": 1500, "heartbeat.interval.ms": 500}
#: The broker settings that bound a classic member's session timeout.
_SESSION_BOUNDS = ("group.min.session.timeout.ms", "group.max.session.timeout.ms")
#: ``--protocol`` choices and the consumer settings each stands for.
PROTOCOLS: dict[str, dict[str, Any]] = {
    "eager": {"partition.assignment.strategy": "range", **_CLASSIC_TIMERS},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky", **_CLASSIC_TIMERS},
    "consumer": {"group.protocol": "consumer"},
}

_MEMBERS = ("member-1", "member-2", "member-3")
#: Membership changes the demo makes: member-1 joins, members 2 and 3 join together, member-2
#: leaves and member-2 joins again.
_CHANGES = 4
#: Seconds over which the producer spreads the records (stretched by slow rebalances).
_PRODUCE_SECONDS = 8.0
#: How long the group works between two membership changes (records keep flowing).
_PAUSE_S = 0.5


def _consumer_protocol_supported() -> bool:
    """Whether this client implements the KIP-848 consumer protocol (group.protocol=consumer)."""
    import importlib.util

    return (
        importlib.util.find_spec("kafkaconsumer.internals.group.consumer_membership_manager")
        is not None
    )


def _leader_settings(
    admin: Any, topic: str, keys: Collection[str], timeout_s: float = 30.0
) -> dict[str, Any]:
    """``keys`` of the configuration of the broker leading ``topic``'s first partition (a
    broker's own configuration is known only to that broker); empty when no leader shows."""
    from kafkaconsumer.admin import ConfigResource
    from kafkaconsumer.errors import UnknownTopicOrPartitionError

    deadline = time.monotonic() + timeout_s
    leader = -1
    while True:
        try:
            description = admin.describe_topics([topic], timeout_ms=30_000)[topic]
            leader = next((p.leader for p in description.partitions if p.leader >= 0), -1)
        except UnknownTopicOrPartitionError:
            # Just created: the broker answering has not heard of it yet.
            leader = -1
        if leader >= 0 or time.monotonic() >= deadline:
            break
        time.sleep(0.1)  # just created: the leader is elected in a moment
    if leader < 0:
        return {}
    resource = ConfigResource("broker", str(leader))
    entries = admin.describe_configs([resource], keys=list(keys), timeout_ms=30_000)
    return {
        key: entry.value
        for key, entry in entries.get(resource, {}).items()
        if entry.value is not None
    }


def classic_timers(admin: Any, topic: str, timeout_s: float = 30.0) -> dict[str, int]:
    """The demo's classic timers within the session timeouts the cluster accepts: its
    ``group.min/max.session.timeout.ms``."""
    bounds = _leader_settings(admin, topic, _SESSION_BOUNDS, timeout_s)
    session = _CLASSIC_TIMERS["session.timeout.ms"]
    low, high = (bounds.get(key) for key in _SESSION_BOUNDS)
    if low is not None:
        session = max(session, int(low))
    if high is not None:
        session = min(session, int(high))
    # Java's rule of thumb: a heartbeat at most a third of the session.
    return {"session.timeout.ms": session, "heartbeat.interval.ms": max(1, session // 3)}


def consumer_protocol_enabled(admin: Any, topic: str, timeout_s: float = 30.0) -> bool:
    """Whether the group coordinator serves the KIP-848 consumer protocol: Apache Kafka 3.9
    offers the ConsumerGroupHeartbeat API but answers it with UNSUPPORTED_VERSION unless
    ``group.coordinator.rebalance.protocols`` names ``consumer``. A broker that does not say
    is taken at its word (the API it offers)."""
    key = "group.coordinator.rebalance.protocols"
    protocols = _leader_settings(admin, topic, [key], timeout_s).get(key)
    return protocols is None or "consumer" in str(protocols).lower().split(",")


@dataclass
class _MemberState:
    name: str
    status: str = "waiting"
    records: int = 0
    lag: int = 0
    assignment: tuple[Any, ...] = ()
    recent: list[tuple[float, int]] = field(default_factory=list)
    error: str | None = None

    def rate(self, now: float) -> float:
        """Records per second over the last two seconds."""
        window = [(t, n) for t, n in self.recent if now - t <= 2.0]
        self.recent = window
        return sum(n for _, n in window) / 2.0


@dataclass
class _Rebalance:
    cause: str
    started: float
    ended: float | None = None


class _Demo:
    """The shared state of one demo run; member threads report into it under ``lock``."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        partitions: int,
        protocol: str,
        total: int,
        timers: Mapping[str, int] | None = None,
    ) -> None:
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.partitions, self.protocol, self.total = partitions, protocol, total
        #: The consumer settings of the members: the protocol's, with the classic timers the
        #: broker accepts.
        self.settings: dict[str, Any] = dict(PROTOCOLS[protocol])
        if timers is not None and "session.timeout.ms" in self.settings:
            self.settings.update(timers)
        self.lock = threading.Lock()
        self.members = {name: _MemberState(name) for name in _MEMBERS}
        self.seen: set[tuple[int, int]] = set()
        self.sequences: set[int] = set()
        self.duplicates = 0
        self.produced = 0
        self.produce_error: str | None = None
        self.rebalances: list[_Rebalance] = []
        self.stop = {name: threading.Event() for name in _MEMBERS}
        #: The members that should be in the group now (started and not told to stop).
        self.expected: set[str] = set()
        #: Membership changes done so far; the producer releases a share of the records
        #: after each, so that every member of every group shape gets some.
        self.phase = 0
        self.deadline = time.monotonic() + 3600.0
        self.started = time.monotonic()
        self.first_record: float | None = None
        self.last_record: float | None = None

    # -- called by member threads ------------------------------------------------------------
    def record_batch(self, name: str, records: list[Any], lag: int) -> None:
        now = time.monotonic()
        with self.lock:
            member = self.members[name]
            for r in records:
                where = (r.partition, r.offset)
                if where in self.seen:
                    self.duplicates += 1
                self.seen.add(where)
                self.sequences.add(int(json.loads(r.value)["seq"]))
            if records:
                self.first_record = self.first_record or now
                self.last_record = now
                member.records += len(records)
                member.recent.append((now, len(records)))
            member.lag = lag

    def set_assignment(self, name: str, partitions: Collection[Any], status: str) -> None:
        with self.lock:
            member = self.members[name]
            member.assignment = tuple(sorted(partitions))
            member.status = status

    # -- the orchestrator ----------------------------------------------------------------------
    def balanced(self) -> bool:
        """Every expected member is running, and every partition is owned by exactly one of
        them (each owning some, when there are enough partitions)."""
        with self.lock:
            running = {n for n, m in self.members.items() if m.status == "running"}
            if not self.expected or running != self.expected:
                return False
            owners = [self.members[n] for n in running]
            owned = [tp for m in owners for tp in m.assignment]
            return (
                len(owned) == self.partitions
                and len(set(owned)) == self.partitions
                and (self.partitions < len(owners) or all(m.assignment for m in owners))
            )

    def consumed(self) -> int:
        with self.lock:
            return len(self.seen)


class _Member(ConsumerRebalanceListener):
    """One member: polls, commits after every batch, and only then counts the batch as
    processed. A batch whose commit the coordinator refuses because a rebalance is under way
    is rolled back (the member seeks back to its first record), so those records are read
    again, by this member or the partition's next owner, and still count once."""

    def __init__(self, demo: _Demo, name: str, consumer: Any) -> None:
        self.demo, self.name, self.consumer = demo, name, consumer

    def poll_once(self) -> None:
        from kafkaconsumer.errors import RebalanceInProgressError
        from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

        batch = list(self.consumer.poll(timeout_ms=200))
        lag = sum(self.consumer.current_lag(tp) or 0 for tp in self.consumer.assignment())
        first: dict[TopicPartition, int] = {}
        upto: dict[TopicPartition, OffsetAndMetadata] = {}
        for r in batch:
            tp = TopicPartition(r.topic, r.partition)
            first.setdefault(tp, r.offset)
            upto[tp] = OffsetAndMetadata(r.offset + 1)
        if upto:
            try:
                self.consumer.commit_sync(upto, timeout_ms=15_000)
            except RebalanceInProgressError:
                for tp, offset in first.items():
                    self.consumer.seek(tp, offset)
                batch = []
        self.demo.record_batch(self.name, batch, lag)

    # ConsumerRebalanceListener: every processed batch is committed already, so a revocation
    # only has to be shown.
    def on_partitions_revoked(self, revoked: Collection[Any]) -> None:
        self.demo.set_assignment(
            self.name, set(self.consumer.assignment()) - set(revoked), "rebalancing"
        )

    def on_partitions_assigned(self, assigned: Collection[Any]) -> None:
        self.demo.set_assignment(self.name, self.consumer.assignment(), "running")

    def on_partitions_lost(self, lost: Collection[Any]) -> None:
        self.demo.set_assignment(
            self.name, set(self.consumer.assignment()) - set(lost), "rebalancing"
        )


def _member(demo: _Demo, name: str) -> None:
    from kafkaconsumer.consumer import KafkaConsumer

    consumer = KafkaConsumer(
        {
            "bootstrap.servers": demo.bootstrap,
            "group.id": demo.group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "max.poll.records": 500,
            **demo.settings,
        }
    )
    member = _Member(demo, name, consumer)
    try:
        demo.set_assignment(name, (), "joining")
        consumer.subscribe([demo.topic], listener=member)
        stop = demo.stop[name]
        while not stop.is_set():
            member.poll_once()
        demo.set_assignment(name, (), "leaving")
    except Exception as exc:  # noqa: BLE001 - shown in the view and the summary
        with demo.lock:
            demo.members[name].error = f"{type(exc).__name__}: {exc}"
    finally:
        consumer.close(timeout_ms=15_000)
        demo.set_assignment(name, (), "left")


def _produce(demo: _Demo, rate: float) -> None:
    from kafkaconsumer.producer import KafkaProducer

    producer = KafkaProducer(
        {
            "bootstrap.servers": demo.bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "lz4",
        }
    )
    items = ("book", "lamp", "chair", "kettle", "plant", "bicycle", "scarf")
    try:
        started = time.monotonic()
        for seq in range(demo.total):
            # Paced, so that records keep arriving while the group changes, and held back
            # while the group is slower than the pace (a broker with slow rebalances).
            while (
                seq >= demo.total * (demo.phase + 1) // (_CHANGES + 1)
                and time.monotonic() < demo.deadline
            ):
                time.sleep(0.05)
                started += 0.05
            ahead = seq / rate - (time.monotonic() - started)
            if ahead > 0.01:
                time.sleep(ahead)
            customer = f"c-{seq % 500:03d}"
            event = {
                "seq": seq,
                "order": f"o-{seq:06d}",
                "customer": customer,
                "item": items[seq % len(items)],
                "cents": 100 + (seq * 37) % 9900,
            }
            future = producer.send(
                demo.topic, key=customer.encode(), value=json.dumps(event).encode()
            )
            future.add_callback(lambda _md: _count_produced(demo))
        producer.flush(timeout_ms=60_000)
    except Exception as exc:  # noqa: BLE001 - reported in the summary
        demo.produce_error = f"{type(exc).__name__}: {exc}"
    finally:
        producer.close(timeout_ms=10_000)


def _count_produced(demo: _Demo) -> None:
    with demo.lock:
        demo.produced += 1


def _view(demo: _Demo, events: list[str]) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    now = time.monotonic()
    with demo.lock:
        table = Table(
            title=f"group {demo.group} on topic {demo.topic} ({demo.protocol}) - "
            f"produced {demo.produced:,}/{demo.total:,}, consumed "
            f"{len(demo.seen):,}, duplicates {demo.duplicates}, rebalances "
            f"{len(demo.rebalances)}",
            title_justify="left",
        )
        for col in ("member", "status", "records", "rate/s", "lag", "partitions"):
            table.add_column(
                col, justify="right" if col in ("records", "rate/s", "lag") else "left"
            )
        for m in demo.members.values():
            table.add_row(
                m.name,
                m.error or m.status,
                f"{m.records:,}",
                f"{m.rate(now):,.0f}",
                f"{m.lag:,}",
                ",".join(str(tp.partition) for tp in m.assignment) or "-",
            )
    return Group(table, Text("\n".join(events[-6:])))


def _say(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")
    out.flush()


def run_demo(
    bootstrap_servers: str | None = None,
    records: int = 10_000,
    partitions: int = 6,
    protocol: str = "cooperative",
    timeout_s: float = 75.0,
    out: TextIO = sys.stdout,
    live: bool | None = None,
) -> int:
    """Run the demo (see the module docstring); returns 0 when every record was consumed
    exactly once, 1 otherwise. ``live`` forces the live view on or off (default: on for a
    terminal)."""
    from kafkaconsumer.admin import KafkaAdminClient
    from kafkaconsumer.embedded import EmbeddedBroker
    from kafkaconsumer.record import USING_EXTENSION

    if protocol not in PROTOCOLS:
        raise CommandError(f"--protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if protocol == "consumer" and not _consumer_protocol_supported():
        raise CommandError(
            "--protocol consumer needs the KIP-848 consumer protocol, which "
            "this version of the client does not implement yet; use eager or "
            "cooperative"
        )
    if records < 1 or partitions < 1:
        raise CommandError("--records and --partitions must be at least 1")
    own_cluster = bootstrap_servers is not None
    with ExitStack() as stack:
        if bootstrap_servers is None:
            _say(out, "starting the embedded broker (Tansu, in memory) ...")
            broker = stack.enter_context(EmbeddedBroker())
            bootstrap_servers = broker.bootstrap_servers
        _say(out, f"broker: {bootstrap_servers}")
        if protocol == "consumer":
            from kafkaconsumer.protocol import ApiKey

            with KafkaAdminClient({"bootstrap.servers": bootstrap_servers}) as admin:
                if not admin.supports(ApiKey.CONSUMER_GROUP_HEARTBEAT, timeout_ms=30_000):
                    raise CommandError(
                        "--protocol consumer needs a broker with the KIP-848 "
                        "consumer group protocol (Apache Kafka 4.0 or newer); "
                        "this one does not offer it"
                    )
        _say(
            out,
            "record decoder: "
            + (
                "compiled (Cython)"
                if USING_EXTENSION
                else "pure Python (slower; see the RuntimeWarning above)"
            ),
        )
        topic = f"demo-orders-{uuid.uuid4().hex[:8]}"
        group = f"demo-group-{uuid.uuid4().hex[:8]}"
        timers: dict[str, int] | None = None
        with KafkaAdminClient({"bootstrap.servers": bootstrap_servers}) as admin:
            admin.create_topics({topic: partitions}, timeout_ms=30_000)
            if own_cluster and protocol != "consumer":
                timers = classic_timers(admin, topic)
            if protocol == "consumer" and not consumer_protocol_enabled(admin, topic):
                admin.delete_topics([topic], timeout_ms=30_000)
                raise CommandError(
                    "--protocol consumer needs the KIP-848 consumer group protocol, which this "
                    "cluster offers but has not enabled (Apache Kafka 3.9: add consumer to the "
                    "brokers' group.coordinator.rebalance.protocols; 4.0 and newer enable it "
                    "by default)"
                )
        _say(
            out,
            f"created topic {topic} with {partitions} partitions; group {group}, "
            f"{protocol} rebalancing, 3 members",
        )
        if timers is not None and timers != _CLASSIC_TIMERS:
            _say(
                out,
                f"session timeout {timers['session.timeout.ms']} ms, heartbeat "
                f"{timers['heartbeat.interval.ms']} ms: within this cluster's "
                "group.min/max.session.timeout.ms",
            )
        demo = _Demo(bootstrap_servers, topic, group, partitions, protocol, records, timers)
        return _run(demo, records, timeout_s, out, live if live is not None else out.isatty())


def _run(demo: _Demo, records: int, timeout_s: float, out: TextIO, live: bool) -> int:
    threads: dict[str, threading.Thread] = {}
    deadline = demo.deadline = time.monotonic() + timeout_s
    events: list[str] = []

    def log(text: str) -> None:
        line = f"[{time.monotonic() - demo.started:5.1f}s] {text}"
        events.append(line)
        if not live:
            _say(out, line)

    def start(name: str) -> None:
        with demo.lock:
            demo.expected.add(name)
        demo.stop[name].clear()
        threads[name] = threading.Thread(target=_member, args=(demo, name), name=name, daemon=True)
        threads[name].start()

    def settle(cause: str) -> None:
        """Time one rebalance: from the change until every partition is owned again."""
        rebalance = _Rebalance(cause, time.monotonic())
        with demo.lock:
            demo.rebalances.append(rebalance)
        # Bounded: a rebalance that does not finish is reported, not waited for forever.
        while not demo.balanced() and time.monotonic() < deadline:
            time.sleep(0.05)
        if demo.balanced():
            rebalance.ended = time.monotonic()
            log(f"{cause}: balanced after {rebalance.ended - rebalance.started:.2f} s")
        else:
            log(f"{cause}: not balanced before the deadline")
        with demo.lock:
            demo.phase += 1

    # Records over about _PRODUCE_SECONDS, so that every membership change happens while they
    # flow.
    producer = threading.Thread(
        target=_produce,
        args=(demo, max(records / _PRODUCE_SECONDS, 1.0)),
        name="producer",
        daemon=True,
    )

    def pause(seconds: float) -> None:
        """Let the group work a while between changes (records keep flowing)."""
        demo.stop["member-1"].wait(min(seconds, max(0.0, deadline - time.monotonic())))

    def script() -> None:
        producer.start()
        log("member-1 joins")
        start("member-1")
        settle("member-1 joined")
        pause(_PAUSE_S)
        log("member-2 and member-3 join")
        start("member-2")
        start("member-3")
        settle("member-2 and member-3 joined")
        pause(_PAUSE_S)
        log("member-2 leaves")
        with demo.lock:
            demo.expected.discard("member-2")
        demo.stop["member-2"].set()
        threads["member-2"].join(timeout=30)
        settle("member-2 left")
        pause(_PAUSE_S)
        log("member-2 joins again")
        start("member-2")
        settle("member-2 rejoined")
        producer.join(timeout=max(0.0, deadline - time.monotonic()))
        while demo.consumed() < demo.produced or demo.produced < records:
            if (
                time.monotonic() > deadline
                or demo.produce_error
                or (not producer.is_alive() and demo.consumed() >= demo.produced)
            ):
                break
            time.sleep(0.05)
        for name in _MEMBERS:
            demo.stop[name].set()
        for t in threads.values():
            t.join(timeout=30)

    runner = threading.Thread(target=script, name="demo-script", daemon=True)
    runner.start()
    if live:
        from rich.console import Console
        from rich.live import Live

        with Live(_view(demo, events), console=Console(file=out), refresh_per_second=4) as view:
            while runner.is_alive():
                runner.join(timeout=0.25)
                view.update(_view(demo, events))
    runner.join()
    return _summary(demo, records, out)


def _summary(demo: _Demo, records: int, out: TextIO) -> int:
    with demo.lock:
        consumed = len(demo.seen)
        lost = records - len(demo.sequences & set(range(records)))
        _say(out, "")
        _say(
            out,
            f"summary: produced {demo.produced:,} of {records:,} records, consumed "
            f"{consumed:,} distinct records, duplicates = {demo.duplicates}, "
            f"lost = {lost}",
        )
        for m in demo.members.values():
            _say(out, f"  {m.name}: {m.records:,} records" + (f" ({m.error})" if m.error else ""))
        for r in demo.rebalances:
            took = f"{r.ended - r.started:.2f} s" if r.ended is not None else "did not settle"
            _say(out, f"  rebalance after {r.cause}: {took}")
        if demo.first_record is not None and demo.last_record is not None:
            span = max(demo.last_record - demo.first_record, 1e-3)
            _say(
                out,
                f"  throughput: {consumed / span:,.0f} records/s over {span:.1f} s "
                "(paced by the producer; benchmarks/ measures the client's speed)",
            )
        if demo.produce_error:
            _say(out, f"  producer failed: {demo.produce_error}")
        errors = [m.error for m in demo.members.values() if m.error]
        ok = (
            lost == 0
            and demo.duplicates == 0
            and consumed == records
            and not demo.produce_error
            and not errors
        )
    _say(
        out,
        "OK: every record arrived exactly once"
        if ok
        else "FAILED: records were lost or read twice",
    )
    return 0 if ok else 1


def add_parser(sub: Any) -> None:
    """Register the ``demo`` command."""
    p = sub.add_parser(
        "demo",
        help="a live consumer-group demo on a local (embedded) broker",
        description="Start a local broker (or use --bootstrap-server), produce a stream of "
        "sample events and consume them with a group of three members that join "
        "and leave, with a live view and a summary. Exits 1 if any record was "
        "lost or read twice.",
    )
    p.add_argument(
        "--bootstrap-server",
        "--bootstrap-servers",
        dest="bootstrap_server",
        metavar="HOST:PORT",
        help="use this cluster instead of starting the embedded broker",
    )
    p.add_argument(
        "--protocol",
        choices=tuple(PROTOCOLS),
        default="cooperative",
        help="how the group rebalances: eager (range), cooperative "
        "(cooperative-sticky) or consumer (KIP-848; where the client and "
        "broker support it) (default: cooperative)",
    )
    p.add_argument(
        "--records",
        type=int,
        default=10_000,
        metavar="N",
        help=f"how many events to produce, over about {_PRODUCE_SECONDS:.0f} seconds "
        "(default: 10000)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=6,
        metavar="N",
        help="partitions of the demo topic (default: 6)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=75.0,
        metavar="SECONDS",
        help="give up after this long (default: 75)",
    )
    p.add_argument(
        "--no-live", action="store_true", help="print events line by line instead of the live view"
    )
    p.set_defaults(run=_run_command)


def _run_command(args: Any) -> int:
    return run_demo(
        args.bootstrap_server,
        args.records,
        args.partitions,
        args.protocol,
        args.timeout,
        live=False if args.no_live else None,
    )
