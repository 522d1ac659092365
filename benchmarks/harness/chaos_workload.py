"""The chaos workload: a steady producer, a group of consumer members that commit after every
batch and in ``on_partitions_revoked``, and a ledger that checks the invariants.

* :class:`Producer` writes numbered records (value ``b"<seq>"``) at a steady rate with
  confluent-kafka (librdkafka, idempotent, acks=all) straight to the brokers, never through the
  fault proxy; only acknowledged records count as produced.
* :class:`Member` is one consumer of the group on its own thread. It records every delivery in
  the :class:`Ledger`, commits the batch's offsets with ``commit_sync`` after processing it and
  commits its positions in ``on_partitions_revoked``; errors it meets are kept, never hidden.
  It also measures the CPU time of its own thread, so a test can check it does not spin.
* :class:`Ledger` answers: has every acknowledged record been consumed, which were delivered
  more than once, and when was the consumer caught up with a given moment (recovery time).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import KafkaError
from kafkaconsumer.listener import ConsumerRebalanceListener
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

__all__ = ["Ledger", "Member", "Producer", "wait_until"]

logger = logging.getLogger(__name__)


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> float:
    """Poll ``condition`` (every 20 ms) until true; returns the seconds it took. Fails the test
    with ``what`` after ``timeout`` s."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)
    return time.monotonic() - start


