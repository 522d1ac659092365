"""Offset commits and committed-offset lookups of a group member.

Mirrors the commit half of Java's ``ConsumerCoordinator`` and the async consumer's
``CommitRequestManager``: synchronous commits (retried within their timer), asynchronous ones
(callbacks run in completion order on the user's thread), auto-commit every
``auto.commit.interval.ms``, OffsetCommit and OffsetFetch with their error handling, and the
refresh of initializing partitions to their committed offsets.

Each group member (the classic one and the consumer-protocol one) owns one
:class:`CommitRequestManager` and hands it itself as the :class:`CommitRequestHost`: the
manager reaches the coordinator, the generation (or member epoch) that commits carry and the
member's group lock only through that interface, so both protocols share every commit rule.
When the commit happens around a revocation (before a rebalance, before reconciling away
partitions, on close) is the member's decision; the manager only commits.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import config_value
from kafkaconsumer.internals.group.group_member import (
    NO_GENERATION,
    Generation,
    GroupRebalanceConfig,
    _error_for,
)
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.internals.subscription_state import (
    FetchPosition,
    LeaderAndEpoch,
    SubscriptionState,
)
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.future import Future
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import Time
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        OffsetCommitResponse,
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopic,
        OffsetFetchResponse,
    )

logger = logging.getLogger(__name__)

__all__ = ["CommitRequestHost", "CommitRequestManager", "OffsetCommitCallback"]

_OFFSET_COMMIT = 8
_OFFSET_FETCH = 9

#: ``callback(offsets, exception_or_None)``, as Java's ``OffsetCommitCallback.onComplete``.
OffsetCommitCallback = Callable[
    [Mapping[TopicPartition, OffsetAndMetadata], "BaseException | None"], Any
]


class CommitRequestHost(Protocol):
    """What the commit manager needs of the member that owns it.

    The member knows the coordinator and the generation (classic) or member epoch (consumer
    protocol) a commit must carry, and how a commit's group error changes its membership.

    Thread-safety: called from the user's thread, and from response callbacks on whichever
    thread polls the network; an implementation takes its (re-entrant) group lock where needed.
    """

    @property
    def rebalance_config(self) -> GroupRebalanceConfig:
        """The group's id, instance id and timeouts."""
        ...

    @property
    def client(self) -> CoordinatorClient:
        """The thread-safe network client."""
        ...

    @property
    def retry_backoff(self) -> ExponentialBackoff:
        """The exponential backoff (KIP-580) between retries."""
        ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The member's group lock (entered with ``with``)."""
        ...

    def poll_network_no_wakeup(self) -> None:
        """Process network I/O once without blocking and without honouring ``wakeup()``."""
        ...

    def coordinator_unknown(self) -> bool:
        """True while no live coordinator is known."""
        ...

    def lookup_coordinator(self) -> Future[None]:
        """Start (or return the running) FindCoordinator request."""
        ...

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Find the coordinator and connect to it within ``timer``."""
        ...

    def check_and_get_coordinator(self) -> int | None:
        """The coordinator's node id, or None."""
        ...

    def mark_coordinator_unknown(self, cause: str, is_disconnected: bool = False) -> None:
        """Forget the coordinator so that it is looked up again."""
        ...

    def backoff_wait(self, timer: Timer, backoff_ms: int) -> None:
        """Wait ``backoff_ms`` (bounded by ``timer``) without holding any lock."""
        ...

    def send_group_request(
        self, node: int, api_key: int, body: Mapping[str, Any], *, version: int | None = None
    ) -> Future[Any]:
        """Send ``body`` as request ``api_key`` to the coordinator ``node``."""
        ...

    def compose(
        self,
        request: Future[Any],
        gen: Generation,
        handler: Callable[[Any, Generation, Future[Any]], None],
    ) -> Future[Any]:
        """Adapt a response future through ``handler``; disconnects forget the coordinator."""
        ...

    def generation_snapshot(self) -> Generation:
        """The current generation (classic) or (epoch, member id), whatever the state."""
        ...

    def generation_if_stable(self) -> Generation | None:
        """What a commit carries while the member is in the group, else None."""
        ...

    def offset_fetch_member(self) -> Generation | None:
        """The (epoch, member id) an OffsetFetch proves membership with (KIP-848), or None."""
        ...

    def rebalance_in_progress(self) -> bool:
        """True while the member is joining."""
        ...

    def commit_generation_state(self, sent: Generation) -> tuple[bool, bool]:
        """(the generation is still ``sent``, a rebalance is being prepared), under the lock."""
        ...

    def on_commit_rebalance_in_progress(self) -> None:
        """An OffsetCommit was refused because the group is rebalancing."""
        ...

    def reset_state_on_response_error(self, api: str, code: int, reset_member_id: bool) -> None:
        """A group error in ``api``'s response ended the generation."""
        ...

    def note_fenced_instance(self) -> None:
        """Another consumer with this group.instance.id took over."""
        ...

    def commit_failed(self) -> Errors.CommitFailedError:
        """The error of a commit the group no longer accepts, naming the cause when known."""
        ...


