"""Unit tests of the Fetcher with an in-process fake network client (no sockets)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import KafkaError, RecordDeserializationError
from kafkaconsumer.internals.fetch.fetcher import FetchConfig, Fetcher
from kafkaconsumer.internals.interfaces import ClusterView
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.network.client import seek_fetch_node_id
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.record import encode_batch
from kafkaconsumer.record.encoder import RecordInput
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.timer import Timer
from tests.support.mock_time import MockTime
from tests.support.record_encoder import encode_control_batch

pytestmark = pytest.mark.timeout(30)

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
ZERO = uuid.UUID(int=0)


class FakeCluster:
    """A metadata snapshot (implements ``ClusterView``): leaders, no topic ids."""

    def __init__(self, leaders: dict[TopicPartition, int]) -> None:
        self.leaders = leaders

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self.leaders.get(tp)

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        return 0

    def topic_id(self, topic: str) -> uuid.UUID:
        return ZERO

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return None

    def brokers(self) -> list[int]:
        return sorted(set(self.leaders.values()))


class FakeMetadata:
    """The metadata (implements ``OffsetMetadata``, which extends ``FetchMetadata``)."""

    def __init__(self, leaders: dict[TopicPartition, int]) -> None:
        self.cluster: ClusterView = FakeCluster(leaders)
        self.updates = 0
        self.requested = False
        self.transient: set[str] = set()
        self.leadership_updates: list[tuple[dict[TopicPartition, tuple[int, int]], list[Any]]] = []

    @property
    def update_version(self) -> int:
        return self.updates

    def request_update(self) -> int:
        self.updates += 1
        self.requested = True
        return 0

    def update_requested(self) -> bool:
        return self.requested

    def add_transient_topics(self, topics: Iterable[str]) -> None:
        self.transient.update(topics)

    def update_partition_leadership(
        self, leaders: Mapping[TopicPartition, tuple[int, int]], nodes: Iterable[Any] = ()
    ) -> set[TopicPartition]:
        self.leadership_updates.append((dict(leaders), list(nodes)))
        assert isinstance(self.cluster, FakeCluster)
        for tp, (leader, _epoch) in leaders.items():
            self.cluster.leaders[tp] = leader
        return set(leaders)


class FakeClient:
    """Records every request; the test answers them by index (implements ``FetchClient``)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, dict[str, Any], Future[Any]]] = []
        self.connecting: list[int] = []

    def api_version(self, node: int, api_key: int) -> int:
        return 12

    def is_unavailable(self, node: int) -> bool:
        return False

    def try_connect(self, node: int) -> None:
        self.connecting.append(node)

    def send(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> Future[Any]:
        assert api_key == ApiKey.FETCH
        fut: Future[Any] = Future()
        self.sent.append((node_id, dict(body), fut))
        return fut

    def poll(self, timeout_ms: float | None = None, future: Future[Any] | None = None) -> bool:
        # The test completes the futures itself; nothing happens on a poll.
        return future is None or future.is_done

    def fetched(self, i: int) -> dict[TopicPartition, int]:
        body = self.sent[i][1]
        return {
            TopicPartition(t["topic"], p["partition"]): p["fetch_offset"]
            for t in body["topics"]
            for p in t["partitions"]
        }


def batch(start_value: int, n: int, base_offset: int) -> bytes:
    return encode_batch(
        [(None, b"%d" % (start_value + i), [], 1000) for i in range(n)], base_offset=base_offset
    )


def response(
    parts: dict[TopicPartition, tuple[bytes | None, int]], session_id: int = 0, error: int = 0
) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, (records, hw) in parts.items():
        topics.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "error_code": error,
                "high_watermark": hw,
                "last_stable_offset": hw,
                "log_start_offset": 0,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": records,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": session_id,
        "responses": [{"topic": t, "topic_id": ZERO, "partitions": ps} for t, ps in topics.items()],
    }


def make(
    max_poll_records: int = 500, leaders: dict[TopicPartition, int] | None = None, **kw: Any
) -> tuple[Fetcher, FakeClient, SubscriptionState]:
    subs = SubscriptionState("earliest")
    client = FakeClient()
    md = FakeMetadata(leaders or {T0: 0, T1: 0})
    cfg = FetchConfig(max_poll_records=max_poll_records, **kw)
    return Fetcher(client, md, subs, cfg, time=MockTime()), client, subs


def _offset(subs: SubscriptionState, tp: TopicPartition) -> int:
    pos = subs.position(tp)
    assert pos is not None
    return pos.offset


def values(records: list[Any]) -> list[int]:
    return [int(r.value) for r in records]


def test_max_poll_records_hands_out_everything_once() -> None:
    f, client, subs = make(max_poll_records=7)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    assert f.send_fetches() == 1
    client.sent[0][2].success(
        response({T0: (batch(0, 20, 0) + batch(20, 5, 20), 25), T1: (batch(100, 9, 0), 9)})
    )
    got: dict[TopicPartition, list[int]] = {T0: [], T1: []}
    sizes = []
    while True:
        fetch = f.collect_fetch()
        if fetch.is_empty():
            break
        sizes.append(fetch.num_records)
        for tp, recs in fetch.records.items():
            got[tp].extend(values(recs))
    assert got[T0] == list(range(25)) and got[T1] == list(range(100, 109))
    assert max(sizes) == 7
    assert _offset(subs, T0) == 25 and _offset(subs, T1) == 9


def _both_answered_from_zero(
    high_watermark: int,
) -> tuple[Fetcher, FakeClient, SubscriptionState]:
    """T0 and T1 assigned from offset 0 (5 records a poll), their first fetch answered with
    10 records each out of ``high_watermark``."""
    f, client, subs = make(max_poll_records=5)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(
        response({T0: (batch(0, 10, 0), high_watermark), T1: (batch(0, 10, 0), high_watermark)})
    )
    return f, client, subs


