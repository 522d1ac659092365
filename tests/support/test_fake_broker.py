"""Tests of the scripted fake broker itself, through plain sockets and our protocol functions."""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    RequestHeader,
    decode_response,
    encode_request,
)
from kafkaconsumer.record import decode_fetched_records, encode_batch
from tests.support.fake_broker import (
    DEFAULT_API_VERSIONS,
    FakeCluster,
    Reply,
    error_body,
    fit_body,
    response_frame,
)

pytestmark = pytest.mark.timeout(30)


class Client:
    """A blocking test client speaking the wire protocol over one socket."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send(
        self, api_key: int, version: int, body: dict[str, Any], client_id: str = "test"
    ) -> int:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, client_id, body))
        return self.correlation_id

    def _read_exact(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("connection closed by the fake broker")
            data += chunk
        return bytes(data)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read_exact(4))
        return self._read_exact(size)

    def recv(self, api_key: int, version: int) -> tuple[int, dict[str, Any]]:
        return decode_response(api_key, version, self.recv_frame())

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        correlation_id = self.send(api_key, version, body)
        got, response = self.recv(api_key, version)
        assert got == correlation_id
        return response

    def at_eof(self) -> bool:
        """True when the broker closed the connection (waits up to the socket timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def readable_now(self) -> bool:
        return bool(select.select([self.sock], [], [], 0)[0])


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=2, topics={"t": 3}) as c:
        yield c


@pytest.fixture
def client(cluster: FakeCluster) -> Iterator[Client]:
    c = Client(cluster.broker(0).address)
    yield c
    c.close()


def _join(client: Client, group: str = "g", version: int = 9, **extra: Any) -> dict[str, Any]:
    body = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 30000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"sub"}],
    }
    body.update(extra)
    return client.call(ApiKey.JOIN_GROUP, version, body)


def _join_and_sync(client: Client, group: str = "g") -> tuple[str, int]:
    first = _join(client, group)
    assert first["error_code"] == 79  # MEMBER_ID_REQUIRED
    joined = _join(client, group, member_id=first["member_id"])
    assert joined["error_code"] == 0
    member, generation = joined["member_id"], joined["generation_id"]
    synced = client.call(
        ApiKey.SYNC_GROUP,
        5,
        {
            "group_id": group,
            "generation_id": generation,
            "member_id": member,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": b"asg"}],
        },
    )
    assert synced["error_code"] == 0
    return member, generation


# ------------------------------------------------------------------------- defaults


def test_api_versions_default_and_override(cluster: FakeCluster, client: Client) -> None:
    body = client.call(
        ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
    )
    assert body["error_code"] == 0
    assert {
        k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]
    } == DEFAULT_API_VERSIONS
    # Every API we implement but client telemetry, as a broker without a telemetry receiver.
    assert set(SUPPORTED_VERSIONS) - set(DEFAULT_API_VERSIONS) == {71, 72}

    cluster.set_api_versions({18: (0, 3), 3: (0, 9)}, node_id=0)
    body = client.call(ApiKey.API_VERSIONS, 0, {})
    assert {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]} == {
        18: (0, 3),
        3: (0, 9),
    }
    other = Client(cluster.broker(1).address)
    try:
        body = other.call(ApiKey.API_VERSIONS, 0, {})
        assert len(body["api_keys"]) == len(DEFAULT_API_VERSIONS)
    finally:
        other.close()


def test_api_versions_too_new_gets_v0_unsupported_version(client: Client) -> None:
    # ApiVersions v99: header v2 (flexible), empty tagged sections; our protocol cannot encode it.
    client_id = b"test"
    payload = struct.pack(">hhih", 18, 99, 42, len(client_id)) + client_id + b"\x00" + b"\x00"
    client.sock.sendall(struct.pack(">i", len(payload)) + payload)
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, client.recv_frame())
    assert correlation_id == 42
    assert body["error_code"] == 35
    assert {k["api_key"] for k in body["api_keys"]} == set(DEFAULT_API_VERSIONS)


def test_metadata_lists_brokers_topics_and_leaders(cluster: FakeCluster, client: Client) -> None:
    body = client.call(ApiKey.METADATA, 12, {"topics": None})
    assert sorted((b["node_id"], b["port"]) for b in body["brokers"]) == sorted(
        (b.node_id, b.port) for b in cluster.brokers
    )
    assert body["cluster_id"] == "fake-cluster"
    assert body["controller_id"] == 0
    (topic,) = body["topics"]
    assert topic["name"] == "t" and topic["error_code"] == 0
    assert topic["topic_id"] == cluster.topic_id("t")
    assert [(p["partition_index"], p["leader_id"]) for p in topic["partitions"]] == [
        (0, 0),
        (1, 1),
        (2, 0),
    ]

    body = client.call(ApiKey.METADATA, 1, {"topics": [{"name": "t"}, {"name": "nope"}]})
    assert [(t["name"], t["error_code"]) for t in body["topics"]] == [("t", 0), ("nope", 3)]

    body = client.call(
        ApiKey.METADATA, 12, {"topics": [{"topic_id": cluster.topic_id("t"), "name": None}]}
    )
    assert body["topics"][0]["name"] == "t"
    body = client.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": uuid.uuid4(), "name": None}]})
    assert body["topics"][0]["error_code"] == 100  # UNKNOWN_TOPIC_ID


