"""The member of a share group (KIP-932; Java ``ShareMembershipManager``).

A share-group member chooses its own member id, joins with epoch 0, heartbeats at the interval
the coordinator returns and takes the assignment each answer carries as it is: the broker
assigns, and several members may share a partition, so there is no revocation step and no
rebalance listener. It leaves with epoch -1. Its heartbeats run on the background thread of
:mod:`.share_heartbeat_request_manager`.

States: UNSUBSCRIBED (no subscription), JOINING (epoch 0 to send), STABLE (in the group),
LEAVING (the leave heartbeat is going out), FENCED (the coordinator no longer knows this epoch:
the assignment is dropped, and the member joins again with epoch 0), STALE (left because
``poll()`` was not called within ``max.poll.interval.ms``; joins again at the next ``poll()``)
and FATAL (an error the member cannot survive, raised by the next ``poll()``).
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.group_member import Generation, GroupMember, GroupRebalanceConfig
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.metrics.share_consumer_metrics import ShareCoordinatorMetrics
from kafkaconsumer.network.future import Future
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import Time

logger = logging.getLogger(__name__)

__all__ = ["ShareMemberState", "ShareMembershipManager", "SHARE_GROUP_HEARTBEAT"]

SHARE_GROUP_HEARTBEAT = 76
_LEAVE_EPOCH = -1


class ShareMemberState(enum.Enum):
    """Where a share-group member stands.

    Thread-safety: immutable enum members; safe to share.
    """

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    STABLE = "STABLE"
    LEAVING = "LEAVING"
    FENCED = "FENCED"
    STALE = "STALE"
    FATAL = "FATAL"


class ShareMembershipManager(GroupMember):
    """One share consumer's membership of its share group.

    Thread-safety: the user's thread calls the public methods; the heartbeat thread reports
    answers through ``on_heartbeat_*`` and the ``transition_*`` methods. Every field below is
    guarded by the group lock (``self._lock``); no user code runs here.
    """

    def __init__(
        self,
        rebalance_config: GroupRebalanceConfig,
        client: CoordinatorClient,
        metadata: Any,
        heartbeat_factory: Callable[[ShareMembershipManager], Any],
        *,
        time: Time | None = None,
    ) -> None:
        """A member of ``rebalance_config.group_id`` outside the group; ``metadata`` (a
        ``ConsumerMetadata``) names the topics of the ids the coordinator assigns, and
        ``heartbeat_factory(member)`` makes the heartbeat thread (a
        ``ShareHeartbeatRequestManager``), started at the first ``poll()``."""
        super().__init__(rebalance_config, client, time=time)
        self._heartbeat_factory = heartbeat_factory
        self._metadata = metadata
        self._member_id = str(uuid.uuid4())  # chosen by the member, kept for its lifetime
        self.member_epoch = 0  # guarded by _lock
        self.state = ShareMemberState.UNSUBSCRIBED  # guarded by _lock
        self.heartbeat_interval_ms = rebalance_config.heartbeat_interval_ms  # guarded by _lock
        self._subscription: tuple[str, ...] = ()  # guarded by _lock
        self._subscription_sent = False  # guarded by _lock
        # The latest assignment: topic id -> partitions (resolved to names on demand).
        self._assigned: dict[uuid.UUID, tuple[int, ...]] = {}  # guarded by _lock
        self.fatal_error: BaseException | None = None  # guarded by _lock
        #: Bumped whenever the member was fenced or left, so the fetch side drops its sessions.
        self.session_generation = 0  # guarded by _lock
        #: The ``consumer-share-coordinator-metrics`` sensors, when the consumer reports them.
        self.share_sensors: ShareCoordinatorMetrics | None = None  # set once, before joining
        self._thread: Any = None  # guarded by _lock; the ShareHeartbeatRequestManager

    # ------------------------------------------------------------ identity (membership base)
    def member_id(self) -> str:
        """This member's id (chosen at construction)."""
        return self._member_id

    def generation_snapshot(self) -> Generation:
        """The member epoch and id as a generation."""
        with self._lock:
            return Generation(self.member_epoch, self._member_id, None)

    def generation_if_stable(self) -> Generation | None:
        """The generation while the member is in the group."""
        with self._lock:
            if self.state is ShareMemberState.STABLE:
                return Generation(self.member_epoch, self._member_id, None)
            return None

    def rebalance_in_progress(self) -> bool:
        """True while joining."""
        with self._lock:
            return self.state is ShareMemberState.JOINING

    # ------------------------------------------------------------------- user's thread
    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Subscribe to ``topics`` (an empty tuple unsubscribes: the member leaves)."""
        with self._lock:
            if tuple(sorted(topics)) == self._subscription and self.state not in (
                ShareMemberState.UNSUBSCRIBED,
            ):
                return
            self._subscription = tuple(sorted(topics))
            self._subscription_sent = False
            if self.state in (ShareMemberState.UNSUBSCRIBED, ShareMemberState.STALE):
                self.state = ShareMemberState.JOINING
                self.member_epoch = 0
            self._request_heartbeat()

    def subscription(self) -> tuple[str, ...]:
        """The subscribed topics."""
        with self._lock:
            return self._subscription

    def poll(self) -> None:
        """The application polled: start the heartbeat thread, restart the poll-interval
        countdown, rejoin after a poll timeout, raise a fatal error."""
        with self._lock:
            if self.fatal_error is not None:
                raise self.fatal_error
            thread = self._thread
            if thread is not None and thread.error is not None:
                error, thread.error = thread.error, None
                raise error
            if self.state is ShareMemberState.STALE and self._subscription:
                self.state = ShareMemberState.JOINING
                self.member_epoch = 0
                self._subscription_sent = False
            if thread is None and self.state is not ShareMemberState.UNSUBSCRIBED:
                thread = self._thread = self._heartbeat_factory(self)
                thread.start()
            if thread is not None:
                thread.poll(self.time.monotonic_ms())
                if self.state is ShareMemberState.JOINING:
                    thread.request_heartbeat()

    def has_assignment(self) -> bool:
        """Whether the coordinator has given this member any partition (lock held)."""
        return bool(self._assigned)

    def assignment(self) -> frozenset[TopicPartition]:
        """The assigned partitions whose topic names the metadata knows (a refresh is asked
        for the others)."""
        with self._lock:
            assigned = dict(self._assigned)
        cluster = self._metadata.fetch()
        out: set[TopicPartition] = set()
        unknown = False
        for topic_id, partitions in assigned.items():
            name = cluster.topic_name(topic_id)
            if name is None:
                unknown = True
                continue
            out.update(TopicPartition(name, p) for p in partitions)
        if unknown:
            self._metadata.request_update()
        return frozenset(out)

    def unsubscribe(self) -> Future[None] | None:
        """Leave the group and drop the subscription."""
        future = self.maybe_leave_group("the consumer unsubscribed")
        with self._lock:
            self._subscription = ()
            self.state = ShareMemberState.UNSUBSCRIBED
        return future

    # ------------------------------------------------------------ heartbeat thread's side
    def _request_heartbeat(self) -> None:
        thread = self._thread
        if thread is not None:
            thread.request_heartbeat()

    def sends_heartbeats(self) -> bool:
        """Whether the member is (or wants to be) in the group (lock held)."""
        return self.state in (ShareMemberState.JOINING, ShareMemberState.STABLE)

    def build_heartbeat(self) -> dict[str, Any]:
        """The next ShareGroupHeartbeat body (lock held); the subscription goes with a join and
        with each change, else null ("unchanged")."""
        send_topics = self.member_epoch == 0 or not self._subscription_sent
        self._subscription_sent = True
        return {
            "group_id": self.rebalance_config.group_id,
            "member_id": self._member_id,
            "member_epoch": self.member_epoch,
            "rack_id": self.rebalance_config.client_rack if self.member_epoch == 0 else None,
            "subscribed_topic_names": list(self._subscription) if send_topics else None,
        }

    def on_heartbeat_success(self, response: dict[str, Any]) -> None:
        """A heartbeat was answered without error (lock held)."""
        if self.state not in (ShareMemberState.JOINING, ShareMemberState.STABLE):
            return
        self.member_epoch = int(response["member_epoch"])
        interval = int(response.get("heartbeat_interval_ms") or 0)
        if interval > 0:
            self.heartbeat_interval_ms = interval
        assignment = response.get("assignment")
        if assignment is not None:
            self._assigned = {
                tp["topic_id"]: tuple(tp["partitions"])
                for tp in assignment.get("topic_partitions") or []
            }
        if self.state is ShareMemberState.JOINING:
            logger.info(
                "group %s: member %s joined with epoch %d",
                self.rebalance_config.group_id,
                self._member_id,
                self.member_epoch,
            )
        self.state = ShareMemberState.STABLE

    def transition_to_fenced(self) -> None:
        """The coordinator no longer knows this epoch: drop the assignment, join again."""
        self._assigned = {}
        self.member_epoch = 0
        self._subscription_sent = False
        self.session_generation += 1
        self.state = ShareMemberState.JOINING

    def transition_to_stale(self) -> None:
        """Left because poll() was not called in time; the next poll() joins again."""
        self._assigned = {}
        self.member_epoch = 0
        self.session_generation += 1
        self.state = ShareMemberState.STALE

    def transition_to_fatal(self, error: BaseException) -> None:
        """An error the member cannot survive; raised by the next poll()."""
        self.fatal_error = error
        self.state = ShareMemberState.FATAL

    def build_leave_heartbeat(self) -> dict[str, Any]:
        """The ShareGroupHeartbeat that leaves the group."""
        return {
            "group_id": self.rebalance_config.group_id,
            "member_id": self._member_id,
            "member_epoch": _LEAVE_EPOCH,
        }

    # ---------------------------------------------------------------- leaving and closing
    def maybe_leave_group(self, reason: str, force_static: bool = False) -> Future[None] | None:
        """Send the leave heartbeat when in the group; the future completes with the answer."""
        with self._lock:
            if self.state not in (ShareMemberState.JOINING, ShareMemberState.STABLE):
                return None
            if self.member_epoch == 0 and self.state is ShareMemberState.JOINING:
                self.state = ShareMemberState.UNSUBSCRIBED
                return None
            self.state = ShareMemberState.LEAVING
            self._assigned = {}
            self.session_generation += 1
            node = self.check_and_get_coordinator()
        if node is None:
            return None
        logger.info(
            "group %s: member %s leaving the group: %s",
            self.rebalance_config.group_id,
            self._member_id,
            reason,
        )
        result: Future[None] = Future()
        request = self._send(node, SHARE_GROUP_HEARTBEAT, self.build_leave_heartbeat())
        request.add_callback(lambda _response: result.complete_if_pending(None))
        request.add_errback(result.fail_if_pending)
        with self._lock:
            self.member_epoch = 0
        return result

    def on_leave_prepare(self) -> None:
        """Nothing to give up: a share member has no partitions of its own to revoke."""

    def _leave_on_close(self, leave_group: bool | None) -> tuple[bool, bool]:
        return False, leave_group is not False

    def _close_heartbeat_thread(self, timeout_s: float | None = None) -> None:
        with self._lock:
            thread = self._thread
        if thread is None:
            return
        thread.close()
        thread.join(timeout_s)

    def broker_description(self) -> str:
        """The coordinator broker, for error messages."""
        node = self.check_and_get_coordinator()
        return f"broker {node}" if node is not None else "the coordinator"

    def note_poll_timeout(self) -> None:
        """Recorded for the next poll(): the member left because poll() came too late."""
        logger.debug("group %s: poll interval exceeded", self.rebalance_config.group_id)


def share_groups_not_supported(broker: str) -> Errors.UnsupportedVersionError:
    """The error for a broker without share groups."""
    return Errors.UnsupportedVersionError(
        f"share groups need a broker that supports ShareGroupHeartbeat (API 76): Apache Kafka "
        f"4.1 or later with share groups enabled (share.version 1 or more; a fresh 4.2+ node "
        f"enables them). {broker} does not advertise it: it is Apache Kafka 4.0 or older "
        f"(such as 3.9), or a newer broker whose share groups are off."
    )
