"""Calls to the user's rebalance listener, and KIP-983's revocation bookkeeping.

Mirrors Java's ``ConsumerRebalanceListenerInvoker``: a member asks it to call
``on_partitions_assigned``, ``on_partitions_revoked`` or ``on_partitions_lost`` and gets back
(not raised) what the listener raised, so that the member finishes changing its assignment
before the error reaches the application. It also owns the member's
:class:`~kafkaconsumer.listener.RevocationTracker` and the switch into KIP-983's two-step
revocation (:meth:`ConsumerRebalanceListenerInvoker.to_be_revoked`,
:meth:`~ConsumerRebalanceListenerInvoker.lost_partitions`,
:meth:`~ConsumerRebalanceListenerInvoker.delay_revoke`): by default a cooperative revocation
completes inside the ``poll()`` that learns of it, as in Java; once the application called one
of the three, a revocation requested during one poll completes at the start of the next one,
unless delayed again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.listener import RevocationTracker
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["ConsumerRebalanceListenerInvoker"]


class ConsumerRebalanceListenerInvoker:
    """The listener calls and the KIP-983 state of one consumer group member.

    Construct with the consumer's subscriptions (which hold the listener), the group id (for
    the log) and the member's clock (monotonic milliseconds, which bounds KIP-983 delays).

    Thread-safety: the user's thread only; listeners run there with no lock held. The tracker
    is thread-safe by itself.
    """

    def __init__(
        self, subscriptions: SubscriptionState, group_id: str, clock: Callable[[], int]
    ) -> None:
        """Start outside KIP-983 mode with nothing pending."""
        self._subscriptions = subscriptions
        self._group_id = group_id
        #: Partitions awaiting revocation, delayed or lost (KIP-983).
        self.revocations = RevocationTracker(clock)  # its own lock
        #: Whether the application switched to KIP-983's two-step revocation.
        self.kip983_enabled = False  # user's thread

    def _invoke(self, method: str, partitions: Iterable[TopicPartition]) -> BaseException | None:
        listener = self._subscriptions.rebalance_listener
        tps = sorted(partitions)
        if method == "on_partitions_lost" and tps:
            self.revocations.mark_lost(tps)
        if listener is None:
            return None
        if method != "on_partitions_assigned" and not tps:
            return None
        logger.info("group %s: calling %s with %s", self._group_id, method, [str(tp) for tp in tps])
        try:
            getattr(listener, method)(tps)
        except (Errors.WakeupError, Errors.InterruptError) as exc:
            return exc
        except Exception as exc:
            logger.error("user rebalance callback %s failed for %s", method, tps, exc_info=True)
            return exc
        return None

    def invoke_partitions_assigned(
        self, partitions: Iterable[TopicPartition]
    ) -> BaseException | None:
        """Run ``on_partitions_assigned``; its exception is returned, not raised."""
        return self._invoke("on_partitions_assigned", partitions)

    def invoke_partitions_revoked(
        self, partitions: Iterable[TopicPartition]
    ) -> BaseException | None:
        """Run ``on_partitions_revoked``; its exception is returned, not raised."""
        return self._invoke("on_partitions_revoked", partitions)

    def invoke_partitions_lost(self, partitions: Iterable[TopicPartition]) -> BaseException | None:
        """Run ``on_partitions_lost`` (noting them as lost); its exception is returned."""
        return self._invoke("on_partitions_lost", partitions)

    def start_poll(self) -> set[TopicPartition]:
        """A ``poll()`` begins: the partitions whose revocation completes now."""
        return self.revocations.start_poll()

    def to_be_revoked(self) -> set[TopicPartition]:
        """KIP-983: partitions whose revocation completes at the start of the next poll."""
        self.kip983_enabled = True
        return self.revocations.to_be_revoked()

    def lost_partitions(self) -> set[TopicPartition]:
        """KIP-983: partitions lost during the last poll (stop committing them)."""
        self.kip983_enabled = True
        return self.revocations.lost_partitions()

    def delay_revoke(self, partitions: Iterable[TopicPartition]) -> bool:
        """KIP-983: complete these revocations one poll later; False if some were lost."""
        self.kip983_enabled = True
        return self.revocations.delay_revoke(list(partitions))
