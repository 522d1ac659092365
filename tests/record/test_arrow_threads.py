"""The Cython Arrow decoder decodes partitions on several threads at once (its CRC check and
record loop release the GIL), with the same columns as one thread decoding them in turn."""

from __future__ import annotations

import importlib
import random
import threading
from typing import Any

import pytest

from kafkaconsumer.errors import CorruptRecordError
from kafkaconsumer.record import encode_batch
from tests.record.conftest import EXPECT_EXTENSIONS

carrow: Any
try:
    carrow = importlib.import_module("kafkaconsumer.record._carrow")
except ImportError:
    carrow = None

pytestmark = pytest.mark.skipif(
    carrow is None and not EXPECT_EXTENSIONS, reason="the Cython decoders are not built"
)

THREADS = 4


def _partition(seed: int, codec: str, value_size: int, batches: int) -> bytes:
    """Batches of records; some with headers, null keys or null values (the slow path)."""
    rng = random.Random(seed)
    out = []
    offset = 0
    for _ in range(batches):
        records = []
        for i in range(rng.randint(20, 200)):
            key = None if i % 17 == 0 else b"k%06d" % (offset + i)
            value = None if i % 23 == 0 else rng.randbytes(rng.randint(0, value_size))
            headers = [("h", b"v%d" % i), ("n", None)] if i % 11 == 0 else []
            records.append((key, value, headers, 1_700_000_000_000 + offset + i))
        out.append(encode_batch(records, base_offset=offset, compression=codec))
        offset += len(records)
    return b"".join(out)


def _plain(columns: Any) -> Any:
    """The column tuple with its buffers as bytes (comparable)."""
    if isinstance(columns, tuple):
        return tuple(_plain(c) for c in columns)
    if columns is None or isinstance(columns, int):
        return columns
    return bytes(memoryview(columns))


def _decode(data: bytes, partition: int) -> Any:
    rows, columns, next_offset, partial = carrow.decode_columns(
        data, "topic", partition, 0, include_headers=True
    )
    return rows, _plain(columns), next_offset, partial


def _run_threads(jobs: list[tuple[bytes, int]]) -> list[Any]:
    """Each thread decodes every job several times; the results of each thread's rounds."""
    results: list[list[Any]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(slot: int) -> None:
        try:
            start.wait(timeout=30)
            for _ in range(3):
                # Each thread starts at a different job, so different data meets at once too.
                for k in range(len(jobs)):
                    data, partition = jobs[(k + slot) % len(jobs)]
                    results[slot].append((partition, _decode(data, partition)))
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return [item for per_thread in results for item in per_thread]


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gzip", "snappy"])
def test_threads_decode_same_and_different_data_like_one_thread(codec: str) -> None:
    jobs = [(_partition(seed, codec, 1024, 12), seed) for seed in range(4)]
    expected = {partition: _decode(data, partition) for data, partition in jobs}
    assert all(result[0] > 500 for result in expected.values())
    for partition, result in _run_threads(jobs + jobs[:1]):
        assert result == expected[partition]


def test_threads_see_corruption_each_on_its_own_data() -> None:
    good = _partition(1, "none", 1024, 6)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x40  # inside some batch: its CRC no longer matches
    expected = _decode(good, 0)
    failures: list[BaseException] = []
    results: list[Any] = []

    def work(data: bytes) -> None:
        try:
            results.append(_decode(data, 0))
        except CorruptRecordError as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=work, args=(bytes(bad) if i % 2 else good,))
        for i in range(THREADS * 2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(failures) == THREADS and all("CRC32C" in str(e) for e in failures)
    assert results == [expected] * THREADS


def _decode_prepared(data: bytes, partition: int, fetch_offset: int = 0, **kw: Any) -> Any:
    prepared = carrow.prepare_batches(data, fetch_offset, kw.get("check_crcs", True))
    rows, columns, next_offset, partial = carrow.decode_columns(
        data, "topic", partition, fetch_offset, include_headers=True, prepared=prepared, **kw
    )
    return rows, _plain(columns), next_offset, partial


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("fetch_offset", [0, 150])
def test_prepared_batches_decode_to_the_same_columns(codec: str, fetch_offset: int) -> None:
    # A control batch, a batch wholly before the fetch offset and an incomplete tail among
    # them: each is prepared or left to the decode, and the columns are the same.
    from tests.support.record_encoder import encode_control_batch

    data = _partition(7, codec, 300, 4)
    marker = encode_control_batch(True, producer_id=1, base_offset=2_000)
    tail = _partition(8, codec, 300, 1)
    data = data + marker + tail[: len(tail) // 2]
    prepared = carrow.prepare_batches(data, fetch_offset)
    assert prepared.num_batches == 5
    assert (prepared.payload_bytes > 0) == (codec != "none")
    plain = carrow.decode_columns(data, "topic", 3, fetch_offset, include_headers=True)
    want = plain[0], _plain(plain[1]), plain[2], plain[3]
    assert _decode_prepared(data, 3, fetch_offset) == want
    assert want[3] is True  # the tail is partial


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_preparation_stops_at_a_corrupt_batch_and_the_decode_raises_there(codec: str) -> None:
    first = _partition(9, codec, 300, 2)
    second = bytearray(_partition(10, codec, 300, 1))
    second[8 + 4 + 4 + 1 + 4 + 2 + 4] ^= 0x01  # a byte under the CRC (the base timestamp)
    data = first + bytes(second)
    prepared = carrow.prepare_batches(data, 0)
    assert prepared.num_batches == 2
    with pytest.raises(CorruptRecordError) as plain:
        carrow.decode_columns(data, "topic", 1, 0, include_headers=True)
    with pytest.raises(CorruptRecordError) as ready:
        carrow.decode_columns(data, "topic", 1, 0, include_headers=True, prepared=prepared)
    assert str(ready.value) == str(plain.value)
    assert (ready.value.partition, ready.value.offset) == (1, plain.value.offset)
    # Preparation without CRC checks leaves the CRC to nobody, as check_crcs=False does.
    unchecked = carrow.prepare_batches(data, 0, False)
    assert unchecked.num_batches == 3
    with pytest.raises(ValueError, match="other data"):
        carrow.decode_columns(data[:-1], "topic", 1, 0, prepared=prepared)