def test_metadata_after_leader_move_and_broker_death(cluster: FakeCluster, client: Client) -> None:
    cluster.set_leader("t", 1, 0)
    assert cluster.leader("t", 1) == (0, 1)
    body = client.call(ApiKey.METADATA, 9, {"topics": [{"name": "t"}]})
    part = body["topics"][0]["partitions"][1]
    assert (part["leader_id"], part["leader_epoch"]) == (0, 1)

    cluster.set_leader("t", 1, 1)
    cluster.kill(1)
    body = client.call(ApiKey.METADATA, 9, {"topics": [{"name": "t"}]})
    assert [b["node_id"] for b in body["brokers"]] == [0]
    part = body["topics"][0]["partitions"][1]
    assert (part["error_code"], part["leader_id"]) == (5, -1)  # LEADER_NOT_AVAILABLE


def test_metadata_auto_create() -> None:
    with FakeCluster(auto_create_topics=True, auto_create_partitions=2) as cluster:
        client = Client(cluster.bootstrap_servers)
        try:
            body = client.call(
                ApiKey.METADATA, 9, {"topics": [{"name": "new"}], "allow_auto_topic_creation": True}
            )
            assert len(body["topics"][0]["partitions"]) == 2
            assert cluster.leader("new", 1) == (0, 0)
        finally:
            client.close()


def test_find_coordinator_old_and_batched_and_moves(cluster: FakeCluster, client: Client) -> None:
    body = client.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
    assert (body["error_code"], body["node_id"], body["port"]) == (0, 0, cluster.broker(0).port)
    cluster.coordinator_id = 1
    body = client.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g", "h"]})
    assert [(c["key"], c["node_id"], c["port"]) for c in body["coordinators"]] == [
        ("g", 1, cluster.broker(1).port),
        ("h", 1, cluster.broker(1).port),
    ]
    cluster.kill(1)
    body = client.call(ApiKey.FIND_COORDINATOR, 0, {"key": "g"})
    assert body["error_code"] == 15  # COORDINATOR_NOT_AVAILABLE


# ------------------------------------------------------------------------- group coordinator


def test_group_lifecycle(cluster: FakeCluster, client: Client) -> None:
    member, generation = _join_and_sync(client)
    state = cluster.group_state("g")
    assert (state["state"], state["leader"], state["generation"]) == ("Stable", member, generation)
    assert state["members"] == {member: {"group_instance_id": None, "assignment": b"asg"}}

    hb = {"group_id": "g", "generation_id": generation, "member_id": member}
    assert client.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 0
    assert (
        client.call(ApiKey.HEARTBEAT, 4, dict(hb, generation_id=generation - 1))["error_code"] == 22
    )
    assert client.call(ApiKey.HEARTBEAT, 4, dict(hb, member_id="other"))["error_code"] == 25

    commit = client.call(
        ApiKey.OFFSET_COMMIT,
        8,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": generation,
            "member_id": member,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 5,
                            "committed_leader_epoch": 2,
                            "committed_metadata": "m",
                        }
                    ],
                }
            ],
        },
    )
    assert commit["topics"][0]["partitions"][0] == {"partition_index": 0, "error_code": 0}
    assert cluster.committed("g") == {("t", 0): (5, 2, "m")}

    old = client.call(
        ApiKey.OFFSET_FETCH,
        7,
        {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
    )
    assert [
        (p["partition_index"], p["committed_offset"], p["committed_leader_epoch"], p["metadata"])
        for p in old["topics"][0]["partitions"]
    ] == [(0, 5, 2, "m"), (1, -1, -1, "")]
    batched = client.call(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topics": None}]})
    assert batched["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 5

    cluster.trigger_rebalance("g")
    assert client.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 27
    rejoined = _join(client, member_id=member)
    assert rejoined["generation_id"] == generation + 1

    left = client.call(ApiKey.LEAVE_GROUP, 5, {"group_id": "g", "members": [{"member_id": member}]})
    assert left["members"] == [{"member_id": member, "group_instance_id": None, "error_code": 0}]
    assert cluster.group_state("g")["state"] == "Empty"
    assert client.call(ApiKey.HEARTBEAT, 0, hb)["error_code"] == 25


def test_old_join_version_needs_no_member_id_round_trip(client: Client) -> None:
    joined = _join(client, version=3)
    assert joined["error_code"] == 0
    assert joined["leader"] == joined["member_id"] != ""
    assert joined["members"][0]["metadata"] == b"sub"


def test_simple_commit_without_membership(cluster: FakeCluster, client: Client) -> None:
    body = client.call(
        ApiKey.OFFSET_COMMIT,
        2,
        {
            "group_id": "solo",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 2, "committed_offset": 9}]}
            ],
        },
    )
    assert body["topics"][0]["partitions"][0]["error_code"] == 0
    assert cluster.committed("solo") == {("t", 2): (9, -1, "")}


def test_group_apis_on_other_node_get_not_coordinator(cluster: FakeCluster) -> None:
    cluster.coordinator_id = 1
    client = Client(cluster.broker(0).address)
    try:
        assert _join(client)["error_code"] == 16
        body = client.call(
            ApiKey.OFFSET_COMMIT,
            8,
            {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 1}]}]},
        )
        assert body["topics"][0]["partitions"][0] == {"partition_index": 1, "error_code": 16}
        body = client.call(ApiKey.OFFSET_FETCH, 5, {"group_id": "g", "topics": None})
        assert body["error_code"] == 16
    finally:
        client.close()