def test_partitions_with_buffered_data_are_prefetched_from_where_it_ends() -> None:
    f, client, subs = _both_answered_from_zero(high_watermark=30)
    first = f.collect_fetch()  # 5 of T0's 10
    assert values(first.records[T0]) == [0, 1, 2, 3, 4]
    # The next fetch goes out while the buffered records are handed out: from their end.
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 10, T1: 10}
    assert f.send_fetches() == 0  # one fetch in flight per node
    client.sent[1][2].success(response({T0: (batch(10, 10, 10), 30), T1: (batch(10, 10, 10), 30)}))
    # Two pieces of data per partition at most: nothing more to fetch now.
    assert f.send_fetches() == 0
    got: dict[TopicPartition, list[int]] = {T0: [0, 1, 2, 3, 4], T1: []}
    while True:
        fetch = f.collect_fetch()
        if fetch.is_empty():
            break
        assert fetch.num_records <= 5
        for tp, recs in fetch.records.items():
            got[tp].extend(values(recs))
    assert got == {T0: list(range(20)), T1: list(range(20))}
    assert _offset(subs, T0) == 20 and _offset(subs, T1) == 20
    assert f.send_fetches() == 1
    assert client.fetched(2) == {T0: 20, T1: 20}


def test_prefetch_waits_for_partitions_of_its_node_still_being_handed_out() -> None:
    # One fetch per connection at a time: a prefetch of T0 alone, sent while T1's older piece
    # is handed out, would make T1 wait for its answer. It goes out for both once T1's older
    # piece is gone.
    f, client, subs = _both_answered_from_zero(high_watermark=40)
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 10, T1: 10}
    client.sent[1][2].success(response({T0: (batch(10, 10, 10), 40), T1: (batch(10, 10, 10), 40)}))
    assert values(f.collect_fetch().records[T0]) == [5, 6, 7, 8, 9]
    # T0's first piece is gone (its second is a prefetch point); T1 still has two pieces.
    assert f.send_fetches() == 0
    assert f.send_fetches() == 0
    assert values(f.collect_fetch().records[T1]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 0
    assert values(f.collect_fetch().records[T1]) == [5, 6, 7, 8, 9]
    assert f.send_fetches() == 1
    assert client.fetched(2) == {T0: 20, T1: 20}


def test_a_paused_partition_does_not_hold_back_the_prefetch_of_its_node() -> None:
    f, client, subs = _both_answered_from_zero(high_watermark=40)
    f.collect_fetch()
    f.send_fetches()
    client.sent[1][2].success(response({T0: (batch(10, 10, 10), 40), T1: (batch(10, 10, 10), 40)}))
    subs.pause(T1)
    assert values(f.collect_fetch().records[T0]) == [5, 6, 7, 8, 9]
    # T1 keeps its two pieces while paused: T0 is prefetched without it.
    assert f.send_fetches() == 1
    assert client.fetched(2) == {T0: 20}


def test_no_prefetch_past_the_high_watermark() -> None:
    # Buffered data up to the high watermark: a fetch from its end would be a long poll
    # holding the node for fetch.max.wait.ms, so the partition waits until it is handed out.
    f, client, subs = make(max_poll_records=5)
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 10)}))
    f.collect_fetch()
    assert f.send_fetches() == 0
    f.collect_fetch()
    assert f.send_fetches() == 1 and client.fetched(1) == {T0: 10}


def _drain(f: Fetcher) -> dict[TopicPartition, list[int]]:
    got: dict[TopicPartition, list[int]] = {}
    while True:
        fetch = f.collect_fetch()
        if fetch.is_empty():
            return got
        for tp, recs in fetch.records.items():
            got.setdefault(tp, []).extend(values(recs))


def _t1_answered_empty(
    t1_high_watermark: int,
) -> tuple[Fetcher, FakeClient, SubscriptionState]:
    """T0 and T1 assigned from offset 0 (5 records a poll), their first fetch answered with
    all 10 records of T0 and no data for T1, whose high watermark is ``t1_high_watermark``."""
    f, client, subs = make(max_poll_records=5)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 10), T1: (b"", t1_high_watermark)}))
    return f, client, subs


def test_a_partition_left_out_of_a_full_response_is_fetched_again_at_once() -> None:
    # The broker filled its response with T0 (fetch.max.bytes) and answered T1 empty although
    # T1 has 30 records: T1 is fetched again while T0's records are handed out, not after
    # them, and its records come after the empty piece as if it had not been there.
    f, client, subs = _t1_answered_empty(t1_high_watermark=30)
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T1: 0}
    assert f.send_fetches() == 0  # one fetch in flight per node
    client.sent[1][2].success(response({T1: (batch(100, 10, 0), 30)}))
    assert _drain(f) == {T0: [5, 6, 7, 8, 9], T1: list(range(100, 110))}
    assert _offset(subs, T0) == 10 and _offset(subs, T1) == 10


def test_a_caught_up_partition_answered_empty_waits_for_its_turn() -> None:
    # T1 has nothing past its position: a fetch now would be a long poll holding the node, so
    # it goes out only once T0's records were handed out (as before).
    f, client, subs = _t1_answered_empty(t1_high_watermark=0)
    f.collect_fetch()
    assert f.send_fetches() == 0
    assert _drain(f) == {T0: [5, 6, 7, 8, 9]}
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 10, T1: 0}


