"""A small, real Kafka producer on this package's network layer.

It exists for tests, the demo and the CLI, and is honest about what it is: synchronous, with no
background thread. ``send()`` serializes the record, picks a partition (Java's murmur2 hash of
the key, sticky partitions for null keys), appends it to that partition's batch and ships the
batches that are ready. I/O happens inside ``send()``, ``flush()``, ``close()`` and
``FutureRecordMetadata.get()``; records wait in their batch until one of those runs, so call
``flush()`` (or ``get()``) when you need them on the broker.

A batch is ready when it is full (``batch.size``), when ``linger.ms`` has passed, when its
partition has no produce request in flight and ``linger.ms`` is 0 (so records pile up into
batches while the broker is busy, as with Java's sender thread), or on ``flush()``. Each
partition has at most one request in flight, which keeps records in order across retries.
Batches are encoded with :func:`kafkaconsumer.record.encode_batch` (``compression.type`` none,
gzip, snappy, lz4 or zstd) and sent in one Produce request per broker at the highest version
both sides support. With ``enable.idempotence`` (the default, as in Java) the producer gets a
producer id from the broker and numbers its batches, so a retried batch is not written twice.

Retriable errors (leader moved, timeouts, lost connections) are retried until
``delivery.timeout.ms``; other errors fail the records' futures with the broker's error, naming
the topic and partition.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkaconsumer.config import ProducerConfig
from kafkaconsumer.errors import (
    BrokerResponseError,
    ConfigError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    for_code,
)
from kafkaconsumer.metadata import Metadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.future import Future
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.record import encode_batch
from kafkaconsumer.serialization import resolve_serializer
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.loader import resolve_object
from kafkaconsumer.utils.timer import to_timeout_ms

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        InitProducerIdResponse,
        ProduceResponse,
        ProduceResponseResponsePartitionResponse,
    )

logger = logging.getLogger(__name__)

__all__ = [
    "KafkaProducer",
    "RecordMetadata",
    "FutureRecordMetadata",
    "murmur2",
    "default_partition",
]

_DUPLICATE_SEQUENCE_NUMBER = 46
_OUT_OF_ORDER_SEQUENCE_NUMBER = 45
_UNKNOWN_PRODUCER_ID = 59
_INVALID_PRODUCER_EPOCH = 47
_POLL_SLICE_MS = 100
# Bytes a v2 record adds around its key and value (varints, attributes, deltas): an estimate
# used only to decide when a batch is full.
_RECORD_OVERHEAD = 21
_BATCH_OVERHEAD = 61


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2`` (seed 0x9747b28c), returned as a signed 32-bit int."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    full = length & ~3
    for i in range(0, full, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[full + 2] << 16
    if rest >= 2:
        h ^= data[full + 1] << 8
    if rest >= 1:
        h ^= data[full]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, num_partitions: int) -> int:
    """The partition Java's default partitioner picks for a non-null key."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class RecordMetadata(NamedTuple):
    """Where a record was written (Java ``RecordMetadata``); ``offset`` is -1 with acks=0."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's partition."""
        return TopicPartition(self.topic, self.partition)


def _timeout_ms(timeout: float | timedelta | None, *, seconds: bool) -> int | None:
    """A user timeout (seconds when ``seconds``, else ms; or a ``timedelta``) in whole ms, or
    ``None`` for "no timeout given"; checked by :func:`to_timeout_ms`."""
    if timeout is None:
        return None
    name = "timeout" if seconds else "timeout_ms"
    if seconds and not isinstance(timeout, timedelta):
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(
                f"timeout must be a number of seconds or a timedelta, got {type(timeout).__name__}"
            )
        if not timeout >= 0:  # negative or NaN: name the value the caller gave
            raise ValueError(f"timeout must be >= 0, got {timeout!r}")
        timeout = float(timeout) * 1000.0
    return to_timeout_ms(timeout, name=name)


