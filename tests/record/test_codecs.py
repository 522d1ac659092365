"""Codecs: round trips, framings and variants other producers write, bounds, damage."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import lz4.frame
import pytest
import snappy
import zstandard

import kafkaconsumer.record as record
from kafkaconsumer.record import codecs

PAYLOADS = [b"", b"x", b"kafka " * 5000, os.urandom(70_000)]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("size_index", range(len(PAYLOADS)))
def test_round_trip(codec: int, size_index: int) -> None:
    data = PAYLOADS[size_index]
    assert codecs.decompress(codec, codecs.compress(codec, data)) == data


def test_snappy_raw_and_xerial_framings() -> None:
    data = b"snappy " * 20_000  # more than one 32 KiB xerial block
    framed = codecs.compress(codecs.CODEC_SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00")
    raw = codecs.compress(codecs.CODEC_SNAPPY, data, xerial=False)
    assert raw == snappy.compress(data)
    assert codecs.decompress(codecs.CODEC_SNAPPY, framed) == data
    assert codecs.decompress(codecs.CODEC_SNAPPY, raw) == data


def test_lz4_magic0_writes_the_old_header_checksum() -> None:
    data = b"lz4 " * 1000
    old = codecs.compress(codecs.CODEC_LZ4, data, magic=0)
    # The lz4 library itself rejects the wrong descriptor checksum (KAFKA-1493) ...
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(old)
    # ... the decoder repairs it for magic 0, and a correct frame is fine too.
    assert codecs.decompress(codecs.CODEC_LZ4, old, magic=0) == data
    good = codecs.compress(codecs.CODEC_LZ4, data)
    assert codecs.decompress(codecs.CODEC_LZ4, good, magic=0) == data
    assert codecs.decompress(codecs.CODEC_LZ4, good) == data


@pytest.mark.parametrize(
    "options",
    [
        {"store_size": True},
        {"content_checksum": True},
        {"block_checksum": True},
        {"block_linked": True, "block_size": lz4.frame.BLOCKSIZE_MAX4MB},
    ],
)
def test_lz4_frames_of_other_producers(options: dict[str, object]) -> None:
    data = b"frame " * 30_000
    assert codecs.decompress(codecs.CODEC_LZ4, lz4.frame.compress(data, **options)) == data


def test_lz4_frames_without_a_size_start_at_the_last_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    # Java's producer declares no content size: the first step is sized from the ratio of the
    # frame before, so alike frames decompress in one step, and the bound still holds.
    data = bytes(range(64)) * 8192  # 512 KiB, compresses about 100x
    packed = lz4.frame.compress(data, store_size=False)
    monkeypatch.setattr(codecs, "_lz4_ratio", 4.0)
    steps: list[int] = []

    class Counting(lz4.frame.LZ4FrameDecompressor):  # type: ignore[misc]
        def decompress(self, chunk: bytes, max_length: int = -1) -> bytes:
            steps.append(max_length)
            out: bytes = super().decompress(chunk, max_length=max_length)
            return out

    monkeypatch.setattr(lz4.frame, "LZ4FrameDecompressor", Counting)
    assert codecs.decompress(codecs.CODEC_LZ4, packed) == data
    first = len(steps)
    assert first > 1 and codecs._lz4_ratio > 50
    steps.clear()
    assert codecs.decompress(codecs.CODEC_LZ4, packed) == data
    assert len(steps) == 1
    with pytest.raises(codecs.DecompressionLimitExceeded):
        codecs.decompress(codecs.CODEC_LZ4, packed, limit=100_000)


def test_zstd_with_and_without_content_size() -> None:
    data = b"zstd " * 10_000
    with_size = zstandard.ZstdCompressor().compress(data)
    without = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.frame_content_size(without) == -1
    assert codecs.decompress(codecs.CODEC_ZSTD, with_size) == data
    assert codecs.decompress(codecs.CODEC_ZSTD, without) == data
    streamed = zstandard.ZstdCompressor().compressobj()
    chunked = streamed.compress(data) + streamed.flush()
    assert codecs.decompress(codecs.CODEC_ZSTD, chunked) == data


def test_gzip_accepts_zlib_streams_too() -> None:
    import zlib

    data = b"gzip " * 1000
    assert codecs.decompress(codecs.CODEC_GZIP, zlib.compress(data)) == data


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_truncated_data_is_a_codec_error(codec: int) -> None:
    packed = codecs.compress(codec, b"truncate me " * 3000)
    with pytest.raises(codecs.CodecError):
        codecs.decompress(codec, packed[: len(packed) // 2])


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_bound_is_enforced(codec: int) -> None:
    packed = codecs.compress(codec, bytes(300_000))
    with pytest.raises(codecs.DecompressionLimitExceeded, match="limit of 100000 bytes"):
        codecs.decompress(codec, packed, limit=100_000)
    assert len(codecs.decompress(codec, packed, limit=300_000)) == 300_000


def test_zstd_frame_that_lies_about_its_size() -> None:
    real = zstandard.ZstdCompressor().compress(b"a" * 5000)
    # Rewrite the declared content size (single-segment frame, 2-byte field holding size - 256)
    # to 300 bytes.
    header = zstandard.get_frame_parameters(real)
    assert header.content_size == 5000
    forged = bytearray(real)
    fhd = forged[4]
    assert fhd & 0xC0 == 0x40 and fhd & 0x20  # 2-byte content size, single segment
    forged[5:7] = struct.pack("<H", 300 - 256)
    with pytest.raises(codecs.CodecError):
        codecs.decompress(codecs.CODEC_ZSTD, bytes(forged))


def test_limit_settings() -> None:
    assert codecs.decompression_limit(10) == codecs.MIN_DECOMPRESSION_LIMIT
    assert codecs.decompression_limit(1 << 30) == codecs.DECOMPRESSION_RATIO << 30
    previous = codecs.set_decompression_limits(1000, 2)
    try:
        assert codecs.decompression_limit(10) == 1000
        assert codecs.decompression_limit(5000) == 10_000
    finally:
        codecs.set_decompression_limits(*previous)
    assert (codecs.MIN_DECOMPRESSION_LIMIT, codecs.DECOMPRESSION_RATIO) == previous
    with pytest.raises(ValueError):
        codecs.set_decompression_limits(0)
    with pytest.raises(ValueError):
        codecs.set_decompression_limits(ratio=-1)


def test_unknown_codec_names_and_ids() -> None:
    with pytest.raises(ValueError, match="unknown compression"):
        record.encode_batch([(None, b"v", [], 1)], compression="brotli")
    with pytest.raises(ValueError):
        codecs.compress(9, b"x")
    with pytest.raises(KeyError):
        codecs.decompress(9, b"x")


def test_extension_loaded_when_expected() -> None:
    """CI sets KAFKACONSUMER_EXPECT_EXTENSIONS=1 on the extension run: it must have loaded."""
    if os.environ.get("KAFKACONSUMER_EXPECT_EXTENSIONS") != "1":
        pytest.skip("the extension is not required in this run")
    assert os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") != "1"
    assert record.USING_EXTENSION is True
    assert record.ConsumerRecord.__module__ == "kafkaconsumer.record._crecords"
    assert record.decode_fetched_records.__module__ == "kafkaconsumer.record._crecords"


@pytest.mark.timeout(60)
def test_no_extensions_switch_forces_the_reference() -> None:
    code = "import kafkaconsumer.record as r; print(r.USING_EXTENSION, r.ConsumerRecord.__module__)"
    env = dict(os.environ, KAFKACONSUMER_NO_EXTENSIONS="1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=50
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "kafkaconsumer.record._pyrecords"]


def test_snappy_paths() -> None:
    data = b"snappy path " * 10_000
    for packed in (
        codecs.compress(codecs.CODEC_SNAPPY, data),
        codecs.compress(codecs.CODEC_SNAPPY, data, xerial=False),
    ):
        assert codecs.decompress(codecs.CODEC_SNAPPY, packed) == data
        with pytest.raises(codecs.DecompressionLimitExceeded):
            codecs.decompress(codecs.CODEC_SNAPPY, packed, limit=len(data) - 1)
    # A block whose preamble promises more than its data holds.
    raw = bytearray(snappy.compress(data))
    raw[:3] = bytes([0xFF, 0xFF, 0x07])  # a larger length (still within the bound)
    with pytest.raises(codecs.CodecError):
        codecs.decompress(codecs.CODEC_SNAPPY, bytes(raw))
