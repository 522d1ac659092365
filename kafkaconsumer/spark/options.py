"""The options of the Spark integration, named and formatted as Spark's Kafka source's.

``kafka.*`` options go to our consumer (or producer) without the prefix; the rest choose topics
and offsets. Option names are case-insensitive, as in Spark. An option that Spark's source
knows but this one does not, or a misspelt one, raises :class:`ConfigError` naming it: nothing
is accepted and ignored.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["EARLIEST", "LATEST", "KafkaOptions", "OffsetSpec", "parse_options"]

#: Offsets in Spark's JSON: -2 is the earliest offset, -1 the latest.
EARLIEST = -2
LATEST = -1

# Spark's Kafka source refuses these kafka.* keys: the source manages them itself. Each
# reason says what to do instead, on the error's first line.
_FORBIDDEN_KAFKA = {
    "auto.offset.reset": (
        "set the source option startingOffsets to earliest or latest instead (it applies when "
        "a query starts; a restarted query continues from its checkpoint)"
    ),
    "key.deserializer": (
        "keys are always binary: remove it and deserialize the key column with DataFrame "
        "operations (CAST(key AS STRING), from_json, ...)"
    ),
    "value.deserializer": (
        "values are always binary: remove it and deserialize the value column with DataFrame "
        "operations (CAST(value AS STRING), from_json, ...)"
    ),
    "enable.auto.commit": (
        "remove it: the source commits nothing to Kafka, offsets live in the checkpoint"
    ),
    "interceptor.classes": "remove it: the source runs no consumer interceptors",
    "key.serializer": "remove it: keys are written as given (a binary or string column)",
    "value.serializer": "remove it: values are written as given (a binary or string column)",
}
_READ_OPTIONS = {
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestampstrategy",
    "failondataloss",
    "minpartitions",
    "maxrecordsperpartition",
    "minrecordsperpartition",
    "includeheaders",
    "maxoffsetspertrigger",
    "minoffsetspertrigger",
    "maxtriggerdelay",
    "kafkaconsumer.polltimeoutms",
    "groupidprefix",
    "fetchoffset.numretries",
    "fetchoffset.retryintervalms",
    "commitoffsetstogroup",
}
# The spelling of each option in messages.
_SPELLING = {
    k.lower(): k
    for k in (
        "subscribe subscribePattern assign startingOffsets endingOffsets "
        "startingOffsetsByTimestamp endingOffsetsByTimestamp startingTimestamp endingTimestamp "
        "startingOffsetsByTimestampStrategy failOnDataLoss minPartitions maxRecordsPerPartition "
        "minRecordsPerPartition includeHeaders maxOffsetsPerTrigger minOffsetsPerTrigger maxTriggerDelay "
        "kafkaConsumer.pollTimeoutMs groupIdPrefix fetchOffset.numRetries "
        "fetchOffset.retryIntervalMs commitOffsetsToGroup topic checkpointLocation"
    ).split()
}
# A streaming query hands its own options to the sink too: checkpointLocation is Spark's.
_WRITE_OPTIONS = {"topic", "includeheaders", "checkpointlocation"}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_DURATION_MS = {
    None: 1000,
    "ms": 1,
    "s": 1000,
    "m": 60000,
    "min": 60000,
    "h": 3600000,
    "d": 86400000,
}


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: ``kind`` is ``"earliest"``, ``"latest"``, ``"offsets"``
    (``offsets``: topic -> partition -> offset, -2/-1 allowed) or ``"timestamps"``
    (``timestamps``: topic -> partition -> ms, or ``timestamp`` for every partition).

    Thread-safety: immutable.
    """

    kind: str
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamps: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class KafkaOptions:
    """Parsed options of one read or write.

    Thread-safety: immutable.
    """

    kafka: dict[str, Any]
    subscribe: list[str] | None = None
    subscribe_pattern: str | None = None
    assign: list[TopicPartition] | None = None
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    #: Ranges with fewer records share a task, up to this many records (0: a task each).
    min_records_per_partition: int = 1_000_000
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    poll_timeout_ms: int = 120000
    topic: str | None = None
    #: The consumers' group.id: kafka.group.id, else groupIdPrefix (default, as Spark's:
    #: spark-kafka-relation for batch reads, spark-kafka-source for streaming) and a random
    #: suffix; the planning consumers add -driver, the tasks -executor, as Spark's do. No
    #: consumer joins the group: reads assign their partitions and seek.
    group_id: str | None = None
    #: kafka.group.id was given: used as is by every consumer.
    group_id_fixed: bool = False
    #: Offset lookups on the driver are tried this many times ...
    fetch_offset_retries: int = 3
    #: ... this long apart.
    fetch_offset_retry_interval_ms: int = 10
    #: Streaming: the consumer group each committed micro-batch's end offsets are committed
    #: to (so that Kafka's group tools and lag monitors see the query's progress).
    commit_group: str | None = None

    def consumer_config(self, role: str) -> dict[str, Any]:
        """The configuration of a consumer of this read: ``kafka.*`` and the group id, with
        ``-driver`` or ``-executor`` (``role``) added to a generated one."""
        cfg = dict(self.kafka)
        if self.group_id is not None:
            cfg["group.id"] = self.group_id if self.group_id_fixed else f"{self.group_id}-{role}"
        return cfg


