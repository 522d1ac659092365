"""Record-batch decoding benchmark: our Cython and pure paths, to record objects and to Arrow,
against kafka-python's and aiokafka's record readers, on the same pre-built in-memory fetch data.

    python -m benchmarks.decode [--records N] [--repeat R] [--codecs none,gzip,...]

Workload: records with an 8-byte key, no headers, and values of 100 bytes and 1 KiB made of
words drawn from a small vocabulary (so the codecs have something to compress), packed into v2
batches of about 64 KiB of record data each (what a producer with a large batch.size and some
linger writes), grouped into fetch responses of at most 1 MiB (the default
max.partition.fetch.bytes); every reader decodes the same responses one at a time and drops
the records of one before the next, as a consumer does.

The Arrow readers (``kafkaconsumer.record.arrow.decode_fetched_arrow``: Cython, and the pure-Python
twin) build one ``pyarrow.RecordBatch`` per response and count the non-null values of its
``value`` column; they run when pyarrow is installed. "ours Arrow poll" is the shape
``poll_arrow(max_records=100_000)`` has (benchmarks/consume.py): responses decoded into one
builder until it holds 100,000 rows or ``arrow.poll.max.bytes`` of keys and values (16 MiB
by default: on 1 KiB values about 16,000 rows), the last batch kept while the next is built.

Every reader checks CRCs (our decoders with check_crcs=True, the others through
``batch.validate_crc()``, as their consumers do by default) and reads every record's value;
before timing, each reader must count every record of a sample response and reject the same
response with one value byte flipped (so none of them skips the CRC check).
Timing is CPU time of this process (``time.process_time``), best of ``--repeat`` runs, so that
load from other processes on a shared machine disturbs it less. MB/s counts the fetched
(on-the-wire, possibly compressed) bytes.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

# Import both of our implementations explicitly, whatever the environment selects.
from kafkaconsumer.record import _pyrecords, encode_batch

_crecords: Any
try:
    _crecords = importlib.import_module("kafkaconsumer.record._crecords")
except ImportError:  # the extension is not built
    _crecords = None

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
VALUE_SIZES = [100, 1024]
BATCH_BYTES = 64 * 1024
#: Bytes of one partition's records in one fetch (the default max.partition.fetch.bytes).
FETCH_BYTES = 1024 * 1024


def build_fetch_data(n_records: int, value_size: int, codec: str, seed: int = 7) -> list[bytes]:
    """Fetch responses holding ``n_records`` records (offsets 0..n-1) in v2 batches.

    Each response is at most :data:`FETCH_BYTES` of whole batches, like one partition's
    ``records`` in a Fetch response at the default ``max.partition.fetch.bytes``.
    """
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(300)
    ]
    per_batch = max(1, BATCH_BYTES // (value_size + 8))
    base_ts = 1_700_000_000_000
    chunks: list[bytes] = []
    current: list[bytes] = []
    current_size = 0
    offset = 0
    while offset < n_records:
        count = min(per_batch, n_records - offset)
        records: list[tuple[bytes, bytes, list[tuple[str, bytes]], int]] = []
        for i in range(count):
            words: list[str] = []
            size = 0
            while size < value_size:
                w = rng.choice(vocab)
                words.append(w)
                size += len(w) + 1
            value = " ".join(words).encode()[:value_size]
            records.append((b"key%05d" % ((offset + i) % 100000), value, [], base_ts + offset + i))
        batch = encode_batch(records, base_offset=offset, compression=codec)
        if current and current_size + len(batch) > FETCH_BYTES:
            chunks.append(b"".join(current))
            current, current_size = [], 0
        current.append(batch)
        current_size += len(batch)
        offset += count
    if current:
        chunks.append(b"".join(current))
    return chunks


def read_ours(module: Any) -> Callable[[bytes], int]:
    """Our decoder, as the fetcher calls it."""
    decode = module.decode_fetched_records

    def run(data: bytes) -> int:
        # Offsets are not needed for the position here: each chunk starts at its first batch.
        result = decode(data, "bench", 0, 0, check_crcs=True)
        n = 0
        for record in result.records:
            if record.value is not None:
                n += 1
        return n

    return run


def read_arrow(force_python: bool) -> Callable[[bytes], int]:
    """Our Arrow decoder (Cython, or the pure-Python twin), as ``poll_arrow`` calls it."""
    from kafkaconsumer.record import _columns, arrow

    decode = arrow.decode_fetched_arrow
    if force_python:
        columns = functools.partial(_columns.decode_columns, _pyrecords.decode_fetched_records)
        decode = functools.partial(arrow.decode_with, columns)

    def run(data: bytes) -> int:
        result = decode(data, "bench", 0, 0)
        values = result.batch.column(1)
        return int(len(values) - values.null_count)

    return run


#: Rows per batch of the poll-shaped Arrow reader (what benchmarks/consume.py asks of poll_arrow).
POLL_ROWS = 100_000


def read_arrow_poll() -> Callable[[bytes], int]:
    """Our Arrow decoder as ``poll_arrow(max_records=POLL_ROWS)`` uses it: responses decoded
    into one builder until it holds POLL_ROWS rows or the default ``arrow.poll.max.bytes``,
    then one record batch, which is kept until the next one is made (a caller holds the last
    poll's batch while it polls again)."""
    from kafkaconsumer.config import config_default
    from kafkaconsumer.record import arrow

    max_bytes = int(config_default("arrow.poll.max.bytes"))

    state: dict[str, Any] = {"builder": None, "held": None}

    def run(data: bytes) -> int:
        builder = state["builder"]
        if builder is None:
            builder = state["builder"] = arrow.ArrowBuilder(len(data))
        try:
            rows, _next_offset, _partial = builder.decode(data, "bench", 0, 0)
        except Exception:
            state["builder"] = None  # a builder that failed holds part of the data
            raise
        if builder.num_rows >= POLL_ROWS or builder.data_bytes >= max_bytes:
            batch, _epochs = builder.finish()
            state["held"], state["builder"] = batch, None
        return int(rows)

    return run


def read_memory_records(cls: Any) -> Callable[[bytes], int]:
    """kafka-python's / aiokafka's MemoryRecords: batch by batch, record by record."""

    def run(data: bytes) -> int:
        records = cls(data)
        n = 0
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            if not batch.validate_crc():
                raise RuntimeError("CRC mismatch")
            for record in batch:
                if record.value is not None:
                    n += 1
        return n

    return run


def readers() -> dict[str, Callable[[bytes], int]]:
    """Name -> reader of every decoder that is importable here."""
    found: dict[str, Callable[[bytes], int]] = {}
    if _crecords is not None:
        found["ours (Cython)"] = read_ours(_crecords)
    found["ours (pure)"] = read_ours(_pyrecords)
    try:
        from kafkaconsumer.record import arrow
    except ImportError:  # pyarrow is not installed
        pass
    else:
        if arrow.USING_EXTENSION:
            found["ours Arrow (Cython)"] = read_arrow(False)
        if arrow.builder_available():
            found["ours Arrow poll"] = read_arrow_poll()
        found["ours Arrow (pure)"] = read_arrow(True)
    try:
        from aiokafka.record._crecords import MemoryRecords as AioMemoryRecords

        found["aiokafka (Cython)"] = read_memory_records(AioMemoryRecords)
    except ImportError:
        pass
    try:
        from kafka.record import MemoryRecords as KpMemoryRecords

        found["kafka-python"] = read_memory_records(KpMemoryRecords)
    except ImportError:
        pass
    return found


def check_readers(found: dict[str, Callable[[bytes], int]]) -> None:
    """Fairness check before timing: every reader sees every record of an uncompressed
    response and rejects it once one byte of a record value is flipped (only the CRC can catch
    that: the batch still parses)."""
    n = 1000
    (data,) = build_fetch_data(n, 100, "none")
    bad = bytearray(data)
    # Inside the first record's value: batch header (61 bytes), then that record's length,
    # attributes, deltas, key length, 8-byte key and value length take under 20 bytes.
    bad[61 + 40] ^= 0x01
    for name, reader in found.items():
        seen = reader(data)
        if seen != n:
            raise RuntimeError(f"{name} saw {seen} records, expected {n}")
        try:
            reader(bytes(bad))
        except Exception:  # noqa: BLE001 - each library raises its own error type
            continue
        raise RuntimeError(f"{name} accepted a corrupted record value: it skips the CRC check")


def measure(
    found: dict[str, Callable[[bytes], int]], chunks: list[bytes], expected: int, repeat: int
) -> dict[str, float]:
    """Best CPU seconds of ``repeat`` runs of each reader over every chunk.

    The readers take turns (one run each per round) so that a burst of load from elsewhere on
    the machine does not fall on one reader only.
    """
    best = {name: float("inf") for name in found}
    for _ in range(repeat):
        for name, reader in found.items():
            gc.collect()
            start = time.process_time()
            count = 0
            for chunk in chunks:
                count += reader(chunk)
            elapsed = time.process_time() - start
            if count != expected:
                raise RuntimeError(f"{name} saw {count} records, expected {expected}")
            best[name] = min(best[name], elapsed)
    return best


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="records per workload")
    parser.add_argument("--repeat", type=int, default=5, help="runs per reader (best counts)")
    parser.add_argument("--codecs", default=",".join(CODECS))
    parser.add_argument("--sizes", default=",".join(map(str, VALUE_SIZES)))
    args = parser.parse_args(argv)
    found = readers()
    check_readers(found)
    names = list(found)
    ref = "aiokafka (Cython)" if "aiokafka (Cython)" in found else names[-1]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; CPU time, best of {args.repeat}"
    )
    print(f"ratios are against {ref}; MB/s counts fetched (wire) bytes")
    print("every reader counted every record and rejected a corrupted value (CRC checked)")
    header = (
        f"{'workload':<18} {'reader':<20} {'records/s':>12} {'MB/s':>8} {'us/rec':>7} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for size in (int(s) for s in args.sizes.split(",")):
        n = args.records if size <= 100 else max(1, args.records // 4)
        for codec in args.codecs.split(","):
            chunks = build_fetch_data(n, size, codec)
            wire = sum(len(c) for c in chunks)
            times = measure(found, chunks, n, args.repeat)
            for name in names:
                t = times[name]
                print(
                    f"{codec + ' ' + str(size) + 'B':<18} {name:<20} {n / t:>12,.0f} "
                    f"{wire / t / 1e6:>8.1f} {t / n * 1e6:>7.2f} {times[ref] / t:>6.2f}"
                )
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