def test_describe_list_delete_groups(cluster: FakeCluster, client: Client) -> None:
    member, _ = _join_and_sync(client)
    described = client.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g", "none"]})
    g, none = described["groups"]
    assert (g["group_state"], g["protocol_type"], g["protocol_data"]) == (
        "Stable",
        "consumer",
        "range",
    )
    assert g["members"][0]["member_id"] == member
    assert g["members"][0]["client_id"] == "test"
    assert g["members"][0]["member_assignment"] == b"asg"
    assert none["group_state"] == "Dead"

    listed = client.call(ApiKey.LIST_GROUPS, 4, {"states_filter": ["Stable"]})
    assert [(x["group_id"], x["group_state"]) for x in listed["groups"]] == [("g", "Stable")]
    deleted = client.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g", "none"]})
    assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [
        ("g", 68),
        ("none", 69),
    ]
    client.call(ApiKey.LEAVE_GROUP, 1, {"group_id": "g", "member_id": member})
    deleted = client.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g"]})
    assert deleted["results"][0]["error_code"] == 0


# ------------------------------------------------------------------------- scripting


def test_script_answers_in_order_then_falls_back(cluster: FakeCluster, client: Client) -> None:
    cluster.script(ApiKey.HEARTBEAT, [{"error_code": 27}, Reply({"error_code": 22}), None])
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    assert cluster.pending_script(ApiKey.HEARTBEAT) == 3
    assert client.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 27
    assert client.call(ApiKey.HEARTBEAT, 1, hb)["error_code"] == 22
    # None defers to the default: an unknown member.
    assert client.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 25
    assert cluster.pending_script(ApiKey.HEARTBEAT) == 0
    assert client.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 25


def test_handler_sees_node_header_and_body(cluster: FakeCluster) -> None:
    seen: list[tuple[int, RequestHeader, dict[str, Any]]] = []

    def handler(node: int, header: RequestHeader, body: dict[str, Any]) -> dict[str, Any] | None:
        seen.append((node, header, body))
        return {"error_code": 82} if node == 1 else None

    cluster.on(ApiKey.HEARTBEAT, handler)
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": "i"}
    c0, c1 = Client(cluster.broker(0).address), Client(cluster.broker(1).address)
    try:
        assert c1.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 82
        assert c0.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 25  # default answered
        assert [(n, h.api_version, h.client_id, b["group_instance_id"]) for n, h, b in seen] == [
            (1, 4, "test", "i"),
            (0, 4, "test", "i"),
        ]
        cluster.on(ApiKey.HEARTBEAT, lambda n, h, b: {"error_code": 1}, node_id=0)
        assert c0.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 1
        assert c1.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 82
        cluster.on(ApiKey.HEARTBEAT, None, node_id=0)
        assert c0.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 25
    finally:
        c0.close()
        c1.close()


def test_script_for_one_node_only(cluster: FakeCluster) -> None:
    cluster.script(ApiKey.FIND_COORDINATOR, [{"error_code": 15}], node_id=1)
    c0, c1 = Client(cluster.broker(0).address), Client(cluster.broker(1).address)
    try:
        assert c0.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})["error_code"] == 0
        assert c1.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})["error_code"] == 15
        assert c1.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})["error_code"] == 0
    finally:
        c0.close()
        c1.close()


def test_fail_mirrors_request_partitions(cluster: FakeCluster, client: Client) -> None:
    cluster.fail(ApiKey.OFFSET_COMMIT, 16, times=2)
    request = {
        "group_id": "g",
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 1},
                    {"partition_index": 2, "committed_offset": 1},
                ],
            }
        ],
    }
    for version in (2, 9):
        body = client.call(ApiKey.OFFSET_COMMIT, version, request)
        assert body["topics"] == [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "error_code": 16},
                    {"partition_index": 2, "error_code": 16},
                ],
            }
        ]
    assert (
        client.call(ApiKey.OFFSET_COMMIT, 9, request)["topics"][0]["partitions"][0]["error_code"]
        == 0
    )
    assert cluster.committed("g")[("t", 2)][0] == 1


def test_one_body_serves_every_version(cluster: FakeCluster, client: Client) -> None:
    # Fields a version lacks are dropped before encoding (SyncGroup v0 has no protocol fields).
    cluster.on(
        ApiKey.SYNC_GROUP,
        lambda n, h, b: {
            "error_code": 0,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignment": b"x",
        },
    )
    sync = {"group_id": "g", "generation_id": 1, "member_id": "m", "assignments": []}
    assert client.call(ApiKey.SYNC_GROUP, 0, sync)["assignment"] == b"x"
    assert client.call(ApiKey.SYNC_GROUP, 5, sync)["protocol_name"] == "range"


# ------------------------------------------------------------------------- delay, close, raw


