"""A fatal group error does not spin: a loop that catches it and polls again sees it raised at
most once per backoff (growing from retry.backoff.ms to retry.backoff.max.ms), one request per
attempt, and one ERROR line until the error changes (fake broker; GroupErrorBackoff on a fake
clock)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.group_error_backoff import GroupErrorBackoff
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.timer import Timer
from tests.consumer.test_fetcher_fake_broker import leader_epoch_handler
from tests.group.test_consumer_protocol_errors import ScriptedCoordinator
from tests.support.fake_broker import FakeCluster
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(60)

TOPIC = "orders"
INVALID_SESSION_TIMEOUT = 26
GROUP_AUTHORIZATION_FAILED = 30
BACKOFF_MS = 50
BACKOFF_MAX_MS = 200
LOOP_S = 1.5
#: The most raises a loop of LOOP_S can see: one per backoff (jitter takes up to 20% off it).
MOST_RAISES = int(LOOP_S * 1000 / (BACKOFF_MS * 0.8)) + 2


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=1, topics={TOPIC: 1}) as c:
        c.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, leader_epoch_handler(c))
        yield c


@pytest.fixture
def make(cluster: FakeCluster) -> Iterator[Any]:
    made: list[KafkaConsumer] = []

    def factory(**kwargs: Any) -> KafkaConsumer:
        c = KafkaConsumer(
            {"bootstrap.servers": cluster.bootstrap_servers},
            group_id="g",
            retry_backoff_ms=BACKOFF_MS,
            retry_backoff_max_ms=BACKOFF_MAX_MS,
            **kwargs,
        )
        c.subscribe([TOPIC])
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close(timeout_ms=2000)


def catch_and_poll(consumer: KafkaConsumer, seconds: float) -> list[BaseException]:
    """Poll for ``seconds`` as a long-running service does: catch the error, poll again."""
    raised: list[BaseException] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            consumer.poll(timeout_ms=100)
        except Errors.KafkaError as exc:
            raised.append(exc)
    return raised


def error_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.name.startswith("kafkaconsumer")
    ]


def test_a_fatal_join_error_is_raised_after_a_backoff_and_logged_once(
    cluster: FakeCluster, make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.fail(ApiKey.JOIN_GROUP, INVALID_SESSION_TIMEOUT, times=10_000)
    c = make(session_timeout_ms=3000, heartbeat_interval_ms=1000)
    with caplog.at_level(logging.INFO, logger="kafkaconsumer"):
        raised = catch_and_poll(c, LOOP_S)
    assert 2 <= len(raised) <= MOST_RAISES
    assert all(isinstance(e, Errors.InvalidSessionTimeoutError) for e in raised)
    # One JoinGroup per attempt, and no attempt without a raise.
    assert len(cluster.requests(ApiKey.JOIN_GROUP)) <= len(raised)
    lines = error_lines(caplog)
    assert len(lines) == 1, lines
    assert "session.timeout.ms=3000" in lines[0]


def test_a_fatal_sync_error_is_raised_after_a_backoff_and_logged_once(
    cluster: FakeCluster, make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.fail(ApiKey.SYNC_GROUP, GROUP_AUTHORIZATION_FAILED, times=10_000)
    c = make()
    with caplog.at_level(logging.INFO, logger="kafkaconsumer"):
        raised = catch_and_poll(c, LOOP_S)
    assert 2 <= len(raised) <= MOST_RAISES
    assert all(isinstance(e, Errors.GroupAuthorizationFailedError) for e in raised)
    assert len(cluster.requests(ApiKey.SYNC_GROUP)) <= len(raised)
    assert len(error_lines(caplog)) == 1, error_lines(caplog)


def test_a_changed_error_is_logged_again_and_recovery_is_logged(
    cluster: FakeCluster, make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.fail(ApiKey.JOIN_GROUP, INVALID_SESSION_TIMEOUT, times=2)
    cluster.fail(ApiKey.JOIN_GROUP, GROUP_AUTHORIZATION_FAILED, times=2)
    c = make()
    kinds: list[type] = []
    joined = False
    deadline = time.monotonic() + 20
    with caplog.at_level(logging.INFO, logger="kafkaconsumer"):
        while not joined:
            assert time.monotonic() < deadline, f"never joined; raised {kinds}"
            try:
                c.poll(timeout_ms=100)
                joined = bool(c.assignment())
            except Errors.KafkaError as exc:
                kinds.append(type(exc))
    # Polls whose time ran out within a backoff raise the same error again.
    changes = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] is not k]
    assert changes == [Errors.InvalidSessionTimeoutError, Errors.GroupAuthorizationFailedError]
    assert len(error_lines(caplog)) == 2, error_lines(caplog)
    assert any("recovered after 4 failed attempts" in r.getMessage() for r in caplog.records)


def test_a_fatal_consumer_group_heartbeat_error_is_raised_after_a_backoff(
    cluster: FakeCluster, make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    coord = ScriptedCoordinator(cluster)
    coord.script.append(
        lambda body: coord.answer(
            body, error_code=Errors.UnsupportedAssignorError.errno, error_message="no such"
        )
    )
    c = make(group_protocol="consumer")
    with caplog.at_level(logging.INFO, logger="kafkaconsumer"):
        raised = catch_and_poll(c, LOOP_S)
    assert 2 <= len(raised) <= MOST_RAISES
    assert all(isinstance(e, Errors.UnsupportedAssignorError) for e in raised)
    assert len(error_lines(caplog)) == 1, error_lines(caplog)


# ------------------------------------------------------------------ GroupErrorBackoff alone


def backoff_on(clock: MockTime) -> GroupErrorBackoff:
    return GroupErrorBackoff("g", ExponentialBackoff(100, 2.0, 1000, 0.0), clock)


def test_attempts_wait_a_backoff_growing_to_the_cap() -> None:
    clock = MockTime()
    b = backoff_on(clock)
    waits: list[int] = []

    def wait(timer: Timer, ms: int) -> None:
        waits.append(ms)
        clock.advance(min(ms, timer.remaining_ms))
        timer.update()

    error = Errors.InvalidSessionTimeoutError("x")
    assert b.wait(Timer(clock, 5000), wait) is None  # nothing failed yet
    for _ in range(6):
        b.failed("joining the group", error)
        assert b.wait(Timer(clock, 5000), wait) is None
    assert waits == [100, 200, 400, 800, 1000, 1000]
    b.failed("joining the group", error)
    # The poll's time runs out first: the error is raised again, with no attempt.
    assert b.wait(Timer(clock, 300), wait) is error
    assert b.wait(Timer(clock, 5000), wait) is None
    b.succeeded()
    assert b.failures == 0
    b.failed("joining the group", error)
    assert b.wait(Timer(clock, 5000), wait) is None
    assert waits[-1] == 100


def test_a_terminal_error_is_raised_at_once_then_after_each_backoff() -> None:
    clock = MockTime()
    b = backoff_on(clock)
    waited: list[int] = []

    def wait(timer: Timer, ms: int) -> None:
        waited.append(ms)
        clock.advance(min(ms, timer.remaining_ms))
        timer.update()

    error = Errors.GroupAuthorizationFailedError("x")
    assert b.throttle(error, Timer(clock, 5000), wait) is error
    assert waited == []
    for _ in range(4):
        assert b.throttle(error, Timer(clock, 5000), wait) is error
    assert waited == [100, 200, 400, 800]


def test_a_wait_that_ends_early_goes_on_waiting() -> None:
    clock = MockTime()
    b = backoff_on(clock)
    waits: list[int] = []

    def wait(timer: Timer, ms: int) -> None:
        # A response arrives after 30 ms: the network wait returns before its time.
        waits.append(ms)
        clock.advance(min(30, ms, timer.remaining_ms))
        timer.update()

    b.failed("joining the group", Errors.InvalidSessionTimeoutError("x"))
    assert b.wait(Timer(clock, 5000), wait) is None
    assert waits == [100, 70, 40, 10]
