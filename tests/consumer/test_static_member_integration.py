"""Group state after a fencing or a poll-timeout leave, on a real broker:
a fenced static member's failed commit names the duplicate group.instance.id, and
``group_metadata()`` forgets the generation as soon as the heartbeat thread leaves the group."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import CommitFailedError, FencedInstanceIdError
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.consumer.conftest import create_topic, poll_until, produce, simple_records
from tests.helpers import unique_name, wait_for
from tests.support.broker_limits import session_timeout_ms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _group(bootstrap: str) -> dict[str, Any]:
    """Short group timers, the session raised to what the broker allows (neither test depends
    on a short session)."""
    return {
        "session_timeout_ms": session_timeout_ms(bootstrap, 3000),
        "heartbeat_interval_ms": 300,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
    }


def test_fenced_static_member_commit_names_the_duplicate_instance_id(
    bootstrap: str, broker: Any, consumer_factory: Callable[..., KafkaConsumer]
) -> None:
    if broker.is_tansu:
        pytest.skip(
            "Tansu 0.6 does not fence a static member replaced by a new instance: "
            "the old one's commits keep succeeding"
        )
    topic = create_topic(bootstrap, 1, "static")
    produce(bootstrap, topic, simple_records(1, 5))
    group = unique_name("g")
    first = consumer_factory(group_id=group, group_instance_id="same", **_group(bootstrap))
    first.subscribe([topic])
    poll_until(first, lambda acc: len(acc) >= 5)
    tp = TopicPartition(topic, 0)
    second = consumer_factory(group_id=group, group_instance_id="same", **_group(bootstrap))
    second.subscribe([topic])
    poll_until(second, lambda acc: bool(second.assignment()))
    # The first member learns it was fenced from its next heartbeat (or from the commit).
    errors: list[BaseException] = []

    def commit_fails() -> bool:
        try:
            first.commit_sync({tp: OffsetAndMetadata(5)})
        except (CommitFailedError, FencedInstanceIdError) as exc:
            errors.append(exc)
            return True
        return False

    wait_for(commit_fails, timeout=20, interval=0.2, message="the first member to be fenced")
    message = str(errors[0])
    assert "group.instance.id" in message and "'same'" in message, message
    assert "max.poll.interval.ms" not in message, message


def test_group_metadata_is_reset_when_the_heartbeat_thread_leaves(
    bootstrap: str, broker: Any, consumer_factory: Callable[..., KafkaConsumer]
) -> None:
    topic = create_topic(bootstrap, 1, "leave")
    produce(bootstrap, topic, simple_records(1, 3))
    c = consumer_factory(group_id=unique_name("g"), max_poll_interval_ms=1500, **_group(bootstrap))
    c.subscribe([topic])
    poll_until(c, lambda acc: len(acc) >= 3)
    meta = c.group_metadata()
    assert meta.generation_id >= 0 and meta.member_id
    # No poll: the heartbeat thread leaves after max.poll.interval.ms; the metadata follows
    # without waiting for the next poll.
    wait_for(
        lambda: c.group_metadata().generation_id == -1,
        timeout=20,
        message="group_metadata() to be reset",
    )
    assert c.group_metadata().member_id == ""
