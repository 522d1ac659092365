"""Offset planning on the driver: which partitions, which offset ranges, how they split into
tasks (Spark's ``KafkaOffsetReader`` and ``KafkaOffsetRangeCalculator``).

Offsets are kept as Spark's Kafka source writes them into checkpoints:
``{"topic": {"0": 23, "1": 7}}``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any, NamedTuple

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import ConfigError, KafkaError
from kafkaconsumer.spark.options import EARLIEST, LATEST, KafkaOptions, OffsetSpec
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "OffsetRange",
    "from_json",
    "plan_ranges",
    "resolve",
    "split_ranges",
    "to_json",
    "topic_partitions",
]


class OffsetRange(NamedTuple):
    """Offsets ``[start, end)`` of one partition: one Spark task reads one range.

    Thread-safety: immutable.
    """

    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> TopicPartition:
        """The range's partition."""
        return TopicPartition(self.topic, self.partition)


def planning_consumer(opts: KafkaOptions) -> KafkaConsumer:
    """A consumer for metadata and offset lookups (no group, nothing committed)."""
    cfg = dict(opts.kafka)
    cfg["enable.auto.commit"] = False
    return KafkaConsumer(cfg)


def topic_partitions(consumer: KafkaConsumer, opts: KafkaOptions) -> list[TopicPartition]:
    """The partitions ``subscribe``/``subscribePattern``/``assign`` name, sorted."""
    if opts.assign is not None:
        return sorted(set(opts.assign))
    if opts.subscribe is not None:
        topics = opts.subscribe
    else:
        pattern = re.compile(opts.subscribe_pattern or "")
        topics = [
            t for t in consumer.list_topics() if pattern.fullmatch(t) and not t.startswith("__")
        ]
    out = []
    for topic in topics:
        for info in consumer.partitions_for(topic) or []:
            out.append(TopicPartition(topic, info.partition))
    return sorted(out)


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as Spark's Kafka source checkpoints them."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json(offsets: Mapping[str, Mapping[str, Any]]) -> dict[TopicPartition, int]:
    """The inverse of :func:`to_json`."""
    return {
        TopicPartition(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()
    }


def resolve(
    consumer: KafkaConsumer,
    tps: list[TopicPartition],
    spec: OffsetSpec,
    *,
    starting: bool,
    strategy: str = "error",
) -> dict[TopicPartition, int]:
    """Concrete offsets of ``tps`` for ``spec`` (the bounds of a read, fixed now)."""
    if not tps:
        return {}
    if spec.kind == "earliest":
        return consumer.beginning_offsets(tps)
    if spec.kind == "latest":
        return consumer.end_offsets(tps)
    what = "startingOffsets" if starting else "endingOffsets"
    if spec.kind == "offsets":
        given = {
            TopicPartition(t, p): o for t, parts in spec.offsets.items() for p, o in parts.items()
        }
        if set(given) != set(tps):
            raise ConfigError(
                f"{what} names partitions {_names(given)} but the read covers {_names(tps)}: "
                "specific offsets must name every partition"
            )
        earliest = consumer.beginning_offsets([tp for tp in tps if given[tp] == EARLIEST])
        latest = consumer.end_offsets([tp for tp in tps if given[tp] == LATEST])
        return {
            tp: earliest[tp]
            if given[tp] == EARLIEST
            else latest[tp]
            if given[tp] == LATEST
            else given[tp]
            for tp in tps
        }
    # Timestamps: the first offset whose timestamp is at or after it.
    if spec.timestamp is not None:
        query = {tp: spec.timestamp for tp in tps}
    else:
        query = {
            TopicPartition(t, p): ts
            for t, parts in spec.timestamps.items()
            for p, ts in parts.items()
        }
        if set(query) != set(tps):
            raise ConfigError(
                f"{what}ByTimestamp names partitions {_names(query)} but the read "
                f"covers {_names(tps)}: it must name every partition"
            )
    found = consumer.offsets_for_times(query)
    missing = [tp for tp in tps if found.get(tp) is None]
    latest = consumer.end_offsets(missing) if missing else {}
    out = {}
    for tp in tps:
        hit = found.get(tp)
        if hit is not None:
            out[tp] = hit.offset
        elif starting and strategy == "error":
            raise KafkaError(
                f"no record of {tp.topic}-{tp.partition} has a timestamp at or "
                f"after {query[tp]} (startingOffsetsByTimestampStrategy=error)"
            )
        else:
            out[tp] = latest[tp]
    return out


def _names(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps)) + "]"


def plan_ranges(opts: KafkaOptions) -> list[OffsetRange]:
    """The offset ranges of a batch read, fixed now, split for ``minPartitions`` and
    ``maxRecordsPerPartition``."""
    with planning_consumer(opts) as consumer:
        tps = topic_partitions(consumer, opts)
        start = resolve(
            consumer, tps, opts.starting, starting=True, strategy=opts.timestamp_strategy
        )
        end = resolve(consumer, tps, opts.ending, starting=False)
    ranges = []
    for tp in tps:
        if start[tp] > end[tp]:
            raise ConfigError(
                f"{tp.topic}-{tp.partition}: the starting offset {start[tp]} is "
                f"after the ending offset {end[tp]}"
            )
        ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
    return split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)


def split_ranges(
    ranges: list[OffsetRange], min_partitions: int | None, max_records: int | None
) -> list[OffsetRange]:
    """Drop empty ranges; split those over ``max_records``, then the large ones until there
    are at least ``min_partitions`` (in proportion to their size, as Spark does)."""
    out = [r for r in ranges if r.end > r.start]
    if max_records:
        out = [
            piece for r in out for piece in _split(r, math.ceil((r.end - r.start) / max_records))
        ]
    if min_partitions and len(out) < min_partitions:
        total = sum(r.end - r.start for r in out)
        pieces: list[OffsetRange] = []
        for r in out:
            parts = max(1, math.ceil((r.end - r.start) * min_partitions / total)) if total else 1
            pieces.extend(_split(r, parts))
        out = pieces
    return out


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    size = r.end - r.start
    parts = max(1, min(parts, size))
    bounds = [r.start + size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in pairwise(bounds) if b > a]
