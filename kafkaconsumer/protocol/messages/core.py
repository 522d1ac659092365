"""Definitions of the core APIs: ApiVersions, Metadata, FindCoordinator, ListOffsets, Fetch,
Produce, SaslHandshake, SaslAuthenticate, CreateTopics and DeleteTopics.

Field names, types and version ranges are transcribed from the Apache Kafka message specs
(clients/src/main/resources/common/message/*.json), with names in snake_case.
"""

from __future__ import annotations

from kafkaconsumer.protocol.schema import Api, Field, Struct

__all__ = ["APIS"]

# ---------------------------------------------------------------------------------------------
# ApiVersions (18). v3 is flexible; the response header stays v0 at every version. v5 carries
# the cluster and node the client means to reach, which the broker checks (KIP-1242).

API_VERSIONS = Api(
    18,
    "ApiVersions",
    "0-5",
    "3+",
    request=[
        Field("client_software_name", "string", "3+", ignorable=True),
        Field("client_software_version", "string", "3+", ignorable=True),
        Field("cluster_id", "string", "5+", nullable="5+", default=None, ignorable=True),
        Field("node_id", "int32", "5+", default=-1, ignorable=True),
    ],
    response=[
        Field("error_code", "int16"),
        Field(
            "api_keys",
            [
                Field("api_key", "int16"),
                Field("min_version", "int16"),
                Field("max_version", "int16"),
            ],
        ),
        Field("throttle_time_ms", "int32", "1+", ignorable=True),
        Field(
            "supported_features",
            [
                Field("name", "string", "3+"),
                Field("min_version", "int16", "3+"),
                Field("max_version", "int16", "3+"),
            ],
            "3+",
            tag=0,
            tagged="3+",
            ignorable=True,
        ),
        Field(
            "finalized_features_epoch",
            "int64",
            "3+",
            tag=1,
            tagged="3+",
            default=-1,
            ignorable=True,
        ),
        Field(
            "finalized_features",
            [
                Field("name", "string", "3+"),
                Field("max_version_level", "int16", "3+"),
                Field("min_version_level", "int16", "3+"),
            ],
            "3+",
            tag=2,
            tagged="3+",
            ignorable=True,
        ),
        Field("zk_migration_ready", "bool", "3+", tag=3, tagged="3+", ignorable=True),
    ],
)

# ---------------------------------------------------------------------------------------------
# Metadata (3). v9 is flexible; v10 adds topic ids; v12 lets a topic be asked for by id alone;
# v13 adds a top-level error code (REBOOTSTRAP_REQUIRED, KIP-1102).

