"""KafkaShareConsumer against Apache Kafka 4.4: records carry their delivery count; implicit mode
accepts at the next poll; explicit RELEASE redelivers with the count raised and REJECT never
redelivers; commit_sync reports per partition; the commit callback hears every settlement;
close() flushes pending acknowledgements; several members share one partition without a
record held by two at once; bad acknowledgements and unsupported keys are refused."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import AcknowledgeType, KafkaShareConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.errors import ConfigError, IllegalStateError, WakeupError
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name
from tests.share.member import produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture
def env(broker: Any) -> Iterator[tuple[str, str, str]]:
    """(bootstrap, topic with 10 records in one partition, share group reading from the
    earliest offset)."""
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    topic, group = unique_name("share-c"), unique_name("share-c-g")
    with KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics({topic: 1})
        admin.incremental_alter_configs(
            {ConfigResource("group", group): {"share.auto.offset.reset": "earliest"}}
        )
    produce(broker.bootstrap_servers, topic, 10)
    yield broker.bootstrap_servers, topic, group


def consumer(bootstrap: str, group: str, **kw: Any) -> KafkaShareConsumer:
    return KafkaShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group}, fetch_max_wait_ms=200, **kw
    )


def poll_until(c: KafkaShareConsumer, want: int, limit_s: float = 60.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + limit_s
    while len(got) < want and time.monotonic() < deadline:
        got.extend(c.poll(timeout_ms=500))
    return got


def test_implicit_mode_accepts_at_the_next_poll(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    with consumer(bootstrap, group) as c:
        c.subscribe([topic])
        assert c.subscription() == {topic}
        got = poll_until(c, 10)
        assert sorted(r.offset for r in got) == list(range(10))
        assert {r.delivery_count for r in got} == {1}
        assert c.acquisition_lock_timeout_ms()
        with pytest.raises(IllegalStateError, match="Implicit acknowledgement"):
            c.acknowledge(got[0])
        results = c.commit_sync(timeout_ms=30_000)
        assert results == {TopicPartition(topic, 0): None}
        assert poll_until(c, 1, limit_s=3) == []


def test_explicit_release_redelivers_and_reject_does_not(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    settled: list[tuple[dict[TopicPartition, set[int]], Any]] = []
    with consumer(bootstrap, group, share_acknowledgement_mode="explicit") as c:
        c.set_acknowledgement_commit_callback(lambda offsets, exc: settled.append((offsets, exc)))
        c.subscribe([topic])
        got = poll_until(c, 10)
        assert len(got) == 10
        with pytest.raises(IllegalStateError, match="must be acknowledged"):
            c.poll(timeout_ms=0)
        for r in got:
            kind = AcknowledgeType.RELEASE if r.offset < 3 else AcknowledgeType.ACCEPT
            if r.offset == 9:
                kind = AcknowledgeType.REJECT
            c.acknowledge(r, kind)
        with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
            c.acknowledge(got[0], AcknowledgeType.ACCEPT)  # twice
        with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
            c.acknowledge(topic, 0, 99, AcknowledgeType.ACCEPT)  # never delivered
        with pytest.raises(ValueError, match="unknown acknowledge type"):
            c.acknowledge(topic, 0, 5, 7)
        again = poll_until(c, 3)
        assert sorted((r.offset, r.delivery_count) for r in again) == [(0, 2), (1, 2), (2, 2)]
        for r in again:
            c.acknowledge(r)
        assert c.commit_sync(timeout_ms=30_000) == {TopicPartition(topic, 0): None}
        assert poll_until(c, 1, limit_s=3) == []
    acknowledged = set().union(*(o[TopicPartition(topic, 0)] for o, _e in settled))
    assert acknowledged == set(range(10))
    assert all(e is None for _o, e in settled)


def test_close_flushes_pending_acknowledgements(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    assert len(poll_until(c, 10)) == 10
    c.close()  # implicit mode: accepts the 10 records on the way out
    with consumer(bootstrap, group) as other:
        other.subscribe([topic])
        assert poll_until(other, 1, limit_s=5) == []


def test_unsubscribe_accepts_what_was_returned_and_leaves(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    with consumer(bootstrap, group) as c:
        c.subscribe([topic])
        assert len(poll_until(c, 10)) == 10
        c.unsubscribe()
        assert c.subscription() == set()
        with pytest.raises(IllegalStateError, match="not subscribed"):
            c.poll(timeout_ms=0)
    with KafkaAdminClient(bootstrap_servers=bootstrap) as admin:
        assert admin.describe_share_groups([group])[group].members == ()
    with consumer(bootstrap, group) as other:
        other.subscribe([topic])
        assert poll_until(other, 1, limit_s=5) == []


def test_members_share_one_partition_without_double_delivery(
    env: tuple[str, str, str], broker: Any
) -> None:
    bootstrap, topic, group = env
    produce(bootstrap, topic, 190)  # 200 records in all
    seen: dict[int, list[str]] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def member(name: str) -> None:
        with consumer(bootstrap, group, max_poll_records=10) as c:
            c.subscribe([topic])
            while not stop.is_set():
                for r in c.poll(timeout_ms=200):
                    with lock:
                        seen.setdefault(r.offset, []).append(name)
                c.commit_sync(timeout_ms=10_000)

    threads = [threading.Thread(target=member, args=(f"m{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with lock:
            if len(seen) >= 200:
                break
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(30)
    assert sorted(seen) == list(range(200))
    assert all(len(names) == 1 for names in seen.values())


def test_wakeup_interrupts_poll_and_bad_keys_are_refused(env: tuple[str, str, str]) -> None:
    bootstrap, topic, group = env
    with pytest.raises(ConfigError, match="auto.offset.reset, isolation.level"):
        KafkaShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
    with consumer(bootstrap, group) as c:
        c.subscribe([unique_name("share-empty")])
        threading.Timer(0.5, c.wakeup).start()
        with pytest.raises(WakeupError):
            c.poll(timeout_ms=20_000)
