"""Unit tests of the client side of KIP-227 fetch sessions."""

from __future__ import annotations

import uuid

import pytest

from kafkaconsumer.internals.fetch.fetch_session import (
    FINAL_EPOCH,
    FetchMetadata,
    FetchSessionHandler,
    PartitionData,
)
from kafkaconsumer.structs import TopicPartition

pytestmark = pytest.mark.timeout(30)

A = uuid.uuid4()
B = uuid.uuid4()
A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)


def pd(offset: int, topic_id: uuid.UUID = A) -> PartitionData:
    return PartitionData(topic_id, offset, -1, 1024, -1, -1)


def build(h: FetchSessionHandler, parts: dict[TopicPartition, PartitionData]):  # type: ignore[no-untyped-def]
    b = h.new_builder()
    for tp, d in parts.items():
        b.add(tp, d)
    return b.build()


def test_full_then_incremental_then_forgotten() -> None:
    h = FetchSessionHandler(1)
    req = build(h, {A0: pd(0), A1: pd(0)})
    assert req.is_full and set(req.to_send) == {A0, A1} and req.metadata == FetchMetadata(0, 0)
    assert req.can_use_topic_ids
    assert h.handle_response(0, 77, [A0, A1])
    # Only A0 moved: the incremental request carries A0 alone.
    req = build(h, {A0: pd(10), A1: pd(0)})
    assert not req.is_full and req.metadata == FetchMetadata(77, 1)
    assert list(req.to_send) == [A0] and req.to_forget == []
    assert h.handle_response(0, 77, [A0])
    # A1 unassigned, B0 added.
    req = build(h, {A0: pd(10), B0: pd(5, B)})
    assert req.metadata == FetchMetadata(77, 2)
    assert list(req.to_send) == [B0] and req.to_forget == [A1]
    assert set(req.session_partitions) == {A0, B0}
    assert h.handle_response(0, 77, [])
    assert h.next_metadata == FetchMetadata(77, 3)


def test_session_not_found_starts_over_with_full_request() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    h.handle_response(0, 5, [A0])
    build(h, {A0: pd(3)})
    assert not h.handle_response(70, 0, [])  # FETCH_SESSION_ID_NOT_FOUND
    req = build(h, {A0: pd(3)})
    assert req.is_full and req.metadata == FetchMetadata(0, 0) and list(req.to_send) == [A0]


def test_other_session_error_closes_and_reopens() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    h.handle_response(0, 5, [A0])
    build(h, {A0: pd(1)})
    assert not h.handle_response(71, 0, [])  # INVALID_FETCH_SESSION_EPOCH
    req = build(h, {A0: pd(1)})
    assert req.is_full and req.metadata == FetchMetadata(5, 0)


def test_network_error_makes_next_request_full() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    h.handle_response(0, 5, [A0])
    build(h, {A0: pd(1)})
    h.handle_error(ConnectionError("gone"))
    assert build(h, {A0: pd(1)}).is_full


def test_full_response_with_unexpected_partitions_is_rejected() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    assert not h.handle_response(0, 5, [A0, B0])
    assert h.next_metadata == FetchMetadata(0, 0)


def test_incremental_response_outside_session_is_rejected() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    h.handle_response(0, 5, [A0])
    build(h, {A0: pd(0)})
    assert not h.handle_response(0, 5, [B0])
    assert h.next_metadata == FetchMetadata(5, 0)


def test_broker_without_session_keeps_full_requests() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    assert h.handle_response(0, 0, [A0])
    assert build(h, {A0: pd(4)}).is_full


def test_throttled_empty_full_response_is_not_an_error() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0)})
    assert not h.handle_response(0, 0, [], throttle_time_ms=100)
    assert h.next_metadata == FetchMetadata(0, 0)


def test_disabled_sessions_use_sessionless_full_fetches() -> None:
    h = FetchSessionHandler(1, enabled=False)
    req = build(h, {A0: pd(0)})
    assert req.is_full and req.metadata == FetchMetadata(0, FINAL_EPOCH)
    assert h.handle_response(0, 0, [A0])
    req = build(h, {A0: pd(9)})
    assert req.is_full and req.metadata == FetchMetadata(0, FINAL_EPOCH)
    assert h.close_metadata() is None


def test_topic_ids_missing_disables_id_based_requests() -> None:
    h = FetchSessionHandler(1)
    req = build(h, {A0: pd(0, uuid.UUID(int=0))})
    assert not req.can_use_topic_ids


def test_recreated_topic_is_replaced() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0, A)})
    h.handle_response(0, 9, [A0])
    req = build(h, {A0: pd(0, B)})
    assert req.to_replace == [A0] and list(req.to_send) == [A0]


def test_close_metadata_and_epoch_wrap() -> None:
    h = FetchSessionHandler(1)
    assert h.close_metadata() is None
    build(h, {A0: pd(0)})
    h.handle_response(0, 9, [A0])
    assert h.close_metadata() == FetchMetadata(9, FINAL_EPOCH)
    assert FetchMetadata(9, 0x7FFFFFFF).next_incremental() == FetchMetadata(9, 1)


def test_forgotten_and_replaced_partitions_carry_their_old_topic_id() -> None:
    h = FetchSessionHandler(1)
    build(h, {A0: pd(0), A1: pd(0), B0: pd(0, B)})
    assert h.handle_response(0, 7, [A0, A1, B0])
    c = uuid.uuid4()
    # A1 dropped; topic "b" recreated under id C.
    req = build(h, {A0: pd(0), B0: pd(0, c)})
    assert req.to_forget == [A1] and req.to_replace == [B0]
    assert req.forgotten_topic_ids == {A1: A, B0: B}
    assert h.topic_name(c) == "b" and h.topic_name(B) is None