METADATA = Api(
    3,
    "Metadata",
    "0-13",
    "9+",
    request=[
        # v0: an empty array means every topic; v1+: null means every topic, empty means none.
        Field(
            "topics",
            [
                Field("topic_id", "uuid", "10+", ignorable=True),
                Field("name", "string", nullable="10+"),
            ],
            nullable="1+",
        ),
        Field("allow_auto_topic_creation", "bool", "4+", default=True),
        Field("include_cluster_authorized_operations", "bool", "8-10"),
        Field("include_topic_authorized_operations", "bool", "8+"),
    ],
    response=[
        Field("throttle_time_ms", "int32", "3+", ignorable=True),
        Field(
            "brokers",
            [
                Field("node_id", "int32"),
                Field("host", "string"),
                Field("port", "int32"),
                Field("rack", "string", "1+", nullable="1+", default=None, ignorable=True),
            ],
        ),
        Field("cluster_id", "string", "2+", nullable="2+", default=None, ignorable=True),
        Field("controller_id", "int32", "1+", default=-1, ignorable=True),
        Field(
            "topics",
            [
                Field("error_code", "int16"),
                Field("name", "string", nullable="12+"),
                Field("topic_id", "uuid", "10+", ignorable=True),
                Field("is_internal", "bool", "1+", ignorable=True),
                Field(
                    "partitions",
                    [
                        Field("error_code", "int16"),
                        Field("partition_index", "int32"),
                        Field("leader_id", "int32"),
                        Field("leader_epoch", "int32", "7+", default=-1, ignorable=True),
                        Field("replica_nodes", "[]int32"),
                        Field("isr_nodes", "[]int32"),
                        Field("offline_replicas", "[]int32", "5+", ignorable=True),
                    ],
                ),
                Field("topic_authorized_operations", "int32", "8+", default=-2147483648),
            ],
        ),
        Field("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
        Field("error_code", "int16", "13+", ignorable=True),
    ],
)

# ---------------------------------------------------------------------------------------------
# FindCoordinator (10). v3 is flexible; v4 batches keys (KIP-699); v6 adds share groups.

FIND_COORDINATOR = Api(
    10,
    "FindCoordinator",
    "0-6",
    "3+",
    request=[
        Field("key", "string", "0-3"),
        Field("key_type", "int8", "1+"),
        Field("coordinator_keys", "[]string", "4+"),
    ],
    response=[
        Field("throttle_time_ms", "int32", "1+", ignorable=True),
        Field("error_code", "int16", "0-3"),
        Field("error_message", "string", "1-3", nullable="1-3", default=None, ignorable=True),
        Field("node_id", "int32", "0-3"),
        Field("host", "string", "0-3"),
        Field("port", "int32", "0-3"),
        Field(
            "coordinators",
            [
                Field("key", "string", "4+"),
                Field("node_id", "int32", "4+"),
                Field("host", "string", "4+"),
                Field("port", "int32", "4+"),
                Field("error_code", "int16", "4+"),
                Field("error_message", "string", "4+", nullable="4+", default=None, ignorable=True),
            ],
            "4+",
        ),
    ],
)

# ---------------------------------------------------------------------------------------------
# ListOffsets (2). v6 is flexible; v0 returned a list of offsets instead of one.

LIST_OFFSETS = Api(
    2,
    "ListOffsets",
    "0-9",
    "6+",
    request=[
        Field("replica_id", "int32"),
        Field("isolation_level", "int8", "2+"),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
                        Field("timestamp", "int64"),
                        Field("max_num_offsets", "int32", "0", default=1),
                    ],
                ),
            ],
        ),
    ],
    response=[
        Field("throttle_time_ms", "int32", "2+", ignorable=True),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("error_code", "int16"),
                        Field("old_style_offsets", "[]int64", "0"),
                        Field("timestamp", "int64", "1+", default=-1),
                        Field("offset", "int64", "1+", default=-1),
                        Field("leader_epoch", "int32", "4+", default=-1),
                    ],
                ),
            ],
        ),
    ],
)

# ---------------------------------------------------------------------------------------------
# Fetch (1). v12 is flexible; v13 replaces topic names by topic ids (KIP-516); v15 moves the
# replica id into the tagged ReplicaState (KIP-903); v16 adds NodeEndpoints (KIP-951); v17 adds
# the replica directory id (KIP-853).

_LEADER_ID_AND_EPOCH = [
    Field("leader_id", "int32", "12+", default=-1),
    Field("leader_epoch", "int32", "12+", default=-1),
]