def test_delay_holds_only_its_connection_and_keeps_order(
    cluster: FakeCluster, client: Client
) -> None:
    cluster.script(ApiKey.HEARTBEAT, [Reply({"error_code": 27}, delay_s=1.0)])
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    first = client.send(ApiKey.HEARTBEAT, 4, hb)
    second = client.send(ApiKey.API_VERSIONS, 0, {})
    cluster.wait_for_requests(ApiKey.HEARTBEAT, 1)
    other = Client(cluster.broker(0).address)
    try:
        assert other.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
    finally:
        other.close()
    # The other connection was answered while this one still waits for its delayed answer.
    assert not client.readable_now()
    assert client.recv(ApiKey.HEARTBEAT, 4) == (first, {"throttle_time_ms": 0, "error_code": 27})
    assert client.recv(ApiKey.API_VERSIONS, 0)[0] == second


def test_close_instead_of_answering(cluster: FakeCluster, client: Client) -> None:
    cluster.script(ApiKey.HEARTBEAT, [Reply(close=True)])
    client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
    assert client.at_eof()
    again = Client(cluster.broker(0).address)
    try:
        assert again.call(ApiKey.HEARTBEAT, 4, {"group_id": "g"})["error_code"] == 25
    finally:
        again.close()


def test_close_after_delay(cluster: FakeCluster, client: Client) -> None:
    cluster.script(ApiKey.HEARTBEAT, [Reply(delay_s=0.2, close=True)])
    client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
    assert client.at_eof()


def test_raw_bytes_are_sent_verbatim(cluster: FakeCluster, client: Client) -> None:
    def malformed(node: int, header: RequestHeader, body: dict[str, Any]) -> Reply:
        # A Heartbeat v4 body cut short: only one byte of the 4-byte throttle time.
        return Reply(raw=response_frame(header, b"\x00"))

    cluster.script(ApiKey.HEARTBEAT, [malformed, Reply(raw=b"\x00\x00\x00\x01")])
    correlation_id = client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
    frame = client.recv_frame()
    assert frame == struct.pack(">i", correlation_id) + b"\x00\x00"
    with pytest.raises(KafkaProtocolError):
        decode_response(ApiKey.HEARTBEAT, 4, frame)
    client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
    assert client._read_exact(4) == b"\x00\x00\x00\x01"


def test_unhandled_api_closes_the_connection(client: Client) -> None:
    client.send(ApiKey.CREATE_PARTITIONS, 2, {"topics": [], "timeout_ms": 1})
    assert client.at_eof()


def test_malformed_frame_closes_the_connection(cluster: FakeCluster, client: Client) -> None:
    client.sock.sendall(struct.pack(">i", -5))
    assert client.at_eof()
    other = Client(cluster.broker(0).address)
    try:
        # A frame whose header is cut short.
        other.sock.sendall(struct.pack(">i", 3) + b"\x00\x12\x00")
        assert other.at_eof()
    finally:
        other.close()


# ------------------------------------------------------------------------- kill, restart


def test_kill_and_restart(cluster: FakeCluster, client: Client) -> None:
    cluster.set_committed("g", "t", 0, 42)
    port = cluster.broker(0).port
    cluster.kill(0)
    assert not cluster.broker(0).alive
    assert client.at_eof()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    cluster.restart(0)
    assert cluster.broker(0).port == port and cluster.broker(0).alive
    again = Client(cluster.broker(0).address)
    try:
        body = again.call(
            ApiKey.OFFSET_FETCH,
            1,
            {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]},
        )
        assert body["topics"][0]["partitions"][0]["committed_offset"] == 42
    finally:
        again.close()
    assert cluster.accepted_connections(0) == 2


def test_close_connections_keeps_listener(cluster: FakeCluster, client: Client) -> None:
    client.call(ApiKey.API_VERSIONS, 0, {})
    cluster.close_connections(0)
    assert client.at_eof()
    again = Client(cluster.broker(0).address)
    try:
        assert again.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
    finally:
        again.close()


def test_handler_may_kill_its_own_broker(cluster: FakeCluster, client: Client) -> None:
    def die(node: int, header: RequestHeader, body: dict[str, Any]) -> dict[str, Any]:
        cluster.kill(node)
        return {"error_code": 0}

    cluster.script(ApiKey.HEARTBEAT, [die])
    client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
    assert client.at_eof()
    assert not cluster.broker(0).alive


# ------------------------------------------------------------------------- recording, errors, SASL


def test_requests_are_recorded(cluster: FakeCluster, client: Client) -> None:
    client.call(
        ApiKey.API_VERSIONS, 3, {"client_software_name": "kc", "client_software_version": "0.1"}
    )
    client.call(ApiKey.METADATA, 12, {"topics": None})
    assert [h.api_key for h, _ in cluster.requests()] == [18, 3]
    ((header, body),) = cluster.requests(ApiKey.API_VERSIONS, node_id=0)
    assert (header.api_version, header.client_id, body["client_software_name"]) == (3, "test", "kc")
    assert cluster.requests(ApiKey.API_VERSIONS, node_id=1) == []
    cluster.clear_requests()
    assert cluster.requests() == []
    with pytest.raises(AssertionError, match="timed out"):
        cluster.wait_for_requests(ApiKey.FETCH, timeout_s=0.2)


def test_handler_error_is_kept_and_raised_at_exit() -> None:
    cluster = FakeCluster()
    with pytest.raises(AssertionError, match="handler errors"):
        with cluster:
            cluster.on(ApiKey.HEARTBEAT, lambda n, h, b: 1 / 0)  # type: ignore[arg-type,return-value]
            client = Client(cluster.bootstrap_servers)
            try:
                client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
                assert client.at_eof()
            finally:
                client.close()
    assert isinstance(cluster.errors[0], ZeroDivisionError)


