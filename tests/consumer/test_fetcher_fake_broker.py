"""Fetcher and offset lookups against the scripted fake broker (tier 2): the error paths a real
broker rarely produces on demand (out of range, leader moves, truncation, dead brokers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import OffsetOutOfRangeError
from kafkaconsumer.internals.fetch.offset_fetcher import LogTruncationError
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.consumer.conftest import poll_until
from tests.support.fake_broker import FakeCluster, Reply, error_body

pytestmark = pytest.mark.timeout(60)

TOPIC = "t"


def leader_epoch_handler(cluster: FakeCluster, end_offset: int | None = None) -> Any:
    """Answer OffsetForLeaderEpoch: each requested epoch ends at the log end (no truncation),
    or at ``end_offset`` when given (a truncated log)."""

    def handle(_node: int, _header: Any, body: dict[str, Any]) -> dict[str, Any]:
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                _start, end = cluster.log_offsets(t["topic"], p["partition"])
                parts.append(
                    {
                        "error_code": 0,
                        "partition": p["partition"],
                        "leader_epoch": p["leader_epoch"],
                        "end_offset": end if end_offset is None else end_offset,
                    }
                )
            topics.append({"topic": t["topic"], "partitions": parts})
        return {"topics": topics}

    return handle


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=2, topics={TOPIC: 4}) as c:
        c.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, leader_epoch_handler(c))
        for p in range(4):
            for i in range(3):  # three batches of five records per partition
                c.append(TOPIC, p, [(b"k", b"p%d-%d-%d" % (p, i, j)) for j in range(5)])
        yield c


@pytest.fixture
def make(cluster: FakeCluster) -> Iterator[Any]:
    made: list[KafkaConsumer] = []

    def factory(**kwargs: Any) -> KafkaConsumer:
        kwargs.setdefault("fetch_max_wait_ms", 100)
        c = KafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers}, **kwargs)
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close(timeout_ms=2000)


def tps(n: int = 4) -> list[TopicPartition]:
    return [TopicPartition(TOPIC, p) for p in range(n)]


def test_one_list_offsets_request_per_leader(cluster: FakeCluster, make: Any) -> None:
    c = make()
    cluster.clear_requests()
    assert c.beginning_offsets(tps()) == {tp: 0 for tp in tps()}
    reqs = cluster.requests(ApiKey.LIST_OFFSETS)
    assert len(reqs) == 2  # four partitions, two leaders
    for node in (0, 1):
        ((_h, body),) = cluster.requests(ApiKey.LIST_OFFSETS, node_id=node)
        asked = {p["partition_index"] for t in body["topics"] for p in t["partitions"]}
        assert asked == {p for p in range(4) if cluster.leader(TOPIC, p)[0] == node}
    assert c.end_offsets(tps()) == {tp: 15 for tp in tps()}


def test_offsets_for_times(cluster: FakeCluster, make: Any) -> None:
    cluster.add_topic("ts", 1)
    for i in range(5):
        cluster.append("ts", 0, [(None, b"x", [], 1_000 + 100 * i)])
    c = make()
    tp = TopicPartition("ts", 0)
    found = c.offsets_for_times({tp: 1_150})
    assert found[tp] is not None and (found[tp].offset, found[tp].timestamp) == (2, 1_200)
    assert c.offsets_for_times({tp: 99_999})[tp] is None


def test_one_fetch_per_leader_and_every_record_once(cluster: FakeCluster, make: Any) -> None:
    c = make(max_poll_records=4, auto_offset_reset="earliest")
    c.assign(tps())
    recs = poll_until(c, lambda acc: len(acc) >= 60)
    assert len(recs) == 60
    for p in range(4):
        mine = [r for r in recs if r.partition == p]
        assert [r.offset for r in mine] == list(range(15))
        assert [r.value for r in mine] == [
            b"p%d-%d-%d" % (p, i, j) for i in range(3) for j in range(5)
        ]
    for _header, body in cluster.requests(ApiKey.FETCH):
        node_parts = {p["partition"] for t in body["topics"] for p in t["partitions"]}
        leaders = {cluster.leader(TOPIC, p)[0] for p in node_parts}
        assert len(leaders) <= 1


def test_leader_move_is_followed_without_loss(cluster: FakeCluster, make: Any) -> None:
    c = make(max_poll_records=5, auto_offset_reset="earliest")
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    first = poll_until(c, lambda acc: len(acc) >= 5)
    old_leader, epoch = cluster.leader(TOPIC, 0)
    cluster.set_leader(TOPIC, 0, 1 - old_leader)
    cluster.append(TOPIC, 0, [(b"k", b"after-move")])
    rest = poll_until(c, lambda acc: c.position(tp) == 16)
    offsets = [r.offset for r in first + rest]
    assert offsets == list(range(16))
    assert (first + rest)[-1].value == b"after-move"
    # The consumer fetched from the new leader after the move.
    new_node_fetches = cluster.requests(ApiKey.FETCH, node_id=1 - old_leader)
    assert any(
        p["partition"] == 0
        for _h, b in new_node_fetches
        for t in b["topics"]
        for p in t["partitions"]
    )
    assert cluster.leader(TOPIC, 0) == (1 - old_leader, epoch + 1)


def stale_metadata(cluster: FakeCluster, leaders: dict[int, tuple[int, int]]) -> Any:
    """Answer Metadata with ``leaders`` (partition -> (leader, epoch)) of TOPIC, whatever the
    partitions' leaders are now: the brokers asked have not learnt a move yet."""

    def handle(_node: int, _header: Any, _body: dict[str, Any]) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": None}
                for b in cluster.brokers
            ],
            "cluster_id": cluster.cluster_id,
            "controller_id": 0,
            "topics": [
                {
                    "error_code": 0,
                    "name": TOPIC,
                    "topic_id": cluster.topic_id(TOPIC),
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": p,
                            "leader_id": leader,
                            "leader_epoch": epoch,
                            "replica_nodes": [leader],
                            "isr_nodes": [leader],
                            "offline_replicas": [],
                        }
                        for p, (leader, epoch) in leaders.items()
                    ],
                }
            ],
        }

    return handle