class CommitRequestManager:
    """Commits and committed offsets of one group member.

    Construct with the consumer configuration (Java keys), the member (its
    :class:`CommitRequestHost`), the subscriptions and the metadata.

    Thread-safety: called from the user's thread. Futures complete on whichever thread polls
    the network (possibly the member's heartbeat thread, holding the group lock): their
    callbacks only queue the outcome under the member's group lock, and commit callbacks and
    interceptors run later on the user's thread with no lock held.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        member: CommitRequestHost,
        subscriptions: SubscriptionState,
        metadata: ConsumerMetadata,
        *,
        time: Time,
        interceptors: Any = None,
    ) -> None:
        """Read the commit settings of ``config``; ``interceptors`` receive ``on_commit``."""
        self._member = member
        self.subscriptions = subscriptions
        self.metadata = metadata
        self.time = time
        self.interceptors = interceptors  # written by the user's thread
        self.auto_commit_enabled = bool(config_value(config, "enable.auto.commit"))
        self.auto_commit_interval_ms = int(config_value(config, "auto.commit.interval.ms"))
        self.next_auto_commit_timer = time.timer(self.auto_commit_interval_ms)  # user's thread
        self.require_stable = (
            str(config_value(config, "isolation.level")).lower() == "read_committed"
        )
        self.throw_on_fetch_stable_offset_unsupported = bool(
            config_value(config, "internal.throw.on.fetch.stable.offset.unsupported")
        )
        # Async commit completions, delivered in order on the user's thread.
        self.completed_offset_commits: collections.deque[  # guarded by the member's lock
            tuple[
                OffsetCommitCallback | None,
                dict[TopicPartition, OffsetAndMetadata],
                BaseException | None,
            ]
        ] = collections.deque()
        self._in_flight_async_commits: list[Future[Any]] = []  # guarded by the member's lock
        self.pending_async_commits = 0  # guarded by the member's lock
        self.async_commit_fenced = False  # user's thread
        self._pending_committed_offset_request: (  # user's thread
            tuple[frozenset[TopicPartition], Generation | None, Future[Any]] | None
        ) = None
        self.default_offset_commit_callback: OffsetCommitCallback = self._log_commit_error

    def _pending_async(self) -> bool:
        # The list and the counter are also changed by lookup callbacks, which may run on the
        # heartbeat thread: both are touched only under the group lock, the list in place.
        with self._member.lock:
            self._in_flight_async_commits[:] = [
                f for f in self._in_flight_async_commits if not f.is_done
            ]
            return bool(self._in_flight_async_commits) or self.pending_async_commits > 0

    def _first_in_flight(self) -> Future[Any] | None:
        with self._member.lock:
            for f in self._in_flight_async_commits:
                if not f.is_done:
                    return f
        return None

    def invoke_completed_offset_commit_callbacks(self) -> None:
        """Run the interceptors and callbacks of finished async commits, in completion order.

        Called on the user's thread with no lock held: the futures complete on whichever
        thread polled the network (possibly the heartbeat thread, holding the coordinator
        lock), so they only record the completion and the user code runs here.
        """
        if self.async_commit_fenced:
            raise Errors.FencedInstanceIdError(
                f"an async commit was fenced: group.instance.id "
                f"{self._member.rebalance_config.group_instance_id!r} is used by another consumer"
            )
        while True:
            with self._member.lock:
                if not self.completed_offset_commits:
                    break
                callback, offsets, exc = self.completed_offset_commits.popleft()
            if isinstance(exc, Errors.FencedInstanceIdError):
                # Owned by the user's thread: the completion only queued the error.
                self.async_commit_fenced = True
            if exc is None:
                # Java calls the interceptors first, then the commit callback.
                self._on_commit_interceptors(offsets)
            cb = callback if callback is not None else self.default_offset_commit_callback
            cb(offsets, exc)
        if self.async_commit_fenced:
            raise Errors.FencedInstanceIdError(
                f"an async commit was fenced: group.instance.id "
                f"{self._member.rebalance_config.group_instance_id!r} is used by another consumer"
            )

    def _log_commit_error(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None
    ) -> None:
        if exc is not None:
            logger.error("offset commit of %s failed: %s", dict(offsets), exc)

    def commit_offsets_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
        callback: OffsetCommitCallback | None = None,
    ) -> None:
        """Commit without waiting; ``callback(offsets, exc)`` runs in a later poll or commit."""
        self.invoke_completed_offset_commit_callbacks()
        offsets = dict(offsets) if offsets else {}
        if not self._member.coordinator_unknown():
            self._do_commit_offsets_async(offsets, callback)
        else:
            # Find the coordinator first; the commit is sent once it is known. The lookup's
            # callbacks may run on the heartbeat thread: they change the pending count and the
            # in-flight list only under the group lock (taken before the network lock).
            with self._member.lock:
                self.pending_async_commits += 1
            lookup = self._member.lookup_coordinator()

            def on_found(_v: Any) -> None:
                with self._member.lock:
                    try:
                        # Sent (and listed as in flight) before the count drops, so that
                        # _pending_async() never sees this commit as neither pending nor sent.
                        self._do_commit_offsets_async(offsets, callback)
                    finally:
                        self.pending_async_commits -= 1

            def on_lookup_failed(exc: BaseException) -> None:
                err = Errors.RetriableCommitFailedError(
                    f"offset commit failed with a retriable exception: {exc}"
                )
                err.__cause__ = exc
                with self._member.lock:
                    self.completed_offset_commits.append((callback, offsets, err))
                    self.pending_async_commits -= 1

            lookup.add_callback(on_found)
            lookup.add_errback(on_lookup_failed)
        self._member.poll_network_no_wakeup()

    def _do_commit_offsets_async(
        self,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: OffsetCommitCallback | None,
    ) -> Future[Any]:
        future = self._send_offset_commit_request(offsets)
        with self._member.lock:
            self._in_flight_async_commits.append(future)

        # These run on whichever thread completes the future, perhaps the heartbeat thread
        # with the group lock held: they only record the outcome. The interceptors and
        # the callback run later on the user's thread (invoke_completed_offset_commit_callbacks).
        def on_success(_v: Any) -> None:
            with self._member.lock:
                self.completed_offset_commits.append((callback, offsets, None))

        def on_failure(exc: BaseException) -> None:
            err: BaseException = exc
            if getattr(exc, "retriable", False):
                err = Errors.RetriableCommitFailedError(
                    f"offset commit failed with a retriable exception: {exc}"
                )
                err.__cause__ = exc
            with self._member.lock:
                self.completed_offset_commits.append((callback, offsets, err))

        future.add_callback(on_success)
        future.add_errback(on_failure)
        return future

    def _on_commit_interceptors(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        if self.interceptors is None:
            return
        fn = getattr(self.interceptors, "on_commit", None)
        if fn is not None:
            try:
                fn(offsets)
            except Exception:
                logger.warning("interceptor on_commit failed", exc_info=True)

    def commit_offsets_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None, timer: Timer
    ) -> bool:
        """Commit and wait, retrying retriable errors within ``timer``; False on timeout.

        Raises CommitFailedError (the group moved on), RebalanceInProgressError (finish the
        rebalance with poll() and retry) and other non-retriable errors.
        """
        self.invoke_completed_offset_commit_callbacks()
        offsets = dict(offsets) if offsets else {}
        if not offsets:
            # Empty commits still wait for earlier async commits, so their callbacks run first.
            return self.invoke_pending_async_commits(timer)
        attempts = 0
        while True:
            if self._member.coordinator_unknown() and not self._member.ensure_coordinator_ready(
                timer
            ):
                return False
            future = self._send_offset_commit_request(offsets)
            self._member.client.poll(timeout_ms=timer.remaining_ms, future=future)
            timer.update()
            # Earlier async commits finished before this one: keep their callbacks in order.
            self.invoke_completed_offset_commit_callbacks()
            if future.succeeded():
                self._on_commit_interceptors(offsets)
                return True
            if future.failed() and not future.retriable():
                exc = future.exception
                assert exc is not None
                raise exc
            if timer.is_expired():
                return False
            attempts = self._wait_before_retry(timer, attempts)
            if timer.is_expired():
                return False

    def _wait_before_retry(self, timer: Timer, attempts: int) -> int:
        """Wait before a commit or an offset fetch is sent again; returns the next attempt
        number.

        When the request found the coordinator gone (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE
        or a lost connection left it unknown), the retry goes to the rediscovered coordinator
        after ``retry.backoff.ms`` alone and counts from the start there: a coordinator that
        moved (a broker restarting) answers a later request no sooner for being asked later.
        Other retriable errors (COORDINATOR_LOAD_IN_PROGRESS, timeouts) back off exponentially
        up to ``retry.backoff.max.ms`` (KIP-580), as Java does.
        """
        if self._member.coordinator_unknown():
            self._member.backoff_wait(timer, self._member.retry_backoff.backoff(0))
            return 0
        self._member.backoff_wait(timer, self._member.retry_backoff.backoff(attempts))
        return attempts + 1

    def invoke_pending_async_commits(self, timer: Timer) -> bool:
        """Wait (bounded by ``timer``) for in-flight async commits, running their callbacks.

        True when none is left pending.
        """
        while self._pending_async() and timer.not_expired():
            if not self._member.ensure_coordinator_ready(timer):
                break
            self._member.client.poll(timeout_ms=timer.remaining_ms, future=self._first_in_flight())
            timer.update()
            self.invoke_completed_offset_commit_callbacks()
        self.invoke_completed_offset_commit_callbacks()
        return not self._pending_async()

    def _send_offset_commit_request(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> Future[Any]:
        if not offsets:
            done: Future[Any] = Future()
            return done.success(None)
        node = self._member.check_and_get_coordinator()
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, om in offsets.items():
            if not isinstance(om, OffsetAndMetadata):
                om = OffsetAndMetadata(*om) if isinstance(om, tuple) else OffsetAndMetadata(int(om))
            if om.offset < 0:
                return Future().failure(ValueError(f"invalid offset {om.offset} for {tp}"))
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": om.offset,
                    "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                    "committed_metadata": om.metadata,
                }
            )
        gen: Generation | None
        instance_id: str | None
        if self.subscriptions.has_auto_assigned_partitions():
            gen = self._member.generation_if_stable()
            instance_id = self._member.rebalance_config.group_instance_id
            if gen is None:
                # Not part of an active generation: the user must rejoin through poll().
                if self._member.rebalance_in_progress():
                    return Future().failure(
                        Errors.RebalanceInProgressError(
                            "Offset commit cannot be completed since the consumer is undergoing a "
                            "rebalance for auto partition assignment. Complete the rebalance by "
                            "calling poll() and then retry the commit."
                        )
                    )
                return Future().failure(self._member.commit_failed())
        else:
            gen = NO_GENERATION
            instance_id = None
        body = {
            "group_id": self._member.rebalance_config.group_id,
            "generation_id_or_member_epoch": gen.generation_id,
            "member_id": gen.member_id,
            "group_instance_id": instance_id,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        logger.debug(
            "sending OffsetCommit for %s with %s", {str(k): v for k, v in offsets.items()}, gen
        )
        request = self._member.send_group_request(node, _OFFSET_COMMIT, body)
        return self._member.compose(request, gen, self._handle_offset_commit_response)

    def _handle_offset_commit_response(
        self, response: OffsetCommitResponse, sent: Generation, future: Future[Any]
    ) -> None:
        unauthorized: set[str] = set()
        for topic in response.get("topics") or []:
            name = topic.get("name")
            for part in topic.get("partitions") or []:
                code = int(part.get("error_code", 0) or 0)
                tp = TopicPartition(str(name), int(part.get("partition_index", -1)))
                if code == 0:
                    continue
                err_name = Errors.for_code(code).name
                logger.debug("OffsetCommit of %s failed with %s", tp, err_name)
                if code == Errors.GroupAuthorizationFailedError.errno:
                    future.failure(
                        Errors.GroupAuthorizationFailedError(
                            f"not authorized to access group {self._member.rebalance_config.group_id}"
                        )
                    )
                    return
                if code == Errors.TopicAuthorizationFailedError.errno:
                    unauthorized.add(tp.topic)
                    continue
                if code in (
                    Errors.OffsetMetadataTooLargeError.errno,
                    Errors.InvalidCommitOffsetSizeError.errno,
                ):
                    future.failure(_error_for(code, f"offset commit of {tp} failed"))
                    return
                if code in (
                    Errors.CoordinatorLoadInProgressError.errno,
                    Errors.UnknownTopicOrPartitionError.errno,
                ):
                    future.failure(_error_for(code, f"offset commit of {tp} failed"))
                    return
                if code in (
                    Errors.CoordinatorNotAvailableError.errno,
                    Errors.NotCoordinatorError.errno,
                    Errors.RequestTimedOutError.errno,
                ):
                    self._member.mark_coordinator_unknown(f"error response {err_name}")
                    future.failure(_error_for(code, f"offset commit of {tp} failed"))
                    return
                if code == Errors.FencedInstanceIdError.errno:
                    logger.info(
                        "OffsetCommit with %s failed: group.instance.id %r fenced",
                        sent,
                        self._member.rebalance_config.group_instance_id,
                    )
                    self._member.note_fenced_instance()
                    unchanged, preparing = self._member.commit_generation_state(sent)
                    if unchanged:
                        future.failure(
                            Errors.FencedInstanceIdError(
                                f"group.instance.id {self._member.rebalance_config.group_instance_id!r} is "
                                f"used by another consumer"
                            )
                        )
                    elif preparing:
                        future.failure(
                            Errors.RebalanceInProgressError(
                                "Offset commit cannot be completed: the member's old generation was "
                                "fenced by its group instance id; it has probably joined a newer "
                                "generation already. Call poll() and retry."
                            )
                        )
                    else:
                        future.failure(self._member.commit_failed())
                    return
                if code == Errors.StaleMemberEpochError.errno:
                    # Consumer protocol: a heartbeat moved our epoch on since the commit was
                    # built. While still in the group, retry with the new epoch (a sync commit
                    # does); once out of it, the group has moved on.
                    if self._member.generation_if_stable() is not None:
                        future.failure(
                            Errors.RetriableCommitFailedError(
                                f"offset commit of {tp} carried a stale member epoch "
                                f"({sent.generation_id}); retry with the current one"
                            )
                        )
                    else:
                        future.failure(self._member.commit_failed())
                    return
                if code == Errors.RebalanceInProgressError.errno:
                    self._member.on_commit_rebalance_in_progress()
                    future.failure(
                        Errors.RebalanceInProgressError(
                            "Offset commit cannot be completed since the consumer group is executing "
                            "a rebalance at the moment. Complete the rebalance by calling poll() and "
                            "then retry the commit."
                        )
                    )
                    return
                if code in (Errors.UnknownMemberIdError.errno, Errors.IllegalGenerationError.errno):
                    logger.info("OffsetCommit with %s failed with %s", sent, err_name)
                    unchanged, preparing = self._member.commit_generation_state(sent)
                    if not unchanged and preparing:
                        future.failure(
                            Errors.RebalanceInProgressError(
                                "Offset commit cannot be completed since the member's generation is "
                                "already stale: it is taking part in a newer rebalance. Complete it "
                                "by calling poll() and then retry the commit."
                            )
                        )
                    else:
                        self._member.reset_state_on_response_error(
                            "OffsetCommit", code, code != Errors.IllegalGenerationError.errno
                        )
                        future.failure(self._member.commit_failed())
                    return
                future.failure(
                    Errors.KafkaError(f"unexpected error in offset commit of {tp}: {err_name}")
                )
                return
        if unauthorized:
            future.failure(
                Errors.TopicAuthorizationFailedError(
                    f"not authorized to commit to topics {sorted(unauthorized)}",
                    unauthorized_topics=unauthorized,
                )
            )
            return
        future.success(None)

    # =================================================================== auto-commit
    def auto_commit_offsets_async_now(self) -> Future[Any] | None:
        """Auto-commit the consumed offsets now, without waiting; the commit's future (None when
        there is nothing to commit or the coordinator must be found first)."""
        if not self.auto_commit_enabled or not self.subscriptions.assigned_partitions():
            return None
        offsets = self.subscriptions.all_consumed()
        if not offsets:
            return None
        logger.debug("auto-committing offsets %s", {str(k): v.offset for k, v in offsets.items()})
        if self._member.coordinator_unknown():
            self.commit_offsets_async(offsets, self._auto_commit_callback)
            return None
        return self._do_commit_offsets_async(offsets, self._auto_commit_callback)

    def _auto_commit_callback(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None
    ) -> None:
        if exc is None:
            logger.debug(
                "auto-commit of %s succeeded", {str(k): v.offset for k, v in offsets.items()}
            )
            return
        if getattr(exc, "retriable", False):
            logger.debug("auto-commit of offsets failed (will retry): %s", exc)
            self.next_auto_commit_timer.update_and_reset(
                self._member.rebalance_config.retry_backoff_ms
            )
        else:
            logger.warning(
                "auto-commit of offsets %s failed: %s",
                {str(k): v.offset for k, v in offsets.items()},
                exc,
            )

    def maybe_auto_commit_offsets_async(self, now_ms: int) -> None:
        """Auto-commit when ``auto.commit.interval.ms`` has passed (called by poll)."""
        if not self.auto_commit_enabled:
            return
        self.next_auto_commit_timer.update(now_ms)
        if self.next_auto_commit_timer.is_expired():
            self.next_auto_commit_timer.reset(self.auto_commit_interval_ms)
            self.auto_commit_offsets_async_now()

    def maybe_auto_commit_offsets_sync(self, timer: Timer) -> None:
        """Auto-commit and wait (close); failures are logged, wakeups propagate."""
        if not self.auto_commit_enabled:
            return
        offsets = self.subscriptions.all_consumed()
        try:
            logger.debug(
                "sending synchronous auto-commit of %s",
                {str(k): v.offset for k, v in offsets.items()},
            )
            if not self.commit_offsets_sync(offsets, timer):
                logger.debug("auto-commit of %s timed out before completion", offsets)
        except (Errors.WakeupError, Errors.InterruptError):
            raise
        except Exception as exc:
            logger.warning(
                "synchronous auto-commit of offsets %s failed: %s",
                {str(k): v.offset for k, v in offsets.items()},
                exc,
            )

    # ================================================================= committed offsets
    def fetch_committed_offsets(
        self, partitions: Iterable[TopicPartition], timer: Timer
    ) -> dict[TopicPartition, OffsetAndMetadata | None] | None:
        """The committed offset of each partition (None value: nothing committed).

        Returns None when ``timer`` expired first. Retriable errors (coordinator moves,
        unstable offsets under read_committed) are retried within the timer.
        """
        wanted = frozenset(partitions)
        if not wanted:
            return {}
        gen = self._member.generation_if_stable()
        pending = self._pending_committed_offset_request
        if pending is not None and (pending[0] != wanted or pending[1] != gen):
            self._pending_committed_offset_request = None
        attempts = 0
        while True:
            if not self._member.ensure_coordinator_ready(timer):
                return None
            pending = self._pending_committed_offset_request
            if pending is not None:
                future = pending[2]
            else:
                future = self._send_offset_fetch_request(wanted)
                self._pending_committed_offset_request = (wanted, gen, future)
            self._member.client.poll(timeout_ms=timer.remaining_ms, future=future)
            timer.update()
            if not future.is_done:
                return None
            self._pending_committed_offset_request = None
            if future.succeeded():
                return dict(future.value)
            exc = future.exception
            assert exc is not None
            # Java retries STALE_MEMBER_EPOCH while the member holds an epoch: the next request
            # carries the current one. Out of the group it fails, as UNKNOWN_MEMBER_ID does.
            stale = isinstance(exc, Errors.StaleMemberEpochError)
            if not getattr(exc, "retriable", False) and not (
                stale and self._member.generation_if_stable() is not None
            ):
                raise exc
            if timer.is_expired():
                return None
            attempts = self._wait_before_retry(timer, attempts)
            if timer.is_expired():
                return None

    def _send_offset_fetch_request(self, partitions: frozenset[TopicPartition]) -> Future[Any]:
        node = self._member.check_and_get_coordinator()
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics: list[OffsetFetchRequestTopic] = [
            {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()
        ]
        version = self._member.client.api_version(node, _OFFSET_FETCH)
        if version is None:
            # Unknown until connected: v7 carries require_stable and the single-group layout.
            version = 7
        body: OffsetFetchRequest = {"require_stable": self.require_stable}
        member = self._member.offset_fetch_member()
        if version >= 8:
            group: OffsetFetchRequestGroup = {
                "group_id": self._member.rebalance_config.group_id,
                "topics": topics,
            }
            if version >= 9 and member is not None:
                # KIP-848: a consumer-protocol member proves it is in the group (v9+); the
                # broker answers STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID when it is not.
                group["member_id"] = member.member_id
                group["member_epoch"] = member.generation_id
            body["groups"] = [group]
        else:
            body["group_id"] = self._member.rebalance_config.group_id
            body["topics"] = topics
        if self.require_stable and version < 7:
            if self.throw_on_fetch_stable_offset_unsupported:
                return Future().failure(
                    Errors.UnsupportedVersionError(
                        "the broker cannot wait for stable offsets (OffsetFetch v7+)"
                    )
                )
            logger.warning(
                "the broker does not support waiting for stable offsets under "
                "read_committed; committed offsets may include pending transactions"
            )
        logger.debug("fetching committed offsets for %s", [str(tp) for tp in sorted(partitions)])
        request = self._member.send_group_request(node, _OFFSET_FETCH, body, version=version)
        return self._member.compose(
            request,
            member or self._member.generation_snapshot(),
            self._handle_offset_fetch_response,
        )

    def _handle_offset_fetch_response(
        self, response: OffsetFetchResponse, sent: Generation, future: Future[Any]
    ) -> None:
        groups = response.get("groups") or []
        if groups:
            group = groups[0]
            top_code = int(group.get("error_code", 0) or 0)
            topics = group.get("topics") or []
        else:
            top_code = int(response.get("error_code", 0) or 0)
            topics = response.get("topics") or []
        if top_code:
            name = Errors.for_code(top_code).name
            logger.debug("OffsetFetch failed with %s", name)
            if top_code == Errors.CoordinatorLoadInProgressError.errno:
                future.failure(Errors.CoordinatorLoadInProgressError())
            elif top_code in (
                Errors.NotCoordinatorError.errno,
                Errors.CoordinatorNotAvailableError.errno,
            ):
                self._member.mark_coordinator_unknown(f"error response {name}")
                future.failure(_error_for(top_code))
            elif top_code == Errors.GroupAuthorizationFailedError.errno:
                future.failure(
                    Errors.GroupAuthorizationFailedError(
                        f"not authorized to access group {self._member.rebalance_config.group_id}"
                    )
                )
            elif top_code in (
                Errors.StaleMemberEpochError.errno,
                Errors.UnknownMemberIdError.errno,
            ):
                logger.error(
                    "OffsetFetch failed with %s for member %s epoch %s: the member is not part of "
                    "the group at that epoch (it left, was fenced or moved on)",
                    name,
                    sent.member_id,
                    sent.generation_id,
                )
                future.failure(
                    _error_for(
                        top_code,
                        f"OffsetFetch failed with {name} for group "
                        f"{self._member.rebalance_config.group_id}",
                    )
                )
            else:
                future.failure(
                    Errors.KafkaError(f"unexpected error in OffsetFetch response: {name}")
                )
            return
        offsets: dict[TopicPartition, OffsetAndMetadata | None] = {}
        unauthorized: set[str] = set()
        unstable: set[TopicPartition] = set()
        for topic in topics:
            tname = str(topic.get("name"))
            for part in topic.get("partitions") or []:
                tp = TopicPartition(tname, int(part.get("partition_index", -1)))
                code = int(part.get("error_code", 0) or 0)
                if code:
                    name = Errors.for_code(code).name
                    if code == Errors.UnknownTopicOrPartitionError.errno:
                        future.failure(Errors.KafkaError(f"topic or partition {tp} does not exist"))
                        return
                    if code == Errors.TopicAuthorizationFailedError.errno:
                        unauthorized.add(tname)
                        continue
                    if code == Errors.UnstableOffsetCommitError.errno:
                        unstable.add(tp)
                        continue
                    future.failure(
                        Errors.KafkaError(
                            f"unexpected error in OffsetFetch response for {tp}: {name}"
                        )
                    )
                    return
                offset = int(part.get("committed_offset", -1))
                if offset >= 0:
                    epoch = part.get("committed_leader_epoch", -1)
                    offsets[tp] = OffsetAndMetadata(
                        offset,
                        part.get("metadata") or "",
                        None if epoch is None or epoch < 0 else int(epoch),
                    )
                else:
                    logger.debug("found no committed offset for %s", tp)
                    offsets[tp] = None
        if unauthorized:
            future.failure(
                Errors.TopicAuthorizationFailedError(
                    f"not authorized to read offsets of topics {sorted(unauthorized)}",
                    unauthorized_topics=unauthorized,
                )
            )
        elif unstable:
            logger.info(
                "offsets of %s are not stable yet (pending transactional commit); retrying",
                [str(tp) for tp in sorted(unstable)],
            )
            future.failure(
                Errors.UnstableOffsetCommitError(
                    f"there are unstable offsets for {[str(tp) for tp in sorted(unstable)]}"
                )
            )
        else:
            future.success(offsets)

    def refresh_committed_offsets_if_needed(self, timer: Timer) -> bool:
        """Seek initializing partitions to their committed offsets; False on timeout."""
        initializing = self.subscriptions.initializing_partitions()
        if not initializing:
            return True
        offsets = self.fetch_committed_offsets(initializing, timer)
        if offsets is None:
            return False
        for tp, om in offsets.items():
            if om is None:
                continue
            if om.leader_epoch is not None:
                self.metadata.update_last_seen_epoch_if_newer(tp, om.leader_epoch)
            # The partition may have been revoked while the request was in flight.
            if self.subscriptions.is_assigned(tp):
                cluster = self.metadata.cluster
                leader = LeaderAndEpoch(cluster.leader_for(tp), cluster.leader_epoch(tp))
                self.subscriptions.seek_unvalidated(
                    tp, FetchPosition(om.offset, om.leader_epoch, leader)
                )
                logger.info(
                    "setting offset for partition %s to the committed offset %s", tp, om.offset
                )
        return True
