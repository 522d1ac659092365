"""The consumer's keys and :class:`ConsumerConfig` (Java ``ConsumerConfig``)."""

from __future__ import annotations

import logging

from kafkaconsumer.config.abstract_config import AbstractConfig, _finish
from kafkaconsumer.config.auto_offset_reset import AutoOffsetResetValidator
from kafkaconsumer.config.common_client_configs import _NON_NEGATIVE, common_keys
from kafkaconsumer.config.config_def import ConfigKey, H, L, M, T, _k, _ListOf, _OneOf, _Range
from kafkaconsumer.config.validators import (
    _assignor,
    _deserializer_spec,
    _encoding,
    _group_instance_id,
    _interceptor,
)
from kafkaconsumer.errors import ConfigError

logger = logging.getLogger(__name__)


def consumer_keys() -> list[ConfigKey]:
    """The keys of :class:`ConsumerConfig`: the common ones and the consumer's own."""
    return common_keys("consumer") + [
        _k(
            "group.id",
            T.STRING,
            None,
            "Name of the consumer group. Needed for subscribe() and "
            "for committing offsets to Kafka.",
            H,
        ),
        _k(
            "group.instance.id",
            T.STRING,
            None,
            "Makes this consumer a static member of the "
            "group under this id: a restart within session.timeout.ms does not trigger a "
            "rebalance.",
            M,
            _group_instance_id,
        ),
        _k(
            "group.protocol",
            T.STRING,
            "classic",
            "Group protocol: classic (JoinGroup/SyncGroup) "
            "or consumer (KIP-848 broker-side assignment).",
            H,
            _OneOf("classic", "consumer"),
        ),
        _k(
            "group.remote.assignor",
            T.STRING,
            None,
            "Broker-side assignor to ask for when "
            "group.protocol is consumer; the broker picks one when unset.",
            M,
        ),
        _k(
            "session.timeout.ms",
            T.INT,
            45000,
            "The group coordinator removes a member it has "
            "not heard a heartbeat from for this long. Must lie within the broker's "
            "group.min/max.session.timeout.ms.",
            H,
            _Range(1),
        ),
        _k(
            "heartbeat.interval.ms",
            T.INT,
            3000,
            "Time between heartbeats to the group "
            "coordinator; keep it below a third of session.timeout.ms.",
            H,
            _Range(1),
        ),
        _k(
            "max.poll.interval.ms",
            T.INT,
            300000,
            "Longest allowed gap between two poll() calls "
            "of a group member; past it the member leaves the group so its partitions move.",
            M,
            _Range(1),
        ),
        _k(
            "max.poll.records",
            T.INT,
            500,
            "Most records one poll() returns. It does not change how much is fetched.",
            M,
            _Range(1),
        ),
        _k(
            "partition.assignment.strategy",
            T.LIST,
            (
                "org.apache.kafka.clients.consumer.RangeAssignor",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            ),
            "Assignors this member supports, by preference: Java class names, short names "
            "(range, roundrobin, sticky, cooperative-sticky), assignor objects or import paths.",
            M,
            _ListOf(_assignor),
        ),
        _k(
            "enable.auto.commit",
            T.BOOLEAN,
            True,
            "Commit consumed positions in the background "
            "every auto.commit.interval.ms. Off by default when group.id is unset.",
            M,
        ),
        _k(
            "auto.commit.interval.ms",
            T.INT,
            5000,
            "Interval between automatic offset commits.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "auto.offset.reset",
            T.STRING,
            "latest",
            "Where to start when there is no valid "
            "committed offset: earliest, latest, none (raise NoOffsetForPartitionError), or "
            "by_duration: and an ISO-8601 duration, e.g. by_duration:PT1H (KIP-1106: the first "
            "record of that last stretch of time; the log end when none is that recent).",
            M,
            AutoOffsetResetValidator(),
        ),
        _k(
            "fetch.min.bytes",
            T.INT,
            1,
            "The broker waits for at least this many bytes (or "
            "fetch.max.wait.ms) before answering a fetch.",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "fetch.max.bytes",
            T.INT,
            52428800,
            "Most bytes a fetch response should carry "
            "(a larger first batch is still returned so the consumer can progress).",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "fetch.max.wait.ms",
            T.INT,
            500,
            "Longest time the broker holds a fetch waiting for fetch.min.bytes.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "max.partition.fetch.bytes",
            T.INT,
            1048576,
            "Most bytes returned per partition in "
            "one fetch (a larger first batch is still returned).",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "isolation.level",
            T.STRING,
            "read_uncommitted",
            "read_committed hides records of "
            "aborted and still-open transactions; read_uncommitted returns everything.",
            M,
            _OneOf("read_uncommitted", "read_committed"),
        ),
        _k("check.crcs", T.BOOLEAN, True, "Verify the CRC of every record batch fetched.", L),
        _k(
            "key.deserializer",
            T.CLASS,
            None,
            "How record keys are decoded: a name (bytes, str, "
            "int, long, short, float, double, uuid, json), a Java deserializer class name, a "
            "callable, an object with deserialize(), a class, or an import path. Unset means "
            "raw bytes (Java requires the key; here bytes is the default).",
            H,
            _deserializer_spec,
        ),
        _k(
            "value.deserializer",
            T.CLASS,
            None,
            "How record values are decoded; same forms as key.deserializer. Unset means raw bytes.",
            H,
            _deserializer_spec,
        ),
        _k(
            "key.deserializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string key "
            "deserializer (default UTF-8), as Java's StringDeserializer reads it.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "value.deserializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string value deserializer (default UTF-8).",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "deserializer.encoding",
            T.STRING,
            None,
            "Text encoding for both string deserializers when the key/value specific key is unset.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "default.api.timeout.ms",
            T.INT,
            60000,
            "Timeout of blocking consumer calls that take "
            "no explicit timeout (commit_sync, committed, position, ...).",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "allow.auto.create.topics",
            T.BOOLEAN,
            True,
            "Let the broker create a subscribed or "
            "assigned topic that does not exist (if the broker allows it).",
            M,
        ),
        _k(
            "exclude.internal.topics",
            T.BOOLEAN,
            True,
            "Keep internal topics (__consumer_offsets) out of pattern subscriptions.",
            M,
        ),
        _k(
            "interceptor.classes",
            T.LIST,
            (),
            "ConsumerInterceptor objects, classes or import "
            "paths; each sees records before poll() returns them and offsets after commits.",
            L,
            _ListOf(_interceptor),
        ),
        _k(
            "internal.leave.group.on.close",
            T.BOOLEAN,
            True,
            "Send LeaveGroup on close() so the group rebalances at once.",
            L,
            internal=True,
        ),
        _k(
            "internal.throw.on.fetch.stable.offset.unsupported",
            T.BOOLEAN,
            False,
            "Fail when the broker cannot wait for stable offsets in OffsetFetch (KIP-447).",
            L,
            internal=True,
        ),
        _k(
            "enable.fetch.sessions",
            T.BOOLEAN,
            True,
            "Use incremental fetch sessions (KIP-227); "
            "false sends a full fetch request every time.",
            L,
            python_only=True,
        ),
        _k(
            "arrow.decode.threads",
            T.INT,
            1,
            "Threads that decode poll_arrow()'s partitions, the polling thread included: the "
            "others check CRCs and decompress the partitions ahead while it assembles the "
            "columns. 1: the polling thread alone; 0: one per processor core, at most 4.",
            L,
            _Range(0, 64),
            python_only=True,
        ),
        _k(
            "arrow.poll.max.bytes",
            T.INT,
            16 * 1024 * 1024,
            "poll_arrow() stops adding partitions to its record batch once their decoded keys "
            "and values reach this many bytes (at least one partition's data is returned), so "
            "that a batch of large values is bounded in memory as fetch.max.bytes bounds what "
            "is fetched; max.poll.records still bounds its rows.",
            L,
            _Range(1),
            python_only=True,
        ),
        _k(
            "arrow.malloc.tuning",
            T.BOOLEAN,
            True,
            "On glibc, the first poll_arrow() sets the process's malloc mmap threshold to 64 "
            "MiB and its trim threshold to 256 MiB, so that the multi-megabyte blocks of "
            "columns and decompressed batches are reused instead of mapped anew and faulted "
            "in at every poll (freed memory up to those sizes then stays with the process). "
            "Left alone where MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or "
            "GLIBC_TUNABLES set them, and on other C libraries. false: never.",
            L,
            python_only=True,
        ),
        _k(
            "internal.cooperative.rejoin.delay.ms",
            T.INT,
            0,
            "Wait this long before the "
            "follow-up rejoin of a cooperative rebalance (0: at once, as Java). Helps with brokers "
            "that answer a pending SyncGroup only periodically.",
            L,
            _NON_NEGATIVE,
            internal=True,
            python_only=True,
        ),
    ]


