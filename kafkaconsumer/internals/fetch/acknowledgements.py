"""Acknowledgements of share-group records (Java ``AcknowledgeType`` and ``Acknowledgements``).

A share consumer acknowledges each delivered record ACCEPT (processed), RELEASE (give it back
for another delivery), REJECT (never deliver it again) or RENEW (keep holding it: the broker
restarts the acquisition lock, KIP-1222). Offsets that were acquired but carried no record a
user could see (control records, compacted-away offsets) are acknowledged as gaps.

:class:`Acknowledgements` holds one partition's acknowledgements until they are sent, turns them
into the protocol's acknowledgement batches and, once the broker answered, carries the outcome
(an error code, or none) to the commit callback and to ``commit_sync()``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, KeysView, Mapping

from kafkaconsumer import errors as Errors

__all__ = ["AcknowledgeType", "Acknowledgements", "GAP"]

#: The wire value of an acquired offset without a deliverable record.
GAP = 0


class AcknowledgeType(enum.IntEnum):
    """How a share consumer settles one delivered record (Java ``AcknowledgeType``).

    Thread-safety: immutable enum members; safe to share.
    """

    #: The record was processed; it is never delivered again.
    ACCEPT = 1
    #: The record goes back for another delivery (its delivery count grows).
    RELEASE = 2
    #: The record could not be processed; it is archived and never delivered again.
    REJECT = 3
    #: Keep holding the record: the broker restarts its acquisition lock (KIP-1222).
    RENEW = 4

    @classmethod
    def for_id(cls, value: int) -> AcknowledgeType:
        """The type with wire value ``value``; ``ValueError`` naming it otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"unknown acknowledge type {value!r}") from None


class Acknowledgements:
    """One partition's acknowledgements: offset -> type (``GAP`` for a gap), then the outcome.

    Thread-safety: not thread-safe; filled on the user's thread, then handed whole to the thread
    that sends it and back, never shared while in use.
    """

    __slots__ = (
        "_types",
        "error_code",
        "error_message",
        "completed",
        "_followers",
        "retry_deadline_ms",
        "attempts",
    )

    def __init__(self) -> None:
        """An empty set of acknowledgements."""
        self._types: dict[int, int] = {}
        #: The broker's answer for this partition (0: accepted); set once completed.
        self.error_code = 0
        #: The error text that came with a non-zero code, or why the request failed.
        self.error_message: str | None = None
        #: Whether the broker answered (or the request failed for good).
        self.completed = False
        # Acknowledgements folded into these ones; they complete with them.
        self._followers: list[Acknowledgements] = []
        #: Until when (monotonic ms) a retriable answer sends them again (None: never), as
        #: ``commit_sync``/``commit_async`` ask; set before they are queued.
        self.retry_deadline_ms: int | None = None
        #: How many times they were sent and got a retriable answer.
        self.attempts = 0

    def add(self, offset: int, ack_type: int) -> None:
        """Record ``ack_type`` (an :class:`AcknowledgeType` or ``GAP``) for ``offset``; a later
        call for the same offset replaces the earlier one."""
        self._types[offset] = int(ack_type)

    def add_range(self, first: int, last: int, ack_type: int) -> None:
        """Record ``ack_type`` for every offset from ``first`` to ``last`` inclusive (later
        calls win, as with :meth:`add`)."""
        self._types.update(dict.fromkeys(range(first, last + 1), int(ack_type)))

    def remove(self, offset: int) -> None:
        """Drop the acknowledgement of ``offset`` (none is fine)."""
        self._types.pop(offset, None)

    def add_gap(self, offset: int) -> None:
        """Record ``offset`` as a gap (acquired, nothing to deliver)."""
        self._types[offset] = GAP

    def merge(self, other: Acknowledgements) -> Acknowledgements:
        """Add ``other``'s acknowledgements to these (``other``'s win for the same offset)."""
        self._types.update(other._types)
        return self

    def take_in(self, earlier: Acknowledgements) -> None:
        """Carry ``earlier``'s acknowledgements too (these ones' type wins for the same
        offset); ``earlier`` completes when these do, with the same outcome. Costs the size
        of these ones, however many ``earlier`` holds: ``earlier``'s table becomes the shared
        one, so ``earlier`` must not change afterwards."""
        merged = earlier._types
        merged.update(self._types)
        self._types = merged
        self._followers.append(earlier)
        # Folded together they are retried as long as either one asked for.
        if earlier.retry_deadline_ms is not None:
            mine = self.retry_deadline_ms
            self.retry_deadline_ms = max(mine if mine is not None else 0, earlier.retry_deadline_ms)

    def get(self, offset: int) -> int | None:
        """The type recorded for ``offset``, or None."""
        return self._types.get(offset)

    def offsets(self) -> list[int]:
        """The acknowledged offsets, ascending."""
        return sorted(self._types)

    def items(self) -> Iterator[tuple[int, int]]:
        """``(offset, type)`` pairs, ascending by offset."""
        types = self._types
        for offset in sorted(types):
            yield offset, types[offset]

    def acknowledged(self) -> KeysView[int]:
        """The acknowledged offsets, unordered (a live view, for set operations in C)."""
        return self._types.keys()

    def __len__(self) -> int:
        return len(self._types)

    def __bool__(self) -> bool:
        return bool(self._types)

    def has_renew(self) -> bool:
        """Whether any acknowledgement is a RENEW (the request must say so, v2+)."""
        # A scan in C: this runs for every request, over every acknowledged offset.
        return int(AcknowledgeType.RENEW) in self._types.values()

    def complete(self, error_code: int, error_message: str | None = None) -> None:
        """The broker answered ``error_code`` for this partition (0: all applied)."""
        self.error_code = error_code
        self.error_message = error_message
        self.completed = True
        for follower in self._followers:
            follower.complete(error_code, error_message)

    def exception(self) -> Errors.KafkaError | None:
        """The error the broker's answer stands for, or None when it was applied."""
        if not self.completed or self.error_code == 0:
            return None
        return Errors.for_code(self.error_code)(self.error_message or "")

    def batches(self) -> list[dict[str, object]]:
        """The protocol's acknowledgement batches: each run of consecutive offsets becomes one
        batch, with a single type when every offset of the run has the same one, else one type
        per offset."""
        types_by_offset = self._types
        if not types_by_offset:
            return []
        low, high = min(types_by_offset), max(types_by_offset)
        kinds = set(types_by_offset.values())
        if high - low + 1 == len(types_by_offset) and len(kinds) == 1:
            # One run of one type (what implicit acknowledgement produces), without a walk.
            return [{"first_offset": low, "last_offset": high, "acknowledge_types": [*kinds]}]
        out: list[dict[str, object]] = []
        first = last = -2
        types: list[int] = []
        for offset, ack_type in self.items():
            if offset != last + 1 and types:
                out.append(_batch(first, last, types))
                types = []
            if not types:
                first = offset
            types.append(ack_type)
            last = offset
        if types:
            out.append(_batch(first, last, types))
        return out

    def as_dict(self) -> Mapping[int, int]:
        """A read-only view: offset -> type."""
        return dict(self._types)

    def __repr__(self) -> str:
        return f"Acknowledgements({self._types!r}, error_code={self.error_code})"


def _batch(first: int, last: int, types: list[int]) -> dict[str, object]:
    same = all(t == types[0] for t in types)
    return {
        "first_offset": first,
        "last_offset": last,
        "acknowledge_types": [types[0]] if same else list(types),
    }
