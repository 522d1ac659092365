"""Golden wire bytes for the core APIs (ApiVersions, Metadata, FindCoordinator, ListOffsets,
Fetch, Produce, SaslHandshake, SaslAuthenticate, CreateTopics, DeleteTopics).

Each expected body is written out by hand from the Apache Kafka message specs, one field per
line, and checked in both directions: our encoder must produce exactly these bytes (after the
header) and our decoder must return exactly the dict given (every field of the message, with
the spec default for fields the version lacks).

Reminders: non-flexible versions use int16-length strings (ffff = null) and int32-length bytes,
records and arrays (ffffffff = null); flexible versions use unsigned-varint length+1 prefixes
(00 = null) and end each struct and the body with a tagged-field section (00 = none; else a
count, then tag, size and value for each field). ApiVersions responses keep header v0.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from kafkaconsumer.protocol import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    get_api,
)

pytestmark = pytest.mark.timeout(60)

CORRELATION_ID = 7
CLIENT_ID = "kc"
TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
TOPIC_ID_HEX = "00112233445566778899aabbccddeeff"
ZERO = uuid.UUID(int=0)


def h(*parts: str) -> bytes:
    """Join hex fragments (spaces allowed) into bytes."""
    return bytes.fromhex("".join(parts))


@dataclass(frozen=True)
class Golden:
    """One message: api, version, direction, its body bytes and its decoded dict."""

    api_key: int
    version: int
    kind: str
    body: bytes
    value: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{get_api(self.api_key).name}-v{self.version}-{self.kind}"


def request_header(api_key: int, version: int) -> bytes:
    # Header v1: api_key, api_version, correlation_id, int16-length client_id; v2 adds tags.
    out = (
        struct.pack(">hhih", api_key, version, CORRELATION_ID, len(CLIENT_ID)) + CLIENT_ID.encode()
    )
    if get_api(api_key).is_flexible(version):
        out += b"\x00"
    return out


def response_header(api_key: int, version: int) -> bytes:
    # Header v0: correlation_id; v1 (flexible, except ApiVersions) adds tags.
    out = struct.pack(">i", CORRELATION_ID)
    if get_api(api_key).is_flexible(version) and api_key != 18:
        out += b"\x00"
    return out


def plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, memoryview):
        return value.tobytes()
    return value


NO_LEADER = {"leader_id": -1, "leader_epoch": -1}

G = Golden
GOLDENS: list[Golden] = [
    # ------------------------------------------------------------------ ApiVersions (18)
    G(
        18,
        0,
        "request",
        b"",
        {
            "client_software_name": "",
            "client_software_version": "",
            "cluster_id": None,
            "node_id": -1,
        },
    ),
    G(
        18,
        3,
        "request",
        h(
            "03 6b63",  # client_software_name "kc" (compact: len+1)
            "04 312e30",  # client_software_version "1.0"
            "00",  # tagged fields: none
        ),
        {
            "client_software_name": "kc",
            "client_software_version": "1.0",
            "cluster_id": None,
            "node_id": -1,
        },
    ),
    G(
        18,
        5,
        "request",
        h(
            "03 6b63",  # client_software_name "kc"
            "04 312e30",  # client_software_version "1.0"
            "04 616263",  # cluster_id "abc" (compact nullable: len+1)
            "00000002",  # node_id 2
            "00",  # tagged fields: none
        ),
        {
            "client_software_name": "kc",
            "client_software_version": "1.0",
            "cluster_id": "abc",
            "node_id": 2,
        },
    ),
    G(
        18,
        5,
        "response",
        h(
            "0081",  # error_code 129 (REBOOTSTRAP_REQUIRED)
            "01",  # api_keys: none (compact: len+1)
            "00000000",  # throttle_time_ms 0
            "00",  # tagged fields: none
        ),
        {
            "error_code": 129,
            "api_keys": [],
            "throttle_time_ms": 0,
            "supported_features": [],
            "finalized_features_epoch": -1,
            "finalized_features": [],
            "zk_migration_ready": False,
        },
    ),
    G(
        18,
        0,
        "response",
        h(
            "0000",  # error_code 0
            "00000001",  # api_keys: 1 element
            "0001 0000 000c",  #   api_key 1 (Fetch), min 0, max 12
        ),
        {
            "error_code": 0,
            "api_keys": [{"api_key": 1, "min_version": 0, "max_version": 12}],
            "throttle_time_ms": 0,
            "supported_features": [],
            "finalized_features_epoch": -1,
            "finalized_features": [],
            "zk_migration_ready": False,
        },
    ),
    G(
        18,
        3,
        "response",
        h(
            "0000",  # error_code 0
            "02",  # api_keys: 1 element (compact)
            "0012 0000 0004 00",  #   api_key 18, min 0, max 4, element tags none
            "00000000",  # throttle_time_ms 0
            "02",  # tagged fields: 2
            "00 08",  #   tag 0 (supported_features), 8 bytes:
            "02 02 78 0001 0002 00",  #     1 element: name "x", min 1, max 2, tags none
            "01 08 0000000000000005",  #   tag 1 (finalized_features_epoch) = 5
        ),
        {
            "error_code": 0,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
            "throttle_time_ms": 0,
            "supported_features": [{"name": "x", "min_version": 1, "max_version": 2}],
            "finalized_features_epoch": 5,
            "finalized_features": [],
            "zk_migration_ready": False,
        },
    ),
    # ------------------------------------------------------------------ Metadata (3)
    G(
        3,
        1,
        "request",
        h(
            "00000001",  # topics: 1 element
            "0002 7431",  #   name "t1"
        ),
        {
            "topics": [{"topic_id": ZERO, "name": "t1"}],
            "allow_auto_topic_creation": True,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    ),
    G(
        3,
        12,
        "request",
        h(
            "02",  # topics: 1 element
            TOPIC_ID_HEX,  #   topic_id
            "00",  #   name null (nullable from v10)
            "00",  #   element tags
            "00",  # allow_auto_topic_creation false
            "01",  # include_topic_authorized_operations true
            "00",  # tagged fields
        ),
        {
            "topics": [{"topic_id": TOPIC_ID, "name": None}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": True,
        },
    ),
    G(
        3,
        1,
        "response",
        h(
            "00000001",  # brokers: 1 element
            "00000001",  #   node_id 1
            "0001 68",  #   host "h"
            "00002384",  #   port 9092
            "ffff",  #   rack null
            "00000001",  # controller_id 1
            "00000001",  # topics: 1 element
            "0000",  #   error_code 0
            "0002 7431",  #   name "t1"
            "00",  #   is_internal false
            "00000001",  #   partitions: 1 element
            "0000",  #     error_code 0
            "00000000",  #     partition_index 0
            "00000001",  #     leader_id 1
            "00000001 00000001",  #     replica_nodes [1]
            "00000001 00000001",  #     isr_nodes [1]
        ),
        {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
            "cluster_id": None,
            "controller_id": 1,
            "topics": [
                {
                    "error_code": 0,
                    "name": "t1",
                    "topic_id": ZERO,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 0,
                            "leader_id": 1,
                            "leader_epoch": -1,
                            "replica_nodes": [1],
                            "isr_nodes": [1],
                            "offline_replicas": [],
                        }
                    ],
                    "topic_authorized_operations": -2147483648,
                }
            ],
            "cluster_authorized_operations": -2147483648,
            "error_code": 0,
        },
    ),
    G(
        3,
        12,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # brokers: 1 element
            "00000001 02 68 00002384",  #   node_id 1, host "h", port 9092
            "00",  #   rack null
            "00",  #   element tags
            "04 616263",  # cluster_id "abc"
            "00000001",  # controller_id 1
            "02",  # topics: 1 element
            "0000",  #   error_code 0
            "03 7431",  #   name "t1"
            TOPIC_ID_HEX,  #   topic_id
            "00",  #   is_internal false
            "02",  #   partitions: 1 element
            "0000 00000000 00000001",  #     error_code 0, partition_index 0, leader_id 1
            "00000005",  #     leader_epoch 5
            "02 00000001",  #     replica_nodes [1]
            "02 00000001",  #     isr_nodes [1]
            "01",  #     offline_replicas []
            "00",  #     element tags
            "80000000",  #   topic_authorized_operations INT32_MIN
            "00",  #   element tags
            "00",  # tagged fields
        ),
        {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
            "cluster_id": "abc",
            "controller_id": 1,
            "topics": [
                {
                    "error_code": 0,
                    "name": "t1",
                    "topic_id": TOPIC_ID,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 0,
                            "leader_id": 1,
                            "leader_epoch": 5,
                            "replica_nodes": [1],
                            "isr_nodes": [1],
                            "offline_replicas": [],
                        }
                    ],
                    "topic_authorized_operations": -2147483648,
                }
            ],
            "cluster_authorized_operations": -2147483648,
            "error_code": 0,
        },
    ),
    G(
        3,
        13,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "01",  # brokers: none
            "00",  # cluster_id null
            "ffffffff",  # controller_id -1
            "01",  # topics: none
            "0081",  # error_code 129 (REBOOTSTRAP_REQUIRED)
            "00",  # tagged fields
        ),
        {
            "throttle_time_ms": 0,
            "brokers": [],
            "cluster_id": None,
            "controller_id": -1,
            "topics": [],
            "cluster_authorized_operations": -2147483648,
            "error_code": 129,
        },
    ),
    # ------------------------------------------------------------------ FindCoordinator (10)
    G(
        10,
        1,
        "request",
        h(
            "0001 67",  # key "g"
            "00",  # key_type 0 (group)
        ),
        {"key": "g", "key_type": 0, "coordinator_keys": []},
    ),
    G(
        10,
        4,
        "request",
        h(
            "01",  # key_type 1 (transaction)
            "03 02 67 02 68",  # coordinator_keys ["g", "h"]
            "00",  # tagged fields
        ),
        {"key": "", "key_type": 1, "coordinator_keys": ["g", "h"]},
    ),
    G(
        10,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "000f",  # error_code 15 (COORDINATOR_NOT_AVAILABLE)
            "0002 6e6f",  # error_message "no"
            "ffffffff",  # node_id -1
            "0000",  # host ""
            "ffffffff",  # port -1
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 15,
            "error_message": "no",
            "node_id": -1,
            "host": "",
            "port": -1,
            "coordinators": [],
        },
    ),
    G(
        10,
        4,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # coordinators: 1 element
            "02 67",  #   key "g"
            "00000001",  #   node_id 1
            "02 68",  #   host "h"
            "00002384",  #   port 9092
            "0000",  #   error_code 0
            "00",  #   error_message null
            "00",  #   element tags
            "00",  # tagged fields
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "node_id": 0,
            "host": "",
            "port": 0,
            "coordinators": [
                {
                    "key": "g",
                    "node_id": 1,
                    "host": "h",
                    "port": 9092,
                    "error_code": 0,
                    "error_message": None,
                }
            ],
        },
    ),
    # ------------------------------------------------------------------ ListOffsets (2)
    G(
        2,
        1,
        "request",
        h(
            "ffffffff",  # replica_id -1
            "00000001",  # topics: 1 element
            "0002 7431",  #   name "t1"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "fffffffffffffffe",  #     timestamp -2 (earliest)
        ),
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": "t1",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "current_leader_epoch": -1,
                            "timestamp": -2,
                            "max_num_offsets": 1,
                        },
                    ],
                }
            ],
        },
    ),
    G(
        2,
        6,
        "request",
        h(
            "ffffffff",  # replica_id -1
            "01",  # isolation_level 1 (read_committed)
            "02",  # topics: 1 element
            "03 7431",  #   name "t1"
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "00000003",  #     current_leader_epoch 3
            "ffffffffffffffff",  #     timestamp -1 (latest)
            "00",  #     element tags
            "00",  #   element tags
            "00",  # tagged fields
        ),
        {
            "replica_id": -1,
            "isolation_level": 1,
            "topics": [
                {
                    "name": "t1",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "current_leader_epoch": 3,
                            "timestamp": -1,
                            "max_num_offsets": 1,
                        },
                    ],
                }
            ],
        },
    ),
    G(
        2,
        1,
        "response",
        h(
            "00000001",  # topics: 1 element
            "0002 7431",  #   name "t1"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0000",  #     error_code 0
            "ffffffffffffffff",  #     timestamp -1
            "000000000000002a",  #     offset 42
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t1",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "old_style_offsets": [],
                            "timestamp": -1,
                            "offset": 42,
                            "leader_epoch": -1,
                        }
                    ],
                }
            ],
        },
    ),
    G(
        2,
        6,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # topics: 1 element
            "03 7431",  #   name "t1"
            "02",  #   partitions: 1 element
            "00000000 0000",  #     partition_index 0, error_code 0
            "ffffffffffffffff",  #     timestamp -1
            "000000000000002a",  #     offset 42
            "00000003",  #     leader_epoch 3
            "00",  #     element tags
            "00",  #   element tags
            "00",  # tagged fields
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t1",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "old_style_offsets": [],
                            "timestamp": -1,
                            "offset": 42,
                            "leader_epoch": 3,
                        }
                    ],
                }
            ],
        },
    ),
    # ------------------------------------------------------------------ Fetch (1)
    G(
        1,
        4,
        "request",
        h(
            "ffffffff",  # replica_id -1 (a consumer)
            "000001f4",  # max_wait_ms 500
            "00000001",  # min_bytes 1
            "00100000",  # max_bytes 1 MiB
            "01",  # isolation_level 1
            "00000001",  # topics: 1 element
            "0002 7431",  #   topic "t1"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition 0
            "0000000000000064",  #     fetch_offset 100
            "00010000",  #     partition_max_bytes 64 KiB
        ),
        {
            "cluster_id": None,
            "replica_id": -1,
            "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 1048576,
            "isolation_level": 1,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "t1",
                    "topic_id": ZERO,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 100,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 65536,
                            "replica_directory_id": ZERO,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    ),
    G(
        1,
        13,
        "request",
        h(
            "ffffffff",  # replica_id -1
            "000001f4",  # max_wait_ms 500
            "00000001",  # min_bytes 1
            "00100000",  # max_bytes 1 MiB
            "00",  # isolation_level 0
            "00000000",  # session_id 0
            "ffffffff",  # session_epoch -1
            "02",  # topics: 1 element
            TOPIC_ID_HEX,  #   topic_id
            "02",  #   partitions: 1 element
            "00000000",  #     partition 0
            "00000002",  #     current_leader_epoch 2
            "0000000000000064",  #     fetch_offset 100
            "ffffffff",  #     last_fetched_epoch -1
            "ffffffffffffffff",  #     log_start_offset -1
            "00010000",  #     partition_max_bytes 64 KiB
            "00",  #     element tags
            "00",  #   element tags
            "01",  # forgotten_topics_data: empty
            "03 7231",  # rack_id "r1"
            "01 00 03 03 6331",  # tagged fields: 1; tag 0 (cluster_id), 3 bytes: "c1"
        ),
        {
            "cluster_id": "c1",
            "replica_id": -1,
            "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 1048576,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "",
                    "topic_id": TOPIC_ID,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": 2,
                            "fetch_offset": 100,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 65536,
                            "replica_directory_id": ZERO,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "r1",
        },
    ),
    G(
        1,
        4,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # responses: 1 element
            "0002 7431",  #   topic "t1"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0000",  #     error_code 0
            "000000000000000a",  #     high_watermark 10
            "000000000000000a",  #     last_stable_offset 10
            "ffffffff",  #     aborted_transactions null
            "00000003 010203",  #     records (3 bytes)
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "t1",
                    "topic_id": ZERO,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "high_watermark": 10,
                            "last_stable_offset": 10,
                            "log_start_offset": -1,
                            "diverging_epoch": {"epoch": -1, "end_offset": -1},
                            "current_leader": NO_LEADER,
                            "snapshot_id": {"end_offset": -1, "epoch": -1},
                            "aborted_transactions": None,
                            "preferred_read_replica": -1,
                            "records": b"\x01\x02\x03",
                        }
                    ],
                }
            ],
            "node_endpoints": [],
        },
    ),
    G(
        1,
        16,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00000000",  # session_id 0
            "02",  # responses: 1 element
            TOPIC_ID_HEX,  #   topic_id
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0006",  #     error_code 6 (NOT_LEADER_OR_FOLLOWER)
            "ffffffffffffffff",  #     high_watermark -1
            "ffffffffffffffff",  #     last_stable_offset -1
            "ffffffffffffffff",  #     log_start_offset -1
            "00",  #     aborted_transactions null
            "ffffffff",  #     preferred_read_replica -1
            "04 010203",  #     records (3 bytes, compact)
            "01 01 09",  #     tagged fields: 1; tag 1 (current_leader), 9 bytes:
            "00000002 00000007 00",  #       leader_id 2, leader_epoch 7, struct tags
            "00",  #   element tags
            "01 00 0d",  # tagged fields: 1; tag 0 (node_endpoints), 13 bytes:
            "02 00000002 02 68",  #   1 element: node_id 2, host "h"
            "00002384 00 00",  #   port 9092, rack null, element tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "",
                    "topic_id": TOPIC_ID,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 6,
                            "high_watermark": -1,
                            "last_stable_offset": -1,
                            "log_start_offset": -1,
                            "diverging_epoch": {"epoch": -1, "end_offset": -1},
                            "current_leader": {"leader_id": 2, "leader_epoch": 7},
                            "snapshot_id": {"end_offset": -1, "epoch": -1},
                            "aborted_transactions": None,
                            "preferred_read_replica": -1,
                            "records": b"\x01\x02\x03",
                        }
                    ],
                }
            ],
            "node_endpoints": [{"node_id": 2, "host": "h", "port": 9092, "rack": None}],
        },
    ),
    # ------------------------------------------------------------------ Produce (0)
    G(
        0,
        3,
        "request",
        h(
            "ffff",  # transactional_id null
            "ffff",  # acks -1 (all)
            "00007530",  # timeout_ms 30000
            "00000001",  # topic_data: 1 element
            "0002 7431",  #   name "t1"
            "00000001",  #   partition_data: 1 element
            "00000000",  #     index 0
            "00000003 010203",  #     records (3 bytes)
        ),
        {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 30000,
            "topic_data": [
                {"name": "t1", "partition_data": [{"index": 0, "records": b"\x01\x02\x03"}]}
            ],
        },
    ),
    G(
        0,
        9,
        "request",
        h(
            "00",  # transactional_id null
            "0001",  # acks 1
            "00007530",  # timeout_ms 30000
            "02",  # topic_data: 1 element
            "03 7431",  #   name "t1"
            "02",  #   partition_data: 1 element
            "00000000",  #     index 0
            "04 010203",  #     records (3 bytes)
            "00",  #     element tags
            "00",  #   element tags
            "00",  # tagged fields
        ),
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 30000,
            "topic_data": [
                {"name": "t1", "partition_data": [{"index": 0, "records": b"\x01\x02\x03"}]}
            ],
        },
    ),
    G(
        0,
        3,
        "response",
        h(
            "00000001",  # responses: 1 element
            "0002 7431",  #   name "t1"
            "00000001",  #   partition_responses: 1 element
            "00000000",  #     index 0
            "0000",  #     error_code 0
            "0000000000000000",  #     base_offset 0
            "ffffffffffffffff",  #     log_append_time_ms -1
            "00000000",  # throttle_time_ms 0
        ),
        {
            "responses": [
                {
                    "name": "t1",
                    "partition_responses": [
                        {
                            "index": 0,
                            "error_code": 0,
                            "base_offset": 0,
                            "log_append_time_ms": -1,
                            "log_start_offset": -1,
                            "record_errors": [],
                            "error_message": None,
                            "current_leader": NO_LEADER,
                        }
                    ],
                }
            ],
            "throttle_time_ms": 0,
            "node_endpoints": [],
        },
    ),
    G(
        0,
        9,
        "response",
        h(
            "02",  # responses: 1 element
            "03 7431",  #   name "t1"
            "02",  #   partition_responses: 1 element
            "00000000",  #     index 0
            "0000",  #     error_code 0
            "0000000000000005",  #     base_offset 5
            "ffffffffffffffff",  #     log_append_time_ms -1
            "0000000000000000",  #     log_start_offset 0
            "01",  #     record_errors: empty
            "00",  #     error_message null
            "00",  #     element tags
            "00",  #   element tags
            "00000000",  # throttle_time_ms 0
            "00",  # tagged fields
        ),
        {
            "responses": [
                {
                    "name": "t1",
                    "partition_responses": [
                        {
                            "index": 0,
                            "error_code": 0,
                            "base_offset": 5,
                            "log_append_time_ms": -1,
                            "log_start_offset": 0,
                            "record_errors": [],
                            "error_message": None,
                            "current_leader": NO_LEADER,
                        }
                    ],
                }
            ],
            "throttle_time_ms": 0,
            "node_endpoints": [],
        },
    ),
    # ------------------------------------------------------------------ SaslHandshake (17)
    G(
        17,
        1,
        "request",
        h(
            "0005 504c41494e",  # mechanism "PLAIN"
        ),
        {"mechanism": "PLAIN"},
    ),
    G(
        17,
        1,
        "response",
        h(
            "0000",  # error_code 0
            "00000002",  # mechanisms: 2 elements
            "0005 504c41494e",  #   "PLAIN"
            "000d 5343 52 41 4d 2d 53 48 41 2d 35 31 32",  # "SCRAM-SHA-512"
        ),
        {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-512"]},
    ),
    # ------------------------------------------------------------------ SaslAuthenticate (36)
    G(
        36,
        1,
        "request",
        h(
            "00000004 00750070",  # auth_bytes \0u\0p
        ),
        {"auth_bytes": b"\x00u\x00p"},
    ),
    G(
        36,
        2,
        "request",
        h(
            "05 00750070",  # auth_bytes (compact)
            "00",  # tagged fields
        ),
        {"auth_bytes": b"\x00u\x00p"},
    ),
    G(
        36,
        1,
        "response",
        h(
            "0000",  # error_code 0
            "ffff",  # error_message null
            "00000000",  # auth_bytes empty
            "000000000036ee80",  # session_lifetime_ms 3600000
        ),
        {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 3600000},
    ),
    G(
        36,
        2,
        "response",
        h(
            "003a",  # error_code 58 (SASL_AUTHENTICATION_FAILED)
            "04 626164",  # error_message "bad"
            "01",  # auth_bytes empty
            "0000000000000000",  # session_lifetime_ms 0
            "00",  # tagged fields
        ),
        {"error_code": 58, "error_message": "bad", "auth_bytes": b"", "session_lifetime_ms": 0},
    ),
    # ------------------------------------------------------------------ CreateTopics (19)
    G(
        19,
        1,
        "request",
        h(
            "00000001",  # topics: 1 element
            "0002 7431",  #   name "t1"
            "00000003",  #   num_partitions 3
            "0001",  #   replication_factor 1
            "00000000",  #   assignments: empty
            "00000001",  #   configs: 1 element
            "000e 636c65616e75702e706f6c696379",  # name "cleanup.policy"
            "0007 636f6d70616374",  #     value "compact"
            "00007530",  # timeout_ms 30000
            "00",  # validate_only false
        ),
        {
            "topics": [
                {
                    "name": "t1",
                    "num_partitions": 3,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                }
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    ),
    G(
        19,
        5,
        "request",
        h(
            "02",  # topics: 1 element
            "03 7431",  #   name "t1"
            "ffffffff",  #   num_partitions -1 (broker default)
            "ffff",  #   replication_factor -1
            "02",  #   assignments: 1 element
            "00000000",  #     partition_index 0
            "02 00000001",  #     broker_ids [1]
            "00",  #     element tags
            "01",  #   configs: empty
            "00",  #   element tags
            "00007530",  # timeout_ms 30000
            "01",  # validate_only true
            "00",  # tagged fields
        ),
        {
            "topics": [
                {
                    "name": "t1",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [1]}],
                    "configs": [],
                }
            ],
            "timeout_ms": 30000,
            "validate_only": True,
        },
    ),
    G(
        19,
        1,
        "response",
        h(
            "00000001",  # topics: 1 element
            "0002 7431",  #   name "t1"
            "0024",  #   error_code 36 (TOPIC_ALREADY_EXISTS)
            "0006 657869737473",  #   error_message "exists"
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t1",
                    "topic_id": ZERO,
                    "error_code": 36,
                    "error_message": "exists",
                    "topic_config_error_code": 0,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": [],
                }
            ],
        },
    ),
    G(
        19,
        7,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # topics: 1 element
            "03 7431",  #   name "t1"
            TOPIC_ID_HEX,  #   topic_id
            "0000",  #   error_code 0
            "00",  #   error_message null
            "00000003",  #   num_partitions 3
            "0001",  #   replication_factor 1
            "02",  #   configs: 1 element
            "0f 636c65616e75702e706f6c696379",  # name "cleanup.policy"
            "08 636f6d70616374",  #     value "compact"
            "00",  #     read_only false
            "05",  #     config_source 5 (default config)
            "00",  #     is_sensitive false
            "00",  #     element tags
            "01 00 02 0029",  #   tagged fields: 1; tag 0 (topic_config_error_code) = 41
            "00",  # tagged fields
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t1",
                    "topic_id": TOPIC_ID,
                    "error_code": 0,
                    "error_message": None,
                    "topic_config_error_code": 41,
                    "num_partitions": 3,
                    "replication_factor": 1,
                    "configs": [
                        {
                            "name": "cleanup.policy",
                            "value": "compact",
                            "read_only": False,
                            "config_source": 5,
                            "is_sensitive": False,
                        }
                    ],
                }
            ],
        },
    ),
    # ------------------------------------------------------------------ DeleteTopics (20)
    G(
        20,
        1,
        "request",
        h(
            "00000001 0002 7431",  # topic_names ["t1"]
            "00007530",  # timeout_ms 30000
        ),
        {"topics": [], "topic_names": ["t1"], "timeout_ms": 30000},
    ),
    G(
        20,
        6,
        "request",
        h(
            "02",  # topics: 1 element
            "03 7431",  #   name "t1"
            TOPIC_ID_HEX,  #   topic_id
            "00",  #   element tags
            "00007530",  # timeout_ms 30000
            "00",  # tagged fields
        ),
        {"topics": [{"name": "t1", "topic_id": TOPIC_ID}], "topic_names": [], "timeout_ms": 30000},
    ),
    G(
        20,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # responses: 1 element
            "0002 7431",  #   name "t1"
            "0000",  #   error_code 0
        ),
        {
            "throttle_time_ms": 0,
            "responses": [{"name": "t1", "topic_id": ZERO, "error_code": 0, "error_message": None}],
        },
    ),
    G(
        20,
        6,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # responses: 1 element
            "00",  #   name null
            TOPIC_ID_HEX,  #   topic_id
            "0064",  #   error_code 100 (UNKNOWN_TOPIC_ID)
            "00",  #   error_message null
            "00",  #   element tags
            "00",  # tagged fields
        ),
        {
            "throttle_time_ms": 0,
            "responses": [
                {"name": None, "topic_id": TOPIC_ID, "error_code": 100, "error_message": None}
            ],
        },
    ),
]


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: g.id)
def test_encode_matches_golden(golden: Golden) -> None:
    if golden.kind == "request":
        frame = encode_request(
            golden.api_key, golden.version, CORRELATION_ID, CLIENT_ID, golden.value
        )
        payload = request_header(golden.api_key, golden.version) + golden.body
    else:
        frame = encode_response(golden.api_key, golden.version, CORRELATION_ID, golden.value)
        payload = response_header(golden.api_key, golden.version) + golden.body
    assert frame == struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: g.id)
def test_decode_matches_golden(golden: Golden) -> None:
    if golden.kind == "request":
        header, body = decode_request(request_header(golden.api_key, golden.version) + golden.body)
        assert header == (golden.api_key, golden.version, CORRELATION_ID, CLIENT_ID)
    else:
        correlation_id, body = decode_response(
            golden.api_key,
            golden.version,
            response_header(golden.api_key, golden.version) + golden.body,
        )
        assert correlation_id == CORRELATION_ID
    assert plain(body) == golden.value


def test_every_core_api_has_flexible_and_rigid_goldens() -> None:
    seen: dict[tuple[int, str], set[bool]] = {}
    for g in GOLDENS:
        seen.setdefault((g.api_key, g.kind), set()).add(get_api(g.api_key).is_flexible(g.version))
    for key in (0, 1, 2, 3, 10, 18, 19, 20, 36):
        for kind in ("request", "response"):
            assert seen[(key, kind)] == {True, False}, (key, kind)
    assert seen[(17, "request")] == {False} and seen[(17, "response")] == {False}


def test_records_decode_as_zero_copy_view() -> None:
    golden = next(g for g in GOLDENS if g.api_key == 1 and g.version == 16 and g.kind == "response")
    frame = bytearray(response_header(1, 16) + golden.body)
    _, body = decode_response(1, 16, frame)
    records = body["responses"][0]["partitions"][0]["records"]
    assert isinstance(records, memoryview)
    # A view of the caller's buffer, not a copy: a change to the frame shows through.
    offset = bytes(frame).index(b"\x01\x02\x03")
    frame[offset] = 0x09
    assert records.tobytes() == b"\x09\x02\x03"
