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
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["AUTO_MAX_THREADS", "DecodePool", "decode_threads"]

#: ``arrow.decode.threads`` 0 means one thread per core, at most this many.
AUTO_MAX_THREADS = 4


def decode_threads(configured: int) -> int:
    """Threads decoding in all (the polling thread included) for ``arrow.decode.threads``."""
    if configured > 0:
        return configured
    return max(1, min(os.cpu_count() or 1, AUTO_MAX_THREADS))


class DecodePool:
    """A pool of ``decode_threads(configured) - 1`` worker threads (none: everything is
    decoded on the polling thread).

    Thread-safety: :meth:`submit` and :meth:`close` are called by the polling thread (close
    also from the thread that closes the consumer, after polling stopped); the executor is
    thread-safe.
    """

    __slots__ = ("workers", "_executor", "_closed")

    def __init__(self, configured: int) -> None:
        """A pool for ``arrow.decode.threads`` = ``configured``; no thread starts yet."""
        #: Worker threads beside the polling thread.
        self.workers = decode_threads(configured) - 1
        # Written by the polling thread (first submit) and by close().
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    @property
    def active(self) -> bool:
        """Whether work may be handed to the pool."""
        return self.workers > 0 and not self._closed

    def window(self) -> int:
        """Partitions to have prepared ahead of the one being assembled: two per worker, so
        that a worker always has the next one queued."""
        return 2 * self.workers if self.active else 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any] | None:
        """Run ``fn(*args)`` on a worker; None when the pool is closed or has no worker."""
        if not self.active:
            return None
        executor = self._executor
        if executor is None:
            executor = self._executor = ThreadPoolExecutor(
                self.workers, thread_name_prefix="kafkaconsumer-arrow-decode"
            )
        return executor.submit(fn, *args)

    def close(self) -> None:
        """Stop the workers: queued work is cancelled, work in progress finishes on its own
        (it touches only its partition's bytes)."""
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
