"""Golden wire bytes for the share-group APIs (KIP-932).

Each expected body is written out by hand from the Apache Kafka message specs, one field per
line, and checked both ways: our encoder produces exactly these bytes and our decoder turns them
back into exactly the expected dict. Every share API is flexible: compact strings, arrays and
bytes carry an unsigned-varint length + 1 (00 = null), every struct and body ends with a
tagged-field count (00 = none), and a nullable single struct is preceded by ff (null) or 01.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.protocol import decode_request, decode_response, encode_request, encode_response
from kafkaconsumer.protocol.messages import share

pytestmark = pytest.mark.timeout(60)

_APIS = {api.key: api for api in share.APIS}
CORRELATION_ID = 7
CLIENT_ID = "golden"
TOPIC_UUID = uuid.UUID("0123456789abcdef0123456789abcdef")
U = "0123456789abcdef0123456789abcdef"


def h(*parts: str) -> bytes:
    """Join hex fragments (spaces allowed) into bytes."""
    return bytes.fromhex("".join(parts))


@dataclass(frozen=True)
class Golden:
    """One message: which API, version and direction, its body bytes and its decoded dict."""

    api_key: int
    version: int
    kind: str
    body: bytes
    value: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{_APIS[self.api_key].name}-v{self.version}-{self.kind}"


def _request_frame(api_key: int, version: int, body: bytes) -> bytes:
    # Request header v2: key, version, correlation id, int16-length client id, empty tags.
    client = CLIENT_ID.encode()
    payload = struct.pack(">hhih", api_key, version, CORRELATION_ID, len(client)) + client
    payload += b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def _response_frame(body: bytes) -> bytes:
    # Response header v1: correlation id and an empty tagged-field section.
    payload = struct.pack(">i", CORRELATION_ID) + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not (k == "_unknown_tags" and not v)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


G = Golden
GOLDENS: list[Golden] = [
    # ------------------------------------------------------------ ShareGroupHeartbeat (76)
    G(
        76,
        1,
        "request",
        h(
            "02 67",  # group_id "g"
            "03 6d31",  # member_id "m1"
            "00000000",  # member_epoch 0 (join)
            "00",  # rack_id null
            "02 02 74",  # subscribed_topic_names ["t"]
            "00",  # body tags
        ),
        {
            "group_id": "g",
            "member_id": "m1",
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": ["t"],
        },
    ),
    G(
        76,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00",  # error_message null
            "03 6d31",  # member_id "m1"
            "00000002",  # member_epoch 2
            "00001388",  # heartbeat_interval_ms 5000
            "01",  # assignment present
            "02",  #   topic_partitions: 1 element
            U,  #     topic_id
            "03 00000000 00000001",  #     partitions [0, 1]
            "00",  #     element tags
            "00",  #   assignment tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "member_id": "m1",
            "member_epoch": 2,
            "heartbeat_interval_ms": 5000,
            "assignment": {"topic_partitions": [{"topic_id": TOPIC_UUID, "partitions": [0, 1]}]},
        },
    ),
    # ------------------------------------------------------------ ShareGroupDescribe (77)
    G(
        77,
        1,
        "request",
        h(
            "02 02 67",  # group_ids ["g"]
            "00",  # include_authorized_operations false
            "00",  # body tags
        ),
        {"group_ids": ["g"], "include_authorized_operations": False},
    ),
    G(
        77,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "0000",  #   error_code 0
            "00",  #   error_message null
            "02 67",  #   group_id "g"
            "07 537461626c65",  #   group_state "Stable"
            "00000003",  #   group_epoch 3
            "00000003",  #   assignment_epoch 3
            "07 73696d706c65",  #   assignor_name "simple"
            "02",  #   members: 1 element
            "03 6d31",  #     member_id "m1"
            "00",  #     rack_id null
            "00000003",  #     member_epoch 3
            "02 63",  #     client_id "c"
            "03 2f68",  #     client_host "/h"
            "02 02 74",  #     subscribed_topic_names ["t"]
            "02",  #     assignment.topic_partitions: 1 element
            U,  #       topic_id
            "02 74",  #       topic_name "t"
            "02 00000000",  #       partitions [0]
            "00",  #       element tags
            "00",  #     assignment tags
            "00",  #     member tags
            "80000000",  #   authorized_operations: not requested
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "group_id": "g",
                    "group_state": "Stable",
                    "group_epoch": 3,
                    "assignment_epoch": 3,
                    "assignor_name": "simple",
                    "members": [
                        {
                            "member_id": "m1",
                            "rack_id": None,
                            "member_epoch": 3,
                            "client_id": "c",
                            "client_host": "/h",
                            "subscribed_topic_names": ["t"],
                            "assignment": {
                                "topic_partitions": [
                                    {"topic_id": TOPIC_UUID, "topic_name": "t", "partitions": [0]}
                                ]
                            },
                        }
                    ],
                    "authorized_operations": -(2**31),
                }
            ],
        },
    ),
    # ------------------------------------------------------------ ShareFetch (78)
    G(
        78,
        2,
        "request",
        h(
            "02 67",  # group_id "g"
            "03 6d31",  # member_id "m1"
            "00000001",  # share_session_epoch 1
            "000001f4",  # max_wait_ms 500
            "00000001",  # min_bytes 1
            "7fffffff",  # max_bytes
            "000001f4",  # max_records 500
            "000001f4",  # batch_size 500
            "01",  # share_acquire_mode 1 (record_limit)
            "00",  # is_renew_ack false
            "02",  # topics: 1 element
            U,  #   topic_id
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "02",  #     acknowledgement_batches: 1 element
            "0000000000000005",  #       first_offset 5
            "0000000000000007",  #       last_offset 7
            "04 01 00 03",  #       acknowledge_types [accept, gap, reject]
            "00",  #       batch tags
            "00",  #     partition tags
            "00",  #   topic tags
            "01",  # forgotten_topics_data: empty
            "00",  # body tags
        ),
        {
            "group_id": "g",
            "member_id": "m1",
            "share_session_epoch": 1,
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 0x7FFFFFFF,
            "max_records": 500,
            "batch_size": 500,
            "share_acquire_mode": 1,
            "is_renew_ack": False,
            "topics": [
                {
                    "topic_id": TOPIC_UUID,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "acknowledgement_batches": [
                                {
                                    "first_offset": 5,
                                    "last_offset": 7,
                                    "acknowledge_types": [1, 0, 3],
                                }
                            ],
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
        },
    ),
    G(
        78,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00",  # error_message null
            "00007530",  # acquisition_lock_timeout_ms 30000
            "02",  # responses: 1 element
            U,  #   topic_id
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0000",  #     error_code 0
            "00",  #     error_message null
            "0000",  #     acknowledge_error_code 0
            "00",  #     acknowledge_error_message null
            "00000001 00000000 00",  #     current_leader: id 1, epoch 0, tags
            "04 010203",  #     records: 3 bytes
            "02",  #     acquired_records: 1 element
            "0000000000000000",  #       first_offset 0
            "0000000000000002",  #       last_offset 2
            "0001",  #       delivery_count 1
            "00",  #       element tags
            "00",  #     partition tags
            "00",  #   topic tags
            "01",  # node_endpoints: empty
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "acquisition_lock_timeout_ms": 30000,
            "responses": [
                {
                    "topic_id": TOPIC_UUID,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "error_message": None,
                            "acknowledge_error_code": 0,
                            "acknowledge_error_message": None,
                            "current_leader": {"leader_id": 1, "leader_epoch": 0},
                            "records": b"\x01\x02\x03",
                            "acquired_records": [
                                {"first_offset": 0, "last_offset": 2, "delivery_count": 1}
                            ],
                        }
                    ],
                }
            ],
            "node_endpoints": [],
        },
    ),
    # ------------------------------------------------------------ ShareAcknowledge (79)
    G(
        79,
        2,
        "request",
        h(
            "02 67",  # group_id "g"
            "03 6d31",  # member_id "m1"
            "00000002",  # share_session_epoch 2
            "01",  # is_renew_ack true
            "02",  # topics: 1 element
            U,  #   topic_id
            "02",  #   partitions: 1 element
            "00000003",  #     partition_index 3
            "02",  #     acknowledgement_batches: 1 element
            "0000000000000009",  #       first_offset 9
            "0000000000000009",  #       last_offset 9
            "02 04",  #       acknowledge_types [renew]
            "00 00 00",  #       batch, partition, topic tags
            "00",  # body tags
        ),
        {
            "group_id": "g",
            "member_id": "m1",
            "share_session_epoch": 2,
            "is_renew_ack": True,
            "topics": [
                {
                    "topic_id": TOPIC_UUID,
                    "partitions": [
                        {
                            "partition_index": 3,
                            "acknowledgement_batches": [
                                {"first_offset": 9, "last_offset": 9, "acknowledge_types": [4]}
                            ],
                        }
                    ],
                }
            ],
        },
    ),
    G(
        79,
        2,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00",  # error_message null
            "00003a98",  # acquisition_lock_timeout_ms 15000
            "02",  # responses: 1 element
            U,  #   topic_id
            "02",  #   partitions: 1 element
            "00000003",  #     partition_index 3
            "0079",  #     error_code 121 (INVALID_RECORD_STATE)
            "00",  #     error_message null
            "ffffffff ffffffff 00",  #     current_leader: unknown, tags
            "00 00",  #     partition, topic tags
            "02",  # node_endpoints: 1 element
            "00000002",  #   node_id 2
            "02 68",  #   host "h"
            "00002384",  #   port 9092
            "00",  #   rack null
            "00",  #   endpoint tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "acquisition_lock_timeout_ms": 15000,
            "responses": [
                {
                    "topic_id": TOPIC_UUID,
                    "partitions": [
                        {
                            "partition_index": 3,
                            "error_code": 121,
                            "error_message": None,
                            "current_leader": {"leader_id": -1, "leader_epoch": -1},
                        }
                    ],
                }
            ],
            "node_endpoints": [{"node_id": 2, "host": "h", "port": 9092, "rack": None}],
        },
    ),
    # ------------------------------------------------------------ DescribeShareGroupOffsets (90)
    G(
        90,
        1,
        "request",
        h(
            "02",  # groups: 1 element
            "02 67",  #   group_id "g"
            "00",  #   topics null (every topic)
            "00",  #   group tags
            "00",  # body tags
        ),
        {"groups": [{"group_id": "g", "topics": None}]},
    ),
    G(
        90,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "02 67",  #   group_id "g"
            "02",  #   topics: 1 element
            "02 74",  #     topic_name "t"
            U,  #     topic_id
            "02",  #     partitions: 1 element
            "00000000",  #       partition_index 0
            "0000000000000004",  #       start_offset 4
            "00000000",  #       leader_epoch 0
            "0000",  #       error_code 0
            "00",  #       error_message null
            "00 00",  #       partition, topic tags
            "0000",  #   error_code 0
            "00",  #   error_message null
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "group_id": "g",
                    "topics": [
                        {
                            "topic_name": "t",
                            "topic_id": TOPIC_UUID,
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "start_offset": 4,
                                    "leader_epoch": 0,
                                    "lag": -1,  # v1+ only
                                    "error_code": 0,
                                    "error_message": None,
                                }
                            ],
                        }
                    ],
                    "error_code": 0,
                    "error_message": None,
                }
            ],
        },
    ),
    G(
        90,
        1,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "02",  # groups: 1 element
            "02 67",  #   group_id "g"
            "02",  #   topics: 1 element
            "02 74",  #     topic_name "t"
            U,  #     topic_id
            "02",  #     partitions: 1 element
            "00000000",  #       partition_index 0
            "0000000000000004",  #       start_offset 4
            "00000000",  #       leader_epoch 0
            "0000000000000006",  #       lag 6
            "0000",  #       error_code 0
            "00",  #       error_message null
            "00 00",  #       partition, topic tags
            "0000",  #   error_code 0
            "00",  #   error_message null
            "00",  #   group tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "group_id": "g",
                    "topics": [
                        {
                            "topic_name": "t",
                            "topic_id": TOPIC_UUID,
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "start_offset": 4,
                                    "leader_epoch": 0,
                                    "lag": 6,
                                    "error_code": 0,
                                    "error_message": None,
                                }
                            ],
                        }
                    ],
                    "error_code": 0,
                    "error_message": None,
                }
            ],
        },
    ),
    # ------------------------------------------------------------ AlterShareGroupOffsets (91)
    G(
        91,
        0,
        "request",
        h(
            "02 67",  # group_id "g"
            "02",  # topics: 1 element
            "02 74",  #   topic_name "t"
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "000000000000000a",  #     start_offset 10
            "00 00",  #     partition, topic tags
            "00",  # body tags
        ),
        {
            "group_id": "g",
            "topics": [
                {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 10}]}
            ],
        },
    ),
    G(
        91,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00",  # error_message null
            "02",  # responses: 1 element
            "02 74",  #   topic_name "t"
            U,  #   topic_id
            "02",  #   partitions: 1 element
            "00000000",  #     partition_index 0
            "0000",  #     error_code 0
            "00",  #     error_message null
            "00 00",  #     partition, topic tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "responses": [
                {
                    "topic_name": "t",
                    "topic_id": TOPIC_UUID,
                    "partitions": [{"partition_index": 0, "error_code": 0, "error_message": None}],
                }
            ],
        },
    ),
    # ------------------------------------------------------------ DeleteShareGroupOffsets (92)
    G(
        92,
        0,
        "request",
        h(
            "02 67",  # group_id "g"
            "02",  # topics: 1 element
            "02 74",  #   topic_name "t"
            "00",  #   topic tags
            "00",  # body tags
        ),
        {"group_id": "g", "topics": [{"topic_name": "t"}]},
    ),
    G(
        92,
        0,
        "response",
        h(
            "00000000",  # throttle_time_ms 0
            "0000",  # error_code 0
            "00",  # error_message null
            "02",  # responses: 1 element
            "02 74",  #   topic_name "t"
            U,  #   topic_id
            "0045",  #   error_code 69 (GROUP_ID_NOT_FOUND)
            "00",  #   error_message null
            "00",  #   topic tags
            "00",  # body tags
        ),
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "responses": [
                {
                    "topic_name": "t",
                    "topic_id": TOPIC_UUID,
                    "error_code": 69,
                    "error_message": None,
                }
            ],
        },
    ),
]
_IDS = [g.id for g in GOLDENS]


def test_goldens_cover_every_share_api_both_ways() -> None:
    """Each share API has a request and a response golden."""
    seen = {(g.api_key, g.kind) for g in GOLDENS}
    for api in share.APIS:
        for kind in ("request", "response"):
            assert (api.key, kind) in seen, (api.name, kind)


@pytest.mark.parametrize("golden", GOLDENS, ids=_IDS)
def test_encode_matches_golden_bytes(golden: Golden) -> None:
    """Our encoder writes exactly the hand-written bytes."""
    if golden.kind == "request":
        frame = encode_request(
            golden.api_key, golden.version, CORRELATION_ID, CLIENT_ID, golden.value
        )
        expected = _request_frame(golden.api_key, golden.version, golden.body)
    else:
        frame = encode_response(golden.api_key, golden.version, CORRELATION_ID, golden.value)
        expected = _response_frame(golden.body)
    assert bytes(frame).hex() == expected.hex()


@pytest.mark.parametrize("golden", GOLDENS, ids=_IDS)
def test_decode_matches_golden_dict(golden: Golden) -> None:
    """Our decoder turns the hand-written bytes into exactly the expected fields."""
    if golden.kind == "request":
        header, body = decode_request(
            _request_frame(golden.api_key, golden.version, golden.body)[4:]
        )
        assert (header.api_key, header.api_version) == (golden.api_key, golden.version)
    else:
        correlation_id, body = decode_response(
            golden.api_key, golden.version, _response_frame(golden.body)[4:]
        )
        assert correlation_id == CORRELATION_ID
    assert _plain(body) == golden.value


def test_acquire_mode_is_dropped_below_version_2() -> None:
    """ShareFetch v1 has no acquire mode: the ignorable field is left out of the request."""
    v2 = GOLDENS[4].value
    body = {k: v for k, v in v2.items() if k not in ("share_acquire_mode", "is_renew_ack")}
    with_mode = dict(body, share_acquire_mode=1)
    assert bytes(encode_request(78, 1, CORRELATION_ID, CLIENT_ID, with_mode)) == bytes(
        encode_request(78, 1, CORRELATION_ID, CLIENT_ID, body)
    )


def test_renew_flag_cannot_be_sent_below_version_2() -> None:
    """RENEW acknowledgements need ShareFetch/ShareAcknowledge v2: a v1 request carrying the
    renew flag is refused rather than silently sent without it."""
    body = dict(GOLDENS[6].value)
    with pytest.raises(KafkaProtocolError):
        encode_request(79, 1, CORRELATION_ID, CLIENT_ID, body)
