"""When the acquisition locks of a share consumer's records run out, as the client sees them.

The broker holds each record it delivered to a member for the acquisition lock duration
(``acquisition_lock_timeout_ms`` of the ShareFetch response; the group's
``share.record.lock.duration.ms``), then gives it to another member. A late acknowledgement is
not merely refused: the broker answers INVALID_RECORD_STATE for the whole partition and applies
none of that partition's acknowledgements in the request, so one expired record would undo the
acknowledgements of records still held beside it, which the broker then delivers again (seen on
Apache Kafka 4.4). Java's client (4.4) sends such acknowledgements anyway.

This client counts each lock from when the response that acquired the record arrived (a little
after the broker started it, so a deadline here is never earlier than the broker's by more than
the response's travel time) and, before acknowledgements leave, takes out those of records whose
lock ran out: they complete at once with INVALID_RECORD_STATE (the commit callback and
``commit_sync()`` report them), and the rest of the partition is sent and applied. A RENEW that
leaves restarts the record's deadline from that moment (the broker restarts the lock later, when
it applies the RENEW). Records whose lock ran out while they waited, fetched but not yet
returned by ``poll()``, are not handed out at all.
"""

from __future__ import annotations

from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.structs import TopicPartition

__all__ = ["AcquisitionLocks", "LOCK_EXPIRED_MESSAGE"]

_INVALID_RECORD_STATE = 121

#: The message of the acknowledgements this client completes because their lock ran out.
LOCK_EXPIRED_MESSAGE = (
    "The acquisition lock of the record ran out before it was acknowledged; the broker "
    "delivers it again, so the acknowledgement was not sent."
)


class AcquisitionLocks:
    """The lock deadline of every record handed out and not yet acknowledged.

    Thread-safety: not thread-safe; used only on the thread that calls the share consumer (the
    consumer's thread guard serialises it).
    """

    __slots__ = ("_deadlines", "_earliest")

    def __init__(self) -> None:
        """Nothing tracked yet."""
        # tp -> offset -> monotonic ms at which the lock runs out.
        self._deadlines: dict[TopicPartition, dict[int, int]] = {}
        # tp -> no deadline of the partition is earlier (a lower bound, exact after a sweep).
        self._earliest: dict[TopicPartition, int] = {}

    def __len__(self) -> int:
        return sum(len(d) for d in self._deadlines.values())

    def track(self, tp: TopicPartition, offsets: list[int], deadline_ms: int) -> None:
        """Records ``offsets`` of ``tp`` were handed out; their locks run out at
        ``deadline_ms``."""
        if not offsets:
            return
        self._deadlines.setdefault(tp, {}).update(dict.fromkeys(offsets, deadline_ms))
        earliest = self._earliest.get(tp)
        if earliest is None or deadline_ms < earliest:
            self._earliest[tp] = deadline_ms

    def deadline(self, tp: TopicPartition, offset: int) -> int | None:
        """When the lock of ``offset`` runs out (None when not tracked)."""
        return self._deadlines.get(tp, {}).get(offset)

    def forget(self, tp: TopicPartition) -> None:
        """Stop tracking ``tp`` (the member's share sessions ended: the records went back)."""
        self._deadlines.pop(tp, None)
        self._earliest.pop(tp, None)

    def clear(self) -> None:
        """Stop tracking everything."""
        self._deadlines.clear()
        self._earliest.clear()

    def take_expired(
        self,
        tp: TopicPartition,
        acks: Acknowledgements,
        now_ms: int,
        lock_ms: int | None,
    ) -> Acknowledgements | None:
        """Before ``acks`` of ``tp`` are sent at ``now_ms``: remove from them the offsets whose
        lock ran out and return those, completed with INVALID_RECORD_STATE (None when none
        did). Offsets acknowledged for good stop being tracked; a RENEW keeps its offset
        tracked with a new deadline ``now_ms + lock_ms``."""
        deadlines = self._deadlines.get(tp)
        if not deadlines:
            return None
        if self._earliest.get(tp, 0) > now_ms and not acks.has_renew():
            # The common case (no lock can have run out, nothing renewed): the acknowledged
            # offsets only stop being tracked, with set operations in C instead of a walk.
            left = deadlines.keys() - acks.acknowledged()
            if not left:
                self.forget(tp)
            elif len(left) != len(deadlines):
                self._deadlines[tp] = {offset: deadlines[offset] for offset in left}
            return None
        expired: Acknowledgements | None = None
        fresh = self._earliest.get(tp, 0) > now_ms
        renew = int(AcknowledgeType.RENEW)
        for offset, kind in list(acks.items()):
            if kind == renew:
                due = deadlines.get(offset)
                if due is not None and due <= now_ms:
                    del deadlines[offset]
                elif lock_ms:
                    deadlines[offset] = now_ms + lock_ms
                    continue
                else:
                    continue
            else:
                due = deadlines.pop(offset, None)
            if fresh or due is None or due > now_ms:
                continue
            if expired is None:
                expired = Acknowledgements()
            expired.add(offset, kind)
            acks.remove(offset)
        if not deadlines:
            self.forget(tp)
        elif not fresh:
            self._earliest[tp] = min(deadlines.values())
        if expired is not None:
            expired.complete(_INVALID_RECORD_STATE, LOCK_EXPIRED_MESSAGE)
        return expired