def test_sasl_default_and_scripted_exchange() -> None:
    with FakeCluster(sasl_mechanisms=["PLAIN", "SCRAM-SHA-256"]) as cluster:
        client = Client(cluster.bootstrap_servers)
        try:
            body = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
            assert (body["error_code"], body["mechanisms"]) == (33, ["PLAIN", "SCRAM-SHA-256"])
            assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
            assert (
                client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"x"})["error_code"] == 58
            )
            cluster.script(
                ApiKey.SASL_AUTHENTICATE,
                [
                    {"auth_bytes": b"server-first"},
                    {"auth_bytes": b"server-final", "session_lifetime_ms": 60000},
                ],
            )
            assert (
                client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"client-first"})[
                    "auth_bytes"
                ]
                == b"server-first"
            )
            final = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"client-final"})
            assert (final["error_code"], final["session_lifetime_ms"]) == (0, 60000)
            tokens = [b["auth_bytes"] for _, b in cluster.requests(ApiKey.SASL_AUTHENTICATE)]
            assert tokens == [b"x", b"client-first", b"client-final"]
        finally:
            client.close()


# ------------------------------------------------------------------------- helpers


def test_error_body_mirrors_requests() -> None:
    fetch = error_body(
        ApiKey.OFFSET_FETCH,
        7,
        16,
        {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [3, 4]}]},
    )
    assert fetch["error_code"] == 16
    assert fetch["topics"] == [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 3, "error_code": 16},
                {"partition_index": 4, "error_code": 16},
            ],
        }
    ]
    coordinators = error_body(
        ApiKey.FIND_COORDINATOR, 4, 15, {"coordinator_keys": ["a", "b"], "key_type": 0}
    )
    assert coordinators == {
        "coordinators": [{"key": "a", "error_code": 15}, {"key": "b", "error_code": 15}]
    }
    describe = error_body(ApiKey.DESCRIBE_GROUPS, 5, 16, {"groups": ["g"]})
    assert describe["groups"] == [{"error_code": 16, "group_id": "g"}]
    leave = error_body(
        ApiKey.LEAVE_GROUP,
        5,
        25,
        {"group_id": "g", "members": [{"member_id": "m", "group_instance_id": "i"}]},
    )
    assert leave == {
        "error_code": 25,
        "members": [{"member_id": "m", "group_instance_id": "i", "error_code": 25}],
    }
    assert error_body(ApiKey.HEARTBEAT, 0, 22) == {"error_code": 22}
    cgh = error_body(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 110)
    assert cgh == {"error_code": 110}  # the nullable assignment stays null


def test_fit_body_drops_fields_a_version_lacks() -> None:
    body = {"throttle_time_ms": 5, "error_code": 1, "protocol_type": "consumer", "assignment": b""}
    assert fit_body(ApiKey.SYNC_GROUP, 0, body) == {"error_code": 1, "assignment": b""}
    nested = {
        "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "committed_leader_epoch": 3}]}
        ]
    }
    assert fit_body(ApiKey.OFFSET_FETCH, 4, nested) == {
        "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]
    }


def test_reply_validation() -> None:
    with pytest.raises(ValueError):
        Reply(delay_s=-1)
    with pytest.raises(ValueError):
        Reply(close=True, raw=b"x")
    with pytest.raises(ValueError):
        Reply(drop=True, close=True)
    with pytest.raises(ValueError):
        FakeCluster(0)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stop_leaks_no_thread_or_socket() -> None:
    threads_before = threading.active_count()
    fds_before = _open_fds()
    with FakeCluster(n_brokers=3) as cluster:
        clients = [Client(b.address) for b in cluster.brokers]
        for c in clients:
            c.call(ApiKey.API_VERSIONS, 0, {})
        cluster.script(ApiKey.HEARTBEAT, [Reply({}, delay_s=30)])
        clients[0].send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
        cluster.wait_for_requests(ApiKey.HEARTBEAT)
    for c in clients:
        assert c.at_eof()
        c.close()
    assert threading.active_count() == threads_before
    assert _open_fds() == fds_before


# ------------------------------------------------------------------------- partition logs


def _fetch(
    client: Client,
    cluster: FakeCluster,
    version: int,
    offset: int,
    partition: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    topic = {"topic_id": cluster.topic_id("t")} if version >= 13 else {"topic": "t"}
    part = {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
    part.update(extra)
    body = client.call(
        ApiKey.FETCH,
        version,
        {"max_wait_ms": 0, "min_bytes": 1, "topics": [{**topic, "partitions": [part]}]},
    )
    (response,) = body["responses"]
    (row,) = response["partitions"]
    result: dict[str, Any] = row
    return result


def test_append_then_fetch_and_list_offsets(cluster: FakeCluster, client: Client) -> None:
    assert cluster.append("t", 0, [(b"k0", b"v0", [], 1000), (b"k1", b"v1", [], 2000)]) == 0
    assert cluster.append("t", 0, [(None, b"v2", [("h", b"x")], 5000)], compression="gzip") == 2
    assert cluster.log_offsets("t", 0) == (0, 3)
    for version in (4, 11, 13, 17):
        row = _fetch(client, cluster, version, 1)
        assert (row["error_code"], row["high_watermark"]) == (0, 3)
        result = decode_fetched_records(row["records"], "t", 0, 1)
        assert [(r.offset, r.value) for r in result.records] == [(1, b"v1"), (2, b"v2")]
        assert result.records[1].headers == [("h", b"x")]
    assert _fetch(client, cluster, 12, 3)["records"] is None

    def offsets(timestamp: int, version: int = 7) -> tuple[int, int]:
        body = client.call(
            ApiKey.LIST_OFFSETS,
            version,
            {
                "replica_id": -1,
                "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0, "timestamp": timestamp}]}
                ],
            },
        )
        row = body["topics"][0]["partitions"][0]
        return row["error_code"], row["offset"]

    assert offsets(-1) == (0, 3)
    assert offsets(-2) == (0, 0)
    assert offsets(1000) == (0, 0)
    assert offsets(4000) == (0, 2)
    assert offsets(-3) == (0, 2)
    assert offsets(10**15) == (0, -1)
    body = client.call(
        ApiKey.LIST_OFFSETS,
        0,
        {
            "replica_id": -1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}],
                }
            ],
        },
    )
    assert body["topics"][0]["partitions"][0]["old_style_offsets"] == [3]


