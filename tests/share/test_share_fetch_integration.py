"""ShareFetch and ShareAcknowledge through the share consume request manager against Apache
Kafka 4.4: a member (joined with ShareGroupHeartbeat) receives only acquired records with their
delivery counts; RELEASE redelivers with the count raised, REJECT and ACCEPT never redeliver;
acknowledgements piggybacked on fetches and sent alone both settle without error; closing the
session works."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.internals.fetch.share_completed_fetch import ShareConsumerRecord
from kafkaconsumer.internals.fetch.share_consume_request_manager import (
    ShareConsumeRequestManager,
    ShareFetchConfig,
)
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

GROUP_RESOURCE = 32


@pytest.fixture
def apache(broker: Any) -> Any:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    return broker


class Member:
    """A share-group member driven by hand: joins with ShareGroupHeartbeat, fetches with the
    request manager, leaves."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        cfg = ConsumerConfig({"bootstrap.servers": bootstrap})
        self.metadata = ConsumerMetadata(cfg)
        self.metadata.set_topics([topic])
        net = NetworkClient(NetworkSettings.from_config(cfg), metadata=self.metadata)
        self.client = ConsumerNetworkClient(net, self.metadata)
        self.client.await_metadata_update(30_000)
        self.group, self.topic = group, topic
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.manager = ShareConsumeRequestManager(
            self.client, self.metadata, ShareFetchConfig(group_id=group, max_wait_ms=200)
        )
        self.manager.member_id = self.member_id
        self.coordinator = self._find_coordinator()

    def call(self, node: int, key: int, body: dict[str, Any]) -> Any:
        future = self.client.send(node, key, body)
        self.client.poll(timeout_ms=30_000, future=future)
        assert future.succeeded(), future.exception
        return future.value

    def _find_coordinator(self) -> int:
        node = self.metadata.fetch().brokers()[0].node_id
        for _ in range(100):
            body = self.call(
                node, ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [self.group]}
            )
            (c,) = body["coordinators"]
            if c["error_code"] == 0:
                return int(c["node_id"])
            self.client.poll(timeout_ms=100)
        raise AssertionError("no coordinator")

    def heartbeat(self, **extra: Any) -> Any:
        body = {
            "group_id": self.group,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            **extra,
        }
        response = self.call(self.coordinator, ApiKey.SHARE_GROUP_HEARTBEAT, body)
        assert response["error_code"] == 0, response
        self.epoch = response["member_epoch"]
        return response

    def join(self) -> None:
        response = self.heartbeat(subscribed_topic_names=[self.topic])
        for _ in range(100):
            assignment = response["assignment"]
            if assignment and assignment["topic_partitions"]:
                cluster = self.metadata.fetch()
                self.manager.set_assignment(
                    TopicPartition(str(cluster.topic_name(tp["topic_id"])), p)
                    for tp in assignment["topic_partitions"]
                    for p in tp["partitions"]
                )
                return
            self.client.poll(timeout_ms=100)
            response = self.heartbeat()
        raise AssertionError("no assignment")

    def fetch(self, acks: Any = None, want: int = 1) -> list[tuple[int, ShareConsumerRecord]]:
        """Fetch until at least ``want`` records arrived (bounded); ``(node, record)`` pairs."""
        out: list[tuple[int, ShareConsumerRecord]] = []
        pending = acks or {}
        for _ in range(40):
            self.manager.send_fetches(pending)
            pending = {}
            for _ in range(100):
                if not self.manager.has_in_flight():
                    break
                self.client.poll(timeout_ms=50)
            for cf in self.manager.take_completed_fetches():
                batch = cf.fetch_records(1000)
                assert batch.error is None
                out.extend((cf.node, r) for r in batch.records)
            if len(out) >= want:
                return out
        return out

    def leave(self) -> None:
        self.call(
            self.coordinator,
            ApiKey.SHARE_GROUP_HEARTBEAT,
            {"group_id": self.group, "member_id": self.member_id, "member_epoch": -1},
        )
        self.client.close()


@pytest.fixture
def setup(apache: Any) -> Iterator[tuple[Member, str]]:
    topic, group = unique_name("share-fetch"), unique_name("share-fetch-g")
    with KafkaAdminClient(bootstrap_servers=apache.bootstrap_servers) as admin:
        admin.create_topics({topic: 1})
    with KafkaProducer(bootstrap_servers=apache.bootstrap_servers) as producer:
        for i in range(10):
            producer.send(topic, b"v%d" % i, partition=0)
        producer.flush(timeout_ms=30_000)
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


def by_node(pairs: list[tuple[int, ShareConsumerRecord]], ack_type: AcknowledgeType) -> Any:
    out: dict[int, dict[TopicPartition, Acknowledgements]] = {}
    for node, r in pairs:
        acks = out.setdefault(node, {}).setdefault(
            TopicPartition(r.topic, r.partition), Acknowledgements()
        )
        acks.add(r.offset, ack_type)
    return out


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
    futures = member.manager.send_acknowledgements(acks)
    for f in futures:
        member.client.poll(timeout_ms=30_000, future=f)
    settled = member.manager.take_completed_acknowledgements()
    assert settled and all(a.error_code == 0 for _tp, a in settled)
    assert member.fetch(want=1)[:1] == []

    futures = member.manager.send_acknowledgements({}, close=True)
    assert futures
    for f in futures:
        member.client.poll(timeout_ms=30_000, future=f)
        assert f.succeeded()
