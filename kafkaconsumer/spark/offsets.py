"""Offset planning on the driver: which partitions, which offset ranges, how they split into
tasks (Spark's ``KafkaOffsetReader`` and ``KafkaOffsetRangeCalculator``).

Offsets are kept as Spark's Kafka source writes them into checkpoints:
``{"topic": {"0": 23, "1": 7}}``.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from typing import Any, NamedTuple, TypeVar

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import ConfigError, KafkaError
from kafkaconsumer.spark.options import EARLIEST, LATEST, KafkaOptions, OffsetSpec
from kafkaconsumer.spark.pushdown import Limits, Pushdown
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "LiveBounds",
    "OffsetRange",
    "from_json",
    "live_bounds",
    "pack_ranges",
    "partition_spec",
    "plan",
    "plan_ranges",
    "resolve",
    "resolve_live",
    "split_ranges",
    "to_json",
    "topic_partitions",
    "with_retries",
    "within",
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
    """A consumer for metadata and offset lookups (no group joined, nothing committed)."""
    cfg = opts.consumer_config("driver")
    cfg["enable.auto.commit"] = False
    return KafkaConsumer(cfg)


T = TypeVar("T")


def with_retries(opts: KafkaOptions, lookup: Callable[[KafkaConsumer], T]) -> T:
    """``lookup`` run with a fresh planning consumer, tried ``fetchOffset.numRetries`` times
    ``fetchOffset.retryIntervalMs`` apart when it fails with a Kafka error (as Spark's
    ``KafkaOffsetReader`` retries its offset fetches); a configuration error is not retried."""
    attempt = 1
    while True:
        try:
            with planning_consumer(opts) as consumer:
                return lookup(consumer)
        except ConfigError:
            raise
        except KafkaError as exc:
            if attempt >= opts.fetch_offset_retries:
                raise
            logger.warning(
                "offset lookup failed (attempt %d of %d, fetchOffset.numRetries), retrying "
                "in %d ms: %s",
                attempt,
                opts.fetch_offset_retries,
                opts.fetch_offset_retry_interval_ms,
                exc,
            )
            time.sleep(opts.fetch_offset_retry_interval_ms / 1000)
            attempt += 1


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


def plan_ranges(opts: KafkaOptions, *, keep_empty: bool = False) -> list[OffsetRange]:
    """The offset ranges of a batch read, resolved now, split for ``minPartitions`` and
    ``maxRecordsPerPartition``; ``keep_empty`` keeps one (empty) range of each partition that
    has no records now (a task that re-resolves its bounds may find some)."""
    return plan(opts, keep_empty=keep_empty)[0]


def plan(
    opts: KafkaOptions, *, keep_empty: bool = False, pushdown: Pushdown | None = None
) -> tuple[list[OffsetRange], Limits]:
    """:func:`plan_ranges` narrowed by ``pushdown``: the partitions it rules out are left
    out, each range lies within the offsets it allows, and those are returned too (a task
    that resolves its bounds again stays within them)."""

    def lookup(
        consumer: KafkaConsumer,
    ) -> tuple[list[TopicPartition], dict[TopicPartition, int], dict[TopicPartition, int], Limits]:
        tps = topic_partitions(consumer, opts)
        if pushdown is not None:
            tps = [tp for tp in tps if pushdown.keeps(tp)]
        start = resolve(
            consumer, tps, opts.starting, starting=True, strategy=opts.timestamp_strategy
        )
        end = resolve(consumer, tps, opts.ending, starting=False)
        limits = pushdown.limits(consumer, opts.kafka, tps) if pushdown is not None else {}
        return tps, start, end, limits

    tps, start, end, limits = with_retries(opts, lookup)
    ranges = []
    for tp in tps:
        if start[tp] > end[tp]:
            raise ConfigError(
                f"{tp.topic}-{tp.partition}: the starting offset {start[tp]} is "
                f"after the ending offset {end[tp]}"
            )
        r = OffsetRange(tp.topic, tp.partition, start[tp], end[tp])
        ranges.append(within(r, limits.get(tp, (None, None))))
    if limits:
        logger.info(
            "pushed filters narrowed the read to %d of %d records",
            sum(r.end - r.start for r in ranges),
            sum(end[tp] - start[tp] for tp in tps),
        )
    out = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    if keep_empty:
        covered = {r.tp for r in out}
        out.extend(r for r in ranges if r.tp not in covered)
    return out, limits


def within(r: OffsetRange, limits: tuple[int | None, int | None]) -> OffsetRange:
    """``r`` cut to the offsets ``limits`` allow (possibly empty)."""
    low, high = limits
    start = r.start if low is None else max(r.start, low)
    end = r.end if high is None else min(r.end, high)
    return OffsetRange(r.topic, r.partition, start, max(start, end))


class LiveBounds(NamedTuple):
    """Which bounds of a planned range a task resolves again when it runs (Spark's source
    resolves earliest, latest and timestamps for every action, not once per DataFrame).

    ``start``: the range starts where the starting option points when the task runs;
    ``floor``: the range starts no lower than the partition's earliest offset then (the
    ranges after the first of a partition split by ``minPartitions``, when the read starts at
    earliest); ``end``: the range ends where the ending option points then.

    Thread-safety: immutable.
    """

    start: bool
    floor: bool
    end: bool


def live_bounds(opts: KafkaOptions, ranges: list[OffsetRange]) -> list[LiveBounds]:
    """For each of ``ranges`` (from :func:`plan_ranges`), the bounds its task re-resolves:
    every bound given as earliest, latest (-2/-1 in JSON) or a timestamp; offsets given as
    numbers stay fixed. Only the first range of a partition has a live start and only its
    last range a live end; the offsets between split ranges stay as planned."""
    first: dict[TopicPartition, int] = {}
    last: dict[TopicPartition, int] = {}
    for r in ranges:
        first[r.tp] = min(first.get(r.tp, r.start), r.start)
        last[r.tp] = max(last.get(r.tp, r.end), r.end)
    out = []
    for r in ranges:
        start_spec = partition_spec(opts.starting, r.tp)
        end_spec = partition_spec(opts.ending, r.tp)
        from_earliest = start_spec.kind == "earliest"
        out.append(
            LiveBounds(
                start=r.start == first[r.tp] and start_spec.kind != "offsets",
                floor=from_earliest and r.start != first[r.tp],
                end=r.end == last[r.tp] and end_spec.kind != "offsets",
            )
        )
    return out


def partition_spec(spec: OffsetSpec, tp: TopicPartition) -> OffsetSpec:
    """``spec`` for ``tp`` alone: per-partition JSON offsets of -2/-1 become earliest/latest,
    per-partition timestamps keep only ``tp``'s."""
    if spec.kind == "offsets":
        offset = spec.offsets.get(tp.topic, {}).get(tp.partition)
        if offset == EARLIEST:
            return OffsetSpec("earliest")
        if offset == LATEST:
            return OffsetSpec("latest")
        return OffsetSpec("offsets", offsets={tp.topic: {tp.partition: offset or 0}})
    if spec.kind == "timestamps" and spec.timestamp is None:
        return OffsetSpec(
            "timestamps",
            timestamps={tp.topic: {tp.partition: spec.timestamps[tp.topic][tp.partition]}},
        )
    return spec


