"""Predicate pushdown of the Data Source: filters on ``topic``, ``partition``, ``offset`` and
``timestamp`` narrow the offset ranges a batch read plans, so that the records they exclude
are never fetched.

A narrowing never drops a row the filter keeps:

- ``topic`` and ``partition`` (``=``, ``IN``) choose partitions, ``offset`` (``=``, ``<``,
  ``<=``, ``>``, ``>=``) bounds each range: exact, so Spark does not evaluate them again.
- ``timestamp`` (``=``, ``<``, ``<=``, ``>``, ``>=``, so also ``BETWEEN``): ListOffsets by
  timestamp answers the first offset whose timestamp is at or after a given time, so every
  record before it is earlier: a lower bound may start the range there. CreateTime timestamps
  need not grow with offsets (producers set them), so an upper bound may only end the range
  on a topic whose ``message.timestamp.type`` is LogAppendTime (the broker's clock). Records
  inside the narrowed range may still fall outside the filter, so every timestamp filter is
  also handed back to Spark to evaluate on the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import KafkaError
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["Limits", "Pushdown"]

#: Per partition, the offsets ``[low, high)`` the filters allow (None: unbounded).
Limits = dict[TopicPartition, tuple[int | None, int | None]]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _micros(value: Any) -> int | None:
    # Spark hands timestamp literals over as datetimes; a naive one is UTC (Spark's internal
    # form is microseconds since the epoch).
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    micros: int = (value - _EPOCH) // _US
    return micros


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


@dataclass(frozen=True)
class Pushdown:
    """The filters a batch read accepted, as bounds (all of them hold: filters are ANDed).

    ``ts_low_ms``: the smallest record timestamp (ms) a row may have; ``ts_high_ms``: the
    smallest one it may no longer have. Offsets: ``[offset_low, offset_high)``.

    Thread-safety: immutable (pickled to Spark's planning worker with the reader).
    """

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    offset_low: int | None = None
    offset_high: int | None = None
    ts_low_ms: int | None = None
    ts_high_ms: int | None = None

    def push(self, filters: Iterable[Any]) -> tuple[Pushdown, list[Any]]:
        """This pushdown narrowed by ``filters`` (``pyspark.sql.datasource.Filter``s), and
        those Spark must still evaluate: the ones not understood and the timestamp ones."""
        out = self
        back = []
        for f in filters:
            narrowed, exact = out._push_one(f)
            if narrowed is not None:
                out = narrowed
            if narrowed is None or not exact:
                back.append(f)
        return out, back

    def _push_one(self, f: Any) -> tuple[Pushdown | None, bool]:
        from pyspark.sql.datasource import (
            EqualTo,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            LessThan,
            LessThanOrEqual,
        )

        column = f.attribute[0] if len(getattr(f, "attribute", ())) == 1 else None
        value: Any = getattr(f, "value", None)
        if column == "topic":
            names = (
                [value] if isinstance(f, EqualTo) else list(value) if isinstance(f, In) else None
            )
            if names is None or not all(isinstance(n, str) for n in names):
                return None, False
            return replace(self, topics=_intersect(self.topics, names)), True
        if column == "partition":
            values = (
                [value] if isinstance(f, EqualTo) else list(value) if isinstance(f, In) else None
            )
            if values is None or any(_int(v) is None for v in values):
                return None, False
            return replace(self, partitions=_intersect(self.partitions, values)), True
        if column == "offset":
            n = _int(value)
            if n is None:
                return None, False
            low, high = {
                EqualTo: (n, n + 1),
                GreaterThan: (n + 1, None),
                GreaterThanOrEqual: (n, None),
                LessThan: (None, n),
                LessThanOrEqual: (None, n + 1),
            }.get(type(f), (None, None))
            if low is None and high is None:
                return None, False
            return replace(
                self,
                offset_low=_max(self.offset_low, low),
                offset_high=_min(self.offset_high, high),
            ), True
        if column == "timestamp":
            us = _micros(value)
            if us is None:
                return None, False
            # Record timestamps are milliseconds: t_ms * 1000 compared with the literal.
            at_or_after = -(-us // 1000)  # ms >= ceil(us / 1000)  <=>  ms * 1000 >= us
            after = us // 1000 + 1  # ms * 1000 > us
            ts_low, ts_high = {
                EqualTo: (at_or_after, after),
                GreaterThan: (after, None),
                GreaterThanOrEqual: (at_or_after, None),
                LessThan: (None, at_or_after),
                LessThanOrEqual: (None, after),
            }.get(type(f), (None, None))
            if ts_low is None and ts_high is None:
                return None, False
            return replace(
                self,
                ts_low_ms=_max(self.ts_low_ms, ts_low),
                ts_high_ms=_min(self.ts_high_ms, ts_high),
            ), False
        return None, False

    def keeps(self, tp: TopicPartition) -> bool:
        """Whether rows of ``tp`` may pass the filters."""
        return (self.topics is None or tp.topic in self.topics) and (
            self.partitions is None or tp.partition in self.partitions
        )

    def limits(
        self, consumer: KafkaConsumer, kafka: dict[str, Any], tps: list[TopicPartition]
    ) -> Limits:
        """Per partition of ``tps``, the offsets the filters allow, timestamps resolved now
        with ``consumer`` (``kafka``: the client configuration, to ask the broker which
        topics stamp LogAppendTime)."""
        out: Limits = {tp: (self.offset_low, self.offset_high) for tp in tps}
        # ListOffsets treats negative timestamps as earliest/latest: no narrowing below 1 ms.
        if self.ts_low_ms is not None and self.ts_low_ms > 0 and tps:
            found = consumer.offsets_for_times({tp: self.ts_low_ms for tp in tps})
            none = [tp for tp in tps if found.get(tp) is None]
            # No record at or after the bound yet: every record there is now is earlier.
            ends = consumer.end_offsets(none) if none else {}
            for tp in tps:
                hit = found.get(tp)
                low = hit.offset if hit is not None else ends[tp]
                out[tp] = (_max(out[tp][0], low), out[tp][1])
        if self.ts_high_ms is not None and self.ts_high_ms > 0 and tps:
            appended = _log_append_topics(kafka, {tp.topic for tp in tps})
            stamped = [tp for tp in tps if tp.topic in appended]
            if stamped:
                found = consumer.offsets_for_times({tp: self.ts_high_ms for tp in stamped})
                for tp in stamped:
                    hit = found.get(tp)
                    if hit is not None:
                        out[tp] = (out[tp][0], _min(out[tp][1], hit.offset))
        return out


def _intersect(current: frozenset[Any] | None, values: Iterable[Any]) -> frozenset[Any]:
    given = frozenset(values)
    return given if current is None else current & given


def _log_append_topics(kafka: dict[str, Any], topics: set[str]) -> set[str]:
    # Asked only when an upper timestamp bound was pushed; an answer that does not come
    # leaves the ranges unnarrowed (correct, only slower).
    from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
    from kafkaconsumer.config import AdminClientConfig

    names = AdminClientConfig.config_names()
    config = {k: v for k, v in kafka.items() if k in names}
    try:
        with KafkaAdminClient(config) as admin:
            described = admin.describe_configs(
                [ConfigResource("topic", t) for t in sorted(topics)],
                keys=["message.timestamp.type"],
            )
    except KafkaError as exc:
        logger.warning(
            "cannot describe the timestamp type of %s (%s): upper timestamp bounds are left "
            "to Spark",
            sorted(topics),
            exc,
        )
        return set()
    out = set()
    for resource, entries in described.items():
        entry = entries.get("message.timestamp.type")
        if entry is not None and entry.value == "LogAppendTime":
            out.add(resource.name)
    return out
