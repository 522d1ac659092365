"""A subscription to a topic that does not exist: the condition is logged
once, metadata refreshes back off exponentially up to ``retry.backoff.max.ms``, and the records
arrive once the topic is created."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from tests.consumer.conftest import poll_until, produce
from tests.helpers import unique_name
from tests.support.broker_limits import session_timeout_ms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def test_missing_topic_is_logged_once_and_metadata_backs_off(
    bootstrap: str,
    broker: Any,
    consumer_factory: Callable[..., KafkaConsumer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkaconsumer.metadata")
    topic = unique_name("missing")
    c = consumer_factory(
        group_id=unique_name("g"),
        allow_auto_create_topics=False,
        auto_offset_reset="earliest",
        session_timeout_ms=session_timeout_ms(bootstrap, 3000),
        heartbeat_interval_ms=500,
        retry_backoff_ms=100,
        retry_backoff_max_ms=1000,
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        assert len(c.poll(timeout_ms=200)) == 0
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and topic in r.getMessage()
    ]
    assert len(warned) == 1 and "does not exist" in warned[0], warned
    updates = [r for r in caplog.records if r.getMessage().startswith("metadata updated")]
    # At a fixed 100 ms backoff 4 s would take about 40 refreshes; doubling to 1 s, about 8.
    assert 2 <= len(updates) <= 14, len(updates)
    if broker.is_tansu:
        return  # Tansu creates topics on metadata requests whatever the flag says
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    produce(bootstrap, topic, [(0, None, b"hello", [], None)])
    got = poll_until(c, lambda acc: len(acc) >= 1, timeout_s=30)
    assert [r.value for r in got] == [b"hello"]