def test_a_left_out_partition_is_fetched_again_while_the_buffer_is_full() -> None:
    # Undecoded data at fetch.max.bytes stops every prefetch of buffered data, but not the
    # refetch of a partition left out of a full response: its empty piece holds nothing, so
    # it is fetched as a partition with nothing buffered would be (and stays in the fetch
    # session instead of leaving it and being answered again as new).
    f, client, subs = make(max_poll_records=5, max_bytes=1)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 40), T1: (b"", 30)}))
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T1: 0}
    client.sent[1][2].success(response({T1: (batch(100, 10, 0), 30)}))
    assert _drain(f) == {T0: list(range(10)), T1: list(range(100, 110))}


def test_an_answer_without_records_gives_its_watermarks_and_keeps_the_fetch_order() -> None:
    # A piece without records is done with at the head of the queue: its watermarks are
    # taken, nothing is handed out, and its partition keeps its place in the fetch order
    # (only a partition that gave records goes to the back, as in Java).
    f, client, subs = _t1_answered_empty(t1_high_watermark=30)
    assert subs.fetchable_partitions() == [T0, T1]
    assert _drain(f) == {T0: list(range(10))}
    assert subs.partition_lag(T1) == 30
    assert _offset(subs, T1) == 0
    assert subs.fetchable_partitions() == [T1, T0]


def test_no_fetch_or_prefetch_reaches_past_a_partitions_fetch_end() -> None:
    # A read of offsets [0, 15) of T0 and all of T1: T0's prefetch goes out from where its
    # buffered data ends (10, below the end); once what is buffered reaches the end, T0 is
    # left out of every fetch, even after its records were handed out, while T1 goes on.
    f, client, subs = _both_answered_from_zero(high_watermark=40)
    subs.set_fetch_end(T0, 15)
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 10, T1: 10}
    client.sent[1][2].success(response({T0: (batch(10, 10, 10), 40), T1: (batch(10, 10, 10), 40)}))
    got: dict[TopicPartition, list[int]] = {T0: [0, 1, 2, 3, 4], T1: []}
    while True:
        fetch = f.collect_fetch()
        if fetch.is_empty():
            break
        for tp, recs in fetch.records.items():
            got[tp].extend(values(recs))
    # Records fetched past the end are still handed out; nothing more is fetched for T0.
    assert got == {T0: list(range(20)), T1: list(range(20))}
    assert f.send_fetches() == 1
    assert client.fetched(2) == {T1: 20}
    client.sent[2][2].success(response({T1: (batch(20, 5, 20), 40)}))
    f.collect_fetch()
    f.send_fetches()
    assert T0 not in client.fetched(3)
    subs.set_fetch_end(T0, None)  # no end: fetched again from its position
    client.sent[3][2].success(response({T1: (batch(25, 5, 25), 40)}))
    f.collect_fetch()
    f.send_fetches()
    assert client.fetched(4).get(T0) == 20


def _both_read_to_the_end() -> tuple[Fetcher, FakeClient, SubscriptionState]:
    """T0 and T1 on node 0, each read to its high watermark of 10 (nothing in flight)."""
    f, client, subs = make()
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 10), T1: (batch(0, 10, 0), 10)}))
    while not f.collect_fetch().is_empty():
        pass
    return f, client, subs


def test_no_caught_up_fetch_while_the_second_connection_reads() -> None:
    # A partition seeked while its broker held a caught-up fetch is read over the second
    # connection. If the held fetch returns meanwhile, a fetch of the other, caught-up
    # partitions alone would be held again for fetch.max.wait.ms, and the seeked partition's
    # next fetch would wait behind it: the broker counts as busy until the second connection's
    # data is in, and its next fetch then carries both.
    f, client, subs = _both_read_to_the_end()
    assert f.send_fetches() == 1  # caught up: the broker holds this one
    assert client.sent[1][0] == 0
    subs.seek(T0, 0)
    assert f.send_fetches() == 1
    assert client.sent[2][0] == seek_fetch_node_id(0)
    assert client.fetched(2) == {T0: 0}
    client.sent[1][2].success(response({T0: (b"", 10), T1: (b"", 10)}))  # the held fetch ends
    assert f.collect_fetch().is_empty()  # nothing new (T0's answer is stale)
    assert f.send_fetches() == 0  # not T1 alone
    client.sent[2][2].success(response({T0: (batch(0, 5, 0), 10)}))
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 1
    assert client.sent[3][0] == 0
    assert client.fetched(3) == {T0: 5, T1: 10}


def test_a_caught_up_second_connection_fetch_does_not_hold_back_the_others() -> None:
    # A partition re-positioned where it already was (caught up) is fetched over the second
    # connection, where the broker may hold the fetch; the other partitions' new data must not
    # wait for that one to return.
    f, client, subs = _both_read_to_the_end()
    subs.pause(T0)
    assert f.send_fetches() == 1  # T1 alone, caught up: held by the broker
    assert client.fetched(1) == {T1: 10}
    subs.resume(T0)
    subs.seek(T0, 10)  # where it was: caught up still
    assert f.send_fetches() == 1 and client.sent[2][0] == seek_fetch_node_id(0)
    assert client.fetched(2) == {T0: 10}
    client.sent[1][2].success(response({T1: (batch(10, 5, 10), 15)}))
    assert values(f.collect_fetch().records[T1]) == [10, 11, 12, 13, 14]
    assert f.send_fetches() == 1  # T1 goes on at once on the first connection
    assert client.sent[3][0] == 0 and client.fetched(3) == {T1: 15}


def test_no_walk_while_both_connections_of_every_broker_are_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # poll() asks for fetches on every network wakeup: with a fetch held on a broker's first
    # connection and a re-read running over its second, nothing can go out, and walking the
    # partitions to find that out cost a pass over them per poll.
    f, client, subs = _both_read_to_the_end()
    assert f.send_fetches() == 1  # held by the broker
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    assert f.send_fetches() == 1 and client.sent[2][0] == seek_fetch_node_id(0)
    walks = 0
    fetchable_states = subs.fetchable_states

    def counting(*args: Any) -> Any:
        nonlocal walks
        walks += 1
        return fetchable_states(*args)

    monkeypatch.setattr(subs, "fetchable_states", counting)
    for _ in range(10):
        assert f.send_fetches() == 0
    assert walks == 0


