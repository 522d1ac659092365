"""Group coordination and group administration APIs.

Definitions (data, not code) of the classic group protocol used by the consumer coordinator
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup), of offset storage (OffsetCommit, OffsetFetch),
of group administration (DescribeGroups, ListGroups, DeleteGroups) and of the KIP-848 consumer
group protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe).

Field facts (names, types, version ranges, nullability, defaults, ignorability) follow the
Apache Kafka message specs; names are the snake_case of the spec names. Versions a broker of
Kafka 4.0 dropped (KIP-896) stay defined because older brokers still speak them.
"""

from __future__ import annotations

from kafkaconsumer.protocol.schema import Api, Field, Struct

__all__ = [
    "APIS",
    "JOIN_GROUP",
    "SYNC_GROUP",
    "HEARTBEAT",
    "LEAVE_GROUP",
    "OFFSET_COMMIT",
    "OFFSET_FETCH",
    "DESCRIBE_GROUPS",
    "LIST_GROUPS",
    "DELETE_GROUPS",
    "CONSUMER_GROUP_HEARTBEAT",
    "CONSUMER_GROUP_DESCRIBE",
]

# The smallest int32: Kafka's marker for "authorized operations were not requested".
_AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)


def _throttle(versions: str = "0+", *, ignorable: bool = True) -> Field:
    # Almost every response starts with the same throttle field; only the first version
    # carrying it differs.
    return Field("throttle_time_ms", "int32", versions, ignorable=ignorable)