FETCH = Api(
    1,
    "Fetch",
    "0-17",
    "12+",
    request=[
        Field(
            "cluster_id",
            "string",
            "12+",
            nullable="12+",
            default=None,
            tag=0,
            tagged="12+",
            ignorable=True,
        ),
        Field("replica_id", "int32", "0-14", default=-1),
        Field(
            "replica_state",
            Struct(
                [
                    Field("replica_id", "int32", "15+", default=-1),
                    Field("replica_epoch", "int64", "15+", default=-1),
                ]
            ),
            "15+",
            tag=1,
            tagged="15+",
        ),
        Field("max_wait_ms", "int32"),
        Field("min_bytes", "int32"),
        Field("max_bytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
        Field("isolation_level", "int8", "4+", ignorable=True),
        Field("session_id", "int32", "7+", ignorable=True),
        Field("session_epoch", "int32", "7+", default=-1, ignorable=True),
        Field(
            "topics",
            [
                Field("topic", "string", "0-12", ignorable=True),
                Field("topic_id", "uuid", "13+", ignorable=True),
                Field(
                    "partitions",
                    [
                        Field("partition", "int32"),
                        Field("current_leader_epoch", "int32", "9+", default=-1, ignorable=True),
                        Field("fetch_offset", "int64"),
                        Field("last_fetched_epoch", "int32", "12+", default=-1),
                        Field("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                        Field("partition_max_bytes", "int32"),
                        Field(
                            "replica_directory_id",
                            "uuid",
                            "17+",
                            tag=0,
                            tagged="17+",
                            ignorable=True,
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "forgotten_topics_data",
            [
                Field("topic", "string", "7-12", ignorable=True),
                Field("topic_id", "uuid", "13+", ignorable=True),
                Field("partitions", "[]int32", "7+"),
            ],
            "7+",
        ),
        Field("rack_id", "string", "11+", ignorable=True),
    ],
    response=[
        Field("throttle_time_ms", "int32", "1+", ignorable=True),
        Field("error_code", "int16", "7+", ignorable=True),
        Field("session_id", "int32", "7+"),
        Field(
            "responses",
            [
                Field("topic", "string", "0-12", ignorable=True),
                Field("topic_id", "uuid", "13+", ignorable=True),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("error_code", "int16"),
                        Field("high_watermark", "int64"),
                        Field("last_stable_offset", "int64", "4+", default=-1, ignorable=True),
                        Field("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                        Field(
                            "diverging_epoch",
                            Struct(
                                [
                                    Field("epoch", "int32", "12+", default=-1),
                                    Field("end_offset", "int64", "12+", default=-1),
                                ]
                            ),
                            "12+",
                            tag=0,
                            tagged="12+",
                        ),
                        Field(
                            "current_leader",
                            Struct(_LEADER_ID_AND_EPOCH),
                            "12+",
                            tag=1,
                            tagged="12+",
                        ),
                        Field(
                            "snapshot_id",
                            Struct(
                                [
                                    Field("end_offset", "int64", default=-1),
                                    Field("epoch", "int32", default=-1),
                                ]
                            ),
                            "12+",
                            tag=2,
                            tagged="12+",
                        ),
                        Field(
                            "aborted_transactions",
                            [
                                Field("producer_id", "int64", "4+"),
                                Field("first_offset", "int64", "4+"),
                            ],
                            "4+",
                            nullable="4+",
                            ignorable=True,
                        ),
                        Field("preferred_read_replica", "int32", "11+", default=-1),
                        Field("records", "records", nullable="0+"),
                    ],
                ),
            ],
        ),
        Field(
            "node_endpoints",
            [
                Field("node_id", "int32", "16+"),
                Field("host", "string", "16+"),
                Field("port", "int32", "16+"),
                Field("rack", "string", "16+", nullable="16+", default=None),
            ],
            "16+",
            tag=0,
            tagged="16+",
        ),
    ],
)

# ---------------------------------------------------------------------------------------------
# Produce (0). v9 is flexible; v10 adds leader hints (KIP-951).

PRODUCE = Api(
    0,
    "Produce",
    "0-11",
    "9+",
    request=[
        Field("transactional_id", "string", "3+", nullable="3+", default=None),
        Field("acks", "int16"),
        Field("timeout_ms", "int32"),
        Field(
            "topic_data",
            [
                Field("name", "string"),
                Field(
                    "partition_data",
                    [
                        Field("index", "int32"),
                        Field("records", "records", nullable="0+"),
                    ],
                ),
            ],
        ),
    ],
    response=[
        Field(
            "responses",
            [
                Field("name", "string"),
                Field(
                    "partition_responses",
                    [
                        Field("index", "int32"),
                        Field("error_code", "int16"),
                        Field("base_offset", "int64"),
                        Field("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
                        Field("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                        Field(
                            "record_errors",
                            [
                                Field("batch_index", "int32", "8+"),
                                Field(
                                    "batch_index_error_message",
                                    "string",
                                    "8+",
                                    nullable="8+",
                                    default=None,
                                ),
                            ],
                            "8+",
                            ignorable=True,
                        ),
                        Field(
                            "error_message",
                            "string",
                            "8+",
                            nullable="8+",
                            default=None,
                            ignorable=True,
                        ),
                        Field(
                            "current_leader",
                            Struct(
                                [
                                    Field("leader_id", "int32", "10+", default=-1),
                                    Field("leader_epoch", "int32", "10+", default=-1),
                                ]
                            ),
                            "10+",
                            tag=0,
                            tagged="10+",
                        ),
                    ],
                ),
            ],
        ),
        Field("throttle_time_ms", "int32", "1+", ignorable=True),
        Field(
            "node_endpoints",
            [
                Field("node_id", "int32", "10+"),
                Field("host", "string", "10+"),
                Field("port", "int32", "10+"),
                Field("rack", "string", "10+", nullable="10+", default=None),
            ],
            "10+",
            tag=0,
            tagged="10+",
        ),
    ],
)

# ---------------------------------------------------------------------------------------------
# SaslHandshake (17): never flexible. SaslAuthenticate (36): v2 is flexible.

SASL_HANDSHAKE = Api(
    17,
    "SaslHandshake",
    "0-1",
    "none",
    request=[
        Field("mechanism", "string"),
    ],
    response=[
        Field("error_code", "int16"),
        Field("mechanisms", "[]string"),
    ],
)

SASL_AUTHENTICATE = Api(
    36,
    "SaslAuthenticate",
    "0-2",
    "2+",
    request=[
        Field("auth_bytes", "bytes"),
    ],
    response=[
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("auth_bytes", "bytes"),
        Field("session_lifetime_ms", "int64", "1+", ignorable=True),
    ],
)

# ---------------------------------------------------------------------------------------------
# CreateTopics (19). v5 is flexible and returns the topic configs; v7 returns topic ids.

CREATE_TOPICS = Api(
    19,
    "CreateTopics",
    "0-7",
    "5+",
    request=[
        Field(
            "topics",
            [
                Field("name", "string"),
                Field("num_partitions", "int32"),
                Field("replication_factor", "int16"),
                Field(
                    "assignments",
                    [
                        Field("partition_index", "int32"),
                        Field("broker_ids", "[]int32"),
                    ],
                ),
                Field(
                    "configs",
                    [
                        Field("name", "string"),
                        Field("value", "string", nullable="0+"),
                    ],
                ),
            ],
        ),
        Field("timeout_ms", "int32", default=60000),
        Field("validate_only", "bool", "1+"),
    ],
    response=[
        Field("throttle_time_ms", "int32", "2+", ignorable=True),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field("topic_id", "uuid", "7+", ignorable=True),
                Field("error_code", "int16"),
                Field("error_message", "string", "1+", nullable="0+", ignorable=True),
                Field("topic_config_error_code", "int16", "5+", tag=0, tagged="5+", ignorable=True),
                Field("num_partitions", "int32", "5+", default=-1, ignorable=True),
                Field("replication_factor", "int16", "5+", default=-1, ignorable=True),
                Field(
                    "configs",
                    [
                        Field("name", "string", "5+"),
                        Field("value", "string", "5+", nullable="5+"),
                        Field("read_only", "bool", "5+"),
                        Field("config_source", "int8", "5+", default=-1, ignorable=True),
                        Field("is_sensitive", "bool", "5+"),
                    ],
                    "5+",
                    nullable="5+",
                    ignorable=True,
                ),
            ],
        ),
    ],
)

# ---------------------------------------------------------------------------------------------
# DeleteTopics (20). v4 is flexible; v6 names topics by name or id.

DELETE_TOPICS = Api(
    20,
    "DeleteTopics",
    "0-6",
    "4+",
    request=[
        Field(
            "topics",
            [
                Field("name", "string", "6+", nullable="6+", default=None),
                Field("topic_id", "uuid", "6+"),
            ],
            "6+",
        ),
        Field("topic_names", "[]string", "0-5", ignorable=True),
        Field("timeout_ms", "int32"),
    ],
    response=[
        Field("throttle_time_ms", "int32", "1+", ignorable=True),
        Field(
            "responses",
            [
                Field("name", "string", nullable="6+"),
                Field("topic_id", "uuid", "6+", ignorable=True),
                Field("error_code", "int16"),
                Field("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
            ],
        ),
    ],
)

APIS: list[Api] = [
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    FIND_COORDINATOR,
    SASL_HANDSHAKE,
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    SASL_AUTHENTICATE,
]
