"""The Arrow decoder with its decode pool (``arrow.decode.threads``) and its byte bound
(``arrow.poll.max.bytes``): the same batches, positions and errors as one thread, over many
partitions, with an in-process fake network client (no sockets)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.errors import ConfigError, CorruptRecordError
from kafkaconsumer.internals.fetch.decode_pool import AUTO_MAX_THREADS, DecodePool, decode_threads
from kafkaconsumer.internals.fetch.fetcher import FetchConfig, Fetcher
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.record import encode_batch
from kafkaconsumer.structs import TopicPartition
from tests.consumer.test_fetcher_unit import FakeClient, FakeMetadata, response
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(60)
pa = pytest.importorskip("pyarrow")

from kafkaconsumer.internals.fetch.arrow_decoder import ArrowDecoder  # noqa: E402
from kafkaconsumer.record import arrow  # noqa: E402

PARTITIONS = [TopicPartition("t", p) for p in range(6)]
CODECS = ["lz4", "zstd", "gzip", "snappy", "none", "lz4"]


def _data(
    tp: TopicPartition, batches: int = 3, per_batch: int = 40, codec: str | None = None
) -> bytes:
    """A partition's fetched bytes: a few batches of ``codec`` (default: the partition's)."""
    out = b""
    for b in range(batches):
        base = b * per_batch
        records: list[Any] = [
            (b"k%d" % i, b"%d-%d-" % (tp.partition, base + i) + b"v" * 300, [], 1000 + i)
            for i in range(per_batch)
        ]
        out += encode_batch(records, base_offset=base, compression=codec or CODECS[tp.partition])
    return out


def _fetcher(**kw: Any) -> tuple[Fetcher, FakeClient, SubscriptionState]:
    subs = SubscriptionState("earliest")
    client = FakeClient()
    md = FakeMetadata({tp: 0 for tp in PARTITIONS})
    f = Fetcher(client, md, subs, FetchConfig(max_poll_records=100_000, **kw), time=MockTime())
    subs.assign_from_user(PARTITIONS)
    for tp in PARTITIONS:
        subs.seek(tp, 0)
    assert f.send_fetches() == 1
    return f, client, subs


def _read_all(
    f: Fetcher, client: FakeClient, parts: dict[TopicPartition, bytes], max_records: int
) -> tuple[list[tuple[int, int, bytes]], list[int]]:
    """Every row the polls hand out, in order, and the rows of each poll."""
    client.sent[0][2].success(response({tp: (data, 120) for tp, data in parts.items()}))
    rows: list[tuple[int, int, bytes]] = []
    sizes: list[int] = []
    while True:
        fetch = f.collect_fetch(max_records, ArrowDecoder())
        if fetch.is_empty():
            return rows, sizes
        joined = arrow.join_records(list(fetch.records.values()), False)
        sizes.append(joined.num_rows)
        rows.extend(
            zip(
                joined.column("partition").to_pylist(),
                joined.column("offset").to_pylist(),
                joined.column("value").to_pylist(),
                strict=True,
            )
        )


@pytest.mark.parametrize("max_records", [100_000, 150, 37])
def test_pool_hands_out_what_one_thread_does(max_records: int) -> None:
    parts = {tp: _data(tp) for tp in PARTITIONS}
    one, client1, subs1 = _fetcher(arrow_decode_threads=1)
    pooled, client3, subs3 = _fetcher(arrow_decode_threads=3)
    try:
        alone = _read_all(one, client1, parts, max_records)
        together = _read_all(pooled, client3, parts, max_records)
    finally:
        one.close()
        pooled.close()
    assert together == alone
    assert len(alone[0]) == 6 * 120
    assert [p for p, _, _ in alone[0][:120]] == [0] * 120
    for tp in PARTITIONS:
        assert subs1.position(tp) == subs3.position(tp)
        position = subs3.position(tp)
        assert position is not None and position.offset == 120


def _finished_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the pool run each piece of work at once, on a thread of its own, before
    ``submit`` returns: which thread does what no longer depends on scheduling (the polling
    thread does a piece itself when no worker has started it yet)."""
    from concurrent.futures import Future

    def submit(self: DecodePool, fn: Any, *args: Any) -> Future[Any] | None:
        if not self.active:
            return None
        future: Future[Any] = Future()

        def run() -> None:
            try:
                future.set_result(fn(*args))
            except Exception as exc:  # noqa: BLE001 - handed to the future, as an executor does
                future.set_exception(exc)

        worker = threading.Thread(target=run, name="kafkaconsumer-arrow-decode-test")
        worker.start()
        worker.join()
        return future

    monkeypatch.setattr(DecodePool, "submit", submit)