def test_leader_named_by_the_old_leader_is_followed_before_the_metadata_knows(
    cluster: FakeCluster, make: Any
) -> None:
    """KIP-951: the old leader's NOT_LEADER_OR_FOLLOWER answer names the new leader; the
    consumer fetches from it although every Metadata answer still names the old one."""
    c = make(max_poll_records=5, auto_offset_reset="earliest")
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    first = poll_until(c, lambda acc: len(acc) >= 5)
    before = {p: cluster.leader(TOPIC, p) for p in range(4)}
    cluster.on(ApiKey.METADATA, stale_metadata(cluster, before))
    old_leader = before[0][0]
    cluster.set_leader(TOPIC, 0, 1 - old_leader)
    cluster.append(TOPIC, 0, [(b"k", b"after-move")])
    rest = poll_until(c, lambda acc: c.position(tp) == 16)
    assert [r.offset for r in first + rest] == list(range(16))
    assert (first + rest)[-1].value == b"after-move"
    assert any(
        p["partition"] == 0
        for _h, b in cluster.requests(ApiKey.FETCH, node_id=1 - old_leader)
        for t in b["topics"]
        for p in t["partitions"]
    )


def test_commit_sync_sends_the_fetches_that_are_due_first(cluster: FakeCluster, make: Any) -> None:
    """A fetch due when commit_sync() is called (here: after a seek) goes out before the
    commit waits, so its answer is in when the commit returns, without another poll()."""
    c = make(group_id="g", max_poll_records=5, auto_offset_reset="earliest")
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    poll_until(c, lambda acc: len(acc) >= 15)
    c.seek(tp, 3)
    cluster.clear_requests()
    cluster.script(ApiKey.OFFSET_COMMIT, [Reply(None, delay_s=0.3)])
    c.commit_sync({tp: OffsetAndMetadata(15, "")})
    assert cluster.committed("g")[(TOPIC, 0)][0] == 15
    assert any(
        p["partition"] == 0 and p["fetch_offset"] == 3
        for _h, b in cluster.requests(ApiKey.FETCH)
        for t in b["topics"]
        for p in t["partitions"]
    )


@pytest.mark.parametrize("policy", ["earliest", "latest"])
def test_log_start_past_position_resets(cluster: FakeCluster, make: Any, policy: str) -> None:
    c = make(max_poll_records=5, auto_offset_reset=policy)
    tp = TopicPartition(TOPIC, 1)
    c.assign([tp])
    c.seek(tp, 0)
    poll_until(c, lambda acc: len(acc) > 0)
    cluster.set_log_start_offset(TOPIC, 1, 10)
    c.seek(tp, 2)
    if policy == "earliest":
        recs = poll_until(c, lambda acc: len(acc) > 0)
        assert recs[0].offset == 10
    else:
        poll_until(c, lambda acc: c.position(tp) == 15)


