"""A minimal completion handle for asynchronous requests (Java: ``RequestFuture``).

A :class:`Future` is completed exactly once, either with a value (:meth:`Future.success`) or with
an exception (:meth:`Future.failure`). Callbacks added before completion run when it completes;
callbacks added afterwards run at once. The network layer completes futures while it holds its
lock only through :class:`~kafkaconsumer.network.consumer_client.ConsumerNetworkClient`, which
defers the callbacks until the lock is released.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

logger = logging.getLogger(__name__)

__all__ = ["Future"]

T = TypeVar("T")

_PENDING = object()


class Future(Generic[T]):
    """The eventual result of one request.

    Thread-safety: completion and callback registration are guarded by a small lock, so a
    future may be completed by the network thread while another thread adds callbacks or waits
    on it with :meth:`wait`. Callbacks run on the thread that completes the future (or on the
    thread that adds them when the future is already done).
    """

    __slots__ = ("_lock", "_event", "_value", "_exception", "_callbacks", "_errbacks")

    def __init__(self) -> None:
        """Start pending, with no callbacks."""
        self._lock = threading.Lock()
        self._event: threading.Event | None = None  # guarded by _lock
        # Written once, under _lock, by the completing thread; read without it (is_done,
        # value): a single attribute read, and never changed again once set.
        self._value: Any = _PENDING
        self._exception: BaseException | None = None  # as _value
        self._callbacks: list[Callable[[T], Any]] = []  # guarded by _lock
        self._errbacks: list[Callable[[BaseException], Any]] = []  # guarded by _lock

    # -- state -------------------------------------------------------------------------------
    @property
    def is_done(self) -> bool:
        """True once the future has succeeded or failed."""
        return self._value is not _PENDING or self._exception is not None

    def succeeded(self) -> bool:
        """True when the future completed with a value."""
        return self._value is not _PENDING

    def failed(self) -> bool:
        """True when the future completed with an exception."""
        return self._exception is not None

    def retriable(self) -> bool:
        """True when the future failed with an error whose class says it may be retried."""
        return self._exception is not None and bool(getattr(self._exception, "retriable", False))

    @property
    def value(self) -> T:
        """The success value; raises ``RuntimeError`` when the future has not succeeded."""
        if self._value is _PENDING:
            raise RuntimeError("future has no value (pending or failed)")
        return cast(T, self._value)

    @property
    def exception(self) -> BaseException | None:
        """The failure exception, or None when pending or succeeded."""
        return self._exception

    # -- completion --------------------------------------------------------------------------
    def success(self, value: T) -> Future[T]:
        """Complete with ``value`` and run the success callbacks; raises if already done."""
        if not self.complete_if_pending(value):
            raise RuntimeError("future already completed")
        return self

    def failure(self, exc: BaseException) -> Future[T]:
        """Complete with ``exc`` and run the error callbacks; raises if already done."""
        if not isinstance(exc, BaseException):
            raise TypeError(f"failure() needs an exception, got {type(exc).__name__}")
        if not self.fail_if_pending(exc):
            raise RuntimeError("future already completed")
        return self

    def complete_if_pending(self, value: T) -> bool:
        """Succeed with ``value`` unless already done; True when this call completed it.

        For completions that may race with another thread failing the same future (the
        heartbeat thread gives up on a SyncGroup while its answer arrives): the check and the
        completion are one step under the future's lock, so the loser is a no-op.
        """
        with self._lock:
            if self.is_done:
                return False
            self._value = value
            callbacks = self._callbacks
            self._callbacks = []
            self._errbacks = []
            if self._event is not None:
                self._event.set()
        for cb in callbacks:
            self._run(cb, value)
        return True

    def fail_if_pending(self, exc: BaseException) -> bool:
        """Fail with ``exc`` unless already done; True when this call completed it."""
        if not isinstance(exc, BaseException):
            raise TypeError(f"fail_if_pending() needs an exception, got {type(exc).__name__}")
        with self._lock:
            if self.is_done:
                return False
            self._exception = exc
            errbacks = self._errbacks
            self._callbacks = []
            self._errbacks = []
            if self._event is not None:
                self._event.set()
        for eb in errbacks:
            self._run(eb, exc)
        return True

    # -- callbacks ---------------------------------------------------------------------------
    def add_callback(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[T]:
        """Call ``fn(*args, value, **kwargs)`` on success (at once when already succeeded)."""
        cb: Callable[[T], Any] = (lambda v: fn(*args, v, **kwargs)) if args or kwargs else fn
        with self._lock:
            if not self.is_done:
                self._callbacks.append(cb)
                return self
        if self.succeeded():
            self._run(cb, self._value)
        return self

    def add_errback(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[T]:
        """Call ``fn(*args, exception, **kwargs)`` on failure (at once when already failed)."""
        eb: Callable[[BaseException], Any] = (
            (lambda e: fn(*args, e, **kwargs)) if args or kwargs else fn
        )
        with self._lock:
            if not self.is_done:
                self._errbacks.append(eb)
                return self
        if self._exception is not None:
            self._run(eb, self._exception)
        return self

    def add_both(self, fn: Callable[[Any], Any]) -> Future[T]:
        """Call ``fn(value_or_exception)`` whichever way the future completes."""
        self.add_callback(fn)
        self.add_errback(fn)
        return self

    def chain(self, other: Future[T]) -> Future[T]:
        """Complete ``other`` the same way this future completes."""
        self.add_callback(other.success)
        self.add_errback(other.failure)
        return self

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until done or ``timeout_s`` passes; True when done.

        Only for threads that do not drive the network themselves (the thread that polls must
        use ``ConsumerNetworkClient.poll(future=...)`` instead, or nothing would complete it).
        """
        with self._lock:
            if self.is_done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout_s)

    @staticmethod
    def _run(fn: Callable[[Any], Any], arg: Any) -> None:
        try:
            fn(arg)
        except Exception:  # a faulty callback must not break the network loop
            logger.exception("error in future callback %r", fn)

    def __repr__(self) -> str:
        if self.succeeded():
            state = "succeeded"
        elif self._exception is not None:
            state = f"failed: {type(self._exception).__name__}"
        else:
            state = "pending"
        return f"<Future {state}>"
