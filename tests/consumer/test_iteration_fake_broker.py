"""``for record in consumer:`` counts only the records it handed out as consumed: leaving the
loop part-way moves positions back to the first record not handed out, and commits made
meanwhile cover exactly what was handed out (scripted fake broker, manual assignment)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.consumer_iterator import IteratedBatch
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.record import ConsumerRecord, _pyrecords
from kafkaconsumer.structs import ConsumerRecords, OffsetAndMetadata, TopicPartition
from tests.consumer.test_fetcher_fake_broker import leader_epoch_handler
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(30)

TOPIC = "t"
GROUP = "g"
PARTITIONS = [TopicPartition(TOPIC, p) for p in range(2)]
PER_PARTITION = 40


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(topics={TOPIC: 2}) as c:
        c.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, leader_epoch_handler(c))
        for p in range(2):
            for i in range(4):  # four batches of ten records per partition
                c.append(TOPIC, p, [(b"k", b"p%d-%d-%d" % (p, i, j)) for j in range(10)])
        yield c


@pytest.fixture
def make(cluster: FakeCluster) -> Iterator[Any]:
    made: list[KafkaConsumer] = []

    def factory(**kwargs: Any) -> KafkaConsumer:
        kwargs.setdefault("fetch_max_wait_ms", 100)
        kwargs.setdefault("group_id", GROUP)
        kwargs.setdefault("auto_offset_reset", "earliest")
        # A long interval: only close() auto-commits within a test.
        kwargs.setdefault("auto_commit_interval_ms", 600_000)
        c = KafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers}, **kwargs)
        c.assign(PARTITIONS)
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close(timeout_ms=2000)


def committed(cluster: FakeCluster) -> dict[int, int]:
    return {p: off for (_t, p), (off, _e, _m) in cluster.committed(GROUP).items()}


def take(consumer: KafkaConsumer, n: int) -> list[ConsumerRecord]:
    """Iterate ``consumer`` and ``break`` after ``n`` records."""
    seen: list[ConsumerRecord] = []
    for record in consumer:
        seen.append(record)
        if len(seen) == n:
            break
    return seen


def next_offsets(seen: list[ConsumerRecord]) -> dict[int, int]:
    """Per partition, the offset after the last record in ``seen`` (0 for none)."""
    out: dict[int, int] = {tp.partition: 0 for tp in PARTITIONS}
    for r in seen:
        out[r.partition] = max(out.get(r.partition, 0), r.offset + 1)
    return out


def test_break_then_close_commits_exactly_what_was_handed_out(
    cluster: FakeCluster, make: Any
) -> None:
    c = make(max_poll_records=25)
    seen = take(c, 33)
    c.close()
    assert committed(cluster) == next_offsets(seen)
    assert sum(committed(cluster).values()) == 33


def test_positions_move_back_when_the_loop_is_left_with_break(make: Any) -> None:
    c = make(max_poll_records=25)
    seen = take(c, 7)
    got = next_offsets(seen)
    for tp in PARTITIONS:
        assert c.position(tp) == got[tp.partition]


def test_iterating_again_resumes_with_the_next_record(make: Any) -> None:
    c = make(max_poll_records=25)
    first = take(c, 13)
    second = take(c, 2 * PER_PARTITION - 13)
    keys = [(r.partition, r.offset) for r in first + second]
    assert len(set(keys)) == 2 * PER_PARTITION
    assert sorted(keys) == sorted((p, o) for p in range(2) for o in range(PER_PARTITION))


def test_an_exception_in_the_loop_body_moves_positions_back(
    cluster: FakeCluster, make: Any
) -> None:
    c = make(max_poll_records=25)
    seen: list[ConsumerRecord] = []
    with pytest.raises(RuntimeError):
        for record in c:
            seen.append(record)
            if len(seen) == 5:
                raise RuntimeError("handler failed")
    c.close()
    assert committed(cluster) == next_offsets(seen)


def test_closing_the_generator_moves_positions_back(make: Any) -> None:
    c = make(max_poll_records=25)
    it = iter(c)
    seen = [next(it) for _ in range(9)]
    it.close()
    got = next_offsets(seen)
    for tp in PARTITIONS:
        assert c.position(tp) == got[tp.partition]


def test_close_during_a_suspended_iteration_commits_what_was_handed_out(
    cluster: FakeCluster, make: Any
) -> None:
    c = make(max_poll_records=25)
    it = iter(c)
    seen = [next(it) for _ in range(11)]
    c.close()
    assert committed(cluster) == next_offsets(seen)
    del it


def test_commit_sync_in_the_loop_body_covers_the_current_record(
    cluster: FakeCluster, make: Any
) -> None:
    c = make(enable_auto_commit=False, max_poll_records=25)
    seen: list[ConsumerRecord] = []
    for record in c:
        seen.append(record)
        if len(seen) == 17:
            c.commit_sync()
            break
    assert committed(cluster) == next_offsets(seen)


def test_a_seek_in_the_loop_body_is_kept_when_the_loop_is_left(make: Any) -> None:
    c = make(max_poll_records=25)
    for record in c:
        c.seek(TopicPartition(record.topic, record.partition), 30)
        break
    assert c.position(TopicPartition(TOPIC, record.partition)) == 30


def test_a_fully_handed_out_poll_keeps_its_positions(make: Any) -> None:
    c = make(max_poll_records=25)
    n = 0
    for _record in c:
        n += 1
        if n == 2 * PER_PARTITION:
            break
    for tp in PARTITIONS:
        assert c.position(tp) == PER_PARTITION


def _record(partition: int, offset: int) -> ConsumerRecord:
    return _pyrecords.ConsumerRecord(TOPIC, partition, offset, 0, 0, None, b"v", None, 3, -1, 1)


def test_not_handed_out_names_the_first_record_of_each_partition_after_the_last() -> None:
    recs = {
        PARTITIONS[0]: [_record(0, o) for o in (4, 6, 7)],
        PARTITIONS[1]: [_record(1, o) for o in (10, 11)],
    }
    batch = IteratedBatch(ConsumerRecords(recs), {})
    assert batch.not_handed_out() == {
        PARTITIONS[0]: OffsetAndMetadata(4, "", 3),
        PARTITIONS[1]: OffsetAndMetadata(10, "", 3),
    }
    batch.last = recs[PARTITIONS[0]][0]
    # Offsets may have gaps (compaction): the next record's own offset, not last + 1.
    assert batch.not_handed_out() == {
        PARTITIONS[0]: OffsetAndMetadata(6, "", 3),
        PARTITIONS[1]: OffsetAndMetadata(10, "", 3),
    }
    batch.last = recs[PARTITIONS[0]][-1]
    assert batch.not_handed_out() == {PARTITIONS[1]: OffsetAndMetadata(10, "", 3)}
    batch.last = recs[PARTITIONS[1]][-1]
    assert batch.not_handed_out() == {}
    batch.done = True
    assert batch.not_handed_out() == {}
