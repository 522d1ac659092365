"""Golden wire bytes for the group, offset and miscellaneous APIs.

Every expected body below is written out by hand from the Apache Kafka message specs, one
field per line, and checked both ways: our encoder must produce exactly these bytes and our
decoder must turn them back into exactly the expected dict (every field of the message, with
the spec default for fields the version lacks).

Encoding reminders: non-flexible versions use int16-length strings (ffff = null), int32-length
bytes and arrays (ffffffff = null); flexible versions use unsigned-varint length+1 prefixes
(00 = null) and end every struct and the body with a tagged-field count (00 = none). A
nullable single struct is preceded by one byte: ff = null, 01 = present.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from kafkaconsumer.protocol import decode_request, decode_response, encode_request, encode_response
from kafkaconsumer.protocol.messages import groups, misc
from kafkaconsumer.protocol.schema import Api

pytestmark = pytest.mark.timeout(60)

_APIS: dict[int, Api] = {api.key: api for api in groups.APIS + misc.APIS}

CORRELATION_ID = 7
CLIENT_ID = "golden"
TOPIC_UUID = uuid.UUID("0123456789abcdef0123456789abcdef")
_UUID_HEX = "0123456789abcdef0123456789abcdef"


def h(*parts: str) -> bytes:
    """Join hex fragments (spaces allowed) into bytes."""
    return bytes.fromhex("".join(parts))


@dataclass(frozen=True)
class Golden:
    """One message: which API, version and direction, its body bytes and its decoded dict."""

    api_key: int
    version: int
    kind: str  # "request" or "response"
    body: bytes
    value: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{_APIS[self.api_key].name}-v{self.version}-{self.kind}"


def _request_frame(api_key: int, version: int, body: bytes) -> bytes:
    # Request header v1 (non-flexible) or v2 (flexible): key, version, correlation id,
    # int16-length client id, then (v2) an empty tagged-field section.
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", api_key, version, CORRELATION_ID, len(client)) + client
    if _APIS[api_key].is_flexible(version):
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _response_frame(api_key: int, version: int, body: bytes) -> bytes:
    # Response header v0 (correlation id) or v1 (plus an empty tagged-field section).
    header = struct.pack(">i", CORRELATION_ID)
    if _APIS[api_key].is_flexible(version):
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _plain(value: Any) -> Any:
    # Compare views as bytes and leave out an empty unknown-tags record, which carries nothing.
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not (k == "_unknown_tags" and not v)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


G = Golden
GOLDENS: list[Golden] = [
    # ---------------------------------------------------------------- JoinGroup (11)
    G(
        11,
        5,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00002710",  # session_timeout_ms 10000
            "000493e0",  # rebalance_timeout_ms 300000
            "0000",  # member_id ""
            "ffff",  # group_instance_id null
            "0008 636f6e73756d6572",  # protocol_type "consumer"
            "00000001",  # protocols: 1 element
            "0005 72616e6765",  #   name "range"
            "00000002 0001",  #   metadata 00 01
        ),
        {
            "group_id": "grp",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 300000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
            "reason": None,  # v8+ only: default null
        },
    ),
    G(
        11,
        9,
        "request",
        h(
            "04 677270",  # group_id "grp" (compact)
            "00002710",  # session_timeout_ms 10000
            "000493e0",  # rebalance_timeout_ms 300000
            "03 6d31",  # member_id "m1"
            "03 6931",  # group_instance_id "i1"
            "09 636f6e73756d6572",  # protocol_type "consumer"
            "02",  # protocols: 1 element
            "06 72616e6765",  #   name "range"
            "03 0001",  #   metadata 00 01
            "00",  #   element tags
            "02 72",  # reason "r"
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 300000,
            "member_id": "m1",
            "group_instance_id": "i1",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
            "reason": "r",
        },
    ),
    G(
        11,
        2,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00000001",  # generation_id 1
            "0005 72616e6765",  # protocol_name "range"
            "0002 6d31",  # leader "m1"
            "0002 6d31",  # member_id "m1"
            "00000001",  # members: 1 element
            "0002 6d31",  #   member_id "m1"
            "00000002 0001",  #   metadata 00 01
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "generation_id": 1,
            "protocol_type": None,  # v7+ only
            "protocol_name": "range",
            "leader": "m1",
            "skip_assignment": False,  # v9+ only
            "member_id": "m1",
            "members": [{"member_id": "m1", "group_instance_id": None, "metadata": b"\x00\x01"}],
        },
    ),
    G(
        11,
        9,
        "response",
        h(
            "00000064",  # throttle_time_ms 100
            "004f",  # error_code 79 MEMBER_ID_REQUIRED
            "ffffffff",  # generation_id -1
            "09 636f6e73756d6572",  # protocol_type "consumer"
            "00",  # protocol_name null
            "01",  # leader ""
            "01",  # skip_assignment true
            "03 6d32",  # member_id "m2"
            "01",  # members: empty
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 100,
            "error_code": 79,
            "generation_id": -1,
            "protocol_type": "consumer",
            "protocol_name": None,
            "leader": "",
            "skip_assignment": True,
            "member_id": "m2",
            "members": [],
        },
    ),
    G(
        11,
        7,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00000003",  # generation_id 3
            "00",  # protocol_type null
            "06 72616e6765",  # protocol_name "range"
            "03 6d31",  # leader "m1"
            "03 6d31",  # member_id "m1"
            "02",  # members: 1 element
            "03 6d31",  #   member_id "m1"
            "03 6931",  #   group_instance_id "i1"
            "01",  #   metadata empty
            "00",  #   element tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "generation_id": 3,
            "protocol_type": None,
            "protocol_name": "range",
            "leader": "m1",
            "skip_assignment": False,
            "member_id": "m1",
            "members": [{"member_id": "m1", "group_instance_id": "i1", "metadata": b""}],
        },
    ),
    # ---------------------------------------------------------------- SyncGroup (14)
    G(
        14,
        3,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000001",  # generation_id 1
            "0002 6d31",  # member_id "m1"
            "ffff",  # group_instance_id null
            "00000001",  # assignments: 1 element
            "0002 6d31",  #   member_id "m1"
            "00000003 000102",  #   assignment 00 01 02
        ),
        {
            "group_id": "grp",
            "generation_id": 1,
            "member_id": "m1",
            "group_instance_id": None,
            "protocol_type": None,
            "protocol_name": None,  # v5+ only
            "assignments": [{"member_id": "m1", "assignment": b"\x00\x01\x02"}],
        },
    ),
    G(
        14,
        5,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "00000001",  # generation_id 1
            "03 6d31",  # member_id "m1"
            "03 6931",  # group_instance_id "i1"
            "09 636f6e73756d6572",  # protocol_type "consumer"
            "06 72616e6765",  # protocol_name "range"
            "01",  # assignments: empty (a follower)
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "generation_id": 1,
            "member_id": "m1",
            "group_instance_id": "i1",
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    ),
    G(
        14,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00000002 0001",  # assignment 00 01
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "protocol_type": None,
            "protocol_name": None,
            "assignment": b"\x00\x01",
        },
    ),
    G(
        14,
        5,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "001b",  # error_code 27 REBALANCE_IN_PROGRESS
            "09 636f6e73756d6572",  # protocol_type "consumer"
            "06 72616e6765",  # protocol_name "range"
            "01",  # assignment empty
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 27,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignment": b"",
        },
    ),
    # ---------------------------------------------------------------- Heartbeat (12)
    G(
        12,
        3,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000005",  # generation_id 5
            "0002 6d31",  # member_id "m1"
            "0002 6931",  # group_instance_id "i1"
        ),
        {"group_id": "grp", "generation_id": 5, "member_id": "m1", "group_instance_id": "i1"},
    ),
    G(
        12,
        0,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000005",  # generation_id 5
            "0002 6d31",  # member_id "m1"
        ),
        {"group_id": "grp", "generation_id": 5, "member_id": "m1", "group_instance_id": None},
    ),
    G(
        12,
        4,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "00000005",  # generation_id 5
            "03 6d31",  # member_id "m1"
            "00",  # group_instance_id null
            "00",  # body tags
        ),
        {"group_id": "grp", "generation_id": 5, "member_id": "m1", "group_instance_id": None},
    ),
    G(
        12,
        0,
        "response",
        h(
            "0016",  # error_code 22 ILLEGAL_GENERATION
        ),
        {"throttle_time_ms": 0, "error_code": 22},
    ),
    G(
        12,
        4,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "001b",  # error_code 27 REBALANCE_IN_PROGRESS
            "00",  # body tags
        ),
        {"throttle_time_ms": 0, "error_code": 27},
    ),
    # ---------------------------------------------------------------- LeaveGroup (13)
    G(
        13,
        1,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "0002 6d31",  # member_id "m1"
        ),
        {"group_id": "grp", "member_id": "m1", "members": []},
    ),
    G(
        13,
        3,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000001",  # members: 1 element
            "0002 6d31",  #   member_id "m1"
            "ffff",  #   group_instance_id null
        ),
        {
            "group_id": "grp",
            "member_id": "",
            "members": [{"member_id": "m1", "group_instance_id": None, "reason": None}],
        },
    ),
    G(
        13,
        5,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "02",  # members: 1 element
            "03 6d31",  #   member_id "m1"
            "03 6931",  #   group_instance_id "i1"
            "04 627965",  #   reason "bye"
            "00",  #   element tags
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "member_id": "",
            "members": [{"member_id": "m1", "group_instance_id": "i1", "reason": "bye"}],
        },
    ),
    G(
        13,
        0,
        "response",
        h(
            "0019",  # error_code 25 UNKNOWN_MEMBER_ID
        ),
        {"throttle_time_ms": 0, "error_code": 25, "members": []},
    ),
    G(
        13,
        3,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00000001",  # members: 1 element
            "0002 6d31",  #   member_id "m1"
            "ffff",  #   group_instance_id null
            "0000",  #   error_code 0
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "members": [{"member_id": "m1", "group_instance_id": None, "error_code": 0}],
        },
    ),
    G(
        13,
        4,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "02",  # members: 1 element
            "03 6d31",  #   member_id "m1"
            "03 6931",  #   group_instance_id "i1"
            "0052",  #   error_code 82 FENCED_INSTANCE_ID
            "00",  #   element tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "members": [{"member_id": "m1", "group_instance_id": "i1", "error_code": 82}],
        },
    ),
    # ---------------------------------------------------------------- OffsetCommit (8)
    G(
        8,
        1,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000001",  # generation_id_or_member_epoch 1
            "0002 6d31",  # member_id "m1"
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000002a",  #     committed_offset 42
            "00000000000003e8",  #     commit_timestamp 1000 (v1 only)
            "0000",  #     committed_metadata ""
        ),
        {
            "group_id": "grp",
            "generation_id_or_member_epoch": 1,
            "member_id": "m1",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 42,
                            "committed_leader_epoch": -1,
                            "commit_timestamp": 1000,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    ),
    G(
        8,
        2,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000002",  # generation_id_or_member_epoch 2
            "0002 6d31",  # member_id "m1"
            "000000000036ee80",  # retention_time_ms 3600000 (v2-4)
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000003",  #     partition_index 3
            "0000000000000007",  #     committed_offset 7
            "ffff",  #     committed_metadata null
        ),
        {
            "group_id": "grp",
            "generation_id_or_member_epoch": 2,
            "member_id": "m1",
            "group_instance_id": None,
            "retention_time_ms": 3600000,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 3,
                            "committed_offset": 7,
                            "committed_leader_epoch": -1,
                            "commit_timestamp": -1,
                            "committed_metadata": None,
                        }
                    ],
                }
            ],
        },
    ),
    G(
        8,
        7,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000003",  # generation_id_or_member_epoch 3
            "0002 6d31",  # member_id "m1"
            "0002 6931",  # group_instance_id "i1"
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000002",  #     partition_index 2
            "0000000000000064",  #     committed_offset 100
            "00000005",  #     committed_leader_epoch 5
            "0002 6d64",  #     committed_metadata "md"
        ),
        {
            "group_id": "grp",
            "generation_id_or_member_epoch": 3,
            "member_id": "m1",
            "group_instance_id": "i1",
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 2,
                            "committed_offset": 100,
                            "committed_leader_epoch": 5,
                            "commit_timestamp": -1,
                            "committed_metadata": "md",
                        }
                    ],
                }
            ],
        },
    ),
    G(
        8,
        9,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "00000007",  # generation_id_or_member_epoch 7
            "03 6d31",  # member_id "m1"
            "00",  # group_instance_id null
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000000a",  #     committed_offset 10
            "ffffffff",  #     committed_leader_epoch -1
            "01",  #     committed_metadata ""
            "00",  #     partition tags
            "00",  #   topic tags
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "generation_id_or_member_epoch": 7,
            "member_id": "m1",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 10,
                            "committed_leader_epoch": -1,
                            "commit_timestamp": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    ),
    G(
        8,
        2,
        "response",
        h(
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0010",  #     error_code 16 NOT_COORDINATOR
        ),
        {
            "throttle_time_ms": 0,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 16}]}],
        },
    ),
    G(
        8,
        8,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "02",  #   partitions: 1 element
            "00000001",  #     partition_index 1
            "0000",  #     error_code 0
            "00",  #     partition tags
            "00",  #   topic tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 0}]}],
        },
    ),
    # ---------------------------------------------------------------- OffsetFetch (9)
    G(
        9,
        1,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000002 00000000 00000001",  # partition_indexes [0, 1]
        ),
        {
            "group_id": "grp",
            "topics": [{"name": "t", "partition_indexes": [0, 1]}],
            "groups": [],
            "require_stable": False,
        },
    ),
    G(
        9,
        2,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "ffffffff",  # topics null: every committed topic
        ),
        {"group_id": "grp", "topics": None, "groups": [], "require_stable": False},
    ),
    G(
        9,
        7,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "02 00000000",  #   partition_indexes [0]
            "00",  #   topic tags
            "01",  # require_stable true
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "topics": [{"name": "t", "partition_indexes": [0]}],
            "groups": [],
            "require_stable": True,
        },
    ),
    G(
        9,
        8,
        "request",
        h(
            "03",  # groups: 2 elements
            "04 677270",  #   group_id "grp"
            "02",  #   topics: 1 element
            "02 74",  #     name "t"
            "02 00000000",  #     partition_indexes [0]
            "00",  #     topic tags
            "00",  #   group tags
            "03 6732",  #   group_id "g2"
            "00",  #   topics null: all topics
            "00",  #   group tags
            "00",  # require_stable false
            "00",  # body tags
        ),
        {
            "group_id": "",
            "topics": [],  # v0-7 only
            "groups": [
                {
                    "group_id": "grp",
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": "t", "partition_indexes": [0]}],
                },
                {"group_id": "g2", "member_id": None, "member_epoch": -1, "topics": None},
            ],
            "require_stable": False,
        },
    ),
    G(
        9,
        9,
        "request",
        h(
            "02",  # groups: 1 element
            "04 677270",  #   group_id "grp"
            "03 6d31",  #   member_id "m1"
            "00000004",  #   member_epoch 4
            "00",  #   topics null
            "00",  #   group tags
            "01",  # require_stable true
            "00",  # body tags
        ),
        {
            "group_id": "",
            "topics": [],
            "groups": [{"group_id": "grp", "member_id": "m1", "member_epoch": 4, "topics": None}],
            "require_stable": True,
        },
    ),
    G(
        9,
        1,
        "response",
        h(
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000002a",  #     committed_offset 42
            "0000",  #     metadata ""
            "0000",  #     error_code 0
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 42,
                            "committed_leader_epoch": -1,
                            "metadata": "",
                            "error_code": 0,
                        }
                    ],
                }
            ],
            "error_code": 0,
            "groups": [],
        },
    ),
    G(
        9,
        5,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "ffffffffffffffff",  #     committed_offset -1 (none)
            "ffffffff",  #     committed_leader_epoch -1
            "ffff",  #     metadata null
            "0000",  #     error_code 0
            "000e",  # error_code 14 COORDINATOR_LOAD_IN_PROGRESS
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": -1,
                            "committed_leader_epoch": -1,
                            "metadata": None,
                            "error_code": 0,
                        }
                    ],
                }
            ],
            "error_code": 14,
            "groups": [],
        },
    ),
    G(
        9,
        7,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "02",  #   partitions: 1 element
            "00000001",  #     partition_index 1
            "0000000000000005",  #     committed_offset 5
            "00000002",  #     committed_leader_epoch 2
            "01",  #     metadata ""
            "0058",  #     error_code 88 UNSTABLE_OFFSET_COMMIT
            "00",  #     partition tags
            "00",  #   topic tags
            "0000",  # error_code 0
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "committed_offset": 5,
                            "committed_leader_epoch": 2,
                            "metadata": "",
                            "error_code": 88,
                        }
                    ],
                }
            ],
            "error_code": 0,
            "groups": [],
        },
    ),
    G(
        9,
        8,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "04 677270",  #   group_id "grp"
            "02",  #   topics: 1 element
            "02 74",  #     name "t"
            "02",  #     partitions: 1 element
            "00000000",  #       partition_index 0
            "000000000000002a",  #       committed_offset 42
            "ffffffff",  #       committed_leader_epoch -1
            "00",  #       metadata null
            "0000",  #       error_code 0
            "00",  #       partition tags
            "00",  #     topic tags
            "0000",  #   error_code 0
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "topics": [],
            "error_code": 0,
            "groups": [
                {
                    "group_id": "grp",
                    "error_code": 0,
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "committed_offset": 42,
                                    "committed_leader_epoch": -1,
                                    "metadata": None,
                                    "error_code": 0,
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- DescribeGroups (15)
    G(
        15,
        0,
        "request",
        h(
            "00000001",  # groups: 1 element
            "0003 677270",  #   "grp"
        ),
        {"groups": ["grp"], "include_authorized_operations": False},
    ),
    G(
        15,
        4,
        "request",
        h(
            "00000001",  # groups: 1 element
            "0003 677270",  #   "grp"
            "01",  # include_authorized_operations true
        ),
        {"groups": ["grp"], "include_authorized_operations": True},
    ),
    G(
        15,
        5,
        "request",
        h(
            "02",  # groups: 1 element
            "04 677270",  #   "grp"
            "00",  # include_authorized_operations false
            "00",  # body tags
        ),
        {"groups": ["grp"], "include_authorized_operations": False},
    ),
    G(
        15,
        0,
        "response",
        h(
            "00000001",  # groups: 1 element
            "0000",  #   error_code 0
            "0003 677270",  #   group_id "grp"
            "0006 537461626c65",  #   group_state "Stable"
            "0008 636f6e73756d6572",  #   protocol_type "consumer"
            "0005 72616e6765",  #   protocol_data "range"
            "00000001",  #   members: 1 element
            "0002 6d31",  #     member_id "m1"
            "0001 63",  #     client_id "c"
            "000a 2f3132372e302e302e31",  #   client_host "/127.0.0.1"
            "00000000",  #     member_metadata empty
            "00000001 ff",  #     member_assignment ff
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": 0,
                    "group_id": "grp",
                    "group_state": "Stable",
                    "protocol_type": "consumer",
                    "protocol_data": "range",
                    "members": [
                        {
                            "member_id": "m1",
                            "group_instance_id": None,
                            "client_id": "c",
                            "client_host": "/127.0.0.1",
                            "member_metadata": b"",
                            "member_assignment": b"\xff",
                        }
                    ],
                    "authorized_operations": -2147483648,
                }
            ],
        },
    ),
    G(
        15,
        5,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "0010",  #   error_code 16 NOT_COORDINATOR
            "04 677270",  #   group_id "grp"
            "05 44656164",  #   group_state "Dead"
            "01",  #   protocol_type ""
            "01",  #   protocol_data ""
            "01",  #   members: empty
            "80000000",  #   authorized_operations INT32_MIN
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": 16,
                    "group_id": "grp",
                    "group_state": "Dead",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": -2147483648,
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- ListGroups (16)
    G(16, 0, "request", b"", {"states_filter": [], "types_filter": []}),
    G(
        16,
        5,
        "request",
        h(
            "02 07 537461626c65",  # states_filter ["Stable"]
            "02 09 636f6e73756d6572",  # types_filter ["consumer"]
            "00",  # body tags
        ),
        {"states_filter": ["Stable"], "types_filter": ["consumer"]},
    ),
    G(
        16,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00000001",  # groups: 1 element
            "0003 677270",  #   group_id "grp"
            "0008 636f6e73756d6572",  #   protocol_type "consumer"
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "groups": [
                {
                    "group_id": "grp",
                    "protocol_type": "consumer",
                    "group_state": "",
                    "group_type": "",
                }
            ],
        },
    ),
    G(
        16,
        5,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "02",  # groups: 1 element
            "04 677270",  #   group_id "grp"
            "09 636f6e73756d6572",  #   protocol_type "consumer"
            "07 537461626c65",  #   group_state "Stable"
            "08 636c6173736963",  #   group_type "classic"
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "groups": [
                {
                    "group_id": "grp",
                    "protocol_type": "consumer",
                    "group_state": "Stable",
                    "group_type": "classic",
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- DeleteGroups (42)
    G(
        42,
        1,
        "request",
        h(
            "00000001 0003 677270",  # groups_names ["grp"]
        ),
        {"groups_names": ["grp"]},
    ),
    G(
        42,
        2,
        "request",
        h(
            "02 04 677270",  # groups_names ["grp"]
            "00",  # body tags
        ),
        {"groups_names": ["grp"]},
    ),
    G(
        42,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # results: 1 element
            "0003 677270",  #   group_id "grp"
            "0000",  #   error_code 0
        ),
        {"throttle_time_ms": 0, "results": [{"group_id": "grp", "error_code": 0}]},
    ),
    G(
        42,
        2,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # results: 1 element
            "04 677270",  #   group_id "grp"
            "0044",  #   error_code 68 NON_EMPTY_GROUP
            "00",  #   result tags
            "00",  # body tags
        ),
        {"throttle_time_ms": 0, "results": [{"group_id": "grp", "error_code": 68}]},
    ),
    # ---------------------------------------------------------------- ConsumerGroupHeartbeat (68)
    G(
        68,
        0,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "01",  # member_id ""
            "00000000",  # member_epoch 0 (join)
            "00",  # instance_id null
            "03 7231",  # rack_id "r1"
            "000493e0",  # rebalance_timeout_ms 300000
            "02 02 74",  # subscribed_topic_names ["t"]
            "00",  # server_assignor null
            "01",  # topic_partitions: empty
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "member_id": "",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": "r1",
            "rebalance_timeout_ms": 300000,
            "subscribed_topic_names": ["t"],
            "subscribed_topic_regex": None,  # v1+ only
            "server_assignor": None,
            "topic_partitions": [],
        },
    ),
    G(
        68,
        1,
        "request",
        h(
            "04 677270",  # group_id "grp"
            "03 6d31",  # member_id "m1"
            "00000003",  # member_epoch 3
            "00",  # instance_id null
            "00",  # rack_id null
            "ffffffff",  # rebalance_timeout_ms -1 (unchanged)
            "00",  # subscribed_topic_names null (unchanged)
            "04 742e2a",  # subscribed_topic_regex "t.*"
            "00",  # server_assignor null
            "02",  # topic_partitions: 1 element
            _UUID_HEX,  #   topic_id
            "03 00000000 00000001",  #   partitions [0, 1]
            "00",  #   element tags
            "00",  # body tags
        ),
        {
            "group_id": "grp",
            "member_id": "m1",
            "member_epoch": 3,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None,
            "subscribed_topic_regex": "t.*",
            "server_assignor": None,
            "topic_partitions": [{"topic_id": TOPIC_UUID, "partitions": [0, 1]}],
        },
    ),
    G(
        68,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00",  # error_message null
            "03 6d31",  # member_id "m1"
            "00000001",  # member_epoch 1
            "00001388",  # heartbeat_interval_ms 5000
            "01",  # assignment present
            "02",  #   topic_partitions: 1 element
            _UUID_HEX,  #     topic_id
            "02 00000000",  #     partitions [0]
            "00",  #     element tags
            "00",  #   assignment tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "member_id": "m1",
            "member_epoch": 1,
            "heartbeat_interval_ms": 5000,
            "assignment": {"topic_partitions": [{"topic_id": TOPIC_UUID, "partitions": [0]}]},
        },
    ),
    G(
        68,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "006e",  # error_code 110 FENCED_MEMBER_EPOCH
            "07 66656e636564",  # error_message "fenced"
            "00",  # member_id null
            "ffffffff",  # member_epoch -1
            "00000000",  # heartbeat_interval_ms 0
            "ff",  # assignment null
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 110,
            "error_message": "fenced",
            "member_id": None,
            "member_epoch": -1,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        },
    ),
    # ---------------------------------------------------------------- ConsumerGroupDescribe (69)
    G(
        69,
        0,
        "request",
        h(
            "02 04 677270",  # group_ids ["grp"]
            "01",  # include_authorized_operations true
            "00",  # body tags
        ),
        {"group_ids": ["grp"], "include_authorized_operations": True},
    ),
    G(
        69,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "0000",  #   error_code 0
            "00",  #   error_message null
            "04 677270",  #   group_id "grp"
            "07 537461626c65",  #   group_state "Stable"
            "00000003",  #   group_epoch 3
            "00000003",  #   assignment_epoch 3
            "08 756e69666f726d",  #   assignor_name "uniform"
            "02",  #   members: 1 element
            "03 6d31",  #     member_id "m1"
            "00",  #     instance_id null
            "00",  #     rack_id null
            "00000003",  #     member_epoch 3
            "02 63",  #     client_id "c"
            "0b 2f3132372e302e302e31",  #     client_host "/127.0.0.1"
            "02 02 74",  #     subscribed_topic_names ["t"]
            "00",  #     subscribed_topic_regex null
            "02",  #     assignment.topic_partitions: 1 element
            _UUID_HEX,  #       topic_id
            "02 74",  #       topic_name "t"
            "02 00000000",  #       partitions [0]
            "00",  #       element tags
            "00",  #     assignment tags
            "01",  #     target_assignment.topic_partitions: empty
            "00",  #     target_assignment tags
            "00",  #     member tags
            "80000000",  #   authorized_operations INT32_MIN
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "group_id": "grp",
                    "group_state": "Stable",
                    "group_epoch": 3,
                    "assignment_epoch": 3,
                    "assignor_name": "uniform",
                    "members": [
                        {
                            "member_id": "m1",
                            "instance_id": None,
                            "rack_id": None,
                            "member_epoch": 3,
                            "client_id": "c",
                            "client_host": "/127.0.0.1",
                            "subscribed_topic_names": ["t"],
                            "subscribed_topic_regex": None,
                            "assignment": {
                                "topic_partitions": [
                                    {"topic_id": TOPIC_UUID, "topic_name": "t", "partitions": [0]}
                                ]
                            },
                            "target_assignment": {"topic_partitions": []},
                            "member_type": -1,
                        }
                    ],
                    "authorized_operations": -2147483648,
                }
            ],
        },
    ),
    G(
        69,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "0000",  #   error_code 0
            "00",  #   error_message null
            "04 677270",  #   group_id "grp"
            "07 537461626c65",  #   group_state "Stable"
            "00000003",  #   group_epoch 3
            "00000003",  #   assignment_epoch 3
            "08 756e69666f726d",  #   assignor_name "uniform"
            "02",  #   members: 1 element
            "03 6d31",  #     member_id "m1"
            "00",  #     instance_id null
            "00",  #     rack_id null
            "00000003",  #     member_epoch 3
            "02 63",  #     client_id "c"
            "0b 2f3132372e302e302e31",  #     client_host "/127.0.0.1"
            "02 02 74",  #     subscribed_topic_names ["t"]
            "00",  #     subscribed_topic_regex null
            "02",  #     assignment.topic_partitions: 1 element
            _UUID_HEX,  #       topic_id
            "02 74",  #       topic_name "t"
            "02 00000000",  #       partitions [0]
            "00",  #       element tags
            "00",  #     assignment tags
            "01",  #     target_assignment.topic_partitions: empty
            "00",  #     target_assignment tags
            "01",  #     member_type 1 (consumer member, v1+)
            "00",  #     member tags
            "80000000",  #   authorized_operations INT32_MIN
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "group_id": "grp",
                    "group_state": "Stable",
                    "group_epoch": 3,
                    "assignment_epoch": 3,
                    "assignor_name": "uniform",
                    "members": [
                        {
                            "member_id": "m1",
                            "instance_id": None,
                            "rack_id": None,
                            "member_epoch": 3,
                            "client_id": "c",
                            "client_host": "/127.0.0.1",
                            "subscribed_topic_names": ["t"],
                            "subscribed_topic_regex": None,
                            "assignment": {
                                "topic_partitions": [
                                    {"topic_id": TOPIC_UUID, "topic_name": "t", "partitions": [0]}
                                ]
                            },
                            "target_assignment": {"topic_partitions": []},
                            "member_type": 1,
                        }
                    ],
                    "authorized_operations": -2147483648,
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- OffsetForLeaderEpoch (23)
    G(
        23,
        2,
        "request",
        h(
            "00000001",  # topics: 1 element
            "0001 74",  #   topic "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition 0
            "00000005",  #     current_leader_epoch 5
            "00000004",  #     leader_epoch 4
        ),
        {
            "replica_id": -2,  # v3+ only
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "current_leader_epoch": 5, "leader_epoch": 4}],
                }
            ],
        },
    ),
    G(
        23,
        4,
        "request",
        h(
            "ffffffff",  # replica_id -1 (a consumer)
            "02",  # topics: 1 element
            "02 74",  #   topic "t"
            "02",  #   partitions: 1 element
            "00000001",  #     partition 1
            "00000005",  #     current_leader_epoch 5
            "00000004",  #     leader_epoch 4
            "00",  #     partition tags
            "00",  #   topic tags
            "00",  # body tags
        ),
        {
            "replica_id": -1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 1, "current_leader_epoch": 5, "leader_epoch": 4}],
                }
            ],
        },
    ),
    G(
        23,
        0,
        "response",
        h(
            "00000001",  # topics: 1 element
            "0001 74",  #   topic "t"
            "00000001",  #   partitions: 1 element
            "0000",  #     error_code 0
            "00000000",  #     partition 0
            "0000000000000064",  #     end_offset 100
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"error_code": 0, "partition": 0, "leader_epoch": -1, "end_offset": 100}
                    ],
                }
            ],
        },
    ),
    G(
        23,
        4,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # topics: 1 element
            "02 74",  #   topic "t"
            "02",  #   partitions: 1 element
            "004a",  #     error_code 74 FENCED_LEADER_EPOCH
            "00000000",  #     partition 0
            "ffffffff",  #     leader_epoch -1
            "ffffffffffffffff",  #     end_offset -1
            "00",  #     partition tags
            "00",  #   topic tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"error_code": 74, "partition": 0, "leader_epoch": -1, "end_offset": -1}
                    ],
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- CreatePartitions (37)
    G(
        37,
        1,
        "request",
        h(
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000004",  #   count 4
            "ffffffff",  #   assignments null
            "00007530",  # timeout_ms 30000
            "00",  # validate_only false
        ),
        {
            "topics": [{"name": "t", "count": 4, "assignments": None}],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    ),
    G(
        37,
        2,
        "request",
        h(
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "00000003",  #   count 3
            "02",  #   assignments: 1 element
            "02 00000001",  #     broker_ids [1]
            "00",  #     assignment tags
            "00",  #   topic tags
            "00007530",  # timeout_ms 30000
            "01",  # validate_only true
            "00",  # body tags
        ),
        {
            "topics": [{"name": "t", "count": 3, "assignments": [{"broker_ids": [1]}]}],
            "timeout_ms": 30000,
            "validate_only": True,
        },
    ),
    G(
        37,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # results: 1 element
            "0001 74",  #   name "t"
            "0025",  #   error_code 37 INVALID_PARTITIONS
            "0007 746f6f20666577",  #   error_message "too few"
        ),
        {
            "throttle_time_ms": 0,
            "results": [{"name": "t", "error_code": 37, "error_message": "too few"}],
        },
    ),
    G(
        37,
        3,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # results: 1 element
            "02 74",  #   name "t"
            "0000",  #   error_code 0
            "00",  #   error_message null
            "00",  #   result tags
            "00",  # body tags
        ),
        {"throttle_time_ms": 0, "results": [{"name": "t", "error_code": 0, "error_message": None}]},
    ),
    # ---------------------------------------------------------------- DeleteRecords (21)
    G(
        21,
        1,
        "request",
        h(
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000000a",  #     offset 10
            "00003a98",  # timeout_ms 15000
        ),
        {
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 10}]}],
            "timeout_ms": 15000,
        },
    ),
    G(
        21,
        2,
        "request",
        h(
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000000a",  #     offset 10
            "00",  #     partition tags
            "00",  #   topic tags
            "00003a98",  # timeout_ms 15000
            "00",  # body tags
        ),
        {
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 10}]}],
            "timeout_ms": 15000,
        },
    ),
    G(
        21,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000000a",  #     low_watermark 10
            "0000",  #     error_code 0
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 0, "low_watermark": 10, "error_code": 0}],
                }
            ],
        },
    ),
    G(
        21,
        2,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # topics: 1 element
            "02 74",  #   name "t"
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "ffffffffffffffff",  #     low_watermark -1
            "0001",  #     error_code 1 OFFSET_OUT_OF_RANGE
            "00",  #     partition tags
            "00",  #   topic tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 0, "low_watermark": -1, "error_code": 1}],
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- InitProducerId (22)
    G(
        22,
        1,
        "request",
        h(
            "ffff",  # transactional_id null (idempotent producer)
            "0000ea60",  # transaction_timeout_ms 60000
        ),
        {
            "transactional_id": None,
            "transaction_timeout_ms": 60000,
            "producer_id": -1,
            "producer_epoch": -1,  # v3+ only
        },
    ),
    G(
        22,
        4,
        "request",
        h(
            "03 7478",  # transactional_id "tx"
            "0000ea60",  # transaction_timeout_ms 60000
            "000000000000002a",  # producer_id 42
            "0003",  # producer_epoch 3
            "00",  # body tags
        ),
        {
            "transactional_id": "tx",
            "transaction_timeout_ms": 60000,
            "producer_id": 42,
            "producer_epoch": 3,
        },
    ),
    G(
        22,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "0000000000000007",  # producer_id 7
            "0000",  # producer_epoch 0
        ),
        {"throttle_time_ms": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 0},
    ),
    G(
        22,
        5,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0033",  # error_code 51 CONCURRENT_TRANSACTIONS
            "ffffffffffffffff",  # producer_id -1
            "ffff",  # producer_epoch -1
            "00",  # body tags
        ),
        {"throttle_time_ms": 0, "error_code": 51, "producer_id": -1, "producer_epoch": -1},
    ),
    # ---------------------------------------------------------------- DescribeConfigs (32)
    G(
        32,
        1,
        "request",
        h(
            "00000001",  # resources: 1 element
            "02",  #   resource_type 2 (topic)
            "0001 74",  #   resource_name "t"
            "ffffffff",  #   configuration_keys null (every key)
            "00",  # include_synonyms false
        ),
        {
            "resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,  # v3+ only
        },
    ),
    G(
        32,
        4,
        "request",
        h(
            "02",  # resources: 1 element
            "02",  #   resource_type 2 (topic)
            "02 74",  #   resource_name "t"
            "02 0d 726574656e74696f6e2e6d73",  # configuration_keys ["retention.ms"]
            "00",  #   resource tags
            "01",  # include_synonyms true
            "00",  # include_documentation false
            "00",  # body tags
        ),
        {
            "resources": [
                {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]}
            ],
            "include_synonyms": True,
            "include_documentation": False,
        },
    ),
    G(
        32,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # results: 1 element
            "0000",  #   error_code 0
            "ffff",  #   error_message null
            "02",  #   resource_type 2 (topic)
            "0001 74",  #   resource_name "t"
            "00000001",  #   configs: 1 element
            "000c 726574656e74696f6e2e6d73",  # name "retention.ms"
            "0004 31303030",  #     value "1000"
            "00",  #     read_only false
            "01",  #     config_source 1 (dynamic topic config)
            "00",  #     is_sensitive false
            "00000001",  #     synonyms: 1 element
            "000c 726574656e74696f6e2e6d73",  # name "retention.ms"
            "0004 31303030",  #       value "1000"
            "01",  #       source 1
        ),
        {
            "throttle_time_ms": 0,
            "results": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {
                            "name": "retention.ms",
                            "value": "1000",
                            "read_only": False,
                            "config_source": 1,
                            "is_sensitive": False,
                            "synonyms": [{"name": "retention.ms", "value": "1000", "source": 1}],
                            "config_type": 0,
                            "documentation": None,  # v3+ only
                        }
                    ],
                }
            ],
        },
    ),
    G(
        32,
        4,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # results: 1 element
            "0000",  #   error_code 0
            "00",  #   error_message null
            "02",  #   resource_type 2 (topic)
            "02 74",  #   resource_name "t"
            "02",  #   configs: 1 element
            "0d 726574656e74696f6e2e6d73",  # name "retention.ms"
            "00",  #     value null (sensitive)
            "01",  #     read_only true
            "05",  #     config_source 5 (default)
            "01",  #     is_sensitive true
            "01",  #     synonyms: empty
            "05",  #     config_type 5 (long)
            "03 6f6b",  #     documentation "ok"
            "00",  #     config tags
            "00",  #   result tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "results": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {
                            "name": "retention.ms",
                            "value": None,
                            "read_only": True,
                            "config_source": 5,
                            "is_sensitive": True,
                            "synonyms": [],
                            "config_type": 5,
                            "documentation": "ok",
                        }
                    ],
                }
            ],
        },
    ),
    # ---------------------------------------------------------- IncrementalAlterConfigs (44)
    G(
        44,
        0,
        "request",
        h(
            "00000001",  # resources: 1 element
            "20",  #   resource_type 32 (group)
            "0001 67",  #   resource_name "g"
            "00000001",  #   configs: 1 element
            "0017 73686172652e6175746f2e6f66667365742e7265736574",  # "share.auto.offset.reset"
            "00",  #     config_operation 0 (set)
            "0008 6561726c69657374",  #     value "earliest"
            "00",  # validate_only false
        ),
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": "g",
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
    ),
    G(
        44,
        1,
        "request",
        h(
            "02",  # resources: 1 element
            "20",  #   resource_type 32 (group)
            "02 67",  #   resource_name "g"
            "02",  #   configs: 1 element
            "18 73686172652e6175746f2e6f66667365742e7265736574",  # "share.auto.offset.reset"
            "01",  #     config_operation 1 (delete)
            "00",  #     value null
            "00",  #     config tags
            "00",  #   resource tags
            "01",  # validate_only true
            "00",  # body tags
        ),
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": "g",
                    "configs": [
                        {"name": "share.auto.offset.reset", "config_operation": 1, "value": None}
                    ],
                }
            ],
            "validate_only": True,
        },
    ),
    G(
        44,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "00000001",  # responses: 1 element
            "0028",  #   error_code 40 (INVALID_CONFIG)
            "0003 626164",  #   error_message "bad"
            "20",  #   resource_type 32 (group)
            "0001 67",  #   resource_name "g"
        ),
        {
            "throttle_time_ms": 0,
            "responses": [
                {
                    "error_code": 40,
                    "error_message": "bad",
                    "resource_type": 32,
                    "resource_name": "g",
                }
            ],
        },
    ),
    G(
        44,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # responses: 1 element
            "0000",  #   error_code 0
            "00",  #   error_message null
            "20",  #   resource_type 32 (group)
            "02 67",  #   resource_name "g"
            "00",  #   response tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "responses": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 32,
                    "resource_name": "g",
                }
            ],
        },
    ),
    # ---------------------------------------------------------------- OffsetDelete (47)
    G(
        47,
        0,
        "request",
        h(
            "0003 677270",  # group_id "grp"
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
        ),
        {"group_id": "grp", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    ),
    G(
        47,
        0,
        "response",
        h(
            "0000",  # error_code 0
            "00000000",  # throttle_time_ms 0
            "00000001",  # topics: 1 element
            "0001 74",  #   name "t"
            "00000001",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0056",  #     error_code 86 GROUP_SUBSCRIBED_TO_TOPIC
        ),
        {
            "error_code": 0,
            "throttle_time_ms": 0,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 86}]}],
        },
    ),
]

_IDS = [g.id for g in GOLDENS]


def test_goldens_cover_every_api_both_ways() -> None:
    """Each API here has a request and a response golden at a flexible version, and at a
    non-flexible one where the API has any."""
    seen: set[tuple[int, str, bool]] = {
        (g.api_key, g.kind, _APIS[g.api_key].is_flexible(g.version)) for g in GOLDENS
    }
    for api in _APIS.values():
        versions = range(api.min_version, api.max_version + 1)
        for kind in ("request", "response"):
            for flexible in {api.is_flexible(v) for v in versions}:
                assert (api.key, kind, flexible) in seen, (api.name, kind, flexible)


@pytest.mark.parametrize("golden", GOLDENS, ids=_IDS)
def test_encode_matches_golden_bytes(golden: Golden) -> None:
    if golden.kind == "request":
        frame = encode_request(
            golden.api_key, golden.version, CORRELATION_ID, CLIENT_ID, golden.value
        )
        expected = _request_frame(golden.api_key, golden.version, golden.body)
    else:
        frame = encode_response(golden.api_key, golden.version, CORRELATION_ID, golden.value)
        expected = _response_frame(golden.api_key, golden.version, golden.body)
    assert bytes(frame).hex() == expected.hex()


@pytest.mark.parametrize("golden", GOLDENS, ids=_IDS)
def test_decode_matches_golden_dict(golden: Golden) -> None:
    if golden.kind == "request":
        frame = _request_frame(golden.api_key, golden.version, golden.body)
        header, body = decode_request(frame[4:])
        assert header.api_key == golden.api_key
        assert header.api_version == golden.version
        assert header.correlation_id == CORRELATION_ID
        assert header.client_id == CLIENT_ID
    else:
        frame = _response_frame(golden.api_key, golden.version, golden.body)
        correlation_id, body = decode_response(golden.api_key, golden.version, frame[4:])
        assert correlation_id == CORRELATION_ID
    assert _plain(body) == golden.value


@pytest.mark.parametrize(
    "golden", [g for g in GOLDENS if g.body], ids=[g.id for g in GOLDENS if g.body]
)
def test_truncated_golden_raises_protocol_error(golden: Golden) -> None:
    """Cutting the last byte off any golden body must fail cleanly."""
    from kafkaconsumer.errors import KafkaProtocolError

    if golden.kind == "request":
        frame = _request_frame(golden.api_key, golden.version, golden.body[:-1])
        with pytest.raises(KafkaProtocolError):
            decode_request(frame[4:])
    else:
        frame = _response_frame(golden.api_key, golden.version, golden.body[:-1])
        with pytest.raises(KafkaProtocolError):
            decode_response(golden.api_key, golden.version, frame[4:])


def test_field_absent_from_version_is_dropped_when_ignorable() -> None:
    """JoinGroup's reason exists only from v8 and is ignorable: at v5 it is silently dropped."""
    body = dict(GOLDENS[0].value, reason="because")
    frame = encode_request(11, 5, CORRELATION_ID, CLIENT_ID, body)
    assert bytes(frame) == _request_frame(11, 5, GOLDENS[0].body)


def test_non_ignorable_field_at_old_version_raises() -> None:
    """A static member id cannot be sent with JoinGroup v4 (group_instance_id is v5+ and not
    ignorable): silently dropping it would turn a static member into a dynamic one."""
    from kafkaconsumer.errors import KafkaProtocolError

    body = dict(GOLDENS[0].value, group_instance_id="i1")
    with pytest.raises(KafkaProtocolError):
        encode_request(11, 4, CORRELATION_ID, CLIENT_ID, body)
