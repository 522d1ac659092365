"""Rebalance callbacks (Java ``ConsumerRebalanceListener``) and the KIP-983 revocation types.

Two ways for an application to take part in a rebalance:

1. :class:`ConsumerRebalanceListener`: the consumer calls ``on_partitions_revoked``,
   ``on_partitions_assigned`` and ``on_partitions_lost`` from inside ``poll()`` (on the user's
   thread, never under an internal lock), as the Java consumer does.
2. KIP-983 (full-speed processing during a cooperative rebalance): instead of blocking in a
   callback, the application asks the consumer after each ``poll()`` which partitions
   :meth:`~RevocationControl.to_be_revoked` in the next poll, may
   :meth:`~RevocationControl.delay_revoke` them by one more poll while it finishes their records,
   and learns which partitions were :meth:`~RevocationControl.lost_partitions` (it must stop
   committing for those). :class:`RevocationControl` is that contract (``KafkaConsumer``
   implements it); :class:`RevocationTracker` is the bookkeeping behind it, usable by the
   coordinator as is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import Protocol, runtime_checkable

from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "ConsumerRebalanceListener",
    "NoOpConsumerRebalanceListener",
    "RevocationControl",
    "RevocationTracker",
]


class ConsumerRebalanceListener:
    """Callbacks run by the consumer when its partition assignment changes.

    Subclass and override what you need; the defaults do nothing, except
    :meth:`on_partitions_lost`, which calls :meth:`on_partitions_revoked` (Java's default).

    All callbacks run on the thread that called ``poll()`` (or ``close()``/``unsubscribe()``),
    so they may call the consumer (``commit_sync``, ``seek``, ``position``...). Exceptions they
    raise are re-raised from ``poll()`` after the rebalance step finished.

    Eager protocols (range, roundrobin, sticky) revoke everything before each rebalance and
    assign the full new set after it. The cooperative protocol (cooperative-sticky) calls
    ``on_partitions_revoked`` only with partitions that actually move away, and
    ``on_partitions_assigned`` only with partitions that are new (possibly empty: it is called
    after every rebalance, as in Java).

    Thread-safety: the consumer calls it from one thread at a time (the user's thread).
    """

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        """Partitions this consumer gives up; commit their offsets here if you commit manually.

        Called before a rebalance (eager) or after one that moved partitions away (cooperative),
        and on ``close()``/``unsubscribe()``. Another member gets these partitions only after this
        returns.
        """

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        """Partitions newly given to this consumer, called before any of their records is
        returned; ``seek`` here to choose where to start."""

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        """Partitions this consumer lost without a clean revocation (session expired, fenced,
        generation reset): other members may already own them, so do not commit their offsets.

        The default calls :meth:`on_partitions_revoked`, as the Java client does.
        """
        self.on_partitions_revoked(lost)


class NoOpConsumerRebalanceListener(ConsumerRebalanceListener):
    """A listener that does nothing (the default when ``subscribe`` gets none)."""


@runtime_checkable
class RevocationControl(Protocol):
    """KIP-983: what the consumer offers for handling revocations without a blocking callback.

    Semantics (seed 004): a revoke is *requested* in one ``poll()`` and *completed* at the start
    of the next one. Between the two, the application sees the partitions in
    :meth:`to_be_revoked`, may finish their in-flight records and commit, or call
    :meth:`delay_revoke` to push the completion one more poll out. Partitions whose ownership
    ran out before the revoke completed (the member's session or rebalance deadline passed)
    become *lost*: they are reported by :meth:`lost_partitions` for one poll, and the
    application must stop processing and committing them. ``poll()`` never returns records of a
    partition after it was revoked or lost.
    """

    def to_be_revoked(self) -> set[TopicPartition]:
        """Partitions whose revocation completes at the start of the next ``poll()``."""
        ...

    def lost_partitions(self) -> set[TopicPartition]:
        """Partitions lost during the last ``poll()`` (empty once the next poll starts)."""
        ...

    def delay_revoke(self, partitions: Iterable[TopicPartition]) -> bool:
        """Complete these revocations one poll later than planned.

        True on success; False when any of them was already lost or was refused because its
        revocation has been pending for the bound on delays (the others are delayed all the
        same). A revocation delayed with True is never completed at the next poll.
        """
        ...


class RevocationTracker:
    """Bookkeeping for KIP-983 revocations (the three lists of the KIP's proposed design).

    The coordinator calls :meth:`start_poll` at the beginning of each ``poll()`` (it returns the
    partitions whose revocation must be completed now), :meth:`request_revoke` when a rebalance
    asks this member to give partitions up, :meth:`forget` when a pending revocation ended
    another way (the partition was assigned again, or revoked at once), and :meth:`mark_lost`
    when partitions were lost. The application-facing methods implement
    :class:`RevocationControl`.

    Every partition is tracked on its own: completing, delaying or losing some partitions of a
    pending revocation never changes the others. A revocation requested with a bound can be
    delayed until that many milliseconds (of ``clock``) passed since it was first requested;
    after that :meth:`delay_revoke` refuses it (returns False) and it completes at the next
    poll.

    Thread-safety: safe. Every caller runs on the user's thread: the heartbeat thread never
    touches it, and :meth:`mark_lost` is called only where the coordinator calls
    ``on_partitions_lost`` (from ``poll()``, ``unsubscribe()`` and ``close()``). The one internal
    lock is defensive, keeping each call atomic; it is never held while calling out.
    """

    def __init__(self, clock: Callable[[], int] | None = None) -> None:
        """Start with nothing pending or lost; ``clock`` gives monotonic milliseconds."""
        self._lock = threading.Lock()
        self._clock = clock or (lambda: int(time.monotonic() * 1000))
        self._revoke_next: set[TopicPartition] = set()  # guarded by _lock
        self._revoke_later: set[TopicPartition] = set()  # guarded by _lock
        self._lost: set[TopicPartition] = set()  # guarded by _lock
        # When a delay stops being granted, per pending partition (requested with a bound).
        self._deadline: dict[TopicPartition, int] = {}  # guarded by _lock

    def start_poll(self) -> set[TopicPartition]:
        """Begin a poll: return the revocations to complete now, forget last poll's losses and
        move delayed revocations up to "next"."""
        with self._lock:
            due = self._revoke_next
            self._revoke_next = self._revoke_later
            self._revoke_later = set()
            self._lost = set()
            for tp in due:
                self._deadline.pop(tp, None)
            return due

    def request_revoke(
        self, partitions: Iterable[TopicPartition], bound_ms: int | None = None
    ) -> None:
        """A rebalance asked for these partitions: they are revoked at the start of next poll.

        A partition already pending keeps its place (a delay granted stays granted) and its
        first deadline. ``bound_ms``: how long its revocation may be delayed (None: no bound).
        """
        with self._lock:
            now = self._clock()
            for tp in partitions:
                if tp in self._revoke_next or tp in self._revoke_later:
                    continue
                self._revoke_next.add(tp)
                if bound_ms is not None:
                    self._deadline[tp] = now + bound_ms

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Drop these partitions' pending revocations (assigned again, or revoked already)."""
        with self._lock:
            for tp in partitions:
                self._revoke_next.discard(tp)
                self._revoke_later.discard(tp)
                self._deadline.pop(tp, None)

    def mark_lost(self, partitions: Iterable[TopicPartition]) -> None:
        """These partitions were lost: drop any pending revoke and report them as lost."""
        with self._lock:
            for tp in partitions:
                self._revoke_next.discard(tp)
                self._revoke_later.discard(tp)
                self._deadline.pop(tp, None)
                self._lost.add(tp)

    def pending(self) -> set[TopicPartition]:
        """Every partition with a revoke requested and not yet completed (next or later)."""
        with self._lock:
            return self._revoke_next | self._revoke_later

    def clear(self) -> set[TopicPartition]:
        """Forget everything (unsubscribe/close); returns the partitions that were pending."""
        with self._lock:
            pending = self._revoke_next | self._revoke_later
            self._revoke_next = set()
            self._revoke_later = set()
            self._lost = set()
            self._deadline.clear()
            return pending

    def to_be_revoked(self) -> set[TopicPartition]:
        """Partitions whose revocation completes at the start of the next ``poll()``."""
        with self._lock:
            return set(self._revoke_next)

    def lost_partitions(self) -> set[TopicPartition]:
        """Partitions lost during the last ``poll()``."""
        with self._lock:
            return set(self._lost)

    def delay_revoke(self, partitions: Iterable[TopicPartition]) -> bool:
        """Move these partitions from "revoke next poll" to "revoke the poll after".

        Partitions not pending revocation are ignored. Returns False when any of them is among
        the lost partitions (a lost partition cannot be delayed) or has reached its deadline
        (it stays due at the next poll), True otherwise.
        """
        ok = True
        with self._lock:
            now = self._clock()
            for tp in partitions:
                if tp in self._lost:
                    ok = False
                elif tp in self._revoke_next:
                    deadline = self._deadline.get(tp)
                    if deadline is not None and now >= deadline:
                        ok = False
                        continue
                    self._revoke_next.discard(tp)
                    self._revoke_later.add(tp)
        return ok
