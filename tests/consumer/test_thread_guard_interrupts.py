"""Ctrl-C inside a guarded call never leaves the single-thread guard owned.

A KeyboardInterrupt can land between any two interruptible points of the calling thread (see
:mod:`tests.support.interrupts`), among them the point after the guard was taken and before the
``try`` that releases it, and the start of ``release()`` itself. These tests walk an interrupt
through every point of guarded calls and check that afterwards the same thread and another
thread can both call in (and close) without ``ConcurrentModificationError``, while a call that
is still running keeps other threads out.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from kafkaconsumer import errors as Errors
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.internals.thread_guard import ThreadGuard
from kafkaconsumer.share_consumer import KafkaShareConsumer
from tests.support.interrupts import run_interrupted_at


def _on_other_thread(fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn`` on a new thread; what it raised, if anything."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            raised.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert not t.is_alive()
    return raised[0] if raised else None


def _guarded(guard: ThreadGuard, body: Callable[[], Any] = lambda: None) -> None:
    guard.acquire(sys._getframe())
    try:
        body()
    finally:
        guard.release()


def _walk(fn: Callable[[], Any], check: Callable[[str], None]) -> int:
    """Interrupt ``fn`` at each of its points, calling ``check(where)`` after each; how many
    interrupts fired."""
    _, points, _ = run_interrupted_at(fn, 0)
    assert points > 0
    fired = 0
    for at in range(1, points + 1):
        interrupted, _, where = run_interrupted_at(fn, at)
        fired += interrupted
        check(f"interrupted at point {at}, {where}")
    return fired


def test_an_interrupted_entry_is_recovered_by_either_thread() -> None:
    """After an interrupt anywhere in a guarded call (also between acquire and try, and in
    release), another thread and then the same thread can enter."""
    guard = ThreadGuard("KafkaConsumer")

    def check(where: str) -> None:
        assert _on_other_thread(lambda: _guarded(guard)) is None, where
        assert guard.idle(), where
        _guarded(guard)
        assert guard.idle(), where

    assert _walk(lambda: _guarded(guard), check) > 3


def test_an_interrupted_nested_entry_is_recovered_once_the_outer_call_ends() -> None:
    """An interrupted re-entry (a callback's call) does not free the guard while the outer call
    runs, and does not keep it once that call is over."""
    guard = ThreadGuard("KafkaConsumer")

    def inner() -> None:
        try:
            _, points, _ = run_interrupted_at(lambda: _guarded(guard), 0)
            for at in range(1, points + 1):
                run_interrupted_at(lambda: _guarded(guard), at)
                # The outer call still runs: other threads stay out, this one re-enters.
                raised = _on_other_thread(lambda: _guarded(guard))
                assert isinstance(raised, Errors.ConcurrentModificationError), at
                _guarded(guard)
                assert guard.held_by_current_thread()
        except KeyboardInterrupt:
            pytest.fail("the walker's interrupt escaped")

    _guarded(guard, inner)
    assert _on_other_thread(lambda: _guarded(guard)) is None
    _guarded(guard)
    assert guard.idle()


def test_a_running_call_keeps_other_threads_out() -> None:
    """While a thread is inside (blocked in its call), another thread gets
    ConcurrentModificationError; once it returns, the other thread enters."""
    guard = ThreadGuard("KafkaShareConsumer")
    inside, leave = threading.Event(), threading.Event()

    def body() -> None:
        inside.set()
        assert leave.wait(30)

    owner = threading.Thread(target=_guarded, args=(guard, body))
    owner.start()
    try:
        assert inside.wait(30)
        with pytest.raises(Errors.ConcurrentModificationError, match="KafkaShareConsumer"):
            _guarded(guard)
    finally:
        leave.set()
        owner.join(30)
    _guarded(guard)
    assert guard.idle()


def test_an_entry_of_a_thread_that_died_is_recovered() -> None:
    """A guard left owned by a thread that no longer exists is taken by the next caller."""
    guard = ThreadGuard("KafkaConsumer")
    assert _on_other_thread(lambda: guard.acquire(sys._getframe())) is None
    assert not guard.idle()
    _guarded(guard)
    assert guard.idle()


@pytest.mark.parametrize("kind", ["classic", "share"])
def test_interrupted_consumer_calls_leave_it_usable_and_closable(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A consumer whose calls were interrupted at every point still serves calls from the same
    thread and from another thread, and another thread can close it."""
    # A logging handler takes its lock with acquire() before a try: an interrupt landing in
    # between leaves it held, and the next thread that logs through it waits for good.
    caplog.set_level(logging.CRITICAL, logger="kafkaconsumer")
    config = {"bootstrap.servers": "localhost:1", "group.id": "g"}
    consumer: Any = KafkaConsumer(config) if kind == "classic" else KafkaShareConsumer(config)
    try:
        calls: list[Callable[[], Any]] = [
            consumer.subscription,
            lambda: consumer.subscribe(["t1", "t2"]),
        ]
        if kind == "classic":
            calls.append(consumer.assignment)
            calls.append(lambda: consumer.pause([]))
            calls.append(lambda: consumer.seek_to_end([]))

        def check(where: str) -> None:
            assert consumer.subscription() is not None, where
            raised = _on_other_thread(consumer.subscription)
            assert raised is None, f"{where}: {raised!r}"
            assert consumer._guard.idle(), where

        fired = sum(_walk(call, check) for call in calls)
        assert fired > len(calls)
    finally:
        raised = _on_other_thread(lambda: consumer.close(timeout_ms=0))
    assert raised is None, repr(raised)
    assert consumer._closed