def test_prefetched_data_is_dropped_after_a_seek() -> None:
    f, client, subs = make(max_poll_records=5)
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 30)}))
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 1 and client.fetched(1) == {T0: 10}
    subs.seek(T0, 3)
    client.sent[1][2].success(response({T0: (batch(10, 10, 10), 30)}))
    # Both the rest of the first piece and the prefetched piece are stale now.
    assert f.collect_fetch().num_records == 0
    assert f.send_fetches() == 1 and client.fetched(2) == {T0: 3}
    client.sent[2][2].success(response({T0: (batch(0, 10, 0), 30)}))
    assert values(f.collect_fetch().records[T0]) == [3, 4, 5, 6, 7]


def test_an_older_piece_is_prefetched_from_again_once_the_newer_empty_one_is_retired() -> None:
    # Only a partition's newest queued piece can be a prefetch point. When the newer piece is
    # an empty answer retired before the older one is handed out, the older piece is the
    # newest again, and the partition is prefetched from where its data ends.
    f, client, subs = _both_answered_from_zero(high_watermark=40)
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3, 4]
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 10, T1: 10}
    client.sent[1][2].success(response({T0: (batch(10, 10, 10), 40), T1: (b"", 40)}))
    assert f.retire_answers_without_records() == 1
    assert values(f.collect_fetch().records[T0]) == [5, 6, 7, 8, 9]
    assert f.send_fetches() == 1
    assert client.fetched(2) == {T0: 20, T1: 10}
    assert _drain(f) == {T0: list(range(10, 20)), T1: list(range(10))}


def test_prefetch_stops_at_fetch_max_bytes_of_undecoded_data() -> None:
    data = batch(0, 10, 0)
    f, client, subs = make(max_poll_records=5, max_bytes=len(data))
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 30), T1: (data, 30)}))
    f.collect_fetch()  # T0 is decoded; T1's bytes are not, and fill the budget
    assert f.send_fetches() == 0


def test_prefetch_bookkeeping_does_not_walk_the_buffer_on_every_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Many partitions buffered, all caught up: handing them out poll by poll (a fetch check
    # after each, as poll() does) must not look at every buffered piece each time (that was
    # O(partitions^2) per pass over the buffer).
    from kafkaconsumer.internals.fetch.completed_fetch import CompletedFetch

    n = 300
    tps = [TopicPartition("t", p) for p in range(n)]
    f, client, subs = make(max_poll_records=5, leaders=dict.fromkeys(tps, 0))
    subs.assign_from_user(tps)
    for tp in tps:
        subs.seek(tp, 0)
    assert f.send_fetches() == 1
    looks = 0
    hint = CompletedFetch.end_offset_hint

    def counting_hint(self: CompletedFetch) -> int | None:
        nonlocal looks
        looks += 1
        return hint(self)

    monkeypatch.setattr(CompletedFetch, "end_offset_hint", counting_hint)
    client.sent[0][2].success(response({tp: (batch(0, 10, 0), 10) for tp in tps}))
    handed = polls = 0
    while True:
        fetch = f.collect_fetch()
        f.send_fetches()
        if fetch.is_empty():
            break
        handed += fetch.num_records
        polls += 1
    assert handed == 10 * n and polls == 2 * n
    assert looks <= 3 * (n + polls), looks


def test_paused_partition_keeps_its_buffered_data() -> None:
    f, client, subs = make(max_poll_records=100)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 4, 0), 4), T1: (batch(50, 3, 0), 3)}))
    subs.pause(T0)
    fetch = f.collect_fetch()
    assert list(fetch.records) == [T1]
    assert f.collect_fetch().is_empty()
    assert f.has_completed_fetches()  # T0's data is still there
    assert f.send_fetches() == 0 or T0 not in client.fetched(len(client.sent) - 1)
    subs.resume(T0)
    fetch = f.collect_fetch()
    assert values(fetch.records[T0]) == [0, 1, 2, 3]


def test_incremental_session_sends_changes_and_forgotten_partitions() -> None:
    f, client, subs = make()
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    body = client.sent[0][1]
    assert (body["session_id"], body["session_epoch"]) == (0, 0)
    client.sent[0][2].success(response({T0: (batch(0, 2, 0), 2), T1: (None, 0)}, session_id=9))
    f.collect_fetch()
    f.send_fetches()
    body = client.sent[1][1]
    assert (body["session_id"], body["session_epoch"]) == (9, 1)
    assert client.fetched(1) == {T0: 2}  # T1 did not change
    assert body["forgotten_topics_data"] == []
    client.sent[1][2].success(response({}, session_id=9))
    subs.assign_from_user([T0])
    f.send_fetches()
    body = client.sent[2][1]
    assert (body["session_id"], body["session_epoch"]) == (9, 2)
    assert [(t["topic"], t["partitions"]) for t in body["forgotten_topics_data"]] == [("t", [1])]


@pytest.mark.parametrize("held", [True, False])
def test_close_ends_the_session_beside_a_held_fetch(held: bool) -> None:
    # A fetch out on the broker's own connection may be held for fetch.max.wait.ms, and the
    # session close would queue behind it: it goes over the broker's second connection.
    f, client, subs = make()
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 2, 0), 2)}, session_id=9))
    f.collect_fetch()
    if held:
        f.send_fetches()  # caught up: the broker holds this one
        assert len(client.sent) == 2 and not client.sent[1][2].is_done
    sent = len(client.sent)
    f.close(Timer(MockTime(), 1000))
    node, body, _ = client.sent[sent]
    assert (body["session_id"], body["session_epoch"], body["topics"]) == (9, -1, [])
    assert node == (seek_fetch_node_id(0) if held else 0)


