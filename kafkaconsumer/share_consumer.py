"""KafkaShareConsumer: a member of a share group (KIP-932; Java ``KafkaShareConsumer``).

In a share group several consumers may read the same partition. The broker hands each record
to one member at a time under an acquisition lock; the member accepts it (done), releases it
(deliver it again, possibly to another member) or rejects it (never deliver it again), and the
broker counts deliveries (``record.delivery_count``).

docs/share-groups.md shows it at work. With ``share.acknowledgement.mode=implicit`` (the default) every record a ``poll()`` returned is
accepted by the next ``poll()``, ``commit_sync()``, ``commit_async()`` or ``close()``. With
``explicit`` each record must be acknowledged before the next ``poll()``.

Acknowledgements go to the broker piggybacked on the next ShareFetch, or at once with
``commit_sync()``/``commit_async()``; the outcome of each (per partition) reaches the
acknowledgement commit callback on the user's thread, inside ``poll()``, ``commit_sync()``,
``commit_async()`` or ``close()``. Acknowledgements of records whose acquisition lock ran out
are not sent (the broker would refuse the partition's other acknowledgements with them): they
are reported failed at once (see ``internals/fetch/acquisition_locks.py``).
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import ShareConsumerConfig
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.internals.fetch.acquisition_locks import AcquisitionLocks
from kafkaconsumer.internals.fetch.share_completed_fetch import (
    ShareCompletedFetch,
    ShareConsumerRecord,
)
from kafkaconsumer.internals.fetch.share_consume_request_manager import (
    ShareConsumeRequestManager,
    ShareFetchConfig,
)
from kafkaconsumer.internals.group.group_member import GroupRebalanceConfig
from kafkaconsumer.internals.group.share_heartbeat_request_manager import (
    ShareHeartbeatRequestManager,
)
from kafkaconsumer.internals.group.share_membership_manager import ShareMembershipManager
from kafkaconsumer.internals.thread_guard import ThreadGuard
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.metrics import Metrics
from kafkaconsumer.metrics.share_consumer_metrics import (
    ShareCoordinatorMetrics,
    ShareFetchMetricsManager,
)
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.client_telemetry_reporter import ClientTelemetryReporter
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.serialization import resolve_deserializer
from kafkaconsumer.structs import ConsumerRecords, TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import Timer, to_timeout_ms

logger = logging.getLogger(__name__)

__all__ = ["KafkaShareConsumer", "AcknowledgementCommitCallback"]

#: ``callback(offsets, exception)``: the offsets of one partition's settled acknowledgements
#: (``{TopicPartition: {offsets}}``) and the error they failed with, or None (Java
#: ``AcknowledgementCommitCallback.onComplete``).
AcknowledgementCommitCallback = Callable[
    [dict[TopicPartition, set[int]], "Errors.KafkaError | None"], None
]

_POLL_SLICE_MS = 100
#: A broker gets its next ShareFetch once no more than this many polls' worth of its records
#: are left to hand out, so that the answer is on its way while the user processes them.
_FETCH_AHEAD_POLLS = 2
#: Acknowledgements for a broker whose records are still being handed out ride on its next
#: ShareFetch; after waiting this long they go on their own in a ShareAcknowledge.
_ACK_LINGER_MS = 1000
#: Weight of the newest sample in the smoothed time the application spends between polls.
_THINK_TIME_WEIGHT = 0.2
#: The column ``poll_arrow()`` adds to the consumer's Arrow schema.
_DELIVERY_COUNT = "delivery_count"


class KafkaShareConsumer:
    """A share-group consumer (Java ``KafkaShareConsumer``), blocking and single-threaded.

    Thread-safety: one thread uses it at a time (``ConcurrentModificationError`` otherwise),
    except :meth:`wakeup`, which any thread may call. The heartbeat runs on a background thread.
    """

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *,
        _time: Time | None = None,
        **kwargs: Any,
    ) -> None:
        """Configure from Java keys in ``configs`` or snake_case ``kwargs`` (see
        :class:`~kafkaconsumer.config.ShareConsumerConfig`); no connection is made yet."""
        self._guard = ThreadGuard("KafkaShareConsumer")
        self._time = _time if _time is not None else SYSTEM_TIME
        self.config = ShareConsumerConfig(configs, **kwargs)
        cfg = self.config
        self._explicit = cfg["share.acknowledgement.mode"] == "explicit"
        self._max_poll_records = int(cfg["max.poll.records"])
        self._default_api_timeout_ms = int(cfg["default.api.timeout.ms"])
        self._key_deserializer = resolve_deserializer(
            cfg["key.deserializer"], configs=cfg, is_key=True
        )
        self._value_deserializer = resolve_deserializer(
            cfg["value.deserializer"], configs=cfg, is_key=False
        )
        self._check_crcs = bool(cfg["check.crcs"])
        self._metadata = ConsumerMetadata(cfg, time=self._time)
        self._net = NetworkClient(
            NetworkSettings.from_config(cfg), time=self._time, metadata=self._metadata
        )
        self._client = ConsumerNetworkClient(self._net, self._metadata)
        self._metrics = Metrics.from_config(cfg, time=self._time)
        self._telemetry = ClientTelemetryReporter.install(
            self._client, self._metrics, cfg, self._time
        )
        client_id = str(cfg["client.id"] or "")
        self._member = ShareMembershipManager(
            GroupRebalanceConfig.from_config(cfg),
            self._client,
            self._metadata,
            ShareHeartbeatRequestManager,
            time=self._time,
        )
        self._fetch = ShareConsumeRequestManager(
            self._client,
            self._metadata,
            ShareFetchConfig(
                group_id=str(cfg["group.id"]),
                max_wait_ms=int(cfg["fetch.max.wait.ms"]),
                min_bytes=int(cfg["fetch.min.bytes"]),
                max_bytes=int(cfg["fetch.max.bytes"]),
                max_records=self._max_poll_records,
                batch_size=self._max_poll_records,
                acquire_mode=1 if cfg["share.acquire.mode"] == "record_limit" else 0,
                check_crcs=self._check_crcs,
                retry_backoff_ms=int(cfg["retry.backoff.ms"]),
                retry_backoff_max_ms=int(cfg["retry.backoff.max.ms"]),
            ),
            time=self._time,
            metrics=ShareFetchMetricsManager(self._metrics, client_id),
        )
        member = self._member
        member.share_sensors = ShareCoordinatorMetrics(
            self._metrics, client_id, lambda: member.last_heartbeat_sent_ms
        )
        self._fetch.member_id = self._member.member_id()
        self._session_generation = 0  # written by the user's thread only
        # Records of the last poll not yet acknowledged: (tp, offset) -> (node, record).
        # (None: a row of poll_arrow()).
        self._delivered: dict[
            tuple[TopicPartition, int], tuple[int, ShareConsumerRecord | None]
        ] = {}
        # Acknowledgements not yet sent, by the node that delivered the records.
        self._pending: dict[int, dict[TopicPartition, Acknowledgements]] = {}
        # Records kept with RENEW: still held, to be acknowledged by a later call.
        self._renewed: dict[tuple[TopicPartition, int], tuple[int, ShareConsumerRecord | None]] = {}
        # Implicit mode: what the last poll returned, as (node, tp, offset runs), accepted by
        # the next poll, commit or close (explicit mode keeps each record in _delivered).
        self._handed: list[tuple[int, TopicPartition, list[tuple[int, int]]]] = []
        self._whole_batches = cfg["share.acquire.mode"] == "batch_optimized"
        # When the acknowledgements now pending for a node (by node) started waiting.
        self._pending_since: dict[int, int] = {}
        self._current: list[ShareCompletedFetch] = []  # fetched data not yet handed out
        # Lock deadlines of the records handed out (see acquisition_locks), and the
        # acknowledgements taken out because their lock ran out, for the next callbacks.
        self._acquisition_locks = AcquisitionLocks()
        self._expired: list[tuple[TopicPartition, Acknowledgements]] = []
        self._callback: AcknowledgementCommitCallback | None = None
        # When the last poll() that returned records returned (monotonic ms), and the smoothed
        # time the application then spent before polling again (None before a sample).
        self._returned_ms: int | None = None
        self._think_ms: float | None = None
        # The nodes whose records the current poll handed out.
        self._handed_nodes: set[int] = set()
        self._closed = False

    # ------------------------------------------------------------------ the thread guard
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

    # ------------------------------------------------------------------ subscription
    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to ``topics`` (replacing the previous subscription); an empty list
        unsubscribes."""
        self._acquire_and_ensure_open()
        try:
            names = tuple(sorted({str(t) for t in topics}))
            if any(not t.strip() for t in names):
                raise ValueError("topic names must be non-empty")
            if not names:
                self._unsubscribe()
                return
            self._metadata.set_topics(names)
            self._member.subscribe(names)
        finally:
            self._release()

    def unsubscribe(self) -> None:
        """Leave the share group and drop the subscription."""
        self._acquire_and_ensure_open()
        try:
            self._unsubscribe()
        finally:
            self._release()

    def _unsubscribe(self) -> None:
        # Settle before leaving (implicit mode accepts the last poll's records; what was
        # fetched but never returned goes back), bounded by default.api.timeout.ms.
        self._settle_delivered()
        self._release_undelivered()
        handed = self._fetch.send_acknowledgements(self._take_pending())
        timer = self._time.timer(self._default_api_timeout_ms)
        while not all(a.completed for a in handed) and timer.not_expired():
            self._client.poll(timeout_ms=min(timer.remaining_ms, _POLL_SLICE_MS))
            timer.update()
        self._fire_callbacks()
        self._member.unsubscribe()
        self._fetch.set_assignment(())

    def subscription(self) -> set[str]:
        """The subscribed topics."""
        self._acquire_and_ensure_open()
        try:
            return set(self._member.subscription())
        finally:
            self._release()

    # ------------------------------------------------------------------ acknowledging
    def acknowledge(
        self,
        record_or_topic: ShareConsumerRecord | str,
        partition_or_type: int | AcknowledgeType = AcknowledgeType.ACCEPT,
        offset: int | None = None,
        ack_type: AcknowledgeType | int | None = None,
    ) -> None:
        """Acknowledge a record the last ``poll()`` returned: ``acknowledge(record[, type])``
        or ``acknowledge(topic, partition, offset, type)``; ``type`` defaults to ACCEPT. Only
        in ``explicit`` mode; a record may be acknowledged once."""
        self._acquire_and_ensure_open()
        try:
            if isinstance(record_or_topic, str):
                if offset is None or ack_type is None:
                    raise TypeError("acknowledge(topic, partition, offset, type) needs all four")
                tp = TopicPartition(record_or_topic, int(partition_or_type))
                kind = AcknowledgeType.for_id(int(ack_type))
            else:
                tp = TopicPartition(record_or_topic.topic, record_or_topic.partition)
                offset = record_or_topic.offset
                kind = AcknowledgeType.for_id(int(partition_or_type))
            if not self._explicit:
                raise Errors.IllegalStateError(
                    "Implicit acknowledgement of delivery is being used: acknowledge() needs "
                    "share.acknowledgement.mode=explicit."
                )
            key = (tp, int(offset))
            entry = self._delivered.pop(key, None) or self._renewed.pop(key, None)
            if entry is None:
                raise Errors.IllegalStateError(
                    f"The record cannot be acknowledged: {tp} offset {offset} was not delivered "
                    f"by the last poll() of this consumer, or was acknowledged already."
                )
            node, _record = entry
            if kind is AcknowledgeType.RENEW:
                self._renewed[key] = entry
            self._add_pending(node, tp, int(offset), kind)
        finally:
            self._release()

    def _add_pending(self, node: int, tp: TopicPartition, offset: int, kind: int) -> None:
        acks = self._pending.setdefault(node, {}).setdefault(tp, Acknowledgements())
        acks.add(offset, kind)

    def _merge_pending(self, node: int, tp: TopicPartition, acks: Acknowledgements) -> None:
        if acks:
            self._pending.setdefault(node, {}).setdefault(tp, Acknowledgements()).merge(acks)

    def _settle_delivered(self) -> None:
        """Before a poll or commit: implicit mode accepts what the last poll returned; explicit
        mode requires it all acknowledged (before a poll)."""
        if self._handed:
            for node, tp, runs in self._handed:
                acks = self._pending.setdefault(node, {}).setdefault(tp, Acknowledgements())
                for first, last in runs:
                    acks.add_range(first, last, AcknowledgeType.ACCEPT)
            self._handed = []

    def _take_pending(self) -> dict[int, dict[TopicPartition, Acknowledgements]]:
        """The pending acknowledgements, to be sent now, without those of records whose lock
        ran out (they complete failed at once: see acquisition_locks)."""
        pending, self._pending = self._pending, {}
        return self._without_expired(pending)

    def _without_expired(
        self, pending: dict[int, dict[TopicPartition, Acknowledgements]]
    ) -> dict[int, dict[TopicPartition, Acknowledgements]]:
        """``pending``, about to be sent, without the acknowledgements of records whose lock
        ran out (they complete failed at once: see acquisition_locks)."""
        if len(self._acquisition_locks):
            now = self._time.monotonic_ms()
            lock_ms = self._fetch.acquisition_lock_timeout_ms()
            for node_acks in pending.values():
                for tp, acks in list(node_acks.items()):
                    expired = self._acquisition_locks.take_expired(tp, acks, now, lock_ms)
                    if expired is not None:
                        self._expired.append((tp, expired))
                        self._fetch.record_acknowledgements_failed(len(expired))
                        if not acks:
                            del node_acks[tp]
        return pending

    def _lock_deadline(self, cf: ShareCompletedFetch) -> int | None:
        """When the locks of ``cf``'s records run out (None while no lock duration is known)."""
        lock_ms = self._fetch.acquisition_lock_timeout_ms()
        return cf.received_ms + lock_ms if lock_ms else None

    def _drop_if_expired(self, cf: ShareCompletedFetch, now_ms: int) -> bool:
        """Whether ``cf``'s locks ran out before its records were handed out: then they are
        the broker's again (another member may have them) and are dropped unacknowledged."""
        deadline = self._lock_deadline(cf)
        if deadline is None or deadline > now_ms or cf.is_consumed:
            return False
        left = cf.drain()
        if left:
            logger.info(
                "%d fetched records of %s were not handed out: their acquisition lock ran out "
                "while they waited (poll() more often, or lower max.poll.records)",
                len(left),
                cf.tp,
            )
        return True

    def set_acknowledgement_commit_callback(
        self, callback: AcknowledgementCommitCallback | None
    ) -> None:
        """Call ``callback(offsets, exception)`` on this thread for every settled batch of
        acknowledgements (None removes it)."""
        self._acquire_and_ensure_open()
        try:
            self._callback = callback
        finally:
            self._release()

    def _fire_callbacks(self) -> dict[TopicPartition, Errors.KafkaError | None]:
        results: dict[TopicPartition, Errors.KafkaError | None] = {}
        settled = self._expired + self._fetch.take_completed_acknowledgements()
        self._expired = []
        for tp, acks in settled:
            error = acks.exception()
            if tp not in results or error is not None:
                results[tp] = error
            if self._callback is not None:
                # User code, outside every lock of the consumer.
                self._callback({tp: set(acks.offsets())}, error)
            elif error is not None:
                logger.warning("acknowledgements of %s failed: %s", tp, error)
        return results

    def commit_sync(
        self, timeout_ms: float | Any | None = None
    ) -> dict[TopicPartition, Errors.KafkaError | None]:
        """Send every pending acknowledgement and wait for the broker: per partition, None
        when applied, else the error (Java ``commitSync``). A retriable error sends them again
        (after ``retry.backoff.ms``) until ``timeout_ms`` (default ``default.api.timeout.ms``)
        has passed; then they fail with ``RequestTimedOutError``."""
        self._acquire_and_ensure_open()
        try:
            self._settle_delivered()
            timer = self._timer(timeout_ms)
            pending = self._take_pending()
            handed = self._fetch.send_acknowledgements(
                pending, deadline_ms=self._time.monotonic_ms() + timer.remaining_ms
            )
            while not all(a.completed for a in handed) and timer.not_expired():
                wait = min(timer.remaining_ms, _POLL_SLICE_MS)
                retry_in = self._fetch.retry_acknowledgements()
                self._client.poll(timeout_ms=wait if retry_in is None else min(wait, retry_in))
                timer.update()
            # Those still waiting for a retry when the time ran out fail now.
            self._fetch.retry_acknowledgements()
            results = self._fire_callbacks()
            # Those still unanswered (a request in flight when the time ran out) are reported
            # as timed out here; the broker's answer reaches the callback when it comes.
            for by_partition in pending.values():
                for tp, acks in by_partition.items():
                    if not acks.completed and tp not in results:
                        results[tp] = Errors.RequestTimedOutError(
                            f"acknowledgements of {tp} not answered within the timeout"
                        )
            return results
        finally:
            self._release()

    def commit_async(self) -> None:
        """Send every pending acknowledgement; the outcome reaches the callback later. A
        retriable error sends them again, driven by the next calls of the consumer, until
        ``default.api.timeout.ms`` has passed (Java ``commitAsync``)."""
        self._acquire_and_ensure_open()
        try:
            self._settle_delivered()
            self._fetch.send_acknowledgements(
                self._take_pending(),
                deadline_ms=self._time.monotonic_ms() + self._default_api_timeout_ms,
            )
            self._client.poll(timeout_ms=0)
            self._fire_callbacks()
        finally:
            self._release()

    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker holds a delivered record for this consumer, as last reported
        (None before the first fetch)."""
        return self._fetch.acquisition_lock_timeout_ms()

    def metrics(self) -> dict[Any, float]:
        """The consumer's metrics as ``{MetricName: value}`` (Java ``metrics()``): the
        ``consumer-share-fetch-manager-metrics`` group (bytes and records fetched, fetch
        latency and rate, throttle time, acknowledgements sent and failed) and the
        ``consumer-share-coordinator-metrics`` group (heartbeat rate, count, longest response
        time, seconds since the last one)."""
        return self._metrics.metrics()

    def client_instance_id(self, timeout_ms: float | Any | None = None) -> uuid.UUID | None:
        """Java ``clientInstanceId(Duration)``: the id the brokers know this client's pushed
        metrics by (KIP-714), asking a broker for it when it is not known yet and waiting up
        to ``timeout_ms`` (default ``default.api.timeout.ms``); None when it did not come in
        time or the cluster takes no client metrics. Raises ``IllegalStateError`` when
        ``enable.metrics.push`` is false, as Java does."""
        ms = to_timeout_ms(timeout_ms, self._default_api_timeout_ms)
        self._acquire_and_ensure_open()
        try:
            return ClientTelemetryReporter.instance_id_of(self._telemetry, self._client, ms)
        finally:
            self._release()

    # ------------------------------------------------------------------ poll
    def _timer(self, timeout: float | Any | None) -> Timer:
        return self._time.timer(to_timeout_ms(timeout, self._default_api_timeout_ms))

    def _sync_membership(self) -> None:
        generation = self._member.session_generation
        if generation != self._session_generation:
            self._session_generation = generation
            self._release_undelivered(send=False)
            self._fetch.release_sessions()
            self._acquisition_locks.clear()
        self._fetch.set_assignment(self._member.assignment())

    def _release_undelivered(self, send: bool = True) -> None:
        """Give back what was fetched but never handed out."""
        now = self._time.monotonic_ms()
        for cf in self._current:
            if self._drop_if_expired(cf, now):
                continue
            left = cf.drain()
            if send:
                for offset in left:
                    self._add_pending(cf.node, cf.tp, offset, AcknowledgeType.RELEASE)
        self._current = []

    def _collect(self, columns: bool = False) -> dict[TopicPartition, list[Any]]:
        # By partition: the records handed out, or with ``columns`` the Arrow pieces
        # (record batch, delivery counts) of poll_arrow().
        self._current.extend(self._fetch.take_completed_fetches())
        self._handed_nodes = set()
        out: dict[TopicPartition, list[Any]] = {}
        room = self._max_poll_records
        keep: list[ShareCompletedFetch] = []
        error: Errors.KafkaError | None = None
        now = self._time.monotonic_ms()
        for cf in self._current:
            code = int(cf.partition_data.get("error_code", 0))
            if code:
                if code == Errors.TopicAuthorizationFailedError.errno and error is None:
                    error = Errors.TopicAuthorizationFailedError(
                        f"not authorized to read {cf.tp.topic}", topic=cf.tp.topic
                    )
                continue
            if room <= 0 or error is not None:
                keep.append(cf)
                continue
            if self._drop_if_expired(cf, now):
                continue
            if columns:
                batch = cf.fetch_columns(
                    room, check_crcs=self._check_crcs, whole_batches=self._whole_batches
                )
            else:
                batch = cf.fetch_records(
                    room,
                    self._key_deserializer,
                    self._value_deserializer,
                    check_crcs=self._check_crcs,
                    whole_batches=self._whole_batches,
                )
            self._track_locks(cf, batch.handed)
            self._merge_pending(cf.node, cf.tp, batch.acknowledgements)
            if self._explicit:
                for record in batch.records:
                    self._delivered[(cf.tp, record.offset)] = (cf.node, record)
                if batch.columns is not None:
                    for offset in batch.columns[2]:
                        self._delivered[(cf.tp, offset)] = (cf.node, None)
            elif batch.handed:
                self._handed.append((cf.node, cf.tp, batch.handed))
            if batch.handed:
                self._handed_nodes.add(cf.node)
            if batch.records:
                out.setdefault(cf.tp, []).extend(batch.records)
                room -= len(batch.records)
            elif batch.columns is not None:
                record_batch, _epochs, _offsets, counts = batch.columns
                out.setdefault(cf.tp, []).append((record_batch, counts))
                room -= record_batch.num_rows
            if not cf.is_consumed:
                keep.append(cf)
            if batch.error is not None:
                error = batch.error
        self._current = keep
        if error is not None and not out:
            raise error
        return out

    def _track_locks(self, cf: ShareCompletedFetch, runs: list[tuple[int, int]]) -> None:
        # ``runs``: the offsets handed out, as (first, last) runs.
        deadline = self._lock_deadline(cf)
        if deadline is not None and runs:
            offsets = list(itertools.chain.from_iterable(range(a, b + 1) for a, b in runs))
            self._acquisition_locks.track(cf.tp, offsets, deadline)

    def poll(self, timeout_ms: float | Any = 0) -> ConsumerRecords:
        """Records acquired for this consumer, each with ``delivery_count``; waits up to
        ``timeout_ms`` for some. Acknowledgements of the last poll go out with the next fetch
        (implicit mode accepts them here)."""
        self._acquire_and_ensure_open()
        try:
            return ConsumerRecords(self._poll(timeout_ms))
        finally:
            self._release()

    def poll_arrow(self, timeout_ms: float | Any = 0, *, include_headers: bool = False) -> Any:
        """:meth:`poll`, with the records as one ``pyarrow.RecordBatch``.

        The columns are those of ``KafkaConsumer.poll_arrow()`` (Spark's Kafka source schema,
        ``kafkaconsumer.record.arrow.SCHEMA``; with ``include_headers`` also ``headers``),
        then ``delivery_count`` (``int32``). Only acquired records are rows. Keys and values
        are the raw bytes, so no deserializer may be configured (``IllegalStateError``
        otherwise). The rows count as delivered exactly as :meth:`poll`'s records do: in
        ``implicit`` mode the next poll, commit or close accepts them all; in ``explicit``
        mode each row must be acknowledged before the next poll by
        ``acknowledge(topic, partition, offset, type)`` with the row's ``topic``,
        ``partition`` and ``offset``. Needs ``pyarrow``.
        """
        import pyarrow as pa

        from kafkaconsumer.record import arrow

        if self._key_deserializer is not None or self._value_deserializer is not None:
            raise Errors.IllegalStateError(
                "poll_arrow() returns raw bytes: configure no key.deserializer/"
                "value.deserializer, or use poll()"
            )
        self._acquire_and_ensure_open()
        try:
            by_partition = self._poll(timeout_ms, columns=True)
        finally:
            self._release()
        names = arrow.schema(include_headers).names
        batches = []
        for pieces in by_partition.values():
            for batch, counts in pieces:
                batches.append(batch.select(names).append_column(_DELIVERY_COUNT, counts))
        if not batches:
            empty = arrow.empty_batch(include_headers)
            return empty.append_column(_DELIVERY_COUNT, pa.nulls(0, pa.int32()))
        return batches[0] if len(batches) == 1 else pa.concat_batches(batches)

    def _poll(
        self, timeout_ms: float | Any, columns: bool = False
    ) -> dict[TopicPartition, list[Any]]:
        """One poll on the user's thread (the guard held): the acquired records by partition
        (with ``columns``, Arrow pieces: see :meth:`_collect`), none when ``timeout_ms``
        passed first."""
        if not self._member.subscription():
            raise Errors.IllegalStateError("Consumer is not subscribed to any topics.")
        if self._explicit and self._delivered:
            raise Errors.IllegalStateError(
                "All records must be acknowledged in explicit acknowledgement mode."
            )
        self._settle_delivered()
        now = self._time.monotonic_ms()
        if self._returned_ms is not None:
            sample = float(now - self._returned_ms)
            last = self._think_ms
            self._think_ms = sample if last is None else last + _THINK_TIME_WEIGHT * (sample - last)
            self._returned_ms = None
        timer = self._time.timer(to_timeout_ms(timeout_ms, 0))
        while True:
            self._member.poll()
            self._sync_membership()
            records = self._collect(columns)
            self._send_requests(self._deferred_fetches() if records else frozenset())
            self._fire_callbacks()
            if records:
                self._returned_ms = self._time.monotonic_ms()
                return records
            timer.update()
            if timer.is_expired():
                return {}
            self._client.poll(timeout_ms=min(timer.remaining_ms, _POLL_SLICE_MS))

    def _deferred_fetches(self) -> frozenset[int]:
        """The nodes whose next ShareFetch waits for the next poll, after this poll handed out
        their records: all of them when the application comes back sooner than a ShareFetch
        answers (smoothed, both). A fetch sent now would carry the acknowledgements of the
        poll before and leave this poll's records acquired until the fetch after it; sent at
        the next poll it carries them (implicit mode accepts them there) and costs at most the
        application's short time between polls. When the application takes longer, fetching
        ahead hides the round trip and the records are on their way while it works."""
        think, latency = self._think_ms, self._fetch.fetch_latency_ms()
        if think is None or latency is None or think >= latency:
            return frozenset()
        return frozenset(self._handed_nodes)

    def _send_requests(self, deferred: frozenset[int] = frozenset()) -> None:
        """After a hand-out, send what is pending (``deferred``: nodes whose fetch waits for
        the next poll, see :meth:`_deferred_fetches`; their acknowledgements wait as those of
        a node with records left do).

        A broker gets its next ShareFetch, carrying the acknowledgements so far, once at most
        :data:`_FETCH_AHEAD_POLLS` polls' worth of its fetched records are left to hand out:
        it acquires more while the user processes these. Before that it gets no fetch: while
        this member holds its records it has little to acquire, and a fetch waiting for
        records would hold back the acknowledgements that free them. Its acknowledgements
        wait for that fetch (one request carries them, and the broker applies them while it
        acquires), for :data:`_ACK_LINGER_MS` at most; then they go in a ShareAcknowledge, so
        that a slow consumer's acknowledgements reach the broker well within the
        acquisition lock."""
        # Taken as they are: those that wait are checked against their locks when they go.
        pending, self._pending = self._pending, {}
        left: dict[int, int] = {}
        for cf in self._current:
            if not cf.is_consumed:
                left[cf.node] = left.get(cf.node, 0) + cf.remaining()
        ahead = _FETCH_AHEAD_POLLS * self._max_poll_records
        busy = frozenset(node for node, count in left.items() if count > ahead) | deferred
        now = self._time.monotonic_ms()
        for node in list(self._pending_since):
            if node not in pending:
                del self._pending_since[node]
        overdue: dict[int, dict[TopicPartition, Acknowledgements]] = {}
        for node in busy:
            acks = pending.pop(node, None)
            if acks is None:
                continue
            since = self._pending_since.setdefault(node, now)
            if now - since >= _ACK_LINGER_MS and not self._fetch.has_in_flight(node):
                overdue[node] = acks
                del self._pending_since[node]
            else:
                self._pending[node] = acks
        if overdue:
            self._fetch.send_acknowledgements(self._without_expired(overdue))
        self._fetch.retry_acknowledgements()
        for node in pending:
            self._pending_since.pop(node, None)
        self._fetch.send_fetches(self._without_expired(pending), skip=busy)

    def __iter__(self) -> Iterator[ShareConsumerRecord]:
        """Poll forever, one record at a time."""
        while True:
            yield from self.poll(timeout_ms=_POLL_SLICE_MS * 10)  # type: ignore[misc]

    def wakeup(self) -> None:
        """Make a blocking ``poll()``/``commit_sync()`` raise ``WakeupError``. Any thread may
        call it, and so may a signal handler or the commit callback."""
        if self._guard.held_by_current_thread():
            # On the thread inside the consumer (a signal handler, or the commit callback),
            # which may hold a lock that waking up takes: another thread wakes it up.
            threading.Thread(
                target=self._client.wakeup, name="kafkaconsumer-share-wakeup", daemon=True
            ).start()
            return
        self._client.wakeup()

    # ------------------------------------------------------------------ close
    def close(self, timeout_ms: float | Any | None = None) -> None:
        """Send the pending acknowledgements (implicit mode: accepting what the last poll
        returned), release what was fetched but never handed out, close the share sessions,
        leave the group; returns within ``timeout_ms`` (default 30 s)."""
        self._acquire()
        try:
            if self._closed:
                return
            self._closed = True
            # Closing is not interruptible: a wakeup() now (or one still pending) is moot.
            self._client.disable_wakeups()
            timer = self._time.timer(to_timeout_ms(timeout_ms, 30_000))
            try:
                if self._telemetry is not None:
                    # The terminating push gets at most half of the time left.
                    self._telemetry.close(self._client, timer.remaining_ms // 2)
                    timer.update()
                self._settle_delivered()
                self._release_undelivered()
                handed = self._fetch.send_acknowledgements(self._take_pending(), close=True)
                while timer.not_expired() and (
                    self._fetch.has_in_flight() or not all(a.completed for a in handed)
                ):
                    self._client.poll(
                        timeout_ms=min(timer.remaining_ms, _POLL_SLICE_MS), disable_wakeup=True
                    )
                    timer.update()
                self._fire_callbacks()
            finally:
                try:
                    self._member.close(timer)
                finally:
                    try:
                        self._client.close()
                    finally:
                        self._metrics.close()
        finally:
            self._release()

    def __enter__(self) -> KafkaShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
