"""Share-group APIs (KIP-932, queues for Kafka).

Definitions (data, not code) of the share-group membership request (ShareGroupHeartbeat), the
share-fetch path (ShareFetch, ShareAcknowledge) and share-group administration
(ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets).

Field facts follow the Apache Kafka message specs; names are the snake_case of the spec names.
Version 0 of the share APIs was an early-access version that Kafka 4.1 removed, so the member
and fetch APIs start at version 1. ShareFetch and ShareAcknowledge v2 add the acquire mode
(KIP-1206) and RENEW acknowledgements (KIP-1222).
"""

from __future__ import annotations

from kafkaconsumer.protocol.schema import Api, Field, Struct

__all__ = [
    "APIS",
    "SHARE_GROUP_HEARTBEAT",
    "SHARE_GROUP_DESCRIBE",
    "SHARE_FETCH",
    "SHARE_ACKNOWLEDGE",
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "ALTER_SHARE_GROUP_OFFSETS",
    "DELETE_SHARE_GROUP_OFFSETS",
]

# The smallest int32: Kafka's marker for "authorized operations were not requested".
_AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)

_TOPIC_PARTITIONS = [
    Field("topic_id", "uuid"),
    Field("partitions", "[]int32"),
]

#: ShareGroupHeartbeat (key 76): a share-group member joins (epoch 0), heartbeats, receives the
#: broker's assignment and leaves (epoch -1). There is no client-side assignment and no
#: revocation step: the member takes whatever the latest assignment names.
SHARE_GROUP_HEARTBEAT = Api(
    76,
    "ShareGroupHeartbeat",
    "1-1",
    "0+",
    request=[
        Field("group_id", "string"),
        Field("member_id", "string"),
        Field("member_epoch", "int32"),
        # The null defaults mean "unchanged since the last heartbeat".
        Field("rack_id", "string", nullable="0+", default=None),
        Field("subscribed_topic_names", "[]string", nullable="0+", default=None),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("member_id", "string", nullable="0+", default=None),
        Field("member_epoch", "int32"),
        Field("heartbeat_interval_ms", "int32"),
        Field(
            "assignment",
            Struct([Field("topic_partitions", _TOPIC_PARTITIONS)]),
            nullable="0+",
            default=None,
        ),
    ],
)

#: ShareGroupDescribe (key 77): the state, epochs and members (with their assignments) of
#: share groups.
SHARE_GROUP_DESCRIBE = Api(
    77,
    "ShareGroupDescribe",
    "1-1",
    "0+",
    request=[
        Field("group_ids", "[]string"),
        Field("include_authorized_operations", "bool"),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field(
            "groups",
            [
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+", default=None),
                Field("group_id", "string"),
                Field("group_state", "string"),
                Field("group_epoch", "int32"),
                Field("assignment_epoch", "int32"),
                Field("assignor_name", "string"),
                Field(
                    "members",
                    [
                        Field("member_id", "string"),
                        Field("rack_id", "string", nullable="0+", default=None),
                        Field("member_epoch", "int32"),
                        Field("client_id", "string"),
                        Field("client_host", "string"),
                        Field("subscribed_topic_names", "[]string"),
                        Field(
                            "assignment",
                            Struct(
                                [
                                    Field(
                                        "topic_partitions",
                                        [
                                            Field("topic_id", "uuid"),
                                            Field("topic_name", "string"),
                                            Field("partitions", "[]int32"),
                                        ],
                                    )
                                ]
                            ),
                        ),
                    ],
                ),
                Field("authorized_operations", "int32", default=_AUTHORIZED_OPERATIONS_UNKNOWN),
            ],
        ),
    ],
)

# One batch of acknowledgements: a range of offsets and either one type for the whole range or
# one type per offset (0 gap, 1 accept, 2 release, 3 reject, 4 renew).
_ACKNOWLEDGEMENT_BATCHES = Field(
    "acknowledgement_batches",
    [
        Field("first_offset", "int64"),
        Field("last_offset", "int64"),
        Field("acknowledge_types", "[]int8"),
    ],
)

_LEADER = Field(
    "current_leader",
    Struct([Field("leader_id", "int32"), Field("leader_epoch", "int32")]),
)

_NODE_ENDPOINTS = Field(
    "node_endpoints",
    [
        Field("node_id", "int32"),
        Field("host", "string"),
        Field("port", "int32"),
        Field("rack", "string", nullable="0+", default=None),
    ],
)

