"""Small request helpers for the network tests (create a topic, produce, fetch) built directly on
ConsumerNetworkClient, so that these tests need no other part of the library."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.record import decode_fetched_records, encode_batch


def request(
    cnc: ConsumerNetworkClient,
    node: int,
    api_key: int,
    body: dict[str, Any],
    timeout_ms: int = 15_000,
) -> dict[str, Any]:
    """Send and wait; raise the future's error."""
    fut: Future[Any] = cnc.send(node, api_key, body)
    cnc.poll(timeout_ms=timeout_ms, future=fut)
    if not fut.is_done:
        raise AssertionError(f"api {api_key} to node {node}: no answer in {timeout_ms} ms")
    if fut.exception is not None:
        raise fut.exception
    value: dict[str, Any] = fut.value
    return value


def any_node(cnc: ConsumerNetworkClient, timeout_ms: int = 15_000) -> int:
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        node = cnc.least_loaded_node()
        if node is not None and cnc.await_ready(node, 1000):
            return node
    raise AssertionError("no broker became ready")


def create_topic(cnc: ConsumerNetworkClient, name: str, partitions: int) -> None:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": 10_000,
        "validate_only": False,
    }
    node = any_node(cnc)
    code = request(cnc, node, ApiKey.CREATE_TOPICS, body)["topics"][0]["error_code"]
    if code == 41 and cnc.metadata is not None:
        # NOT_CONTROLLER (ZooKeeper-mode Kafka): ask the controller the metadata names.
        cnc.await_metadata_update(10_000)
        controller = cnc.metadata.cluster.controller_id
        assert cnc.await_ready(controller, 10_000)
        code = request(cnc, controller, ApiKey.CREATE_TOPICS, body)["topics"][0]["error_code"]
    assert code in (0, 36), f"CreateTopics failed with error {code}"


def produce(
    cnc: ConsumerNetworkClient, node: int, topic: str, partition: int, values: list[bytes]
) -> None:
    batch = encode_batch([(None, v, [], int(time.time() * 1000)) for v in values])
    resp = request(
        cnc,
        node,
        ApiKey.PRODUCE,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        },
    )
    code = resp["responses"][0]["partition_responses"][0]["error_code"]
    assert code == 0, f"Produce failed with error {code}"


def fetch(
    cnc: ConsumerNetworkClient,
    node: int,
    topic: str,
    partition: int,
    offset: int,
    topic_id: uuid.UUID | None,
) -> list[bytes | None]:
    resp = request(
        cnc,
        node,
        ApiKey.FETCH,
        {
            "replica_id": -1,
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "topic_id": topic_id or uuid.UUID(int=0),
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    part = resp["responses"][0]["partitions"][0]
    assert part["error_code"] == 0, f"Fetch failed with error {part['error_code']}"
    result = decode_fetched_records(part["records"], topic, partition, offset)
    return [r.value for r in result.records]