def test_disabled_sessions_always_send_full_sessionless_requests() -> None:
    f, client, subs = make(fetch_sessions=False)
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 1, 0), 1)}, session_id=0))
    f.collect_fetch()
    f.send_fetches()
    assert (client.sent[1][1]["session_id"], client.sent[1][1]["session_epoch"]) == (0, -1)


def test_caught_up_partition_waits_while_the_node_has_buffered_data() -> None:
    f, client, subs = make(max_poll_records=1)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 1, 0), 1), T1: (batch(0, 3, 0), 3)}))
    f.collect_fetch()  # T0's only record: T0 is now caught up, T1 still buffered
    assert f.send_fetches() == 0  # a long poll for T0 alone would block T1's refetch
    while not f.collect_fetch().is_empty():
        pass
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 1, T1: 3}


def test_stale_data_after_seek_is_dropped() -> None:
    f, client, subs = make()
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    subs.seek(T0, 5)
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 10)}))
    assert f.collect_fetch().is_empty()
    assert _offset(subs, T0) == 5


def test_fetch_offset_inside_a_batch_skips_earlier_records() -> None:
    f, client, subs = make()
    subs.assign_from_user([T0])
    subs.seek(T0, 3)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 6, 0), 6)}))
    assert values(f.collect_fetch().records[T0]) == [3, 4, 5]


def test_deserializer_failure_stops_at_the_bad_record() -> None:
    class IntDes:
        def deserialize(self, topic: str, data: bytes, headers: Any = None) -> int:
            return int(data)

    subs = SubscriptionState("earliest")
    client = FakeClient()
    f = Fetcher(
        client,
        FakeMetadata({T0: 0}),
        subs,
        FetchConfig(),
        time=MockTime(),
        value_deserializer=IntDes(),
    )
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    bad = encode_batch([(None, b"1", [], 1), (None, b"x", [], 1), (None, b"3", [], 1)])
    client.sent[0][2].success(response({T0: (bad, 3)}))
    fetch = f.collect_fetch()
    assert [r.value for r in fetch.records[T0]] == [1]
    with pytest.raises(RecordDeserializationError) as info:
        f.collect_fetch()
    assert info.value.offset == 1 and _offset(subs, T0) == 1
    subs.seek(T0, 2)  # skip it: the buffered data is stale now
    assert f.collect_fetch().is_empty()


def test_fetch_goes_to_each_leader_and_preferred_replica() -> None:
    f, client, subs = make(leaders={T0: 0, T1: 1})
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    assert f.send_fetches() == 2
    assert {n for n, _b, _f in client.sent} == {0, 1}
    resp = response({T0: (None, 0)})
    resp["responses"][0]["partitions"][0]["preferred_read_replica"] = 2
    client.sent[0][2].success(resp)
    client.sent[1][2].success(response({T1: (None, 0)}))
    f.collect_fetch()
    f.send_fetches()
    nodes = {n: client.fetched(i) for i, (n, _b, _f) in enumerate(client.sent) if i >= 2}
    assert nodes == {2: {T0: 0}, 1: {T1: 0}}


def test_paused_buffered_partition_does_not_block_caught_up_partition_of_its_node() -> None:
    f, client, subs = make(max_poll_records=100)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 3, 0), 3), T1: (batch(50, 1, 0), 1)}))
    subs.pause(T0)
    assert values(f.collect_fetch().records[T1]) == [50]  # T1 is now caught up
    assert f.has_completed_fetches()  # T0's data stays buffered while paused
    # The paused partition's data must not hold back T1 (it would, forever, while paused).
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T1: 1}


def test_busy_node_is_the_one_the_buffered_data_came_from() -> None:
    f, client, subs = make(max_poll_records=1)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    resp = response({T0: (None, 10), T1: (None, 0)})
    resp["responses"][0]["partitions"][0]["preferred_read_replica"] = 2
    client.sent[0][2].success(resp)
    assert f.collect_fetch().is_empty()
    # T0 (lagging) now goes to read replica 2; T1 (caught up) to its leader 0.
    assert f.send_fetches() == 2
    by_node = {n: i for i, (n, _b, _f) in enumerate(client.sent) if i >= 1}
    assert client.fetched(by_node[2]) == {T0: 0} and client.fetched(by_node[0]) == {T1: 0}
    client.sent[by_node[0]][2].success(response({T1: (None, 0)}))
    client.sent[by_node[2]][2].success(response({T0: (batch(0, 5, 0), 10)}))
    assert values(f.collect_fetch().records[T0]) == [0]  # 4 more of T0 stay buffered
    # T0's data came from node 2, not from its leader 0: node 0 is free for T1 (and node
    # 2 is prefetched from, T0 lagging).
    assert f.send_fetches() == 2
    by_node = {n: i for i, (n, _b, _f) in enumerate(client.sent) if i >= 3}
    assert client.fetched(by_node[0]) == {T1: 0} and client.fetched(by_node[2]) == {T0: 5}