class FutureRecordMetadata:
    """The outcome of one ``send()``.

    ``get(timeout)`` (seconds or a ``timedelta``, like ``concurrent.futures``) drives the
    producer's I/O until the record is acknowledged and returns its :class:`RecordMetadata`, or
    raises the error that failed it (``KafkaTimeoutError`` when the timeout passes first).

    Thread-safety: safe to query from any thread. The outcome is decided under the producer's
    lock but the future is completed (and its callbacks run) after that lock is released, by
    whichever thread is driving the producer's I/O.
    """

    __slots__ = ("_producer", "_future", "topic", "partition")

    def __init__(self, producer: KafkaProducer, topic: str, partition: int) -> None:
        """Start pending for a record sent by ``producer`` to ``topic``/``partition``."""
        self._producer = producer
        self._future: Future[RecordMetadata] = Future()
        self.topic = topic
        self.partition = partition

    @property
    def is_done(self) -> bool:
        """True once the record was acknowledged or failed."""
        return self._future.is_done

    def succeeded(self) -> bool:
        """True when the record was written."""
        return self._future.succeeded()

    def failed(self) -> bool:
        """True when the record failed."""
        return self._future.failed()

    @property
    def exception(self) -> BaseException | None:
        """The error, when the send failed."""
        return self._future.exception

    def add_callback(self, fn: Callable[[RecordMetadata], Any]) -> FutureRecordMetadata:
        """Call ``fn(metadata)`` when the record is written."""
        self._future.add_callback(fn)
        return self

    def add_errback(self, fn: Callable[[BaseException], Any]) -> FutureRecordMetadata:
        """Call ``fn(exception)`` when the send fails."""
        self._future.add_errback(fn)
        return self

    def get(self, timeout: float | timedelta | None = None) -> RecordMetadata:
        """Wait (driving the I/O) for the result; ``None`` waits up to ``delivery.timeout.ms``."""
        budget = _timeout_ms(timeout, seconds=True)
        self._producer._wait_for(
            lambda: self._future.is_done, budget, f"record for {self.topic}-{self.partition}"
        )
        if self._future.failed():
            exc = self._future.exception
            assert exc is not None
            raise exc
        return self._future.value

    def _complete(self, value: RecordMetadata) -> None:
        self._future.success(value)

    def _fail(self, exc: BaseException) -> None:
        self._future.failure(exc)

    def __repr__(self) -> str:
        state = "done" if self.is_done else "pending"
        return f"FutureRecordMetadata({self.topic}-{self.partition}, {state})"


class _Batch:
    """Records for one partition, shipped together."""

    __slots__ = (
        "tp",
        "records",
        "futures",
        "size",
        "created_ms",
        "attempts",
        "base_sequence",
        "retry_at_ms",
        "key_sizes",
        "value_sizes",
    )

    def __init__(self, tp: TopicPartition, now_ms: int) -> None:
        self.tp = tp
        self.records: list[
            tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]
        ] = []
        self.futures: list[FutureRecordMetadata] = []
        self.key_sizes: list[int] = []
        self.value_sizes: list[int] = []
        self.size = _BATCH_OVERHEAD
        self.created_ms = now_ms
        self.attempts = 0
        self.base_sequence = -1
        self.retry_at_ms = 0


