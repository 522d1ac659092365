"""The interrupt model of :mod:`tests.support.interrupts` against known lock patterns.

Under real SIGINTs at random moments (measured on 3.11: 3,000 interrupts each), a lock taken by
``with`` on an ``RLock`` and one taken by a ``contextmanager`` around such a ``with`` were never
left held, while ``acquire()`` before a ``try`` and ``with`` on a ``Condition`` were, in about
10% and 40% of the interrupts. The model must find the same.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.support.interrupts import run_interrupted_at

_lock = threading.RLock()
_cond = threading.Condition(_lock)


def _with_rlock() -> None:
    with _lock:
        len([])


def _with_condition() -> None:
    with _cond:
        len([])


@contextlib.contextmanager
def _generator_around_with() -> Iterator[None]:
    with _lock:
        yield


def _through_generator() -> None:
    with _generator_around_with():
        len([])


@contextlib.contextmanager
def _generator_acquire_then_try() -> Iterator[None]:
    _lock.acquire()
    try:
        yield
    finally:
        _lock.release()


def _through_acquire_then_try() -> None:
    with _generator_acquire_then_try():
        len([])


def _leaks(fn: Callable[[], None]) -> list[str]:
    _, points, _ = run_interrupted_at(fn, 0)
    assert points > 0
    found = []
    for at in range(1, points + 1):
        fired, _, where = run_interrupted_at(fn, at)
        assert fired
        if _lock._is_owned():  # type: ignore[attr-defined]
            found.append(where)
            while _lock._is_owned():  # type: ignore[attr-defined]
                _lock.release()
    return found


@pytest.mark.parametrize("fn", [_with_rlock, _through_generator])
def test_safe_patterns_never_leave_the_lock_held(fn: Callable[[], None]) -> None:
    assert _leaks(fn) == []


@pytest.mark.parametrize("fn", [_with_condition, _through_acquire_then_try])
def test_unsafe_patterns_are_caught(fn: Callable[[], None]) -> None:
    assert _leaks(fn)


def _all_stops_early() -> None:
    # all() drops its generator half-way: the generator is closed as it dies.
    all(x < 1 for x in range(5))


def _generator_to_the_end() -> None:
    for _ in (x for x in range(3)):
        len([])


@pytest.mark.parametrize("fn", [_all_stops_early, _generator_to_the_end])
def test_every_interrupt_reaches_the_caller_and_none_lands_in_a_closing_generator(
    fn: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real Ctrl-C is never raised inside the close() of a dropped generator (no check is
    # passed there), where it would be swallowed as unraisable; every point the model counts
    # must raise in the call.
    unraisable: list[object] = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    _, points, _ = run_interrupted_at(fn, 0)
    resumes = 0
    for at in range(1, points + 1):
        fired, _, where = run_interrupted_at(fn, at)
        assert fired, at
        resumes += where.startswith("resume of <genexpr>")
    assert unraisable == []
    assert resumes >= 2  # the generators' resumptions are points


def test_an_interrupt_threading_turns_into_runtime_error_counts_as_the_interrupt() -> None:
    # Condition.wait lets go of its lock and takes it back through Python methods; an interrupt
    # after the letting go and before the taking back leaves the lock free and the ``with``
    # around the wait releasing it again, which raises RuntimeError in place of the
    # KeyboardInterrupt.
    _, points, _ = run_interrupted_at(functools.partial(threading.Event().wait, 0.001), 0)
    turned = []
    for at in range(1, points + 1):
        event = threading.Event()
        fired, _, where = run_interrupted_at(functools.partial(event.wait, 0.001), at)
        assert fired, at
        if "RuntimeError" in where:
            turned.append(where)
            assert not event._cond._is_owned()  # type: ignore[attr-defined]
    assert any("start of _acquire_restore" in where for where in turned), turned
    assert all("_acquire_restore" in where or "_release_save" in where for where in turned)