def test_recreated_topic_is_forgotten_under_its_old_topic_id() -> None:
    old_id, new_id = uuid.uuid4(), uuid.uuid4()
    ids = {"t": old_id}

    class IdCluster(FakeCluster):
        def topic_id(self, topic: str) -> uuid.UUID:
            return ids[topic]

    f, client, subs = make()
    md = FakeMetadata({T0: 0, T1: 0})
    md.cluster = IdCluster({T0: 0, T1: 0})
    f._metadata = md
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (None, 0)}, session_id=9))
    f.collect_fetch()
    ids["t"] = new_id  # the topic was deleted and created again
    assert f.send_fetches() == 1
    body = client.sent[1][1]
    assert (body["session_id"], body["session_epoch"]) == (9, 1)
    assert [(t["topic_id"], t["partitions"]) for t in body["topics"]][0][0] == new_id
    assert [
        (t["topic"], t["topic_id"], t["partitions"]) for t in body["forgotten_topics_data"]
    ] == [("t", old_id, [0])]


def test_paused_partition_data_stays_undecoded() -> None:
    f, client, subs = make(max_poll_records=100)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    client.sent[0][2].success(response({T0: (batch(0, 4, 0), 4), T1: (batch(50, 3, 0), 3)}))
    subs.pause(T0)
    assert list(f.collect_fetch().records) == [T1]
    paused = [cf for cf in f._buffer if cf.tp == T0]
    assert len(paused) == 1 and not paused[0].initialized and paused[0].records == []
    assert paused[0].partition_data["records"] is not None  # raw bytes kept, not decoded
    subs.resume(T0)
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2, 3]


def test_node_availability_is_asked_once_per_node_per_send() -> None:
    f, client, subs = make()
    asked: list[int] = []

    def is_unavailable(node: int) -> bool:
        asked.append(node)
        return False

    client.is_unavailable = is_unavailable  # type: ignore[method-assign]
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    assert f.send_fetches() == 1
    assert asked == [0]  # two partitions, one node: one (locked) question


def test_stale_out_of_range_response_does_not_reset() -> None:
    f, client, subs = make()
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    subs.seek(T0, 5)  # the answer below is about offset 0: stale
    client.sent[0][2].success(response({T0: (None, 10)}, error=1))  # OFFSET_OUT_OF_RANGE
    assert f.collect_fetch().is_empty()
    assert not subs.is_offset_reset_needed(T0) and _offset(subs, T0) == 5


def test_session_handler_is_only_used_under_the_fetcher_lock() -> None:
    tid = uuid.uuid4()

    class IdCluster(FakeCluster):
        def topic_id(self, topic: str) -> uuid.UUID:
            return tid

    f, client, subs = make()
    md = FakeMetadata({T0: 0, T1: 0})
    md.cluster = IdCluster({T0: 0, T1: 0})
    f._metadata = md
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    handler = f._sessions[0]
    held: list[bool] = []
    real_topic_name = handler.topic_name

    def topic_name(topic_id: uuid.UUID) -> str | None:
        held.append(f._lock._is_owned())  # type: ignore[attr-defined]
        return real_topic_name(topic_id)

    handler.topic_name = topic_name  # type: ignore[method-assign]
    resp = response({T0: (batch(0, 2, 0), 2)}, session_id=3)
    resp["responses"][0].update(topic="", topic_id=tid)  # a v13+ answer: ids, no names
    client.sent[0][2].success(resp)
    assert held == [True]
    assert values(f.collect_fetch().records[T0]) == [0, 1]


# -- positions past control batches and aborted transactions ------------------------------

_SEGMENT = st.tuples(st.sampled_from(["data", "commit", "abort"]), st.integers(1, 4))


def _transactional_log(
    segments: list[tuple[str, int]],
) -> tuple[list[tuple[int, bytes]], list[dict[str, int]], list[int], list[int], int]:
    """Batches (base offset, bytes) of plain data, committed and aborted transactions; the
    aborted list as a broker reports it; the values read_committed and read_uncommitted see;
    the log end offset."""
    batches: list[tuple[int, bytes]] = []
    aborted: list[dict[str, int]] = []
    committed_values: list[int] = []
    all_values: list[int] = []
    offset = 0
    for i, (kind, n) in enumerate(segments):
        vals = list(range(offset, offset + n))
        recs: list[RecordInput] = [(None, b"%d" % v, [], 1000) for v in vals]
        all_values.extend(vals)
        if kind == "data":
            batches.append((offset, encode_batch(recs, base_offset=offset)))
            committed_values.extend(vals)
            offset += n
            continue
        # A producer id per transaction keeps the aborted list unambiguous.
        pid = 1000 + i
        batches.append(
            (
                offset,
                encode_batch(
                    recs,
                    base_offset=offset,
                    producer_id=pid,
                    producer_epoch=0,
                    base_sequence=0,
                    transactional=True,
                ),
            )
        )
        if kind == "abort":
            aborted.append({"producer_id": pid, "first_offset": offset})
        else:
            committed_values.extend(vals)
        offset += n
        batches.append(
            (offset, encode_control_batch(kind == "commit", producer_id=pid, base_offset=offset))
        )
        offset += 1
    return batches, aborted, committed_values, all_values, offset


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    segments=st.lists(_SEGMENT, min_size=1, max_size=12),
    read_committed=st.booleans(),
    data=st.data(),
)
def test_position_always_reaches_the_log_end(
    segments: list[tuple[str, int]], read_committed: bool, data: st.DataObject
) -> None:
    batches, aborted, committed_values, all_values, log_end = _transactional_log(segments)
    f, client, subs = make(
        max_poll_records=data.draw(st.integers(1, 5), label="max_poll"),
        read_committed=read_committed,
    )
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    got: list[int] = []
    for _ in range(4 * len(batches) + 4):
        position = _offset(subs, T0)
        if position >= log_end:
            break
        assert f.send_fetches() == 1
        fetched = client.fetched(len(client.sent) - 1)[T0]
        assert fetched == position
        # The broker answers from the batch holding the fetch offset, a random number of
        # whole batches, sometimes with a truncated batch after them (a fetch size limit).
        first = max(i for i, (base, _) in enumerate(batches) if base <= fetched)
        count = data.draw(st.integers(1, len(batches) - first), label="batches")
        chunk = b"".join(raw for _, raw in batches[first : first + count])
        rest = batches[first + count :]
        truncated = bool(rest) and data.draw(st.booleans(), label="truncated")
        if truncated:
            chunk += rest[0][1][: data.draw(st.integers(1, len(rest[0][1]) - 1), label="cut")]
        resp = response({T0: (chunk, log_end)})
        # A superset of what the broker would list: one producer id per transaction makes
        # the extra entries harmless.
        resp["responses"][0]["partitions"][0]["aborted_transactions"] = (
            aborted if read_committed else None
        )
        client.sent[-1][2].success(resp)
        while True:
            fetch = f.collect_fetch()
            if fetch.is_empty():
                break
            got.extend(values(fetch.records.get(T0, [])))
    assert _offset(subs, T0) == log_end
    assert got == (committed_values if read_committed else all_values)