def resolve_live(
    consumer: KafkaConsumer, opts: KafkaOptions, r: OffsetRange, live: LiveBounds
) -> OffsetRange:
    """``r`` with the bounds ``live`` names resolved now (an empty range if they crossed)."""
    start, end = r.start, r.end
    if live.start or live.floor:
        spec = partition_spec(opts.starting, r.tp)
        now = resolve(consumer, [r.tp], spec, starting=True, strategy=opts.timestamp_strategy)
        start = now[r.tp] if live.start else max(start, now[r.tp])
    if live.end:
        spec = partition_spec(opts.ending, r.tp)
        end = resolve(consumer, [r.tp], spec, starting=False)[r.tp]
    return OffsetRange(r.topic, r.partition, start, max(start, end))


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


def pack_ranges(
    ranges: list[OffsetRange],
    records: int,
    min_partitions: int | None = None,
    max_records: int | None = None,
) -> list[list[int]]:
    """Which of ``ranges`` (the indexes, in order) one task reads together: neighbouring
    ranges of different partitions while their records add up to at most ``records`` (a
    larger range goes alone; 0: every range alone). Each task of a Python data source costs
    Spark tens of milliseconds before it reads anything, more than reading a few hundred
    thousand small records takes, so small ranges share a task, as Spark's file sources pack
    small files. Never fewer tasks than ``min_partitions``, never more than ``max_records``
    records in one (as planned: live bounds may move when the task runs)."""
    if records <= 0:
        return [[i] for i in range(len(ranges))]
    target = records
    if max_records:
        target = min(target, max_records)
    if min_partitions:
        target = min(target, sum(r.end - r.start for r in ranges) // min_partitions)
    groups: list[list[int]] = []
    group: list[int] = []
    held = 0
    seen: set[TopicPartition] = set()
    for i, r in enumerate(ranges):
        size = r.end - r.start
        if group and (held + size > target or r.tp in seen):
            groups.append(group)
            group, held, seen = [], 0, set()
        group.append(i)
        held += size
        seen.add(r.tp)
    if group:
        groups.append(group)
    if min_partitions and len(groups) < min_partitions:
        return [[i] for i in range(len(ranges))]  # split for minPartitions: keep the split
    return groups


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    size = r.end - r.start
    parts = max(1, min(parts, size))
    bounds = [r.start + size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in pairwise(bounds) if b > a]
