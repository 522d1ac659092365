"""The share-group APIs against a real Apache Kafka 4.x broker over a plain socket: the broker
advertises every share API at versions we speak, and a member joins, is described and leaves
with our encodings of ShareGroupHeartbeat and ShareGroupDescribe."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, decode_response, negotiate_version
from tests.helpers import unique_name
from tests.protocol.test_protocol_live import RawClient, api_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SHARE_APIS = (
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
)


@pytest.fixture
def raw(broker: Any) -> Iterator[RawClient]:
    if not broker.is_apache:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    client = RawClient(broker.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


def _ranges(raw: RawClient) -> dict[int, tuple[int, int]]:
    _, ranges = api_versions(raw)
    if ApiKey.SHARE_GROUP_HEARTBEAT not in ranges:
        pytest.skip("this broker has share groups disabled (share.version 0)")
    return ranges


def test_broker_advertises_every_share_api_at_a_version_we_speak(raw: RawClient) -> None:
    ranges = _ranges(raw)
    for key in SHARE_APIS:
        assert key in ranges, f"broker does not advertise {key.name}"
        version = negotiate_version(key, *ranges[key])
        assert version is not None, (key.name, ranges[key], SUPPORTED_VERSIONS[key])
    # Kafka 4.2+ speaks the acquire mode and RENEW acknowledgements (v2).
    assert negotiate_version(ApiKey.SHARE_FETCH, *ranges[ApiKey.SHARE_FETCH]) == 2
    assert negotiate_version(ApiKey.SHARE_ACKNOWLEDGE, *ranges[ApiKey.SHARE_ACKNOWLEDGE]) == 2


def _call(raw: RawClient, ranges: dict[int, tuple[int, int]], key: ApiKey, body: Any) -> Any:
    version = negotiate_version(key, *ranges[key])
    assert version is not None
    return decode_response(key, version, raw.roundtrip(key, version, body))[1]


def _coordinator_ok(raw: RawClient, ranges: dict[int, tuple[int, int]], group: str) -> bool:
    # This test talks to the first bootstrap broker; on a one-node session it coordinates all.
    body = _call(
        raw,
        ranges,
        ApiKey.FIND_COORDINATOR,
        {"key_type": 0, "coordinator_keys": [group]},
    )
    coordinators = body.get("coordinators") or [body]
    return all(c["error_code"] == 0 for c in coordinators)


def test_member_joins_is_described_and_leaves(raw: RawClient, broker: Any) -> None:
    ranges = _ranges(raw)
    group = unique_name("share-live")
    topic = unique_name("share-live-topic")
    member_id = str(uuid.uuid4())
    # The coordinator loads lazily; FindCoordinator until it answers.
    for _ in range(50):
        if _coordinator_ok(raw, ranges, group):
            break
    joined = None
    for _ in range(50):
        joined = _call(
            raw,
            ranges,
            ApiKey.SHARE_GROUP_HEARTBEAT,
            {
                "group_id": group,
                "member_id": member_id,
                "member_epoch": 0,
                "subscribed_topic_names": [topic],
            },
        )
        if joined["error_code"] == 0:
            break
    assert joined is not None and joined["error_code"] == 0, joined
    assert joined["member_epoch"] >= 1
    assert joined["heartbeat_interval_ms"] > 0

    described = _call(
        raw,
        ranges,
        ApiKey.SHARE_GROUP_DESCRIBE,
        {"group_ids": [group], "include_authorized_operations": False},
    )
    (g,) = described["groups"]
    assert g["error_code"] == 0 and g["group_id"] == group
    assert [m["member_id"] for m in g["members"]] == [member_id]
    assert g["members"][0]["subscribed_topic_names"] == [topic]

    left = _call(
        raw,
        ranges,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        {"group_id": group, "member_id": member_id, "member_epoch": -1},
    )
    assert left["error_code"] == 0 and left["member_epoch"] == -1
    described = _call(
        raw,
        ranges,
        ApiKey.SHARE_GROUP_DESCRIBE,
        {"group_ids": [group], "include_authorized_operations": False},
    )
    assert described["groups"][0]["members"] == []
    assert described["groups"][0]["group_state"] == "Empty"
