"""Group members running in threads, each with its own KafkaConsumer, for the real-broker tests.

A :class:`Member` polls in its own thread (a KafkaConsumer is used by one thread only), records
every ``(topic, partition, offset)`` it processed in a shared :class:`Ledger`, and commits what it
processed when partitions are revoked (and on close, through the same listener), which is what
makes a group hand partitions over without losing or duplicating records.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any

from benchmarks.harness.cluster_ops import set_group_config
from kafkaconsumer.config import CLASSIC_PROTOCOL_ONLY
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import RebalanceInProgressError
from kafkaconsumer.listener import ConsumerRebalanceListener
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name
from tests.support.broker_limits import broker_config, session_timeout_ms

logger = logging.getLogger(__name__)

#: Settings that keep group tests fast (short timers) yet tolerant of a busy 2-core machine.
FAST_GROUP = {
    "session.timeout.ms": 3000,
    "heartbeat.interval.ms": 250,
    "max.poll.interval.ms": 20000,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "fetch.max.wait.ms": 100,
    "metadata.max.age.ms": 2000,
    "retry.backoff.ms": 50,
}


def create_topic(
    bootstrap: str, partitions: int, prefix: str = "g2", name: str | None = None
) -> str:
    """Create a topic with ``partitions`` partitions (through librdkafka's admin client)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = name or unique_name(prefix)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1)], operation_timeout=10
    )
    futures[topic].result(timeout=30)
    return topic


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """Write ``per_partition`` records to each partition and wait for every ack."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "enable.idempotence": False}
    )
    failures: list[Any] = []
    for i in range(per_partition):
        for p in range(partitions):
            producer.produce(
                topic,
                value=f"{p}-{i}".encode(),
                partition=p,
                on_delivery=lambda err, _m: failures.append(err) if err else None,
            )
        producer.poll(0)
    left = producer.flush(30)
    assert left == 0 and not failures, f"produce failed: {left} unsent, errors {failures[:3]}"


class Ledger:
    """Every record processed by any member, with who processed it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.processed: list[tuple[str, int, int]] = []
        self.by_member: dict[str, int] = {}
        self._who: list[str] = []  # who processed each entry of ``processed``

    def add(self, member: str, records: Iterable[Any]) -> None:
        """Record a processed batch."""
        with self._lock:
            for r in records:
                self.processed.append((r.topic, r.partition, r.offset))
                self.by_member[member] = self.by_member.get(member, 0) + 1
                self._who.append(member)

    def count(self, member: str | None = None) -> int:
        """Records processed (by one member, or in total)."""
        with self._lock:
            return len(self.processed) if member is None else self.by_member.get(member, 0)

    def mark(self) -> int:
        """A position in the ledger, for :meth:`partitions_of` ``since``."""
        with self._lock:
            return len(self.processed)

    def partitions_of(self, member: str, since: int = 0) -> set[tuple[str, int]]:
        """The (topic, partition) pairs of records a member processed after ``since``."""
        with self._lock:
            return {
                (t, p)
                for (t, p, _o), who in zip(self.processed[since:], self._who[since:], strict=True)
                if who == member
            }

    def distinct(self) -> set[tuple[str, int, int]]:
        """The distinct (topic, partition, offset) triples processed."""
        with self._lock:
            return set(self.processed)

    def duplicates(self) -> list[tuple[str, int, int]]:
        """Triples processed more than once."""
        with self._lock:
            seen: set[tuple[str, int, int]] = set()
            dupes = []
            for item in self.processed:
                if item in seen:
                    dupes.append(item)
                seen.add(item)
            return dupes


class CommittingListener(ConsumerRebalanceListener):
    """Commits the processed positions before partitions are given up; remembers the calls."""

    def __init__(self, member: Member) -> None:
        self.member = member
        self.calls: list[tuple[str, list[TopicPartition]]] = []
        self._lock = threading.Lock()

    def _note(self, name: str, partitions: Collection[TopicPartition]) -> None:
        with self._lock:
            self.calls.append((name, sorted(partitions)))

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        """Commit what was processed, then let the partitions go."""
        self._note("revoked", revoked)
        # During close() the member has committed already (see Member.run).
        if revoked and self.member.commit_on_revoke and not self.member.closing:
            self.member.consumer.commit_sync()

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        """Remember the call."""
        self._note("assigned", assigned)

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        """Lost partitions may belong to someone else already: no commit."""
        self._note("lost", lost)

    def snapshot(self) -> list[tuple[str, list[TopicPartition]]]:
        """A copy of the calls so far."""
        with self._lock:
            return list(self.calls)


