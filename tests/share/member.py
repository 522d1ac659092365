"""A share-group member driven by hand for the share tests: it joins with ShareGroupHeartbeat,
fetches and acknowledges with the share consume request manager, and leaves."""

from __future__ import annotations

import uuid
from typing import Any

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

__all__ = ["Member", "by_node", "produce"]


def produce(bootstrap: str, topic: str, count: int, timestamp_ms: int | None = None) -> None:
    """Write ``count`` records ``v0``, ``v1``, ... to partition 0 of ``topic``."""
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        for i in range(count):
            producer.send(
                topic,
                b"v%d" % i,
                partition=0,
                timestamp_ms=None if timestamp_ms is None else timestamp_ms + i,
            )
        producer.flush(timeout_ms=30_000)


def by_node(
    pairs: list[tuple[int, ShareConsumerRecord]], ack_type: AcknowledgeType
) -> dict[int, dict[TopicPartition, Acknowledgements]]:
    """Acknowledgements of ``ack_type`` for ``(node, record)`` pairs, by delivering node."""
    out: dict[int, dict[TopicPartition, Acknowledgements]] = {}
    for node, r in pairs:
        acks = out.setdefault(node, {}).setdefault(
            TopicPartition(r.topic, r.partition), Acknowledgements()
        )
        acks.add(r.offset, ack_type)
    return out


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

    def settle(self, acks: dict[int, dict[TopicPartition, Acknowledgements]]) -> list[Any]:
        """Send ``acks`` in ShareAcknowledge requests and wait; the settled acknowledgements."""
        handed = self.manager.send_acknowledgements(acks)
        for _ in range(600):
            if all(a.completed for a in handed):
                break
            self.client.poll(timeout_ms=50)
        return self.manager.take_completed_acknowledgements()
