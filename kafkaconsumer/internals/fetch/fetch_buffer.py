"""The queue of fetched partition data between the network and the user (Java ``FetchBuffer``).

Producer: the fetcher's response handler (:meth:`Fetcher._handle_fetch_response`), which runs on
whichever thread polls the network client (the user's thread inside ``poll()``, or the
heartbeat thread), appends one :class:`CompletedFetch` per partition of a response, and records
a failure of its own for the next ``poll()``.
Consumer: the fetch collector on the user's thread takes pieces from the head, decodes them and
hands their records out; what it is handing out is the ``next_in_line`` piece.
Both sides hold :attr:`FetchBuffer.lock` while they touch the queue. The fetcher holds the same
lock while it builds requests, so that a request is planned from one consistent view of what is
buffered (and prefetches what follows it).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from typing import Literal

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.structs import TopicPartition

__all__ = ["FetchBuffer"]


class FetchBuffer:
    """Completed fetches waiting to be handed out, with the counts the fetcher plans by.

    Thread-safety: every field is guarded by :attr:`lock` (an ``RLock``), except
    ``next_in_line``, which only the user's thread writes (the collector) and the fetcher reads
    under the lock, on that thread or on the consumer's network thread (a read racing the
    collector plans from a moment-old view: at worst a fetch whose data turns out stale).
    """

    def __init__(self, read_committed: bool) -> None:
        """An empty buffer; ``read_committed`` picks where a partition's records end for this
        consumer (its last stable offset instead of its high watermark)."""
        #: Guards the queue and the counts below; the fetcher's lock too (see the module).
        self.lock = threading.RLock()
        self._completed: deque[CompletedFetch] = deque()  # guarded by lock
        #: The piece being handed out (taken off the queue). Written by the user's thread only.
        self.next_in_line: CompletedFetch | None = None
        # Kept with _completed (see append), so that prefetching needs no walk over every
        # buffered partition on each poll (O(partitions^2) per pass over the buffer): pieces of
        # data per partition, the bytes not decoded yet, and the pieces whose data ends below
        # the partition's high watermark (the prefetch candidates). All guarded by lock.
        self._pieces: Counter[TopicPartition] = Counter()
        self.undecoded_bytes = 0  # guarded by lock
        self._lagging: dict[CompletedFetch, None] = {}  # guarded by lock
        # Where a partition's records end for this consumer: prefetch stops short of it.
        self._limit_key: Literal["last_stable_offset", "high_watermark"] = (
            "last_stable_offset" if read_committed else "high_watermark"
        )
        # A failure of the response handler, raised by the next collect. Guarded by lock.
        self._error: Errors.KafkaError | None = None

    # The queue grows and shrinks through these (clear_unassigned and clear reset it as a
    # whole); the caller holds the lock.
    def append(self, cf: CompletedFetch) -> None:
        """Queue ``cf`` at the tail (caller holds the lock)."""
        self._completed.append(cf)
        self._pieces[cf.tp] += 1
        cf.buffered_bytes = 0 if cf.initialized or cf.is_consumed else cf.size_in_bytes
        self.undecoded_bytes += cf.buffered_bytes
        end = cf.end_offset_hint()
        limit = cf.partition_data.get(self._limit_key)
        if end is not None and limit is not None and end < limit:
            self._lagging[cf] = None

    def _forget(self, cf: CompletedFetch) -> None:
        left = self._pieces[cf.tp] - 1
        if left > 0:
            self._pieces[cf.tp] = left
        else:
            del self._pieces[cf.tp]
        self.undecoded_bytes -= cf.buffered_bytes
        cf.buffered_bytes = 0
        self._lagging.pop(cf, None)

    def peek(self) -> CompletedFetch | None:
        """The piece at the head of the queue, or None (caller holds the lock)."""
        return self._completed[0] if self._completed else None

    def remove_head(self, cf: CompletedFetch) -> None:
        """Take ``cf`` off the queue if it is still at the head (caller holds the lock)."""
        if self._completed and self._completed[0] is cf:
            self._forget(self._completed.popleft())

    def queued(self) -> list[CompletedFetch]:
        """A copy of the queue, head first (caller holds the lock)."""
        return list(self._completed)

    def __len__(self) -> int:
        """How many pieces are queued (not counting ``next_in_line``)."""
        return len(self._completed)

    def __iter__(self) -> Iterator[CompletedFetch]:
        """The queued pieces, head first (caller holds the lock)."""
        return iter(self._completed)

    def set_error(self, error: Errors.KafkaError) -> None:
        """Keep ``error`` for the next collect, unless one is kept already (caller holds the
        lock)."""
        if self._error is None:
            self._error = error

    def take_error(self) -> Errors.KafkaError | None:
        """The kept failure, cleared."""
        with self.lock:
            error, self._error = self._error, None
        return error

    # -- what the fetcher plans by (caller holds the lock) ------------------------------
    def buffered_partitions(self) -> set[TopicPartition]:
        """The partitions with data queued or being handed out."""
        out = set(self._pieces)
        nil = self.next_in_line
        if nil is not None and not nil.is_consumed:
            out.add(nil.tp)
        return out

    def prefetch_points(self, max_bytes: int) -> dict[TopicPartition, tuple[int, int]]:
        """Partitions to fetch ahead of their buffered data: ``tp -> (start, end)`` where
        ``start`` is where the buffered data continues from and ``end`` where it ends
        (the offset to fetch next).

        Only where the response that brought the data said more follows (``end`` below its
        high watermark, or its last stable offset for read_committed): the broker then answers
        at once instead of holding the request, and the node, for ``fetch.max.wait.ms``.

        Only partitions with exactly one piece of buffered data, and only while the undecoded
        buffered bytes stay under ``max_bytes`` (``fetch.max.bytes``): memory stays within a
        constant number of fetch sizes (one response in flight, one buffered, one being handed
        out).
        """
        if self.undecoded_bytes >= max_bytes:
            return {}
        nil = self.next_in_line
        if nil is not None and nil.is_consumed:
            nil = None
        pieces = self._pieces
        out: dict[TopicPartition, tuple[int, int]] = {}
        for cf in self._lagging:
            tp = cf.tp
            if pieces[tp] == 1 and (nil is None or nil.tp != tp) and not cf.is_consumed:
                end = cf.end_offset_hint()
                if end is not None:
                    out[tp] = (cf.next_fetch_offset, end)
        if nil is not None and nil.tp not in pieces:
            end = nil.end_offset_hint()
            limit = nil.partition_data.get(self._limit_key)
            if end is not None and limit is not None and end < limit:
                out[nil.tp] = (nil.next_fetch_offset, end)
        return out

    def node_has_data(self, node: int, subs: SubscriptionState) -> bool:
        """Whether ``node`` sent buffered data of an unpaused partition."""
        nil = self.next_in_line
        if nil is not None and not nil.is_consumed and nil.node == node:
            if not subs.is_paused(nil.tp):
                return True
        return any(
            cf.node == node and not cf.is_consumed and not subs.is_paused(cf.tp)
            for cf in self._completed
        )

    def nodes_with_data(self, subs: SubscriptionState) -> set[int]:
        """The nodes that sent the buffered data of unpaused partitions."""
        nodes = {
            cf.node for cf in self._completed if not cf.is_consumed and not subs.is_paused(cf.tp)
        }
        nil = self.next_in_line
        if nil is not None and not nil.is_consumed and not subs.is_paused(nil.tp):
            nodes.add(nil.node)
        return nodes

    # -- state queries and housekeeping ---------------------------------------------------
    def has_fetchable(self, subs: SubscriptionState) -> bool:
        """True when data is buffered for a partition that can hand it out now."""
        with self.lock:
            nil = self.next_in_line
            if nil is not None and not nil.is_consumed and subs.is_fetchable(nil.tp):
                return True
            return any(subs.is_fetchable(cf.tp) for cf in self._completed)

    def clear_unassigned(self, assigned: Iterable[TopicPartition]) -> None:
        """Drop buffered data of partitions no longer in ``assigned``."""
        keep = set(assigned)
        with self.lock:
            for cf in [cf for cf in self._completed if cf.tp not in keep]:
                self._forget(cf)
                cf.drain()
            self._completed = deque(cf for cf in self._completed if cf.tp in keep)
            nil = self.next_in_line
            if nil is not None and nil.tp not in keep:
                nil.drain()
                self.next_in_line = None

    def clear(self) -> None:
        """Drop everything (the consumer closes; caller holds the lock)."""
        self._completed.clear()
        self._pieces.clear()
        self.undecoded_bytes = 0
        self._lagging.clear()
        self.next_in_line = None
