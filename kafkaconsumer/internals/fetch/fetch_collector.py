"""Hands fetched records out on the user's thread (Java ``FetchCollector``).

Each ``poll()`` takes pieces from the head of the :class:`~.fetch_buffer.FetchBuffer`, checks
their errors and caches their watermarks, decodes them with the :class:`~.decoders.RecordDecoder`
it was given, and hands out up to ``max.poll.records`` records as list (or Arrow) slices. Data
is handed out only if the partition's position still equals where the data starts (a seek or an
error in between makes it stale, and it is dropped); positions then move past what was handed
out. Paused partitions keep their buffered data, undecoded, until resumed. No lock is held while
user code (deserializers) runs.
"""

from __future__ import annotations

import logging
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch
from kafkaconsumer.internals.fetch.decode_pool import DecodePool
from kafkaconsumer.internals.fetch.decoders import DecodeOptions, RecordDecoder
from kafkaconsumer.internals.fetch.fetch_buffer import FetchBuffer
from kafkaconsumer.internals.fetch.fetch_config import FetchConfig
from kafkaconsumer.internals.interfaces import FetchMetadata
from kafkaconsumer.internals.subscription_state import FetchPosition, SubscriptionState
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import Time

logger = logging.getLogger(__name__)

__all__ = ["Fetch", "FetchCollector"]

# Error codes handled by name below (Java Errors enum).
_NONE = 0
_OFFSET_OUT_OF_RANGE = Errors.OffsetOutOfRangeError.errno
_CORRUPT_MESSAGE = Errors.CorruptMessageError.errno
_TOPIC_AUTHORIZATION_FAILED = Errors.TopicAuthorizationFailedError.errno
_UNKNOWN_LEADER_EPOCH = Errors.UnknownLeaderEpochError.errno
_UNKNOWN_SERVER_ERROR = Errors.UnknownServerError.errno
# Errors after which the leader (or replica) we fetched from is no longer the one to ask.
REFRESH_METADATA = frozenset(
    {
        Errors.NotLeaderOrFollowerError.errno,
        Errors.ReplicaNotAvailableError.errno,
        Errors.FencedLeaderEpochError.errno,
        Errors.OffsetNotAvailableError.errno,
        Errors.KafkaStorageError.errno,
        Errors.LeaderNotAvailableError.errno,
        Errors.UnknownTopicIdError.errno,
        Errors.InconsistentTopicIdError.errno,
        Errors.UnknownTopicOrPartitionError.errno,
    }
)


class Fetch:
    """What one ``collect_fetch`` produced: records per partition and whether positions moved.

    Thread-safety: not thread-safe; owned by the polling thread.
    """

    __slots__ = ("records", "num_records", "position_advanced", "positions")

    def __init__(self) -> None:
        """Start empty."""
        #: Per partition, what the decoder handed out: a list of records, or ``ArrowRecords``.
        self.records: dict[TopicPartition, Any] = {}
        self.num_records = 0
        self.position_advanced = False
        #: Per partition with records here, its position after them (what poll() reports as
        #: the next offsets).
        self.positions: dict[TopicPartition, FetchPosition] = {}

    def is_empty(self) -> bool:
        """No records and no position change (a poll may then keep waiting)."""
        return self.num_records == 0 and not self.position_advanced

    def add(self, tp: TopicPartition, records: Any) -> None:
        """Append ``records`` of ``tp`` (keeps per-partition order)."""
        existing = self.records.get(tp)
        if existing is None:
            self.records[tp] = records
        else:
            existing.extend(records)
        self.num_records += len(records)


