"""Compression codecs of Kafka record batches, with bounded decompression.

Codec ids (the low three bits of a batch's attributes): 0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd. Every codec library is a hard dependency of the package, so all of them are always
available.

Decompression is bounded so that a hostile or corrupt batch (a "decompression bomb") ends in a
:class:`DecompressionLimitExceeded` instead of exhausted memory. The bound for one batch is the
larger of :data:`MIN_DECOMPRESSION_LIMIT` (64 MiB) and :data:`DECOMPRESSION_RATIO` (256) times
the compressed size; :func:`set_decompression_limits` changes both for the whole process.
Legitimate Kafka batches stay far below it: a batch is limited by the broker's
``message.max.bytes`` before compression, and real data rarely compresses better than 100:1.

Thread-safety: compress/decompress are reentrant (zstd keeps one decompression context per
thread); set_decompression_limits changes a process-wide setting.
"""

from __future__ import annotations

import logging
import struct
import threading
import zlib
from typing import TYPE_CHECKING

# The codec libraries are imported by the first batch that needs one (they cost a client that
# reads uncompressed data ~3.5 ms of start-up); an import statement for a module already loaded
# is a dictionary lookup, once per batch. cramjam is the engine under python-snappy (>= 0.7
# requires it) and decompresses in place.
if TYPE_CHECKING:
    import zstandard

logger = logging.getLogger(__name__)

BytesLike = bytes | bytearray | memoryview

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

CODEC_NAMES: dict[int, str] = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}
CODEC_IDS: dict[str, int] = {name: codec for codec, name in CODEC_NAMES.items()}

#: Smallest decompression bound, whatever the compressed size (bytes).
MIN_DECOMPRESSION_LIMIT = 64 * 1024 * 1024
#: The bound also grows with the compressed size: this many times the input.
DECOMPRESSION_RATIO = 256

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_LEN = 16  # magic (8) + version (4) + compatible version (4)
_XERIAL_BLOCK = 32 * 1024
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


class DecompressionLimitExceeded(ValueError):
    """Decompressed data would exceed the bound; the record decoder turns this into a
    ``CorruptRecordError`` that names the limit."""

    def __init__(self, codec: str, limit: int, compressed_size: int | None = None) -> None:
        """Record the ``codec`` name, the ``limit`` in bytes that was reached and, when known,
        the compressed size it was derived from (the message then says which bound applied)."""
        self.codec = codec
        self.limit = limit
        self.compressed_size = compressed_size
        if compressed_size is None:
            which = "the bound given by the caller"
        elif limit == MIN_DECOMPRESSION_LIMIT and limit >= DECOMPRESSION_RATIO * compressed_size:
            which = (
                f"the minimum bound min_limit={MIN_DECOMPRESSION_LIMIT} bytes (it is above "
                f"ratio={DECOMPRESSION_RATIO} x the {compressed_size} compressed bytes)"
            )
        else:
            which = (
                f"ratio={DECOMPRESSION_RATIO} x the {compressed_size} compressed bytes (above "
                f"the minimum bound min_limit={MIN_DECOMPRESSION_LIMIT} bytes)"
            )
        super().__init__(
            f"{codec} data decompresses to more than the limit of {limit} bytes, the "
            f"decompression bound: {which}. A batch the broker accepted may be legitimate and merely compress very "
            "well: raise the bound with kafkaconsumer.record.set_decompression_limits(min_limit="
            "..., ratio=...) (process-wide; see 'Decompression bound' in the configuration "
            "reference). Otherwise the batch is corrupt or a decompression bomb"
        )


class CodecError(ValueError):
    """Compressed data is malformed (truncated, bad checksum, not that codec)."""


def set_decompression_limits(
    min_limit: int | None = None, ratio: int | None = None
) -> tuple[int, int]:
    """Change the process-wide decompression bound; returns the previous ``(min_limit, ratio)``.

    The bound for one batch is ``max(min_limit, ratio * compressed_size)``.
    """
    global MIN_DECOMPRESSION_LIMIT, DECOMPRESSION_RATIO
    previous = (MIN_DECOMPRESSION_LIMIT, DECOMPRESSION_RATIO)
    if min_limit is not None:
        if min_limit <= 0:
            raise ValueError(f"min_limit must be positive, got {min_limit}")
        MIN_DECOMPRESSION_LIMIT = int(min_limit)
    if ratio is not None:
        if ratio <= 0:
            raise ValueError(f"ratio must be positive, got {ratio}")
        DECOMPRESSION_RATIO = int(ratio)
    return previous


def decompression_limit(compressed_size: int) -> int:
    """The bound applied to one compressed payload of ``compressed_size`` bytes."""
    return max(MIN_DECOMPRESSION_LIMIT, DECOMPRESSION_RATIO * compressed_size)


