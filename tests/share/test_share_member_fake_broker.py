"""The share consumer's membership against the scripted fake broker (tier 2): a fenced member
joins again with epoch 0 and keeps its member id; a broker without share groups gives a clear
error naming what is missing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.errors import UnsupportedVersionError, WakeupError
from kafkaconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
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
