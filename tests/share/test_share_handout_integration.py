"""KafkaShareConsumer hand-out against Apache Kafka 4.4: batch_optimized returns whole record
batches past max.poll.records while record_limit never exceeds it, and over a large run with
acknowledgements riding on the fetches, implicit mode accepts every record exactly once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.protocol import ApiKey
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def share_env(broker: Any) -> Iterator[tuple[str, str]]:
    """(bootstrap, a share-group id reading from the earliest offset)."""
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    group = unique_name("share-h-g")
    with KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.incremental_alter_configs(
            {ConfigResource("group", group): {"share.auto.offset.reset": "earliest"}}
        )
    yield broker.bootstrap_servers, group


def make_topic(bootstrap: str, partitions: int, count: int) -> str:
    """A new topic holding ``count`` records spread over ``partitions``, in large batches."""
    topic = unique_name("share-h")
    with KafkaAdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics({topic: partitions})
    with KafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=200, batch_size=1_000_000
    ) as producer:
        for i in range(count):
            producer.send(topic, b"v%d" % i, partition=i % partitions)
        producer.flush(timeout_ms=60_000)
    return topic


def first_poll(bootstrap: str, group: str, topic: str, **kw: Any) -> int:
    with KafkaShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group}, max_poll_records=10, **kw
    ) as c:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = len(c.poll(timeout_ms=500))
            if got:
                return got
    return 0


def test_batch_optimized_hands_out_whole_batches_and_record_limit_caps(
    share_env: tuple[str, str], broker: Any
) -> None:
    bootstrap, group = share_env
    topic = make_topic(bootstrap, 1, 300)
    assert first_poll(bootstrap, group, topic) > 10
    topic = make_topic(bootstrap, 1, 300)
    limited = first_poll(bootstrap, group, topic, share_acquire_mode="record_limit")
    assert 0 < limited <= 10


def test_implicit_mode_accepts_every_record_once_over_a_large_run(
    share_env: tuple[str, str], broker: Any
) -> None:
    bootstrap, group = share_env
    total = 40_000
    topic = make_topic(bootstrap, 4, total)
    seen: dict[tuple[int, int], int] = {}
    counts: set[int] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def member() -> None:
        with KafkaShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as c:
            c.subscribe([topic])
            while not stop.is_set():
                records: list[Any] = list(c.poll(timeout_ms=200))
                for r in records:
                    with lock:
                        key = (r.partition, r.offset)
                        seen[key] = seen.get(key, 0) + 1
                        counts.add(r.delivery_count)

    threads = [threading.Thread(target=member) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        with lock:
            if len(seen) >= total:
                break
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(60)
    assert len(seen) == total
    assert max(seen.values()) == 1 and counts == {1}
    # Everything was accepted: a new member of the group finds nothing left.
    with KafkaShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as late:
        late.subscribe([topic])
        leftover = 0
        end = time.monotonic() + 8
        while time.monotonic() < end:
            leftover += len(late.poll(timeout_ms=500))
    assert leftover == 0