def test_pool_threads_check_and_decompress_the_partitions_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not arrow.builder_available():
        pytest.skip("the pool prepares batches for the Cython decoder")
    from kafkaconsumer.record import _carrow

    where: list[str] = []
    real = _carrow.decompress_payload  # type: ignore[attr-defined]

    def recording(*args: Any) -> bytes:
        where.append(threading.current_thread().name)
        return real(*args)  # type: ignore[no-any-return]

    monkeypatch.setattr(_carrow, "decompress_payload", recording)
    _finished_at_once(monkeypatch)
    parts = {tp: _data(tp) for tp in PARTITIONS}
    f, client, _subs = _fetcher(arrow_decode_threads=2)
    try:
        rows, sizes = _read_all(f, client, parts, 100_000)
    finally:
        f.close()
    assert sizes == [6 * 120]
    # The first partition (lz4) is the polling thread's; the compressed ones after it (zstd,
    # gzip, snappy, lz4: three batches each) are the pool's, and none is decompressed twice.
    pooled = [name for name in where if name.startswith("kafkaconsumer-arrow-decode")]
    assert len(pooled) == 4 * 3
    assert len(where) == 5 * 3


def test_small_uncompressed_partitions_stay_on_the_polling_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Their preparation would be a CRC check of a few KB: less than handing it over costs.
    submitted: list[Any] = []
    real = DecodePool.submit

    def recording(self: DecodePool, fn: Any, *args: Any) -> Any:
        submitted.append(args[0].tp)
        return real(self, fn, *args)

    monkeypatch.setattr(DecodePool, "submit", recording)
    parts = {tp: _data(tp, codec="lz4" if tp.partition == 5 else "none") for tp in PARTITIONS}
    f, client, _subs = _fetcher(arrow_decode_threads=3)
    try:
        rows, _sizes = _read_all(f, client, parts, 100_000)
    finally:
        f.close()
    assert len(rows) == 6 * 120
    assert submitted == [PARTITIONS[5]]


def test_pool_decodes_whole_partitions_without_the_cython_decoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = arrow.decode_fetched_arrow

    def recording(*args: Any, **kw: Any) -> Any:
        calls.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(arrow, "builder_available", lambda: False)
    monkeypatch.setattr(arrow, "decode_fetched_arrow", recording)
    parts = {tp: _data(tp) for tp in PARTITIONS}
    one, client1, _ = _fetcher(arrow_decode_threads=1)
    alone = _read_all(one, client1, parts, 100)
    one.close()
    _finished_at_once(monkeypatch)
    calls.clear()
    pooled, client3, _ = _fetcher(arrow_decode_threads=3)
    try:
        together = _read_all(pooled, client3, parts, 100)
    finally:
        pooled.close()
    assert together == alone
    # Every compressed partition after the first was decoded whole on the pool, once; the
    # first and the small uncompressed one on the polling thread.
    assert sorted(calls) == ["MainThread"] * 2 + ["kafkaconsumer-arrow-decode-test"] * 4


def test_corrupt_partition_raises_with_its_place_when_the_pool_prepared_it() -> None:
    parts = {tp: _data(tp) for tp in PARTITIONS}
    bad = bytearray(parts[PARTITIONS[2]])
    bad[-1] ^= 0xFF  # the last batch's CRC no longer matches
    parts[PARTITIONS[2]] = bytes(bad)
    f, client, subs = _fetcher(arrow_decode_threads=3)
    try:
        client.sent[0][2].success(response({tp: (data, 120) for tp, data in parts.items()}))
        first = f.collect_fetch(100_000, ArrowDecoder())
        # The partitions before the corrupt one are handed out first, as with one thread.
        assert sorted(tp.partition for tp in first.records) == [0, 1]
        with pytest.raises(CorruptRecordError) as info:
            f.collect_fetch(100_000, ArrowDecoder())
    finally:
        f.close()
    assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 2, 80)
    position = subs.position(PARTITIONS[2])
    assert position is not None and position.offset == 0


def test_poll_stops_at_the_byte_bound_and_continues_exactly() -> None:
    parts = {tp: _data(tp) for tp in PARTITIONS}
    f, client, subs = _fetcher(arrow_decode_threads=2, arrow_poll_max_bytes=30_000)
    try:
        rows, sizes = _read_all(f, client, parts, 100_000)
    finally:
        f.close()
    # One partition's keys and values (120 x ~310 bytes) pass the bound: one per poll.
    assert sizes == [120] * 6
    assert [(p, o) for p, o, _ in rows] == [(p, o) for p in range(6) for o in range(120)]
    for tp in PARTITIONS:
        position = subs.position(tp)
        assert position is not None and position.offset == 120