def test_a_bug_in_response_handling_reaches_the_user() -> None:
    # A response the handler cannot process must not pass for an empty fetch.
    from kafkaconsumer.errors import KafkaError

    f, client, subs = make()
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    assert f.send_fetches() == 1
    broken = response({T0: (batch(0, 3, 0), 3)})
    broken["responses"][0]["partitions"] = 42  # not a list: the handler fails on it
    client.sent[0][2].success(broken)
    with pytest.raises(KafkaError, match="fetch response from node 0"):
        f.collect_fetch()
    # Raised once; the next fetch is a full one and delivers the records.
    assert f.collect_fetch().is_empty()
    assert f.send_fetches() == 1
    client.sent[1][2].success(response({T0: (batch(0, 3, 0), 3)}))
    assert values(f.collect_fetch().records[T0]) == [0, 1, 2]


def test_a_bug_handling_a_fetch_response_surfaces_as_an_error_not_an_empty_fetch() -> None:
    f, client, subs = make()
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    broken = response({T0: (batch(0, 3, 0), 3)})
    del broken["responses"][0]["partitions"][0]["partition_index"]  # a malformed answer
    client.sent[0][2].success(broken)
    with pytest.raises(KafkaError, match="handling the fetch response from node 0 failed"):
        f.collect_fetch()
    # The session restarts full and the partition is fetched again from where it was.
    assert f.send_fetches() == 1
    assert client.fetched(1) == {T0: 0}


def _fetch_both(f: Fetcher, subs: SubscriptionState) -> None:
    """Assign T0 and T1 from offset 0 and send the first fetch."""
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    assert f.send_fetches() == 1


def _arrow_offsets(fetch: Any) -> dict[TopicPartition, list[int]]:
    return {
        tp: [o for b in recs.batches for o in b.column("offset").to_pylist()]
        for tp, recs in fetch.records.items()
    }


def test_arrow_poll_decodes_its_partitions_into_one_batch() -> None:
    pytest.importorskip("pyarrow")
    from kafkaconsumer.internals.fetch.arrow_decoder import ArrowDecoder
    from kafkaconsumer.record import arrow

    if not arrow.builder_available():
        pytest.skip("needs the Cython Arrow decoder")
    f, client, subs = make(max_poll_records=500)
    _fetch_both(f, subs)
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 10), T1: (batch(100, 7, 0), 7)}))
    fetch = f.collect_fetch(25, ArrowDecoder())
    assert _arrow_offsets(fetch) == {T0: list(range(10)), T1: list(range(7))}
    parts: list[Any] = list(fetch.records.values())
    joined = arrow.join_records(parts, False)
    parents = {id(o[0]) for recs in parts for o in recs.origins if o}
    assert len(parents) == 1  # both partitions are slices of one batch
    assert joined.column("partition").to_pylist() == [0] * 10 + [1] * 7
    assert joined.column("value").to_pylist()[9:11] == [b"9", b"100"]
    assert _offset(subs, T0) == 10 and _offset(subs, T1) == 7


def test_arrow_poll_cut_by_max_records_continues_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyarrow")
    from kafkaconsumer.internals.fetch.arrow_decoder import ArrowDecoder
    from kafkaconsumer.record import arrow

    if arrow.builder_available():
        # What a poll leaves of a partition is handed out alone next (a slice, no copy).
        def no_copy(batches: Any) -> Any:
            raise AssertionError("concatenated")

        monkeypatch.setattr(arrow, "concat_batches", no_copy)

    f, client, subs = make(max_poll_records=500)
    _fetch_both(f, subs)
    client.sent[0][2].success(response({T0: (batch(0, 10, 0), 10), T1: (batch(100, 7, 0), 7)}))
    got: list[tuple[int, int]] = []
    while True:
        fetch = f.collect_fetch(4, ArrowDecoder())
        if fetch.is_empty():
            break
        parts: list[Any] = list(fetch.records.values())
        joined = arrow.join_records(parts, False)
        assert joined.num_rows <= 4
        partitions = joined.column("partition").to_pylist()
        got.extend(zip(partitions, joined.column("offset").to_pylist(), strict=True))
    assert got == [(0, o) for o in range(10)] + [(1, o) for o in range(7)]


def test_arrow_poll_with_a_corrupt_partition_returns_the_others_first() -> None:
    # A decoding error in one partition of a poll: the partitions before it are handed out,
    # and the error comes with the next poll, naming its partition (as poll() does).
    pytest.importorskip("pyarrow")
    from kafkaconsumer.errors import CorruptRecordError
    from kafkaconsumer.internals.fetch.arrow_decoder import ArrowDecoder

    good = batch(0, 5, 0)
    bad = bytearray(batch(50, 5, 0))
    bad[-1] ^= 0xFF  # the CRC no longer matches
    f, client, subs = make(max_poll_records=500)
    _fetch_both(f, subs)
    client.sent[0][2].success(response({T0: (good, 5), T1: (bytes(bad), 5)}))
    first = f.collect_fetch(100, ArrowDecoder())
    assert _arrow_offsets(first) == {T0: list(range(5))}
    with pytest.raises(CorruptRecordError) as info:
        f.collect_fetch(100, ArrowDecoder())
    assert info.value.partition == 1 and info.value.offset == 0


