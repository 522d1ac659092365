"""The consumer group protocol (KIP-848, ``group.protocol=consumer``) on a real broker.

Apache Kafka 4.x assigns; our members heartbeat from their heartbeat threads and reconcile in
``poll()``. Each test checks records end to end: none processed twice, none missed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.consumer_membership_manager import ConsumerMemberState
from kafkaconsumer.internals.group.consumer_protocol_coordinator import ConsumerProtocolCoordinator
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.group.members import (
    Ledger,
    Member,
    churn,
    create_topic,
    expel_killed_member,
    produce,
    stable_split,
    wait_until,
)
from tests.helpers import unique_name
from tests.support.broker_limits import broker_config

pytestmark = pytest.mark.integration

CONSUMER_GROUP_HEARTBEAT = 68
PARTITIONS = 6
PER_PARTITION = 40
#: The longest consumer-protocol heartbeat the churn tests' time bounds allow.
_FAST_HEARTBEAT_MS = 1000


@pytest.fixture
def bootstrap(broker: Any) -> str:
    if not broker.supports(CONSUMER_GROUP_HEARTBEAT):
        pytest.skip(
            f"the {broker.kind} broker does not implement the consumer group protocol "
            "(no ConsumerGroupHeartbeat)"
        )
    return str(broker.bootstrap_servers)


@pytest.fixture
def fast_heartbeats(bootstrap: str) -> None:
    """Skip a test whose time bounds need consumer-protocol heartbeats of about a second: a
    broker whose group.consumer.min.heartbeat.interval.ms is Kafka's default (5 s) hands out
    each new assignment only that often."""
    value = broker_config(bootstrap, "group.consumer.min.heartbeat.interval.ms")
    if value is not None and int(value) > _FAST_HEARTBEAT_MS:
        pytest.skip(
            f"the broker's group.consumer.min.heartbeat.interval.ms is {value} ms; this test "
            f"needs {_FAST_HEARTBEAT_MS} ms or less"
        )


def _all(topic: str, n: int = PARTITIONS) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def _member(
    name: str, bootstrap: str, group: str, topics: Any, ledger: Ledger, **kw: Any
) -> Member:
    return Member(name, bootstrap, group, topics, ledger, group_protocol="consumer", **kw)


def _member_id(m: Member) -> str:
    coordinator = m.consumer._coordinator
    assert coordinator is not None
    return coordinator.member_id()


def _state(m: Member) -> ConsumerMemberState | None:
    coordinator = m.consumer._coordinator
    if not isinstance(coordinator, ConsumerProtocolCoordinator):
        return None
    return coordinator.membership.state


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("fast_heartbeats")
def test_membership_churn_processes_every_record_exactly_once(bootstrap: str) -> None:
    """1 -> 2 -> 3 -> 2 -> 1 members committing in on_partitions_revoked; kept partitions keep
    flowing while others move (only the moving ones are revoked)."""
    topic = create_topic(bootstrap, PARTITIONS)
    produce(bootstrap, topic, PARTITIONS, PER_PARTITION)
    group = unique_name("g848-churn")
    ledger = Ledger()
    everything = _all(topic)
    opts: dict[str, Any] = dict(delay_per_poll_s=0.05, max_poll_records=3)
    expected = {(topic, p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}
    m1 = churn(
        lambda name: _member(name, bootstrap, group, [topic], ledger, **opts),
        ledger,
        expected,
        everything,
    )
    # Incremental: when m2 arrived, m1 gave up only the partitions that moved.
    first_revoke = next(parts for name, parts in m1.listener.snapshot() if name == "revoked")
    assert 0 < len(first_revoke) < PARTITIONS


@pytest.mark.timeout(90)
def test_static_member_restart_keeps_its_partitions(bootstrap: str) -> None:
    topic = create_topic(bootstrap, 4)
    everything = _all(topic, 4)
    group = unique_name("g848-static")
    ledger = Ledger()
    a = _member("a", bootstrap, group, [topic], ledger, group_instance_id="instance-a")
    b = _member("b", bootstrap, group, [topic], ledger, group_instance_id="instance-b")
    members = [a, b]
    try:
        a.start()
        wait_until(lambda: a.assignment() == everything, 30, "a owns everything", members)
        b.start()
        wait_until(lambda: stable_split(members, everything), 30, "a stable split", members)
        kept_a, kept_b = a.assignment(), b.assignment()
        # Close without leaving for good (epoch -2): the broker keeps a's partitions for it.
        a.stop()
        assert a.error is None, a.error
        a2 = _member("a2", bootstrap, group, [topic], ledger, group_instance_id="instance-a")
        members = [a2, b]
        a2.start()
        wait_until(lambda: a2.assignment() == kept_a, 30, "a's partitions back", members)
        assert b.assignment() == kept_b
        assert [n for n, _ in b.listener.snapshot()].count("revoked") == 0
    finally:
        for m in (a, b, *members):
            if m.is_alive():
                m.stop()


@pytest.mark.timeout(90)
def test_poll_interval_expiry_loses_partitions_then_commit_fails_then_rejoins(
    bootstrap: str,
) -> None:
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, 2, 10)
    group = unique_name("g848-poll")
    ledger = Ledger()
    m = _member(
        "m", bootstrap, group, [topic], ledger, max_poll_interval_ms=3000, commit_on_revoke=False
    )
    outcome: dict[str, Any] = {}
    try:
        m.start()
        wait_until(lambda: m.assignment() == _all(topic, 2), 30, "assigned", [m])
        m.paused.set()
        wait_until(
            lambda: _state(m) is ConsumerMemberState.STALE,
            20,
            "the member left after max.poll.interval.ms",
            [m],
        )

        def commit(member: Member) -> None:
            try:
                member.consumer.commit_sync({TopicPartition(topic, 0): OffsetAndMetadata(1)})
            except BaseException as exc:  # noqa: BLE001 - inspected by the test
                outcome["error"] = exc
            outcome["done"] = True

        m.calls_in_thread.append(commit)
        wait_until(lambda: outcome.get("done"), 20, "the commit attempt", [m])
        assert isinstance(outcome.get("error"), Errors.CommitFailedError), outcome
        m.paused.clear()
        wait_until(
            lambda: m.assignment() == _all(topic, 2) and _state(m) is ConsumerMemberState.STABLE,
            30,
            "rejoined",
            [m],
        )
        assert ("lost", sorted(_all(topic, 2))) in [
            (n, sorted(p)) for n, p in m.listener.snapshot()
        ]
    finally:
        m.stop()
    assert m.error is None, m.error


@pytest.mark.timeout(180)
def test_member_killed_without_leaving_is_expelled_after_the_session_timeout(
    bootstrap: str,
) -> None:
    """A member process SIGKILLed (no leave heartbeat) is expelled by the broker after the
    session timeout (group.consumer.session.timeout.ms) and its partitions move."""
    topic = create_topic(bootstrap, 4)
    survivor = _member("a", bootstrap, unique_name("g848-expel"), [topic], Ledger())
    expel_killed_member(survivor, "consumer", _all(topic, 4))


@pytest.mark.timeout(90)
def test_offset_fetch_carries_the_member_epoch(bootstrap: str) -> None:
    """OffsetFetch v9 names the member and its current epoch, and the broker accepts it."""
    import copy

    topic = create_topic(bootstrap, 2)
    group = unique_name("g848-fetch")
    m = _member("m", bootstrap, group, [topic], Ledger())
    coordinator = m.consumer._coordinator
    assert isinstance(coordinator, ConsumerProtocolCoordinator)
    membership = coordinator.membership
    sent: list[tuple[Any, Mapping[str, Any]]] = []
    send = coordinator._send

    def recording(node: int, api_key: int, body: Mapping[str, Any], **kw: Any) -> Any:
        if api_key == 9:
            sent.append((kw.get("version"), copy.deepcopy(body)))
        return send(node, api_key, body, **kw)

    coordinator._send = recording  # type: ignore[method-assign]
    tp0 = TopicPartition(topic, 0)
    outcome: dict[str, Any] = {}

    def commit_then_read(member: Member) -> None:
        member.consumer.commit_sync({tp0: OffsetAndMetadata(7)})
        outcome["epoch"] = membership.member_epoch
        outcome["committed"] = member.consumer.committed({tp0})

    try:
        m.start()
        wait_until(
            lambda: m.assignment() == _all(topic, 2) and _state(m) is ConsumerMemberState.STABLE,
            30,
            "assigned",
            [m],
        )
        m.calls_in_thread.append(commit_then_read)
        wait_until(lambda: "committed" in outcome, 20, "the committed offset read", [m])
    finally:
        m.stop()
    assert m.error is None, m.error
    assert outcome["committed"][tp0].offset == 7
    version, body = sent[-1]
    assert version is not None and version >= 9
    sent_group = body["groups"][0]
    assert sent_group["member_id"] == coordinator.member_id()
    assert sent_group["member_epoch"] == outcome["epoch"] > 0


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("fast_heartbeats")
def test_group_mixing_our_member_with_librdkafka(bootstrap: str) -> None:
    from confluent_kafka import Consumer

    topic = create_topic(bootstrap, 4)
    everything = _all(topic, 4)
    produce(bootstrap, topic, 4, 30)
    group = unique_name("g848-mixed")
    ledger = Ledger()
    ours = _member(
        "ours", bootstrap, group, [topic], ledger, delay_per_poll_s=0.05, max_poll_records=2
    )
    seen: list[tuple[str, int, int]] = []
    rd_assignment: set[TopicPartition] = set()
    stop = threading.Event()
    lock = threading.Lock()

    def librdkafka_member() -> None:
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([topic])
        try:
            while not stop.is_set():
                msg = c.poll(0.1)
                with lock:
                    rd_assignment.clear()
                    rd_assignment.update(
                        TopicPartition(t.topic, t.partition) for t in c.assignment()
                    )
                if msg is None or msg.error():
                    continue
                msg_topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
                # A message without an error always names its place.
                assert msg_topic is not None and partition is not None and offset is not None
                seen.append((msg_topic, partition, offset))
                c.commit(message=msg, asynchronous=False)
                time.sleep(0.05)
        finally:
            c.close()

    rd = threading.Thread(target=librdkafka_member, daemon=True)
    try:
        ours.start()
        wait_until(lambda: ours.assignment() == everything, 30, "ours owns everything", [ours])
        rd.start()

        def split() -> bool:
            with lock:
                theirs = set(rd_assignment)
            mine = ours.assignment()
            return (
                bool(mine) and bool(theirs) and not (mine & theirs) and mine | theirs == everything
            )

        wait_until(split, 40, "a split between our member and librdkafka's", [ours])
        wait_until(lambda: len(seen) > 0, 30, "librdkafka processes", [ours])
        stop.set()
        rd.join(20)
        wait_until(
            lambda: ours.assignment() == everything, 40, "ours owns everything again", [ours]
        )
        ours.delay_per_poll_s = 0.0
        wait_until(
            lambda: len(ledger.distinct() | set(seen)) >= 4 * 30,
            60,
            "every record processed",
            [ours],
        )
    finally:
        stop.set()
        ours.stop()
    assert ours.error is None, ours.error
    processed = list(ledger.distinct()) + seen
    assert len(processed) == len(set(processed)), "a record processed twice"
    assert not ledger.duplicates()
    assert set(processed) == {(topic, p, o) for p in range(4) for o in range(30)}


@pytest.mark.timeout(150)
def test_online_upgrade_of_a_classic_group_loses_nothing(bootstrap: str) -> None:
    topic = create_topic(bootstrap, 4)
    everything = _all(topic, 4)
    produce(bootstrap, topic, 4, 60)
    group = unique_name("g848-upgrade")
    ledger = Ledger()
    opts: dict[str, Any] = dict(delay_per_poll_s=0.05, max_poll_records=2)
    a = Member("a", bootstrap, group, [topic], ledger, strategy="cooperative-sticky", **opts)
    b = Member("b", bootstrap, group, [topic], ledger, strategy="cooperative-sticky", **opts)
    members = [a, b]
    try:
        a.start()
        b.start()
        wait_until(lambda: stable_split(members, everything), 40, "a classic split", members)
        for old, name in ((a, "a2"), (b, "b2")):
            old.stop()
            assert old.error is None, old.error
            new = _member(name, bootstrap, group, [topic], ledger, **opts)
            members = [m for m in members if m is not old] + [new]
            new.start()
            wait_until(
                lambda ms=members: stable_split(ms, everything),  # type: ignore[misc]
                40,
                f"a split with {name} on the consumer protocol",
                members,
            )
        for m in members:
            m.delay_per_poll_s = 0.0
        wait_until(lambda: len(ledger.distinct()) >= 4 * 60, 60, "every record processed", members)
    finally:
        for m in (a, b, *members):
            if m.is_alive():
                m.stop()
    assert all(m.error is None for m in members), [m.error for m in members]
    assert ledger.duplicates() == []
    assert ledger.distinct() == {(topic, p, o) for p in range(4) for o in range(60)}


def _record_heartbeats(m: Member) -> list[dict[str, Any]]:
    """Every ConsumerGroupHeartbeat body ``m`` builds from now on (joins and deltas)."""
    coordinator = m.consumer._coordinator
    assert isinstance(coordinator, ConsumerProtocolCoordinator)
    membership = coordinator.membership
    sent: list[dict[str, Any]] = []
    build = membership.build_heartbeat

    def recording(topics: Any, regex: Any) -> dict[str, Any]:
        body = build(topics, regex)
        sent.append(dict(body))
        return body

    membership.build_heartbeat = recording  # type: ignore[method-assign]
    return sent


@pytest.mark.timeout(90)
@pytest.mark.parametrize("where", ["broker", "client"])
def test_pattern_subscription_picks_up_a_new_topic(bootstrap: str, where: str) -> None:
    """On Kafka 4.x the broker matches the regex (SubscribedTopicRegex) and assigns a new
    matching topic without the member sending names; a pattern RE2 cannot read (here a
    look-ahead) is matched by the client, which sends the names it matched."""
    import re

    prefix = unique_name("g848pat")
    first = create_topic(bootstrap, 2, name=f"{prefix}-a")
    group = unique_name("g848-pattern")
    ledger = Ledger()
    source = re.escape(prefix) + "-.*" if where == "broker" else re.escape(prefix) + "-(?!x).*"
    m = _member("m", bootstrap, group, re.compile(source), ledger, metadata_max_age_ms=500)
    sent = _record_heartbeats(m)
    try:
        m.start()
        wait_until(lambda: m.assignment() == _all(first, 2), 30, "the first topic", [m])
        second = create_topic(bootstrap, 2, name=f"{prefix}-b")
        produce(bootstrap, second, 2, 5)
        wait_until(
            lambda: m.assignment() == _all(first, 2) | _all(second, 2),
            40,
            "the new topic assigned",
            [m],
        )
        wait_until(lambda: ledger.count("m") >= 10, 30, "its records", [m])
    finally:
        m.stop()
    assert m.error is None, m.error
    joins = [b for b in sent if b["member_epoch"] == 0]
    assert joins, sent
    names = [b["subscribed_topic_names"] for b in sent if b.get("subscribed_topic_names")]
    if where == "broker":
        assert all(b["subscribed_topic_regex"] == source for b in joins), [
            (b.get("subscribed_topic_names"), b.get("subscribed_topic_regex")) for b in joins
        ]
        assert names == [], "the member sent topic names with a broker-side regex"
    else:
        assert all(b.get("subscribed_topic_regex") is None for b in sent)
        assert names[-1] == sorted([first, second])


@pytest.mark.timeout(120)
def test_kip983_async_processing_exactly_once(bootstrap: str) -> None:
    """Records are processed on a worker; revocations wait (delay_revoke) until the worker has
    finished and committed the partitions that leave. Nothing is processed twice or missed."""
    topic = create_topic(bootstrap, 4)
    everything = _all(topic, 4)
    produce(bootstrap, topic, 4, 50)
    group = unique_name("g848-kip983")
    ledger = Ledger()

    def processing(member: Member, records: Any) -> None:
        consumer = member.consumer
        pending = consumer.to_be_revoked()
        # "Asynchronous" work: each poll's records are finished one poll later.
        done = member.__dict__.setdefault("in_flight", [])
        finished = list(done)
        done.clear()
        done.extend(records)
        if finished:
            offsets: dict[TopicPartition, OffsetAndMetadata] = {}
            for r in finished:
                tp = TopicPartition(r.topic, r.partition)
                if tp in consumer.lost_partitions():
                    continue
                offsets[tp] = OffsetAndMetadata(r.offset + 1)
            ledger.add(member.member_name + "-done", finished)
            if offsets:
                consumer.commit_sync(offsets)
        if pending:
            outstanding = {TopicPartition(r.topic, r.partition) for r in done}
            if outstanding & pending:
                consumer.delay_revoke(outstanding & pending)

    opts: dict[str, Any] = dict(
        delay_per_poll_s=0.02, max_poll_records=5, on_poll=processing, commit_on_revoke=False
    )
    a = _member("a", bootstrap, group, [topic], Ledger(), **opts)
    b = _member("b", bootstrap, group, [topic], Ledger(), **opts)
    try:
        a.start()
        wait_until(lambda: a.assignment() == everything, 30, "a owns everything", [a])
        b.start()
        wait_until(lambda: stable_split([a, b], everything), 40, "a stable split", [a, b])
        wait_until(lambda: len(ledger.distinct()) >= 4 * 50 - 10, 60, "most records", [a, b])
        b.stop()
        wait_until(lambda: len(ledger.distinct()) >= 4 * 50, 60, "every record", [a])
    finally:
        for m in (a, b):
            if m.is_alive():
                m.stop()
    assert a.error is None and b.error is None, (a.error, b.error)
    assert ledger.duplicates() == []
    assert ledger.distinct() == {(topic, p, o) for p in range(4) for o in range(50)}


@pytest.mark.timeout(60)
def test_broker_without_the_protocol_raises_at_the_first_poll(broker: Any) -> None:
    from kafkaconsumer.consumer import KafkaConsumer

    if broker.supports(CONSUMER_GROUP_HEARTBEAT):
        pytest.skip("this broker implements the consumer group protocol")
    topic = create_topic(broker.bootstrap_servers, 1)
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": unique_name("g848-old"),
            "group.protocol": "consumer",
        }
    )
    try:
        consumer.subscribe([topic])
        with pytest.raises(Errors.UnsupportedVersionError, match="group.protocol"):
            for _ in range(50):
                consumer.poll(200)
    finally:
        consumer.close()


@pytest.mark.timeout(90)
def test_admin_describes_consumer_and_classic_groups(bootstrap: str) -> None:
    from kafkaconsumer.admin import KafkaAdminClient

    topic = create_topic(bootstrap, 4)
    everything = _all(topic, 4)
    ledger = Ledger()
    group = unique_name("g848-describe")
    classic_group = unique_name("g848-describe-classic")
    a = _member("a", bootstrap, group, [topic], ledger, group_remote_assignor="uniform")
    b = _member("b", bootstrap, group, [topic], ledger, group_remote_assignor="uniform")
    c = Member("c", bootstrap, classic_group, [topic], ledger)
    admin = KafkaAdminClient({"bootstrap.servers": bootstrap})
    try:
        for m in (a, b, c):
            m.start()
        wait_until(
            lambda: stable_split([a, b], everything) and c.assignment() == everything,
            40,
            "both groups stable",
            [a, b, c],
        )

        def settled() -> bool:
            d = admin.describe_groups([group])[group]
            return len(d.members) == 2 and all(
                m.assignment == m.target_assignment and m.assignment for m in d.members
            )

        wait_until(settled, 30, "the broker sees both members reconciled", [a, b])
        both = admin.describe_groups([group, classic_group])
        d = both[group]
        assert (d.type, d.state, d.protocol) == ("consumer", "Stable", "uniform")
        assert d.group_epoch is not None and d.group_epoch > 0
        assert all(m.member_epoch is not None and m.member_epoch > 0 for m in d.members)
        assert set().union(*(set(m.assignment) for m in d.members)) == everything
        ids = {m.member_id for m in d.members}
        assert ids == {_member_id(x) for x in (a, b)}
        classic = both[classic_group]
        assert (classic.type, classic.state) == ("classic", "Stable")
        assert [set(m.assignment) for m in classic.members] == [everything]
    finally:
        admin.close()
        for m in (a, b, c):
            if m.is_alive():
                m.stop()