def _bool(name: str, value: str) -> bool:
    v = str(value).strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigError(f"option {name} must be true or false, not {value!r}")


def _positive(name: str, value: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"option {name} must be a positive integer, not {value!r}") from None
    if n <= 0:
        raise ConfigError(f"option {name} must be a positive integer, not {value!r}")
    return n


def _duration_ms(name: str, value: str) -> int:
    m = _DURATION.match(str(value).lower())
    if m is None:
        raise ConfigError(f"option {name} must be a duration such as 30s or 15m, not {value!r}")
    return int(m.group(1)) * _DURATION_MS[m.group(2)]


def _json_partitions(name: str, value: str, what: str) -> dict[str, dict[int, int]]:
    try:
        parsed = json.loads(value)
        out: dict[str, dict[int, int]] = {}
        for topic, parts in parsed.items():
            out[str(topic)] = {int(p): int(v) for p, v in parts.items()}
        return out
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(
            f'option {name} must be JSON such as {{"topicA":{{"0":{what}}}}}, not {value!r}'
        ) from None


def _offsets(name: str, value: str, allow_earliest: bool) -> OffsetSpec:
    v = str(value).strip()
    if v.lower() == "latest":
        return OffsetSpec("latest")
    if v.lower() == "earliest":
        if not allow_earliest:
            raise ConfigError(f"option {name} cannot be earliest")
        return OffsetSpec("earliest")
    offsets = _json_partitions(name, v, "23")
    for topic, parts in offsets.items():
        for part, off in parts.items():
            if off < EARLIEST or (off == EARLIEST and not allow_earliest):
                raise ConfigError(
                    f"option {name}: offset {off} of {topic}-{part} is not "
                    "an offset, -1 (latest)" + (" or -2 (earliest)" if allow_earliest else "")
                )
    return OffsetSpec("offsets", offsets=offsets)


def _refuse_latest_start(starting: OffsetSpec) -> None:
    # As Spark's Kafka source: a batch read that starts at the latest offset reads nothing
    # by construction, which is a mistake rather than a query.
    if starting.kind == "latest":
        raise ConfigError("option startingOffsets can't be latest for batch queries")
    for topic, parts in starting.offsets.items():
        for part, off in parts.items():
            if off == LATEST:
                raise ConfigError(
                    f"option startingOffsets for {topic}-{part} can't be latest (-1) for batch "
                    "queries"
                )


def _kafka_config(kafka: dict[str, Any], for_write: bool) -> None:
    for key, why in _FORBIDDEN_KAFKA.items():
        if key in kafka:
            raise ConfigError(f"Kafka option 'kafka.{key}' is not supported: {why}")
    if "bootstrap.servers" not in kafka:
        raise ConfigError(
            "option kafka.bootstrap.servers must be set: "
            '.option("kafka.bootstrap.servers", "host1:9092,host2:9092")'
        )
    if not for_write:
        # Unknown or malformed consumer keys fail here, on the driver, naming the key.
        ConsumerConfig(kafka)