def test_fetch_errors(cluster: FakeCluster, client: Client) -> None:
    cluster.append("t", 0, [(b"k", b"v")])
    assert _fetch(client, cluster, 11, 5)["error_code"] == 1  # OFFSET_OUT_OF_RANGE
    assert (
        _fetch(client, cluster, 11, 0, partition=1)["error_code"] == 6
    )  # node 1 leads partition 1
    cluster.set_leader("t", 0, 0)  # epoch 1 now
    assert _fetch(client, cluster, 11, 0, current_leader_epoch=0)["error_code"] == 74
    assert _fetch(client, cluster, 11, 0, current_leader_epoch=2)["error_code"] == 75
    assert _fetch(client, cluster, 11, 0, current_leader_epoch=1)["error_code"] == 0
    row = _fetch(client, cluster, 12, 0, partition=1)
    assert row["current_leader"] == {"leader_id": 1, "leader_epoch": 0}
    cluster.set_log_start_offset("t", 0, 1)
    assert _fetch(client, cluster, 11, 0)["error_code"] == 1
    assert _fetch(client, cluster, 11, 1)["log_start_offset"] == 1


def test_fetch_without_data_waits_then_answers_empty(cluster: FakeCluster, client: Client) -> None:
    body = client.call(
        ApiKey.FETCH,
        11,
        {
            "max_wait_ms": 100,
            "min_bytes": 1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
                    ],
                }
            ],
        },
    )
    row = body["responses"][0]["partitions"][0]
    assert (row["error_code"], row["records"], row["high_watermark"]) == (0, None, 0)


def test_produce_appends_and_acks_zero_gets_no_answer(cluster: FakeCluster, client: Client) -> None:
    batch = encode_batch([(b"k", b"v", [], 1000), (b"k2", b"v2", [], 1001)], base_offset=77)
    body = client.call(
        ApiKey.PRODUCE,
        9,
        {
            "acks": -1,
            "timeout_ms": 1000,
            "topic_data": [
                {
                    "name": "t",
                    "partition_data": [
                        {"index": 0, "records": batch},
                        {"index": 1, "records": batch},
                    ],
                }
            ],
        },
    )
    rows = body["responses"][0]["partition_responses"]
    assert [(r["index"], r["error_code"], r["base_offset"]) for r in rows] == [
        (0, 0, 0),
        (1, 6, -1),
    ]
    client.send(
        ApiKey.PRODUCE,
        9,
        {
            "acks": 0,
            "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    # The acks=0 request gets no answer: the next answer on the connection is the ApiVersions one.
    correlation_id = client.send(ApiKey.API_VERSIONS, 0, {})
    assert client.recv(ApiKey.API_VERSIONS, 0)[0] == correlation_id
    assert cluster.log_offsets("t", 0) == (0, 4)
    result = decode_fetched_records(_fetch(client, cluster, 11, 0)["records"], "t", 0, 0)
    assert [r.offset for r in result.records] == [0, 1, 2, 3]


def test_delete_records(cluster: FakeCluster, client: Client) -> None:
    cluster.append("t", 0, [(None, b"a"), (None, b"b")])
    body = client.call(
        ApiKey.DELETE_RECORDS,
        2,
        {
            "timeout_ms": 1000,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "offset": 1},
                        {"partition_index": 2, "offset": 9},
                    ],
                }
            ],
        },
    )
    rows = body["topics"][0]["partitions"]
    assert [(r["partition_index"], r["error_code"], r["low_watermark"]) for r in rows] == [
        (0, 0, 1),
        (2, 1, -1),
    ]
    assert cluster.log_offsets("t", 0) == (1, 2)


def test_dropped_reply_never_answers(cluster: FakeCluster, client: Client) -> None:
    cluster.script(ApiKey.HEARTBEAT, [Reply(drop=True)])
    client.send(ApiKey.HEARTBEAT, 4, {"group_id": "g"})
    correlation_id = client.send(ApiKey.API_VERSIONS, 0, {})
    assert client.recv(ApiKey.API_VERSIONS, 0)[0] == correlation_id