#: JoinGroup (key 11): a member asks to join (or rejoin) a classic group. From v4 a member
#: without an id is answered MEMBER_ID_REQUIRED with its new id and must join again.
JOIN_GROUP = Api(
    11,
    "JoinGroup",
    "0-9",
    "6+",
    request=[
        Field("group_id", "string"),
        Field("session_timeout_ms", "int32"),
        # When a version lacks it the broker uses the session timeout instead.
        Field("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
        Field("member_id", "string"),
        Field("group_instance_id", "string", "5+", nullable="5+", default=None),
        Field("protocol_type", "string"),
        Field(
            "protocols",
            [
                Field("name", "string"),
                Field("metadata", "bytes"),
            ],
        ),
        Field("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
    ],
    response=[
        _throttle("2+"),
        Field("error_code", "int16"),
        Field("generation_id", "int32", default=-1),
        Field("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
        Field("protocol_name", "string", nullable="7+"),
        Field("leader", "string"),
        Field("skip_assignment", "bool", "9+", default=False),
        Field("member_id", "string"),
        Field(
            "members",
            [
                Field("member_id", "string"),
                Field(
                    "group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True
                ),
                Field("metadata", "bytes"),
            ],
        ),
    ],
)

#: SyncGroup (key 14): the leader sends the assignment, every member receives its own.
SYNC_GROUP = Api(
    14,
    "SyncGroup",
    "0-5",
    "4+",
    request=[
        Field("group_id", "string"),
        Field("generation_id", "int32"),
        Field("member_id", "string"),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None),
        Field("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        Field("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        Field(
            "assignments",
            [
                Field("member_id", "string"),
                Field("assignment", "bytes"),
            ],
        ),
    ],
    response=[
        _throttle("1+"),
        Field("error_code", "int16"),
        Field("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        Field("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        Field("assignment", "bytes"),
    ],
)

#: Heartbeat (key 12): keeps a classic group member alive; REBALANCE_IN_PROGRESS asks it to rejoin.
HEARTBEAT = Api(
    12,
    "Heartbeat",
    "0-4",
    "4+",
    request=[
        Field("group_id", "string"),
        Field("generation_id", "int32"),
        Field("member_id", "string"),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
    response=[
        _throttle("1+"),
        Field("error_code", "int16"),
    ],
)

#: LeaveGroup (key 13): one member (v0-2) or a batch of members (v3+) leaves a classic group.
LEAVE_GROUP = Api(
    13,
    "LeaveGroup",
    "0-5",
    "4+",
    request=[
        Field("group_id", "string"),
        Field("member_id", "string", "0-2"),
        Field(
            "members",
            [
                Field("member_id", "string", "3+"),
                Field("group_instance_id", "string", "3+", nullable="3+", default=None),
                Field("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
            ],
            "3+",
        ),
    ],
    response=[
        _throttle("1+"),
        Field("error_code", "int16"),
        Field(
            "members",
            [
                Field("member_id", "string", "3+"),
                Field("group_instance_id", "string", "3+", nullable="3+"),
                Field("error_code", "int16", "3+"),
            ],
            "3+",
        ),
    ],
)

#: OffsetCommit (key 8): stores committed offsets for a group. v9 is the first usable with the
#: KIP-848 protocol, where the generation field carries the member epoch.
OFFSET_COMMIT = Api(
    8,
    "OffsetCommit",
    "0-9",
    "8+",
    request=[
        Field("group_id", "string"),
        Field("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
        Field("member_id", "string", "1+", ignorable=True),
        Field("group_instance_id", "string", "7+", nullable="7+", default=None),
        Field("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("committed_offset", "int64"),
                        Field("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
                        # Only v1 carries a per-partition commit timestamp.
                        Field("commit_timestamp", "int64", "1", default=-1),
                        Field("committed_metadata", "string", nullable="0+"),
                    ],
                ),
            ],
        ),
    ],
    response=[
        _throttle("3+"),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("error_code", "int16"),
                    ],
                ),
            ],
        ),
    ],
)

_OFFSET_FETCH_RESPONSE_PARTITIONS_V8 = [
    Field("partition_index", "int32", "8+"),
    Field("committed_offset", "int64", "8+"),
    Field("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
    Field("metadata", "string", "8+", nullable="8+"),
    Field("error_code", "int16", "8+"),
]

#: OffsetFetch (key 9): reads committed offsets. Up to v7 one group per request (topics null
#: = all topics, from v2); from v8 a batch of groups, each with its own topics and error code.
OFFSET_FETCH = Api(
    9,
    "OffsetFetch",
    "0-9",
    "6+",
    request=[
        Field("group_id", "string", "0-7"),
        Field(
            "topics",
            [
                Field("name", "string", "0-7"),
                Field("partition_indexes", "[]int32", "0-7"),
            ],
            "0-7",
            nullable="2-7",
        ),
        Field(
            "groups",
            [
                Field("group_id", "string", "8+"),
                Field("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
                Field("member_epoch", "int32", "9+", default=-1, ignorable=True),
                Field(
                    "topics",
                    [
                        Field("name", "string", "8+"),
                        Field("partition_indexes", "[]int32", "8+"),
                    ],
                    "8+",
                    nullable="8+",
                ),
            ],
            "8+",
        ),
        Field("require_stable", "bool", "7+", default=False),
    ],
    response=[
        _throttle("3+"),
        Field(
            "topics",
            [
                Field("name", "string", "0-7"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32", "0-7"),
                        Field("committed_offset", "int64", "0-7"),
                        Field("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
                        Field("metadata", "string", "0-7", nullable="0-7"),
                        Field("error_code", "int16", "0-7"),
                    ],
                    "0-7",
                ),
            ],
            "0-7",
        ),
        Field("error_code", "int16", "2-7", default=0, ignorable=True),
        Field(
            "groups",
            [
                Field("group_id", "string", "8+"),
                Field(
                    "topics",
                    [
                        Field("name", "string", "8+"),
                        Field("partitions", _OFFSET_FETCH_RESPONSE_PARTITIONS_V8, "8+"),
                    ],
                    "8+",
                ),
                Field("error_code", "int16", "8+", default=0),
            ],
            "8+",
        ),
    ],
)

#: DescribeGroups (key 15): state, protocol and members of classic groups.
DESCRIBE_GROUPS = Api(
    15,
    "DescribeGroups",
    "0-5",
    "5+",
    request=[
        Field("groups", "[]string"),
        Field("include_authorized_operations", "bool", "3+"),
    ],
    response=[
        _throttle("1+"),
        Field(
            "groups",
            [
                Field("error_code", "int16"),
                Field("group_id", "string"),
                Field("group_state", "string"),
                Field("protocol_type", "string"),
                Field("protocol_data", "string"),
                Field(
                    "members",
                    [
                        Field("member_id", "string"),
                        Field(
                            "group_instance_id",
                            "string",
                            "4+",
                            nullable="4+",
                            default=None,
                            ignorable=True,
                        ),
                        Field("client_id", "string"),
                        Field("client_host", "string"),
                        Field("member_metadata", "bytes"),
                        Field("member_assignment", "bytes"),
                    ],
                ),
                Field(
                    "authorized_operations", "int32", "3+", default=_AUTHORIZED_OPERATIONS_UNKNOWN
                ),
            ],
        ),
    ],
)

#: ListGroups (key 16): the groups a broker coordinates, optionally filtered by state (v4+)
#: and by type (v5+).
LIST_GROUPS = Api(
    16,
    "ListGroups",
    "0-5",
    "3+",
    request=[
        Field("states_filter", "[]string", "4+"),
        Field("types_filter", "[]string", "5+"),
    ],
    response=[
        _throttle("1+"),
        Field("error_code", "int16"),
        Field(
            "groups",
            [
                Field("group_id", "string"),
                Field("protocol_type", "string"),
                Field("group_state", "string", "4+", ignorable=True),
                Field("group_type", "string", "5+", ignorable=True),
            ],
        ),
    ],
)

#: DeleteGroups (key 42): deletes empty groups and their committed offsets.
DELETE_GROUPS = Api(
    42,
    "DeleteGroups",
    "0-2",
    "2+",
    request=[
        Field("groups_names", "[]string"),
    ],
    response=[
        _throttle("0+", ignorable=False),
        Field(
            "results",
            [
                Field("group_id", "string"),
                Field("error_code", "int16"),
            ],
        ),
    ],
)

_CGH_TOPIC_PARTITIONS = [
    Field("topic_id", "uuid"),
    Field("partitions", "[]int32"),
]

#: ConsumerGroupHeartbeat (key 68): the KIP-848 consumer protocol's single request: join,
#: heartbeat, report owned partitions and receive the target assignment. v1 adds the
#: subscription regex and has the member generate its own id (KIP-1082).
CONSUMER_GROUP_HEARTBEAT = Api(
    68,
    "ConsumerGroupHeartbeat",
    "0-1",
    "0+",
    request=[
        Field("group_id", "string"),
        Field("member_id", "string"),
        # 0 joins, -1 leaves, -2 announces a static member that will rejoin.
        Field("member_epoch", "int32"),
        Field("instance_id", "string", nullable="0+", default=None),
        Field("rack_id", "string", nullable="0+", default=None),
        Field("rebalance_timeout_ms", "int32", default=-1),
        # The null defaults below mean "unchanged since the last heartbeat".
        Field("subscribed_topic_names", "[]string", nullable="0+", default=None),
        Field("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
        Field("server_assignor", "string", nullable="0+", default=None),
        Field("topic_partitions", _CGH_TOPIC_PARTITIONS, nullable="0+", default=None),
    ],
    response=[
        _throttle("0+", ignorable=False),
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("member_id", "string", nullable="0+", default=None),
        Field("member_epoch", "int32"),
        Field("heartbeat_interval_ms", "int32"),
        Field(
            "assignment",
            Struct([Field("topic_partitions", _CGH_TOPIC_PARTITIONS)]),
            nullable="0+",
            default=None,
        ),
    ],
)


# Field objects are immutable, so the member's current and target assignment share one struct.
_CGD_ASSIGNMENT = Struct(
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
)


#: ConsumerGroupDescribe (key 69): describes KIP-848 consumer groups. v1 adds each member's
#: type (KIP-1099: a classic member of a group being upgraded, or a consumer member).
CONSUMER_GROUP_DESCRIBE = Api(
    69,
    "ConsumerGroupDescribe",
    "0-1",
    "0+",
    request=[
        Field("group_ids", "[]string"),
        Field("include_authorized_operations", "bool"),
    ],
    response=[
        _throttle("0+", ignorable=False),
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
                        Field("instance_id", "string", nullable="0+", default=None),
                        Field("rack_id", "string", nullable="0+", default=None),
                        Field("member_epoch", "int32"),
                        Field("client_id", "string"),
                        Field("client_host", "string"),
                        Field("subscribed_topic_names", "[]string"),
                        Field("subscribed_topic_regex", "string", nullable="0+", default=None),
                        Field("assignment", _CGD_ASSIGNMENT),
                        Field("target_assignment", _CGD_ASSIGNMENT),
                        # -1 unknown, 0 classic member, 1 consumer member.
                        Field("member_type", "int8", "1+", default=-1, ignorable=True),
                    ],
                ),
                Field("authorized_operations", "int32", default=_AUTHORIZED_OPERATIONS_UNKNOWN),
            ],
        ),
    ],
)

#: Every API defined here, for the registry in :mod:`kafkaconsumer.protocol.messages`.
APIS: list[Api] = [
    JOIN_GROUP,
    SYNC_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    DELETE_GROUPS,
    CONSUMER_GROUP_HEARTBEAT,
    CONSUMER_GROUP_DESCRIBE,
]
