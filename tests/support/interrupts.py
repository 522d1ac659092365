"""Raise ``KeyboardInterrupt`` in the calling thread where Ctrl-C could raise it.

CPython runs a pending signal handler (the default SIGINT handler raises KeyboardInterrupt) only
at a few kinds of points of the main thread's bytecode. On 3.11 they are: the start of a Python
function (``RESUME``), the back edge of a loop (``JUMP_BACKWARD``), and right after a ``CALL``
instruction returns (the exception is then raised at that ``CALL``, inside whatever ``try`` or
``with`` encloses it). A function invoked by an instruction other than ``CALL`` (``__enter__``
by ``BEFORE_WITH``, a generator resumed by ``FOR_ITER``) is not followed by a check.

:func:`run_interrupted_at` runs a function under a tracer and a profiler that count those points
(``call`` events, of a generator only when it is entered at a ``RESUME``; ``return`` events of
non-generator frames whose caller is at a ``CALL``; ``c_return`` events, which only ``CALL``
produces; ``JUMP_BACKWARD`` opcode events) and raises
at the ``n``-th one, so that a test can walk an interrupt through every such point of a call,
or a sample of them, and check what the call leaves behind. ``tests/support/test_interrupts.py``
checks the model against patterns whose behaviour under real signals is known. The count of
points is a property of the code that runs, not a timing.

One interrupt surfaces as another exception, and not through our code: one that lands in
``threading.Condition.wait`` between letting go of its lock and taking it back (after
``_release_save`` released it, or at the start of ``_acquire_restore``: real points on 3.11)
makes the ``with`` around the wait release a lock it no longer holds, and the ``RuntimeError``
that raises replaces the KeyboardInterrupt (the lock is left free). :func:`run_interrupted_at`
counts that exception, raised in threading while it handled the interrupt, as the interrupt.
"""

from __future__ import annotations

import dis
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

# CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR: their 'return' events include yields.
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200

_OFFSETS: dict[tuple[CodeType, str], frozenset[int]] = {}

# The callbacks of weak containers (a WeakSet drops a dead member: threading keeps its threads
# in one) and finalizers run whenever an object dies, at no fixed point of the traced call, and
# an exception raised in them is swallowed as unraisable, never seen by the call: their points
# are not counted.
_WEAK_CALLBACK_FILES = ("_weakrefset.py", "weakref.py")


def _runs_when_an_object_dies(code: CodeType) -> bool:
    return code.co_name == "__del__" or code.co_filename.endswith(_WEAK_CALLBACK_FILES)


def _raised_by_threading_for(exc: BaseException) -> bool:
    """Whether ``exc`` is threading's own error for an interrupt it was handling."""
    if not isinstance(exc.__context__, KeyboardInterrupt):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == threading.__file__


def _offsets(code: CodeType, opname: str) -> frozenset[int]:
    key = (code, opname)
    found = _OFFSETS.get(key)
    if found is None:
        found = frozenset(i.offset for i in dis.get_instructions(code) if i.opname == opname)
        _OFFSETS[key] = found
    return found


def run_interrupted_at(fn: Callable[[], Any], at: int) -> tuple[bool, int, str]:
    """Run ``fn()`` in this thread, raising KeyboardInterrupt at its ``at``-th interruptible
    point (never when ``at`` < 1). Returns ``(interrupted, points_passed, where)``, ``where``
    describing the point of the interrupt; any other exception from ``fn`` propagates. Other
    threads are not traced.
    """
    me = threading.get_ident()
    count = 0
    done = False
    fired = False
    where = ""

    def point(desc: Callable[[], str]) -> None:
        nonlocal count, done, fired, where
        count += 1
        if count == at:
            done = fired = True
            where = desc()
            raise KeyboardInterrupt

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if done or threading.get_ident() != me:
            return None
        code = frame.f_code
        if _runs_when_an_object_dies(code):
            return None
        frame.f_trace_opcodes = True
        if event == "call":
            if not code.co_flags & _GENERATOR_FLAGS:
                point(lambda: f"start of {code.co_name} ({code.co_filename}:{frame.f_lineno})")
            elif frame.f_lasti in _offsets(code, "RESUME"):
                # A generator entered at a RESUME (its first step, or after a yield) passes
                # its check. One entered by close() or throw() (a generator dropped half-way,
                # as all() drops it, is closed as it dies) is at its yield and goes straight
                # to the exception, past every check: a Ctrl-C cannot land there.
                point(lambda: f"resume of {code.co_name} ({code.co_filename}:{frame.f_lineno})")
        elif event == "return":
            caller = frame.f_back
            if (
                not code.co_flags & _GENERATOR_FLAGS
                and caller is not None
                and caller.f_lasti in _offsets(caller.f_code, "CALL")
            ):
                point(
                    lambda: (
                        f"after the call of {code.co_name} in {caller.f_code.co_name} "
                        f"({caller.f_code.co_filename}:{caller.f_lineno})"
                    )
                )
        elif event == "opcode" and frame.f_lasti in _offsets(code, "JUMP_BACKWARD"):
            point(lambda: f"loop in {code.co_name} ({code.co_filename}:{frame.f_lineno})")
        return trace

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if done or event != "c_return" or threading.get_ident() != me:
            return
        if _runs_when_an_object_dies(frame.f_code):
            return
        point(
            lambda: (
                f"after {getattr(arg, '__qualname__', arg)!s} returned in "
                f"{frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})"
            )
        )

    previous_trace, previous_profile = sys.gettrace(), sys.getprofile()
    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        fn()
    except KeyboardInterrupt:
        if not fired:
            raise
    except RuntimeError as exc:
        if not (fired and _raised_by_threading_for(exc)):
            raise
        where += f" (threading turned it into RuntimeError: {exc})"
    finally:
        done = True
        sys.setprofile(previous_profile)
        sys.settrace(previous_trace)
    return fired, count, where
