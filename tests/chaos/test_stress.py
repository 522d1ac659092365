"""Concurrency stress: wakeup() and close() from other threads at random moments, rebalance
listeners that sleep, raise or call back into the consumer, and SIGINT in a group member.

No deadlock (every test is bounded and every wait has a deadline), the heartbeat thread always
stops, close() leaves the group so that the others take over at once, and the consumer ends in
a defined state with a clear error.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Collection
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import (
    ConcurrentModificationError,
    IllegalStateError,
    KafkaError,
    WakeupError,
)
from kafkaconsumer.listener import ConsumerRebalanceListener
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records
from tests.helpers import default_sigint, unique_name, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SESSION_MS = 3000


def _consumer(broker: Any, group: str, **extra: Any) -> KafkaConsumer:
    cfg: dict[str, Any] = {
        "bootstrap_servers": broker.bootstrap_servers,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": SESSION_MS,
        "heartbeat_interval_ms": 300,
        "max_poll_interval_ms": 10_000,
        "fetch_max_wait_ms": 100,
    }
    cfg.update(extra)
    return KafkaConsumer(**cfg)


def _heartbeat_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "heartbeat" in t.name.lower()]


@pytest.fixture
def topic(broker: Any) -> str:
    name = create_topic(str(broker.bootstrap_servers), 3, prefix="stress")
    produce(str(broker.bootstrap_servers), name, simple_records(3, 40))
    return name


def test_wakeup_at_random_moments(broker: Any, topic: str) -> None:
    """wakeup() from another thread during poll, commit and rebalance: each one ends in a
    WakeupError from exactly one call, and consumption goes on to the end."""
    consumer = _consumer(broker, unique_name("wk"), max_poll_records=7)
    rng = random.Random(4)
    stop = threading.Event()
    sent = [0]

    def waker() -> None:
        while not stop.wait(rng.uniform(0.0, 0.05)):
            consumer.wakeup()
            sent[0] += 1

    seen: set[tuple[int, int]] = set()
    wakeups = 0
    thread = threading.Thread(target=waker, daemon=True)
    try:
        consumer.subscribe([topic])
        thread.start()
        deadline = time.monotonic() + 60
        # Until every record is read and enough wakeups have landed: a fast consumer can read
        # the 120 records before the waker (every 0-50 ms) has interrupted it six times.
        while len(seen) < 120 or wakeups <= 5:
            assert time.monotonic() < deadline, f"stuck at {len(seen)} records, {wakeups} wakeups"
            try:
                for r in consumer.poll(timeout_ms=100):
                    seen.add((r.partition, r.offset))
                consumer.commit_sync()
            except WakeupError:
                wakeups += 1
    finally:
        stop.set()
        thread.join(5)
        consumer.close(timeout_ms=5000)
    assert wakeups > 5 and sent[0] >= wakeups
    assert not _heartbeat_threads()


def test_close_from_another_thread(broker: Any, topic: str) -> None:
    """close() from another thread either closes the consumer or refuses with
    ConcurrentModificationError while a call is in progress (as Java); the polling thread then
    gets ConcurrentModificationError (close in progress) or IllegalStateError (closed), the heartbeat thread is gone and the other member
    takes the partitions over without waiting for the session to expire."""
    group = unique_name("cl")
    victim = _consumer(broker, group)
    other = _consumer(broker, group)
    refused = [0]
    outcome: list[BaseException] = []
    stop = threading.Event()
    thread: threading.Thread | None = None
    victim.subscribe([topic])
    other.subscribe([topic])
    try:
        wait_for(
            lambda: (
                (victim.poll(timeout_ms=50), other.poll(timeout_ms=50))
                and victim.assignment()
                and other.assignment()
            ),
            timeout=30,
            message="both members to get partitions",
        )

        def poller() -> None:
            pause = random.Random(3)
            try:
                while not stop.is_set():
                    victim.poll(timeout_ms=20)
                    time.sleep(pause.uniform(0, 0.01))  # "processing": close() may land here
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=poller, daemon=True)
        thread.start()
        rng = random.Random(7)
        closed_at = None
        deadline = time.monotonic() + 20
        while closed_at is None:
            assert time.monotonic() < deadline, "close() never got in"
            time.sleep(rng.uniform(0, 0.02))
            try:
                victim.close(timeout_ms=5000)
                closed_at = time.monotonic()
            except ConcurrentModificationError:
                refused[0] += 1
        thread.join(10)
        stop.set()
        assert not thread.is_alive()
        # The poller's next call met the close: in progress (ConcurrentModificationError, as
        # Java) or done (IllegalStateError). Either is a clear, defined end.
        assert outcome and isinstance(
            outcome[0], (IllegalStateError, ConcurrentModificationError)
        ), outcome
        # The survivor owns all three partitions well before a session timeout could have
        # expelled the victim.
        wait_for(
            lambda: other.poll(timeout_ms=50) is not None and len(other.assignment()) == 3,
            timeout=SESSION_MS / 1000 * 0.9,
            message="the other member to take over",
        )
    finally:
        stop.set()
        if thread is not None:
            thread.join(10)
        other.close(timeout_ms=5000)
        victim.close(timeout_ms=1000)
    wait_for(lambda: not _heartbeat_threads(), timeout=5, message="heartbeat threads to stop")


class _Listener(ConsumerRebalanceListener):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.consumer: KafkaConsumer | None = None
        self.calls = 0

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self._act(revoked)

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self._act(assigned, assigned=True)

    def _act(self, partitions: Collection[TopicPartition], assigned: bool = False) -> None:
        self.calls += 1
        consumer = self.consumer
        assert consumer is not None
        if self.mode == "sleep":
            time.sleep(0.5)
        elif self.mode == "raise" and assigned and self.calls == 1:
            raise RuntimeError("listener failure on purpose")
        elif self.mode == "commit" and partitions:
            consumer.commit_sync()
        elif self.mode == "seek" and assigned:
            for tp in partitions:
                consumer.seek(tp, 10)
        elif self.mode == "pause" and assigned:
            consumer.pause(list(partitions)[:1])


@pytest.mark.parametrize("mode", ["sleep", "raise", "commit", "seek", "pause"])
def test_rebalance_listener_misbehaviour(broker: Any, topic: str, mode: str) -> None:
    listener = _Listener(mode)
    consumer = _consumer(broker, unique_name(f"ls-{mode}"))
    listener.consumer = consumer
    errors: list[BaseException] = []
    seen: set[tuple[int, int]] = set()
    try:
        consumer.subscribe([topic], listener=listener)
        deadline = time.monotonic() + 40
        want = {"seek": 90, "pause": 80}.get(mode, 120)
        while len(seen) < want:
            assert time.monotonic() < deadline, f"{mode}: stuck at {len(seen)} records"
            try:
                for r in consumer.poll(timeout_ms=100):
                    seen.add((r.partition, r.offset))
            except KafkaError as exc:
                errors.append(exc)
            except RuntimeError as exc:
                errors.append(exc)
    finally:
        consumer.close(timeout_ms=5000)
    if mode == "raise":
        # As Java: the listener's exception comes out of poll() once, the rebalance completes.
        assert len(errors) == 1 and "on purpose" in repr(errors[0]), errors
    else:
        assert not errors, errors
    if mode == "seek":
        assert min(off for _p, off in seen) == 10
    if mode == "pause":
        assert len({p for p, _o in seen}) == 2
    assert not _heartbeat_threads()


_MEMBER = textwrap.dedent("""
    import sys, time
    from kafkaconsumer.consumer import KafkaConsumer
    c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                      auto_offset_reset="earliest", session_timeout_ms=30000,
                      heartbeat_interval_ms=300, fetch_max_wait_ms=100)
    c.subscribe([sys.argv[3]])
    try:
        while True:
            c.poll(timeout_ms=100)
            if c.assignment():
                print("assigned", flush=True)
    except KeyboardInterrupt:
        c.close(timeout_ms=5000)
        print("closed", flush=True)
""")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigint_in_a_group_member(broker: Any, topic: str, seed: int) -> None:
    """SIGINT at a random moment: the member's KeyboardInterrupt reaches its handler, close()
    leaves the group, and the other member takes over at once (the victim's session is 30 s)."""
    group = unique_name("sig")
    other = _consumer(broker, group)
    other.subscribe([topic])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen(
        [sys.executable, "-c", _MEMBER, str(broker.bootstrap_servers), group, topic],
        cwd=root,
        preexec_fn=default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 40
        while "assigned" not in line:
            other.poll(timeout_ms=50)
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            line = proc.stdout.readline() if _readable(proc) else ""
        time.sleep(random.Random(seed).uniform(0, 0.5))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert "closed" in out, err[-2000:]
        assert proc.returncode == 0, err[-2000:]
        wait_for(
            lambda: other.poll(timeout_ms=50) is not None and len(other.assignment()) == 3,
            timeout=10,
            message="the other member to take over",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        other.close(timeout_ms=5000)


def _readable(proc: subprocess.Popen[str]) -> bool:
    import select

    assert proc.stdout is not None
    return bool(select.select([proc.stdout], [], [], 0.05)[0])