def test_two_buffered_responses_are_handed_out_as_slices_not_concatenations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With two responses of the same partitions buffered, a poll hands out the first one's
    rows (one slice of the columns they were decoded into) and the next poll the second's:
    joining a partition's second piece to the others would copy the whole batch."""
    if not arrow.builder_available():
        pytest.skip("needs the Cython Arrow decoder")

    def no_copy(batches: Any) -> Any:
        raise AssertionError(f"poll_arrow concatenated {len(batches)} batches")

    monkeypatch.setattr(arrow, "concat_batches", no_copy)
    f, client, subs = _fetcher()
    try:
        first = {tp: _data(tp, batches=1, codec="none") for tp in PARTITIONS}
        client.sent[0][2].success(response({tp: (d, 80) for tp, d in first.items()}))
        assert f.send_fetches() == 1  # the prefetch from where the buffered data ends
        second = {
            tp: encode_batch(
                [(None, b"%d-%d" % (tp.partition, 40 + i), [], 2000 + i) for i in range(40)],
                base_offset=40,
            )
            for tp in PARTITIONS
        }
        client.sent[1][2].success(response({tp: (d, 80) for tp, d in second.items()}))
        sizes: list[int] = []
        seen: list[tuple[int, int]] = []
        while True:
            fetch = f.collect_fetch(100_000, ArrowDecoder())
            if fetch.is_empty():
                break
            joined = arrow.join_records(list(fetch.records.values()), False)
            sizes.append(joined.num_rows)
            seen.extend(
                zip(
                    joined.column("partition").to_pylist(),
                    joined.column("offset").to_pylist(),
                    strict=True,
                )
            )
    finally:
        f.close()
    assert sizes == [240, 240]
    assert sorted(seen) == [(tp.partition, o) for tp in PARTITIONS for o in range(80)]
    for tp in PARTITIONS:
        position = subs.position(tp)
        assert position is not None and position.offset == 80


def test_decode_threads_key_is_checked_at_construction() -> None:
    base = {"bootstrap.servers": "localhost:9092"}
    with pytest.raises(ConfigError, match="arrow.decode.threads"):
        ConsumerConfig({**base, "arrow.decode.threads": -1})
    with pytest.raises(ConfigError, match="arrow.poll.max.bytes"):
        ConsumerConfig({**base, "arrow.poll.max.bytes": 0})
    assert ConsumerConfig({**base, "arrow.decode.threads": 3})["arrow.decode.threads"] == 3
    config = FetchConfig.from_config(ConsumerConfig({**base, "arrow.decode.threads": 2}))
    assert config.arrow_decode_threads == 2


def test_pool_size_follows_the_key() -> None:
    assert DecodePool(1).workers == 0 and not DecodePool(1).active
    assert DecodePool(3).workers == 2
    assert 1 <= decode_threads(0) <= AUTO_MAX_THREADS
    pool = DecodePool(2)
    future = pool.submit(sum, [1, 2])
    assert future is not None and future.result(timeout=10) == 3
    pool.close()
    assert pool.submit(sum, [1]) is None


def _peak(decode: str, chunks: list[bytes], max_bytes: int) -> int:
    """The most bytes held at once while every record of ``chunks`` (one partition each) is
    read by ``poll()``'s decoder (``objects``: 500 records a poll, the values kept until the
    next poll) or ``poll_arrow()``'s (100,000 rows a poll, the last batch held while the next
    is built, as a caller does): Python's allocations (tracemalloc) and the Arrow decoder's
    column memory."""
    import gc
    import tracemalloc

    from kafkaconsumer.record import _carrow

    tps = [TopicPartition("t", i) for i in range(len(chunks))]
    subs = SubscriptionState("earliest")
    client = FakeClient()
    config = FetchConfig(arrow_poll_max_bytes=max_bytes, arrow_decode_threads=2)
    f = Fetcher(client, FakeMetadata({tp: 0 for tp in tps}), subs, config, time=MockTime())
    subs.assign_from_user(tps)
    for tp in tps:
        subs.seek(tp, 0)
    f.send_fetches()
    client.sent[0][2].success(response({tp: (c, 10**9) for tp, c in zip(tps, chunks, strict=True)}))
    gc.collect()
    _carrow.release_pooled()  # blocks kept from earlier decodes would serve this one, uncounted
    _carrow.reset_column_peak()
    start = _carrow.column_bytes()[0]
    held: Any = None
    tracemalloc.start()
    try:
        while True:
            if decode == "objects":
                fetch = f.collect_fetch(500)
                held = [r.value for recs in fetch.records.values() for r in recs]
            else:
                fetch = f.collect_fetch(100_000, ArrowDecoder())
                held = arrow.join_records(list(fetch.records.values()), False)
            if fetch.is_empty():
                break
        python = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        f.close()
    del held
    return int(python + _carrow.column_bytes()[1] - start)


def test_arrow_poll_peak_memory_is_bounded_like_the_objects() -> None:
    # 1 KiB values in lz4 batches, 40 MB decoded: unbounded, each poll_arrow() batch would
    # hold all of it (and a caller the one before); bounded by arrow.poll.max.bytes, the
    # Arrow path holds about two batches of that size (each up to one partition past it, its
    # columns counted by capacity) and the payloads the pool decompressed ahead beyond what
    # poll() holds (measured: 18 MB against 4 MB; 60 MB unbounded).
    if not arrow.builder_available():
        pytest.skip("measures the Cython decoder's column memory")
    from benchmarks.decode import build_fetch_data

    chunks = build_fetch_data(40_000, 1024, "lz4")
    bound = 4 * 1024 * 1024
    objects = _peak("objects", chunks, bound)
    bounded = _peak("arrow", chunks, bound)
    unbounded = _peak("arrow", chunks, 1 << 30)
    assert bounded <= objects + 5 * bound, (objects, bounded)
    assert unbounded > 40_000 * 1024, (objects, unbounded)  # what the bound prevents
