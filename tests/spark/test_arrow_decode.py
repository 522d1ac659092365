"""Arrow decoding equals the object decoder, record for record, on every format, codec and flag
(generated data, both Arrow implementations), and fails the same way on bad data."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError  # noqa: E402
from kafkaconsumer.record import (  # noqa: E402
    _pyrecords,
    arrow,  # noqa: E402
    encode_batch,
)
from tests.record.conftest import CYTHON, EXPECT_EXTENSIONS  # noqa: E402
from tests.record.test_model import Unit, fetch_data  # noqa: E402
from tests.support.arrow_decoders import reference_decode_fetched_arrow  # noqa: E402

_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _decoders() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("pure", reference_decode_fetched_arrow)]
    if arrow.USING_EXTENSION:
        out.append(("cython", arrow.decode_fetched_arrow))
    elif EXPECT_EXTENSIONS:
        pytest.fail("KAFKACONSUMER_EXPECT_EXTENSIONS=1 but the Cython Arrow decoder is missing")
    return out


def _object_modules() -> list[Any]:
    return [_pyrecords] + ([CYTHON] if CYTHON is not None else [])


def _check_same(data: bytes, fetch_offset: int, **kwargs: Any) -> None:
    for module in _object_modules():
        expected = module.decode_fetched_records(data, "topic-a", 3, fetch_offset, **kwargs)
        want_batch, want_epochs = arrow.records_to_arrow(expected.records, "topic-a", 3)
        for name, decode in _decoders():
            got = decode(memoryview(data), "topic-a", 3, fetch_offset, **kwargs)
            assert got.batch.schema == arrow.SCHEMA_WITH_HEADERS
            got.batch.validate(full=True)
            assert got.batch.to_pylist() == want_batch.to_pylist(), name
            assert got.batch.equals(want_batch), name
            assert got.leader_epochs.to_pylist() == want_epochs.to_pylist(), name
            assert (got.next_offset, got.partial) == (expected.next_offset, expected.partial)
            # Spark-visible values straight from the objects, not through records_to_arrow.
            rows = got.batch.to_pylist()
            for row, rec in zip(rows, expected.records, strict=True):
                assert (row["key"], row["value"], row["offset"], row["timestampType"]) == (
                    rec.key,
                    rec.value,
                    rec.offset,
                    rec.timestamp_type,
                )
                assert [(h["key"], h["value"]) for h in row["headers"]] == list(rec.headers)


@_SETTINGS
@given(case=fetch_data(), check_crcs=st.booleans())
@pytest.mark.timeout(180)
def test_arrow_equals_objects(case: dict[str, Any], check_crcs: bool) -> None:
    units: list[Unit] = case["units"]
    data = b"".join(u.data for u in units)
    if case["cut"] is not None:
        data = data[: len(data) - len(units[-1].data) + case["cut"]]
    _check_same(data, case["fetch_offset"], check_crcs=check_crcs)


@_SETTINGS
@given(
    case=fetch_data(),
    aborted=st.lists(
        st.fixed_dictionaries(
            {
                "producer_id": st.integers(min_value=0, max_value=2**40),
                "first_offset": st.integers(min_value=0, max_value=2**41),
            }
        ),
        max_size=4,
    ),
)
@pytest.mark.timeout(180)
def test_arrow_equals_objects_under_read_committed(
    case: dict[str, Any], aborted: list[dict[str, int]]
) -> None:
    units: list[Unit] = case["units"]
    for unit in units:
        if unit.records and unit.data[16] == 2:
            pid = int.from_bytes(unit.data[43:51], "big", signed=True)
            if pid >= 0 and pid % 3 == 0:
                aborted.append(
                    {
                        "producer_id": pid,
                        "first_offset": int.from_bytes(unit.data[:8], "big", signed=True),
                    }
                )
    data = b"".join(u.data for u in units)
    _check_same(data, case["fetch_offset"], read_committed=True, aborted_transactions=aborted)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.timeout(60)
def test_every_codec_with_headers_and_nulls(codec: str) -> None:
    recs = [
        (
            None if i % 4 == 0 else b"k%d" % i,
            None if i % 5 == 0 else b"v" * (i % 50),
            [(f"h{j}", None if j == 1 else b"x%d" % i) for j in range(i % 3)],
            1000 + i,
        )
        for i in range(300)
    ]
    data = b"".join(
        encode_batch(recs[i : i + 100], base_offset=i, compression=codec, partition_leader_epoch=4)
        for i in range(0, 300, 100)
    )
    _check_same(data, 0)
    _check_same(data, 150)
    got = arrow.decode_fetched_arrow(data, "topic-a", 3, 0)
    assert got.batch.num_rows == 300
    assert got.batch.column("key").null_count == 75
    assert got.leader_epochs.to_pylist() == [4] * 300


@pytest.mark.timeout(30)
def test_corrupt_crc_raises_with_topic_partition_offset() -> None:
    data = bytearray(encode_batch([(b"k", b"v" * 40, [], 5)] * 3, base_offset=70))
    data[-3] ^= 0xFF
    for name, decode in _decoders():
        with pytest.raises(CorruptRecordError) as info:
            decode(bytes(data), "topic-a", 3, 70)
        assert (info.value.topic, info.value.partition, info.value.offset) == ("topic-a", 3, 70), (
            name
        )
        # Without CRC checks the damaged value bytes are data, as on the object path.
        got = decode(bytes(data), "topic-a", 3, 70, check_crcs=False)
        assert got.batch.num_rows == 3


@pytest.mark.timeout(30)
def test_malformed_record_and_oversized_batch() -> None:
    good = encode_batch([(b"k", b"value", [], 5)], base_offset=9)
    # Record length varint claims more than the batch holds.
    bad = bytearray(good)
    bad[61] = 0x7E
    for name, decode in _decoders():
        with pytest.raises(CorruptRecordError) as info:
            decode(bytes(bad), "topic-a", 3, 9, check_crcs=False)
        assert info.value.offset == 9, name
        with pytest.raises(RecordTooLargeError):
            decode(good[:-5], "topic-a", 3, 9)
        empty = decode(None, "topic-a", 3, 9)
        assert (empty.batch.num_rows, empty.next_offset, empty.partial) == (0, 9, False)


@pytest.mark.timeout(30)
def test_invalid_utf8_header_key_is_corrupt() -> None:
    data = encode_batch([(b"k", b"v", [("ab", b"1")], 5)], base_offset=0)
    bad = bytearray(data.replace(b"ab", b"\xff\xfe"))
    for name, decode in _decoders():
        with pytest.raises(CorruptRecordError):
            decode(bytes(bad), "topic-a", 3, 0, check_crcs=False)
        del name


@pytest.mark.timeout(30)
def test_arrow_records_slices_and_converts_back() -> None:
    recs = [(b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)], 100 + i) for i in range(10)]
    data = encode_batch(recs, base_offset=20, partition_leader_epoch=2)
    result = arrow.decode_fetched_arrow(data, "t", 0, 0)
    ar = arrow.ArrowRecords.from_result(result)
    assert len(ar) == 10 and ar[-1] == (29, 2)
    part = ar[3:7]
    part.extend(ar[7:10])
    assert len(part) == 7 and part[-1].offset == 29
    assert part.to_batch(False).schema == arrow.SCHEMA
    assert part.to_batch(True).column("offset").to_pylist() == list(range(23, 30))
    objects = _pyrecords.decode_fetched_records(data, "t", 0, 23).records
    assert [r.as_tuple() for r in part.to_records(_pyrecords.ConsumerRecord)] == [
        r.as_tuple() for r in objects
    ]


@pytest.mark.timeout(30)
def test_the_last_record_of_a_slice_is_kept_where_known_and_read_where_not() -> None:
    data = encode_batch(
        [(None, b"v%d" % i, [], 100 + i) for i in range(6)],
        base_offset=40,
        partition_leader_epoch=4,
    )
    result = arrow.decode_fetched_arrow(data, "t", 0, 0)
    known = arrow.ArrowRecords.from_result(result._replace(last=arrow._Last(45, 4)))
    whole = known[0:6]
    # All of it: the same batches, not slices of them, and the last record as given.
    assert whole.batches[0] is known.batches[0] and whole[-1] == (45, 4)
    assert known[2:6][-1] == (45, 4) and known[0:3][-1] == (42, 4)
    # Read from the columns when not given, past a trailing batch without rows.
    empty = result.batch.slice(0, 0)
    read = arrow.ArrowRecords([result.batch, empty], [result.leader_epochs, empty.column(0)])
    assert read[-1] == (45, 4) and read[1:4][-1] == (43, 4)
    joined = known[0:2]
    joined.extend(known[2:6])
    assert joined[-1] == (45, 4) and len(joined) == 6
    joined.extend(read[0:0])
    assert joined[-1] == (45, 4)


@pytest.mark.timeout(30)
@pytest.mark.skipif(not arrow.builder_available(), reason="needs the Cython Arrow decoder")
def test_a_builder_tells_the_last_row_of_each_partition_it_decodes() -> None:
    first = encode_batch([(None, b"a", [], 5), (None, b"b", [], 6)], base_offset=10)
    second = encode_batch([(None, b"c", [], 7)], base_offset=70, partition_leader_epoch=9)
    builder = arrow.ArrowBuilder(len(first) + len(second))
    assert builder.last_row() is None
    builder.decode(first, "t", 0, 0)
    # No leader epoch on the batch (-1) is None, as on a record.
    assert builder.last_row() == (11, None)
    builder.decode(second, "t", 1, 0)
    assert builder.last_row() == (70, 9)
    batch, epochs = builder.finish()
    assert batch.column("offset").to_pylist() == [10, 11, 70]
    assert epochs.to_pylist() == [-1, -1, 9]


@pytest.mark.timeout(60)
def test_decoding_and_handing_out_arrow_does_not_import_pandas() -> None:
    # pyarrow imports pandas (about half a second) as soon as it converts a Python value; the
    # decode-to-poll_arrow path must build everything from buffers.
    script = (
        "import sys\n"
        "from kafkaconsumer.record import arrow\n"
        "from kafkaconsumer.record import encode_batch\n"
        "data = encode_batch([(b'k', b'v', [('h', b'x')], 5)] * 3, base_offset=0)\n"
        "recs = arrow.ArrowRecords.from_result(arrow.decode_fetched_arrow(data, 't', 1, 0))\n"
        "assert recs[-1].offset == 2\n"
        "b = arrow.concat_batches([recs[0:2].to_batch(True), recs[2:3].to_batch(True)])\n"
        "assert b.column('topic').to_pylist() == ['t'] * 3, b\n"
        "assert b.column('partition').to_pylist() == [1] * 3, b\n"
        "assert arrow.empty_batch(True).num_rows == 0\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=50, check=True
    )
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("codec", ["lz4", "zstd", "gzip"])
def test_compressed_batches_that_shrink_a_lot_then_little(codec: str) -> None:
    # The value column is sized from the first compressed batch's ratio (capped) for the rest
    # of the fetch: batches that compress 100x, then batches of random bytes, then again.
    import random

    rng = random.Random(5)
    data = b""
    offset = 0
    for kind in ("zeros", "random", "zeros", "random"):
        records: list[tuple[bytes | None, bytes, list[tuple[str, bytes]], int]] = []
        for i in range(300):
            size = rng.randrange(0, 3000)
            value = bytes(size) if kind == "zeros" else rng.randbytes(size)
            key = None if i % 5 == 0 else b"k%d" % i
            records.append((key, value, [], 1_700_000_000_000 + i))
        data += encode_batch(records, base_offset=offset, compression=codec)
        offset += len(records)
    _check_same(data, 0)


def test_bounded_reads_do_not_long_poll_unless_configured() -> None:
    # A bounded read's ranges end at or below the log end: its consumer fetches with a short
    # fetch.max.wait.ms unless the user set one, and keeps the user's value.
    from kafkaconsumer.spark.offset_ranges import _BOUNDED_FETCH_MAX_WAIT_MS, _reader_config

    assert _reader_config({"bootstrap.servers": "x"})["fetch.max.wait.ms"] == (
        _BOUNDED_FETCH_MAX_WAIT_MS
    )
    assert _BOUNDED_FETCH_MAX_WAIT_MS < 500
    assert _reader_config({"fetch.max.wait.ms": 250})["fetch.max.wait.ms"] == 250


def test_large_column_memory_is_reused_and_bounded() -> None:
    # A column block of 1 MiB or more that Arrow lets go is kept (up to a bound) and the next
    # columns are built in it: no fresh mapping to fault in page by page.
    if not arrow.USING_EXTENSION:
        pytest.skip("needs the Cython Arrow decoder")
    from kafkaconsumer.record import _carrow

    data = encode_batch([(None, b"v" * 1000, [], 1) for _ in range(3000)])

    def value_buffer_address() -> int:
        result = arrow.decode_fetched_arrow(data, "t", 0, 0)
        address: int = result.batch.column(1).buffers()[2].address
        assert result.batch.num_rows == 3000
        return address

    first = value_buffer_address()  # the batch is dropped on return: its blocks are kept
    assert 0 < _carrow.pooled_bytes() <= 64 << 20
    assert value_buffer_address() == first
    # Many large batches alive at once: what is kept afterwards stays within the bound.
    alive = [arrow.decode_fetched_arrow(data * 20, "t", 0, 0) for _ in range(8)]
    assert all(r.batch.num_rows == 60000 for r in alive)
    del alive
    assert _carrow.pooled_bytes() <= 64 << 20


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 8, 1000])
@pytest.mark.parametrize("topic", ["t", "a-topic-name-of-249-chars-" + "x" * 223])
def test_topic_column_repeats_the_name_on_every_row(rows: int, topic: str) -> None:
    # The builder writes a poll's topic column by doubling copies; every row must hold the
    # whole name, partition after partition.
    if not arrow.builder_available():
        pytest.skip("needs the Cython Arrow decoder")
    records: list[tuple[bytes | None, bytes, list[tuple[str, bytes]], int]] = [
        (None, b"v%d" % i, [], 1_700_000_000_000 + i) for i in range(rows)
    ]
    data = encode_batch(records, base_offset=0)
    builder = arrow.ArrowBuilder(len(data))
    for partition in (0, 1):
        builder.decode(data, topic, partition, 0)
    batch, _ = builder.finish()
    assert batch.column("topic").to_pylist() == [topic] * (2 * rows)
    assert batch.column("partition").to_pylist() == [0] * rows + [1] * rows
    assert arrow._repeated_topic(topic, rows).to_pylist() == [topic] * rows