def test_fetch_size_and_records_are_recorded_per_response() -> None:
    # Java's FetchMetricsAggregator: a response's bytes and records are recorded once every
    # partition of it is handed out or dropped, so fetch-size-avg is a response's size.
    from kafkaconsumer.metrics import FetchManagerMetrics, Metrics

    metrics = Metrics(time=MockTime())
    fm = FetchManagerMetrics(metrics, "c")
    subs = SubscriptionState("earliest")
    client = FakeClient()
    f = Fetcher(
        client,
        FakeMetadata({T0: 0, T1: 0}),
        subs,
        FetchConfig(max_poll_records=100),
        time=MockTime(),
        metrics=fm,
    )
    _fetch_both(f, subs)
    b0, b1 = batch(0, 4, 0), batch(10, 3, 0)
    client.sent[0][2].success(response({T0: (b0, 4), T1: (b1, 3)}))
    tags = {"client-id": "c"}
    g = FetchManagerMetrics.GROUP
    assert f.collect_fetch(4).num_records == 4  # T0 only
    assert metrics.value("records-consumed-total", g, tags) == 0
    assert f.collect_fetch().num_records == 3
    assert metrics.value("records-consumed-total", g, tags) == 7
    assert metrics.value("bytes-consumed-total", g, tags) == len(b0) + len(b1)
    assert metrics.value("fetch-size-max", g, tags) == len(b0) + len(b1)
    assert metrics.value("records-per-request-avg", g, tags) == 7
    # A partition dropped before it is handed out still completes its response.
    f.send_fetches()
    client.sent[1][2].success(response({T0: (batch(4, 2, 4), 9), T1: (batch(3, 2, 3), 9)}))
    subs.assign_from_user([T0])
    f.clear_buffered_data_for_unassigned_partitions([T0])
    assert f.collect_fetch().num_records == 2
    assert metrics.value("records-consumed-total", g, tags) == 9


def test_unassigned_partitions_lose_their_lag_metrics() -> None:
    # Java's FetchMetricsManager.maybeUpdateAssignment: on the first collection after an
    # assignment change, the lag and lead metrics of partitions no longer assigned go.
    from kafkaconsumer.metrics import FetchManagerMetrics, Metrics

    metrics = Metrics(time=MockTime())
    fm = FetchManagerMetrics(metrics, "c")
    subs = SubscriptionState("earliest")
    client = FakeClient()
    f = Fetcher(
        client, FakeMetadata({T0: 0, T1: 0}), subs, FetchConfig(), time=MockTime(), metrics=fm
    )
    _fetch_both(f, subs)
    client.sent[0][2].success(response({T0: (batch(0, 2, 0), 5), T1: (batch(0, 2, 0), 5)}))
    assert f.collect_fetch().num_records == 4

    def lagging() -> set[str]:
        return {
            name.tags["partition"]
            for name in metrics.metrics()
            if name.name == "records-lag" and "partition" in name.tags
        }

    assert lagging() == {"0", "1"}
    subs.assign_from_user([T0])
    f.collect_fetch()
    assert lagging() == {"0"}


@pytest.mark.parametrize("error", [6, 74])  # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH
def test_new_leader_named_by_a_fetch_answer_goes_to_the_metadata(error: int) -> None:
    f, client, subs = make(leaders={T0: 0, T1: 0})
    md = f._metadata
    assert isinstance(md, FakeMetadata)
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 0)
    subs.seek(T1, 0)
    f.send_fetches()
    answer = response({T0: (None, -1), T1: (batch(0, 3, 0), 3)})
    moved, stays = answer["responses"][0]["partitions"]
    moved["error_code"] = error
    moved["current_leader"] = {"leader_id": 1, "leader_epoch": 5}
    stays["current_leader"] = {"leader_id": -1, "leader_epoch": -1}
    answer["node_endpoints"] = [{"node_id": 1, "host": "h1", "port": 9093, "rack": "r1"}]
    client.sent[0][2].success(answer)
    # Taken when the answer arrives, before the records ahead of it are handed out.
    assert len(md.leadership_updates) == 1
    leaders, brokers = md.leadership_updates[0]
    assert leaders == {T0: (1, 5)}
    assert [(b.node_id, b.host, b.port, b.rack) for b in brokers] == [(1, "h1", 9093, "r1")]
    assert client.connecting == [1]  # the new leader's connection is set up meanwhile
    fetch = f.collect_fetch()
    assert values(fetch.records[T1]) == [0, 1, 2]
    assert md.requested  # a refresh is still asked for, as without the hint


def test_error_answer_without_a_leader_leaves_the_metadata_to_a_refresh() -> None:
    f, client, subs = make(leaders={T0: 0})
    md = f._metadata
    assert isinstance(md, FakeMetadata)
    subs.assign_from_user([T0])
    subs.seek(T0, 0)
    f.send_fetches()
    answer = response({T0: (None, -1)}, error=6)
    answer["responses"][0]["partitions"][0]["current_leader"] = {
        "leader_id": -1,
        "leader_epoch": -1,
    }
    client.sent[0][2].success(answer)
    assert md.leadership_updates == [] and client.connecting == []
    assert f.collect_fetch().is_empty()
    assert md.requested
