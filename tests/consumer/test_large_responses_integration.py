"""Responses of several MiB from a real broker, received by the reading threads that take a
large response off the socket without the GIL (Linux, with the extension built): every record
arrives exactly once and in order through ``poll()`` and ``poll_arrow()``, across a seek, and
``close()`` in the middle of a response stops its thread."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import consume_exactly, create_topic, produce, simple_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

if os.environ.get("KAFKACONSUMER_EXPECT_EXTENSIONS") == "1":
    # CI builds the extensions: a missing one fails here instead of skipping.
    from kafkaconsumer.network import _cframe_reader as frame_reader
else:
    frame_reader = pytest.importorskip("kafkaconsumer.network._cframe_reader")
if not frame_reader.AVAILABLE:
    pytest.skip("no reading threads without the extension, or off Linux", allow_module_level=True)

PARTITIONS = 4
PER_PARTITION = 1500
SIZE = 1000


@pytest.fixture(scope="module")
def topic(broker: Any) -> str:
    """About 6 MB over four partitions: each fetch answers with up to 1 MiB of each."""
    name = create_topic(broker.bootstrap_servers, PARTITIONS, prefix="large")
    records = simple_records(PARTITIONS, PER_PARTITION, size=SIZE)
    for i in range(0, len(records), 1000):
        produce(broker.bootstrap_servers, name, records[i : i + 1000])
    return name


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Every reading thread started: True for one armed before its response began."""
    started: list[bool] = []

    class Counted(frame_reader.FrameRead):
        def start(self) -> None:
            started.append(bool(self.whole_response))
            super().start()

    monkeypatch.setattr(frame_reader, "FrameRead", Counted)
    yield started


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _assigned(consumer_factory: Any, topic: str, **extra: Any) -> KafkaConsumer:
    c: KafkaConsumer = consumer_factory(**extra)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    return c


def _check(got: dict[TopicPartition, list[Any]], topic: str) -> None:
    for p in range(PARTITIONS):
        recs = got[TopicPartition(topic, p)]
        assert [r.offset for r in recs] == list(range(PER_PARTITION))
        assert [r.value for r in recs] == [
            (b"v%d-" % (i * PARTITIONS + p)).ljust(SIZE, b"x") for i in range(PER_PARTITION)
        ]


def test_poll_reads_every_record_of_large_responses_once_and_in_order(
    consumer_factory: Any, topic: str, reads: list[bool]
) -> None:
    c = _assigned(consumer_factory, topic)
    _check(consume_exactly(c, PARTITIONS * PER_PARTITION), topic)
    assert reads, "no response was large enough for a reading thread"
    # A seek back reads it all again, through the same connection.
    c.seek_to_beginning([TopicPartition(topic, p) for p in range(PARTITIONS)])
    _check(consume_exactly(c, PARTITIONS * PER_PARTITION), topic)


def test_responses_after_a_large_one_are_read_from_their_first_byte(
    consumer_factory: Any, topic: str, reads: list[bool], broker: Any
) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu answers the first fetch with the whole topic: no second large one")
    # Small fetches, so that the topic takes several large responses.
    c = _assigned(consumer_factory, topic, max_partition_fetch_bytes=300_000)
    _check(consume_exactly(c, PARTITIONS * PER_PARTITION), topic)
    assert True in reads, reads


def test_poll_arrow_reads_every_record_of_large_responses(
    consumer_factory: Any, topic: str, reads: list[bool]
) -> None:
    pytest.importorskip("pyarrow")
    c = _assigned(consumer_factory, topic)
    offsets: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    n = 0
    deadline = time.monotonic() + 60
    in_background: list[bool] = []
    while n < PARTITIONS * PER_PARTITION:
        assert time.monotonic() < deadline, f"only {n} records"
        batch = c.poll_arrow(timeout_ms=500)
        in_background.append(c._client.receives_in_background)
        for p, o in zip(
            batch.column("partition").to_pylist(), batch.column("offset").to_pylist(), strict=True
        ):
            offsets[p].append(o)
        n += batch.num_rows
    assert offsets == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}
    assert reads
    # Once responses are large, reading threads receive them and the network thread rests:
    # the polling thread handles what they bring (small ones: the network thread's tests).
    assert False in in_background, in_background


def test_close_in_the_middle_of_a_response_stops_its_reading_thread(
    consumer_factory: Any, topic: str, reads: list[bool]
) -> None:
    before = _threads()
    c = _assigned(consumer_factory, topic, max_poll_records=10)
    deadline = time.monotonic() + 30
    while not reads:
        assert time.monotonic() < deadline, "no reading thread started"
        c.poll(timeout_ms=100)
    c.close()
    # The consumer's own threads are gone too; a reading thread would outlive them only if
    # close() had not stopped it.
    deadline = time.monotonic() + 10
    while _threads() > before:
        assert time.monotonic() < deadline, f"{_threads() - before} threads left after close()"
        time.sleep(0.01)
