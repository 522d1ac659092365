"""The producer's keys and :class:`ProducerConfig` (Java ``ProducerConfig``)."""

from __future__ import annotations

from kafkaconsumer.config.abstract_config import AbstractConfig, _finish
from kafkaconsumer.config.common_client_configs import _NON_NEGATIVE, common_keys
from kafkaconsumer.config.config_def import ConfigKey, H, L, M, T, _k, _OneOf, _Range
from kafkaconsumer.config.validators import (
    _ACKS,
    _encoding,
    _serializer_spec,
    _unsupported_when_set,
)
from kafkaconsumer.errors import ConfigError

_DEFAULT_LEVEL = "this producer compresses at each codec's default level, which cannot be chosen"


def producer_keys() -> list[ConfigKey]:
    """The keys of :class:`ProducerConfig`: the common ones and the producer's own."""
    return common_keys("producer") + [
        _k(
            "acks",
            T.STRING,
            "all",
            "Acknowledgements the leader waits for: 0 (none), 1 (leader "
            "only), all/-1 (all in-sync replicas). Ints are accepted too.",
            H,
            _ACKS,
        ),
        _k(
            "compression.type",
            T.STRING,
            "none",
            "Codec for record batches: none, gzip, snappy, lz4 or zstd.",
            H,
            _OneOf("none", "gzip", "snappy", "lz4", "zstd"),
        ),
        _k(
            "batch.size",
            T.INT,
            16384,
            "Target size in bytes of one partition's batch.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "linger.ms",
            T.LONG,
            0,
            "How long send() may hold records to fill a batch before sending it.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "buffer.memory",
            T.LONG,
            33554432,
            "Most bytes of records waiting to be sent; send() "
            "blocks up to max.block.ms when it is full.",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "max.request.size",
            T.INT,
            1048576,
            "Largest produce request (and record) in bytes.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "max.block.ms",
            T.LONG,
            60000,
            "Longest time send() blocks for metadata or buffer space.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "delivery.timeout.ms",
            T.INT,
            120000,
            "Upper bound on the time to report success or failure of a send().",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "retries",
            T.INT,
            2147483647,
            "How often a failed batch is resent (within delivery.timeout.ms).",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "max.in.flight.requests.per.connection",
            T.INT,
            5,
            "Unanswered requests allowed per connection.",
            L,
            _Range(1),
        ),
        _k(
            "enable.idempotence",
            T.BOOLEAN,
            True,
            "Give batches a producer id and sequence "
            "numbers so the broker drops duplicates of retried sends.",
            L,
        ),
        _k(
            "transactional.id",
            T.STRING,
            None,
            "Transactions are not supported by this producer; must stay unset.",
            L,
            _unsupported_when_set,
        ),
        _k(
            "transaction.timeout.ms",
            T.INT,
            60000,
            "Transaction timeout.",
            L,
            unsupported=(
                "transactions are not supported by this producer (transactional.id must stay unset)"
            ),
        ),
        _k(
            "transaction.two.phase.commit.enable",
            T.BOOLEAN,
            False,
            "Two-phase commit of transactions (KIP-939).",
            L,
            unsupported=(
                "transactions are not supported by this producer (transactional.id must stay unset)"
            ),
        ),
        _k(
            "compression.gzip.level",
            T.INT,
            -1,
            "The gzip level; this producer compresses at the codec's default level.",
            L,
            unsupported=_DEFAULT_LEVEL,
        ),
        _k(
            "compression.lz4.level",
            T.INT,
            9,
            "The lz4 level; this producer compresses at the codec's default level.",
            L,
            unsupported=_DEFAULT_LEVEL,
        ),
        _k(
            "compression.zstd.level",
            T.INT,
            3,
            "The zstd level; this producer compresses at the codec's default level.",
            L,
            unsupported=_DEFAULT_LEVEL,
        ),
        _k(
            "partitioner.rack.aware",
            T.BOOLEAN,
            False,
            "Java's default partitioner can prefer partitions led by brokers in client.rack.",
            L,
            unsupported="this producer's default partitioner does not look at racks",
        ),
        _k(
            "buffer.memory.allocation.strategy",
            T.STRING,
            "full",
            "How Java's producer reserves buffer.memory for batches (full or incremental).",
            L,
            unsupported="this producer does not pool batch memory as Java does",
        ),
        _k(
            "metadata.max.idle.ms",
            T.LONG,
            300000,
            "Forget metadata of a topic not produced to for this long.",
            L,
            _Range(5000),
        ),
        _k(
            "partitioner.class",
            T.CLASS,
            None,
            "A callable (key_bytes, all_partitions, "
            "available_partitions) -> partition, or an import path; unset uses the Java-compatible "
            "murmur2 key hash and sticky partitions for null keys.",
            M,
        ),
        _k(
            "partitioner.ignore.keys",
            T.BOOLEAN,
            False,
            "Ignore keys when choosing partitions (always sticky).",
            M,
        ),
        _k(
            "partitioner.adaptive.partitioning.enable",
            T.BOOLEAN,
            True,
            "Favour faster brokers for records without a key (Java).",
            L,
            unsupported=(
                "this producer does not measure broker latency, so it cannot adapt; false (plain "
                "sticky partitions) is what it does anyway"
            ),
            honoured=(False,),
        ),
        _k(
            "partitioner.availability.timeout.ms",
            T.LONG,
            0,
            "Java: stop choosing a partition whose leader has not taken records for this long "
            "(0: never).",
            L,
            unsupported=(
                "this producer does not track how fast each broker takes records, so it cannot "
                "avoid a slow one; leave it 0"
            ),
        ),
        _k(
            "key.serializer",
            T.CLASS,
            None,
            "How keys are encoded: bytes, str, int, long, short, "
            "float, double, uuid, json, a Java serializer class name, a callable or an object "
            "with serialize(). Unset means the key must already be bytes.",
            H,
            _serializer_spec,
        ),
        _k(
            "value.serializer",
            T.CLASS,
            None,
            "How values are encoded; same forms as key.serializer.",
            H,
            _serializer_spec,
        ),
        _k(
            "key.serializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string key "
            "serializer (default UTF-8), as Java's StringSerializer reads it.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "value.serializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string value serializer (default UTF-8).",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "serializer.encoding",
            T.STRING,
            None,
            "Text encoding for both string serializers when the key/value specific key is unset.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "tracing.inject.context",
            T.BOOLEAN,
            False,
            "Add the current OpenTelemetry trace context to every record's headers with the "
            "configured propagator (W3C traceparent by default), for consumers that trace "
            "(kafkaconsumer.tracing); needs the otel extra.",
            L,
            python_only=True,
        ),
        _k(
            "interceptor.classes",
            T.LIST,
            (),
            "Producer interceptors (Java).",
            L,
            unsupported="this producer does not call interceptors; wrap send() instead",
        ),
    ]


class ProducerConfig(AbstractConfig):
    """Configuration of :class:`~kafkaconsumer.producer.KafkaProducer` (Java ``ProducerConfig``).

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _CLIENT_ID_PREFIX = "producer"

    def _post_process(self) -> None:
        v = self._values
        if v["acks"] == "-1":
            v["acks"] = "all"
        if v["enable.idempotence"] and v["acks"] != "all":
            if "enable.idempotence" in self._originals:
                raise ConfigError("enable.idempotence=true requires acks=all")
            v["enable.idempotence"] = False  # Java: implicit idempotence yields to explicit acks
        super()._post_process()


_finish(ProducerConfig, producer_keys())