#: ShareFetch (key 78): fetches records for a share session and piggybacks acknowledgements.
#: Share session epoch 0 opens a session, -1 closes it, otherwise it counts up per request.
#: The response names, per partition, the offset ranges this member acquired with their
#: delivery counts; records outside those ranges are not the member's to hand out.
SHARE_FETCH = Api(
    78,
    "ShareFetch",
    "1-2",
    "0+",
    request=[
        Field("group_id", "string", nullable="0+", default=None),
        Field("member_id", "string", nullable="0+"),
        Field("share_session_epoch", "int32"),
        Field("max_wait_ms", "int32"),
        Field("min_bytes", "int32"),
        Field("max_bytes", "int32", default=0x7FFFFFFF),
        # May be exceeded to keep whole batches (batch_optimized mode).
        Field("max_records", "int32"),
        Field("batch_size", "int32"),
        # 0 batch_optimized, 1 record_limit (KIP-1206).
        Field("share_acquire_mode", "int8", "2+", default=0, ignorable=True),
        Field("is_renew_ack", "bool", "2+", default=False),
        Field(
            "topics",
            [
                Field("topic_id", "uuid"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        _ACKNOWLEDGEMENT_BATCHES,
                    ],
                ),
            ],
        ),
        Field("forgotten_topics_data", _TOPIC_PARTITIONS),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", "int32"),
        Field(
            "responses",
            [
                Field("topic_id", "uuid"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("error_code", "int16"),
                        Field("error_message", "string", nullable="0+", default=None),
                        Field("acknowledge_error_code", "int16"),
                        Field("acknowledge_error_message", "string", nullable="0+", default=None),
                        _LEADER,
                        # Never null from v1 on: an empty partition carries empty bytes.
                        Field("records", "records", default=b""),
                        Field(
                            "acquired_records",
                            [
                                Field("first_offset", "int64"),
                                Field("last_offset", "int64"),
                                Field("delivery_count", "int16"),
                            ],
                        ),
                    ],
                ),
            ],
        ),
        _NODE_ENDPOINTS,
    ],
)

#: ShareAcknowledge (key 79): acknowledgements on their own (commit_sync, commit_async, close)
#: in the member's share session, without fetching.
SHARE_ACKNOWLEDGE = Api(
    79,
    "ShareAcknowledge",
    "1-2",
    "0+",
    request=[
        Field("group_id", "string", nullable="0+", default=None),
        Field("member_id", "string", nullable="0+"),
        Field("share_session_epoch", "int32"),
        Field("is_renew_ack", "bool", "2+", default=False),
        Field(
            "topics",
            [
                Field("topic_id", "uuid"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        _ACKNOWLEDGEMENT_BATCHES,
                    ],
                ),
            ],
        ),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", "int32", "2+", ignorable=True),
        Field(
            "responses",
            [
                Field("topic_id", "uuid"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("error_code", "int16"),
                        Field("error_message", "string", nullable="0+", default=None),
                        _LEADER,
                    ],
                ),
            ],
        ),
        _NODE_ENDPOINTS,
    ],
)

#: DescribeShareGroupOffsets (key 90): each partition's share-partition start offset (SPSO) of
#: share groups; null topics asks for every topic the group has state for. v1 adds the lag
#: (KIP-1226).
DESCRIBE_SHARE_GROUP_OFFSETS = Api(
    90,
    "DescribeShareGroupOffsets",
    "0-1",
    "0+",
    request=[
        Field(
            "groups",
            [
                Field("group_id", "string"),
                Field(
                    "topics",
                    [
                        Field("topic_name", "string"),
                        Field("partitions", "[]int32"),
                    ],
                    nullable="0+",
                    default=None,
                ),
            ],
        ),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field(
            "groups",
            [
                Field("group_id", "string"),
                Field(
                    "topics",
                    [
                        Field("topic_name", "string"),
                        Field("topic_id", "uuid"),
                        Field(
                            "partitions",
                            [
                                Field("partition_index", "int32"),
                                Field("start_offset", "int64"),
                                Field("leader_epoch", "int32"),
                                Field("lag", "int64", "1+", default=-1, ignorable=True),
                                Field("error_code", "int16"),
                                Field("error_message", "string", nullable="0+", default=None),
                            ],
                        ),
                    ],
                ),
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+", default=None),
            ],
        ),
    ],
)

#: AlterShareGroupOffsets (key 91): sets the share-partition start offsets of an empty share
#: group (the share-group form of resetting offsets).
ALTER_SHARE_GROUP_OFFSETS = Api(
    91,
    "AlterShareGroupOffsets",
    "0-0",
    "0+",
    request=[
        Field("group_id", "string"),
        Field(
            "topics",
            [
                Field("topic_name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("start_offset", "int64"),
                    ],
                ),
            ],
        ),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field(
            "responses",
            [
                Field("topic_name", "string"),
                Field("topic_id", "uuid"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("error_code", "int16"),
                        Field("error_message", "string", nullable="0+", default=None),
                    ],
                ),
            ],
        ),
    ],
)

#: DeleteShareGroupOffsets (key 92): forgets a share group's state for whole topics.
DELETE_SHARE_GROUP_OFFSETS = Api(
    92,
    "DeleteShareGroupOffsets",
    "0-0",
    "0+",
    request=[
        Field("group_id", "string"),
        Field("topics", [Field("topic_name", "string")]),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field(
            "responses",
            [
                Field("topic_name", "string"),
                Field("topic_id", "uuid"),
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+", default=None),
            ],
        ),
    ],
)

#: Every API defined here, for the registry in :mod:`kafkaconsumer.protocol.messages`.
APIS: list[Api] = [
    SHARE_GROUP_HEARTBEAT,
    SHARE_GROUP_DESCRIBE,
    SHARE_FETCH,
    SHARE_ACKNOWLEDGE,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
]
