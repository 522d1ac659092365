"""The engine takes its locks in the order docs/internals.md writes down.

A group consumer reads, auto-commits, commits, looks offsets up and closes against the real
broker with every engine lock traced (tests/support/lock_order.py); every pair "held A, took B"
it shows must go down the documented order, and a leaf lock is never held while another is taken.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records
from tests.helpers import unique_name
from tests.support.lock_order import trace_consumer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "internals.md"
ORDER = ["coordinator", "fetcher", "subscriptions", "network", "metadata"]
LEAVES = {"heartbeat", "offset_fetcher", "network.unsent", "network.flags"}


def test_the_documented_order_is_the_one_checked() -> None:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"^Lock order: (.+)$", text, flags=re.M)
    assert match, "docs/internals.md lost its 'Lock order:' line"
    assert match.group(1).strip().rstrip(".") == " > ".join(f"`{n}`" for n in ORDER) + " > leaves"


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_locks_are_taken_in_the_documented_order(
    bootstrap: str, broker: Any, protocol: str
) -> None:
    if protocol == "consumer" and not broker.supports(68):
        pytest.skip(f"the {broker.kind} broker has no consumer group protocol")
    topic = create_topic(bootstrap, 3)
    produce(bootstrap, topic, simple_records(3, 300))
    # The consumer protocol's timers are the broker's.
    timers = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200}
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name("lock-order"),
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "auto.commit.interval.ms": 100,
            "max.poll.records": 50,
            **(timers if protocol == "classic" else {}),
        }
    )
    with trace_consumer(consumer) as recorder:
        try:
            consumer.subscribe([topic])
            seen = 0
            deadline = time.monotonic() + 60
            while seen < 900:
                assert time.monotonic() < deadline, f"only {seen} of 900 records"
                seen += len(consumer.poll(timeout_ms=200))
            consumer.commit_sync()
            consumer.commit_async()
            tps = [TopicPartition(topic, p) for p in range(3)]
            consumer.end_offsets(tps, timeout_ms=10_000)
            consumer.committed(set(tps), timeout_ms=10_000)
        finally:
            consumer.close(timeout_ms=10_000)
    edges: set[tuple[str, str]] = set(recorder.edges)
    assert ("coordinator", "network") in edges  # the tracing saw the engine at work
    rank: dict[str, Any] = {name: i for i, name in enumerate(ORDER)}
    wrong = sorted(
        (held, taken)
        for held, taken in edges
        if held in LEAVES or (taken not in LEAVES and rank[held] >= rank[taken])
    )
    assert wrong == [], f"taken against the documented order: {wrong}"
