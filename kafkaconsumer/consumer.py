"""``KafkaConsumer``: the facade users call (Java ``KafkaConsumer`` / ``ClassicKafkaConsumer``).

A blocking, single-threaded API: every public method runs on the caller's thread and a second
thread calling in raises :class:`ConcurrentModificationError` (``wakeup()`` excepted).
``poll()`` drives everything: group membership (through the coordinator when ``group.id`` is
set), position validation and resets, fetching, and record hand-out. The next fetch is sent
before ``poll()`` returns records, so the broker works while the application does.
"""

from __future__ import annotations

import datetime
import logging
import re
import sys
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.close_options import CloseOptions
from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.consumer_iterator import IteratedBatch
from kafkaconsumer.interceptors import ConsumerInterceptors
from kafkaconsumer.internals.fetch.decoders import RecordDecoder
from kafkaconsumer.internals.fetch.fetcher import Fetch, FetchConfig, Fetcher
from kafkaconsumer.internals.fetch.offset_fetcher import OffsetFetcher
from kafkaconsumer.internals.subscription_state import (
    FetchPosition,
    LeaderAndEpoch,
    OffsetResetStrategy,
    SubscriptionState,
    current_leader,
)
from kafkaconsumer.internals.thread_guard import ThreadGuard
from kafkaconsumer.internals.topic_metadata_fetcher import TopicMetadataFetcher
from kafkaconsumer.internals.topic_partition_state import TopicPartitionState
from kafkaconsumer.listener import ConsumerRebalanceListener, NoOpConsumerRebalanceListener
from kafkaconsumer.metadata import ConsumerMetadata, PartitionInfo
from kafkaconsumer.metrics import FetchManagerMetrics, KafkaConsumerMetrics, Metrics
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.client_telemetry_reporter import ClientTelemetryReporter
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.record import ConsumerRecord
from kafkaconsumer.serialization import resolve_deserializer
from kafkaconsumer.structs import (
    ConsumerGroupMetadata,
    ConsumerRecords,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import Timer, to_timeout_ms

if TYPE_CHECKING:
    # Loaded when a consumer with a group.id is made: a consumer that assigns its partitions
    # (a short script, a Spark task) never pays for the group machinery's import.
    from kafkaconsumer.internals.group.consumer_group_member import ConsumerGroupMember

#: ``commit_async`` callback: ``callback(offsets, exception)`` (the exception is None on success).
OffsetCommitCallback = Callable[
    [Mapping[TopicPartition, OffsetAndMetadata], BaseException | None], Any
]
logger = logging.getLogger(__name__)

__all__ = ["KafkaConsumer"]

Timeout = int | float | datetime.timedelta | None

_DEFAULT_CLOSE_TIMEOUT_MS = 30000


def _next_offsets(
    positions: Mapping[TopicPartition, FetchPosition],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """Per partition returned, the position after its records with the epoch of the last one
    (Java 3.9 ``ConsumerRecords.nextOffsets``): what to commit once they are processed."""
    of_position = OffsetAndMetadata._of_position
    return {tp: of_position(p.offset, p.offset_epoch) for tp, p in positions.items()}


def _check_partitions(partitions: Any, what: str) -> list[TopicPartition]:
    if partitions is None:
        raise ValueError(f"{what}: the partition collection must not be None")
    if isinstance(partitions, (str, bytes)) or (
        isinstance(partitions, tuple) and len(partitions) == 2 and isinstance(partitions[0], str)
    ):
        raise TypeError(f"{what}: expected a collection of TopicPartition, got {partitions!r}")
    out: list[TopicPartition] = []
    for tp in partitions:
        if not isinstance(tp, tuple) or len(tp) != 2:
            raise TypeError(f"{what}: expected TopicPartition, got {tp!r}")
        topic, partition = tp
        if not isinstance(topic, str) or not topic.strip():
            raise ValueError(f"{what}: topic name must be a non-empty string, got {topic!r}")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise ValueError(f"{what}: partition must be an int >= 0, got {partition!r}")
        out.append(tp if isinstance(tp, TopicPartition) else TopicPartition(topic, partition))
    return out


class KafkaConsumer:
    """A Kafka consumer (Java ``KafkaConsumer``); configure with Java keys or snake_case kwargs.

    ``KafkaConsumer({"bootstrap.servers": "host:9092"}, group_id="g")``. Without ``group.id``
    only manual assignment (:meth:`assign`) and the offsets API are available. Use it as a
    context manager, or iterate it (``for record in consumer:``) to poll forever.

    Not thread-safe: only :meth:`wakeup` may be called from another thread.
    """

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *topics: str,
        _time: Time | None = None,
        **kwargs: Any,
    ) -> None:
        """Configure from Java keys in ``configs`` or snake_case ``kwargs`` and build the client
        (``_time`` replaces the clock in tests).

        Raises :class:`~kafkaconsumer.errors.ConfigError` for invalid configuration, and for
        topics passed as arguments (kafka-python's ``KafkaConsumer("orders", ...)``): call
        :meth:`subscribe` instead.
        """
        if isinstance(configs, str) or topics:
            from kafkaconsumer.config.porting import positional_topics_message

            given = ((configs,) if isinstance(configs, str) else ()) + topics
            raise Errors.ConfigError(positional_topics_message(given))
        self._closed = True  # until construction succeeds, close() has nothing to do
        self._closing = False
        self._guard = ThreadGuard("KafkaConsumer")
        self._time = _time if _time is not None else SYSTEM_TIME
        # A ConsumerConfig passed in is re-wrapped, not flattened: its client.id and the
        # warnings it already logged carry over.
        self.config = ConsumerConfig(configs, **kwargs)
        cfg = self.config
        self._client_id = cfg["client.id"]
        self._group_id = cfg["group.id"]
        self._default_api_timeout_ms = int(cfg["default.api.timeout.ms"])
        self._request_timeout_ms = int(cfg["request.timeout.ms"])
        self._retry_backoff_ms = int(cfg["retry.backoff.ms"])
        self._read_committed = cfg["isolation.level"] == "read_committed"

        # Everything that can reject the configuration comes before any socket is opened.
        self._key_deserializer = resolve_deserializer(
            cfg["key.deserializer"], configs=cfg, is_key=True
        )
        self._value_deserializer = resolve_deserializer(
            cfg["value.deserializer"], configs=cfg, is_key=False
        )
        self._interceptors = ConsumerInterceptors.from_config(cfg)
        # Whether the next poll_arrow() still has the allocator's thresholds to set (see
        # record/malloc_tuning.py); the user's thread only.
        self._tune_malloc = bool(cfg["arrow.malloc.tuning"])
        self._subscriptions = SubscriptionState(str(cfg["auto.offset.reset"]))
        self._metadata = ConsumerMetadata(cfg, time=self._time)
        self._metrics = Metrics.from_config(cfg, time=self._time)
        self._fetch_metrics = FetchManagerMetrics(self._metrics, self._client_id)
        self._consumer_metrics = KafkaConsumerMetrics(self._metrics, self._client_id)
        self._net = NetworkClient(
            NetworkSettings.from_config(cfg), time=self._time, metadata=self._metadata
        )
        self._client = ConsumerNetworkClient(self._net, self._metadata)
        self._telemetry = ClientTelemetryReporter.install(
            self._client, self._metrics, cfg, self._time
        )
        try:
            self._fetcher = Fetcher(
                self._client,
                self._metadata,
                self._subscriptions,
                FetchConfig.from_config(cfg, fetch_sessions=bool(cfg["enable.fetch.sessions"])),
                time=self._time,
                metrics=self._fetch_metrics,
                key_deserializer=self._key_deserializer,
                value_deserializer=self._value_deserializer,
            )
            self._offset_fetcher = OffsetFetcher(
                self._client, self._metadata, self._subscriptions, cfg, time=self._time
            )
            self._topic_metadata_fetcher = TopicMetadataFetcher(
                self._client, self._retry_backoff_ms, self._last_error_note
            )
            self._coordinator: ConsumerGroupMember | None = None
            if self._group_id is not None:
                from kafkaconsumer.internals.group.consumer_delegate_creator import (
                    consumer_member_class,
                )

                # One member per group protocol, chosen once (Java's ConsumerDelegateCreator).
                self._coordinator = consumer_member_class(cfg)(
                    cfg,
                    self._client,
                    self._subscriptions,
                    self._metadata,
                    time=self._time,
                    interceptors=self._interceptors,
                    metrics=self._metrics,
                )
        except BaseException:
            self._client.close()
            raise
        # Responses to fetches are read off the sockets on a thread of their own while the
        # user's thread handles the records of the previous ones.
        self._client.start_background_receive(
            self._fetcher.has_fetch_in_flight, "kafkaconsumer-network-thread | " + self._client_id
        )
        self._fetcher.send_after_background_responses(self._client.on_network_thread)
        self._cached_all_positions = False
        # What _positions_mark() was when every position was last found valid (user's thread
        # only): until it changes, poll() skips the walk over the positions.
        self._positions_settled_at: tuple[Any, ...] | None = None
        # The poll() clock's millisecond of the last non-blocking network poll after records
        # were handed out (user's thread only).
        self._network_polled_ms = -1
        # The poll being handed out by ``for record in consumer:`` (user thread only).
        self._iterating: IteratedBatch | None = None
        self._wakeup_requested = threading.Event()
        self._closed = False
        logger.debug("kafka consumer %s created", self._client_id)

    # -- single-thread guard (Java acquire/release) ---------------------------------------
    def _acquire(self) -> None:
        # The caller is the guarded call: its frame ends the entry should its release be
        # skipped by an interrupt (see ThreadGuard).
        self._guard.acquire(sys._getframe(1))

    def _release(self) -> None:
        self._guard.release()

    def _acquire_and_ensure_open(self) -> None:
        self._guard.acquire(sys._getframe(1))
        if self._closed:
            self._release()
            raise Errors.IllegalStateError("This consumer has already been closed.")

    def _timer(self, timeout: Timeout, default_ms: int | None = None) -> Timer:
        ms = to_timeout_ms(
            timeout, self._default_api_timeout_ms if default_ms is None else default_ms
        )
        return Timer(self._time, ms)

    def _require_group(self) -> ConsumerGroupMember:
        if self._coordinator is None:
            raise Errors.InvalidGroupIdError(
                "To use the group management or offset commit APIs, you must provide a valid "
                "group.id in the consumer configuration."
            )
        return self._coordinator

    # -- assignment and subscription -------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manually assign ``partitions`` (replacing any previous manual assignment).

        An empty collection is the same as :meth:`unsubscribe`. Cannot be mixed with
        :meth:`subscribe`.
        """
        self._acquire_and_ensure_open()
        try:
            tps = _check_partitions(partitions, "assign")
            if not tps:
                self._unsubscribe()
                return
            self._fetcher.clear_buffered_data_for_unassigned_partitions(tps)
            if self._coordinator is not None:
                # No rebalance follows a manual change: commit what leaves now.
                self._coordinator.commits.maybe_auto_commit_offsets_async(self._time.monotonic_ms())
            logger.info("assigned to partition(s): %s", ", ".join(sorted(map(str, tps))))
            if self._subscriptions.assign_from_user(tps):
                self._metadata.set_topics(self._subscriptions.metadata_topics())
        finally:
            self._release()

    def assignment(self) -> set[TopicPartition]:
        """The partitions currently assigned to this consumer."""
        self._acquire_and_ensure_open()
        try:
            return set(self._subscriptions.assigned_partitions())
        finally:
            self._release()

    def subscription(self) -> set[str]:
        """The subscribed topics (empty under manual assignment)."""
        self._acquire_and_ensure_open()
        try:
            return set(self._subscriptions.subscription())
        finally:
            self._release()

    def subscribe(
        self,
        topics: Iterable[str] | re.Pattern[str],
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join the group for ``topics`` (a list of names, or a compiled ``re.Pattern``).

        ``listener`` is a :class:`~kafkaconsumer.listener.ConsumerRebalanceListener` called
        from inside :meth:`poll`. An empty list is the same as :meth:`unsubscribe`.
        """
        self._acquire_and_ensure_open()
        try:
            self._require_group()
            if listener is not None and not any(
                callable(getattr(listener, m, None))
                for m in ("on_partitions_revoked", "on_partitions_assigned")
            ):
                raise TypeError(
                    f"listener must be a ConsumerRebalanceListener, got {type(listener).__name__}"
                )
            if listener is None:
                listener = NoOpConsumerRebalanceListener()
            if isinstance(topics, re.Pattern):
                logger.info("subscribed to pattern: %r", topics.pattern)
                self._subscriptions.subscribe_pattern(topics, listener)
                # Every topic's metadata, so the coordinator's poll can match the pattern.
                self._metadata.set_topics(None)
                return
            if isinstance(topics, (str, bytes)):
                raise TypeError(
                    "subscribe() takes a collection of topic names or a re.Pattern, "
                    f"not a single {type(topics).__name__}"
                )
            names = list(topics)
            for t in names:
                if not isinstance(t, str) or not t.strip():
                    raise ValueError(f"topic names must be non-empty strings, got {t!r}")
            if not names:
                self._unsubscribe()
                return
            keep = [tp for tp in self._subscriptions.assigned_partitions() if tp.topic in names]
            self._fetcher.clear_buffered_data_for_unassigned_partitions(keep)
            logger.info("subscribed to topic(s): %s", ", ".join(sorted(names)))
            if self._subscriptions.subscribe(names, listener):
                self._metadata.set_topics(self._subscriptions.metadata_topics())
        finally:
            self._release()

    def unsubscribe(self) -> None:
        """Leave the group (if any) and drop the subscription and the assignment."""
        self._acquire_and_ensure_open()
        try:
            self._unsubscribe()
        finally:
            self._release()

    def _unsubscribe(self) -> None:
        self._fetcher.clear_buffered_data_for_unassigned_partitions(())
        if self._coordinator is not None:
            self._coordinator.on_leave_prepare()
            self._coordinator.maybe_leave_group("the consumer unsubscribed from all topics")
        self._subscriptions.unsubscribe()
        self._metadata.set_topics(())
        logger.info("unsubscribed from all topics or patterns and assigned partitions")

    # -- poll ------------------------------------------------------------------------------
    def poll(self, timeout_ms: Timeout = 0) -> ConsumerRecords:
        """Fetch records, waiting up to ``timeout_ms`` (int ms or ``timedelta``) for some.

        Returns at most ``max.poll.records`` records. Drives the group protocol, offset resets
        and fetching; raises :class:`WakeupError` if :meth:`wakeup` was called.
        """
        fetch = self._poll(timeout_ms, None, None)
        if fetch is None:
            return ConsumerRecords.EMPTY
        records = ConsumerRecords._of(
            fetch.records, fetch.num_records, _next_offsets(fetch.positions)
        )
        if self._interceptors:
            records = self._interceptors.on_consume(records)
        return records

    def poll_arrow(
        self,
        timeout_ms: Timeout = 0,
        max_records: int | None = None,
        *,
        include_headers: bool = False,
    ) -> Any:
        """:meth:`poll`, with the records as one ``pyarrow.RecordBatch``.

        The columns are Spark's Kafka source schema (``kafkaconsumer.record.arrow.SCHEMA``; with
        ``include_headers`` also ``headers``), decoded from the fetched batches without a
        Python object per record. Keys and values are the raw bytes. Positions, auto-commit and
        ``commit_sync()`` move exactly as with :meth:`poll`; at most ``max_records`` (default
        ``max.poll.records``) rows. The two may be mixed on one consumer. On glibc the first
        call sets the process's allocator thresholds for large blocks (``arrow.malloc.tuning``).
        Needs ``pyarrow``; raises :class:`IllegalStateError` when deserializers or
        interceptors are configured (they work on record objects: use :meth:`poll`).
        """
        from kafkaconsumer.internals.fetch.arrow_decoder import ArrowDecoder
        from kafkaconsumer.record import arrow, malloc_tuning

        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ValueError(f"max_records must be a positive int, not {max_records!r}")
        if (
            self._key_deserializer is not None
            or self._value_deserializer is not None
            or self._interceptors
        ):
            raise Errors.IllegalStateError(
                "poll_arrow() returns raw bytes and runs no interceptors: configure no "
                "key.deserializer/value.deserializer/interceptor.classes, or use poll()"
            )
        if self._tune_malloc:
            self._tune_malloc = False
            malloc_tuning.tune_for_large_blocks()
        fetch = self._poll(timeout_ms, max_records, ArrowDecoder())
        if fetch is None or not fetch.records:
            return arrow.empty_batch(include_headers)
        return arrow.join_records(fetch.records.values(), include_headers)

    def _poll(
        self, timeout_ms: Timeout, max_records: int | None, decoder: RecordDecoder | None
    ) -> Fetch | None:
        """One poll: the records (decoded by ``decoder``; None: record objects through the
        deserializers), or None when ``timeout_ms`` passed with none."""
        ms = to_timeout_ms(timeout_ms, 0)
        self._acquire_and_ensure_open()
        # The network thread receives while the Arrow path decodes (its column loops leave the
        # GIL to other threads); record objects are made with the GIL held throughout, and a
        # thread receiving meanwhile only waits for the GIL (measured on two cores: poll()
        # read 1 KiB values at 1.2-1.4 M records/s with it, 1.7-1.8 M without, at less CPU),
        # so poll() receives its own responses. So does poll_arrow() while responses are large
        # enough for reading threads, which take them off the socket without the GIL whoever
        # polls: the network thread's own rounds then only cost (measured on two cores:
        # poll_arrow() read 1 KiB values at 1.8-2.2 M records/s without it, 0.7-2.0 M with it,
        # at 10-20% less CPU per record; 100-byte lz4 values at 24 M against 17-24 M).
        self._client.set_background_receive(
            decoder is not None and not self._client.responses_on_reading_threads()
        )
        self._fetcher.set_prefetch_waits_for_node(decoder is None)
        # The poll metrics read the poll's own clock (two readings a poll instead of three).
        timer = Timer(self._time, ms)
        self._consumer_metrics.record_poll_start(timer.current_time_ms)
        try:
            if self._subscriptions.has_no_subscription_or_user_assignment():
                raise Errors.IllegalStateError(
                    "Consumer is not subscribed to any topics or assigned any partitions"
                )
            if self._coordinator is not None:
                # KIP-983: revocations delayed by the application complete now.
                self._coordinator.begin_poll()
            while True:
                self._maybe_trigger_wakeup()
                self._update_assignment_metadata_if_needed(timer)
                fetch = self._poll_for_fetches(timer, max_records, decoder)
                if not fetch.is_empty():
                    # Pipelining: the next fetch goes out while the user handles these records,
                    # and what has arrived of a fetch in flight is read now (Java polls the
                    # network whenever a request is pending): the broker goes on sending the
                    # next response while these records are handed out, instead of stopping
                    # once the socket's buffer is full until a poll waits for it (on two
                    # cores that pause was a third of a 1 KiB read's time). At most once per
                    # millisecond: a non-blocking network poll costs about 12 us, a tenth of
                    # a poll() of 500 small records. While a partition still waits for its
                    # offset reset or validation, its answer is read on every poll: that
                    # partition fetches meanwhile. Nor while every response in flight is
                    # arriving through a reading thread (large responses) and nothing waits
                    # to go out: that poll would find nothing, and the thread's end wakes the
                    # next one.
                    # (The background receiver writes a fetch out as soon as it is queued.)
                    sent = self._fetcher.send_fetches()
                    now_ms = timer.current_time_ms
                    poll_network = not self._cached_all_positions or (
                        not self._client.receives_in_background
                        and (
                            sent > 0
                            or (
                                now_ms != self._network_polled_ms
                                and self._fetcher.has_fetch_in_flight()
                            )
                        )
                    )
                    if (
                        poll_network
                        and sent == 0
                        and self._cached_all_positions
                        and self._client.only_receiving()
                    ):
                        self._network_polled_ms = now_ms  # asked again next millisecond
                        poll_network = False
                    if poll_network:
                        self._client.poll_no_wakeup()
                        self._network_polled_ms = now_ms
                        # A response that arrived now has its prefetch sent before the next
                        # poll() decodes it, as one that arrives while poll() waits.
                        if self._fetcher.send_fetches() > 0:
                            self._client.poll_no_wakeup()
                    return fetch
                timer.update()
                if timer.is_expired():
                    return None
        except Errors.WakeupError:
            self._wakeup_requested.clear()
            raise
        finally:
            timer.update()
            self._consumer_metrics.record_poll_end(timer.current_time_ms)
            self._release()

    def _maybe_trigger_wakeup(self) -> None:
        # Records may already be buffered, so poll() might not reach the network client; a
        # non-blocking client poll delivers a pending wakeup() (the client's flag is the truth:
        # another blocking call may have consumed it already).
        if self._wakeup_requested.is_set():
            self._wakeup_requested.clear()
            self._client.poll(timeout_ms=0)

    def _update_assignment_metadata_if_needed(self, timer: Timer) -> bool:
        if self._coordinator is not None and not self._coordinator.poll(timer):
            return False
        return self._update_fetch_positions(timer)

    def _positions_mark(self) -> tuple[Any, ...] | None:
        """What the positions' validity depends on: every partition's fetch state (one
        counter of transitions), the assignment and the metadata snapshot (leaders); None while
        a validation error waits to be raised."""
        if self._offset_fetcher.has_validation_error():
            return None
        return (
            TopicPartitionState.last_transition,
            self._subscriptions.assignment_id,
            self._metadata.cluster,
        )

    def _update_fetch_positions(self, timer: Timer) -> bool:
        mark = self._positions_mark()
        if mark is not None and mark == self._positions_settled_at:
            # Nothing moved since every position was valid: no leader to follow, nothing to
            # validate or reset.
            self._cached_all_positions = True
            return True
        self._cached_all_positions = self._validate_positions(raise_error=True)
        if self._cached_all_positions:
            self._positions_settled_at = mark
            return True
        self._positions_settled_at = None
        if (
            self._coordinator is not None
            and not self._coordinator.commits.refresh_committed_offsets_if_needed(timer)
        ):
            return False
        self._subscriptions.reset_initializing_positions()
        self._offset_fetcher.reset_positions_if_needed()
        return True

    def _validate_positions(self, *, raise_error: bool) -> bool:
        """Point positions at their current leaders and send the validations due; True when
        every assigned partition has a valid position."""
        self._offset_fetcher.validate_positions_if_needed(raise_error=raise_error)
        return self._subscriptions.has_all_fetch_positions()

    def _advance_fetch_state(self) -> float | None:
        """``poll()``'s work on the fetch state short of handing records out, run between the
        network waits of a blocking call (see :meth:`_keep_fetching`): positions follow moved
        leaders and are validated, due resets are sent, buffered answers without records (a
        leader moved, a long poll ended empty) are dropped, and due fetches go out. Committed-offset
        lookups and errors are left to ``poll()``. Returns the longest the wait may last
        before this runs again (``retry.backoff.ms`` while a position is pending, as in
        ``poll()``), else None."""
        all_positions = self._validate_positions(raise_error=False)
        if not all_positions:
            self._offset_fetcher.reset_positions_if_needed(raise_error=False)
        self._fetcher.retire_answers_without_records()
        self._fetcher.send_fetches()
        return None if all_positions else float(self._retry_backoff_ms)

    def _keep_fetching(self) -> AbstractContextManager[None]:
        # A blocking call keeps the fetch state moving while it waits (as Java's background
        # thread and librdkafka's do), so the next poll() finds data from a moved leader
        # buffered; positions still move only by what poll() hands out.
        return self._client.between_waits(self._advance_fetch_state)

    def _poll_for_fetches(
        self, timer: Timer, max_records: int | None = None, decoder: RecordDecoder | None = None
    ) -> Fetch:
        poll_ms = timer.remaining_ms
        if self._coordinator is not None:
            poll_ms = min(
                poll_ms, max(0, self._coordinator.time_to_next_poll(timer.current_time_ms))
            )
        fetch = self._fetcher.collect_fetch(max_records, decoder)
        if not fetch.is_empty():
            return fetch
        self._fetcher.send_fetches()
        # An offset lookup may be backing off; do not block past its retry.
        if not self._cached_all_positions and poll_ms > self._retry_backoff_ms:
            poll_ms = self._retry_backoff_ms
        poll_timer = Timer(self._time, poll_ms)
        # A response may have landed (on another polling thread) since collect_fetch().
        if not self._fetcher.has_available_fetches():
            # A new snapshot: a refresh, or new leaders named by a fetch answer (KIP-951).
            cluster = self._metadata.cluster
            while True:
                self._client.poll(timeout_ms=poll_timer.remaining_ms)
                poll_timer.update()
                if self._fetcher.has_available_fetches():
                    # The next fetch (a prefetch from where this response ends) goes out
                    # before the response's records are decoded: the broker serves it
                    # meanwhile.
                    if self._fetcher.send_fetches() > 0 and not self._client.receives_in_background:
                        self._client.poll_no_wakeup()
                    break
                if (
                    poll_timer.is_expired()
                    or self._metadata.cluster is not cluster
                    or not self._cached_all_positions
                ):
                    # New metadata may name new leaders: poll() points the positions at them
                    # and validates them first, as Java's loop does after every network poll;
                    # fetching on would ask the old leader until this wait ends. While a
                    # position waits for a reset or a validation, each answer lets poll() send
                    # the next step at once (a reset is followed by a validation) instead of
                    # at the end of this wait.
                    break
                # Responses may have freed nodes for another fetch (or asked for a reset).
                self._fetcher.send_fetches()
        timer.update(poll_timer.current_time_ms)
        return self._fetcher.collect_fetch(max_records, decoder)

    # -- positions -------------------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Fetch ``partition`` from ``offset`` on the next :meth:`poll`.

        ``offset`` may be an ``OffsetAndMetadata`` carrying a leader epoch, which is then
        validated against the leader (truncation detection) where the broker supports it.
        """
        self._acquire_and_ensure_open()
        try:
            tp = _check_partitions([partition], "seek")[0]
            epoch = None
            if isinstance(offset, OffsetAndMetadata):
                epoch = offset.leader_epoch
                offset = offset.offset
            if not isinstance(offset, int) or isinstance(offset, bool):
                raise TypeError(f"seek offset must be an int, got {offset!r}")
            if offset < 0:
                raise ValueError("seek offset must not be a negative number")
            if epoch is not None:
                self._metadata.update_last_seen_epoch_if_newer(tp, epoch)
            logger.info("seeking to offset %d for partition %s", offset, tp)
            self._subscriptions.seek_unvalidated(
                tp, FetchPosition(offset, epoch, self._current_leader(tp))
            )
        finally:
            self._release()

    def _current_leader(self, tp: TopicPartition) -> LeaderAndEpoch:
        return current_leader(self._metadata.cluster, tp)

    def _reset_to(
        self,
        partitions: Collection[TopicPartition] | None,
        strategy: OffsetResetStrategy,
        what: str,
    ) -> None:
        self._acquire_and_ensure_open()
        try:
            if partitions is None:
                tps = list(self._subscriptions.assigned_partitions())
            else:
                tps = _check_partitions(partitions, what)
                if not tps:
                    tps = list(self._subscriptions.assigned_partitions())
            for tp in tps:
                logger.info("%s of partition %s", what, tp)
            self._subscriptions.request_offset_reset(tps, strategy)
        finally:
            self._release()

    def seek_to_beginning(self, partitions: Collection[TopicPartition] | None = None) -> None:
        """Move to the first offset of ``partitions`` (all assigned when None or empty).

        Lazy: the lookup happens in the next :meth:`poll` or :meth:`position`.
        """
        self._reset_to(partitions, OffsetResetStrategy.EARLIEST, "seeking to beginning")

    def seek_to_end(self, partitions: Collection[TopicPartition] | None = None) -> None:
        """Move to the end of ``partitions`` (all assigned when None or empty); lazy."""
        self._reset_to(partitions, OffsetResetStrategy.LATEST, "seeking to end")

    def position(self, partition: TopicPartition, timeout_ms: Timeout = None) -> int:
        """The offset of the next record to be fetched from ``partition``.

        Blocks (up to ``timeout_ms``, default ``default.api.timeout.ms``) when the position must
        first be looked up; raises :class:`KafkaTimeoutError` if that takes too long.
        """
        self._acquire_and_ensure_open()
        try:
            tp = _check_partitions([partition], "position")[0]
            if not self._subscriptions.is_assigned(tp):
                raise Errors.IllegalStateError(
                    "You can only check the position for partitions assigned to this consumer."
                )
            timer = self._timer(timeout_ms)
            with self._keep_fetching():
                return self._wait_for_position(tp, timer)
        finally:
            self._release()

    def _wait_for_position(self, tp: TopicPartition, timer: Timer) -> int:
        while True:
            pos = self._subscriptions.valid_position(tp)
            if pos is not None:
                return pos.offset
            self._update_fetch_positions(timer)
            pos = self._subscriptions.valid_position(tp)
            if pos is not None:
                return pos.offset
            timer.update()
            if timer.is_expired():
                break
            self._client.poll(timeout_ms=min(timer.remaining_ms, self._retry_backoff_ms))
            timer.update()
        raise Errors.KafkaTimeoutError(
            f"Timeout of {timer.timeout_ms}ms expired before the position for partition "
            f"{tp} could be determined{self._last_error_note()}"
        )

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions``; :meth:`poll` returns none of their records until
        :meth:`resume`. Buffered data is kept. Raises when a partition is not assigned."""
        self._acquire_and_ensure_open()
        try:
            for tp in _check_partitions(partitions, "pause"):
                logger.debug("pausing partition %s", tp)
                self._subscriptions.pause(tp)
        finally:
            self._release()

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again after :meth:`pause`."""
        self._acquire_and_ensure_open()
        try:
            for tp in _check_partitions(partitions, "resume"):
                logger.debug("resuming partition %s", tp)
                self._subscriptions.resume(tp)
        finally:
            self._release()

    def paused(self) -> set[TopicPartition]:
        """The partitions paused by :meth:`pause`."""
        self._acquire_and_ensure_open()
        try:
            return set(self._subscriptions.paused_partitions())
        finally:
            self._release()

    # -- offsets API -----------------------------------------------------------------------
    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: Timeout = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition (one ListOffsets request per leader)."""
        self._acquire_and_ensure_open()
        try:
            tps = _check_partitions(partitions, "beginning_offsets")
            with self._keep_fetching():
                return self._offset_fetcher.beginning_offsets(tps, self._timer(timeout_ms))
        finally:
            self._release()

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: Timeout = None
    ) -> dict[TopicPartition, int]:
        """The end offset of each partition: the high watermark, or the last stable offset
        under ``read_committed``."""
        self._acquire_and_ensure_open()
        try:
            tps = _check_partitions(partitions, "end_offsets")
            with self._keep_fetching():
                return self._offset_fetcher.end_offsets(tps, self._timer(timeout_ms))
        finally:
            self._release()

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: Timeout = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the earliest offset whose timestamp is >= the given one
        (milliseconds since the epoch); None when no such record exists."""
        self._acquire_and_ensure_open()
        try:
            if timestamps is None or not isinstance(timestamps, Mapping):
                raise TypeError(
                    "offsets_for_times takes a mapping of TopicPartition to timestamp (ms)"
                )
            tps = _check_partitions(list(timestamps), "offsets_for_times")
            query: dict[TopicPartition, int] = {}
            for tp in tps:
                ts = timestamps[tp]
                if not isinstance(ts, int) or isinstance(ts, bool):
                    raise TypeError(f"timestamp for {tp} must be an int, got {ts!r}")
                query[tp] = ts
            with self._keep_fetching():
                return self._offset_fetcher.offsets_for_times(query, self._timer(timeout_ms))
        finally:
            self._release()

    def current_lag(self, partition: TopicPartition) -> int | None:
        """Lag of ``partition`` from the cached end offset (no network wait); None when the
        end offset is not known yet (a lookup is then started in the background)."""
        self._acquire_and_ensure_open()
        try:
            tp = _check_partitions([partition], "current_lag")[0]
            lag = self._subscriptions.partition_lag(tp, self._read_committed)
            if lag is None:
                subs = self._subscriptions
                if subs.partition_end_offset(
                    tp, self._read_committed
                ) is None and not subs.partition_end_offset_requested(tp):
                    logger.info("requesting the end offset of %s to compute lag", tp)
                    subs.request_partition_end_offset(tp)
                    self._offset_fetcher.request_end_offset_async(tp)
            return lag
        finally:
            self._release()

    # -- metadata --------------------------------------------------------------------------
    def list_topics(self, timeout_ms: Timeout = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the user may see, with its partitions (one Metadata request)."""
        self._acquire_and_ensure_open()
        try:
            with self._keep_fetching():
                return self._topic_metadata_fetcher.fetch(None, self._timer(timeout_ms))
        finally:
            self._release()

    def partitions_for(self, topic: str, timeout_ms: Timeout = None) -> list[PartitionInfo]:
        """The partitions of ``topic`` (from the metadata cache, else one Metadata request).

        Returns an empty list when the topic does not exist.
        """
        self._acquire_and_ensure_open()
        try:
            if not isinstance(topic, str) or not topic.strip():
                raise ValueError(f"topic must be a non-empty string, got {topic!r}")
            cached = self._metadata.cluster.partitions_for_topic(topic)
            if cached:
                return sorted(cached, key=lambda pi: pi.partition)
            with self._keep_fetching():
                found = self._topic_metadata_fetcher.fetch([topic], self._timer(timeout_ms))
            return found.get(topic, [])
        finally:
            self._release()

    def _last_error_note(self) -> str:
        """Why the cluster could not be reached, for a timeout message (empty when unknown):
        a timeout alone hides a wrong address or security.protocol."""
        last = self._metadata.last_error
        note = str(last) if last is not None else self._net.connection_errors()
        return f" (last error: {note})" if note else ""

    # -- group API (delegates to the coordinator) -------------------------------------------
    def _offsets_arg(
        self, offsets: Mapping[TopicPartition, Any] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            consumed = self._subscriptions.all_consumed()
            if self._iterating is not None:
                # Mid-iteration, the records not handed out yet are not consumed.
                for tp, om in self._not_handed_out(self._iterating).items():
                    if tp in consumed:
                        consumed[tp] = om
            return consumed
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in offsets.items():
            tp = _check_partitions([tp], "commit")[0]
            if isinstance(om, OffsetAndMetadata):
                out[tp] = om
            elif isinstance(om, int) and not isinstance(om, bool):
                out[tp] = OffsetAndMetadata(om)
            else:
                raise TypeError(
                    f"commit offset for {tp} must be OffsetAndMetadata or int, got {om!r}"
                )
            epoch = out[tp].leader_epoch
            if epoch is not None:
                self._metadata.update_last_seen_epoch_if_newer(tp, epoch)
        return out

    def commit_sync(
        self, offsets: Mapping[TopicPartition, Any] | None = None, timeout_ms: Timeout = None
    ) -> None:
        """Commit ``offsets`` (default: the current positions) and wait for the answer.

        Raises :class:`CommitFailedError` when the group has moved on and
        :class:`KafkaTimeoutError` when ``timeout_ms`` passes first.
        """
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group()
            to_commit = self._offsets_arg(offsets)
            timer = self._timer(timeout_ms)
            started_ns = self._time.nanoseconds()
            try:
                # The fetch state moves on while the commit waits, which may be long while a
                # coordinator moves or a broker shuts down: fetches due now (a partition whose
                # data was just handed out) go out with the commit, and a leader that moves
                # meanwhile is validated and fetched from, so that the next poll() finds the
                # data buffered.
                with self._keep_fetching():
                    committed = coordinator.commits.commit_offsets_sync(to_commit, timer)
                if not committed:
                    raise Errors.KafkaTimeoutError(
                        f"Timeout of {timer.timeout_ms}ms expired before successfully "
                        f"committing offsets {to_commit}{self._last_error_note()}"
                    )
            finally:
                self._consumer_metrics.record_commit_sync(self._time.nanoseconds() - started_ns)
        finally:
            self._release()

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, Any] | None = None,
        callback: OffsetCommitCallback | None = None,
    ) -> None:
        """Commit ``offsets`` (default: the current positions) without waiting;
        ``callback(offsets, exception)`` runs in a later :meth:`poll` or commit call."""
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group()
            coordinator.commits.commit_offsets_async(self._offsets_arg(offsets), callback)
        finally:
            self._release()

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: Timeout = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The last committed offsets of ``partitions`` (None for those with none)."""
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group()
            tps = _check_partitions(partitions, "committed")
            timer = self._timer(timeout_ms)
            started_ns = self._time.nanoseconds()
            try:
                with self._keep_fetching():
                    result = coordinator.commits.fetch_committed_offsets(set(tps), timer)
            finally:
                self._consumer_metrics.record_committed(self._time.nanoseconds() - started_ns)
            if result is None:
                raise Errors.KafkaTimeoutError(
                    f"Timeout of {timer.timeout_ms}ms expired before the last committed offset "
                    f"for partitions {sorted(map(str, tps))} could be determined"
                    f"{self._last_error_note()}"
                )
            out: dict[TopicPartition, OffsetAndMetadata | None] = {tp: None for tp in tps}
            for tp, om in result.items():
                out[tp] = om
                if om is not None and om.leader_epoch is not None:
                    self._metadata.update_last_seen_epoch_if_newer(tp, om.leader_epoch)
            return out
        finally:
            self._release()

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id, generation, member id and instance id (for transactional producers)."""
        self._acquire_and_ensure_open()
        try:
            metadata: ConsumerGroupMetadata = self._require_group().group_metadata()
            return metadata
        finally:
            self._release()

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Ask the group to rebalance at the next :meth:`poll` (no-op during a rebalance)."""
        self._acquire_and_ensure_open()
        try:
            if self._coordinator is None:
                raise Errors.IllegalStateError(
                    "Tried to force a rebalance but consumer does not have a group."
                )
            self._coordinator.enforce_rebalance(reason or "rebalance enforced by user")
        finally:
            self._release()

    # KIP-983 -------------------------------------------------------------------------------
    def to_be_revoked(self) -> set[TopicPartition]:
        """Partitions the group will take away at the next poll (cooperative rebalance)."""
        self._acquire_and_ensure_open()
        try:
            if self._coordinator is None:
                return set()
            return set(self._coordinator.to_be_revoked())
        finally:
            self._release()

    def lost_partitions(self) -> set[TopicPartition]:
        """Partitions lost without a clean revocation since the last poll (stop committing)."""
        self._acquire_and_ensure_open()
        try:
            if self._coordinator is None:
                return set()
            return set(self._coordinator.lost_partitions())
        finally:
            self._release()

    def delay_revoke(self, partitions: Iterable[TopicPartition]) -> bool:
        """Keep ``partitions`` (about to be revoked) for one more poll; False when refused."""
        self._acquire_and_ensure_open()
        try:
            coordinator = self._require_group()
            return bool(coordinator.delay_revoke(_check_partitions(partitions, "delay_revoke")))
        finally:
            self._release()

    # -- misc ------------------------------------------------------------------------------
    def metrics(self) -> dict[Any, float]:
        """The consumer's metrics as ``{MetricName: value}`` (Java ``metrics()``)."""
        return self._metrics.metrics()

    def client_instance_id(self, timeout_ms: Timeout = None) -> uuid.UUID | None:
        """The id the brokers know this client's pushed metrics by (KIP-714; Java
        ``clientInstanceId(Duration)``), asking a broker for it when it is not known yet and
        waiting up to ``timeout_ms`` (default ``default.api.timeout.ms``); None when it did not
        come in time or the cluster takes no client metrics.

        Raises ``IllegalStateError`` when ``enable.metrics.push`` is false, and ``ValueError``
        for a negative timeout.
        """
        ms = to_timeout_ms(timeout_ms, self._default_api_timeout_ms)
        self._acquire_and_ensure_open()
        try:
            return ClientTelemetryReporter.instance_id_of(self._telemetry, self._client, ms)
        finally:
            self._release()

    def wakeup(self) -> None:
        """Make the blocked (or next) :meth:`poll` raise :class:`WakeupError`.

        Thread-safe, and safe in a signal handler: ``signal.signal(signal.SIGINT, lambda *_:
        consumer.wakeup())`` stops a poll loop at its next ``poll()``, as Java's shutdown hook
        does, so that the records being processed are finished (and committed) first.
        """
        if self._guard.held_by_current_thread():
            # Called on the thread that is inside the consumer: a signal handler interrupting
            # it (or a callback it runs), maybe while it holds a lock that waking up takes.
            # Another thread wakes it up, once that lock is free.
            threading.Thread(target=self._wake_up, name="kafkaconsumer-wakeup", daemon=True).start()
            return
        self._wake_up()

    def _wake_up(self) -> None:
        self._wakeup_requested.set()
        self._client.wakeup()

    def close(
        self, timeout_ms: Timeout | CloseOptions = None, leave_group: bool | None = None
    ) -> None:
        """Commit (auto-commit), leave the group, close connections; returns within
        ``timeout_ms`` (default 30 s). Safe to call twice.

        ``leave_group``: None leaves as a dynamic member and stays as a static one; True leaves
        (static members too); False stays until the session times out. Java's
        ``close(CloseOptions)`` is ``close(CloseOptions(operation, timeout_ms))``
        (:class:`~kafkaconsumer.close_options.CloseOptions`).
        """
        if isinstance(timeout_ms, CloseOptions):
            if leave_group is not None:
                raise TypeError("pass leave_group in the CloseOptions, not beside them")
            leave_group = timeout_ms.leave_group()
            timeout_ms = timeout_ms.timeout_ms
        if self._closed and self._guard.idle():
            return
        ms = to_timeout_ms(timeout_ms, _DEFAULT_CLOSE_TIMEOUT_MS)
        self._acquire()
        try:
            if self._closed or self._closing:
                return
            # As in Java, the consumer counts as open until close() finishes, so a rebalance
            # listener may still commit in on_partitions_revoked while the group is left.
            self._closing = True
            batch = self._iterating
            if batch is not None:
                # Before the auto-commit below: it must not cover what was never handed out.
                self._iterating = None
                self._move_back(batch)
            timer = Timer(self._time, ms)
            telemetry = self._telemetry
            if telemetry is not None:
                # The last push (terminating) gets at most half of what is left, so that the
                # group is still left in time.
                self._close_quietly(
                    "telemetry", lambda: telemetry.close(self._client, timer.remaining_ms // 2)
                )
                timer.update()
            self._close_quietly(
                "coordinator",
                lambda: (
                    self._coordinator.close(timer, leave_group)
                    if self._coordinator is not None
                    else None
                ),
            )
            timer.update()
            self._close_quietly("fetcher", lambda: self._fetcher.close(timer))
            self._close_quietly("interceptors", self._interceptors.close)
            for des in (self._key_deserializer, self._value_deserializer):
                closer = getattr(des, "close", None)
                if closer is not None:
                    self._close_quietly("deserializer", closer)
            self._close_quietly("metrics", self._metrics.close)
            self._close_quietly("network client", self._client.close)
            logger.debug("kafka consumer %s closed", self._client_id)
        finally:
            if self._closing:
                self._closed = True
                self._closing = False
            self._release()

    @staticmethod
    def _close_quietly(what: str, fn: Any) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - close must finish every step
            logger.warning("failed to close the %s", what, exc_info=True)

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Poll forever, yielding records one at a time; stops when the consumer is closed.

        Only what was handed out counts as consumed: when the loop is left part-way through a
        poll's records (``break``, an exception, the generator closed), their partitions move
        back to the first record not handed out, and a commit made in the loop body (or the
        auto-commit of :meth:`close`) covers the records handed out so far.
        """
        while not self._closed:
            records = self.poll(timeout_ms=1000)
            if not records:
                continue
            batch = IteratedBatch(records, self._positions_of(records.partitions()))
            self._iterating = batch
            try:
                for record in records:
                    batch.last = record
                    yield record
                batch.done = True
            finally:
                if self._iterating is batch:
                    self._iterating = None
                    if not batch.done:
                        self._move_back(batch)

    def _positions_of(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for tp in partitions:
            position = self._subscriptions.position(tp)
            if position is not None:
                out[tp] = position.offset
        return out

    def _not_handed_out(self, batch: IteratedBatch) -> dict[TopicPartition, OffsetAndMetadata]:
        """``batch``'s first records not handed out, for the partitions still where its poll
        left them (a seek or a reassignment since is the application's placement)."""
        subs = self._subscriptions
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in batch.not_handed_out().items():
            if not subs.is_assigned(tp):
                continue
            position = subs.position(tp)
            if position is not None and position.offset == batch.polled.get(tp):
                out[tp] = om
        return out

    def _move_back(self, batch: IteratedBatch) -> None:
        """Move the partitions of ``batch`` back to their first record not handed out."""
        if self._closed:
            return
        try:
            self._acquire()
        except Errors.ConcurrentModificationError:
            # The generator was collected on another thread while the owner uses the consumer.
            logger.warning(
                "records of an abandoned iteration were not returned to the consumer: another "
                "thread is using it"
            )
            return
        try:
            for tp, om in self._not_handed_out(batch).items():
                logger.debug(
                    "iteration left early: %s resumes at offset %d, its first record not "
                    "handed out",
                    tp,
                    om.offset,
                )
                self._subscriptions.seek_validated(
                    tp, FetchPosition(om.offset, om.leader_epoch, self._current_leader(tp))
                )
        finally:
            self._release()

    def __repr__(self) -> str:
        return (
            f"KafkaConsumer(client_id={self._client_id!r}, group_id={self._group_id!r}, "
            f"closed={self._closed})"
        )
