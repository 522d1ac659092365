"""The consumer's network thread and the background poll it makes: it sleeps while there is no
work, polls while there is, stops on close, and never takes what belongs to ``poll()``."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafkaconsumer.errors import KafkaConnectionError, KafkaError, WakeupError
from kafkaconsumer.network.consumer_network_thread import ConsumerNetworkThread
from tests.network.conftest import Factory

pytestmark = pytest.mark.timeout(60)


class _Poller:
    """Counts background polls; each waits a little, as a poll with nothing to read does."""

    def __init__(self) -> None:
        self.polls = 0
        self.fail_with: BaseException | None = None
        self.wanted = True

    def background_wanted(self) -> bool:
        return self.wanted

    def poll_background(self, timeout_ms: float) -> None:
        self.polls += 1
        if self.fail_with is not None:
            raise self.fail_with
        time.sleep(0.005)


def _wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def test_idle_without_work() -> None:
    """With no work the thread only sleeps; with work it polls; once the work is done it
    sleeps again."""
    poller = _Poller()
    work = threading.Event()
    thread = ConsumerNetworkThread(poller, work.is_set, "test-network-thread")
    thread.start()
    try:
        time.sleep(0.3)
        assert poller.polls == 0
        work.set()
        thread.kick()
        _wait_for(lambda: poller.polls >= 3)
        work.clear()
        time.sleep(0.05)
        settled = poller.polls
        time.sleep(0.3)
        assert poller.polls == settled
    finally:
        thread.close(5.0)
    assert not thread.is_alive()


def test_sleeps_while_its_client_does_not_want_it() -> None:
    """With work but a client that does not want background polls (the consumer after a
    poll()), the thread sleeps; wanted again and kicked, it polls."""
    poller = _Poller()
    poller.wanted = False
    work = threading.Event()
    work.set()
    thread = ConsumerNetworkThread(poller, work.is_set, "test-network-thread")
    thread.start()
    try:
        thread.kick()
        time.sleep(0.3)
        assert poller.polls == 0
        poller.wanted = True
        thread.kick()
        _wait_for(lambda: poller.polls >= 3)
        poller.wanted = False
        time.sleep(0.05)
        settled = poller.polls
        time.sleep(0.3)
        assert poller.polls == settled
    finally:
        thread.close(5.0)
    assert not thread.is_alive()


def test_a_kick_wakes_the_sleeping_thread_at_once() -> None:
    """Work that appears while the thread sleeps is picked up on the kick, not after the
    thread's longest sleep."""
    poller = _Poller()
    work = threading.Event()
    thread = ConsumerNetworkThread(poller, work.is_set, "test-network-thread")
    thread.start()
    try:
        _wait_for(lambda: thread._parked)
        work.set()
        thread.kick()
        _wait_for(lambda: poller.polls > 0, timeout_s=2.0)
    finally:
        thread.close(5.0)


def test_ends_when_the_client_is_closed() -> None:
    """A poll that finds the client closed ends the thread."""
    poller = _Poller()
    poller.fail_with = KafkaConnectionError("closed")
    thread = ConsumerNetworkThread(poller, lambda: True, "test-network-thread")
    thread.start()
    thread.join(5.0)
    assert not thread.is_alive()
    assert poller.polls == 1


def test_an_unexpected_failure_does_not_spin() -> None:
    """A poll that keeps failing is retried after a pause, not in a tight loop."""
    poller = _Poller()
    poller.fail_with = KafkaError("bug in a handler")
    thread = ConsumerNetworkThread(poller, lambda: True, "test-network-thread")
    thread.start()
    try:
        time.sleep(0.5)
        assert 1 <= poller.polls <= 20
    finally:
        thread.close(5.0)
    assert not thread.is_alive()


def test_ends_once_its_client_is_dropped() -> None:
    """The thread holds its client weakly: once the client is gone it ends at its next wake-up
    instead of keeping it alive."""
    poller = _Poller()
    work = threading.Event()
    thread = ConsumerNetworkThread(poller, work.is_set, "test-network-thread")
    thread.start()
    _wait_for(lambda: thread._parked)
    del poller
    work.set()
    thread.kick()
    thread.join(10.0)
    assert not thread.is_alive()


def test_background_poll_leaves_wakeup_and_fatal_errors_to_poll(make_client: Factory) -> None:
    """The background poll neither consumes a pending wakeup() nor raises a fatal metadata
    error: both reach the next poll()."""
    cnc = make_client("127.0.0.1:1")
    assert cnc.metadata is not None
    cnc.wakeup()
    cnc.metadata.set_fatal_error(KafkaError("fatal"))
    cnc.poll_background(0)
    with pytest.raises(WakeupError):
        cnc.poll(0)
    with pytest.raises(KafkaError, match="fatal"):
        cnc.poll(0)


def test_a_pending_wakeup_ends_a_poll_whose_byte_was_drained(make_client: Factory) -> None:
    """After another thread's poll drained the wake byte, a blocking poll still raises
    WakeupError at once instead of waiting out its timeout."""
    cnc = make_client("127.0.0.1:1")
    cnc.wakeup()
    cnc.poll_background(0)  # drains the byte, leaves the flag
    start = time.monotonic()
    with pytest.raises(WakeupError):
        cnc.poll(10_000)
    assert time.monotonic() - start < 5  # not the poll's 10 s (slack for a loaded machine)


def test_background_receive_is_stopped_by_close(make_client: Factory) -> None:
    """start_background_receive() starts the thread; close() ends it."""
    cnc = make_client("127.0.0.1:1")
    pending = threading.Event()
    cnc.start_background_receive(pending.is_set, "test-network-thread")
    assert cnc.receives_in_background
    thread = cnc._network_thread
    assert thread is not None and thread.is_alive()
    pending.set()
    cnc.send(0, 18, {})
    cnc.close()
    thread.join(5.0)
    assert not thread.is_alive()
