"""Manual assignment against a real broker: exact delivery, seeking, pausing, offsets API."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import (
    ConcurrentModificationError,
    IllegalStateError,
    NoOffsetForPartitionError,
    RecordDeserializationError,
    WakeupError,
)
from kafkaconsumer.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from tests.consumer.conftest import (
    Record,
    consume_exactly,
    create_topic,
    poll_until,
    produce,
    simple_records,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_exact_records_in_order_with_every_codec(
    bootstrap: str, consumer_factory: Any, codec: str
) -> None:
    topic = create_topic(bootstrap, 3)
    records = []
    for i in range(600):
        headers = [("h", b"%d" % i), ("empty", b"")] if i % 7 == 0 else []
        key = None if i % 11 == 0 else b"key-%d" % i
        records.append((i % 3, key, b"value-%d-" % i + b"z" * (i % 50), headers, None))
    produce(bootstrap, topic, records, compression=codec)
    c = consumer_factory(max_poll_records=97)
    tps = [TopicPartition(topic, p) for p in range(3)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    got = consume_exactly(c, len(records))
    for p in range(3):
        expected = [(k, v, h) for (pp, k, v, h, _ts) in records if pp == p]
        recs = got[TopicPartition(topic, p)]
        assert [r.offset for r in recs] == list(range(len(expected)))
        assert [(r.key, r.value, [(hk, hv) for hk, hv in r.headers]) for r in recs] == expected
        assert c.position(TopicPartition(topic, p)) == len(expected)


def test_first_poll_returns_records_without_waiting_out_a_retry_backoff(
    bootstrap: str, consumer_factory: Any
) -> None:
    # The first poll resets the positions (the leaders are not known yet when it starts), then
    # validates them, then fetches. No step waits for retry.backoff.ms: a partition whose leader
    # is unknown waits for the metadata, and each answer lets the next step go out at once. Had
    # any step waited, this poll would end empty (the backoff is longer than its timeout).
    topic = create_topic(bootstrap, 3)
    produce(bootstrap, topic, simple_records(3, 5))
    c = consumer_factory(retry_backoff_ms=60_000, retry_backoff_max_ms=60_000)
    tps = [TopicPartition(topic, p) for p in range(3)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    records = c.poll(timeout_ms=20_000)
    assert len(records) > 0


def test_seek_position_and_lag(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, simple_records(1, 50))
    tp = TopicPartition(topic, 0)
    c = consumer_factory(max_poll_records=10)
    c.assign([tp])
    c.seek(tp, 20)
    assert c.position(tp) == 20
    recs = poll_until(c, lambda acc: len(acc) >= 10)
    assert [r.offset for r in recs[:10]] == list(range(20, 30))
    assert c.position(tp) == 20 + len(recs)
    lag = c.current_lag(tp)
    assert lag == 50 - c.position(tp)
    c.seek(tp, 3)
    recs = poll_until(c, lambda acc: len(acc) > 0)
    assert recs[0].offset == 3
    with pytest.raises(ValueError):
        c.seek(tp, -1)
    with pytest.raises(IllegalStateError):
        c.seek(TopicPartition(topic, 9), 0)
    with pytest.raises(IllegalStateError):
        c.position(TopicPartition("not-assigned", 0))


def test_pause_and_resume(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, simple_records(2, 40))
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c = consumer_factory(max_poll_records=5)
    c.assign([t0, t1])
    c.seek_to_beginning()
    # Get some data buffered for both partitions, then pause one.
    poll_until(c, lambda acc: len(acc) > 0)
    c.pause([t0])
    assert c.paused() == {t0}
    seen = poll_until(c, lambda acc: c.position(t1) == 40)
    assert all(r.partition == 1 for r in seen)
    pos0 = c.position(t0)
    assert len(c.poll(timeout_ms=300)) == 0  # paused partition returns nothing
    c.resume([t0])
    assert c.paused() == set()
    rest = poll_until(c, lambda acc: c.position(t0) == 40)
    # Resumed exactly where it stopped: no record lost or repeated.
    assert [r.offset for r in rest if r.partition == 0] == list(range(pos0, 40))


def test_beginning_end_offsets_and_offsets_for_times(
    broker: Any, bootstrap: str, consumer_factory: Any
) -> None:
    topic = create_topic(bootstrap, 2)
    base = int(time.time() * 1000) - 100_000
    recs: list[Record] = [(p, None, b"x", [], base + i * 1000) for p in (0, 1) for i in range(5)]
    # One batch per record: Tansu 0.6 answers ListOffsets(latest) with the last batch's base
    # offset + 1, which equals the end offset only then.
    produce(bootstrap, topic, recs, one_batch_per_record=True)
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c = consumer_factory()
    assert c.beginning_offsets([t0, t1]) == {t0: 0, t1: 0}
    assert c.end_offsets([t0, t1], timeout_ms=10_000) == {t0: 5, t1: 5}
    if broker.is_tansu:
        pytest.skip("Tansu 0.6 answers every timestamp lookup with offset 0 (all clients see it)")
    found = c.offsets_for_times({t0: base + 2500, t1: base + 99_999_999})
    assert found[t0] is not None
    assert isinstance(found[t0], OffsetAndTimestamp)
    assert (found[t0].offset, found[t0].timestamp) == (3, base + 3000)
    assert found[t1] is None
    with pytest.raises(ValueError):
        c.offsets_for_times({t0: -5})


@pytest.mark.parametrize("policy", ["earliest", "latest"])
def test_auto_offset_reset(bootstrap: str, consumer_factory: Any, policy: str) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, simple_records(1, 10), one_batch_per_record=True)
    tp = TopicPartition(topic, 0)
    c = consumer_factory(auto_offset_reset=policy)
    c.assign([tp])
    assert c.position(tp) == (0 if policy == "earliest" else 10)
    if policy == "latest":
        produce(bootstrap, topic, [(0, None, b"new", [], None)])
        recs = poll_until(c, lambda acc: len(acc) > 0)
        assert [r.value for r in recs] == [b"new"]


def test_auto_offset_reset_none(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    tp = TopicPartition(topic, 0)
    c = consumer_factory(auto_offset_reset="none")
    c.assign([tp])
    with pytest.raises(NoOffsetForPartitionError) as info:
        c.poll(timeout_ms=100)
    assert info.value.partitions == {tp}


def test_deserializer_failure_keeps_position(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    values = [(5).to_bytes(4, "big"), b"bad", (7).to_bytes(4, "big")]
    produce(bootstrap, topic, [(0, None, v, [], None) for v in values])
    tp = TopicPartition(topic, 0)
    c = consumer_factory(value_deserializer="int", max_poll_records=1)
    c.assign([tp])
    c.seek_to_beginning()
    first = poll_until(c, lambda acc: len(acc) > 0)
    assert [r.value for r in first] == [5]
    deadline = time.monotonic() + 20
    while True:
        try:
            c.poll(timeout_ms=200)
        except RecordDeserializationError as exc:
            assert (exc.topic, exc.partition, exc.offset, exc.is_key) == (topic, 0, 1, False)
            break
        assert time.monotonic() < deadline
    assert c.position(tp) == 1
    with pytest.raises(RecordDeserializationError):
        c.poll(timeout_ms=200)
    c.seek(tp, 2)
    rest = poll_until(c, lambda acc: len(acc) > 0)
    assert [r.value for r in rest] == [7]


def test_wakeup_from_another_thread(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    tp = TopicPartition(topic, 0)
    c = consumer_factory()
    c.assign([tp])
    c.seek(tp, 0)
    started = threading.Event()
    outcome: list[Any] = []

    def run() -> None:
        started.set()
        try:
            c.poll(timeout_ms=60_000)
            outcome.append("returned")
        except WakeupError as exc:
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    started.wait(5)
    # Concurrent access from this thread while the other one polls.
    deadline = time.monotonic() + 10
    while True:
        try:
            c.assignment()
        except ConcurrentModificationError:
            break
        assert time.monotonic() < deadline, "the polling thread never held the consumer"
        time.sleep(0.01)
    c.wakeup()
    t.join(30)
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], WakeupError)
    # The wakeup was consumed: the next poll works normally.
    assert len(c.poll(timeout_ms=50)) == 0
    # A wakeup before poll makes the next poll raise, even with nothing to wait for.
    c.wakeup()
    with pytest.raises(WakeupError):
        c.poll(timeout_ms=0)


def test_iteration_and_context_manager(bootstrap: str) -> None:
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, simple_records(2, 10))
    with KafkaConsumer({"bootstrap.servers": bootstrap}, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        seen = []
        for rec in c:
            seen.append((rec.partition, rec.offset))
            if len(seen) == 20:
                break
    assert sorted(seen) == sorted((p, o) for p in (0, 1) for o in range(10))
    with pytest.raises(IllegalStateError):
        c.poll(timeout_ms=0)


def test_interceptor_sees_records(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, simple_records(1, 5))
    seen: list[int] = []

    class Counter:
        def on_consume(self, records: Any) -> Any:
            seen.append(len(records))
            return records

        def on_commit(self, offsets: Any) -> None:
            pass

        def close(self) -> None:
            pass

    c = consumer_factory(interceptor_classes=[Counter()], auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, 0)])
    poll_until(c, lambda acc: len(acc) == 5)
    assert sum(seen) == 5


def test_list_topics_and_partitions_for(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 3)
    c = consumer_factory()
    parts = c.partitions_for(topic)
    assert sorted(p.partition for p in parts) == [0, 1, 2]
    assert all(p.leader >= 0 for p in parts)
    topics = c.list_topics()
    assert topic in topics and len(topics[topic]) == 3
    assert c.partitions_for("c2-does-not-exist-" + topic) == []


def test_bad_arguments(consumer_factory: Any) -> None:
    c = consumer_factory()
    with pytest.raises(IllegalStateError):
        c.poll(timeout_ms=0)
    with pytest.raises(ValueError):
        c.poll(timeout_ms=-1)
    with pytest.raises(TypeError):
        c.assign("topic")
    with pytest.raises(ValueError):
        c.assign([TopicPartition("", 0)])
    with pytest.raises(Exception) as info:
        c.subscribe(["t"])
    assert "group.id" in str(info.value)


def test_metrics_follow_consumption(bootstrap: str, consumer_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, simple_records(1, 30))
    c = consumer_factory(auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, 0)])
    poll_until(c, lambda acc: len(acc) == 30)
    values = {(m.group, m.name, tuple(sorted(m.tags.items()))): v for m, v in c.metrics().items()}
    fetch_group = "consumer-fetch-manager-metrics"
    totals = {
        name: v
        for (g, name, tags), v in values.items()
        if g == fetch_group and dict(tags).keys() == {"client-id"}
    }
    assert totals["records-consumed-total"] == 30
    assert totals["fetch-total"] >= 1
    lag = [
        v
        for (g, name, tags), v in values.items()
        if g == fetch_group and name == "records-lag" and dict(tags).get("partition") == "0"
    ]
    assert lag == [0]


def test_coordinator_metrics_move_through_a_join_heartbeats_and_commits(
    bootstrap: str, consumer_factory: Any
) -> None:
    from tests.helpers import unique_name, wait_for

    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, simple_records(2, 5))
    # A short session: Tansu holds a new group's first join for about half of it.
    c = consumer_factory(
        group_id=unique_name("c2-metrics"),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
    )

    def coordinator() -> dict[str, float]:
        return {
            m.name: v for m, v in c.metrics().items() if m.group == "consumer-coordinator-metrics"
        }

    before = coordinator()
    assert before["assigned-partitions"] == 0
    assert before["last-heartbeat-seconds-ago"] == -1
    assert before["last-rebalance-seconds-ago"] == -1
    c.subscribe([topic])
    poll_until(c, lambda acc: len(acc) == 10, timeout_s=60)
    c.commit_sync()
    c.commit_sync()
    wait_for(lambda: coordinator()["heartbeat-total"] >= 1, timeout=30)
    after = coordinator()
    assert after["assigned-partitions"] == 2
    assert after["join-total"] >= 1 and after["sync-total"] >= 1
    assert after["rebalance-total"] == 1
    assert after["rebalance-latency-max"] >= after["join-time-max"] >= 0
    assert after["last-rebalance-seconds-ago"] >= 0
    assert after["commit-total"] == 2
    assert after["commit-latency-max"] >= after["commit-latency-avg"] >= 0
    assert after["commit-rate"] > 0
    assert after["last-heartbeat-seconds-ago"] >= 0


def test_group_subscribe_commit_and_committed(bootstrap: str, consumer_factory: Any) -> None:
    from tests.helpers import unique_name

    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, simple_records(2, 10))
    group = unique_name("c2-group")
    # A short session: Tansu holds a new group's first join for about half of it.
    c = consumer_factory(
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    c.subscribe([topic])
    assert c.subscription() == {topic}
    recs = poll_until(c, lambda acc: len(acc) == 20, timeout_s=60)
    assert sorted((r.partition, r.offset) for r in recs) == sorted(
        (p, o) for p in (0, 1) for o in range(10)
    )
    assert c.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    c.commit_sync()
    committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    assert {tp: om.offset for tp, om in committed.items() if om is not None} == {
        TopicPartition(topic, 0): 10,
        TopicPartition(topic, 1): 10,
    }
    assert c.group_metadata().group_id == group
    # Java's consumer-metrics group counts the time spent in both blocking calls.
    spent = {
        m.name: v
        for m, v in c.metrics().items()
        if m.group == "consumer-metrics" and m.name.endswith("-time-ns-total")
    }
    assert spent["commit-sync-time-ns-total"] > 0
    assert spent["committed-time-ns-total"] > 0
    c.unsubscribe()
    assert c.assignment() == set()


def test_seek_while_a_long_poll_fetch_is_in_flight(bootstrap: str, consumer_factory: Any) -> None:
    """A partition seeked while the broker holds a fetch (everything caught up) is read at once
    over a second connection, not after fetch.max.wait.ms; records from before the seek never
    show up, and the held fetch is answered as usual."""
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, simple_records(2, 50))
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    # The broker holds a caught-up fetch this long: records arriving before the poll deadline
    # below can only come from a fetch sent while it is held.
    c = consumer_factory(fetch_max_wait_ms=60_000, request_timeout_ms=90_000)
    c.assign([t0, t1])
    # Plain seeks: positions without an epoch need no OffsetForLeaderEpoch validation, which
    # would queue behind the held fetch on the broker's connection.
    c.seek(t0, 0)
    c.seek(t1, 0)
    consume_exactly(c, 100)
    fetcher = c._fetcher
    c.poll(timeout_ms=0)
    held = fetcher.in_flight_fetches()
    if held == 0:
        pytest.skip("the broker answered the caught-up fetch at once (it holds no long poll)")
    assert held == 1
    c.seek(t0, 10)
    got = poll_until(c, lambda acc: len(acc) >= 40, timeout_s=30)
    assert [(r.partition, r.offset) for r in got] == [(0, off) for off in range(10, 50)]
    assert fetcher.in_flight_fetches() == 1  # the held fetch is still out
    assert c.position(t0) == 50 and c.position(t1) == 50
    # The held fetch still serves both partitions from their positions afterwards.
    produce(bootstrap, topic, [(0, None, b"late-0", [], None), (1, None, b"late-1", [], None)])
    late = poll_until(c, lambda acc: len(acc) >= 2, timeout_s=30)
    assert sorted((r.partition, r.offset, r.value) for r in late) == [
        (0, 50, b"late-0"),
        (1, 50, b"late-1"),
    ]


@pytest.mark.parametrize("how", ["seek_to_beginning", "seek_with_epoch"])
def test_reread_after_a_seek_does_not_wait_behind_a_held_fetch(
    bootstrap: str, consumer_factory: Any, how: str
) -> None:
    """The ListOffsets of ``seek_to_beginning()`` and the OffsetForLeaderEpoch validating a
    seek with a leader epoch go over the second connection while the broker holds a
    caught-up fetch on the first (it answers a connection's requests in order), and so do
    the fetches that follow the first one: the re-read starts at once and runs through, not
    a fetch.max.wait.ms at a time."""
    topic = create_topic(bootstrap, 2)
    produce(
        bootstrap,
        topic,
        [(p, None, b"v%03d" % i + b"x" * 300, [], None) for p in (0, 1) for i in range(50)],
        one_batch_per_record=True,
    )
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    # Small responses: the re-read takes several fetches, each of which must go around the
    # held fetch too (the first one's data is prefetched from over the same connection).
    c = consumer_factory(
        fetch_max_wait_ms=60_000, request_timeout_ms=90_000, max_partition_fetch_bytes=2048
    )
    c.assign([t0, t1])
    c.seek(t0, 0)
    c.seek(t1, 0)
    first = consume_exactly(c, 100)
    epoch = first[t0][-1].leader_epoch
    fetcher = c._fetcher
    c.poll(timeout_ms=0)
    if fetcher.in_flight_fetches() == 0:
        pytest.skip("the broker answered the caught-up fetch at once (it holds no long poll)")
    if how == "seek_to_beginning":
        c.seek_to_beginning([t0])
        expected = [(0, off) for off in range(50)]
    else:
        if epoch is None:
            pytest.skip("the broker sends no leader epochs")
        c.seek(t0, OffsetAndMetadata(10, "", epoch))
        expected = [(0, off) for off in range(10, 50)]
    # Within the poll's 30 s, well inside the held fetch's 60 s.
    got = poll_until(c, lambda acc: len(acc) >= len(expected), timeout_s=30)
    assert [(r.partition, r.offset) for r in got] == expected
    assert fetcher.in_flight_fetches() == 1  # the held fetch is still out
    assert c.position(t0) == 50 and c.position(t1) == 50


@pytest.mark.parametrize("path", ["poll", "poll_arrow"])
def test_next_fetch_goes_out_before_a_response_is_decoded(
    broker: Any,
    bootstrap: str,
    consumer_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    """When a response arrives and the log holds more, the next fetch (a prefetch from where
    the response ends) is sent before the response's records are decoded, so the broker
    serves it while this poll decodes."""
    if broker.is_tansu:
        pytest.skip("Tansu ignores max.partition.fetch.bytes: one response brings every record")
    if path == "poll_arrow":
        pytest.importorskip("pyarrow")
    from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch

    topic = create_topic(bootstrap, 1)
    tp = TopicPartition(topic, 0)
    produce(
        bootstrap,
        topic,
        [(0, None, b"v%05d" % i + b"x" * 500, [], None) for i in range(200)],
        one_batch_per_record=True,
    )
    # Small responses (a few batches each), so the 200 records take several fetches.
    c = consumer_factory(max_partition_fetch_bytes=4096, max_poll_records=100_000)
    c.assign([tp])
    c.seek(tp, 0)
    fetcher = c._fetcher
    sent = 0
    at_decode: list[int] = []
    send_fetches = fetcher.send_fetches

    def counting_send() -> int:
        nonlocal sent
        n: int = send_fetches()
        sent += n
        return n

    set_decoded = CompletedFetch.set_decoded

    polls = 0
    # (fetches sent, poll number) when each response's records were decoded
    at_decode_poll: list[tuple[int, int]] = []

    def recording_set_decoded(self: CompletedFetch, records: Any, next_offset: int) -> None:
        at_decode.append(sent)
        at_decode_poll.append((sent, polls))
        set_decoded(self, records, next_offset)

    monkeypatch.setattr(fetcher, "send_fetches", counting_send)
    monkeypatch.setattr(CompletedFetch, "set_decoded", recording_set_decoded)
    got = 0
    deadline = time.monotonic() + 30
    while got < 200 and time.monotonic() < deadline:
        polls += 1
        if path == "poll":
            got += len(c.poll(timeout_ms=1000))
        else:
            got += c.poll_arrow(timeout_ms=1000).num_rows
    assert got == 200
    assert len(at_decode) >= 3
    # The k-th response (from 1) was decoded after fetch k+1 had gone out: every response
    # but the last one said more records follow. One exception is by design: a response that
    # arrived while the one before it was still being handed out waits, with no prefetch of
    # its own (the prefetch bound: one response handed out, one buffered, one in flight),
    # and may be decoded in that same poll; its prefetch goes out when the poll ends.
    checked = 0
    for k, (sent_then, poll_no) in enumerate(at_decode_poll[:-1], start=1):
        stacked = k > 1 and at_decode_poll[k - 2][1] == poll_no
        if stacked:
            assert sent_then >= k, at_decode
        else:
            assert sent_then >= k + 1, at_decode
            checked += 1
    assert checked >= 2, at_decode_poll
