"""``wakeup()`` is safe in a signal handler: called on the thread that is inside the consumer
(as a handler interrupting ``poll()`` is), even while that thread holds the locks waking up
takes, it returns at once, and the poll it interrupted raises WakeupError."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import WakeupError
from kafkaconsumer.structs import TopicPartition
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def consumer() -> Iterator[KafkaConsumer]:
    with FakeCluster(topics={"t": 1}) as cluster:
        c = KafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers}, fetch_max_wait_ms=100)
        c.assign([TopicPartition("t", 0)])
        try:
            yield c
        finally:
            c.close(timeout_ms=2000)


def test_wakeup_on_the_thread_inside_the_consumer_holding_its_locks_returns(
    consumer: KafkaConsumer,
) -> None:
    returned = threading.Event()

    def interrupted_inside_poll() -> None:
        consumer._acquire()  # this thread is inside the consumer, as during poll()
        try:
            # Where a signal may land: the flag and wake locks held by the interrupted code.
            with consumer._client._flag_lock, consumer._net._wake_lock:
                consumer.wakeup()  # what the handler runs
                returned.set()
        finally:
            consumer._release()

    t = threading.Thread(target=interrupted_inside_poll, daemon=True)
    t.start()
    t.join(10)
    assert returned.is_set() and not t.is_alive(), "wakeup() waited for a lock its thread holds"
    with pytest.raises(WakeupError):
        consumer.poll(timeout_ms=10_000)
    assert consumer.poll(timeout_ms=0) is not None  # the wakeup was used once


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_sigint_handler_calling_wakeup_stops_a_blocked_poll(consumer: KafkaConsumer) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run on the main thread only")
    previous = signal.signal(signal.SIGINT, lambda *_: consumer.wakeup())
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(WakeupError):
            consumer.poll(timeout_ms=20_000)  # the partition is empty: poll blocks until woken
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