def test_join_error_at_old_version_has_empty_protocol_name(client: Client) -> None:
    # JoinGroup v5-6 cannot carry a null protocol name, so errors there must send "".
    first = _join(client, version=5)
    assert (first["error_code"], first["protocol_name"]) == (79, "")
    assert _join(client, version=7)["protocol_name"] is None


# ------------------------------------------------------------------------- third-party clients
# Independent clients validate that the fake speaks the protocol as real brokers do.


@pytest.mark.timeout(60)
def test_confluent_kafka_group_consumer_round_trip() -> None:
    ck = pytest.importorskip("confluent_kafka")
    with FakeCluster(n_brokers=2, topics={"t": 2}) as cluster:
        for i in range(4):
            cluster.append("t", i % 2, [(b"k%d" % i, b"v%d" % i)])
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        try:
            consumer.subscribe(["t"])
            got: list[tuple[int, int, bytes]] = []
            for _ in range(100):
                if len(got) == 4:
                    break
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    got.append((message.partition(), message.offset(), message.value()))
            assert sorted(got) == [(0, 0, b"v0"), (0, 1, b"v2"), (1, 0, b"v1"), (1, 1, b"v3")]
            consumer.commit(asynchronous=False)
            assert {tp: offset for tp, (offset, _, _) in cluster.committed("g").items()} == {
                ("t", 0): 2,
                ("t", 1): 2,
            }
        finally:
            consumer.close()


@pytest.mark.timeout(60)
def test_kafka_python_group_consumer_round_trip() -> None:
    kafka = pytest.importorskip("kafka")
    with FakeCluster(n_brokers=2, topics={"t": 2}) as cluster:
        for i in range(4):
            cluster.append("t", i % 2, [(b"k%d" % i, b"v%d" % i)])
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="g",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=1000,
        )
        try:
            # On a busy machine kafka-python's leader may assign before its metadata names the
            # topic's partitions ("No partition metadata for topic t"): it then assigns nothing,
            # and a later metadata refresh did not always bring a rejoin. Its metadata names
            # them before it subscribes.
            assert "t" in consumer.topics()
            consumer.subscribe(["t"])
            got: list[tuple[int, int, bytes]] = []
            deadline = time.monotonic() + 45
            while len(got) < 4 and time.monotonic() < deadline:
                for tp, records in consumer.poll(timeout_ms=200).items():
                    got += [(tp.partition, r.offset, r.value) for r in records]
            assert sorted(got) == [(0, 0, b"v0"), (0, 1, b"v2"), (1, 0, b"v1"), (1, 1, b"v3")]
            consumer.commit()
            assert {tp: offset for tp, (offset, _, _) in cluster.committed("g").items()} == {
                ("t", 0): 2,
                ("t", 1): 2,
            }
        finally:
            consumer.close()


def test_api_versions_above_advertised_range_gets_v0_error(
    cluster: FakeCluster, client: Client
) -> None:
    cluster.set_api_versions({18: (0, 2), 3: (0, 12)})
    correlation_id = client.send(ApiKey.API_VERSIONS, 3, {"client_software_name": "t"})
    # The answer is in the v0 layout whatever version was asked.
    got, body = decode_response(ApiKey.API_VERSIONS, 0, client.recv_frame())
    assert (got, body["error_code"]) == (correlation_id, 35)
    assert {k["api_key"]: k["max_version"] for k in body["api_keys"]} == {18: 2, 3: 12}
    assert client.call(ApiKey.API_VERSIONS, 2, {})["error_code"] == 0


def test_restart_failure_is_raised_to_the_caller(cluster: FakeCluster) -> None:
    port = cluster.broker(1).port
    cluster.kill(1)
    squatter = socket.socket()
    try:
        squatter.bind(("127.0.0.1", port))
        squatter.listen(1)
        with pytest.raises(OSError):
            cluster.restart(1)
    finally:
        squatter.close()
    assert cluster.errors == []
    cluster.restart(1)
    assert cluster.broker(1).alive


def test_reply_without_body_delays_the_default_answer(cluster: FakeCluster, client: Client) -> None:
    cluster.script(ApiKey.API_VERSIONS, [Reply(delay_s=0.1)])
    body = client.call(ApiKey.API_VERSIONS, 3, {})
    assert len(body["api_keys"]) == len(DEFAULT_API_VERSIONS)
    # A default that is itself a Reply (Fetch waiting for data) keeps its behaviour.
    cluster.script(ApiKey.FETCH, [Reply(delay_s=0.1)])
    body = client.call(
        ApiKey.FETCH,
        11,
        {
            "max_wait_ms": 50,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 10}],
                }
            ],
        },
    )
    assert body["responses"][0]["partitions"][0]["error_code"] == 0


# ------------------------------------------------------------------------- multi-member groups


def _sync(
    client: Client,
    member: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    group: str = "g",
) -> int:
    return client.send(
        ApiKey.SYNC_GROUP,
        5,
        {
            "group_id": group,
            "generation_id": generation,
            "member_id": member,
            "assignments": [
                {"member_id": m, "assignment": a} for m, a in (assignments or {}).items()
            ],
        },
    )


