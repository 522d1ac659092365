"""read_committed: aborted transactions and control records, on hand-built batches."""

from __future__ import annotations

from types import ModuleType

import pytest

from kafkaconsumer.record import (
    AbortedTransactions,
    encode_batch,
    iter_batches,
    parse_control_record,
)
from tests.support.record_encoder import encode_control_batch

P1, P2, P3 = 1001, 2002, 3003


def _txn(pid: int, base: int, values: list[bytes]) -> bytes:
    return encode_batch(
        [(None, v, [], 10 + i) for i, v in enumerate(values)],
        base_offset=base,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )


def _plain(base: int, values: list[bytes]) -> bytes:
    return encode_batch([(None, v, [], 10 + i) for i, v in enumerate(values)], base_offset=base)


# offsets  0-2  P1 txn (aborted later)          a0 a1 a2
#          3-4  P2 txn (committed)               c3 c4
#          5    P1 ABORT marker
#          6    P2 COMMIT marker
#          7-8  non-transactional                n7 n8
#          9    P1 txn again (a new transaction, committed)  c9
#          10   P3 txn (aborted, its marker is beyond this fetch)  x10
#          11   P1 COMMIT marker
LOG = b"".join(
    [
        _txn(P1, 0, [b"a0", b"a1", b"a2"]),
        _txn(P2, 3, [b"c3", b"c4"]),
        encode_control_batch(False, producer_id=P1, base_offset=5, coordinator_epoch=4),
        encode_control_batch(True, producer_id=P2, base_offset=6, coordinator_epoch=4),
        _plain(7, [b"n7", b"n8"]),
        _txn(P1, 9, [b"c9"]),
        _txn(P3, 10, [b"x10"]),
        encode_control_batch(True, producer_id=P1, base_offset=11, coordinator_epoch=4),
    ]
)
ABORTED = [{"producer_id": P1, "first_offset": 0}, {"producer_id": P3, "first_offset": 10}]


def _values(result: object) -> list[bytes]:
    return [r.value for r in result.records]  # type: ignore[attr-defined]


def test_read_uncommitted_drops_only_control_records(impl: ModuleType) -> None:
    result = impl.decode_fetched_records(LOG, "t", 0, 0, aborted_transactions=ABORTED)
    assert _values(result) == [b"a0", b"a1", b"a2", b"c3", b"c4", b"n7", b"n8", b"c9", b"x10"]
    assert [r.offset for r in result.records] == [0, 1, 2, 3, 4, 7, 8, 9, 10]
    assert result.next_offset == 12


def test_read_committed_drops_aborted_transactions(impl: ModuleType) -> None:
    result = impl.decode_fetched_records(
        LOG, "t", 0, 0, read_committed=True, aborted_transactions=ABORTED
    )
    assert _values(result) == [b"c3", b"c4", b"n7", b"n8", b"c9"]
    # The position still moves past the aborted batches and the markers.
    assert result.next_offset == 12


def test_read_committed_from_the_middle(impl: ModuleType) -> None:
    result = impl.decode_fetched_records(
        LOG, "t", 0, 4, read_committed=True, aborted_transactions=ABORTED
    )
    assert [r.offset for r in result.records] == [4, 7, 8, 9]


def test_read_committed_without_aborted_list_keeps_everything(impl: ModuleType) -> None:
    aborted: list[dict[str, int]] | None
    for aborted in (None, []):
        result = impl.decode_fetched_records(
            LOG, "t", 0, 0, read_committed=True, aborted_transactions=aborted
        )
        assert _values(result) == [b"a0", b"a1", b"a2", b"c3", b"c4", b"n7", b"n8", b"c9", b"x10"]


def test_abort_marker_clears_the_producer_for_later_transactions(impl: ModuleType) -> None:
    # P1 aborts at 0-1 (marker 2), then commits 3 (marker 4); only the first is aborted, and
    # the broker lists only that one.
    log = b"".join(
        [
            _txn(P1, 0, [b"bad0", b"bad1"]),
            encode_control_batch(False, producer_id=P1, base_offset=2),
            _txn(P1, 3, [b"good3"]),
            encode_control_batch(True, producer_id=P1, base_offset=4),
        ]
    )
    result = impl.decode_fetched_records(
        log,
        "t",
        0,
        0,
        read_committed=True,
        aborted_transactions=[{"producer_id": P1, "first_offset": 0}],
    )
    assert _values(result) == [b"good3"]
    assert result.next_offset == 5


def test_aborted_transaction_starting_later_only_hits_later_batches(impl: ModuleType) -> None:
    # P1's batch at 0 was committed (marker 1); its next transaction from offset 2 aborted.
    log = b"".join(
        [
            _txn(P1, 0, [b"ok0"]),
            encode_control_batch(True, producer_id=P1, base_offset=1),
            _txn(P1, 2, [b"bad2"]),
            encode_control_batch(False, producer_id=P1, base_offset=3),
        ]
    )
    result = impl.decode_fetched_records(
        log,
        "t",
        0,
        0,
        read_committed=True,
        aborted_transactions=[{"producer_id": P1, "first_offset": 2}],
    )
    assert _values(result) == [b"ok0"]
    assert result.next_offset == 4


def test_control_batch_alone_advances_the_position(impl: ModuleType) -> None:
    marker = encode_control_batch(True, producer_id=P2, base_offset=41)
    for committed in (False, True):
        result = impl.decode_fetched_records(marker, "t", 0, 41, read_committed=committed)
        assert (result.records, result.next_offset, result.partial) == ([], 42, False)


def test_non_transactional_batches_of_an_aborted_producer_stay(impl: ModuleType) -> None:
    # An idempotent (non-transactional) batch carries a producer id too; it is never dropped.
    log = encode_batch(
        [(None, b"idem", [], 1)], base_offset=0, producer_id=P1, producer_epoch=0, base_sequence=0
    )
    result = impl.decode_fetched_records(
        log,
        "t",
        0,
        0,
        read_committed=True,
        aborted_transactions=[{"producer_id": P1, "first_offset": 0}],
    )
    assert _values(result) == [b"idem"]


def test_control_record_parsing() -> None:
    batches = list(iter_batches(LOG))
    controls = [b for b in batches if b.is_control]
    assert [b.base_offset for b in controls] == [5, 6, 11]
    assert all(b.is_transactional for b in controls)
    marker = parse_control_record(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x04")
    assert (marker.version, marker.type, marker.coordinator_epoch) == (0, 0, 4)
    assert parse_control_record(b"\x00\x00\x00\x01", None).type == 1
    with pytest.raises(ValueError):
        parse_control_record(b"\x00", None)
    with pytest.raises(ValueError):
        parse_control_record(b"\xff\xff\x00\x01", None)


def test_aborted_transactions_heap_order() -> None:
    txns = AbortedTransactions(
        [{"producer_id": 7, "first_offset": 50}, {"producer_id": 8, "first_offset": 10}]
    )
    # Batch of producer 7 ending at 20: 7's transaction starts later, not aborted yet.
    assert txns.skip_batch(7, 20, True, False, None, None) is False
    assert txns.skip_batch(8, 20, True, False, None, None) is True
    assert txns.skip_batch(7, 60, True, False, None, None) is True
    # The ABORT marker of producer 7 ends its aborted transaction.
    assert txns.skip_batch(7, 61, True, True, b"\x00\x00\x00\x00", None) is False
    assert txns.skip_batch(7, 70, True, False, None, None) is False
    assert txns.skip_batch(-1, 80, False, False, None, None) is False
