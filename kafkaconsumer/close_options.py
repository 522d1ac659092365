"""How :meth:`KafkaConsumer.close` treats the group (Java ``CloseOptions``, KIP-1092)."""

from __future__ import annotations

import datetime
import enum
from typing import ClassVar

__all__ = ["CloseOptions", "GroupMembershipOperation"]


class GroupMembershipOperation(enum.Enum):
    """What a closing consumer does about its group membership (Java
    ``CloseOptions.GroupMembershipOperation``).

    * ``DEFAULT``: a dynamic member leaves (classic: LeaveGroup; consumer protocol: heartbeat
      with epoch -1); a static member stays (classic: nothing sent; consumer protocol: epoch
      -2, which keeps its partitions for the session timeout).
    * ``LEAVE_GROUP``: leave, static members too (LeaveGroup naming the instance; epoch -1).
    * ``REMAIN_IN_GROUP``: stay until the session times out (nothing sent; a static member of
      the consumer protocol sends epoch -2).
    """

    #: Leave the group, also as a static member.
    LEAVE_GROUP = "leave_group"
    #: Stay in the group until the session times out (a restart takes the partitions back).
    REMAIN_IN_GROUP = "remain_in_group"
    #: Dynamic members leave, static members stay.
    DEFAULT = "default"


# The class body below has an attribute of the same name (Java's nested spelling).
_Op = GroupMembershipOperation


class CloseOptions:
    """Options of :meth:`KafkaConsumer.close`: the group membership operation and the timeout
    (None: the default of 30 s), as Java's ``CloseOptions``::

        consumer.close(CloseOptions(GroupMembershipOperation.REMAIN_IN_GROUP, timeout_ms=5000))
        consumer.close(CloseOptions.timeout(5000).with_group_membership_operation(
            GroupMembershipOperation.LEAVE_GROUP))
    """

    __slots__ = ("_operation", "_timeout_ms")

    #: Java's spelling ``CloseOptions.GroupMembershipOperation``.
    GroupMembershipOperation: ClassVar[type[_Op]] = _Op

    def __init__(
        self,
        group_membership_operation: _Op = _Op.DEFAULT,
        timeout_ms: int | float | datetime.timedelta | None = None,
    ) -> None:
        """Options with this operation and timeout (ms, a ``timedelta``, or None)."""
        if not isinstance(group_membership_operation, _Op):
            raise TypeError(
                "group_membership_operation must be a GroupMembershipOperation, got "
                f"{group_membership_operation!r}"
            )
        self._operation = group_membership_operation
        self._timeout_ms = timeout_ms

    @property
    def group_membership_operation(self) -> _Op:
        """What happens to the group membership."""
        return self._operation

    @property
    def timeout_ms(self) -> int | float | datetime.timedelta | None:
        """How long close() may take: ms (int or float), a ``timedelta``, or None (30 s)."""
        return self._timeout_ms

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CloseOptions):
            return NotImplemented
        return (self._operation, self._timeout_ms) == (other._operation, other._timeout_ms)

    def __hash__(self) -> int:
        return hash((self._operation, self._timeout_ms))

    def __repr__(self) -> str:
        return f"CloseOptions({self._operation}, timeout_ms={self._timeout_ms!r})"

    @classmethod
    def timeout(cls, timeout_ms: int | float | datetime.timedelta | None) -> CloseOptions:
        """Options with this timeout and the DEFAULT operation (Java ``CloseOptions.timeout``)."""
        return cls(timeout_ms=timeout_ms)

    @classmethod
    def membership(cls, operation: _Op) -> CloseOptions:
        """Options with this operation and the default timeout (Java
        ``CloseOptions.groupMembershipOperation``)."""
        return cls(group_membership_operation=operation)

    def with_timeout(self, timeout_ms: int | float | datetime.timedelta | None) -> CloseOptions:
        """A copy with this timeout."""
        return CloseOptions(self._operation, timeout_ms)

    def with_group_membership_operation(self, operation: _Op) -> CloseOptions:
        """A copy with this group membership operation."""
        return CloseOptions(operation, self._timeout_ms)

    def leave_group(self) -> bool | None:
        """The operation as ``close(leave_group=...)`` spells it: None (DEFAULT), True or False."""
        return {
            _Op.DEFAULT: None,
            _Op.LEAVE_GROUP: True,
            _Op.REMAIN_IN_GROUP: False,
        }[self.group_membership_operation]
