"""ShareFetch and ShareAcknowledge through the share consume request manager against Apache
Kafka 4.4: a member (joined with ShareGroupHeartbeat) receives only acquired records with their
delivery counts; RELEASE redelivers with the count raised, REJECT and ACCEPT never redeliver;
acknowledgements piggybacked on fetches and sent alone both settle without error; closing the
session works."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.protocol import ApiKey
from tests.helpers import unique_name
from tests.share.member import Member, by_node, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

GROUP_RESOURCE = 32


@pytest.fixture
def apache(broker: Any) -> Any:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    return broker


@pytest.fixture
def setup(apache: Any) -> Iterator[tuple[Member, str]]:
    topic, group = unique_name("share-fetch"), unique_name("share-fetch-g")
    with KafkaAdminClient(bootstrap_servers=apache.bootstrap_servers) as admin:
        admin.create_topics({topic: 1})
    produce(apache.bootstrap_servers, topic, 10)
    member = Member(apache.bootstrap_servers, group, topic)
    # Share groups start at the latest offset unless the group says otherwise.
    node = member.metadata.fetch().brokers()[0].node_id
    altered = member.call(
        node,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": group,
                    "configs": [
                        {
                            "name": "share.auto.offset.reset",
                            "config_operation": 0,
                            "value": "earliest",
                        }
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    assert altered["responses"][0]["error_code"] == 0, altered
    member.join()
    try:
        yield member, topic
    finally:
        member.leave()


def test_release_redelivers_with_a_higher_count_and_accept_settles(
    setup: tuple[Member, str],
) -> None:
    member, _topic = setup
    first = member.fetch(want=10)
    assert sorted(r.offset for _n, r in first) == list(range(10))
    assert {r.delivery_count for _n, r in first} == {1}
    assert sorted(r.value for _n, r in first) == sorted(b"v%d" % i for i in range(10))
    assert member.manager.acquisition_lock_timeout_ms()

    released = [p for p in first if p[1].offset < 5]
    acks = by_node(released, AcknowledgeType.RELEASE)
    for node, parts in by_node(
        [p for p in first if p[1].offset >= 5], AcknowledgeType.ACCEPT
    ).items():
        for tp, a in parts.items():
            acks.setdefault(node, {}).setdefault(tp, Acknowledgements()).merge(a)
    again = member.fetch(acks, want=5)
    settled = member.manager.take_completed_acknowledgements()
    assert settled and all(a.error_code == 0 for _tp, a in settled)
    assert sorted(r.offset for _n, r in again) == [0, 1, 2, 3, 4]
    assert {r.delivery_count for _n, r in again} == {2}

    # Reject one, accept the rest on their own (ShareAcknowledge): nothing comes back.
    acks = by_node([p for p in again if p[1].offset != 0], AcknowledgeType.ACCEPT)
    for node, parts in by_node(
        [p for p in again if p[1].offset == 0], AcknowledgeType.REJECT
    ).items():
        for tp, a in parts.items():
            acks.setdefault(node, {}).setdefault(tp, Acknowledgements()).merge(a)
    settled = member.settle(acks)
    assert settled and all(a.error_code == 0 for _tp, a in settled)
    assert member.fetch(want=1)[:1] == []

    member.manager.send_acknowledgements({}, close=True)
    assert member.manager.has_in_flight()  # the closing ShareAcknowledge
    for _ in range(600):
        if not member.manager.has_in_flight():
            break
        member.client.poll(timeout_ms=50)
    assert not member.manager.has_in_flight()
    assert member.manager.send_fetches({}) == 0