# ----------------------------------------------------------------------------- decompression


def decompress(codec: int, data: BytesLike, limit: int | None = None, *, magic: int = 2) -> bytes:
    """Decompress one batch payload of codec ``codec`` into bytes, at most ``limit`` long.

    ``magic`` selects the legacy lz4 variant (magic 0 wrote a wrong frame header checksum).
    Raises :class:`DecompressionLimitExceeded`, :class:`CodecError` or ``KeyError`` for an
    unknown codec id.
    """
    if limit is None:
        try:
            return decompress(codec, data, decompression_limit(len(data)), magic=magic)
        except DecompressionLimitExceeded as exc:
            # Name which of the two bounds applied to this payload.
            raise DecompressionLimitExceeded(exc.codec, exc.limit, len(data)) from None
    if codec == CODEC_GZIP:
        return _gunzip(data, limit)
    if codec == CODEC_SNAPPY:
        return _unsnappy(data, limit)
    if codec == CODEC_LZ4:
        if magic == 0:
            data = _fix_broken_lz4_header(data)
        return _unlz4(data, limit)
    if codec == CODEC_ZSTD:
        return _unzstd(data, limit)
    if codec == CODEC_NONE:
        return bytes(data)
    raise KeyError(codec)


def _gunzip(data: BytesLike, limit: int) -> bytes:
    # wbits 47 accepts both gzip and zlib headers, as lenient readers do.
    dec = zlib.decompressobj(47)
    try:
        out = dec.decompress(data, limit + 1)
    except zlib.error as exc:
        raise CodecError(f"gzip: {exc}") from None
    if len(out) > limit or dec.unconsumed_tail:
        raise DecompressionLimitExceeded("gzip", limit)
    if not dec.eof:
        raise CodecError("gzip: compressed data is truncated")
    return out


