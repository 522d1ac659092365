"""Fuzzing with bounds: decompression, record-batch decoding (both decoders) and response
decoding end in a documented exception or a correct result, never a crash or a hang, and never
allocate beyond a bound derived from the input size.

``tests/record/test_fuzz.py`` and ``tests/protocol/test_protocol_fuzz.py`` check verdicts; this
module adds the memory bound (``tracemalloc`` peak per example) and decompression bombs.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import (
    CorruptRecordError,
    KafkaProtocolError,
    RecordTooLargeError,
    UnsupportedCodecError,
    UnsupportedVersionError,
)
from kafkaconsumer.protocol import SUPPORTED_VERSIONS, decode_response
from kafkaconsumer.record import _pyrecords, codecs, encode_batch
from tests.record.conftest import CYTHON

pytestmark = pytest.mark.timeout(120)

DECODERS = [_pyrecords] + ([CYTHON] if CYTHON is not None else [])
RECORD_ERRORS = (CorruptRecordError, RecordTooLargeError, UnsupportedCodecError)
CODEC_ERRORS = (codecs.CodecError, codecs.DecompressionLimitExceeded)
COMPRESSED = (codecs.CODEC_GZIP, codecs.CODEC_SNAPPY, codecs.CODEC_LZ4, codecs.CODEC_ZSTD)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def peak_bytes(fn: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``fn``; return its result (or the exception it raised) and the peak it allocated."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        try:
            result: Any = fn()
        except Exception as exc:  # the caller judges the exception
            result = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - base


@pytest.fixture
def small_limits() -> Iterator[int]:
    """A 1 MiB decompression bound (ratio 8: snappy cannot beat about 20:1) for the test,
    restored afterwards."""
    old_min, old_ratio = codecs.MIN_DECOMPRESSION_LIMIT, codecs.DECOMPRESSION_RATIO
    codecs.set_decompression_limits(1024 * 1024, 8)
    try:
        yield 1024 * 1024
    finally:
        codecs.set_decompression_limits(old_min, old_ratio)


# ----------------------------------------------------------------------------- decompression
_PLAIN = b"".join(b"record %d with a fairly repetitive payload; " % i for i in range(400))
_FRAMES = {c: codecs.compress(c, _PLAIN) for c in COMPRESSED}


@FUZZ
@given(codec=st.sampled_from(COMPRESSED), data=st.data())
def test_mutated_compressed_payloads(codec: int, data: st.DataObject) -> None:
    raw = bytearray(_FRAMES[codec])
    for _ in range(data.draw(st.integers(1, 6))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.none() | st.integers(0, len(raw)))
    blob = bytes(raw[:cut])
    limit = 256 * 1024
    result, peak = peak_bytes(lambda: codecs.decompress(codec, blob, limit))
    assert isinstance(result, (bytes, *CODEC_ERRORS)), repr(result)
    if isinstance(result, bytes):
        assert len(result) <= limit
    # The output bound, plus the working buffers of one codec call.
    assert peak <= 3 * limit + 8 * len(blob) + 2 * 1024 * 1024, (codecs.CODEC_NAMES[codec], peak)


@FUZZ
@given(codec=st.sampled_from(COMPRESSED), blob=st.binary(max_size=4096))
def test_random_bytes_to_every_codec(codec: int, blob: bytes) -> None:
    limit = 256 * 1024
    result, peak = peak_bytes(lambda: codecs.decompress(codec, blob, limit))
    assert isinstance(result, (bytes, *CODEC_ERRORS)), repr(result)
    assert peak <= 3 * limit + 8 * len(blob) + 2 * 1024 * 1024


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: codecs.CODEC_NAMES[c])
def test_decompression_bomb_stops_at_the_limit(codec: int) -> None:
    bomb = codecs.compress(codec, bytes(16 * 1024 * 1024))
    limit = 1024 * 1024
    result, peak = peak_bytes(lambda: codecs.decompress(codec, bomb, limit))
    assert isinstance(result, codecs.DecompressionLimitExceeded), repr(result)
    assert peak < 4 * limit + 8 * len(bomb), peak


# ----------------------------------------------------------------------------- record batches
def _seeds() -> list[bytes]:
    recs = [
        (b"k%d" % i, b"v" * (i * 11), [("h", b"x")] if i % 2 else [], 1000 + i) for i in range(8)
    ]
    return [
        encode_batch(recs, base_offset=5, compression=c)
        for c in ("none", "gzip", "snappy", "lz4", "zstd")
    ]


SEEDS = _seeds()


@pytest.mark.parametrize("impl", DECODERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@FUZZ
@given(data=st.data())
def test_damaged_batches_stay_within_an_input_bound(impl: ModuleType, data: st.DataObject) -> None:
    raw = bytearray(data.draw(st.sampled_from(SEEDS)))
    for _ in range(data.draw(st.integers(1, 5))):
        where = data.draw(st.integers(0, len(raw) - 1))
        # Lengths and varints are where a lie costs memory: write big values there too.
        raw[where] = data.draw(st.sampled_from([0x00, 0x7F, 0xFF, 0x80]) | st.integers(0, 255))
    blob = bytes(raw[: data.draw(st.integers(1, len(raw)))])
    result, peak = peak_bytes(
        lambda: impl.decode_fetched_records(blob, "fz", 3, 0, check_crcs=False)
    )
    if isinstance(result, Exception):
        assert isinstance(result, RECORD_ERRORS), repr(result)
        if isinstance(result, CorruptRecordError):
            assert "fz" in str(result) and "3" in str(result)
    # Records are Python objects (a few hundred bytes each, one per >= 7 input bytes); a
    # compressed payload may expand up to the decompression bound, here at most 64 MiB.
    bound = 200 * len(blob) + 1024 * 1024
    if blob[21:22] != b"\x00" or len(blob) < 22:  # attributes' codec bits (low byte)
        bound += codecs.decompression_limit(len(blob))
    assert peak <= bound, (peak, bound)


@pytest.mark.parametrize("impl", DECODERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_batch_bomb_is_a_corrupt_record_error_naming_where(
    impl: ModuleType, codec: str, small_limits: int
) -> None:
    bomb = encode_batch([(None, bytes(8 * 1024 * 1024), [], 1)], base_offset=42, compression=codec)
    result, peak = peak_bytes(
        lambda: impl.decode_fetched_records(bomb, "bombs", 7, 42, check_crcs=True)
    )
    assert isinstance(result, CorruptRecordError), repr(result)
    text = str(result)
    assert "bombs" in text and "7" in text and "42" in text, text
    assert peak < 4 * small_limits + 8 * len(bomb), peak


# ----------------------------------------------------------------------------- responses
_RESPONSE_KEYS = sorted(SUPPORTED_VERSIONS)


@FUZZ
@given(api_key=st.sampled_from(_RESPONSE_KEYS), data=st.data())
def test_random_response_frames_stay_within_an_input_bound(
    api_key: int, data: st.DataObject
) -> None:
    lo, hi = SUPPORTED_VERSIONS[api_key]
    version = data.draw(st.integers(lo, hi))
    body = data.draw(st.binary(max_size=512))
    # Length prefixes full of 0x7f / 0xff claim gigabytes; the decoder must check first.
    filler = data.draw(st.sampled_from([b"", b"\x7f\xff\xff\xff", b"\xff\xff\xff\x7f"]))
    frame = b"\x00\x00\x00\x01" + filler + body
    try:  # the first decode of an api version builds (and caches) its decoder: not measured
        decode_response(api_key, version, frame)
    except (KafkaProtocolError, UnsupportedVersionError):
        pass
    result, peak = peak_bytes(lambda: decode_response(api_key, version, frame))
    if isinstance(result, Exception):
        assert isinstance(result, (KafkaProtocolError, UnsupportedVersionError)), repr(result)
    assert peak <= 200 * len(frame) + 256 * 1024, peak