class KafkaProducer:
    """A synchronous producer: ``send()``, ``flush()``, ``close()``.

    ``KafkaProducer({"bootstrap.servers": "localhost:9092"}, value_serializer="str")``. Every
    ProducerConfig key is accepted (Java names or snake_case).

    Thread-safety: thread-safe. One lock guards the producer's state and is held only for
    short bookkeeping, never across network I/O or a wait: the network is polled (in short
    slices), requests such as InitProducerId are awaited, and serializers, the partitioner and
    record callbacks run, all without it, so a thread waiting on a slow broker does not block
    other threads' ``send()``, ``flush()`` or ``close()``.
    """

    def __init__(
        self, configs: Mapping[str, Any] | None = None, *, time: Time | None = None, **kwargs: Any
    ) -> None:
        """Configure from Java keys in ``configs`` or snake_case ``kwargs``; connections open on
        first use. ``time`` replaces the monotonic clock in tests.
        """
        self.config = ProducerConfig(configs, **kwargs)
        cfg = self.config
        self._time = time or SYSTEM_TIME
        self._key_serializer = resolve_serializer(cfg["key.serializer"], configs=cfg, is_key=True)
        self._value_serializer = resolve_serializer(
            cfg["value.serializer"], configs=cfg, is_key=False
        )
        self._acks = -1 if cfg["acks"] == "all" else int(cfg["acks"])
        self._compression = cfg["compression.type"]
        self._batch_size = max(1, int(cfg["batch.size"]))
        self._linger_ms = int(cfg["linger.ms"])
        self._max_request_size = int(cfg["max.request.size"])
        self._buffer_memory = int(cfg["buffer.memory"])
        self._max_block_ms = int(cfg["max.block.ms"])
        self._inject_trace: Any = None
        if cfg["tracing.inject.context"]:
            from kafkaconsumer.tracing import inject_trace_context

            self._inject_trace = inject_trace_context
            inject_trace_context([])  # raises now when opentelemetry-api is missing
        self._delivery_timeout_ms = int(cfg["delivery.timeout.ms"])
        self._request_timeout_ms = int(cfg["request.timeout.ms"])
        self._retries = int(cfg["retries"])
        self._retry_backoff_ms = int(cfg["retry.backoff.ms"])
        self._idempotent = bool(cfg["enable.idempotence"])
        self._ignore_keys = bool(cfg["partitioner.ignore.keys"])
        partitioner = cfg["partitioner.class"]
        if isinstance(partitioner, str):
            partitioner = resolve_object(partitioner, key="partitioner.class")
        if partitioner is not None and not callable(partitioner):
            raise ConfigError(
                "partitioner.class must be a callable "
                "(key_bytes, all_partitions, available_partitions) -> int"
            )
        self._partitioner: Callable[..., int] | None = partitioner
        self._metadata = Metadata(cfg, time=self._time)
        self._network = NetworkClient(
            NetworkSettings.from_config(cfg), time=self._time, metadata=self._metadata
        )
        self._client = ConsumerNetworkClient(self._network, self._metadata)
        self._lock = threading.RLock()
        self._topics: set[str] = set()
        self._batches: dict[TopicPartition, deque[_Batch]] = {}
        self._in_flight: set[TopicPartition] = set()
        self._buffered = 0
        self._sticky: dict[str, int] = {}
        self._random = random.Random()
        self._producer_id = -1
        self._producer_epoch = -1
        self._sequences: dict[TopicPartition, int] = {}
        # The InitProducerId request in flight (sent and read by _init_producer_id, lock held).
        self._pid_future: Future[Any] | None = None
        self._pid_retry_at_ms = 0
        self._closed = False
        # Record futures decided under the lock, completed once it is released (_run_completions)
        # so that the user's callbacks never run under it.
        self._completions: deque[
            tuple[FutureRecordMetadata, RecordMetadata | None, BaseException | None]
        ] = deque()

    # ------------------------------------------------------------------ public API -----------
    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata:
        """Queue one record and return its :class:`FutureRecordMetadata`.

        Blocks up to ``max.block.ms`` for the topic's metadata or for buffer space. Raises at
        once for bad input (serialization errors, an out-of-range partition, a record larger
        than ``max.request.size``).
        """
        if not isinstance(topic, str) or not topic:
            raise ValueError("topic must be a non-empty string")
        hdrs: list[tuple[str, bytes | None]] = []
        if headers:
            items = headers.items() if isinstance(headers, Mapping) else headers
            for name, hv in items:
                if not isinstance(name, str):
                    raise TypeError(f"header names must be str, got {name!r}")
                if hv is not None and not isinstance(hv, (bytes, bytearray, memoryview)):
                    raise TypeError(f"header {name!r}: value must be bytes or None")
                hdrs.append((name, None if hv is None else bytes(hv)))
        if self._inject_trace is not None:
            self._inject_trace(hdrs)
        with self._lock:
            self._ensure_open()
        # The serializers and the partitioner are user code: they run without the lock.
        key_bytes = self._key_serializer.serialize(topic, key, hdrs)
        value_bytes = self._value_serializer.serialize(topic, value, hdrs)
        size = (
            _RECORD_OVERHEAD
            + len(key_bytes or b"")
            + len(value_bytes or b"")
            + sum(len(n) + len(v or b"") + 4 for n, v in hdrs)
        )
        if size + _BATCH_OVERHEAD > self._max_request_size:
            raise MessageTooLargeError(
                f"the record is {size} bytes, more than max.request.size "
                f"({self._max_request_size})",
                topic=topic,
            )
        deadline = self._time.monotonic_ms() + self._max_block_ms
        num_partitions = self._wait_for_topic(topic, deadline)
        custom: int | None = None
        if partition is None and self._partitioner is not None:
            custom = self._custom_partition(topic, key_bytes, num_partitions)
        with self._lock:
            self._ensure_open()
            if partition is not None:
                if not 0 <= partition < num_partitions:
                    raise UnknownTopicOrPartitionError(
                        f"partition {partition} is not in [0, {num_partitions}) for {topic!r}",
                        topic=topic,
                        partition=partition,
                    )
                chosen = partition
            elif custom is not None:
                chosen = custom
            else:
                chosen = self._choose_partition(topic, key_bytes, num_partitions)
        self._wait_for_buffer(size, deadline)
        with self._lock:
            self._ensure_open()
            tp = TopicPartition(topic, chosen)
            now = self._time.monotonic_ms()
            ts = timestamp_ms if timestamp_ms is not None else self._time.wall_ms()
            queue = self._batches.setdefault(tp, deque())
            batch = queue[-1] if queue else None
            if (
                batch is None
                or batch.attempts > 0
                or batch.size + size > self._batch_size
                and batch.records
            ):
                batch = _Batch(tp, now)
                queue.append(batch)
                if partition is None and key_bytes is None and len(queue) > 1:
                    # The sticky partition filled a batch: move on (Java's sticky rule).
                    self._next_sticky(topic, num_partitions, avoid=chosen)
            future = FutureRecordMetadata(self, topic, chosen)
            batch.records.append((key_bytes, value_bytes, hdrs, ts))
            batch.futures.append(future)
            batch.key_sizes.append(-1 if key_bytes is None else len(key_bytes))
            batch.value_sizes.append(-1 if value_bytes is None else len(value_bytes))
            batch.size += size
            self._buffered += size
            self._ship_ready(now)
        self._poll(0)
        return future

    def flush(self, timeout_ms: float | timedelta | None = None) -> None:
        """Send every queued record and wait for all answers (``None``: up to
        ``delivery.timeout.ms``). Raises ``KafkaTimeoutError`` when time runs out; failures of
        single records are reported by their futures, not here."""
        budget = _timeout_ms(timeout_ms, seconds=False)
        with self._lock:
            self._ensure_open()
        self._wait_for(self._all_done, budget, "flush", flushing=True)

    def partitions_for(self, topic: str, timeout_ms: float | None = None) -> list[int]:
        """The partition numbers of ``topic`` (fetching its metadata if needed)."""
        with self._lock:
            self._ensure_open()
        budget = self._max_block_ms if timeout_ms is None else float(timeout_ms)
        n = self._wait_for_topic(topic, self._time.monotonic_ms() + budget)
        return list(range(n))

    def close(self, timeout_ms: float | timedelta | None = None) -> None:
        """Flush what is queued (within the timeout), fail what is left, release the network.

        Returns within ``timeout_ms`` (``None``: up to ``delivery.timeout.ms``); ``0`` drops the
        queued records at once. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
        budget = _timeout_ms(timeout_ms, seconds=False)
        try:
            if budget is None or budget > 0:
                try:
                    self._wait_for(self._all_done, budget, "close", flushing=True)
                except KafkaError as exc:
                    logger.warning("producer close: records not delivered: %s", exc)
        finally:
            with self._lock:
                self._closed = True
                err = KafkaError("the producer was closed before the record was sent")
                for queue in self._batches.values():
                    for batch in queue:
                        self._defer_failure(batch, err)
                self._batches.clear()
                self._buffered = 0
            self._run_completions()
            self._client.close()
            self._network.close()
            for s in (self._key_serializer, self._value_serializer):
                closer = getattr(s, "close", None)
                if callable(closer):
                    try:
                        closer()
                    except Exception:  # noqa: BLE001 - closing must reach the network
                        logger.warning("serializer close failed", exc_info=True)

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ waiting ---------------
    def _ensure_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the producer is closed")

    def _all_done(self) -> bool:
        if self._batches or self._in_flight:
            return False
        # acks=0 requests count as done once queued: wait until their bytes are on the wire.
        if self._client.has_pending_requests():
            return False

        def unwritten(nc: NetworkClient) -> bool:
            for node in nc.nodes():
                conn = nc.connection(node)
                if conn is not None and conn.has_pending_send():
                    return True
            return False

        return not self._client.execute(unwritten)

    def _wait_for(
        self, done: Callable[[], bool], budget_ms: float | None, what: str, flushing: bool = False
    ) -> None:
        if budget_ms is None:
            budget_ms = float(self._delivery_timeout_ms + self._request_timeout_ms)
        deadline = self._time.monotonic_ms() + budget_ms
        while True:
            try:
                with self._lock:
                    if done():
                        return
                    if not self._closed:
                        self._ship_ready(self._time.monotonic_ms(), flushing=flushing)
                        self._expire_batches(self._time.monotonic_ms())
                    if done():
                        return
                    if self._closed:
                        raise IllegalStateError("the producer is closed")
            finally:
                self._run_completions()
            remaining = deadline - self._time.monotonic_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(f"{what} did not complete within {budget_ms:.0f} ms")
            self._poll(min(remaining, _POLL_SLICE_MS))

    def _poll(self, timeout_ms: float) -> None:
        """Drive the network (lock not held), then complete the record futures it decided."""
        try:
            self._client.poll(max(0.0, timeout_ms), disable_wakeup=True)
        except KafkaError as exc:
            # A fatal metadata error (authorization, invalid topic) belongs to the records of
            # that topic; keep the loop alive and let the topic wait report it.
            logger.debug("producer poll: %s", exc)
        finally:
            self._run_completions()

    def _run_completions(self) -> None:
        """Complete the record futures queued under the lock; call without holding it, so the
        callbacks the user added to those futures never run under the producer lock."""
        while True:
            with self._lock:
                if not self._completions:
                    return
                future, metadata, exc = self._completions.popleft()
            if future.is_done:
                continue
            if exc is not None:
                future._fail(exc)
            else:
                assert metadata is not None
                future._complete(metadata)

    def _defer_failure(self, batch: _Batch, exc: BaseException) -> None:
        """Queue the failure of every record of ``batch`` (lock held)."""
        for future in batch.futures:
            self._completions.append((future, None, exc))

    def _wait_for_topic(self, topic: str, deadline_ms: float) -> int:
        with self._lock:
            if topic not in self._topics:
                self._topics.add(topic)
                self._metadata.set_topics(self._topics)
        while True:
            parts = self._metadata.cluster.partitions_for_topic(topic)
            if parts:
                return len(parts)
            err = self._metadata.topic_error(topic)
            if err is not None and not (err.retriable or err.invalid_metadata):
                raise err
            remaining = deadline_ms - self._time.monotonic_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"topic {topic!r} not present in metadata after {self._max_block_ms} ms"
                    + (f" (last error: {err})" if err is not None else "")
                )
            self._metadata.request_update()
            self._poll(min(remaining, _POLL_SLICE_MS))

    def _wait_for_buffer(self, size: int, deadline_ms: float) -> None:
        while True:
            with self._lock:
                if self._buffered + size <= self._buffer_memory or self._buffered == 0:
                    return
                self._ship_ready(self._time.monotonic_ms(), flushing=True)
            remaining = deadline_ms - self._time.monotonic_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"no room for the record in buffer.memory within {self._max_block_ms} ms"
                )
            self._poll(min(remaining, _POLL_SLICE_MS))

    # ------------------------------------------------------------------ partitioning ----------
    def _custom_partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        """The partition ``partitioner.class`` chooses (called without the lock: user code)."""
        assert self._partitioner is not None
        cluster = self._metadata.cluster
        all_parts = [p.partition for p in cluster.partitions_for_topic(topic) or []]
        available = [p.partition for p in cluster.available_partitions_for_topic(topic)]
        chosen = int(self._partitioner(key, all_parts, available))
        if not 0 <= chosen < num_partitions:
            raise ConfigError(
                f"partitioner.class returned {chosen} for {topic!r} with "
                f"{num_partitions} partitions"
            )
        return chosen

    def _choose_partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        """The built-in choice: murmur2 of the key, else the topic's sticky partition."""
        if key is not None and not self._ignore_keys:
            return default_partition(key, num_partitions)
        sticky = self._sticky.get(topic)
        if sticky is None or sticky >= num_partitions:
            sticky = self._next_sticky(topic, num_partitions)
        return sticky

    def _next_sticky(self, topic: str, num_partitions: int, avoid: int | None = None) -> int:
        available = [
            p.partition for p in self._metadata.cluster.available_partitions_for_topic(topic)
        ]
        candidates = available or list(range(num_partitions))
        if avoid is not None and len(candidates) > 1:
            candidates = [p for p in candidates if p != avoid]
        chosen = self._random.choice(candidates)
        self._sticky[topic] = chosen
        return chosen

    # ------------------------------------------------------------------ sending ---------------
    def _ship_ready(self, now_ms: int, flushing: bool = False) -> None:
        """Send every ready batch whose partition has no request in flight (lock held)."""
        if self._idempotent and self._producer_id < 0:
            if not self._init_producer_id():
                return
        by_node: dict[int, list[_Batch]] = {}
        cluster = self._metadata.cluster
        for tp, queue in self._batches.items():
            if not queue or tp in self._in_flight:
                continue
            batch = queue[0]
            if batch.retry_at_ms > now_ms:
                continue
            ready = (
                flushing
                or batch.attempts > 0
                or len(queue) > 1
                or batch.size >= self._batch_size
                or now_ms - batch.created_ms >= self._linger_ms
            )
            if not ready:
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                self._metadata.request_update()
                continue
            by_node.setdefault(leader, []).append(batch)
        for node, batches in by_node.items():
            self._send_produce(node, batches, now_ms)

    def _send_produce(self, node: int, batches: list[_Batch], now_ms: int) -> None:
        topic_data: dict[str, list[dict[str, Any]]] = {}
        request_size = 0
        chosen: list[_Batch] = []
        for batch in batches:
            if chosen and request_size + batch.size > self._max_request_size:
                break  # the rest goes in the next request
            if batch.base_sequence < 0 and self._producer_id >= 0:
                seq = self._sequences.get(batch.tp, 0)
                batch.base_sequence = seq
                self._sequences[batch.tp] = (seq + len(batch.records)) & 0x7FFFFFFF
            data = encode_batch(
                batch.records,
                compression=self._compression,
                producer_id=self._producer_id if self._producer_id >= 0 else -1,
                producer_epoch=self._producer_epoch if self._producer_id >= 0 else -1,
                base_sequence=batch.base_sequence if self._producer_id >= 0 else -1,
            )
            request_size += len(data)
            topic_data.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": data}
            )
            chosen.append(batch)
        for batch in chosen:
            queue = self._batches[batch.tp]
            assert queue[0] is batch
            batch.attempts += 1
            self._in_flight.add(batch.tp)
        body = {
            "transactional_id": None,
            "acks": self._acks,
            "timeout_ms": self._request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in topic_data.items()],
        }
        fut = self._client.send(node, ApiKey.PRODUCE, body, expect_response=self._acks != 0)
        fut.add_callback(self._on_produce_response, chosen, now_ms)
        fut.add_errback(self._on_produce_failure, chosen)

    def _on_produce_response(
        self, batches: list[_Batch], sent_ms: int, body: ProduceResponse | None
    ) -> None:
        with self._lock:
            results: dict[TopicPartition, ProduceResponseResponsePartitionResponse] = {}
            if isinstance(body, Mapping):
                for topic in body.get("responses") or []:
                    for part in topic.get("partition_responses") or []:
                        results[TopicPartition(topic["name"], int(part["index"]))] = part
            now = self._time.monotonic_ms()
            for batch in batches:
                self._in_flight.discard(batch.tp)
                if self._acks == 0:
                    self._complete_batch(batch, -1, -1)
                    continue
                p = results.get(batch.tp)
                if p is None:
                    self._retry_or_fail(
                        batch, KafkaError(f"the produce response had no result for {batch.tp}"), now
                    )
                    continue
                code = int(p.get("error_code", 0))
                if code == 0:
                    self._complete_batch(
                        batch, int(p["base_offset"]), int(p.get("log_append_time_ms", -1))
                    )
                    continue
                if code == _DUPLICATE_SEQUENCE_NUMBER:
                    # The broker already has this batch (an earlier attempt was written).
                    self._complete_batch(batch, -1, -1)
                    continue
                message = p.get("error_message") or None
                err = for_code(code)(message, topic=batch.tp.topic, partition=batch.tp.partition)
                if code in (
                    _OUT_OF_ORDER_SEQUENCE_NUMBER,
                    _UNKNOWN_PRODUCER_ID,
                    _INVALID_PRODUCER_EPOCH,
                ):
                    # The producer id's state on the broker no longer matches ours: start over
                    # with a new id (later batches are renumbered when they are sent).
                    self._reset_producer_id()
                    self._fail_batch(batch, err)
                    continue
                self._retry_or_fail(batch, err, now)
            self._ship_ready(now)

    def _on_produce_failure(self, batches: list[_Batch], exc: BaseException) -> None:
        with self._lock:
            now = self._time.monotonic_ms()
            for batch in batches:
                self._in_flight.discard(batch.tp)
                self._retry_or_fail(batch, exc, now)

    def _retry_or_fail(self, batch: _Batch, exc: BaseException, now_ms: int) -> None:
        retriable = bool(getattr(exc, "retriable", False)) or isinstance(exc, KafkaConnectionError)
        if getattr(exc, "invalid_metadata", False) or isinstance(exc, KafkaConnectionError):
            self._metadata.request_update()
        expired = now_ms - batch.created_ms >= self._delivery_timeout_ms
        if retriable and not expired and batch.attempts <= self._retries and not self._closed:
            backoff = min(self._retry_backoff_ms * (2 ** max(0, batch.attempts - 1)), 1000)
            batch.retry_at_ms = now_ms + backoff
            logger.debug(
                "retrying batch for %s after %s (attempt %d)", batch.tp, exc, batch.attempts
            )
            return
        if expired and retriable:
            exc = KafkaTimeoutError(
                f"{len(batch.records)} record(s) for {batch.tp} expired after "
                f"{now_ms - batch.created_ms} ms (delivery.timeout.ms); last error: {exc}"
            )
        self._fail_batch(batch, exc)

    def _remove_batch(self, batch: _Batch) -> None:
        queue = self._batches.get(batch.tp)
        if queue and queue[0] is batch:
            queue.popleft()
        elif queue and batch in queue:
            queue.remove(batch)
        if queue is not None and not queue:
            del self._batches[batch.tp]
        self._buffered = max(0, self._buffered - (batch.size - _BATCH_OVERHEAD))

    def _complete_batch(self, batch: _Batch, base_offset: int, log_append_ms: int) -> None:
        self._remove_batch(batch)
        for i, future in enumerate(batch.futures):
            ts = log_append_ms if log_append_ms >= 0 else batch.records[i][3]
            offset = base_offset + i if base_offset >= 0 else -1
            self._completions.append(
                (
                    future,
                    RecordMetadata(
                        batch.tp.topic,
                        batch.tp.partition,
                        offset,
                        ts,
                        batch.key_sizes[i],
                        batch.value_sizes[i],
                    ),
                    None,
                )
            )

    def _fail_batch(self, batch: _Batch, exc: BaseException) -> None:
        self._remove_batch(batch)
        if isinstance(exc, BrokerResponseError):
            logger.warning("produce to %s failed: %s", batch.tp, exc)
        self._defer_failure(batch, exc)

    def _expire_batches(self, now_ms: int) -> None:
        for tp, queue in list(self._batches.items()):
            for batch in list(queue):
                if tp in self._in_flight and batch is queue[0]:
                    continue
                if now_ms - batch.created_ms >= self._delivery_timeout_ms:
                    self._fail_batch(
                        batch,
                        KafkaTimeoutError(
                            f"{len(batch.records)} record(s) for {tp} expired after "
                            f"{now_ms - batch.created_ms} ms (delivery.timeout.ms)"
                        ),
                    )

    # ------------------------------------------------------------------ idempotence -----------
    def _init_producer_id(self) -> bool:
        """Get a producer id (lock held); never waits, so the lock is never held across I/O.

        The first call sends InitProducerId and keeps its future; later calls (from the next
        ``_ship_ready``, after a poll without the lock drove the network) return False until
        that future is done, then take its result. True once there is an id (or idempotence
        was turned off because the broker has no InitProducerId).
        """
        now = self._time.monotonic_ms()
        fut = self._pid_future
        if fut is None:
            if now < self._pid_retry_at_ms:
                return False
            node = self._client.least_loaded_node()
            if node is None:
                return False
            # The network client fails the request after request.timeout.ms.
            self._pid_future = self._client.send(
                node,
                ApiKey.INIT_PRODUCER_ID,
                {"transactional_id": None, "transaction_timeout_ms": 60000},
            )
            return False
        if not fut.is_done:
            return False
        self._pid_future = None
        if fut.failed():
            exc = fut.exception
            if isinstance(exc, UnsupportedVersionError):
                logger.warning("the broker has no InitProducerId; idempotence is turned off")
                self._idempotent = False
                return True
            logger.debug("InitProducerId failed: %s", exc)
            self._pid_retry_at_ms = now + self._retry_backoff_ms
            return False
        body: InitProducerIdResponse = fut.value
        code = int(body.get("error_code", 0))
        if code:
            err = for_code(code)("InitProducerId")
            if err.retriable:
                self._pid_retry_at_ms = now + self._retry_backoff_ms
                return False
            raise err
        self._producer_id = int(body["producer_id"])
        self._producer_epoch = int(body["producer_epoch"])
        self._sequences.clear()
        logger.debug("producer id %d epoch %d", self._producer_id, self._producer_epoch)
        return True

    def _reset_producer_id(self) -> None:
        self._producer_id = -1
        self._producer_epoch = -1
        self._sequences.clear()
        for queue in self._batches.values():
            for batch in queue:
                batch.base_sequence = -1
