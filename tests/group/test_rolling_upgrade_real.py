"""The whole rolling upgrade from the eager protocol to cooperative rebalancing, on Apache Kafka
(Tansu 0.6 refuses a member that does not list the group's current assignor).

Java's procedure (KIP-429): members start with ``[range]``; a first rolling bounce restarts each
with ``[cooperative-sticky, range]`` (still eager while any member lists only an eager assignor;
cooperative-sticky is chosen once every member supports it); a second bounce restarts each with
``[cooperative-sticky]`` alone, after which rebalances are cooperative. Three members consume all
along; no record is lost, none is processed twice unless a stopped member's last commit met a
rebalance in progress, and the group ends on cooperative-sticky.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.errors import RebalanceInProgressError
from kafkaconsumer.structs import TopicPartition
from tests.group.members import Ledger, Member, create_topic, produce, stable_split, wait_until
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PARTITIONS = 4
PER_PARTITION = 600


def _protocol(bootstrap: str, group: str) -> str:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    return str(description.partition_assignor)


def test_rolling_upgrade_from_range_to_cooperative_sticky(broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip(
            "Tansu 0.6 answers INCONSISTENT_GROUP_PROTOCOL to a member that does not list "
            "the group's current assignor (Kafka accepts any common one)"
        )
    bootstrap = broker.bootstrap_servers
    topic = create_topic(bootstrap, PARTITIONS, prefix="upg")
    produce(bootstrap, topic, PARTITIONS, PER_PARTITION)
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    group = unique_name("g-upgrade")
    ledger = Ledger()
    slow: dict[str, Any] = dict(delay_per_poll_s=0.05, max_poll_records=3)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("range", {}),
        ("cooperative-sticky,range", {}),
        ("cooperative-sticky", {"cooperative_rejoin_delay_ms": 1000}),
    ]
    members = [
        Member(f"m{i}-0", bootstrap, group, [topic], ledger, strategy=steps[0][0], **slow)
        for i in range(3)
    ]
    everyone = list(members)
    protocols: list[str] = []
    try:
        for m in members:
            m.start()
        wait_until(lambda: stable_split(members, everything), 60, "the eager group", members)
        protocols.append(_protocol(bootstrap, group))
        for step, (strategy, extra) in enumerate(steps[1:], start=1):
            for i in range(3):
                old = members[i]
                old.stop()
                assert old.error is None, old.error
                new = Member(
                    f"m{i}-{step}",
                    bootstrap,
                    group,
                    [topic],
                    ledger,
                    strategy=strategy,
                    **slow,
                    **extra,
                )
                members[i] = new
                everyone.append(new)
                new.start()
                wait_until(
                    lambda: stable_split(members, everything),
                    60,
                    f"a stable group after {new.member_name} joined",
                    members,
                )
                before = ledger.count(new.member_name)
                wait_until(
                    lambda n=new.member_name, c=before: ledger.count(n) > c,  # type: ignore[misc]
                    30,
                    f"{new.member_name} processes",
                    members,
                )
            protocols.append(_protocol(bootstrap, group))
        for m in members:
            m.delay_per_poll_s = 0.0
        wait_until(
            lambda: len(ledger.distinct()) >= PARTITIONS * PER_PARTITION,
            90,
            "every record processed",
            members,
        )
    finally:
        for m in members:
            if m.is_alive():
                m.stop()
    # A member stopped while the group is still rebalancing cannot commit its last records
    # (REBALANCE_IN_PROGRESS, as Java's commitSync); another member then processes them again:
    # at-least-once. Anything else is a failure, and without such a commit nothing comes twice.
    unsure = [m for m in everyone if isinstance(m.error, RebalanceInProgressError)]
    assert all(m.error is None or m in unsure for m in everyone), [
        m.error for m in everyone if m.error
    ]
    assert protocols == ["range", "cooperative-sticky", "cooperative-sticky"]
    if not unsure:
        assert ledger.duplicates() == []
    assert ledger.distinct() == {
        (topic, p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)
    }