class Ledger:
    """Produced and consumed records, shared by the producer and the members.

    Thread-safety: every method takes the ledger's lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acked: dict[int, float] = {}  # seq -> when the ack arrived
        self.deliveries: collections.Counter[int] = collections.Counter()
        self.consumed_at: dict[int, float] = {}  # seq -> first delivery
        self.by_member: collections.Counter[str] = collections.Counter()

    def on_ack(self, seq: int) -> None:
        """A record was acknowledged by the cluster."""
        with self._lock:
            self.acked[seq] = time.monotonic()

    def on_delivery(self, member: str, seq: int) -> None:
        """A member was handed record ``seq``."""
        now = time.monotonic()
        with self._lock:
            self.deliveries[seq] += 1
            self.consumed_at.setdefault(seq, now)
            self.by_member[member] += 1

    def missing(self, acked_before: float | None = None) -> list[int]:
        """Acknowledged records (optionally: acknowledged before a moment) not yet consumed."""
        with self._lock:
            return sorted(
                s
                for s, t in self.acked.items()
                if s not in self.consumed_at and (acked_before is None or t <= acked_before)
            )

    def duplicates(self) -> dict[int, int]:
        """Records delivered more than once, with their delivery counts."""
        with self._lock:
            return {s: n for s, n in self.deliveries.items() if n > 1}

    def caught_up(self, moment: float) -> bool:
        """True when every record acknowledged up to ``moment`` has been consumed."""
        return not self.missing(acked_before=moment)

    def worst_delay(self, start: float, end: float) -> float:
        """The longest a record acknowledged between two moments waited to be consumed (s);
        records not yet consumed count up to now."""
        now = time.monotonic()
        with self._lock:
            waits = [
                self.consumed_at.get(s, now) - t for s, t in self.acked.items() if start <= t <= end
            ]
        return max(waits, default=0.0)

    def counts(self) -> tuple[int, int]:
        """(acknowledged, consumed at least once)."""
        with self._lock:
            return len(self.acked), len(self.consumed_at)


class Producer(threading.Thread):
    """Writes numbered records to ``topic`` at ``rate`` per second until stopped.

    Thread-safety: start/stop from the test thread; the ledger is locked.
    """

    def __init__(self, bootstrap: str, topic: str, ledger: Ledger, rate: float = 200.0) -> None:
        super().__init__(name="chaos-producer", daemon=True)
        from confluent_kafka import Producer as CProducer

        self._producer: Any = CProducer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120000,
                "reconnect.backoff.max.ms": 500,
            }
        )
        self._topic = topic
        self._ledger = ledger
        self._interval = 1.0 / rate
        self._halt = threading.Event()
        self.seq = 0
        self.errors: list[str] = []

    def run(self) -> None:
        next_at = time.monotonic()
        while not self._halt.is_set():
            seq = self.seq
            self.seq += 1

            def ack(err: Any, _msg: Any, seq: int = seq) -> None:
                if err is None:
                    self._ledger.on_ack(seq)
                else:
                    self.errors.append(str(err))

            while True:
                try:
                    self._producer.produce(
                        self._topic,
                        value=str(seq).encode(),
                        key=str(seq % 97).encode(),
                        on_delivery=ack,
                    )
                    break
                except BufferError:
                    self._producer.poll(0.05)
            self._producer.poll(0)
            next_at += self._interval
            self._halt.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> None:
        """Stop producing and wait (bounded) until every record is acknowledged or failed."""
        if self._producer is None:
            return
        self._halt.set()
        self.join(10)
        remaining = self._producer.flush(60)
        if remaining:
            self.errors.append(f"{remaining} records never acknowledged")
        # Drop librdkafka's handle (and its threads) now, not at garbage collection.
        self._producer = None


class _CommitOnRevoke(ConsumerRebalanceListener):
    def __init__(self, member: Member) -> None:
        self._member = member

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self._member.revocations += 1
        consumer = self._member.consumer
        if consumer is None or not revoked:
            return
        try:
            consumer.commit_sync()
        except KafkaError as exc:
            self._member.errors.append(f"commit on revoke: {exc!r}")

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self._member.assignments.append(sorted(str(tp) for tp in assigned))


class Member(threading.Thread):
    """One member of the group: poll, record, commit the batch, repeat.

    Thread-safety: the consumer is used on this thread only, except ``wakeup``/``close`` which
    are thread-safe by contract.
    """

    def __init__(
        self,
        name: str,
        config: dict[str, Any],
        topic: str,
        ledger: Ledger,
        *,
        process_s: Callable[[], float] | None = None,
        partitions: list[int] | None = None,
    ) -> None:
        super().__init__(name=f"chaos-{name}", daemon=True)
        self.member = name
        self._config = config
        self._topic = topic
        self._ledger = ledger
        self._process_s = process_s
        #: Manual assignment of these partitions instead of a subscription (None: subscribe).
        self._partitions = partitions
        self._halt = threading.Event()
        self.consumer: KafkaConsumer | None = None
        self.errors: list[str] = []
        self.crashed: BaseException | None = None
        self.revocations = 0
        self.assignments: list[list[str]] = []
        self.cpu_samples: list[tuple[float, float]] = []  # (monotonic, thread cpu) per loop
        self.last_delivery = 0.0
        #: (monotonic start, seconds) of each commit after a batch (this thread only).
        self.commits: list[tuple[float, float]] = []

    def run(self) -> None:
        try:
            self.consumer = KafkaConsumer(**self._config)
            if self._partitions is None:
                self.consumer.subscribe([self._topic], listener=_CommitOnRevoke(self))
            else:
                tps = [TopicPartition(self._topic, p) for p in self._partitions]
                self.consumer.assign(tps)
                self.assignments.append(sorted(str(tp) for tp in tps))
            while not self._halt.is_set():
                self.cpu_samples.append((time.monotonic(), time.thread_time()))
                try:
                    records = self.consumer.poll(timeout_ms=200)
                except KafkaError as exc:
                    self.errors.append(f"poll: {exc!r}")
                    continue
                if not records:
                    continue
                offsets: dict[TopicPartition, OffsetAndMetadata] = {}
                for record in records:
                    self._ledger.on_delivery(self.member, int(record.value))
                    tp = TopicPartition(record.topic, record.partition)
                    offsets[tp] = OffsetAndMetadata(record.offset + 1, "")
                self.last_delivery = time.monotonic()
                if self._process_s is not None:
                    time.sleep(self._process_s())
                began = time.monotonic()
                try:
                    self.consumer.commit_sync(offsets)
                except KafkaError as exc:
                    self.errors.append(f"commit: {exc!r}")
                self.commits.append((began, time.monotonic() - began))
        except BaseException as exc:  # a dead consumer thread is what the tests look for
            self.crashed = exc
            logger.exception("member %s crashed", self.member)
        finally:
            if self.consumer is not None:
                try:
                    self.consumer.close(timeout_ms=10_000)
                except BaseException as exc:
                    self.errors.append(f"close: {exc!r}")

    def halt(self) -> None:
        """Ask the member to leave (close() runs on its thread); returns at once."""
        self._halt.set()

    def stop(self) -> None:
        """Ask the member to leave and wait, bounded."""
        self._halt.set()
        self.join(30)

    def longest_commit(self, start: float, end: float) -> float:
        """The longest commit after a batch begun between two moments (seconds; 0 if none)."""
        return max((d for t, d in self.commits if start <= t <= end), default=0.0)

    def cpu_fraction(self, start: float, end: float) -> float:
        """CPU seconds this thread used per wall second between two moments."""
        inside = [s for s in self.cpu_samples if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return (c1 - c0) / max(t1 - t0, 1e-6)
