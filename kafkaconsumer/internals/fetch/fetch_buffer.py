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


# Entries of the log of partitions that left the buffer kept before its older half is dropped.
_LEFT_LOG_MAX = 8192


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
        # The pieces of _lagging left out of a full response: prefetched even when the
        # undecoded bytes reach the bound (see prefetch_points). Guarded by lock.
        self._left_outs: dict[CompletedFetch, None] = {}
        # The newest queued piece of each partition: only it can be a prefetch candidate (an
        # older piece of the same partition never is, see prefetch_points), so it alone stays
        # in _lagging and _left_outs, and prefetch_points does not walk, on every poll, the
        # pieces whose partition has a newer one queued (over 1,000 partitions, 425 left-out
        # pieces waiting behind the data that followed them). Guarded by lock.
        self._newest: dict[TopicPartition, CompletedFetch] = {}
        # Where a partition's records end for this consumer: prefetch stops short of it.
        self._limit_key: Literal["last_stable_offset", "high_watermark"] = (
            "last_stable_offset" if read_committed else "high_watermark"
        )
        # A failure of the response handler, raised by the next collect. Guarded by lock.
        self._error: Errors.KafkaError | None = None
        # The buffered partitions (those of _pieces and next_in_line's, see
        # buffered_partitions), kept as they change so that the fetcher can ask how many there
        # are, and which left since it last looked, without a walk over all of them on each
        # poll. next_in_line is set without the lock, so its part is brought up to date when
        # asked (_sync_buffered): _nil_tp is the partition it was last counted for, and
        # _maybe_left the partitions whose last queued piece left since. The partitions that
        # left the set are logged as noticed (_left, its first entry the _left_base-th ever);
        # _rebuilt counts wholesale changes (clear, clear_unassigned) that void that log.
        # All guarded by lock.
        self._buffered: set[TopicPartition] = set()
        # Counts every change of the queue (a piece queued or gone, a wholesale change), so
        # that the fetcher can tell that nothing was handed out since it last looked.
        # Guarded by lock.
        self.changes = 0
        self._nil_tp: TopicPartition | None = None
        self._maybe_left: set[TopicPartition] = set()
        self._left: list[TopicPartition] = []
        self._left_base = 0
        self._rebuilt = 0

    # The queue grows and shrinks through these (clear_unassigned and clear reset it as a
    # whole); the caller holds the lock.
    def append(self, cf: CompletedFetch) -> None:
        """Queue ``cf`` at the tail (caller holds the lock)."""
        self._completed.append(cf)
        self.changes += 1
        tp = cf.tp
        self._pieces[tp] += 1
        self._buffered.add(tp)
        cf.buffered_bytes = 0 if cf.initialized or cf.is_consumed else cf.size_in_bytes
        self.undecoded_bytes += cf.buffered_bytes
        older = self._newest.get(tp)
        if older is not None:
            self._lagging.pop(older, None)
            self._left_outs.pop(older, None)
        self._newest[tp] = cf
        self._track(cf)

    def _track(self, cf: CompletedFetch) -> None:
        # Enter the newest piece of its partition in _lagging (and _left_outs) when it is a
        # prefetch candidate.
        limit = cf.partition_data.get(self._limit_key)
        if limit is None:
            return
        end = cf.end_offset_hint()
        if end is not None:
            if end < limit:
                self._lagging[cf] = None
        elif cf.fetch_offset < limit and cf.carries_nothing:
            # Left out of a full response (fetch.max.bytes) although the partition has more:
            # fetched again at once instead of after the pieces queued before it are handed
            # out. Over many partitions a full response carries a part of them, and the rest
            # would otherwise wait for the application to take all of that first.
            self._lagging[cf] = None
            self._left_outs[cf] = None

    def _forget(self, cf: CompletedFetch) -> None:
        self.changes += 1
        tp = cf.tp
        left = self._pieces[tp] - 1
        if left > 0:
            self._pieces[tp] = left
        else:
            del self._pieces[tp]
            self._maybe_left.add(tp)
        self.undecoded_bytes -= cf.buffered_bytes
        cf.buffered_bytes = 0
        self._lagging.pop(cf, None)
        self._left_outs.pop(cf, None)
        if self._newest.get(tp) is cf:
            del self._newest[tp]
            if left > 0:
                # Only remove() takes a partition's newest piece before its older ones (an
                # answer without records retired where it waits): the newest one left takes
                # its place, found from the tail.
                for other in reversed(self._completed):
                    if other.tp == tp and other is not cf:
                        self._newest[tp] = other
                        self._track(other)
                        break

    def peek(self) -> CompletedFetch | None:
        """The piece at the head of the queue, or None (caller holds the lock)."""
        return self._completed[0] if self._completed else None

    def remove_head(self, cf: CompletedFetch) -> None:
        """Take ``cf`` off the queue if it is still at the head (caller holds the lock)."""
        if self._completed and self._completed[0] is cf:
            self._forget(self._completed.popleft())

    def remove(self, cf: CompletedFetch) -> None:
        """Take ``cf`` off the queue wherever it is (caller holds the lock)."""
        try:
            self._completed.remove(cf)
        except ValueError:
            return
        self._forget(cf)

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
        self._sync_buffered()
        return set(self._buffered)

    def buffered_count(self) -> int:
        """How many partitions :meth:`buffered_partitions` holds, without copying them."""
        self._sync_buffered()
        return len(self._buffered)

    def buffered_token(self) -> tuple[int, int]:
        """A point in the history of :meth:`buffered_partitions`, for :meth:`left_since`."""
        self._sync_buffered()
        return (self._rebuilt, self._left_base + len(self._left))

    def left_since(self, token: tuple[int, int]) -> list[TopicPartition] | None:
        """Every partition that left :meth:`buffered_partitions` since ``token`` was taken
        (some may be back since; none that left is missing), or None when that is no longer
        known (the buffer was cleared or rebuilt, or the log moved past ``token``)."""
        self._sync_buffered()
        rebuilt, at = token
        if rebuilt != self._rebuilt or at < self._left_base:
            return None
        return self._left[at - self._left_base :]

    def _sync_buffered(self) -> None:
        nil = self.next_in_line
        want = nil.tp if nil is not None and not nil.is_consumed else None
        old = self._nil_tp
        if want != old:
            self._nil_tp = want
            if want is not None:
                self._buffered.add(want)
            if old is not None:
                self._maybe_left.add(old)
        if self._maybe_left:
            for tp in self._maybe_left:
                if tp != want and tp not in self._pieces and tp in self._buffered:
                    self._buffered.discard(tp)
                    self._left.append(tp)
            self._maybe_left.clear()
            if len(self._left) > _LEFT_LOG_MAX:
                # Tokens older than the kept half find nothing (the fetcher then walks).
                drop = len(self._left) // 2
                del self._left[:drop]
                self._left_base += drop

    def _rebuild_buffered(self) -> None:
        # After a wholesale change of the queue or next_in_line: the set is recounted and the
        # log of leavers voided.
        self.changes += 1
        self._buffered = set(self._pieces)
        nil = self.next_in_line
        self._nil_tp = nil.tp if nil is not None and not nil.is_consumed else None
        if self._nil_tp is not None:
            self._buffered.add(self._nil_tp)
        self._maybe_left.clear()
        self._left_base += len(self._left)
        self._left.clear()
        self._rebuilt += 1

    def prefetch_points(self, max_bytes: int) -> dict[TopicPartition, tuple[int, int]]:
        """Partitions to fetch ahead of their buffered data: ``tp -> (start, end)`` where
        ``start`` is where the buffered data continues from and ``end`` where it ends
        (the offset to fetch next).

        Only where the response that brought the data said more follows (``end`` below its
        high watermark, or its last stable offset for read_committed): the broker then answers
        at once instead of holding the request, and the node, for ``fetch.max.wait.ms``.

        A piece the broker left empty because its response was full (see ``append``) is
        one too, fetched from its own offset (``start == end``).

        Only partitions with exactly one piece of buffered data, and only while the undecoded
        buffered bytes stay under ``max_bytes`` (``fetch.max.bytes``): memory stays within a
        constant number of fetch sizes (one response in flight, one buffered, one being handed
        out). Left-out pieces are the exception: they hold nothing, so their partitions are
        fetched as unbuffered ones are. Kept out of the request, they would leave the fetch
        session and be answered again, empty, as new ones (over 256 partitions of 1 KiB
        records with 8 MiB responses, 130-180 empty answers a response instead of about 8).
        """
        nil = self.next_in_line
        if nil is not None and nil.is_consumed:
            nil = None
        pieces = self._pieces
        room = self.undecoded_bytes < max_bytes
        out: dict[TopicPartition, tuple[int, int]] = {}
        for cf in self._lagging if room else self._left_outs:
            tp = cf.tp
            if pieces[tp] == 1 and (nil is None or nil.tp != tp) and not cf.is_consumed:
                end = cf.end_offset_hint()
                if end is not None:
                    out[tp] = (cf.next_fetch_offset, end)
                elif not cf.initialized:
                    # A piece left out of a full response (the only undecoded kind queued
                    # here without an end, see append): nothing to hand out, and the broker
                    # has more, so fetched again from the same offset while the empty piece
                    # waits its turn in the queue.
                    out[tp] = (cf.fetch_offset, cf.fetch_offset)
        if room and nil is not None and nil.tp not in pieces:
            end = nil.end_offset_hint()
            limit = nil.partition_data.get(self._limit_key)
            if end is not None and limit is not None and end < limit:
                out[nil.tp] = (nil.next_fetch_offset, end)
        return out

    def nodes_draining_to_prefetch(self, subs: SubscriptionState) -> set[int]:
        """The nodes that sent data of an unpaused partition which is not a prefetch point
        yet only because an older piece of it is still buffered or being handed out: it
        becomes one as the application takes those records (caller holds the lock)."""
        nodes: set[int] = set()
        pieces = self._pieces
        nil = self.next_in_line
        if nil is not None and not nil.is_consumed and nil.tp in pieces:
            if not subs.is_paused(nil.tp):
                nodes.add(nil.node)
        for cf in self._completed:
            if pieces[cf.tp] > 1 and not cf.is_consumed and not subs.is_paused(cf.tp):
                nodes.add(cf.node)
        return nodes

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
            self._rebuild_buffered()

    def clear(self) -> None:
        """Drop everything (the consumer closes; caller holds the lock)."""
        self._completed.clear()
        self._pieces.clear()
        self.undecoded_bytes = 0
        self._lagging.clear()
        self._left_outs.clear()
        self._newest.clear()
        self.next_in_line = None
        self._rebuild_buffered()