def test_log_start_past_position_raises_under_none(cluster: FakeCluster, make: Any) -> None:
    c = make(auto_offset_reset="none")
    tp = TopicPartition(TOPIC, 1)
    c.assign([tp])
    cluster.set_log_start_offset(TOPIC, 1, 10)
    c.seek(tp, 2)
    with pytest.raises(OffsetOutOfRangeError) as info:
        poll_until(c, lambda acc: False, timeout_s=20)
    assert getattr(info.value, "partitions", None) == {tp: 2}
    c.seek(tp, 10)
    assert poll_until(c, lambda acc: len(acc) > 0)[0].offset == 10


def _truncated(
    cluster: FakeCluster, make: Any, policy: str
) -> tuple[KafkaConsumer, TopicPartition]:
    c = make(max_poll_records=100, auto_offset_reset=policy)
    tp = TopicPartition(TOPIC, 2)
    c.assign([tp])
    c.seek(tp, 0)
    poll_until(c, lambda acc: c.position(tp) == 15)
    # A new leader whose log diverges from offset 7 on (an unclean election).
    cluster.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, leader_epoch_handler(cluster, end_offset=7))
    old_leader, _ = cluster.leader(TOPIC, 2)
    cluster.set_leader(TOPIC, 2, 1 - old_leader)
    return c, tp


def test_truncation_detected_and_reset_to_divergence(cluster: FakeCluster, make: Any) -> None:
    c, tp = _truncated(cluster, make, "earliest")
    recs = poll_until(c, lambda acc: len(acc) > 0)
    assert recs[0].offset == 7
    assert cluster.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH)


def test_truncation_without_policy_raises(cluster: FakeCluster, make: Any) -> None:
    c, tp = _truncated(cluster, make, "none")
    with pytest.raises(LogTruncationError) as info:
        poll_until(c, lambda acc: False, timeout_s=20)
    assert info.value.divergent_offsets[tp].offset == 7


def test_validation_skipped_when_broker_lacks_the_api() -> None:
    from kafkaconsumer.protocol import SUPPORTED_VERSIONS

    versions = {k: v for k, v in SUPPORTED_VERSIONS.items() if k != ApiKey.OFFSET_FOR_LEADER_EPOCH}
    with FakeCluster(n_brokers=2, topics={TOPIC: 1}, api_versions=versions) as cluster:
        cluster.append(TOPIC, 0, [(None, b"a"), (None, b"b")])
        c = KafkaConsumer(
            {"bootstrap.servers": cluster.bootstrap_servers},
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
        )
        try:
            tp = TopicPartition(TOPIC, 0)
            c.assign([tp])
            poll_until(c, lambda acc: len(acc) == 2)
            cluster.set_leader(TOPIC, 0, 1)
            cluster.append(TOPIC, 0, [(None, b"c")])
            recs = poll_until(c, lambda acc: len(acc) == 1)
            assert recs[0].value == b"c"
            assert not cluster.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH)
        finally:
            c.close(timeout_ms=2000)


def test_close_is_bounded_when_the_broker_died(cluster: FakeCluster) -> None:
    c = KafkaConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers},
        auto_offset_reset="earliest",
        request_timeout_ms=60_000,
    )
    c.assign(tps())
    poll_until(c, lambda acc: len(acc) > 0)
    # Every answer from now on is dropped, then the nodes die: nothing will ever answer.
    cluster.on(ApiKey.FETCH, lambda *_: Reply(drop=True))
    c.poll(timeout_ms=100)
    for node in cluster.node_ids:
        cluster.kill(node)
    done = threading.Event()

    def close() -> None:
        c.close(timeout_ms=1000)
        done.set()

    threading.Thread(target=close, daemon=True).start()
    assert done.wait(20), "close(timeout_ms=1000) did not return"


def test_wakeup_interrupts_offset_lookup(cluster: FakeCluster, make: Any) -> None:
    from kafkaconsumer.errors import WakeupError

    cluster.on(ApiKey.LIST_OFFSETS, lambda *_: Reply(drop=True))
    c = make()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            c.beginning_offsets(tps(), timeout_ms=30_000)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while not cluster.requests(ApiKey.LIST_OFFSETS):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    c.wakeup()
    t.join(20)
    assert not t.is_alive() and len(errors) == 1 and isinstance(errors[0], WakeupError)


_COORDINATOR_LOAD_IN_PROGRESS = 14


