"""What the two consumer group members share: listeners, KIP-983, commits, metadata watch.

:class:`ConsumerGroupMember` extends the membership base with what a consumer in a group needs
whatever its group protocol (the classic
:class:`~kafkaconsumer.internals.group.consumer_coordinator.ConsumerCoordinator` and the KIP-848
:class:`~kafkaconsumer.internals.group.consumer_protocol_coordinator.ConsumerProtocolCoordinator`):

- calls the user's :class:`~kafkaconsumer.listener.ConsumerRebalanceListener` on the user's
  thread, never under a lock, through its
  :class:`~kafkaconsumer.internals.group.consumer_rebalance_listener_invoker.ConsumerRebalanceListenerInvoker`
  (``listener_invoker``), which also keeps KIP-983's bookkeeping (``to_be_revoked``,
  ``lost_partitions``, ``delay_revoke``);
- owns the member's :class:`~kafkaconsumer.internals.group.commit_request_manager.CommitRequestManager`
  (``commits``) and auto-commits, then waits for pending async commits, on close;
- follows the metadata so that a pattern subscription picks up new matching topics;
- remembers why the member last left the group, as the text of a later CommitFailedError.

KIP-983 mode. By default a cooperative revocation completes inside the ``poll()`` that learns
of it, as in Java. The first call to :meth:`ConsumerGroupMember.to_be_revoked`,
:meth:`~ConsumerGroupMember.lost_partitions` or :meth:`~ConsumerGroupMember.delay_revoke`
switches this consumer to the KIP's two-step revocation: a revocation requested during one poll
completes at the start of the next one (:meth:`ConsumerGroupMember.begin_poll`, which
``KafkaConsumer.poll`` calls first), unless delayed again. Records of partitions awaiting
revocation are not fetched any more.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.commit_request_manager import CommitRequestManager
from kafkaconsumer.internals.group.consumer_rebalance_listener_invoker import (
    ConsumerRebalanceListenerInvoker,
)
from kafkaconsumer.internals.group.group_member import Generation, GroupMember
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.metrics import ConsumerCoordinatorMetrics, Metrics
from kafkaconsumer.structs import ConsumerGroupMetadata, TopicPartition
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["ConsumerGroupMember"]

#: A failed commit whose cause this member did not witness (e.g. ILLEGAL_GENERATION from a
#: rebalance that completed without it): Java's generic text, not a guess at the cause.
_COMMIT_FAILED_MESSAGE = (
    "Commit cannot be completed since the group has already rebalanced and assigned the "
    "partitions to another member: this consumer's generation is no longer current. The next "
    "poll() rejoins the group; records of the partitions it lost may be delivered again to their "
    "new owner."
)
#: Codes by which a coordinator says it removed the member (ILLEGAL_GENERATION only says the
#: group moved on without it, which the generic text covers).
_EXPULSION_CODES = frozenset(
    {Errors.UnknownMemberIdError.errno, Errors.FencedMemberEpochError.errno}
)


class ConsumerGroupMember(GroupMember):
    """The consumer's side of a group, whatever the protocol (see the module docstring).

    A subclass is one group protocol's consumer member. Besides what :class:`GroupMember` asks
    for, it provides :meth:`poll`, :meth:`time_to_next_poll`, :meth:`enforce_rebalance`, the
    commit hooks of :class:`~kafkaconsumer.internals.group.commit_request_manager.CommitRequestHost`
    (:meth:`commit_generation_state`, :meth:`reset_state_on_response_error`,
    :meth:`offset_fetch_member`, :meth:`on_commit_rebalance_in_progress`) and
    :meth:`_session_timeout_description`; its constructor calls :meth:`_init_consumer_member`.

    Thread-safety: public methods are called from the user's thread (the consumer's own guard
    keeps it to one); the member's heartbeat thread shares the membership state through the
    group lock. Listeners, commit callbacks and commit interceptors run on the user's thread
    outside every lock.
    """

    def _init_consumer_member(
        self,
        config: Mapping[str, Any],
        subscriptions: SubscriptionState,
        metadata: ConsumerMetadata,
        *,
        interceptors: Any,
        metrics: Metrics | None,
    ) -> None:
        """Set up the shared parts (after :class:`GroupMember`'s constructor ran)."""
        self.config = config
        self.subscriptions = subscriptions
        self.metadata = metadata
        #: Commits and committed offsets.
        self.commits = CommitRequestManager(
            config, self, subscriptions, metadata, time=self.time, interceptors=interceptors
        )
        if metrics is not None:
            self.sensors = ConsumerCoordinatorMetrics(
                metrics,
                str(config.get("client.id") or ""),
                assigned_partitions=subscriptions.num_assigned_partitions,
                last_heartbeat_ms=lambda: self.last_heartbeat_sent_ms,
            )
        self.joined_subscription: frozenset[str] | None = None  # user's thread
        self.metadata_snapshot: dict[str, int] = {}  # user's thread
        # (metadata update version, pattern, watched topics) of the last metadata snapshot.
        self._metadata_seen: (  # user's thread
            tuple[int, re.Pattern[str] | None, frozenset[str]] | None
        ) = None
        # Immutable, replaced whole: by the user's thread, or under _lock by a reset.
        self._group_metadata = ConsumerGroupMetadata(
            self.rebalance_config.group_id, -1, "", self.rebalance_config.group_instance_id
        )
        # Why this member last left the group (poll timeout, expulsion by the coordinator,
        # fenced static instance), as the text of a later CommitFailedError: the same error
        # has different remedies. Kept until the member joins again; the first cause wins.
        self._departure: str | None = None  # guarded by _lock
        #: Listener calls and KIP-983's revocation bookkeeping.
        self.listener_invoker = ConsumerRebalanceListenerInvoker(
            subscriptions, self.rebalance_config.group_id, self.time.monotonic_ms
        )
        self._coordinator_closed = False  # user's thread
        self._update_metadata_snapshot()

    # ------------------------------------------------------------ provided by the subclass
    def poll(self, timer: Timer, wait_for_join_group: bool | None = None) -> bool:
        """Drive the group for one consumer poll; False when the member is not ready yet."""
        raise NotImplementedError

    def time_to_next_poll(self, now_ms: int) -> int:
        """How long the consumer may block before the member needs attention."""
        raise NotImplementedError

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Ask for a rebalance at the next poll (Java ``enforceRebalance``)."""
        raise NotImplementedError

    def commit_generation_state(self, sent: Generation) -> tuple[bool, bool]:
        """(the generation is still ``sent``, a rebalance is being prepared)."""
        raise NotImplementedError

    def reset_state_on_response_error(self, api: str, code: int, reset_member_id: bool) -> None:
        """A group error in ``api``'s response ended the member's generation or epoch."""
        raise NotImplementedError

    def offset_fetch_member(self) -> Generation | None:
        """The (epoch, member id) an OffsetFetch proves membership with (KIP-848), or None."""
        raise NotImplementedError

    def on_commit_rebalance_in_progress(self) -> None:
        """An OffsetCommit was refused because the group is rebalancing."""
        raise NotImplementedError

    def _session_timeout_description(self) -> str:
        raise NotImplementedError

    def _complete_due_revocations(self, due: set[TopicPartition]) -> None:
        """Complete the KIP-983 revocations ``due`` now (listener, then the assignment)."""
        raise NotImplementedError

    # ------------------------------------------------------------------- departure notes
    def _note_response_error(self, api: str, code: int) -> None:
        """Remember why a group error in ``api``'s response ended the membership."""
        if code == Errors.FencedInstanceIdError.errno:
            self.note_fenced_instance()
        elif code in _EXPULSION_CODES:
            self.note_expulsion(api, Errors.for_code(code).name)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group id, generation, member id and group instance id."""
        return self._group_metadata

    def _note_departure(self, message: str) -> None:
        with self._lock:
            if self._departure is None:
                self._departure = message

    def note_fenced_instance(self) -> None:
        """Another consumer with this group.instance.id took over the member's partitions."""
        self._note_departure(
            "Commit cannot be completed since this consumer was fenced: another consumer "
            f"joined group {self.rebalance_config.group_id!r} with the same "
            f"group.instance.id {self.rebalance_config.group_instance_id!r} and took over "
            "its partitions. Give every instance its own group.instance.id."
        )

    def note_poll_timeout(self) -> None:
        """The heartbeat thread left the group because poll() was not called in time."""
        self._note_departure(
            "Commit cannot be completed since this consumer left group "
            f"{self.rebalance_config.group_id!r}: the time between two calls to poll() was "
            f"longer than max.poll.interval.ms ({self.rebalance_config.rebalance_timeout_ms} ms), "
            "so its partitions were assigned to other members. Raise max.poll.interval.ms, or "
            "return fewer records per poll() with max.poll.records, so that each batch is "
            "processed in time; the next poll() rejoins the group."
        )

    def note_expulsion(self, api: str, error_name: str) -> None:
        """The coordinator answered ``api`` saying this member is no longer in the group."""
        session = self._session_timeout_description()
        self._note_departure(
            "Commit cannot be completed since the coordinator of group "
            f"{self.rebalance_config.group_id!r} removed this consumer from the group ({error_name} "
            f"in a {api} response): none of its heartbeats arrived within {session}, usually "
            "because the network or the coordinator's broker was unreachable (or an administrator "
            "removed it). Its partitions may have been assigned to other members; the "
            "next poll() rejoins the group."
        )

    def commit_failed(self) -> Errors.CommitFailedError:
        """The error of a commit the group no longer accepts, naming the cause when known."""
        with self._lock:
            departure = self._departure
        return Errors.CommitFailedError(departure or _COMMIT_FAILED_MESSAGE)

    # ===================================================================== metadata watch
    def _partition_count(self, cluster: Any, topic: str) -> int:
        parts = cluster.partitions_for_topic(topic)
        return len(parts) if parts else 0

    def _update_metadata_snapshot(self) -> None:
        cluster = self.metadata.cluster
        topics = self.subscriptions.metadata_topics()
        self.metadata_snapshot = {t: self._partition_count(cluster, t) for t in topics}

    def maybe_update_subscription_metadata(self) -> None:
        """Follow metadata: re-match the pattern and refresh the partition-count snapshot.

        Does nothing when neither the metadata (its update version) nor the subscription (its
        pattern and the topics watched) changed since the last call.
        """
        version = self.metadata.update_version
        pattern = (
            self.subscriptions.subscribed_pattern
            if self.subscriptions.has_pattern_subscription()
            else None
        )
        if (version, pattern, self.subscriptions.metadata_topics()) == self._metadata_seen:
            return
        if pattern is not None:
            matched = self.metadata.matching_topics(pattern)
            if self.subscriptions.subscribe_from_pattern(matched):
                logger.info(
                    "group %s: pattern %s now matches %s",
                    self.rebalance_config.group_id,
                    pattern.pattern,
                    sorted(matched),
                )
        self._update_metadata_snapshot()
        self._metadata_seen = (version, pattern, self.subscriptions.metadata_topics())

    def _maybe_update_joined_subscription(self, assigned: set[TopicPartition]) -> None:
        if not self.subscriptions.has_pattern_subscription():
            return
        joined = self.joined_subscription or frozenset()
        added = {tp.topic for tp in assigned if tp.topic not in joined}
        if added:
            # The leader saw matching topics before we did: follow its decision.
            if self.subscriptions.subscribe_from_pattern(
                set(self.subscriptions.subscription()) | added
            ):
                self.metadata.request_update()
            self.joined_subscription = frozenset(joined | added)

    # ===================================================================== KIP-983 hooks
    def begin_poll(self) -> None:
        """Called by ``KafkaConsumer.poll()`` first: completes the revocations due now."""
        self._complete_due_revocations(self.listener_invoker.start_poll())

    def to_be_revoked(self) -> set[TopicPartition]:
        """KIP-983: partitions whose revocation completes at the start of the next poll."""
        return self.listener_invoker.to_be_revoked()

    def lost_partitions(self) -> set[TopicPartition]:
        """KIP-983: partitions lost during the last poll (stop committing them)."""
        return self.listener_invoker.lost_partitions()

    def delay_revoke(self, partitions: Iterable[TopicPartition]) -> bool:
        """KIP-983: complete these revocations one poll later; False if some were lost."""
        return self.listener_invoker.delay_revoke(partitions)

    # ======================================================================== leave
    def close(self, timer: Timer | None = None, leave_group: bool | None = None) -> None:
        """Auto-commit, wait for in-flight async commits, then leave (see the base class).

        A second call does nothing.
        """
        if self._coordinator_closed:
            return
        self._coordinator_closed = True
        if timer is None:
            timer = self.time.timer(0)
        # As Java: a wakeup() pending from before close() must not abort the final commit and
        # the leave; the consumer is closing, so wakeups stay disabled.
        self.client.disable_wakeups()
        try:
            if (
                self.subscriptions.has_auto_assigned_partitions()
                or self.commits.auto_commit_enabled
            ):
                self.commits.maybe_auto_commit_offsets_sync(timer)
            self.commits.invoke_pending_async_commits(timer)
        finally:
            super().close(timer, leave_group)
