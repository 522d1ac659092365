"""FetchBuffer's count of buffered partitions and its log of the partitions that left."""

from __future__ import annotations

from typing import Any

from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch
from kafkaconsumer.internals.fetch.fetch_buffer import FetchBuffer
from kafkaconsumer.structs import TopicPartition

A, B, C = (TopicPartition("t", i) for i in range(3))


def _piece(tp: TopicPartition, offset: int = 0) -> CompletedFetch:
    data: Any = {"error_code": 0, "high_watermark": 10, "records": None}
    return CompletedFetch(tp, data, offset, node=1)


def _take_head(buffer: FetchBuffer) -> CompletedFetch:
    """What the collector does: the head leaves the queue and is handed out."""
    head = buffer.peek()
    assert head is not None
    buffer.remove_head(head)
    buffer.next_in_line = head
    return head


def test_count_and_set_follow_the_queue_and_the_piece_handed_out() -> None:
    """A partition counts while it has a queued piece or is being handed out."""
    buffer = FetchBuffer(read_committed=False)
    with buffer.lock:
        for tp in (A, B, A):
            buffer.append(_piece(tp))
        assert buffer.buffered_count() == 2
        assert buffer.buffered_partitions() == {A, B}
        first = _take_head(buffer)  # A: one piece left queued
        second = _take_head(buffer)  # B: none queued, handed out
        assert first.tp == A and second.tp == B
        assert buffer.buffered_partitions() == {A, B}
        second.drain()
        assert buffer.buffered_partitions() == {A}
        assert buffer.buffered_count() == 1


def test_left_since_names_every_partition_that_left() -> None:
    """left_since lists what left after the token, and nothing that stayed."""
    buffer = FetchBuffer(read_committed=False)
    with buffer.lock:
        for tp in (A, B, C):
            buffer.append(_piece(tp))
        token = buffer.buffered_token()
        assert buffer.left_since(token) == []
        cf = _take_head(buffer)  # A moves from the queue to next_in_line: still buffered
        assert buffer.left_since(token) == []
        cf.drain()
        cf = _take_head(buffer)  # A is done, B handed out
        assert buffer.left_since(token) == [A]
        later = buffer.buffered_token()
        buffer.append(_piece(A, 5))  # A is back: still reported as having left
        cf.drain()
        buffer.next_in_line = None
        assert buffer.left_since(token) == [A, B]
        assert buffer.left_since(later) == [B]
        assert buffer.buffered_partitions() == {A, C}


def test_clearing_voids_older_tokens() -> None:
    """After clear_unassigned or clear, tokens taken before find no answer (None)."""
    buffer = FetchBuffer(read_committed=False)
    with buffer.lock:
        for tp in (A, B):
            buffer.append(_piece(tp))
        token = buffer.buffered_token()
    buffer.clear_unassigned([A])
    with buffer.lock:
        assert buffer.left_since(token) is None
        assert buffer.buffered_partitions() == {A}
        token = buffer.buffered_token()
        assert buffer.left_since(token) == []
        buffer.clear()
        assert buffer.left_since(token) is None
        assert buffer.buffered_count() == 0


def test_a_long_log_drops_its_oldest_half() -> None:
    """Tokens older than what the log keeps find no answer; newer ones still do."""
    buffer = FetchBuffer(read_committed=False)
    with buffer.lock:
        first = buffer.buffered_token()
        recent = first
        for i in range(20_000):
            buffer.append(_piece(TopicPartition("t", i)))
            if i == 19_990:
                recent = buffer.buffered_token()
            _take_head(buffer).drain()
        assert buffer.left_since(first) is None
        left = buffer.left_since(recent)
        assert left is not None
        assert set(left) == {TopicPartition("t", i) for i in range(19_990, 20_000)}