def parse_options(
    options: Mapping[str, Any], *, streaming: bool = False, write: bool = False
) -> KafkaOptions:
    """Parse Spark-style ``options`` (case-insensitive names) for a batch read, a streaming
    read (``streaming``: startingOffsets defaults to latest, no endingOffsets) or a write."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    original = {str(k).lower(): str(k) for k in options}
    kafka = {original[k][6:]: v for k, v in opts.items() if k.startswith("kafka.")}
    allowed = _WRITE_OPTIONS if write else _READ_OPTIONS
    for key in opts:
        if not key.startswith("kafka.") and key not in allowed:
            raise ConfigError(_unknown_option(original[key], allowed, write))
    _kafka_config(kafka, write)
    if write:
        return KafkaOptions(
            kafka=kafka,
            topic=opts.get("topic"),
            include_headers=_bool("includeHeaders", opts.get("includeheaders", "false")),
        )
    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(chosen) != 1:
        raise ConfigError(
            "exactly one of the options subscribe, subscribePattern and assign "
            f"must be set, not {len(chosen)}"
        )
    subscribe = pattern = None
    assign = None
    if "subscribe" in opts:
        subscribe = [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
        if not subscribe:
            raise ConfigError("option subscribe names no topic")
    elif "subscribepattern" in opts:
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"option subscribePattern is not a regex: {exc}") from None
    else:
        try:
            parsed = json.loads(opts["assign"])
            assign = [TopicPartition(str(t), int(p)) for t, ps in parsed.items() for p in ps]
        except (ValueError, AttributeError, TypeError):
            raise ConfigError(
                f'option assign must be JSON such as {{"topicA":[0,1]}}, not {opts["assign"]!r}'
            ) from None
        if not assign:
            raise ConfigError("option assign names no partition")

    if "startingtimestamp" in opts:
        starting = OffsetSpec(
            "timestamps",
            timestamp=_positive_or_zero("startingTimestamp", opts["startingtimestamp"]),
        )
    elif "startingoffsetsbytimestamp" in opts:
        starting = OffsetSpec(
            "timestamps",
            timestamps=_json_partitions(
                "startingOffsetsByTimestamp", opts["startingoffsetsbytimestamp"], "1700000000000"
            ),
        )
    elif "startingoffsets" in opts:
        starting = _offsets("startingOffsets", opts["startingoffsets"], True)
        if not streaming and not write:
            _refuse_latest_start(starting)
    else:
        starting = OffsetSpec("latest" if streaming else "earliest")
    ending = OffsetSpec("latest")
    ending_keys = [
        k for k in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp") if k in opts
    ]
    if ending_keys and streaming:
        raise ConfigError(f"option {original[ending_keys[0]]} is for batch reads only")
    if "endingtimestamp" in opts:
        ending = OffsetSpec(
            "timestamps", timestamp=_positive_or_zero("endingTimestamp", opts["endingtimestamp"])
        )
    elif "endingoffsetsbytimestamp" in opts:
        ending = OffsetSpec(
            "timestamps",
            timestamps=_json_partitions(
                "endingOffsetsByTimestamp", opts["endingoffsetsbytimestamp"], "1700000000000"
            ),
        )
    elif "endingoffsets" in opts:
        ending = _offsets("endingOffsets", opts["endingoffsets"], False)
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise ConfigError("option startingOffsetsByTimestampStrategy must be error or latest")
    trigger_keys = [
        k for k in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay") if k in opts
    ]
    if trigger_keys and not streaming:
        raise ConfigError(f"option {original[trigger_keys[0]]} is for streaming reads only")
    commit_group = opts.get("commitoffsetstogroup")
    if commit_group is not None:
        if not streaming:
            raise ConfigError(
                "option commitOffsetsToGroup is for streaming reads only: a batch read has no "
                "progress to commit"
            )
        if not commit_group.strip():
            raise ConfigError("option commitOffsetsToGroup must name a consumer group")
    group_id, fixed = _group_id(kafka, opts.get("groupidprefix"), streaming)
    return KafkaOptions(
        kafka=kafka,
        group_id=group_id,
        group_id_fixed=fixed,
        fetch_offset_retries=(
            _positive("fetchOffset.numRetries", opts["fetchoffset.numretries"])
            if "fetchoffset.numretries" in opts
            else 3
        ),
        fetch_offset_retry_interval_ms=(
            _positive_or_zero("fetchOffset.retryIntervalMs", opts["fetchoffset.retryintervalms"])
            if "fetchoffset.retryintervalms" in opts
            else 10
        ),
        commit_group=commit_group,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        timestamp_strategy=strategy,
        fail_on_data_loss=_bool("failOnDataLoss", opts.get("failondataloss", "true")),
        min_partitions=(
            _positive("minPartitions", opts["minpartitions"]) if "minpartitions" in opts else None
        ),
        max_records_per_partition=(
            _positive("maxRecordsPerPartition", opts["maxrecordsperpartition"])
            if "maxrecordsperpartition" in opts
            else None
        ),
        min_records_per_partition=(
            _positive_or_zero("minRecordsPerPartition", opts["minrecordsperpartition"])
            if "minrecordsperpartition" in opts
            else KafkaOptions.min_records_per_partition
        ),
        include_headers=_bool("includeHeaders", opts.get("includeheaders", "false")),
        max_offsets_per_trigger=(
            _positive("maxOffsetsPerTrigger", opts["maxoffsetspertrigger"])
            if "maxoffsetspertrigger" in opts
            else None
        ),
        min_offsets_per_trigger=(
            _positive("minOffsetsPerTrigger", opts["minoffsetspertrigger"])
            if "minoffsetspertrigger" in opts
            else None
        ),
        max_trigger_delay_ms=(
            _duration_ms("maxTriggerDelay", opts["maxtriggerdelay"])
            if "maxtriggerdelay" in opts
            else 15 * 60 * 1000
        ),
        poll_timeout_ms=(
            _positive("kafkaConsumer.pollTimeoutMs", opts["kafkaconsumer.polltimeoutms"])
            if "kafkaconsumer.polltimeoutms" in opts
            else 120000
        ),
    )


def _unknown_option(name: str, allowed: set[str], write: bool) -> str:
    what = "sink" if write else "source"
    close = difflib.get_close_matches(name.lower(), sorted(allowed), n=1, cutoff=0.75)
    if close:
        fix = f"did you mean {_SPELLING.get(close[0], close[0])}?"
    else:
        fix = (
            "remove it, or prefix a Kafka client key with kafka. "
            "(the options are listed in docs/spark.md)"
        )
    return f"option {name} is not supported by the kafkaconsumer {what}: {fix}"


def _group_id(kafka: dict[str, Any], prefix: str | None, streaming: bool) -> tuple[str, bool]:
    # As Spark's source: kafka.group.id wins (with a warning: queries sharing a group id
    # interfere in Spark); else a unique id per query under groupIdPrefix.
    if "group.id" in kafka:
        logger.warning(
            "kafka.group.id is set: every consumer of this query uses group %s; queries "
            "sharing a group id share its quotas and ACLs",
            kafka["group.id"],
        )
        if prefix is not None:
            logger.warning("option groupIdPrefix is ignored as kafka.group.id is set")
        return str(kafka.pop("group.id")), True
    if prefix is None:
        prefix = "spark-kafka-source" if streaming else "spark-kafka-relation"
    return f"{prefix}-{uuid.uuid4()}", False


def _positive_or_zero(name: str, value: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ConfigError(
            f"option {name} must be milliseconds since the epoch, not {value!r}"
        ) from None
    if n < 0:
        raise ConfigError(f"option {name} must not be negative")
    return n
