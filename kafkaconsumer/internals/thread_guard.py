"""The single-thread guard of the consumers (Java's ``acquire()``/``release()`` pair).

A consumer is not safe for use by several threads at once. Every public call takes the guard
on entry and gives it back on exit; a second thread calling in meanwhile gets
:class:`~kafkaconsumer.errors.ConcurrentModificationError` at once instead of corrupting state.
The owning thread may re-enter (a callback run from ``poll()`` calling ``commit_sync()``), so
the guard counts entries.

Ctrl-C can leave an entry without its exit: the KeyboardInterrupt raised by the default SIGINT
handler lands between two bytecodes of the interrupted thread, so it may fall after
:meth:`ThreadGuard.acquire` took the guard and before the ``try`` whose ``finally`` releases
it, or at the start of that ``release()``. No ordering of Python code closes that window, so
the guard makes such an entry recoverable instead: each outermost entry records the frame of
the guarded call, and while that frame is no longer on its thread's stack the call is over,
whatever the count says. The next caller, on any thread, then takes the guard afresh.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType

from kafkaconsumer import errors as Errors

__all__ = ["ThreadGuard"]

_NO_THREAD = -1


def _on_stack(frame: FrameType, top: FrameType | None) -> bool:
    """Whether ``frame`` is ``top`` or one of its callers."""
    while top is not None:
        if top is frame:
            return True
        top = top.f_back
    return False


class ThreadGuard:
    """Which thread is inside a consumer, and how many times it has entered.

    Thread-safety: every method may be called from any thread; :meth:`held_by_current_thread`
    and :meth:`idle` read one field without the lock (a signal handler may call them while the
    interrupted thread holds it). After an entry was left by an interrupt they may answer as
    if the guard were still held, until the next :meth:`acquire` recovers it.
    """

    def __init__(self, client_kind: str) -> None:
        """``client_kind`` names the consumer class in the error a second thread gets."""
        self._client_kind = client_kind
        self._lock = threading.Lock()
        self._owner = _NO_THREAD  # guarded by _lock (read unlocked by the two queries)
        self._count = 0  # guarded by _lock
        # The frame of the owner's outermost guarded call (it ends that call's entries).
        self._call: FrameType | None = None  # guarded by _lock

    def acquire(self, call: FrameType) -> None:
        """Enter on the calling thread for the guarded call running in frame ``call``, or raise
        ``ConcurrentModificationError`` when another thread is inside a guarded call."""
        me = threading.get_ident()
        with self._lock:
            if self._owner != _NO_THREAD and not self._inside():
                # Left by an interrupt: the call that held it is over.
                self._owner, self._count, self._call = _NO_THREAD, 0, None
            if self._owner != me:
                if self._owner != _NO_THREAD:
                    raise Errors.ConcurrentModificationError(
                        f"{self._client_kind} is not safe for multi-threaded access: thread "
                        f"{threading.current_thread().name!r} called in while thread id "
                        f"{self._owner} is using it"
                    )
                self._owner, self._call = me, call
            self._count += 1

    def _inside(self) -> bool:
        """Whether the owner is still running its outermost guarded call (caller holds _lock)."""
        call = self._call
        if call is None:
            return False
        if self._owner == threading.get_ident():
            return _on_stack(call, sys._getframe())
        return _on_stack(call, sys._current_frames().get(self._owner))

    def release(self) -> None:
        """Leave once; the last exit frees the guard for any thread."""
        with self._lock:
            if self._owner != threading.get_ident():
                # Recovered by another thread after this thread's call was interrupted.
                return
            self._count -= 1
            if self._count <= 0:
                self._owner, self._count, self._call = _NO_THREAD, 0, None

    def held_by_current_thread(self) -> bool:
        """Whether the calling thread is inside the consumer (so a signal handler or callback
        running on it must not take a lock that thread may hold)."""
        return self._owner == threading.get_ident()

    def idle(self) -> bool:
        """Whether no thread is inside the consumer."""
        return self._owner == _NO_THREAD