def _snappy_raw_length(data: BytesLike) -> int:
    """The uncompressed length a raw snappy block announces (its varint preamble)."""
    result = 0
    shift = 0
    for i in range(min(len(data), 5)):
        b = data[i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result
        shift += 7
    raise CodecError("snappy: bad length preamble")


def _xerial_blocks(data: BytesLike) -> list[memoryview]:
    """The raw snappy blocks of xerial-framed data."""
    view = memoryview(data)
    pos = _XERIAL_HEADER_LEN
    end = len(view)
    blocks = []
    while pos < end:
        if pos + 4 > end:
            raise CodecError("snappy: truncated xerial block length")
        (size,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise CodecError("snappy: truncated xerial block")
        blocks.append(view[pos : pos + size])
        pos += size
    return blocks


def _unsnappy(data: BytesLike, limit: int) -> bytes:
    if bytes(data[:8]) != _XERIAL_MAGIC:
        blocks = [memoryview(data)]
    else:
        # The xerial framing of the Java snappy library: a 16-byte header, then blocks each
        # preceded by a big-endian int32 length.
        blocks = _xerial_blocks(data)
    # Every block announces its size: check the bound first, then decompress each block
    # straight into its place in one buffer.
    import cramjam

    sizes = [_snappy_raw_length(block) for block in blocks]
    total = sum(sizes)
    if total > limit:
        raise DecompressionLimitExceeded("snappy", limit)
    out = bytearray(total)
    view = memoryview(out)
    pos = 0
    try:
        for block, size in zip(blocks, sizes, strict=True):
            written = cramjam.snappy.decompress_raw_into(block, view[pos : pos + size])
            if written != size:
                raise CodecError("snappy: block is shorter than it announces")
            pos += size
    except CodecError:
        raise
    except Exception as exc:  # cramjam.DecompressionError and buffer errors
        raise CodecError(f"snappy: {exc}") from None
    finally:
        view.release()
    return bytes(out)


def _unlz4(data: BytesLike, limit: int) -> bytes:
    import lz4.frame

    dec = lz4.frame.LZ4FrameDecompressor()
    # The decompressor allocates max_length up front, so grow the output step by step instead
    # of asking for the whole bound at once; when the frame declares its size (librdkafka's
    # do), one step of exactly that size (highly compressible batches otherwise took five
    # growing chunks and a join).
    try:
        declared = int(lz4.frame.get_frame_info(data).get("content_size") or 0)
    except (RuntimeError, ValueError, TypeError):
        declared = 0
    if declared > limit:
        raise DecompressionLimitExceeded("lz4", limit)
    if declared:
        step = declared + 1
    else:
        # Java's producer declares no size: start at the ratio the last frame had (batches of
        # a topic compress alike), so that one step usually holds the frame.
        step = min(limit + 1, max(1 << 16, int(_lz4_ratio * len(data)) + 1024))
    try:
        first = dec.decompress(data, max_length=step)
        parts = [first]
        total = len(first)
        while not dec.eof and total <= limit:
            if dec.needs_input:
                raise CodecError("lz4: compressed data is truncated")
            step = min(limit + 1 - total, 2 * step)
            chunk = dec.decompress(b"", max_length=step)
            parts.append(chunk)
            total += len(chunk)
    except RuntimeError as exc:
        raise CodecError(f"lz4: {exc}") from None
    if total > limit:
        raise DecompressionLimitExceeded("lz4", limit)
    _remember_lz4_ratio(total, len(data))
    return first if len(parts) == 1 else b"".join(parts)


# The last lz4 frame's decompressed-to-compressed ratio, with 10% to spare (see _unlz4). A
# hint: threads may race on it, which only changes a first step's size.
_lz4_ratio = 4.0


def _remember_lz4_ratio(total: int, compressed: int) -> None:
    global _lz4_ratio
    if compressed:
        _lz4_ratio = min(256.0, max(4.0, 1.1 * total / compressed))


def _unzstd(data: BytesLike, limit: int) -> bytes:
    import zstandard

    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise CodecError(f"zstd: {exc}") from None
    if declared > limit:
        raise DecompressionLimitExceeded("zstd", limit)
    dctx = _zstd_decompressor()
    try:
        if declared >= 0:
            # A frame that lies about its size fails inside the library rather than overflow.
            return dctx.decompress(data)
        # No content size in the frame: the library stops at max_output_size.
        return dctx.decompress(data, max_output_size=limit)
    except zstandard.ZstdError as exc:
        if declared < 0 and "did not decompress full frame" in str(exc):
            # Either a bomb or a truncated frame; tell them apart by streaming a bounded read.
            if _zstd_exceeds(dctx, data, limit):
                raise DecompressionLimitExceeded("zstd", limit) from None
        raise CodecError(f"zstd: {exc}") from None


_local = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    import zstandard

    # A decompression context costs as much as decompressing a small batch; contexts are
    # not thread-safe, so keep one per thread.
    dctx: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if dctx is None:
        dctx = _local.zstd = zstandard.ZstdDecompressor()
    return dctx


def _zstd_exceeds(dctx: zstandard.ZstdDecompressor, data: BytesLike, limit: int) -> bool:
    import zstandard

    total = 0
    try:
        with dctx.stream_reader(bytes(data)) as reader:
            while total <= limit:
                chunk = reader.read(1 << 20)
                if not chunk:
                    return False
                total += len(chunk)
    except zstandard.ZstdError:
        return False
    return True


# ----------------------------------------------------------------------------- lz4 (KAFKA-1493)

_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (used only for the few bytes of an lz4 frame descriptor)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while pos + 16 <= n:
            lanes = struct.unpack_from("<4I", data, pos)
            v1 = (_rotl((v1 + lanes[0] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + lanes[1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + lanes[2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + lanes[3] * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_descriptor_end(data: BytesLike) -> int:
    """Index of the header-checksum byte of an lz4 frame."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        raise CodecError("lz4: not an lz4 frame")
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= end:
        raise CodecError("lz4: truncated frame descriptor")
    return end


def _fix_broken_lz4_header(data: BytesLike) -> bytes:
    # Magic-0 producers hashed the frame magic too (KAFKA-1493); Java skips the check for them.
    # The lz4 library always checks, so rewrite the byte with the correct value.
    end = _lz4_descriptor_end(data)
    raw = bytearray(data)
    raw[end] = (xxh32(bytes(raw[4:end])) >> 8) & 0xFF
    return bytes(raw)


def _break_lz4_header(data: bytes) -> bytes:
    end = _lz4_descriptor_end(data)
    raw = bytearray(data)
    raw[end] = (xxh32(bytes(raw[0:end])) >> 8) & 0xFF
    return bytes(raw)


# ----------------------------------------------------------------------------- compression


def compress(codec: int, data: bytes, *, magic: int = 2, xerial: bool = True) -> bytes:
    """Compress a batch payload with codec ``codec``.

    Snappy uses the xerial framing (what the Java producer writes) unless ``xerial`` is false.
    For ``magic == 0`` lz4 writes the legacy (wrong) header checksum, as old producers did.
    """
    if codec == CODEC_NONE:
        return bytes(data)
    if codec == CODEC_GZIP:
        co = zlib.compressobj(6, zlib.DEFLATED, 31)
        return co.compress(data) + co.flush()
    if codec == CODEC_SNAPPY:
        import snappy

        if not xerial:
            return bytes(snappy.compress(data))
        parts = [_XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(snappy.compress(data[start : start + _XERIAL_BLOCK]))
            parts.append(struct.pack(">i", len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec == CODEC_LZ4:
        import lz4.frame

        out = lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        return _break_lz4_header(out) if magic == 0 else out
    if codec == CODEC_ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown compression codec id {codec}")