class Member(threading.Thread):
    """One group member polling in its own thread."""

    def __init__(
        self,
        name: str,
        bootstrap: str,
        group: str,
        topics: list[str] | re.Pattern[str],
        ledger: Ledger,
        *,
        strategy: str = "range",
        delay_per_poll_s: float = 0.0,
        commit_on_revoke: bool = True,
        on_poll: Callable[[Member, Any], None] | None = None,
        cooperative_rejoin_delay_ms: int = 0,
        **config: Any,
    ) -> None:
        super().__init__(name=f"member-{name}", daemon=True)
        self.member_name = name
        self.ledger = ledger
        self.topics = topics
        self.delay_per_poll_s = delay_per_poll_s
        self.commit_on_revoke = commit_on_revoke
        self.on_poll = on_poll
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"{group}-{name}",
            "partition.assignment.strategy": strategy,
        }
        settings.update(FAST_GROUP)
        # A cluster of one's own may refuse the short session (group.min.session.timeout.ms).
        settings["session.timeout.ms"] = session_timeout_ms(
            bootstrap, settings["session.timeout.ms"]
        )
        settings.update({k.replace("_", "."): v for k, v in config.items()})
        if str(settings.get("group.protocol", "classic")).lower() == "consumer":
            # The broker owns the consumer protocol's timers and assignor: the client refuses
            # these keys there, as Java's does.
            for key in CLASSIC_PROTOCOL_ONLY:
                settings.pop(key, None)
        settings["internal.cooperative.rejoin.delay.ms"] = cooperative_rejoin_delay_ms
        self.settings = settings
        self.consumer: KafkaConsumer = KafkaConsumer(settings)
        self.listener = CommittingListener(self)
        self._stopping = threading.Event()
        self.paused = threading.Event()  # set: do not call poll (simulates slow processing)
        self.leave_on_close: bool | None = None
        self.error: BaseException | None = None
        self.polls = 0
        self._assignment: set[TopicPartition] = set()
        self._alock = threading.Lock()
        self.closed = threading.Event()
        self.closing = False
        self.calls_in_thread: list[Callable[[Member], None]] = []

    # -- thread --------------------------------------------------------------------------
    def run(self) -> None:
        """Subscribe, then poll and process until stopped; close on the way out."""
        try:
            self.consumer.subscribe(self.topics, listener=self.listener)
            while not self._stopping.is_set():
                while self.calls_in_thread:
                    self.calls_in_thread.pop(0)(self)
                if self.paused.is_set():
                    time.sleep(0.02)
                    continue
                records = self.consumer.poll(100)
                self.polls += 1
                if len(records):
                    self.ledger.add(self.member_name, records)
                if self.on_poll is not None:
                    self.on_poll(self, records)
                with self._alock:
                    self._assignment = set(self.consumer.assignment())
                if self.delay_per_poll_s:
                    time.sleep(self.delay_per_poll_s)
        except BaseException as exc:  # reported by the test through .error
            logger.exception("member %s failed", self.member_name)
            self.error = exc
        finally:
            try:
                if (
                    self.commit_on_revoke
                    and self.error is None
                    and self.leave_on_close is not False
                ):
                    self._final_commit()
                self.closing = True
                self.consumer.close(timeout_ms=10000, leave_group=self.leave_on_close)
            except BaseException as exc:
                logger.exception("member %s failed to close", self.member_name)
                self.error = self.error or exc
            self.closed.set()

    def _final_commit(self) -> None:
        # A commit during a rebalance raises RebalanceInProgressError (as in Java); closing
        # then would give the partitions up as lost with their progress uncommitted. Finish the
        # rebalance first (processing what poll() returns), then commit.
        for _ in range(100):
            try:
                self.consumer.commit_sync()
                return
            except RebalanceInProgressError:
                records = self.consumer.poll(100)
                if len(records):
                    self.ledger.add(self.member_name, records)
        self.consumer.commit_sync()

    def stop(self, leave_group: bool | None = None, timeout_s: float = 20.0) -> None:
        """Stop polling and close (leaving the group unless ``leave_group`` is False)."""
        self.leave_on_close = leave_group
        self._stopping.set()
        self.join(timeout_s)
        assert not self.is_alive(), f"member {self.member_name} did not stop"

    def assignment(self) -> set[TopicPartition]:
        """The assignment seen after the last poll."""
        with self._alock:
            return set(self._assignment)


