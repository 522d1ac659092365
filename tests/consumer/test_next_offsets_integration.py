"""``ConsumerRecords.next_offsets()``: poll() says, per partition, where the next poll starts."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def test_each_poll_reports_the_position_after_its_records(
    bootstrap: str, consumer_factory: Any
) -> None:
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, simple_records(2, 40))
    c = consumer_factory(max_poll_records=7)
    tps = [TopicPartition(topic, p) for p in range(2)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 80:
        assert time.monotonic() < deadline, f"only {seen} of 80 records"
        records = c.poll(timeout_ms=500)
        nxt = records.next_offsets()
        assert set(nxt) == set(records.partitions())
        for tp in records.partitions():
            last = records.records(tp)[-1]
            assert nxt[tp] == OffsetAndMetadata(last.offset + 1, "", last.leader_epoch)
            assert c.position(tp) == last.offset + 1
        seen += len(records)
