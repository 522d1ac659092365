"""The thread that reads responses while the user's thread is busy elsewhere (the receiving half
of Java's ``ConsumerNetworkThread``).

While a fetch is in flight, no other thread is in the network client and the client wants it
(``background_wanted()``: the consumer turns that on for ``poll_arrow()``), this thread polls it,
so that a response is read off the socket (the reads release the GIL), parsed and queued in the
fetch buffer while the user's thread decodes and handles the records of the previous one; the
broker's next answer can then start at once instead of when the user's thread comes back for
it (the fetcher's response handler queues the next fetch when it runs here; this thread
writes out whatever is queued). Positions are only moved by the user's thread, and its polls
never raise :class:`~kafkaconsumer.errors.WakeupError` nor take a fatal metadata
error meant for ``poll()``. Any other thread that needs the network client (the user's thread
waiting in ``poll()``, the heartbeat thread) comes first: it wakes this one out of its wait
and takes the lock; this one never wakes them.

With no fetch in flight it sleeps on a queue until a request is sent (no polling while idle).
It holds its client and work test weakly, so that a consumer dropped without ``close()`` does
not live on through it: the thread then ends at its next wake-up.
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Protocol

from kafkaconsumer.errors import KafkaConnectionError

logger = logging.getLogger(__name__)

__all__ = ["BackgroundPoller", "ConsumerNetworkThread"]

#: The longest sleep while idle: a kick (a request sent) ends it sooner. Bounded so that a
#: consumer dropped without close() does not keep a thread asleep for good.
_PARK_S = 5.0
#: The longest single wait of one network poll of this thread (other threads wake it sooner).
_POLL_SLICE_MS = 1000.0
#: The pause after an unexpected failure of a poll, so that one that repeats does not spin.
_FAILURE_PAUSE_S = 0.1


class BackgroundPoller(Protocol):
    """What the thread polls (a ``ConsumerNetworkClient``).

    Thread-safety: thread-safe.
    """

    def poll_background(self, timeout_ms: float) -> None:
        """One network poll of the background thread (see ``ConsumerNetworkClient``)."""
        ...

    def background_wanted(self) -> bool:
        """Whether the thread is to poll at all now (a lock-free hint)."""
        ...


class ConsumerNetworkThread(threading.Thread):
    """Polls the network client in the background while ``has_work()`` says a response is due.

    Thread-safety: :meth:`kick` and :meth:`close` may be called from any thread; everything
    else runs on this thread.
    """

    def __init__(self, client: BackgroundPoller, has_work: Callable[[], bool], name: str) -> None:
        """A daemon thread (not started) polling ``client`` while ``has_work()`` (a cheap,
        lock-free hint) is true."""
        super().__init__(name=name, daemon=True)
        # Both set once, held weakly (see the module); a plain function is held as it is.
        self._client_ref = weakref.ref(client)
        self._work_ref: Callable[[], Callable[[], bool] | None] = (
            weakref.WeakMethod(has_work) if hasattr(has_work, "__self__") else lambda: has_work
        )
        # Kicks from senders: a SimpleQueue because its put() is C code (no Python-level
        # lock the user's thread could be interrupted inside by Ctrl-C).
        self._kicks: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._parked = False  # written by this thread only
        self._stopping = False  # set once by close(), from any thread

    def kick(self) -> None:
        """A request was queued: wake the thread if it sleeps."""
        if self._parked:
            self._kicks.put(None)

    def close(self, timeout_s: float = 0.0) -> None:
        """Ask the thread to stop, and wait up to ``timeout_s`` for it to end."""
        self._stopping = True
        self._kicks.put(None)
        if timeout_s > 0 and self.is_alive() and threading.current_thread() is not self:
            self.join(timeout_s)

    def run(self) -> None:
        """Poll while there is work; sleep on the kick queue while there is none."""
        logger.debug("%s started", self.name)
        try:
            while not self._stopping:
                step = self._step()
                if step is None:
                    return
                if not step:
                    self._park()
        finally:
            logger.debug("%s stopped", self.name)

    def _step(self) -> bool | None:
        """One poll when there is work: True after one, False when idle, None when the thread
        is to end (the client closed, or dropped)."""
        client = self._client_ref()
        has_work = self._work_ref()
        if client is None or has_work is None:
            return None
        if not client.background_wanted() or not has_work():
            return False
        try:
            client.poll_background(_POLL_SLICE_MS)
        except KafkaConnectionError:
            # The network client was closed under us: the consumer is closing.
            return None
        except Exception:  # noqa: BLE001 - this thread must not die of a bad response
            # Failures of requests reach their futures (and so poll()); what is left is a bug
            # in a handler: logged, then a pause.
            logger.exception("%s: the network poll failed", self.name)
            try:
                self._kicks.get(timeout=_FAILURE_PAUSE_S)
            except queue.Empty:
                pass
        return True

    def _has_work(self) -> bool:
        client = self._client_ref()
        has_work = self._work_ref()
        return (
            client is not None
            and has_work is not None
            and client.background_wanted()
            and has_work()
        )

    def _park(self) -> None:
        # Announce first, then look again: a sender that saw _parked False made has_work()
        # true before kicking, so it is seen here; one that saw it True puts a kick. No strong
        # reference to the client is held while asleep.
        self._parked = True
        try:
            if not self._stopping and not self._has_work() and self._client_ref() is not None:
                try:
                    self._kicks.get(timeout=_PARK_S)
                except queue.Empty:
                    pass
        finally:
            self._parked = False
        while True:
            try:
                self._kicks.get_nowait()
            except queue.Empty:
                return
