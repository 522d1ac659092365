"""Share-consumer hand-out without a network: batch_optimized hands out whole record batches
past ``max.poll.records``, the offsets handed out come back as runs for implicit acceptance, and
acknowledgements are taken in by ranges and folded without copying the queue."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.internals.fetch.share_completed_fetch import ShareCompletedFetch
from kafkaconsumer.internals.fetch.share_session_handler import ShareSessionHandler
from kafkaconsumer.record import encode_batch
from kafkaconsumer.structs import TopicPartition

pytestmark = pytest.mark.timeout(30)

TP = TopicPartition("t", 0)
TID = uuid.UUID(int=7)
ACCEPT, RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)


def partition(raw: bytes, ranges: list[tuple[int, int, int]]) -> dict[str, Any]:
    return {
        "partition_index": 0,
        "error_code": 0,
        "records": raw,
        "acquired_records": [
            {"first_offset": a, "last_offset": b, "delivery_count": c} for a, b, c in ranges
        ],
    }


def rows(n: int, start: int = 0) -> list[tuple[Any, ...]]:
    return [(None, b"v%d" % (start + i), [], 1000) for i in range(n)]


def three_batches() -> bytes:
    """Offsets 0-4, 5-9 and 10-14 in three record batches."""
    return b"".join(encode_batch(rows(5, b), base_offset=b) for b in (0, 5, 10))


def test_whole_batches_go_past_max_records_to_the_end_of_the_batch() -> None:
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(0, 14, 1)]))
    first = cf.fetch_records(3, whole_batches=True)
    assert [r.offset for r in first.records] == [0, 1, 2, 3, 4]
    second = cf.fetch_records(6, whole_batches=True)
    assert [r.offset for r in second.records] == list(range(5, 15)) and cf.is_consumed


def test_without_whole_batches_max_records_is_the_limit() -> None:
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(0, 14, 1)]))
    assert [r.offset for r in cf.fetch_records(3).records] == [0, 1, 2]
    assert [r.offset for r in cf.fetch_records(3).records] == [3, 4, 5]
    assert cf.remaining() == 9


def test_a_batch_ending_exactly_at_max_records_is_not_extended() -> None:
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(0, 14, 1)]))
    assert [r.offset for r in cf.fetch_records(5, whole_batches=True).records] == [0, 1, 2, 3, 4]


def test_handed_out_offsets_come_back_as_runs_of_the_acquired_ranges() -> None:
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(1, 3, 1), (6, 12, 2)]))
    batch = cf.fetch_records(6)
    assert [(r.offset, r.delivery_count) for r in batch.records] == [
        (1, 1),
        (2, 1),
        (3, 1),
        (6, 2),
        (7, 2),
        (8, 2),
    ]
    assert batch.handed == [(1, 3), (6, 8)]
    rest = cf.fetch_records(100)
    assert rest.handed == [(9, 12)] and cf.is_consumed


def test_runs_skip_gaps_which_are_acknowledged_as_gaps() -> None:
    # A compacted batch: offsets 0, 2, 3 and 5 remain out of 0..5.
    raw = encode_batch(
        [(None, b"a", [], 1, 0), (None, b"b", [], 1, 2), (None, b"c", [], 1, 3)]
        + [(None, b"d", [], 1, 5)],
        last_offset_delta=5,
    )
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(0, 5, 1)]))
    batch = cf.fetch_records(100)
    assert batch.handed == [(0, 0), (2, 3), (5, 5)]
    assert sorted(batch.acknowledgements.as_dict()) == [1, 4]


def test_acquired_map_reports_each_offset_with_its_delivery_count() -> None:
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(6, 7, 3), (1, 2, 1)]))
    assert cf.acquired == {1: 1, 2: 1, 6: 3, 7: 3}


def test_ranges_are_acknowledged_and_sent_as_one_batch() -> None:
    a = Acknowledgements()
    a.add_range(10, 19, ACCEPT)
    a.add(15, RELEASE)
    assert len(a) == 10 and a.get(15) == RELEASE
    b = Acknowledgements()
    b.add_range(0, 999, ACCEPT)
    assert b.batches() == [{"first_offset": 0, "last_offset": 999, "acknowledge_types": [ACCEPT]}]


def test_acknowledgements_folded_into_later_ones_complete_with_them() -> None:
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_fetch(TP, TID)
    h.build_share_fetch()
    h.handle_response(0)
    earlier, later = Acknowledgements(), Acknowledgements()
    earlier.add_range(0, 9, ACCEPT)
    later.add_range(5, 14, RELEASE)
    h.add_partition_to_acknowledge(TP, TID, earlier)
    h.add_partition_to_acknowledge(TP, TID, later)
    _body, sent = h.build_share_fetch()
    assert sent == {TP: later}
    assert later.as_dict() == {**dict.fromkeys(range(5), ACCEPT), **dict.fromkeys(range(5, 15), 2)}
    later.complete(0)
    assert earlier.completed and later.completed and earlier.exception() is None


# ---------------------------------------------------------------- Arrow columns ---------------
def test_columns_carry_the_acquired_rows_and_their_delivery_counts() -> None:
    pa = pytest.importorskip("pyarrow")
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(1, 3, 1), (6, 12, 2)]))
    batch = cf.fetch_columns(100)
    assert batch.columns is not None and batch.records == []
    record_batch, epochs, offsets, counts = batch.columns
    assert record_batch.column("offset").to_pylist() == [1, 2, 3, *range(6, 13)]
    assert record_batch.column("value").to_pylist()[:2] == [b"v1", b"v2"]
    assert offsets == record_batch.column("offset").to_pylist()
    assert counts.type == pa.int32() and counts.to_pylist() == [1, 1, 1] + [2] * 7
    assert len(epochs) == record_batch.num_rows
    assert batch.handed == [(1, 3), (6, 12)] and cf.is_consumed


def test_columns_hand_out_whole_batches_and_acknowledge_gaps() -> None:
    pytest.importorskip("pyarrow")
    raw = encode_batch(
        [(None, b"a", [], 1, 0), (None, b"b", [], 1, 2), (None, b"c", [], 1, 3)],
        last_offset_delta=5,
    ) + encode_batch(rows(5, 6), base_offset=6)
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(0, 10, 1)]))
    first = cf.fetch_columns(2, whole_batches=True)
    assert first.columns is not None and first.columns[2] == [0, 2, 3]
    assert first.handed == [(0, 0), (2, 3)] and sorted(first.acknowledgements.as_dict()) == [1]
    second = cf.fetch_columns(1)
    assert second.columns is not None and second.columns[2] == [6]
    assert sorted(second.acknowledgements.as_dict()) == [4, 5]


def test_rows_and_records_can_follow_each_other_in_one_partition() -> None:
    pytest.importorskip("pyarrow")
    cf = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(0, 14, 3)]))
    rows_first = cf.fetch_columns(4)
    assert rows_first.columns is not None and rows_first.columns[2] == [0, 1, 2, 3]
    as_records = cf.fetch_records(4)
    assert [(r.offset, r.value, r.delivery_count) for r in as_records.records] == [
        (4, b"v4", 3),
        (5, b"v5", 3),
        (6, b"v6", 3),
        (7, b"v7", 3),
    ]
    other = ShareCompletedFetch(TP, TID, 1, partition(three_batches(), [(0, 14, 3)]))
    assert [r.offset for r in other.fetch_records(2).records] == [0, 1]
    as_rows = other.fetch_columns(3)
    assert as_rows.columns is not None and as_rows.columns[2] == [2, 3, 4]
    assert as_rows.columns[3].to_pylist() == [3, 3, 3]


# ---------------------------------------------------------------- share records ---------------
def _impls() -> list[Any]:
    from kafkaconsumer.record import _pyrecords

    impls: list[Any] = [_pyrecords]
    try:
        from kafkaconsumer.record import _crecords
    except ImportError:
        return impls
    return [*impls, _crecords]


@pytest.mark.parametrize("impl", _impls(), ids=lambda m: str(m.__name__.rsplit(".", 1)[-1]))
def test_share_records_copy_every_field_and_add_the_delivery_count(impl: Any) -> None:
    raw = encode_batch([(b"k", b"v%d" % i, [("h", b"x")], 1000 + i) for i in range(4)])
    records = impl.decode_fetched_records(raw, "t", 3, 0).records
    shared = impl.share_records(records, 1, 9, 5)
    assert [r.offset for r in shared] == [1, 2, 3]
    for plain, share in zip(records[1:], shared, strict=True):
        assert share.as_tuple() == (*plain.as_tuple(), 5)
        assert share == impl.ShareConsumerRecord(plain, 5)
        assert share != impl.ShareConsumerRecord(plain, 6)
    assert "delivery_count=5" in repr(shared[0])
    with pytest.raises(TypeError):
        hash(shared[0])
