"""Damaged bytes never crash a decoder or escape as a foreign exception, and every decoder (both
object decoders, and the Cython Arrow decoder when pyarrow is installed) reaches the same
verdict on them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError, UnsupportedCodecError
from kafkaconsumer.record import _pyrecords, encode_batch
from tests.support.record_encoder import encode_legacy_message_set

from .conftest import CYTHON

OURS = (CorruptRecordError, RecordTooLargeError, UnsupportedCodecError)

try:
    from kafkaconsumer.record import arrow
except ImportError:  # pyarrow is optional
    arrow = None  # type: ignore[assignment]


def _seed_data() -> list[bytes]:
    recs = [(b"k%d" % i, b"v" * (i * 7), [("h", b"x")] if i % 2 else [], 100 + i) for i in range(6)]
    legacy: list[tuple[Any, ...]] = [(k, v, [], t) for k, v, _h, t in recs]
    out = []
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        out.append(encode_batch(recs, base_offset=3, compression=codec))
    for magic in (0, 1):
        out.append(encode_legacy_message_set(legacy, magic=magic, base_offset=3))
        out.append(
            encode_legacy_message_set(legacy, magic=magic, base_offset=3, compression="gzip")
        )
    return out


SEEDS = _seed_data()


def _outcome(module: Any, data: bytes, fetch_offset: int) -> Any:
    try:
        result = module.decode_fetched_records(data, "fz", 0, fetch_offset, check_crcs=False)
    except OURS as exc:
        return type(exc)
    return ([r.as_tuple() for r in result.records], result.next_offset, result.partial)


def _arrow_view(outcome: Any) -> Any:
    """An object outcome as the Arrow decoder can state it (no serialized sizes)."""
    if isinstance(outcome, type):
        return outcome
    rows = [(t[2], t[3], t[4], t[5], t[6], list(t[7]), t[8]) for t in outcome[0]]
    return (rows, outcome[1], outcome[2])


def _arrow_outcome(data: bytes, fetch_offset: int) -> Any:
    try:
        result = arrow.decode_fetched_arrow(data, "fz", 0, fetch_offset, check_crcs=False)
    except OURS as exc:
        return type(exc)
    batch = result.batch
    epochs = [None if e < 0 else e for e in result.leader_epochs.to_pylist()]
    # Timestamps as int64: damaged ones are outside what datetime can hold.
    columns = [
        batch.column("offset").to_pylist(),
        batch.column("timestamp").cast("int64").to_pylist(),
        batch.column("timestampType").to_pylist(),
        batch.column("key").to_pylist(),
        batch.column("value").to_pylist(),
        [[(h["key"], h["value"]) for h in hs] for hs in batch.column("headers").to_pylist()],
        epochs,
    ]
    return (list(zip(*columns, strict=True)), result.next_offset, result.partial)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(range(len(SEEDS))),
    edits=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4
    ),
    cut=st.none() | st.integers(min_value=0),
    fetch_offset=st.integers(min_value=0, max_value=12),
)
@pytest.mark.timeout(120)
def test_damaged_bytes(
    seed: int, edits: list[tuple[int, int]], cut: int | None, fetch_offset: int
) -> None:
    raw = bytearray(SEEDS[seed])
    for where, value in edits:
        raw[where % len(raw)] = value
    if cut is not None:
        del raw[cut % len(raw) :]
    data = bytes(raw)
    pure = _outcome(_pyrecords, data, fetch_offset)
    if CYTHON is not None:
        assert _outcome(CYTHON, data, fetch_offset) == pure
    if arrow is not None and arrow.USING_EXTENSION:
        assert _arrow_outcome(data, fetch_offset) == _arrow_view(pure)
