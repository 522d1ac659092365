"""The share consumer against the scripted fake broker (tier 2): a fenced member joins again
with epoch 0 and keeps its member id; a broker without share groups gives a clear error naming
what is missing; commits send acknowledgements again after retriable errors until their
deadline."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.errors import (
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnsupportedVersionError,
    WakeupError,
)
from kafkaconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(60)

TOPIC = "t"


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=1, topics={TOPIC: 1}) as c:
        c.on(ApiKey.SHARE_FETCH, lambda _n, _h, _b: {"acquisition_lock_timeout_ms": 30000})
        yield c


def make(cluster: FakeCluster) -> KafkaShareConsumer:
    return KafkaShareConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"}, fetch_max_wait_ms=50
    )


def test_a_fenced_member_joins_again_with_epoch_zero(cluster: FakeCluster) -> None:
    tid = cluster.topic_id(TOPIC)
    epochs = iter([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])

    def answer(_node: int, _header: Any, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "member_epoch": next(epochs) if body["member_epoch"] >= 0 else -1,
            "heartbeat_interval_ms": 100,
            "assignment": {"topic_partitions": [{"topic_id": tid, "partitions": [0]}]},
        }

    cluster.on(ApiKey.SHARE_GROUP_HEARTBEAT, answer)
    with make(cluster) as c:
        c.subscribe([TOPIC])
        for _ in range(20):
            c.poll(timeout_ms=50)
            if len(cluster.requests(ApiKey.SHARE_GROUP_HEARTBEAT)) >= 2:
                break
        cluster.script(ApiKey.SHARE_GROUP_HEARTBEAT, [{"error_code": 110}])  # fenced
        for _ in range(60):
            c.poll(timeout_ms=50)
            sent = [b for _h, b in cluster.requests(ApiKey.SHARE_GROUP_HEARTBEAT)]
            joins = [b for b in sent if b["member_epoch"] == 0]
            if len(joins) >= 2:
                break
        assert len(joins) >= 2, sent
        assert joins[0]["member_id"] == joins[1]["member_id"]
        assert joins[1]["subscribed_topic_names"] == [TOPIC]


def test_a_broker_without_share_groups_is_named_in_the_error(cluster: FakeCluster) -> None:
    cluster.set_api_versions(
        {k: v for k, v in SUPPORTED_VERSIONS.items() if k != ApiKey.SHARE_GROUP_HEARTBEAT}
    )
    with make(cluster) as c:
        c.subscribe([TOPIC])
        with pytest.raises(UnsupportedVersionError, match="ShareGroupHeartbeat"):
            for _ in range(100):
                c.poll(timeout_ms=50)


def test_wakeup_from_the_commit_callback_stops_the_next_poll(cluster: FakeCluster) -> None:
    """wakeup() called on the consumer's own thread (here from the acknowledgement commit
    callback, as from a signal handler) makes the next poll() raise WakeupError."""
    from tests.share.test_share_fetch_fake_broker import share_fetch_answer

    tid = cluster.topic_id(TOPIC)
    cluster.on(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        lambda _n, _h, body: {
            "member_epoch": 1 if body["member_epoch"] >= 0 else -1,
            "heartbeat_interval_ms": 100,
            "assignment": {"topic_partitions": [{"topic_id": tid, "partitions": [0]}]},
        },
    )
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    with make(cluster) as c:
        c.subscribe([TOPIC])
        records: list[Any] = []
        for _ in range(100):
            records.extend(c.poll(timeout_ms=50))
            if records:
                break
        assert records
        woken: list[bool] = []

        def wake_once(_offsets: Any, _error: Any) -> None:
            if not woken:
                woken.append(True)
                c.wakeup()

        c.set_acknowledgement_commit_callback(wake_once)
        c.commit_sync(timeout_ms=5_000)
        assert woken
        with pytest.raises(WakeupError):
            for _ in range(100):
                c.poll(timeout_ms=50)


def _member_with_records(cluster: FakeCluster) -> tuple[KafkaShareConsumer, Any]:
    """A consumer that was assigned partition 0 and polled records 0-2 of it."""
    from tests.share.test_share_fetch_fake_broker import share_fetch_answer

    tid = cluster.topic_id(TOPIC)
    cluster.on(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        lambda _n, _h, body: {
            "member_epoch": 1 if body["member_epoch"] >= 0 else -1,
            "heartbeat_interval_ms": 100,
            "assignment": {"topic_partitions": [{"topic_id": tid, "partitions": [0]}]},
        },
    )
    cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer())
    # What is not scripted (the closing acknowledgements) is applied.
    cluster.on(ApiKey.SHARE_ACKNOWLEDGE, lambda _n, _h, _b: _acknowledge_answer(tid, 0))
    c = KafkaShareConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"},
        fetch_max_wait_ms=50,
        retry_backoff_ms=20,
        retry_backoff_max_ms=40,
    )
    c.subscribe([TOPIC])
    records: list[Any] = []
    for _ in range(100):
        records.extend(c.poll(timeout_ms=50))
        if records:
            break
    assert records
    return c, tid


def _acknowledge_answer(tid: Any, code: int) -> dict[str, Any]:
    return {
        "acquisition_lock_timeout_ms": 30000,
        "responses": [
            {"topic_id": tid, "partitions": [{"partition_index": 0, "error_code": code}]}
        ],
    }


def test_commit_sync_sends_again_after_a_retriable_error_until_applied(
    cluster: FakeCluster,
) -> None:
    """commit_sync() sends acknowledgements answered with a retriable error again (for the
    partition, then for the whole request) and reports them applied once the broker applied
    them; the callback hears of them once."""
    c, tid = _member_with_records(cluster)
    with c:
        outcomes: list[tuple[Any, Any]] = []
        c.set_acknowledgement_commit_callback(
            lambda offsets, error: outcomes.append((offsets, error))
        )
        cluster.script(
            ApiKey.SHARE_ACKNOWLEDGE,
            [
                _acknowledge_answer(tid, 14),  # COORDINATOR_LOAD_IN_PROGRESS
                {"error_code": 7},  # REQUEST_TIMED_OUT, for the request
                _acknowledge_answer(tid, 0),
            ],
        )
        result = c.commit_sync(timeout_ms=10_000)
        assert result == {TopicPartition(TOPIC, 0): None}
        sent = [b for _h, b in cluster.requests(ApiKey.SHARE_ACKNOWLEDGE)]
        assert len(sent) == 3
        batches = [
            p["acknowledgement_batches"] for b in sent for t in b["topics"] for p in t["partitions"]
        ]
        assert all(b == batches[0] for b in batches) and batches[0]
        assert outcomes == [({TopicPartition(TOPIC, 0): {0, 1, 2}}, None)]


def test_commit_sync_reports_a_timeout_when_retriable_errors_outlast_it(
    cluster: FakeCluster,
) -> None:
    """commit_sync() stops sending acknowledgements that keep getting a retriable error once
    its timeout has passed, and reports them failed with RequestTimedOutError."""
    c, tid = _member_with_records(cluster)
    with c:
        cluster.on(ApiKey.SHARE_ACKNOWLEDGE, lambda _n, _h, _b: _acknowledge_answer(tid, 14))
        result = c.commit_sync(timeout_ms=500)
        assert isinstance(result[TopicPartition(TOPIC, 0)], RequestTimedOutError)
        assert len(cluster.requests(ApiKey.SHARE_ACKNOWLEDGE)) >= 2


def _late_outcomes(
    cluster: FakeCluster, answer_after_s: float, error_code: int, timeout_ms: int
) -> tuple[list[tuple[Any, Any]], int]:
    """commit_sync(timeout_ms) of a member whose ShareAcknowledge the broker answers with
    ``error_code`` only after ``answer_after_s``: checks the partition is reported timed out,
    then commits until the late answer reached the callback. Returns the callback's outcomes
    and how many ShareAcknowledge requests went out before the member closed."""
    c, tid = _member_with_records(cluster)
    with c:
        outcomes: list[tuple[Any, Any]] = []
        c.set_acknowledgement_commit_callback(
            lambda offsets, error: outcomes.append((offsets, error))
        )

        def late(_n: Any, _h: Any, _b: Any) -> dict[str, Any]:
            time.sleep(answer_after_s)
            return _acknowledge_answer(tid, error_code)

        cluster.on(ApiKey.SHARE_ACKNOWLEDGE, late)
        result = c.commit_sync(timeout_ms=timeout_ms)
        assert isinstance(result[TopicPartition(TOPIC, 0)], RequestTimedOutError)
        assert outcomes == []
        deadline = time.monotonic() + 10
        while not outcomes and time.monotonic() < deadline:
            c.commit_sync(timeout_ms=200)
        return outcomes, len(cluster.requests(ApiKey.SHARE_ACKNOWLEDGE))


def test_commit_sync_reports_a_timeout_when_the_answer_is_still_in_flight(
    cluster: FakeCluster,
) -> None:
    """commit_sync() whose time runs out while the broker has not answered reports the
    partition's acknowledgements as timed out; the answer, when it comes, reaches the
    callback."""
    outcomes, _ = _late_outcomes(cluster, 1.0, 0, 300)
    assert outcomes == [({TopicPartition(TOPIC, 0): {0, 1, 2}}, None)]


def test_a_retriable_answer_after_the_deadline_completes_as_a_timeout(
    cluster: FakeCluster,
) -> None:
    """A retriable error answered only after commit_sync()'s deadline is not sent again: the
    acknowledgements complete as timed out (the retries ran out of time), not with the
    broker's retriable error."""
    outcomes, sent = _late_outcomes(cluster, 0.6, 14, 200)
    assert len(outcomes) == 1
    offsets, error = outcomes[0]
    assert offsets == {TopicPartition(TOPIC, 0): {0, 1, 2}}
    assert isinstance(error, RequestTimedOutError)
    assert sent == 1


