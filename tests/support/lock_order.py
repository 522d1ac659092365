"""Record which of the consumer's locks each thread takes while holding another.

:func:`trace_consumer` replaces the named locks of a :class:`~kafkaconsumer.KafkaConsumer`'s
engine (after construction, before any other thread starts) with wrappers that note, per thread,
the locks already held when a lock is taken. :attr:`LockOrderRecorder.edges` is then the set of
``(held, taken)`` pairs seen, to compare with the lock order in ``docs/internals.md``.

A ``Condition`` is wrapped too: ``wait`` releases the lock for its duration, so the wrapper takes
it off the thread's held list meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class LockOrderRecorder:
    """Collects ``(held, taken)`` edges from every traced lock.

    Thread-safety: safe from any thread (one internal lock, a leaf that is never traced).
    """

    def __init__(self) -> None:
        """Start with no edges."""
        self._local = threading.local()
        self._lock = threading.Lock()
        self.edges: set[tuple[str, str]] = set()

    def held(self) -> list[str]:
        """The traced locks the calling thread holds, outermost first."""
        stack: list[str] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def acquired(self, name: str) -> None:
        """Note that the calling thread now holds ``name``."""
        stack = self.held()
        new = {(h, name) for h in stack if h != name}
        if new:
            with self._lock:
                self.edges |= new
        stack.append(name)

    def released(self, name: str) -> None:
        """Note that the calling thread let go of (one hold of) ``name``."""
        stack = self.held()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] == name:
                del stack[i]
                return


class _TracedLock:
    def __init__(self, inner: Any, name: str, recorder: LockOrderRecorder) -> None:
        self._inner = inner
        self._name = name
        self._recorder = recorder

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ok = bool(self._inner.acquire(blocking, timeout))
        if ok:
            self._recorder.acquired(self._name)
        return ok

    def release(self) -> None:
        self._recorder.released(self._name)
        self._inner.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    # Condition API (the coordinator's lock): waiting lets go of the lock meanwhile.
    def wait(self, timeout: float | None = None) -> bool:
        self._recorder.released(self._name)
        try:
            return bool(self._inner.wait(timeout))
        finally:
            self._recorder.held().append(self._name)

    def wait_for(self, predicate: Any, timeout: float | None = None) -> Any:
        self._recorder.released(self._name)
        try:
            return self._inner.wait_for(predicate, timeout)
        finally:
            self._recorder.held().append(self._name)

    def notify(self, n: int = 1) -> None:
        self._inner.notify(n)

    def notify_all(self) -> None:
        self._inner.notify_all()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def _wrap(obj: Any, attr: str, name: str, recorder: LockOrderRecorder) -> None:
    if obj is not None and hasattr(obj, attr):
        setattr(obj, attr, _TracedLock(getattr(obj, attr), name, recorder))


@contextmanager
def trace_consumer(consumer: Any) -> Iterator[LockOrderRecorder]:
    """Trace the locks of ``consumer``'s engine (call before its first ``poll``)."""
    recorder = LockOrderRecorder()
    coordinator = getattr(consumer, "_coordinator", None)
    _wrap(coordinator, "_lock", "coordinator", recorder)
    # The heartbeat thread waits on a Condition over the same lock: waiting lets go of it.
    _wrap(coordinator, "_cond", "coordinator", recorder)
    _wrap(getattr(coordinator, "heartbeat", None), "_lock", "heartbeat", recorder)
    # The fetcher's lock is its buffer's: one traced lock for both, as the collector takes it
    # through the buffer.
    fetch_buffer = consumer._fetcher._buffer
    _wrap(fetch_buffer, "lock", "fetcher", recorder)
    consumer._fetcher._lock = fetch_buffer.lock
    _wrap(consumer._offset_fetcher, "_lock", "offset_fetcher", recorder)
    _wrap(consumer._subscriptions, "_lock", "subscriptions", recorder)
    _wrap(consumer._metadata, "_lock", "metadata", recorder)
    _wrap(consumer._client, "_lock", "network", recorder)
    _wrap(consumer._client, "_unsent_lock", "network.unsent", recorder)
    _wrap(consumer._client, "_flag_lock", "network.flags", recorder)
    yield recorder
