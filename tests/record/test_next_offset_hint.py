"""The end offset read from batch headers alone (for prefetching) agrees with the decoder."""

from __future__ import annotations

import pytest

from kafkaconsumer.record import (
    decode_fetched_records,
    encode_batch,
    next_offset_after_batches,
)
from tests.support.record_encoder import encode_control_batch, encode_legacy_message_set

pytestmark = pytest.mark.timeout(30)


def _records(n: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]]:
    return [(None, b"v%d" % i, [], 1000 + i) for i in range(n)]


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_hint_matches_the_decoder_over_batches_and_a_truncated_tail(compression: str) -> None:
    data = (
        encode_batch(_records(5), base_offset=10, compression=compression)
        + encode_control_batch(True, producer_id=7, base_offset=15)
        + encode_batch(_records(3), base_offset=16, compression=compression)
    )
    tail = encode_batch(_records(4), base_offset=19, compression=compression)
    for raw in (data, data + tail[: len(tail) // 2]):
        hint = next_offset_after_batches(memoryview(raw))
        assert hint == 19
        assert decode_fetched_records(raw, "t", 0, 10).next_offset == hint


def test_no_hint_without_a_complete_batch_or_for_legacy_messages() -> None:
    one = encode_batch(_records(2), base_offset=0)
    assert next_offset_after_batches(b"") is None
    assert next_offset_after_batches(one[:30]) is None
    assert next_offset_after_batches(one[:-1]) is None
    assert next_offset_after_batches(encode_legacy_message_set(_records(2), magic=1)) is None
    assert (
        next_offset_after_batches(
            one + encode_legacy_message_set(_records(1), magic=1, base_offset=2)
        )
        is None
    )


def test_the_extension_and_the_pure_scan_agree() -> None:
    ext = pytest.importorskip("kafkaconsumer.record._crecords")
    from kafkaconsumer.record._common import next_offset_after_batches as pure

    v2 = encode_batch(_records(3), base_offset=7) + encode_batch(_records(2), base_offset=10)
    legacy = encode_legacy_message_set(_records(1), magic=1, base_offset=12)
    cases = [b"", v2, v2[:-1], v2[:20], v2 + legacy, legacy, bytearray(v2), memoryview(v2)]
    for data in cases:
        assert ext.next_offset_after_batches(data) == pure(data)
