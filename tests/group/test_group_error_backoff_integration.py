"""A fatal group error on a real broker does not spin: a loop that catches the error and polls
again, as long-running services do, sees it raised about once per backoff and logged once."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer import errors as Errors
from tests.consumer.conftest import create_topic
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CONSUMER_GROUP_HEARTBEAT = 68
LOOP_S = 5.0
BACKOFF_MS = 100  # retry.backoff.ms's default; the backoff grows to retry.backoff.max.ms (1 s)
#: The most raises LOOP_S allows at one per backoff (jitter takes up to 20% off each).
MOST_RAISES = int(LOOP_S * 1000 / (BACKOFF_MS * 0.8)) + 2


def catch_and_poll(consumer: KafkaConsumer, error: type[BaseException]) -> int:
    """Poll for LOOP_S, catching ``error`` and polling again; returns how often it was raised."""
    raised = 0
    deadline = time.monotonic() + LOOP_S
    while time.monotonic() < deadline:
        try:
            consumer.poll(timeout_ms=1000)
        except error:
            raised += 1
    return raised


def error_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.name.startswith("kafkaconsumer")
    ]


def test_session_timeout_the_broker_refuses(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    """session.timeout.ms above the broker's group.max.session.timeout.ms (30 min by default;
    the suite's broker lowers the minimum, so the maximum is the side to cross)."""
    if broker.is_tansu:
        pytest.skip("Tansu 0.6 accepts any session.timeout.ms: there is no error to back off from")
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, 1)
    c = KafkaConsumer(
        {"bootstrap.servers": bootstrap},
        group_id=unique_name("spin"),
        session_timeout_ms=1_900_000,
        heartbeat_interval_ms=3000,
    )
    try:
        c.subscribe([topic])
        with caplog.at_level(logging.INFO, logger="kafkaconsumer"):
            raised = catch_and_poll(c, Errors.InvalidSessionTimeoutError)
    finally:
        c.close(timeout_ms=5000)
    assert 2 <= raised <= MOST_RAISES
    lines = error_lines(caplog)
    assert len(lines) == 1, lines
    assert "session.timeout.ms=1900000" in lines[0]


def test_consumer_protocol_unknown_assignor(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    """group.remote.assignor naming an assignor the broker lacks: UNSUPPORTED_ASSIGNOR."""
    if not broker.supports(CONSUMER_GROUP_HEARTBEAT):
        pytest.skip(f"the {broker.kind} broker has no ConsumerGroupHeartbeat (KIP-848)")
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, 1)
    c = KafkaConsumer(
        {"bootstrap.servers": bootstrap},
        group_id=unique_name("spin"),
        group_protocol="consumer",
        group_remote_assignor="no-such-assignor",
    )
    try:
        c.subscribe([topic])
        with caplog.at_level(logging.INFO, logger="kafkaconsumer"):
            raised = catch_and_poll(c, Errors.UnsupportedAssignorError)
    finally:
        c.close(timeout_ms=5000)
    assert 2 <= raised <= MOST_RAISES
    assert len(error_lines(caplog)) == 1, error_lines(caplog)
