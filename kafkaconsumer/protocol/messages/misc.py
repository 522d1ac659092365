"""Assorted APIs: leader-epoch validation, partition and record administration, producer ids.

OffsetForLeaderEpoch serves the consumer's log-truncation check after a leader change; the
others serve the small admin and producer clients used by tests, the demo and the CLI.

Field facts follow the Apache Kafka message specs; names are the snake_case of the spec names.
"""

from __future__ import annotations

from kafkaconsumer.protocol.schema import Api, Field

__all__ = [
    "APIS",
    "OFFSET_FOR_LEADER_EPOCH",
    "CREATE_PARTITIONS",
    "DELETE_RECORDS",
    "INIT_PRODUCER_ID",
    "DESCRIBE_CONFIGS",
    "INCREMENTAL_ALTER_CONFIGS",
    "OFFSET_DELETE",
]

#: OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, so a consumer can detect
#: that the log it read was truncated. Consumers send replica id -1 (v3+); the default -2 is
#: the "debug consumer" marker.
OFFSET_FOR_LEADER_EPOCH = Api(
    23,
    "OffsetForLeaderEpoch",
    "0-4",
    "4+",
    request=[
        Field("replica_id", "int32", "3+", default=-2, ignorable=True),
        Field(
            "topics",
            [
                Field("topic", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition", "int32"),
                        # Fences requests built from stale metadata.
                        Field("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
                        Field("leader_epoch", "int32"),
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
                Field("topic", "string"),
                Field(
                    "partitions",
                    [
                        Field("error_code", "int16"),
                        Field("partition", "int32"),
                        Field("leader_epoch", "int32", "1+", default=-1, ignorable=True),
                        Field("end_offset", "int64", default=-1),
                    ],
                ),
            ],
        ),
    ],
)

#: CreatePartitions (key 37): raises the partition count of existing topics.
CREATE_PARTITIONS = Api(
    37,
    "CreatePartitions",
    "0-3",
    "2+",
    request=[
        Field(
            "topics",
            [
                Field("name", "string"),
                Field("count", "int32"),
                # Null lets the controller place the new partitions.
                Field(
                    "assignments",
                    [Field("broker_ids", "[]int32")],
                    nullable="0+",
                ),
            ],
        ),
        Field("timeout_ms", "int32"),
        Field("validate_only", "bool"),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field(
            "results",
            [
                Field("name", "string"),
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+", default=None),
            ],
        ),
    ],
)

#: DeleteRecords (key 21): advances partitions' log start offsets (deletes older records).
DELETE_RECORDS = Api(
    21,
    "DeleteRecords",
    "0-2",
    "2+",
    request=[
        Field(
            "topics",
            [
                Field("name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("offset", "int64"),
                    ],
                ),
            ],
        ),
        Field("timeout_ms", "int32"),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field(
                    "partitions",
                    [
                        Field("partition_index", "int32"),
                        Field("low_watermark", "int64"),
                        Field("error_code", "int16"),
                    ],
                ),
            ],
        ),
    ],
)

#: InitProducerId (key 22): allocates a producer id and epoch for an idempotent or
#: transactional producer. From v3 a producer may pass its current id and epoch to bump the
#: epoch instead of getting a new id.
INIT_PRODUCER_ID = Api(
    22,
    "InitProducerId",
    "0-5",
    "2+",
    request=[
        Field("transactional_id", "string", nullable="0+"),
        Field("transaction_timeout_ms", "int32"),
        Field("producer_id", "int64", "3+", default=-1),
        Field("producer_epoch", "int16", "3+", default=-1),
    ],
    response=[
        Field("throttle_time_ms", "int32", ignorable=True),
        Field("error_code", "int16"),
        Field("producer_id", "int64", default=-1),
        Field("producer_epoch", "int16"),
    ],
)

#: DescribeConfigs (key 32): the configuration of topics and brokers, with each value's source.
#: Version 0 was removed in Kafka 4.0; v1 added synonyms and the source, v3 types and docs.
DESCRIBE_CONFIGS = Api(
    32,
    "DescribeConfigs",
    "1-4",
    "4+",
    request=[
        Field(
            "resources",
            [
                # 2 = topic, 4 = broker, 8 = broker logger, 16 = client metrics, 32 = group.
                Field("resource_type", "int8"),
                Field("resource_name", "string"),
                # Null asks for every key.
                Field("configuration_keys", "[]string", nullable="0+", default=None),
            ],
        ),
        Field("include_synonyms", "bool", "1+", default=False),
        Field("include_documentation", "bool", "3+", default=False),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field(
            "results",
            [
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+", default=None),
                Field("resource_type", "int8"),
                Field("resource_name", "string"),
                Field(
                    "configs",
                    [
                        Field("name", "string"),
                        Field("value", "string", nullable="0+", default=None),
                        Field("read_only", "bool"),
                        Field("config_source", "int8", "1+", default=-1, ignorable=True),
                        Field("is_sensitive", "bool"),
                        Field(
                            "synonyms",
                            [
                                Field("name", "string", "1+"),
                                Field("value", "string", "1+", nullable="0+", default=None),
                                Field("source", "int8", "1+"),
                            ],
                            "1+",
                            ignorable=True,
                        ),
                        Field("config_type", "int8", "3+", default=0, ignorable=True),
                        Field(
                            "documentation",
                            "string",
                            "3+",
                            nullable="0+",
                            default=None,
                            ignorable=True,
                        ),
                    ],
                ),
            ],
        ),
    ],
)

#: IncrementalAlterConfigs (key 44): sets, deletes, appends to or subtracts from single config
#: keys of topics, brokers and groups (a group's share-group settings among them).
INCREMENTAL_ALTER_CONFIGS = Api(
    44,
    "IncrementalAlterConfigs",
    "0-1",
    "1+",
    request=[
        Field(
            "resources",
            [
                # 2 = topic, 4 = broker, 8 = broker logger, 16 = client metrics, 32 = group.
                Field("resource_type", "int8"),
                Field("resource_name", "string"),
                Field(
                    "configs",
                    [
                        Field("name", "string"),
                        # 0 set, 1 delete, 2 append, 3 subtract.
                        Field("config_operation", "int8"),
                        Field("value", "string", nullable="0+"),
                    ],
                ),
            ],
        ),
        Field("validate_only", "bool"),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field(
            "responses",
            [
                Field("error_code", "int16"),
                Field("error_message", "string", nullable="0+"),
                Field("resource_type", "int8"),
                Field("resource_name", "string"),
            ],
        ),
    ],
)

#: OffsetDelete (key 47): removes a group's committed offsets for partitions it no longer
#: consumes (refused for topics the group is subscribed to).
OFFSET_DELETE = Api(
    47,
    "OffsetDelete",
    "0",
    "none",
    request=[
        Field("group_id", "string"),
        Field(
            "topics",
            [
                Field("name", "string"),
                Field("partitions", [Field("partition_index", "int32")]),
            ],
        ),
    ],
    response=[
        Field("error_code", "int16"),
        Field("throttle_time_ms", "int32", ignorable=True),
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

#: Every API defined here, for the registry in :mod:`kafkaconsumer.protocol.messages`.
APIS: list[Api] = [
    OFFSET_FOR_LEADER_EPOCH,
    CREATE_PARTITIONS,
    DELETE_RECORDS,
    INIT_PRODUCER_ID,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    OFFSET_DELETE,
]
