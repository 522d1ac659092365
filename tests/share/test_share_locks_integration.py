"""Acquisition locks of KafkaShareConsumer against Apache Kafka 4.4: a member that stops polling
loses its records to another member once the lock runs out, and its late acknowledgements are
reported failed (InvalidRecordStateError) in the callback and by ``commit_sync``; a member killed
with SIGKILL loses what it held to the others and every record is accepted exactly once; RENEW
keeps a slow record past the lock duration; ``share.delivery.count.limit`` archives a record;
the group's ``share.auto.offset.reset`` takes ``by_duration:`` (KIP-1106)."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import AcknowledgeType, KafkaShareConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.errors import InvalidConfigError, InvalidRecordStateError
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name
from tests.share.member import produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

#: The shortest acquisition lock a 4.4 broker lets a group have.
LOCK_MS = 15_000
FETCH_METRICS = "consumer-share-fetch-manager-metrics"


@pytest.fixture
def admin(broker: Any) -> Iterator[KafkaAdminClient]:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    with KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


def share_group(admin: KafkaAdminClient, **configs: str) -> tuple[str, str]:
    """A one-partition topic and a share group reading it from the earliest offset, with the
    group configurations ``configs`` (underscores for dots)."""
    topic, group = unique_name("share-lk"), unique_name("share-lk-g")
    admin.create_topics({topic: 1})
    settings = {"share.auto.offset.reset": "earliest"}
    settings.update({k.replace("_", "."): v for k, v in configs.items()})
    admin.incremental_alter_configs({ConfigResource("group", group): settings})
    return topic, group


def consumer(bootstrap: str, group: str, **kw: Any) -> KafkaShareConsumer:
    return KafkaShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group}, fetch_max_wait_ms=200, **kw
    )


def poll_until(c: KafkaShareConsumer, want: int, limit_s: float = 60.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + limit_s
    while len(got) < want and time.monotonic() < deadline:
        got.extend(c.poll(timeout_ms=300))
    return got


def test_a_member_that_stops_polling_loses_its_records_and_its_late_acks_fail(
    admin: KafkaAdminClient, broker: Any
) -> None:
    bootstrap = broker.bootstrap_servers
    topic, group = share_group(admin, share_record_lock_duration_ms=str(LOCK_MS))
    produce(bootstrap, topic, 5)
    tp = TopicPartition(topic, 0)
    settled: list[tuple[dict[TopicPartition, set[int]], Any]] = []
    with consumer(bootstrap, group, share_acknowledgement_mode="explicit") as slow:
        slow.set_acknowledgement_commit_callback(lambda o, e: settled.append((o, e)))
        slow.subscribe([topic])
        held = poll_until(slow, 5)
        assert sorted(r.offset for r in held) == list(range(5))
        assert slow.acquisition_lock_timeout_ms() == LOCK_MS
        taken_at = time.monotonic()
        # The slow member stops polling; another member gets the records once the locks ran out.
        with consumer(bootstrap, group) as other:
            other.subscribe([topic])
            again = poll_until(other, 5, limit_s=90)
            waited = time.monotonic() - taken_at
            assert sorted(r.offset for r in again) == list(range(5))
            assert {r.delivery_count for r in again} == {2}
            assert waited >= LOCK_MS / 1000 * 0.9
            assert other.commit_sync(timeout_ms=30_000) == {tp: None}
        # Too late: the broker refuses the acknowledgements; they fail, visibly.
        for r in held:
            slow.acknowledge(r, AcknowledgeType.ACCEPT)
        result = slow.commit_sync(timeout_ms=30_000)
        assert isinstance(result[tp], InvalidRecordStateError)
        errors = [
            v
            for k, v in slow.metrics().items()
            if (k.group, k.name) == (FETCH_METRICS, "acknowledgements-error-total")
        ]
        assert errors == [5]
    assert settled and all(isinstance(e, InvalidRecordStateError) for _o, e in settled)
    assert set().union(*(o[tp] for o, _e in settled)) == set(range(5))


def test_late_acknowledgements_are_kept_out_so_live_ones_of_the_partition_apply(
    admin: KafkaAdminClient, broker: Any
) -> None:
    """Records whose lock ran out beside records still held (renewed) in one partition: the
    broker would refuse the whole partition's acknowledgements, so the client does not send the
    late ones (reported InvalidRecordStateError, and the broker delivers them again) and the
    live ones are applied (never delivered again)."""
    bootstrap = broker.bootstrap_servers
    topic, group = share_group(admin, share_record_lock_duration_ms=str(LOCK_MS))
    produce(bootstrap, topic, 4)
    tp = TopicPartition(topic, 0)
    settled: list[tuple[dict[TopicPartition, set[int]], Any]] = []
    with consumer(bootstrap, group, share_acknowledgement_mode="explicit") as c:
        c.set_acknowledgement_commit_callback(lambda o, e: settled.append((o, e)))
        c.subscribe([topic])
        got = poll_until(c, 4)
        assert [r.offset for r in got] == [0, 1, 2, 3]
        time.sleep(LOCK_MS / 1000 * 0.6)
        for r in got[2:]:
            c.acknowledge(r, AcknowledgeType.RENEW)
        assert c.commit_sync(timeout_ms=30_000) == {tp: None}
        time.sleep(LOCK_MS / 1000 * 0.6)
        settled.clear()
        for r in got:
            c.acknowledge(r, AcknowledgeType.ACCEPT)
        result = c.commit_sync(timeout_ms=30_000)
        assert isinstance(result[tp], InvalidRecordStateError)
        outcome = {frozenset(o[tp]): type(e).__name__ for o, e in settled}
        assert outcome == {
            frozenset({0, 1}): "InvalidRecordStateError",
            frozenset({2, 3}): "NoneType",
        }
        with consumer(bootstrap, group) as other:
            other.subscribe([topic])
            later = poll_until(other, 2, limit_s=30)
            assert sorted((r.offset, r.delivery_count) for r in later) == [(0, 2), (1, 2)]
            assert poll_until(other, 1, limit_s=3) == []


def test_renew_keeps_a_slow_record_past_the_lock_duration(
    admin: KafkaAdminClient, broker: Any
) -> None:
    bootstrap = broker.bootstrap_servers
    topic, group = share_group(admin, share_record_lock_duration_ms=str(LOCK_MS))
    produce(bootstrap, topic, 1)
    tp = TopicPartition(topic, 0)
    seen_by_other: list[int] = []
    stop = threading.Event()

    def other_member() -> None:
        with consumer(bootstrap, group) as other:
            other.subscribe([topic])
            while not stop.is_set():
                seen_by_other.extend(r.offset for r in other.poll(timeout_ms=200))

    with consumer(bootstrap, group, share_acknowledgement_mode="explicit") as slow:
        slow.subscribe([topic])
        (record,) = poll_until(slow, 1)
        thread = threading.Thread(target=other_member)
        thread.start()
        try:
            started = time.monotonic()
            # Renew twice, each before the lock runs out, until well past one lock duration.
            for _ in range(2):
                time.sleep(LOCK_MS / 1000 * 0.6)
                slow.acknowledge(record, AcknowledgeType.RENEW)
                assert slow.commit_sync(timeout_ms=30_000) == {tp: None}
            time.sleep(LOCK_MS / 1000 * 0.3)
            assert time.monotonic() - started > LOCK_MS / 1000
            slow.acknowledge(record, AcknowledgeType.ACCEPT)
            assert slow.commit_sync(timeout_ms=30_000) == {tp: None}
            time.sleep(1)
        finally:
            stop.set()
            thread.join(30)
    assert seen_by_other == []


def test_the_delivery_count_limit_archives_a_record(admin: KafkaAdminClient, broker: Any) -> None:
    bootstrap = broker.bootstrap_servers
    topic, group = share_group(admin, share_delivery_count_limit="2")
    produce(bootstrap, topic, 1)
    counts: list[int] = []
    with consumer(bootstrap, group, share_acknowledgement_mode="explicit") as c:
        c.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for r in poll_until(c, 1, limit_s=0.3):
                counts.append(r.delivery_count)
                c.acknowledge(r, AcknowledgeType.RELEASE)
            c.commit_sync(timeout_ms=10_000)
            if len(counts) >= 2:
                # Released at the limit: archived, never delivered a third time.
                assert poll_until(c, 1, limit_s=4) == []
                break
    assert counts == [1, 2]


def test_the_group_start_offset_takes_by_duration(admin: KafkaAdminClient, broker: Any) -> None:
    """``share.auto.offset.reset=by_duration:PT1H`` starts the share group at the first record of
    the last hour; a negative duration and ``none`` are refused by the broker with Java's
    message."""
    bootstrap = broker.bootstrap_servers
    topic, group = unique_name("share-bd"), unique_name("share-bd-g")
    admin.create_topics({topic: 1})
    now = int(time.time() * 1000)
    produce(bootstrap, topic, 3, timestamp_ms=now - 3 * 3_600_000)  # offsets 0-2: too old
    produce(bootstrap, topic, 3, timestamp_ms=now - 60_000)  # offsets 3-5
    resource = ConfigResource("group", group)
    for bad in ("by_duration:-PT1H", "none", "by_duration"):
        with pytest.raises(InvalidConfigError, match="by_duration:<PnDTnHnMn.nS>"):
            admin.incremental_alter_configs({resource: {"share.auto.offset.reset": bad}})
    admin.incremental_alter_configs({resource: {"share.auto.offset.reset": "by_duration:PT1H"}})
    with consumer(bootstrap, group) as c:
        c.subscribe([topic])
        got = poll_until(c, 3)
        assert sorted(r.offset for r in got) == [3, 4, 5]
        assert poll_until(c, 1, limit_s=2) == []


_CHILD = textwrap.dedent(
    """
    import sys, time
    from kafkaconsumer import KafkaShareConsumer
    bootstrap, group, topic = sys.argv[1:4]
    # record_limit: five records a poll, not the rest of their record batch with them.
    c = KafkaShareConsumer({"bootstrap.servers": bootstrap, "group.id": group},
                           fetch_max_wait_ms=200, max_poll_records=5,
                           share_acquire_mode="record_limit")
    c.subscribe([topic])
    while True:
        records = list(c.poll(timeout_ms=300))
        if not records:
            continue
        print("GOT", " ".join(str(r.offset) for r in records), flush=True)
        print("HOLD", flush=True)
        time.sleep(2)
        results = c.commit_sync(timeout_ms=10000)
        if all(e is None for e in results.values()):
            print("ACCEPTED", " ".join(str(r.offset) for r in records), flush=True)
    """
)


def test_a_member_killed_with_sigkill_loses_what_it_held_and_nothing_is_accepted_twice(
    admin: KafkaAdminClient, broker: Any
) -> None:
    bootstrap = broker.bootstrap_servers
    total = 60
    topic, group = share_group(admin, share_record_lock_duration_ms=str(LOCK_MS))
    produce(bootstrap, topic, total)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, bootstrap, group, topic],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    accepted: collections.Counter[int] = collections.Counter()
    held: set[int] = set()
    holds = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            word, *offsets = line.split()
            if word == "GOT":
                held = {int(o) for o in offsets}
            elif word == "ACCEPTED":
                accepted.update(int(o) for o in offsets)
            elif word == "HOLD":
                holds += 1
                if holds == 3:
                    break
        # While it holds its last batch, unacknowledged.
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    assert held and not held & set(accepted)

    lock = threading.Lock()
    redelivered: dict[int, int] = {}
    stop = threading.Event()

    def survivor() -> None:
        def on_commit(offsets: dict[TopicPartition, set[int]], exc: Any) -> None:
            if exc is None:
                with lock:
                    accepted.update(offsets[TopicPartition(topic, 0)])

        with consumer(bootstrap, group, max_poll_records=10) as c:
            c.set_acknowledgement_commit_callback(on_commit)
            c.subscribe([topic])
            while not stop.is_set():
                for r in poll_until(c, 1, limit_s=0.2):
                    if r.offset in held:
                        with lock:
                            redelivered[r.offset] = r.delivery_count
                c.commit_sync(timeout_ms=10_000)

    threads = [threading.Thread(target=survivor) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            with lock:
                if set(accepted) >= set(range(total)):
                    break
            time.sleep(0.2)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert set(redelivered) == held and all(n >= 2 for n in redelivered.values())
    assert sorted(accepted) == list(range(total))
    assert set(accepted.values()) == {1}
