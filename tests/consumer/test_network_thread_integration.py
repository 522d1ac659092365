"""The background receiver: responses are read off the sockets while the user's thread is
outside ``poll_arrow()``, and what it buffered obeys Java's semantics (seeks and pauses,
``wakeup()``, ``close()``); after ``poll()`` the user's thread receives its own responses."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import WakeupError
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
pytest.importorskip("pyarrow")

RECORDS = 300
BATCH = 10


@pytest.fixture
def tp(bootstrap: str) -> TopicPartition:
    topic = create_topic(bootstrap, 1, prefix="nt")
    records = simple_records(1, RECORDS, size=64)
    # Batches of ten records (each produce() call flushes), so that a small fetch size
    # splits the partition into many responses.
    for i in range(0, RECORDS, BATCH):
        produce(bootstrap, topic, records[i : i + BATCH])
    return TopicPartition(topic, 0)


@pytest.fixture(autouse=True)
def _bounded_responses(broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip(
            "Tansu ignores max.partition.fetch.bytes: its first response carries every record, "
            "so no prefetch is left for the network thread to receive"
        )


def _consumer(consumer_factory: Any, tp: TopicPartition, **extra: Any) -> KafkaConsumer:
    # Small responses (a few batches each) and small polls: the first poll leaves most of its
    # response buffered and sends a prefetch of what follows.
    settings: dict[str, Any] = {
        "max_partition_fetch_bytes": 1024,
        "max_poll_records": 5,
        "fetch_max_wait_ms": 100,
    }
    settings.update(extra)
    c: KafkaConsumer = consumer_factory(**settings)
    c.assign([tp])
    c.seek_to_beginning([tp])
    return c


def _network_thread(c: KafkaConsumer) -> threading.Thread:
    thread = c._client._network_thread
    assert thread is not None
    return thread


def _offsets(c: KafkaConsumer, timeout_ms: int = 200) -> list[int]:
    """The offsets of one poll_arrow() (the topic has one partition)."""
    offsets: list[int] = c.poll_arrow(timeout_ms=timeout_ms).column("offset").to_pylist()
    return offsets


def _first_records(c: KafkaConsumer) -> list[int]:
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "no records within 30 s"
        offsets = _offsets(c)
        if offsets:
            return offsets


def _await_background_response(c: KafkaConsumer) -> None:
    """Wait, without calling into the consumer, until a prefetch the last poll sent is answered
    and buffered: only the network thread can have read it."""
    fetcher = c._fetcher
    deadline = time.monotonic() + 30
    while fetcher.has_fetch_in_flight() or len(fetcher._buffer) == 0:
        assert time.monotonic() < deadline, "the network thread buffered nothing within 30 s"
        time.sleep(0.01)
    assert _network_thread(c).is_alive()


def _offsets_until(c: KafkaConsumer, tp: TopicPartition, end: int) -> list[int]:
    assert tp.partition == 0
    offsets: list[int] = []
    deadline = time.monotonic() + 30
    while not offsets or offsets[-1] < end - 1:
        assert time.monotonic() < deadline, f"stopped at {offsets[-1:] or 'nothing'}"
        offsets.extend(_offsets(c))
    return offsets


def test_responses_are_received_while_the_user_is_away(
    consumer_factory: Any, tp: TopicPartition
) -> None:
    """After a poll, the next response lands in the fetch buffer with no further call into the
    consumer, and the records then handed out continue exactly where the poll left off."""
    c = _consumer(consumer_factory, tp)
    first = _first_records(c)
    assert first == list(range(len(first)))
    _await_background_response(c)
    rest = _offsets_until(c, tp, RECORDS)
    assert first + rest == list(range(RECORDS))


@pytest.mark.parametrize("target", [0, 3, 150])
def test_seek_discards_what_the_network_thread_buffered(
    consumer_factory: Any, tp: TopicPartition, target: int
) -> None:
    """A seek (backwards, or past the buffered data) after the network thread buffered a
    response makes that data stale: the next records start exactly at the new position."""
    c = _consumer(consumer_factory, tp)
    _first_records(c)
    _await_background_response(c)
    c.seek(tp, target)
    assert _offsets_until(c, tp, RECORDS) == list(range(target, RECORDS))


def test_pause_keeps_what_the_network_thread_buffered(
    consumer_factory: Any, tp: TopicPartition
) -> None:
    """A partition paused with data buffered by the network thread returns nothing and keeps
    its position; once resumed it continues from that position, nothing lost or repeated."""
    c = _consumer(consumer_factory, tp)
    first = _first_records(c)
    _await_background_response(c)
    c.pause([tp])
    position = c.position(tp)
    assert _offsets(c, 300) == []
    assert c.position(tp) == position
    c.resume([tp])
    rest = _offsets_until(c, tp, RECORDS)
    assert first + rest == list(range(RECORDS))


def test_wakeup_while_the_network_thread_holds_a_response(
    consumer_factory: Any, tp: TopicPartition
) -> None:
    """wakeup() while the network thread has just buffered a response makes the next poll raise
    WakeupError (the thread does not swallow it) and moves nothing; the poll after that
    hands out the buffered records from the same position."""
    c = _consumer(consumer_factory, tp)
    first = _first_records(c)
    _await_background_response(c)
    position = c.position(tp)
    c.wakeup()
    with pytest.raises(WakeupError):
        c.poll_arrow(timeout_ms=5000)
    assert c.position(tp) == position
    rest = _offsets_until(c, tp, RECORDS)
    assert first + rest == list(range(RECORDS))


def test_wakeup_ends_a_wait_while_the_network_thread_polls(
    consumer_factory: Any, tp: TopicPartition
) -> None:
    """With everything read and a long-poll fetch held by the broker, a wakeup() from another
    thread ends a blocked poll() with WakeupError."""
    c = _consumer(consumer_factory, tp, fetch_max_wait_ms=3000)
    _offsets_until(c, tp, RECORDS)
    timer = threading.Timer(0.3, c.wakeup)
    timer.start()
    try:
        with pytest.raises(WakeupError):
            for _ in range(100):
                c.poll_arrow(timeout_ms=1000)
    finally:
        timer.cancel()


def test_close_with_a_fetch_in_flight_stops_the_network_thread(
    consumer_factory: Any, tp: TopicPartition
) -> None:
    """close() while the broker holds a fetch the network thread waits for returns within its
    timeout and leaves no network thread behind."""
    c = _consumer(consumer_factory, tp, fetch_max_wait_ms=5000)
    _offsets_until(c, tp, RECORDS)
    c.poll_arrow(timeout_ms=0)  # the caught-up fetch goes out; the broker holds it
    thread = _network_thread(c)
    deadline = time.monotonic() + 10
    while not c._fetcher.has_fetch_in_flight():
        assert time.monotonic() < deadline, "no fetch went out"
        c.poll_arrow(timeout_ms=50)
    assert thread.is_alive()
    start = time.monotonic()
    c.close(timeout_ms=3000)
    assert time.monotonic() - start < 3 + 5  # its timeout, plus slack for a loaded machine
    thread.join(5)
    assert not thread.is_alive()


def test_after_poll_the_users_thread_receives_its_own_responses(
    consumer_factory: Any, tp: TopicPartition
) -> None:
    """After poll() (record objects, made with the GIL held) the network thread stays asleep:
    the prefetch that poll sent is still unread while the user is away, and the next poll()
    reads it and continues exactly where the last one left off; poll_arrow() wakes it."""
    c = _consumer(consumer_factory, tp)
    deadline = time.monotonic() + 30
    first: list[int] = []
    while not first:
        assert time.monotonic() < deadline, "no records within 30 s"
        first = [r.offset for r in c.poll(timeout_ms=200)]
    assert not c._client.receives_in_background
    if c._fetcher.has_fetch_in_flight():
        buffered = len(c._fetcher._buffer)
        time.sleep(0.5)
        assert c._fetcher.has_fetch_in_flight()
        assert len(c._fetcher._buffer) == buffered
    rest: list[int] = []
    while not rest or rest[-1] < 49:
        assert time.monotonic() < deadline, f"stopped at {rest[-1:] or 'nothing'}"
        rest.extend(r.offset for r in c.poll(timeout_ms=200))
    assert first + rest == list(range(len(first) + len(rest)))
    _offsets(c)
    assert c._client.receives_in_background