def test_a_moved_partition_is_not_retried(cluster: FakeCluster) -> None:
    """commit_sync() does not send again acknowledgements answered with NOT_LEADER_OR_FOLLOWER
    (the records' locks went with the leadership): it reports the error at once."""
    c, tid = _member_with_records(cluster)
    with c:
        cluster.script(ApiKey.SHARE_ACKNOWLEDGE, [_acknowledge_answer(tid, 6)])
        result = c.commit_sync(timeout_ms=10_000)
        assert isinstance(result[TopicPartition(TOPIC, 0)], NotLeaderOrFollowerError)
        assert len(cluster.requests(ApiKey.SHARE_ACKNOWLEDGE)) == 1


def test_commit_async_sends_again_after_a_retriable_error_on_later_calls(
    cluster: FakeCluster,
) -> None:
    """commit_async() acknowledgements answered with a retriable error are sent again by the
    consumer's next calls, and the callback reports them applied."""
    from tests.share.test_share_fetch_fake_broker import share_fetch_answer

    c, tid = _member_with_records(cluster)
    with c:
        outcomes: list[Any] = []
        c.set_acknowledgement_commit_callback(
            lambda offsets, error: outcomes.append((offsets, error))
        )
        cluster.script(
            ApiKey.SHARE_ACKNOWLEDGE, [_acknowledge_answer(tid, 14), _acknowledge_answer(tid, 0)]
        )
        c.commit_async()
        # Nothing more to hand out: no other acknowledgement reaches the callback.
        cluster.on(ApiKey.SHARE_FETCH, share_fetch_answer(records=False))
        committed = ({TopicPartition(TOPIC, 0): {0, 1, 2}}, None)
        for _ in range(100):
            if committed in outcomes:
                break
            c.poll(timeout_ms=50)
        assert committed in outcomes
        assert all(error is None for _offsets, error in outcomes)
        assert len(cluster.requests(ApiKey.SHARE_ACKNOWLEDGE)) == 2