class MemberProcess:
    """A member in a process of its own (tests/group/member_process.py), to be SIGKILLed."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        self.args = [bootstrap, group, topic, protocol]
        self.topic = topic
        self.proc: subprocess.Popen[str] | None = None
        self._assignment: set[TopicPartition] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the process (its code from this checkout) and a thread reading its reports."""
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.group.member_process", *self.args],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, name="member-process-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = {TopicPartition(self.topic, p) for p in json.loads(line)}
            with self._lock:
                self._assignment = parts

    def assignment(self) -> set[TopicPartition]:
        """The assignment the process reported last."""
        with self._lock:
            return set(self._assignment)

    def kill(self) -> None:
        """SIGKILL: no leave, no close; for the broker the member just goes silent."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _broker_int(bootstrap: str, key: str) -> int:
    value = broker_config(bootstrap, key)
    return int(value) if value is not None else 0


def expel_killed_member(survivor: Member, protocol: str, partitions: set[TopicPartition]) -> None:
    """Start ``survivor``, then a member process in the same group; once they split
    ``partitions``, SIGKILL the process (no leave) and wait for the broker to expel it after the
    session timeout and hand everything to ``survivor``. Stops ``survivor``."""
    settings = survivor.settings
    (topic,) = {tp.topic for tp in partitions}
    bootstrap = settings["bootstrap.servers"]
    session_ms = int(settings.get("session.timeout.ms", 0))
    if protocol == "consumer":
        # The broker owns the session timeout of this protocol: shorten it for this group
        # (the broker's default is 45 s; the test brokers allow 1 s and more), down to the
        # broker's group.consumer.min.* settings (45 s and 5 s by Kafka's default).
        session_ms = max(3000, _broker_int(bootstrap, "group.consumer.min.session.timeout.ms"))
        heartbeat_ms = max(500, _broker_int(bootstrap, "group.consumer.min.heartbeat.interval.ms"))
        set_group_config(
            bootstrap,
            settings["group.id"],
            {
                "consumer.heartbeat.interval.ms": str(heartbeat_ms),
                "consumer.session.timeout.ms": str(session_ms),
            },
        )
    killed = MemberProcess(settings["bootstrap.servers"], settings["group.id"], topic, protocol)
    try:
        survivor.start()
        wait_until(
            lambda: survivor.assignment() == partitions, 30, "one member owns all", [survivor]
        )
        killed.start()
        wait_until(
            lambda: (
                bool(killed.assignment())
                and not killed.assignment() & survivor.assignment()
                and killed.assignment() | survivor.assignment() == partitions
            ),
            40,
            "a split with the member process",
            [survivor],
        )
        killed.kill()
        wait_until(
            lambda: survivor.assignment() == partitions,
            60 + session_ms / 1000,
            "the killed member's partitions moved after the session timeout",
            [survivor],
        )
        assert "lost" not in [n for n, _p in survivor.listener.snapshot()]
    finally:
        killed.kill()
        survivor.stop()
    assert survivor.error is None, survivor.error


def churn(
    make_member: Callable[[str], Member],
    ledger: Ledger,
    expected: set[tuple[str, int, int]],
    partitions: set[TopicPartition],
) -> Member:
    """Run a group through 1 -> 2 -> 3 -> 2 -> 1 members (m1, m2, m3) while they process.

    Each step waits for a stable split and for the newcomer to process; m1 finishes alone at
    full speed. Checks that every record of ``expected`` was processed exactly once and that
    every member took part; returns m1 (whose listener calls the caller may inspect).
    """
    m1 = make_member("m1")
    members = [m1]
    m1.start()
    try:
        wait_until(
            lambda: m1.assignment() == partitions and ledger.count("m1") > 0,
            30,
            "m1 owns everything",
            members,
        )
        for name in ("m2", "m3"):
            m = make_member(name)
            members.append(m)
            m.start()
            wait_until(
                lambda: stable_split(members, partitions),
                30,
                f"a stable split over {len(members)} members",
                members,
            )
            before = ledger.count(name)
            wait_until(
                lambda n=name, b=before: ledger.count(n) > b,  # type: ignore[misc]
                30,
                f"{name} processes",
                members,
            )
        for leaving in (members[2], members[1]):
            leaving.stop()
            members.remove(leaving)
            assert leaving.error is None, leaving.error
            wait_until(
                lambda: stable_split(members, partitions),
                30,
                f"a stable split over {len(members)} members",
                members,
            )
        m1.delay_per_poll_s = 0.0
        wait_until(
            lambda: len(ledger.distinct()) >= len(expected), 60, "every record processed", members
        )
        m1.stop()
        assert m1.error is None, m1.error
    finally:
        for m in members:
            if m.is_alive():
                m.stop()
    assert ledger.duplicates() == []
    assert ledger.distinct() == expected
    assert all(ledger.count(n) > 0 for n in ("m1", "m2", "m3"))
    return m1


def wait_until(
    condition: Callable[[], object], timeout_s: float, what: str, members: Iterable[Member] = ()
) -> None:
    """Wait for ``condition``, failing fast when a member thread died with an error."""
    deadline = time.monotonic() + timeout_s
    members = list(members)
    while not condition():
        for m in members:
            if m.error is not None:
                raise AssertionError(f"member {m.member_name} failed: {m.error!r}") from m.error
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def stable_split(members: list[Member], partitions: set[TopicPartition]) -> bool:
    """True when the members' assignments are disjoint, non-empty and cover ``partitions``."""
    seen: set[TopicPartition] = set()
    for m in members:
        a = m.assignment()
        if not a or a & seen:
            return False
        seen |= a
    return seen == partitions
