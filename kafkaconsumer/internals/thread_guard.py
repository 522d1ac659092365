"""The single-thread guard of the consumers (Java's ``acquire()``/``release()`` pair).

A consumer is not safe for use by several threads at once. Every public call takes the guard
on entry and gives it back on exit; a second thread calling in meanwhile gets
:class:`~kafkaconsumer.errors.ConcurrentModificationError` at once instead of corrupting state.
The owning thread may re-enter (a callback run from ``poll()`` calling ``commit_sync()``), so
the guard counts entries.
"""

from __future__ import annotations

import threading

from kafkaconsumer import errors as Errors

__all__ = ["ThreadGuard"]

_NO_THREAD = -1


class ThreadGuard:
    """Which thread is inside a consumer, and how many times it has entered.

    Thread-safety: every method may be called from any thread; :meth:`held_by_current_thread`
    and :meth:`idle` read one field without the lock (a signal handler may call them while the
    interrupted thread holds it).
    """

    def __init__(self, client_kind: str) -> None:
        """``client_kind`` names the consumer class in the error a second thread gets."""
        self._client_kind = client_kind
        self._lock = threading.Lock()
        self._owner = _NO_THREAD  # guarded by _lock (read unlocked by the two queries)
        self._count = 0  # guarded by _lock

    def acquire(self) -> None:
        """Enter on the calling thread, or raise ``ConcurrentModificationError`` when another
        thread is inside."""
        me = threading.get_ident()
        with self._lock:
            if self._owner != me:
                if self._owner != _NO_THREAD:
                    raise Errors.ConcurrentModificationError(
                        f"{self._client_kind} is not safe for multi-threaded access: thread "
                        f"{threading.current_thread().name!r} called in while thread id "
                        f"{self._owner} is using it"
                    )
                self._owner = me
            self._count += 1

    def release(self) -> None:
        """Leave once; the last exit frees the guard for any thread."""
        with self._lock:
            self._count -= 1
            if self._count == 0:
                self._owner = _NO_THREAD

    def held_by_current_thread(self) -> bool:
        """Whether the calling thread is inside the consumer (so a signal handler or callback
        running on it must not take a lock that thread may hold)."""
        return self._owner == threading.get_ident()

    def idle(self) -> bool:
        """Whether no thread is inside the consumer."""
        return self._owner == _NO_THREAD
