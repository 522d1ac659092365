"""The threads that prepare fetched partitions for ``poll_arrow()`` beside the polling thread.

The Arrow decoder (``arrow_decoder``) hands the partitions a poll is about to decode to these
threads: each checks a partition's CRCs and decompresses its batches (work that runs without
the GIL: the CRC-32C in C, the codec libraries releasing it), while the polling thread
assembles the partition before it into the poll's columns, in order. Positions, ordering and
errors stay the polling thread's: a piece of work that fails is only left undone, and the
polling thread meets the failure itself when it decodes that partition.

``arrow.decode.threads`` sizes it (the polling thread counts as one; the default 1 means no
pool, see docs/spark.md for why); the threads start with
the first ``poll_arrow()`` that has several partitions to decode, so ``poll()`` alone never
starts them.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["AUTO_MAX_THREADS", "DecodePool", "PoolWork", "decode_threads"]

#: ``arrow.decode.threads`` 0 means one thread per core, at most this many.
AUTO_MAX_THREADS = 4


def decode_threads(configured: int) -> int:
    """Threads decoding in all (the polling thread included) for ``arrow.decode.threads``."""
    if configured > 0:
        return configured
    return max(1, min(os.cpu_count() or 1, AUTO_MAX_THREADS))


class PoolWork:
    """One piece of work handed to the pool: run once by a worker, or cancelled by the
    polling thread before any worker starts it.

    Every wait of the polling thread here is a C-level lock acquisition, so that Ctrl-C on
    that thread cannot leave a lock taken behind it (``concurrent.futures`` waits through a
    ``Condition``, whose ``__enter__`` is Python code an interrupt can land in once the lock
    is taken, and the worker finishing the work would then block on that lock for good).

    Thread-safety: :meth:`cancel` and :meth:`result` are for the one thread that submitted the
    work, :meth:`run` for a worker; the two one-shot locks order them.
    """

    __slots__ = ("_fn", "_args", "_claimed", "_finished", "_done", "_value", "_error")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """Work calling ``fn(*args)``."""
        self._fn = fn
        self._args = args
        # A token taken once, never given back: by the worker that runs the work, or by
        # cancel() before any worker did.
        self._claimed = threading.Lock()
        # A latch: held from here until the worker has run the work.
        self._finished = threading.Lock()
        self._finished.acquire()
        self._done = False  # written by the worker before it opens _finished
        self._value: Any = None  # written by the worker before it opens _finished
        self._error: BaseException | None = None  # written by the worker before _finished

    def cancel(self) -> bool:
        """Keep any worker from starting the work; False when one already has (it then
        finishes on its own)."""
        return self._claimed.acquire(blocking=False)

    def run(self) -> None:
        """Run the work unless it was cancelled (on a worker)."""
        if not self._claimed.acquire(blocking=False):
            return
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self._error = exc
        finally:
            self._done = True
            self._finished.release()

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the work to finish and return its value or raise its error;
        ``TimeoutError`` when ``timeout`` seconds pass first. Only for started work: cancelled
        work never finishes."""
        if not self._done:
            if timeout is None:
                with self._finished:
                    pass
            elif self._finished.acquire(timeout=timeout):
                # Given back for any later waiter. An interrupt before this line leaves the
                # latch taken, which is harmless: _done is set before the latch opens, so no
                # later call waits on it.
                self._finished.release()
            else:
                raise TimeoutError("the decode work did not finish in time")
        if self._error is not None:
            raise self._error
        return self._value


def _work_loop(work_queue: queue.SimpleQueue[PoolWork | None]) -> None:
    while True:
        work = work_queue.get()
        if work is None:
            return
        work.run()


class DecodePool:
    """A pool of ``decode_threads(configured) - 1`` worker threads (none: everything is
    decoded on the polling thread).

    Thread-safety: :meth:`submit` and :meth:`close` are called by the polling thread (close
    also from the thread that closes the consumer, after polling stopped); the work queue is a
    ``SimpleQueue``, whose operations are C-level (no Python-level lock a Ctrl-C on the
    polling thread could leave taken).
    """

    __slots__ = ("workers", "_queue", "_threads", "_closed")

    def __init__(self, configured: int) -> None:
        """A pool for ``arrow.decode.threads`` = ``configured``; no thread starts yet."""
        #: Worker threads beside the polling thread.
        self.workers = decode_threads(configured) - 1
        self._queue: queue.SimpleQueue[PoolWork | None] = queue.SimpleQueue()
        # Written by the polling thread (first submit) and by close().
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def active(self) -> bool:
        """Whether work may be handed to the pool."""
        return self.workers > 0 and not self._closed

    def window(self) -> int:
        """Partitions to have prepared ahead of the one being assembled: two per worker, so
        that a worker always has the next one queued."""
        return 2 * self.workers if self.active else 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> PoolWork | None:
        """Run ``fn(*args)`` on a worker; None when the pool is closed or has no worker."""
        if not self.active:
            return None
        if not self._threads:
            for i in range(self.workers):
                # Daemon threads: the work touches only its partition's bytes, nothing to
                # finish at exit.
                t = threading.Thread(
                    target=_work_loop,
                    args=(self._queue,),
                    name=f"kafkaconsumer-arrow-decode_{i}",
                    daemon=True,
                )
                self._threads.append(t)
                t.start()
        work = PoolWork(fn, args)
        self._queue.put(work)
        return work

    def close(self) -> None:
        """Stop the workers: queued work is cancelled, work in progress finishes on its own
        (it touches only its partition's bytes)."""
        self._closed = True
        threads, self._threads = self._threads, []
        while True:
            try:
                work = self._queue.get_nowait()
            except queue.Empty:
                break
            if work is not None:
                work.cancel()
        for _ in threads:
            self._queue.put(None)
