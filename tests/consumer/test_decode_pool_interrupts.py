"""Ctrl-C while the polling thread takes the decode pool's work leaves the pool working.

The polling thread waits for (or cancels) the work a decode thread prepares for it. An
interrupt landing just after that wait took a lock through Python code (a ``Condition``'s
``__enter__``) would leave the lock taken, and the worker finishing the work would block on it
for good. These tests walk an interrupt through every point (see :mod:`tests.support.interrupts`)
of taking work that is running and work that is still queued, and check after each that the
interrupted work still finishes and the pool still runs new work.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from kafkaconsumer.internals.fetch.arrow_decoder import _taken
from kafkaconsumer.internals.fetch.decode_pool import DecodePool, PoolWork
from tests.support.interrupts import run_interrupted_at


def _blocker(started: threading.Event, gate: threading.Event) -> str:
    started.set()
    assert gate.wait(30)
    return "done"


@pytest.mark.parametrize("state", ["running", "queued"])
def test_interrupted_take_leaves_the_pool_working(state: str) -> None:
    """After an interrupt anywhere in taking running or queued work, the work started still
    finishes and the pool's worker runs the next work."""
    pool = DecodePool(2)  # one worker
    try:

        def take_once(at: int) -> tuple[bool, str]:
            started, gate = threading.Event(), threading.Event()
            first = pool.submit(_blocker, started, gate)
            assert first is not None and started.wait(30)
            target: PoolWork | None = first
            if state == "queued":
                target = pool.submit(str.upper, "queued")
            cf: Any = SimpleNamespace(prepared=target)
            # Running work is waited for: let it finish while the polling thread waits.
            opener = threading.Timer(0.01, gate.set)
            opener.start()
            try:
                interrupted, _, where = run_interrupted_at(lambda: _taken(cf), at)
            finally:
                opener.join()
            assert first.result(timeout=30) == "done", where
            after = pool.submit(str.upper, "next")
            assert after is not None
            assert after.result(timeout=30) == "NEXT", f"{where}: the worker is stuck"
            return interrupted, where

        take_once(0)
        points = 1
        while True:
            interrupted, where = take_once(points)
            if not interrupted:
                break
            points += 1
        assert points > 3
    finally:
        pool.close()


def test_work_outcomes() -> None:
    """Work returns its value or raises its error; cancelled work never runs; queued work is
    cancelled by close()."""
    pool = DecodePool(2)
    ran: list[str] = []
    try:
        ok = pool.submit(lambda: "v")
        bad = pool.submit(lambda: 1 // 0)
        assert ok is not None and ok.result(timeout=10) == "v"
        assert bad is not None
        with pytest.raises(ZeroDivisionError):
            bad.result(timeout=10)
        started, gate = threading.Event(), threading.Event()
        running = pool.submit(_blocker, started, gate)
        assert running is not None and started.wait(30)
        with pytest.raises(TimeoutError):
            running.result(timeout=0.01)
        queued = pool.submit(ran.append, "queued")
        assert queued is not None and queued.cancel()
        assert not running.cancel()
        dropped = pool.submit(ran.append, "dropped")
        assert dropped is not None
        pool.close()
        gate.set()
        assert running.result(timeout=30) == "done"
        assert not dropped.cancel()  # close() cancelled it
    finally:
        pool.close()
    assert ran == []
    assert pool.submit(str) is None