def test_two_members_rebalance_through_the_join_and_sync_barriers(cluster: FakeCluster) -> None:
    a, b = Client(cluster.broker(0).address), Client(cluster.broker(0).address)
    try:
        member_a, generation = _join_and_sync(a)
        first_b = _join(b)
        assert first_b["error_code"] == 79
        member_b = first_b["member_id"]
        # B's join waits at the barrier until A has joined again.
        b.send(
            ApiKey.JOIN_GROUP,
            9,
            {
                "group_id": "g",
                "session_timeout_ms": 10000,
                "rebalance_timeout_ms": 30000,
                "member_id": member_b,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"sub-b"}],
            },
        )
        cluster.wait_for_requests(ApiKey.JOIN_GROUP, 4)
        hb = {"group_id": "g", "generation_id": generation, "member_id": member_a}
        assert a.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 27
        # A may still commit what it consumed while the group prepares to rebalance.
        commit = a.call(
            ApiKey.OFFSET_COMMIT,
            8,
            {
                "group_id": "g",
                "generation_id_or_member_epoch": generation,
                "member_id": member_a,
                "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 3}]}
                ],
            },
        )
        assert commit["topics"][0]["partitions"][0]["error_code"] == 0
        joined_a = _join(a, member_id=member_a)
        _, joined_b = b.recv(ApiKey.JOIN_GROUP, 9)
        assert joined_a["generation_id"] == joined_b["generation_id"] == generation + 1
        assert joined_a["leader"] == joined_b["leader"] == member_a
        assert sorted((m["member_id"], m["metadata"]) for m in joined_a["members"]) == sorted(
            [(member_a, b"sub"), (member_b, b"sub-b")]
        )
        assert joined_b["members"] == []
        # The follower's sync waits for the leader's.
        _sync(b, member_b, generation + 1)
        cluster.wait_for_requests(ApiKey.SYNC_GROUP, 2)
        late = a.call(
            ApiKey.OFFSET_COMMIT,
            8,
            {
                "group_id": "g",
                "generation_id_or_member_epoch": generation + 1,
                "member_id": member_a,
                "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 4}]}
                ],
            },
        )
        assert late["topics"][0]["partitions"][0]["error_code"] == 27  # CompletingRebalance
        _sync(a, member_a, generation + 1, {member_a: b"for-a", member_b: b"for-b"})
        assert a.recv(ApiKey.SYNC_GROUP, 5)[1]["assignment"] == b"for-a"
        assert b.recv(ApiKey.SYNC_GROUP, 5)[1]["assignment"] == b"for-b"
        assert cluster.group_state("g")["state"] == "Stable"
        # A commit from outside the group is refused while it has members.
        outside = a.call(
            ApiKey.OFFSET_COMMIT,
            8,
            {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
        )
        assert outside["topics"][0]["partitions"][0]["error_code"] == 25
        # B leaves: A is told to rejoin and then leads alone.
        b.call(ApiKey.LEAVE_GROUP, 5, {"group_id": "g", "members": [{"member_id": member_b}]})
        hb = {"group_id": "g", "generation_id": generation + 1, "member_id": member_a}
        assert a.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 27
        alone = _join(a, member_id=member_a)
        assert [m["member_id"] for m in alone["members"]] == [member_a]
    finally:
        a.close()
        b.close()


def test_member_missing_the_rebalance_is_dropped(cluster: FakeCluster) -> None:
    a, b = Client(cluster.broker(0).address), Client(cluster.broker(0).address)
    try:
        joined = _join(a, version=3, rebalance_timeout_ms=300)
        member_a = joined["member_id"]
        _sync(a, member_a, joined["generation_id"], {member_a: b"x"})
        a.recv(ApiKey.SYNC_GROUP, 5)
        # A never rejoins: after the rebalance timeout (the largest of the members'), B's join
        # completes without it.
        joined_b = _join(b, version=3, rebalance_timeout_ms=300)
        assert joined_b["leader"] == joined_b["member_id"] != member_a
        assert [m["member_id"] for m in joined_b["members"]] == [joined_b["member_id"]]
        hb = {"group_id": "g", "generation_id": joined["generation_id"], "member_id": member_a}
        assert a.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 25
    finally:
        a.close()
        b.close()


def test_silent_member_expires_after_its_session_timeout(
    cluster: FakeCluster, client: Client
) -> None:
    from tests.helpers import wait_for

    joined = _join(client, version=3, session_timeout_ms=300)
    _sync(client, joined["member_id"], joined["generation_id"], {joined["member_id"]: b""})
    client.recv(ApiKey.SYNC_GROUP, 5)
    wait_for(
        lambda: cluster.group_state("g")["state"] == "Empty", timeout=10, message="session expiry"
    )
    assert cluster.group_state("g")["members"] == {}


def test_static_member_restart_fences_the_old_instance(
    cluster: FakeCluster, client: Client
) -> None:
    first = _join(client, group_instance_id="i1")
    assert first["error_code"] == 0  # static members get their id at once
    old = first["member_id"]
    again = _join(client, group_instance_id="i1")
    new = again["member_id"]
    assert again["error_code"] == 0 and new != old and again["leader"] == new
    hb = {
        "group_id": "g",
        "generation_id": again["generation_id"],
        "member_id": old,
        "group_instance_id": "i1",
    }
    assert client.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == 82  # FENCED_INSTANCE_ID
    left = client.call(
        ApiKey.LEAVE_GROUP,
        4,
        {"group_id": "g", "members": [{"member_id": "", "group_instance_id": "i1"}]},
    )
    assert left["members"][0]["error_code"] == 0
    assert cluster.group_state("g")["state"] == "Empty"