class FetchCollector:
    """Turns buffered fetch data into the records one ``poll()`` returns.

    Thread-safety: used by the user's thread only (inside ``poll()``); it takes the buffer's
    lock only around queue operations, never while decoding or deserializing.
    """

    def __init__(
        self,
        buffer: FetchBuffer,
        metadata: FetchMetadata,
        subscriptions: SubscriptionState,
        config: FetchConfig,
        time: Time,
        metrics: Any = None,
    ) -> None:
        """Collect from ``buffer`` for the partitions of ``subscriptions``; ``metadata`` is
        asked for a refresh after errors that mean the leader moved."""
        # Set here and never replaced (the buffer and the subscriptions guard themselves).
        self.buffer = buffer
        self.subscriptions = subscriptions
        self.config = config
        self._metadata = metadata
        self._time = time
        self._metrics = metrics
        # The assignment the per-partition metrics were last trimmed to (see collect_fetch).
        # Written by the user's thread only.
        self._metrics_assignment_id = -1
        #: The threads that prepare partitions for the Arrow decoder (started on first use).
        self.decode_pool = DecodePool(config.arrow_decode_threads)

    def close(self) -> None:
        """Stop the decode pool's threads."""
        self.decode_pool.close()

    def collect_fetch(self, decoder: RecordDecoder, max_records: int | None = None) -> Fetch:
        """Hand out up to ``max_records`` (default ``max.poll.records``) buffered records,
        decoded by ``decoder``, advancing positions.

        Raises the per-partition errors (offset out of range without reset policy, topic
        authorization, corrupt records, deserialization) on the user's thread, and a failure
        the response handler kept in the buffer.
        """
        buffer = self.buffer
        error = buffer.take_error()
        if error is not None:
            raise error
        metrics = self._metrics
        if metrics is not None and self._metrics_assignment_id != self.subscriptions.assignment_id:
            # Partitions no longer assigned lose their lag and lead metrics (as Java, checked
            # when records are collected, once per assignment).
            self._metrics_assignment_id = self.subscriptions.assignment_id
            metrics.retain_partitions(self.subscriptions.assigned_partitions())
        fetch = Fetch()
        remaining = self.config.max_poll_records if max_records is None else max_records
        remaining = decoder.prepare(self, remaining)
        paused: list[CompletedFetch] = []
        try:
            while remaining > 0:
                nil = buffer.next_in_line
                if nil is None or nil.is_consumed:
                    with buffer.lock:
                        head = buffer.peek()
                    if head is None:
                        break
                    cf = head
                    if self.subscriptions.is_paused(cf.tp):
                        # Keep the data, undecoded (at most one partition's records are
                        # decoded at a time); it goes back to the queue when this poll ends.
                        with buffer.lock:
                            buffer.remove_head(cf)
                        paused.append(cf)
                        continue
                    if not cf.initialized:
                        if cf.carries_nothing:
                            # Nothing to decode or hand out, only watermarks to take: over
                            # many partitions most pieces of a full response are such, and
                            # the decode and hand-out steps cost more than the rest of them.
                            with buffer.lock:
                                buffer.remove_head(cf)
                            self._retire_without_records(cf)
                            continue
                        try:
                            initialized = self._initialize(cf, decoder)
                        except Exception:
                            if fetch.num_records == 0 and not fetch.position_advanced:
                                with buffer.lock:
                                    buffer.remove_head(cf)
                                raise
                            break
                        with buffer.lock:
                            buffer.remove_head(cf)
                        if initialized is None:
                            continue
                    else:
                        with buffer.lock:
                            buffer.remove_head(cf)
                    buffer.next_in_line = nil = cf
                if self.subscriptions.is_paused(nil.tp):
                    # Paused while being handed out: keep the rest for when it is resumed.
                    paused.append(nil)
                    buffer.next_in_line = None
                    continue
                try:
                    got = self._fetch_records(nil, remaining, fetch, decoder)
                except Exception:
                    if fetch.is_empty():
                        raise
                    # Return what this poll has; the error surfaces on the next one.
                    break
                remaining -= got
        finally:
            if paused:
                with buffer.lock:
                    for cf in paused:
                        buffer.append(cf)
        return fetch

    def decode_options(self, cf: CompletedFetch) -> DecodeOptions:
        """The keyword arguments every decoder takes for ``cf``'s data."""
        config = self.config
        part = cf.partition_data
        return {
            "check_crcs": config.check_crcs,
            "read_committed": config.read_committed,
            "aborted_transactions": (
                part.get("aborted_transactions") if config.read_committed else None
            ),
        }

    def _fetch_records(
        self, cf: CompletedFetch, max_records: int, fetch: Fetch, decoder: RecordDecoder
    ) -> int:
        tp = cf.tp
        subs = self.subscriptions
        if not subs.is_assigned(tp):
            logger.debug("not returning fetched records of %s: no longer assigned", tp)
        elif not subs.is_fetchable(tp):
            logger.debug("not returning fetched records of %s: not fetchable", tp)
        else:
            position = subs.position(tp)
            if position is None:
                raise Errors.IllegalStateError(f"missing position for fetchable partition {tp}")
            if cf.next_fetch_offset == position.offset:
                records = decoder.take(cf, max_records)
                if cf.next_fetch_offset > position.offset:
                    position = FetchPosition(
                        cf.next_fetch_offset,
                        cf.last_epoch if cf.last_epoch is not None else position.offset_epoch,
                        position.current_leader,
                    )
                    subs.set_position(tp, position)
                    fetch.position_advanced = True
                if records:
                    fetch.add(tp, records)
                    fetch.positions[tp] = position
                if self._metrics is not None:
                    self._record_consumed(cf, subs)
                if cf.is_consumed and cf.records_total:
                    # Fairness: a partition that gave records goes to the back of the next
                    # fetch's order (as Java's, not one whose answer held none).
                    subs.move_partition_to_end(tp)
                return len(records)
            logger.debug(
                "ignoring fetched records of %s at offset %d: position is %d",
                tp,
                cf.next_fetch_offset,
                position.offset,
            )
        cf.drain()
        return 0

    def _leader_moved(self, cf: CompletedFetch, error: int) -> None:
        """``cf`` says its partition is no longer served where it was fetched from."""
        logger.debug(
            "fetch of %s failed with %s; refreshing metadata", cf.tp, Errors.for_code(error).name
        )
        self.subscriptions.clear_preferred_read_replica(cf.tp)
        self._metadata.request_update()

    def retire_answers_without_records(self) -> int:
        """Drop the buffered answers that bring nothing to hand out, as ``poll()`` would when
        it reached them; returns how many. Until then their partition counts as buffered and
        is not fetched again, so a blocking call that keeps the fetch state moving while it
        waits calls this before it sends fetches. Two kinds go:

        * an answer that says the partition is no longer served where it was fetched from,
          once its position points elsewhere (at the new leader a hint or a refresh named;
          while it still points there, ``poll()`` decides);
        * an error-free answer without record data (a long poll that timed out): its
          watermarks are taken, as ``poll()`` takes them.

        No record is handed out and no position moves. Paused partitions keep theirs.
        """
        buffer = self.buffer
        subs = self.subscriptions
        retired: list[tuple[CompletedFetch, int]] = []
        with buffer.lock:
            for cf in buffer:
                if cf.initialized or subs.is_paused(cf.tp):
                    continue
                part = cf.partition_data
                error = part.get("error_code", 0)
                if error == _NONE:
                    if part.get("records"):
                        continue
                elif error in REFRESH_METADATA:
                    position = subs.position(cf.tp) if subs.is_assigned(cf.tp) else None
                    if position is not None and position.current_leader.leader == cf.node:
                        continue
                else:
                    continue
                retired.append((cf, error))
            for cf, _ in retired:
                buffer.remove(cf)
        for cf, error in retired:
            if error != _NONE:
                cf.drain()
                self._leader_moved(cf, error)
                continue
            self._retire_without_records(cf)
        return len(retired)

    def _retire_without_records(self, cf: CompletedFetch) -> None:
        """Done with ``cf``, an error-free answer without record data (off the queue
        already): its watermarks are taken unless it is stale, and the partition's lag and
        lead recorded, as when a piece's last record is handed out."""
        subs = self.subscriptions
        if not self._is_stale(cf):
            self._take_partition_state(cf)
        cf.drain()
        if self._metrics is not None and subs.is_assigned(cf.tp):
            self._record_consumed(cf, subs)

    def _record_consumed(self, cf: CompletedFetch, subs: SubscriptionState) -> None:
        # Once per partition response, when its last record is handed out: per-slice updates
        # cost more than the slices. (Bytes and records go per response: the aggregator.)
        if not cf.is_consumed or cf.metrics_recorded:
            return
        cf.metrics_recorded = True
        tp = cf.tp
        lag, lead = subs.partition_lag_and_lead(tp, self.config.read_committed)
        self._metrics.record_lag_and_lead(tp, lag, lead)

    def _is_stale(self, cf: CompletedFetch) -> bool:
        """True when ``cf``'s partition is unassigned or its position moved since the fetch."""
        subs = self.subscriptions
        position = subs.position(cf.tp) if subs.is_assigned(cf.tp) else None
        return position is None or position.offset != cf.fetch_offset

    def _take_partition_state(self, cf: CompletedFetch) -> None:
        """Cache the watermarks and the preferred read replica an error-free answer carries."""
        tp = cf.tp
        part = cf.partition_data
        subs = self.subscriptions
        hw = part.get("high_watermark", -1)
        if hw is not None and hw >= 0:
            subs.update_high_watermark(tp, hw)
        lso = part.get("log_start_offset", -1)
        if lso is not None and lso >= 0:
            subs.update_log_start_offset(tp, lso)
        stable = part.get("last_stable_offset", -1)
        if stable is not None and stable >= 0:
            subs.update_last_stable_offset(tp, stable)
        replica = part.get("preferred_read_replica", -1)
        if replica is not None and replica >= 0:
            expire = self._time.monotonic_ms() + self.config.metadata_max_age_ms
            logger.debug("fetching %s from preferred read replica %d", tp, replica)
            subs.update_preferred_read_replica(tp, replica, expire)

    def _initialize(self, cf: CompletedFetch, decoder: RecordDecoder) -> CompletedFetch | None:
        """Check errors, cache watermarks and decode; None when the data is to be dropped."""
        tp = cf.tp
        part = cf.partition_data
        error = part.get("error_code", 0)
        subs = self.subscriptions
        if error == _NONE:
            if self._is_stale(cf):
                logger.debug(
                    "discarding stale fetch response for %s at offset %d", tp, cf.fetch_offset
                )
                cf.drain()
                return None
            data = (part.get("records"), tp.topic, tp.partition, cf.fetch_offset)
            records, next_offset = decoder.decode(cf, data, self.decode_options(cf))
            self._take_partition_state(cf)
            cf.set_decoded(records, next_offset)
            return cf
        cf.drain()
        if error in REFRESH_METADATA:
            self._leader_moved(cf, error)
        elif error == _OFFSET_OUT_OF_RANGE:
            cleared = subs.clear_preferred_read_replica(tp)
            if cleared is not None:
                logger.debug(
                    "out of range on read replica %d for %s; back to the leader", cleared, tp
                )
                return None
            if self._is_stale(cf):
                logger.debug("discarding stale out-of-range response for %s", tp)
            elif subs.has_default_offset_reset_policy():
                logger.info(
                    "fetch offset %d is out of range for %s; resetting offset", cf.fetch_offset, tp
                )
                subs.request_offset_reset(tp)
            else:
                logger.info("fetch offset %d is out of range for %s", cf.fetch_offset, tp)
                raise Errors.OffsetOutOfRangeError(
                    f"fetch position {cf.fetch_offset} is out of range for partition {tp}",
                    partitions={tp: cf.fetch_offset},
                )
        elif error == _TOPIC_AUTHORIZATION_FAILED:
            raise Errors.TopicAuthorizationFailedError(
                f"not authorized to read topic {tp.topic}", unauthorized_topics={tp.topic}
            )
        elif error == _UNKNOWN_LEADER_EPOCH:
            logger.debug("unknown leader epoch fetching %s; retrying", tp)
        elif error == _UNKNOWN_SERVER_ERROR:
            logger.warning("unknown server error fetching %s at offset %d", tp, cf.fetch_offset)
        elif error == _CORRUPT_MESSAGE:
            raise Errors.CorruptRecordError(
                "the broker reported a corrupt message",
                topic=tp.topic,
                partition=tp.partition,
                offset=cf.fetch_offset,
            )
        else:
            raise Errors.for_code(error)(
                f"unexpected error fetching {tp} at offset {cf.fetch_offset}"
            )
        return None
