"""``auto.offset.reset=by_duration:PT1H`` on a real broker: a new group (classic and consumer
protocol) and a manual assignment start at the first record of the last hour; a partition with
no record that recent starts at its end."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import Record, create_topic, poll_until, produce
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CONSUMER_GROUP_HEARTBEAT = 68
HOUR_MS = 3_600_000


def _records(now_ms: int) -> list[Record]:
    """Partition 0: five records two hours old, then five ten minutes old; partition 1: three
    records two hours old only."""
    old, recent = now_ms - 2 * HOUR_MS, now_ms - 10 * 60_000
    out: list[Record] = []
    for i in range(5):
        out.append((0, b"old-%d" % i, b"v", [], old + i))
    for i in range(5):
        out.append((0, b"new-%d" % i, b"v", [], recent + i))
    for i in range(3):
        out.append((1, b"old1-%d" % i, b"v", [], old + i))
    return out


@pytest.mark.parametrize("how", ["assign", "classic", "consumer"])
def test_by_duration_starts_at_the_first_record_of_the_window(
    broker: Any, consumer_factory: Any, how: str
) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu answers every timestamp lookup with offset 0 (docs/testing.md)")
    if how == "consumer" and not broker.supports(CONSUMER_GROUP_HEARTBEAT):
        pytest.skip("the broker has no ConsumerGroupHeartbeat (KIP-848)")
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, 2, prefix="bydur")
    produce(bootstrap, topic, _records(int(time.time() * 1000)))
    settings: dict[str, Any] = {"auto_offset_reset": "by_duration:PT1H"}
    if how != "assign":
        settings["group_id"] = unique_name("bydur")
    if how == "consumer":
        settings["group_protocol"] = "consumer"
    c = consumer_factory(**settings)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    if how == "assign":
        c.assign(tps)
    else:
        c.subscribe([topic])
    got = poll_until(c, lambda acc: len(acc) >= 5, timeout_s=60)
    assert [r.key for r in got] == [b"new-%d" % i for i in range(5)]
    # Partition 1 has nothing from the last hour: it starts at its end.
    assert c.position(tps[1]) == 3
    produce(bootstrap, topic, [(1, b"later", b"v", [], None)])
    later = poll_until(c, lambda acc: len(acc) >= 1, timeout_s=30)
    assert [(r.partition, r.offset, r.key) for r in later] == [(1, 3, b"later")]
