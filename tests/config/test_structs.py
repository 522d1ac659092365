"""Public value types: TopicPartition, offsets, ConsumerRecords."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

from kafkaconsumer.structs import (
    ConsumerGroupMetadata,
    ConsumerRecords,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)


@dataclass
class Rec:
    """Stand-in for ConsumerRecord (only topic/partition/offset are used here)."""

    topic: str
    partition: int
    offset: int


def test_topic_partition() -> None:
    tp = TopicPartition("orders", 3)
    assert str(tp) == "orders-3"
    assert tp == ("orders", 3)
    assert hash(tp) == hash(TopicPartition("orders", 3))
    assert {tp: 1}[TopicPartition("orders", 3)] == 1
    assert tp.topic == "orders" and tp.partition == 3
    assert pickle.loads(pickle.dumps(tp)) == tp
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 1), TopicPartition("a", 0)]) == [
        TopicPartition("a", 0),
        TopicPartition("a", 1),
        TopicPartition("b", 0),
    ]


def test_offset_and_metadata() -> None:
    om = OffsetAndMetadata(10)
    assert om == (10, "", None)
    assert OffsetAndMetadata(10, None, -1) == OffsetAndMetadata(10, "", None)
    assert OffsetAndMetadata(5, "m", 7).leader_epoch == 7
    with pytest.raises(ValueError, match="negative offset"):
        OffsetAndMetadata(-1)
    with pytest.raises(TypeError):
        OffsetAndMetadata("5")  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(OffsetAndMetadata(3, "x", 2))) == OffsetAndMetadata(3, "x", 2)
    assert OffsetAndMetadata(3)._replace(offset=4) == OffsetAndMetadata(4)

    # poll()'s next offsets: what the checked constructor makes of a position, without its checks.
    for epoch in (None, -1, 0, 7):
        fast = OffsetAndMetadata._of_position(12, epoch)
        assert type(fast) is OffsetAndMetadata and fast == OffsetAndMetadata(12, "", epoch)


def test_offset_and_timestamp() -> None:
    assert OffsetAndTimestamp(1, 2) == (1, 2, None)
    assert OffsetAndTimestamp(1, 2, -1).leader_epoch is None
    with pytest.raises(ValueError):
        OffsetAndTimestamp(-1, 2)
    with pytest.raises(ValueError):
        OffsetAndTimestamp(1, -2)


def test_group_metadata() -> None:
    gm = ConsumerGroupMetadata("g")
    assert (gm.generation_id, gm.member_id, gm.group_instance_id) == (-1, "", None)
    assert ConsumerGroupMetadata("g", 3, "m", "i").member_id == "m"


def test_consumer_records() -> None:
    tp0, tp1, other = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
    recs = {
        tp0: [Rec("t", 0, 0), Rec("t", 0, 1)],
        tp1: [Rec("t", 1, 5)],
        other: [Rec("u", 0, 9)],
        TopicPartition("t", 2): [],
    }
    cr = ConsumerRecords(recs, next_offsets={tp0: OffsetAndMetadata(2)})  # type: ignore[arg-type]
    assert len(cr) == 4 and cr.count() == 4 and bool(cr) and not cr.is_empty()
    assert [r.offset for r in cr] == [0, 1, 5, 9]
    assert cr.partitions() == {tp0, tp1, other}  # the empty partition is dropped
    assert [r.offset for r in cr.records(tp0)] == [0, 1]
    assert list(cr.records(TopicPartition("t", 7))) == []
    assert [r.offset for r in cr.records("t")] == [0, 1, 5]
    assert cr.next_offsets() == {tp0: OffsetAndMetadata(2)}
    # Iterating twice gives the same records.
    assert len(list(cr)) == len(list(cr)) == 4
    # One partition (the common poll) iterates its own list, twice alike too.
    one = ConsumerRecords({tp0: recs[tp0], TopicPartition("t", 2): []})  # type: ignore[dict-item]
    assert [r.offset for r in one] == [r.offset for r in one] == [0, 1]


def test_consumer_records_empty_and_from_records() -> None:
    empty = ConsumerRecords.EMPTY
    assert len(empty) == 0 and empty.is_empty() and not empty and list(empty) == []
    assert empty.partitions() == set()
    grouped = ConsumerRecords.from_records([Rec("t", 1, 1), Rec("t", 0, 0), Rec("t", 1, 2)])  # type: ignore[list-item]
    assert [r.offset for r in grouped.records(TopicPartition("t", 1))] == [1, 2]