#: Requests in flight per broker connection for the clients whose configuration has no
#: ``max.in.flight.requests.per.connection`` key (the consumer and the admin client): Java's
#: consumer builds its network client with this fixed bound. Not a key: it cannot be set.
CONSUMER_MAX_IN_FLIGHT_REQUESTS = 100


#: Keys of one group protocol that the other refuses (Java ConsumerConfig's unsupported lists).
CLASSIC_PROTOCOL_ONLY = (
    "partition.assignment.strategy",
    "heartbeat.interval.ms",
    "session.timeout.ms",
)
CONSUMER_PROTOCOL_ONLY = ("group.remote.assignor",)


class ConsumerConfig(AbstractConfig):
    """Configuration of :class:`~kafkaconsumer.consumer.KafkaConsumer` (Java ``ConsumerConfig``).

    ``ConsumerConfig({"bootstrap.servers": "localhost:9092"}, group_id="g")``. Beyond the Java
    checks it refuses ``heartbeat.interval.ms >= session.timeout.ms`` for group members and a
    SASL set-up without credentials. When ``client.id`` is empty it becomes
    ``consumer-<group.id>-<n>`` as in Java; when ``group.id`` is unset ``enable.auto.commit``
    defaults to false (and may not be set to true).

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _CLIENT_ID_PREFIX = "consumer"

    def _generated_client_id(self) -> str:
        v = self._values
        group = v["group.id"]
        part = v["group.instance.id"] or str(next(self._client_id_seq))
        return f"consumer-{group if group is not None else 'null'}-{part}"

    def _post_process(self) -> None:
        v = self._values
        if v["group.id"] is None:
            if "enable.auto.commit" not in self._originals:
                v["enable.auto.commit"] = False
            elif v["enable.auto.commit"]:
                raise ConfigError("enable.auto.commit cannot be true when group.id is unset")
        # As Java's ConsumerConfig: a key the chosen group protocol does not use is refused
        # (the consumer protocol's timers and assignor are the broker's), not ignored.
        protocol = str(v["group.protocol"]).lower()
        other = CLASSIC_PROTOCOL_ONLY if protocol == "consumer" else CONSUMER_PROTOCOL_ONLY
        refused = [
            k
            for k in other
            if self._originals.get(k) is not None and str(self._originals[k]).strip()
        ]
        if refused:
            raise ConfigError(f"{', '.join(refused)} cannot be set when group.protocol={protocol}")
        if v["group.id"] is not None and v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            raise ConfigError(
                f"heartbeat.interval.ms ({v['heartbeat.interval.ms']}) must be lower than "
                f"session.timeout.ms ({v['session.timeout.ms']})"
            )
        if v["group.id"] is not None and v["group.id"] == "":
            logger.warning("group.id is an empty string; Java treats this as deprecated")
        super()._post_process()


_finish(ConsumerConfig, consumer_keys())
