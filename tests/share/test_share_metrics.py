"""KafkaShareConsumer.metrics() and client_instance_id(): the share fetch and share coordinator
groups with Java's metric names, counting what a real consumption against Apache Kafka 4.4
did; client_instance_id() refuses as Java does when telemetry is off, and answers None when
no broker gives an id in time."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.errors import IllegalStateError
from tests.share import test_share_consumer_integration as base

#: The fixture and helpers of the share consumer's tests: a topic of 10 records, a group.
env = base.env
consumer = base.consumer

FETCH = "consumer-share-fetch-manager-metrics"
COORDINATOR = "consumer-share-coordinator-metrics"


def _by_name(c: KafkaShareConsumer) -> dict[tuple[str, str], float]:
    return {(k.group, k.name): v for k, v in c.metrics().items()}


def test_metric_names_and_client_instance_id() -> None:
    c = KafkaShareConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "client.id": "m"})
    try:
        metrics = c.metrics()
        names = {(k.group, k.name) for k in metrics}
        for name in (
            "fetch-size-avg",
            "fetch-size-max",
            "bytes-consumed-rate",
            "bytes-consumed-total",
            "records-per-request-avg",
            "records-per-request-max",
            "records-fetched-rate",
            "records-fetched-total",
            "fetch-latency-avg",
            "fetch-latency-max",
            "fetch-request-rate",
            "fetch-request-total",
            "fetch-throttle-time-avg",
            "fetch-throttle-time-max",
            "acknowledgements-send-rate",
            "acknowledgements-send-total",
            "acknowledgements-error-rate",
            "acknowledgements-error-total",
        ):
            assert (FETCH, name) in names, name
        for name in (
            "heartbeat-rate",
            "heartbeat-total",
            "heartbeat-response-time-max",
            "last-heartbeat-seconds-ago",
        ):
            assert (COORDINATOR, name) in names, name
        assert {dict(k.tags)["client-id"] for k in metrics} == {"m"}
        assert _by_name(c)[(COORDINATOR, "last-heartbeat-seconds-ago")] == -1.0
        # No broker answers at 127.0.0.1:1, so no instance id comes.
        assert c.client_instance_id(200) is None
        with pytest.raises(ValueError):
            c.client_instance_id(-1)
    finally:
        c.close(timeout_ms=100)
    off = KafkaShareConsumer(
        {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "enable.metrics.push": False}
    )
    try:
        with pytest.raises(IllegalStateError, match="enable.metrics.push"):
            off.client_instance_id(1000)
    finally:
        off.close(timeout_ms=100)
    with pytest.raises(IllegalStateError, match="closed"):
        c.client_instance_id(1000)


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_metrics_count_a_real_consumption(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    with consumer(bootstrap, group) as c:
        c.subscribe([topic])
        got = base.poll_until(c, 10)
        assert len(got) == 10
        assert c.commit_sync(timeout_ms=30_000)
        m: Any = _by_name(c)
        assert m[(FETCH, "records-fetched-total")] == 10
        assert m[(FETCH, "bytes-consumed-total")] > 0
        assert m[(FETCH, "fetch-request-total")] >= 1
        assert m[(FETCH, "fetch-latency-max")] >= 0
        assert m[(FETCH, "records-per-request-max")] >= 1
        # The ten records accepted by commit_sync(), none failed.
        assert m[(FETCH, "acknowledgements-send-total")] == 10
        assert m[(FETCH, "acknowledgements-error-total")] == 0
        assert m[(COORDINATOR, "heartbeat-total")] >= 1
        assert m[(COORDINATOR, "last-heartbeat-seconds-ago")] >= 0
