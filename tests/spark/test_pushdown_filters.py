"""How pushed filters become offset bounds, and which go back to Spark (no broker, no Spark
session)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.datasource import (  # noqa: E402
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from kafkaconsumer.spark.offsets import OffsetRange, within  # noqa: E402
from kafkaconsumer.spark.pushdown import Pushdown  # noqa: E402
from kafkaconsumer.structs import TopicPartition  # noqa: E402

pytestmark = pytest.mark.timeout(30)


def _at(ms: int, extra_us: int = 0) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).replace(
        microsecond=(ms % 1000) * 1000 + extra_us
    )


def test_partition_topic_and_offset_filters_are_exact() -> None:
    filters = [
        EqualTo(("topic",), "a"),
        In(("partition",), (0, 2, 5)),
        EqualTo(("partition",), 2),
        GreaterThan(("offset",), 10),
        LessThanOrEqual(("offset",), 20),
        GreaterThanOrEqual(("offset",), 5),
    ]
    pushed, back = Pushdown().push(filters)
    assert back == []
    assert pushed.topics == frozenset({"a"}) and pushed.partitions == frozenset({2})
    assert (pushed.offset_low, pushed.offset_high) == (11, 21)
    assert pushed.keeps(TopicPartition("a", 2))
    assert not pushed.keeps(TopicPartition("a", 0)) and not pushed.keeps(TopicPartition("b", 2))
    eq, _ = Pushdown().push([EqualTo(("offset",), 7)])
    assert (eq.offset_low, eq.offset_high) == (7, 8)
    lt, _ = Pushdown().push([LessThan(("offset",), 7)])
    assert (lt.offset_low, lt.offset_high) == (None, 7)


def test_timestamp_filters_narrow_and_go_back_to_spark() -> None:
    t = 1_700_000_000_000
    between = [GreaterThanOrEqual(("timestamp",), _at(t)), LessThanOrEqual(("timestamp",), _at(t))]
    pushed, back = Pushdown().push(between)
    assert back == between
    # Record timestamps are ms: ts >= t and ts <= t keep exactly the records stamped t.
    assert (pushed.ts_low_ms, pushed.ts_high_ms) == (t, t + 1)
    # A literal between two milliseconds: > and >= start at the next one, < ends there.
    half = _at(t, 500)
    assert Pushdown().push([GreaterThan(("timestamp",), half)])[0].ts_low_ms == t + 1
    assert Pushdown().push([GreaterThanOrEqual(("timestamp",), half)])[0].ts_low_ms == t + 1
    assert Pushdown().push([LessThan(("timestamp",), half)])[0].ts_high_ms == t + 1
    assert Pushdown().push([LessThanOrEqual(("timestamp",), half)])[0].ts_high_ms == t + 1
    assert Pushdown().push([GreaterThan(("timestamp",), _at(t))])[0].ts_low_ms == t + 1
    assert Pushdown().push([LessThan(("timestamp",), _at(t))])[0].ts_high_ms == t
    # A naive datetime is UTC.
    naive = _at(t).replace(tzinfo=None)
    assert Pushdown().push([EqualTo(("timestamp",), naive)])[0].ts_low_ms == t


def test_other_filters_are_handed_back_untouched() -> None:
    others = [
        Not(EqualTo(("partition",), 1)),
        IsNull(("key",)),
        StringStartsWith(("topic",), "a"),
        EqualTo(("partition",), "1"),
        GreaterThan(("offset",), 1.5),
        In(("partition",), (1, None)),
        EqualTo(("value",), b"x"),
    ]
    pushed, back = Pushdown().push(others)
    assert back == others and pushed == Pushdown()


def test_within_cuts_a_range_to_the_limits() -> None:
    r = OffsetRange("a", 0, 10, 100)
    assert within(r, (None, None)) == r
    assert within(r, (20, 30)) == OffsetRange("a", 0, 20, 30)
    assert within(r, (200, None)) == OffsetRange("a", 0, 200, 200)
    assert within(r, (None, 5)) == OffsetRange("a", 0, 10, 10)
