"""``for record in consumer:`` with auto-commit, left with ``break`` and closed: the group's
committed offsets cover exactly the records handed out, and the next member of the group starts
with the first record the loop never saw."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import consume_exactly, create_topic, produce, simple_records
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 3
PER_PARTITION = 500
STOP_AFTER = 1234


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_break_after_n_records_commits_exactly_n(
    bootstrap: str, broker: Any, consumer_factory: Any, protocol: str
) -> None:
    if protocol == "consumer" and not broker.supports(68):
        pytest.skip("the broker has no ConsumerGroupHeartbeat (KIP-848)")
    topic = create_topic(bootstrap, PARTITIONS)
    produce(bootstrap, topic, simple_records(PARTITIONS, PER_PARTITION))
    group = unique_name("iter-group")
    settings: dict[str, Any] = {"group_id": group, "auto_offset_reset": "earliest"}
    if protocol == "consumer":
        settings["group_protocol"] = "consumer"
    else:
        # A short session: Tansu holds a new group's first join for about half of it.
        settings.update(session_timeout_ms=6000, heartbeat_interval_ms=1000)
    # Auto-commit on with its default interval, max.poll.records at its default (500): the
    # loop stops part-way through a poll, as a script moved over from kafka-python would.
    c = consumer_factory(**settings)
    c.subscribe([topic])
    seen: dict[int, list[int]] = {}
    n = 0
    for record in c:
        seen.setdefault(record.partition, []).append(record.offset)
        n += 1
        if n == STOP_AFTER:
            break
    c.close()

    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    checker = consumer_factory(group_id=group, enable_auto_commit=False, **_protocol(settings))
    committed = checker.committed(tps)
    expected = {p: max(offsets) + 1 for p, offsets in seen.items()}
    got = {tp.partition: om.offset for tp, om in committed.items() if om is not None}
    assert {p: o for p, o in got.items() if o} == expected
    assert sum(got.values()) == STOP_AFTER

    # The group's next member reads exactly the rest: nothing skipped, nothing twice.
    checker.subscribe([topic])
    rest = consume_exactly(checker, PARTITIONS * PER_PARTITION - STOP_AFTER, timeout_s=60)
    for tp, records in rest.items():
        assert records[0].offset == expected.get(tp.partition, 0)
        assert not set(r.offset for r in records) & set(seen.get(tp.partition, ()))


def _protocol(settings: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k != "group_id" and k != "auto_offset_reset"}
