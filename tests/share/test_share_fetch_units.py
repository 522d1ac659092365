"""Share-fetch building blocks without a network: acknowledgement batches, share-session epochs
and partition changes, and how a ShareFetch partition's acquired ranges map onto the records of
its batches (delivery counts, gaps, released and rejected records)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkaconsumer.errors import CorruptRecordError, RecordDeserializationError
from kafkaconsumer.internals.fetch.acknowledgements import (
    GAP,
    Acknowledgements,
    AcknowledgeType,
)
from kafkaconsumer.internals.fetch.share_completed_fetch import ShareCompletedFetch
from kafkaconsumer.internals.fetch.share_session_handler import (
    FINAL_EPOCH,
    ShareSessionHandler,
    next_epoch,
)
from kafkaconsumer.metadata import ConsumerMetadata, Node
from kafkaconsumer.record import encode_batch
from kafkaconsumer.structs import TopicPartition
from tests.network.test_metadata import response

pytestmark = pytest.mark.timeout(30)

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
TID = uuid.UUID(int=7)
ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in AcknowledgeType)


# ---------------------------------------------------------------- acknowledgements -----------
def acks(pairs: dict[int, int]) -> Acknowledgements:
    a = Acknowledgements()
    for offset, t in pairs.items():
        a.add(offset, t)
    return a


def test_runs_of_one_type_become_one_batch_with_one_type() -> None:
    assert acks({3: ACCEPT, 4: ACCEPT, 5: ACCEPT}).batches() == [
        {"first_offset": 3, "last_offset": 5, "acknowledge_types": [ACCEPT]}
    ]


def test_mixed_types_in_a_run_are_listed_per_offset() -> None:
    a = acks({0: ACCEPT, 1: GAP, 2: REJECT})
    assert a.batches() == [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [ACCEPT, GAP, REJECT]}
    ]


def test_a_hole_in_the_offsets_starts_a_new_batch() -> None:
    a = acks({10: RELEASE, 11: RELEASE, 20: ACCEPT})
    assert a.batches() == [
        {"first_offset": 10, "last_offset": 11, "acknowledge_types": [RELEASE]},
        {"first_offset": 20, "last_offset": 20, "acknowledge_types": [ACCEPT]},
    ]


def test_later_acknowledgement_of_an_offset_replaces_the_earlier() -> None:
    a = acks({1: RELEASE})
    a.add(1, ACCEPT)
    assert a.as_dict() == {1: ACCEPT} and len(a) == 1


def test_renew_is_noticed_and_the_outcome_maps_to_an_error() -> None:
    a = acks({1: RENEW})
    assert a.has_renew() and not acks({1: ACCEPT}).has_renew()
    assert a.exception() is None
    a.complete(121, "lock gone")
    err = a.exception()
    assert err is not None and type(err).__name__ == "InvalidRecordStateError"


def test_unknown_acknowledge_type_is_refused_by_value() -> None:
    assert AcknowledgeType.for_id(3) is AcknowledgeType.REJECT
    with pytest.raises(ValueError, match="unknown acknowledge type 9"):
        AcknowledgeType.for_id(9)


# ---------------------------------------------------------------- share sessions -------------
def test_first_fetch_opens_a_session_with_every_partition() -> None:
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_fetch(TP, TID)
    h.add_partition_to_fetch(TP1, TID)
    body, sent = h.build_share_fetch()
    assert body["share_session_epoch"] == 0
    assert body["topics"] == [
        {
            "topic_id": TID,
            "partitions": [
                {"partition_index": 0, "acknowledgement_batches": []},
                {"partition_index": 1, "acknowledgement_batches": []},
            ],
        }
    ]
    assert body["forgotten_topics_data"] == [] and sent == {}
    assert h.handle_response(0) and h.epoch == 1


def test_later_fetches_send_only_changes_and_acknowledgements() -> None:
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_fetch(TP, TID)
    h.add_partition_to_fetch(TP1, TID)
    h.build_share_fetch()
    h.handle_response(0)
    a = acks({4: ACCEPT})
    h.add_partition_to_fetch(TP, TID, a)  # TP1 no longer wanted
    body, sent = h.build_share_fetch()
    assert body["share_session_epoch"] == 1
    assert body["topics"] == [
        {
            "topic_id": TID,
            "partitions": [
                {
                    "partition_index": 0,
                    "acknowledgement_batches": [
                        {"first_offset": 4, "last_offset": 4, "acknowledge_types": [ACCEPT]}
                    ],
                }
            ],
        }
    ]
    assert body["forgotten_topics_data"] == [{"topic_id": TID, "partitions": [1]}]
    assert sent == {TP: a}
    assert h.session_partitions() == {TP: TID}


def test_acknowledgements_queued_twice_before_a_request_are_all_sent() -> None:
    """Acknowledgements queued while a request is in flight, then more for the same partition
    before the next request, all go out in it (the later type winning for an offset), and the
    later object carries them to completion."""
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_fetch(TP, TID)
    h.build_share_fetch()
    h.handle_response(0)
    first = acks({0: ACCEPT, 1: ACCEPT, 2: RENEW})
    later = acks({2: ACCEPT, 3: RELEASE})
    h.add_partition_to_acknowledge(TP, TID, first)
    h.add_partition_to_fetch(TP, TID, later)
    _body, sent = h.build_share_fetch()
    assert sent == {TP: later}
    assert list(later.items()) == [(0, ACCEPT), (1, ACCEPT), (2, ACCEPT), (3, RELEASE)]


def test_a_recreated_topic_is_forgotten_and_fetched_again_under_its_new_id() -> None:
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_fetch(TP, TID)
    h.build_share_fetch()
    h.handle_response(0)
    new_id = uuid.UUID(int=8)
    h.add_partition_to_fetch(TP, new_id)
    body, _ = h.build_share_fetch()
    assert body["forgotten_topics_data"] == [{"topic_id": TID, "partitions": [0]}]
    assert [t["topic_id"] for t in body["topics"]] == [new_id]


@pytest.mark.parametrize("code", [122, 123])
def test_lost_session_opens_a_new_one(code: int) -> None:
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_fetch(TP, TID)
    h.build_share_fetch()
    h.handle_response(0)
    assert not h.handle_response(code)
    assert h.is_new_session and h.session_partitions() == {}
    h.add_partition_to_fetch(TP, TID)
    body, _ = h.build_share_fetch()
    assert body["share_session_epoch"] == 0 and body["topics"]


def test_other_errors_still_move_the_epoch_and_network_errors_reset() -> None:
    h = ShareSessionHandler(1, "m")
    h.build_share_fetch()
    h.handle_response(0)
    assert not h.handle_response(87)
    assert h.epoch == 2
    h.handle_error(ConnectionError("gone"))
    assert h.is_new_session


def test_acknowledge_needs_an_open_session_and_close_uses_the_final_epoch() -> None:
    h = ShareSessionHandler(1, "m")
    h.add_partition_to_acknowledge(TP, TID, acks({1: ACCEPT}))
    assert h.build_share_acknowledge() is None
    assert list(h.take_pending_acknowledgements()) == [TP]
    h.build_share_fetch()
    h.handle_response(0)
    h.add_partition_to_acknowledge(TP, TID, acks({1: ACCEPT}))
    h.notify_close()
    built = h.build_share_acknowledge()
    assert built is not None
    body, sent = built
    assert body["share_session_epoch"] == FINAL_EPOCH and list(sent) == [TP]


def test_epoch_wraps_to_one_and_final_stays_final() -> None:
    assert next_epoch(0) == 1 and next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1


# ---------------------------------------------------------------- acquired records -----------
def partition(raw: bytes, ranges: list[tuple[int, int, int]], **extra: Any) -> dict[str, Any]:
    return {
        "partition_index": 0,
        "error_code": 0,
        "records": raw,
        "acquired_records": [
            {"first_offset": a, "last_offset": b, "delivery_count": c} for a, b, c in ranges
        ],
        **extra,
    }


def rows(n: int, start: int = 0) -> list[tuple[Any, ...]]:
    return [(None, b"v%d" % (start + i), [], 1000) for i in range(n)]


def test_only_acquired_records_are_handed_out_with_their_delivery_counts() -> None:
    raw = encode_batch(rows(10))
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(2, 3, 1), (6, 7, 3)]))
    batch = cf.fetch_records(100)
    assert [(r.offset, r.delivery_count, r.value) for r in batch.records] == [
        (2, 1, b"v2"),
        (3, 1, b"v3"),
        (6, 3, b"v6"),
        (7, 3, b"v7"),
    ]
    assert len(batch.acknowledgements) == 0 and batch.error is None
    assert cf.is_consumed


def test_max_records_slices_and_the_rest_comes_next() -> None:
    raw = encode_batch(rows(6))
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(0, 5, 1)]))
    first = cf.fetch_records(4)
    assert [r.offset for r in first.records] == [0, 1, 2, 3] and not cf.is_consumed
    second = cf.fetch_records(4)
    assert [r.offset for r in second.records] == [4, 5] and cf.is_consumed
    assert cf.fetch_records(4).records == []


def test_acquired_offsets_without_a_record_are_gaps() -> None:
    # A compacted batch: offsets 0, 2 and 5 remain out of 0..5; a control batch at 6.
    raw = encode_batch(
        [(None, b"a", [], 1, 0), (None, b"b", [], 1, 2), (None, b"c", [], 1, 5)],
        last_offset_delta=5,
    )
    raw += encode_batch([(None, b"\x00\x00\x00\x00", [], 1)], base_offset=6, control=True)
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(0, 6, 2)]))
    batch = cf.fetch_records(100)
    assert [r.offset for r in batch.records] == [0, 2, 5]
    assert batch.acknowledgements.as_dict() == {1: GAP, 3: GAP, 4: GAP, 6: GAP}


def test_undeserializable_record_is_released_and_raised_after_the_good_ones() -> None:
    class Picky:
        def deserialize(self, topic: str, data: bytes, headers: Any = None) -> str:
            if data == b"v2":
                raise ValueError("bad value")
            return data.decode()

    raw = encode_batch(rows(4))
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(0, 3, 1)]))
    first = cf.fetch_records(10, None, Picky())
    assert [r.value for r in first.records] == ["v0", "v1"]
    assert first.acknowledgements.as_dict() == {2: RELEASE}
    assert first.error is None
    second = cf.fetch_records(10, None, Picky())
    assert isinstance(second.error, RecordDeserializationError) and second.error.offset == 2
    third = cf.fetch_records(10, None, Picky())
    assert [r.value for r in third.records] == ["v3"]


def test_corrupt_data_rejects_every_acquired_offset() -> None:
    raw = bytearray(encode_batch(rows(3)))
    raw[-1] ^= 0xFF  # breaks the CRC
    cf = ShareCompletedFetch(TP, TID, 1, partition(bytes(raw), [(0, 2, 1)]))
    batch = cf.fetch_records(10)
    assert isinstance(batch.error, CorruptRecordError)
    assert batch.acknowledgements.as_dict() == {0: REJECT, 1: REJECT, 2: REJECT}
    assert batch.records == [] and cf.is_consumed


def test_drain_returns_what_was_never_handed_out() -> None:
    raw = encode_batch(rows(5))
    cf = ShareCompletedFetch(TP, TID, 1, partition(raw, [(0, 4, 1)]))
    cf.fetch_records(2)
    assert cf.drain() == [2, 3, 4]
    assert cf.fetch_records(2).records == []


# ---------------------------------------------------------------- leaders named in errors


def test_a_leader_named_in_an_error_replaces_an_older_one_and_survives_a_stale_refresh() -> None:
    """Metadata.update_partition_leadership (Java ``updatePartitionLeadership``): a newer epoch
    moves the partition (with the new broker's address); an older or equal epoch, an unknown
    partition or a leader without an address change nothing; a later metadata answer with the
    old epoch does not undo it."""
    metadata = ConsumerMetadata({})
    metadata.update(response(partitions=2, epoch=3, leader=1))
    tp0, tp1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    moved = metadata.update_partition_leadership(
        {
            tp0: (7, 4),
            tp1: (2, 3),  # same epoch: ignored
            TopicPartition("orders", 9): (2, 9),  # unknown partition
            TopicPartition("other", 0): (5, 9),
        },
        [Node(7, "h7", 9099, None)],
    )
    cluster = metadata.fetch()
    assert moved == {tp0}
    assert cluster.leader_for(tp0) == 7 and cluster.leader_epoch(tp0) == 4
    assert cluster.broker(7) == Node(7, "h7", 9099, None)
    assert cluster.leader_for(tp1) == 1 and cluster.topic_id("orders") is not None
    assert metadata.update_partition_leadership({tp1: (8, 5)}, []) == set()  # no address
    metadata.update(response(partitions=2, epoch=3, leader=1))
    assert metadata.fetch().leader_for(tp0) == 7