def _fetched_from(cluster: FakeCluster, node: int, partition: int, offset: int) -> bool:
    return any(
        p["partition"] == partition and p["fetch_offset"] == offset
        for _h, b in cluster.requests(ApiKey.FETCH, node_id=node)
        for t in b["topics"]
        for p in t["partitions"]
    )


def _move_leader_behind_a_held_fetch(cluster: FakeCluster, partition: int, offset: int) -> int:
    """Once the leader holds a caught-up fetch of ``partition`` at ``offset`` (answered empty
    when its wait ends), move the leadership to the other node and append a record there;
    returns the new leader."""
    old_leader = cluster.leader(TOPIC, partition)[0]
    deadline = time.monotonic() + 10
    while not _fetched_from(cluster, old_leader, partition, offset):
        assert time.monotonic() < deadline, "the caught-up fetch was never sent"
        time.sleep(0.01)
    cluster.set_leader(TOPIC, partition, 1 - old_leader)
    cluster.append(TOPIC, partition, [(b"k", b"after-move")])
    return 1 - old_leader


def _loading_until_fetched(
    cluster: FakeCluster, api_key: int, node: int, partition: int, offset: int
) -> Any:
    """A coordinator that answers ``api_key`` COORDINATOR_LOAD_IN_PROGRESS (retried by the
    client) until ``partition`` was fetched from ``offset`` at ``node``: the client's call
    waits on the coordinator for as long as that takes, and no longer."""

    def handle(_node: int, header: Any, body: dict[str, Any]) -> Any:
        if _fetched_from(cluster, node, partition, offset):
            return None  # the default coordinator answers
        return error_body(api_key, header.api_version, _COORDINATOR_LOAD_IN_PROGRESS, body)

    return handle


def _leader_moving_while_waiting(
    cluster: FakeCluster, make: Any, waits_on: ApiKey
) -> tuple[Any, TopicPartition, int]:
    """A group member that has read offsets 0-14 of partition 0, whose coordinator answers
    ``waits_on`` as still loading until the new leader was fetched from at offset 15, and
    whose partition's leader is about to move behind the fetch the old one holds. Returns the
    consumer, the partition and the new leader."""
    c = make(group_id="g", max_poll_records=5, auto_offset_reset="earliest")
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    poll_until(c, lambda acc: len(acc) >= 15)
    new_leader = 1 - cluster.leader(TOPIC, 0)[0]
    cluster.on(waits_on, _loading_until_fetched(cluster, waits_on, new_leader, 0, 15))
    _move_leader_behind_a_held_fetch(cluster, 0, 15)
    return c, tp, new_leader


def test_commit_sync_follows_a_moved_leader_while_it_waits(cluster: FakeCluster, make: Any) -> None:
    """A partition's leader moves while commit_sync() waits for a coordinator that is still
    loading (the old leader answers the fetch it holds empty, the next one NOT_LEADER with the
    new leader): the validation at the new leader (OffsetForLeaderEpoch) and the fetch from it
    go out during that wait (the coordinator only takes the commit once that fetch arrived), so
    the first poll() after the commit hands out the new record at once, without a request of
    its own; nothing is handed out before that poll()."""
    c, tp, new_leader = _leader_moving_while_waiting(cluster, make, ApiKey.OFFSET_COMMIT)
    c.commit_sync({tp: OffsetAndMetadata(15, "")}, timeout_ms=20_000)
    assert cluster.committed("g")[(TOPIC, 0)][0] == 15
    assert cluster.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH, node_id=new_leader)
    cluster.clear_requests()
    records = list(c.poll(timeout_ms=0))
    assert [(r.offset, r.value) for r in records] == [(15, b"after-move")]
    assert not cluster.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH)
    assert c.position(tp) == 16


def test_committed_lookup_follows_a_moved_leader_while_it_waits(
    cluster: FakeCluster, make: Any
) -> None:
    """The same while committed() waits for a loading coordinator's OffsetFetch; the
    position stays where poll() left it until the next poll() hands the record out."""
    c, tp, new_leader = _leader_moving_while_waiting(cluster, make, ApiKey.OFFSET_FETCH)
    assert c.committed([tp], timeout_ms=20_000) == {tp: None}
    assert c.position(tp) == 15
    assert cluster.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH, node_id=new_leader)
    cluster.clear_requests()
    records = list(c.poll(timeout_ms=0))
    assert [(r.offset, r.value) for r in records] == [(15, b"after-move")]
    assert not cluster.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH)
