"""Option parsing and range splitting of the Spark integration (no broker, no Spark)."""

from __future__ import annotations

import pytest

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.spark.offsets import (
    OffsetRange,
    from_json,
    pack_ranges,
    split_ranges,
    to_json,
)
from kafkaconsumer.spark.options import OffsetSpec, parse_options
from kafkaconsumer.structs import TopicPartition

pytestmark = pytest.mark.timeout(30)
BS = {"kafka.bootstrap.servers": "127.0.0.1:1"}


def test_spark_names_and_formats() -> None:
    opts = parse_options(
        {
            **BS,
            "subscribe": "a, b",
            "startingOffsets": '{"a":{"0":5,"1":-2}}',
            "endingOffsets": '{"a":{"0":9,"1":-1}}',
            "FAILONDATALOSS": "false",
            "includeHeaders": "true",
            "minPartitions": "4",
            "kafka.isolation.level": "read_committed",
        }
    )
    assert opts.subscribe == ["a", "b"]
    assert opts.starting == OffsetSpec("offsets", offsets={"a": {0: 5, 1: -2}})
    assert opts.ending.offsets == {"a": {0: 9, 1: -1}}
    assert not opts.fail_on_data_loss and opts.include_headers and opts.min_partitions == 4
    assert opts.kafka == {"bootstrap.servers": "127.0.0.1:1", "isolation.level": "read_committed"}
    stream = parse_options(
        {
            **BS,
            "subscribePattern": "t.*",
            "maxOffsetsPerTrigger": "10",
            "minOffsetsPerTrigger": "5",
            "maxTriggerDelay": "30s",
        },
        streaming=True,
    )
    assert stream.starting.kind == "latest" and stream.max_offsets_per_trigger == 10
    assert stream.max_trigger_delay_ms == 30000 and stream.min_offsets_per_trigger == 5
    assigned = parse_options({**BS, "assign": '{"a":[0,2]}', "startingTimestamp": "1000"})
    assert assigned.assign == [TopicPartition("a", 0), TopicPartition("a", 2)]
    assert assigned.starting == OffsetSpec("timestamps", timestamp=1000)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "exactly one"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
        ({"subscribe": "a", "kafka.value.deserializer": "x"}, "kafka.value.deserializer"),
        ({"subscribe": "a", "kafka.no.such.key": "1"}, "no.such.key"),
        ({"subscribe": "a", "startingOffsetz": "earliest"}, "option startingOffsetz is not"),
        ({"subscribe": "a", "fetchOffset.numRetries": "0"}, "fetchOffset.numRetries"),
        ({"subscribe": "a", "commitOffsetsToGroup": "g"}, "commitOffsetsToGroup is for streaming"),
        ({"subscribe": "a", "fetchOffset.retryIntervalMs": "x"}, "fetchOffset.retryIntervalMs"),
        ({"subscribe": "a", "startingOffsets": "{nope"}, "startingOffsets"),
        ({"subscribe": "a", "endingOffsets": "earliest"}, "endingOffsets"),
        ({"subscribe": "a", "minPartitions": "0"}, "minPartitions"),
        ({"subscribe": "a", "minRecordsPerPartition": "-1"}, "minRecordsPerPartition"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "5"}, "streaming"),
        ({"assign": "[1]"}, "assign"),
        ({"subscribePattern": "("}, "subscribePattern"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_options({**BS, **options})


@pytest.mark.parametrize(
    "options, first_line",
    [
        (
            {"subscribe": "a", "startingOffsetz": "earliest"},
            "option startingOffsetz is not supported by the kafkaconsumer source: "
            "did you mean startingOffsets?",
        ),
        (
            {"subscribe": "a", "auto.offset.reset": "earliest"},
            "option auto.offset.reset is not supported by the kafkaconsumer source: remove it, "
            "or prefix a Kafka client key with kafka. (the options are listed in docs/spark.md)",
        ),
        (
            {"subscribe": "a", "kafka.auto.offset.reset": "earliest"},
            "Kafka option 'kafka.auto.offset.reset' is not supported: set the source option "
            "startingOffsets to earliest or latest instead",
        ),
        (
            {"subscribe": "a", "kafka.value.deserializer": "x"},
            "Kafka option 'kafka.value.deserializer' is not supported: values are always "
            "binary: remove it and deserialize the value column",
        ),
    ],
)
def test_an_option_error_names_the_option_and_the_fix(
    options: dict[str, str], first_line: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options({**BS, **options})
    assert str(info.value).splitlines()[0].startswith(first_line)


def test_spark_group_id_options() -> None:
    batch = parse_options({**BS, "subscribe": "a"})
    stream = parse_options({**BS, "subscribe": "a"}, streaming=True)
    assert batch.group_id is not None and batch.group_id.startswith("spark-kafka-relation-")
    assert stream.group_id is not None and stream.group_id.startswith("spark-kafka-source-")
    # Each query has its own group; the driver and the executors add their role, as Spark's.
    assert parse_options({**BS, "subscribe": "a"}).group_id != batch.group_id
    assert batch.consumer_config("driver")["group.id"] == batch.group_id + "-driver"
    assert batch.consumer_config("executor")["group.id"] == batch.group_id + "-executor"
    prefixed = parse_options({**BS, "subscribe": "a", "groupIdPrefix": "etl"})
    assert prefixed.consumer_config("executor")["group.id"].startswith("etl-")
    fixed = parse_options(
        {**BS, "subscribe": "a", "groupIdPrefix": "etl", "kafka.group.id": "orders"}
    )
    assert fixed.consumer_config("driver")["group.id"] == "orders"
    assert fixed.consumer_config("executor")["group.id"] == "orders"
    retries = parse_options(
        {**BS, "subscribe": "a", "fetchOffset.numRetries": "5", "FETCHOFFSET.RETRYINTERVALMS": "0"}
    )
    assert (retries.fetch_offset_retries, retries.fetch_offset_retry_interval_ms) == (5, 0)
    assert (batch.fetch_offset_retries, batch.fetch_offset_retry_interval_ms) == (3, 10)


def test_commit_offsets_to_group_is_a_streaming_option() -> None:
    stream = parse_options({**BS, "subscribe": "a", "commitOffsetsToGroup": "lag"}, streaming=True)
    assert stream.commit_group == "lag"
    assert parse_options({**BS, "subscribe": "a"}, streaming=True).commit_group is None
    with pytest.raises(ConfigError, match="must name a consumer group"):
        parse_options({**BS, "subscribe": "a", "commitOffsetsToGroup": " "}, streaming=True)


def test_offset_lookups_retry_as_fetch_offset_options_say() -> None:
    from kafkaconsumer.errors import KafkaError
    from kafkaconsumer.spark.offsets import with_retries

    opts = parse_options(
        {**BS, "subscribe": "a", "fetchOffset.numRetries": "3", "fetchOffset.retryIntervalMs": "1"}
    )
    calls = []

    def flaky(consumer: object) -> int:
        calls.append(consumer)
        if len(calls) < 3:
            raise KafkaError("leader not available")
        return 42

    assert with_retries(opts, flaky) == 42 and len(calls) == 3
    calls.clear()

    def broken(consumer: object) -> int:
        calls.append(consumer)
        raise KafkaError("still down")

    with pytest.raises(KafkaError, match="still down"):
        with_retries(opts, broken)
    assert len(calls) == 3
    calls.clear()

    def misconfigured(consumer: object) -> int:
        calls.append(consumer)
        raise ConfigError("bad")

    with pytest.raises(ConfigError):
        with_retries(opts, misconfigured)
    assert len(calls) == 1


def test_missing_bootstrap_and_write_options() -> None:
    with pytest.raises(ConfigError, match="kafka.bootstrap.servers"):
        parse_options({"subscribe": "a"})
    w = parse_options({**BS, "topic": "out"}, write=True)
    assert w.topic == "out"
    with pytest.raises(ConfigError, match="subscribe"):
        parse_options({**BS, "subscribe": "a"}, write=True)


def test_split_ranges_cover_each_offset_once() -> None:
    ranges = [OffsetRange("a", 0, 0, 1000), OffsetRange("a", 1, 50, 60), OffsetRange("a", 2, 7, 7)]
    for min_parts, max_records in [(None, None), (7, None), (None, 300), (20, 100), (3, 1)]:
        split = split_ranges(ranges, min_parts, max_records)
        covered = sorted((r.partition, o) for r in split for o in range(r.start, r.end))
        assert covered == [(0, o) for o in range(1000)] + [(1, o) for o in range(50, 60)]
        if min_parts:
            assert len(split) >= min_parts
        if max_records:
            assert all(r.end - r.start <= max_records for r in split)


def test_small_ranges_share_a_task_and_large_ones_keep_theirs() -> None:
    ranges = [
        OffsetRange("a", 0, 0, 400),
        OffsetRange("a", 1, 0, 500),
        OffsetRange("a", 2, 0, 5000),  # over the target: alone
        OffsetRange("a", 3, 9, 9),  # empty now (a live end may find records): shares a task
        OffsetRange("a", 4, 0, 300),
        OffsetRange("a", 4, 300, 600),  # a second piece of partition 4: never with the first
        OffsetRange("b", 0, 0, 100),
    ]
    assert pack_ranges(ranges, 1000) == [[0, 1], [2], [3, 4], [5, 6]]
    assert pack_ranges(ranges, 0) == [[i] for i in range(len(ranges))]  # Spark's: a task each
    # Never more records in a task than maxRecordsPerPartition, never fewer tasks than
    # minPartitions.
    assert pack_ranges(ranges, 1000, max_records=450) == [[0], [1], [2], [3, 4], [5, 6]]
    for min_parts in (1, 2, 4, 7, 9):
        groups = pack_ranges(ranges, 10**6, min_partitions=min_parts)
        assert sorted(i for g in groups for i in g) == list(range(len(ranges)))
        assert len(groups) >= min(min_parts, len(ranges))
        for g in groups:
            assert len({ranges[i].tp for i in g}) == len(g)
    assert parse_options({**BS, "subscribe": "a"}).min_records_per_partition == 1_000_000
    assert (
        parse_options(
            {**BS, "subscribe": "a", "minRecordsPerPartition": "0"}
        ).min_records_per_partition
        == 0
    )


def test_checkpoint_json_round_trip() -> None:
    offsets = {TopicPartition("a", 1): 7, TopicPartition("a", 0): 3, TopicPartition("b", 0): 0}
    assert to_json(offsets) == {"a": {"0": 3, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets


def test_batch_reads_refuse_to_start_at_latest_as_spark_does() -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}
    with pytest.raises(ConfigError, match="startingOffsets can't be latest"):
        parse_options({**base, "startingOffsets": "latest"})
    with pytest.raises(ConfigError, match="t-1 can't be latest"):
        parse_options({**base, "startingOffsets": '{"t":{"0":-2,"1":-1}}'})
    # Streaming reads start at latest by default, and may say so.
    assert parse_options({**base, "startingOffsets": "latest"}, streaming=True).starting.kind == (
        "latest"
    )
    assert parse_options({**base, "startingOffsets": '{"t":{"0":-2}}'}).starting.kind == "offsets"


def test_each_micro_batch_logs_its_backlog(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("pyspark")
    from kafkaconsumer.spark.datasource import KafkaStreamReader

    reader = KafkaStreamReader(parse_options({**BS, "subscribe": "a"}, streaming=True))
    assert reader.reportLatestOffset() is None
    a0, a1, a2 = (TopicPartition("a", p) for p in range(3))
    reader._latest = {a0: 100, a1: 50, a2: 10}
    with caplog.at_level("INFO", logger="kafkaconsumer.spark.datasource"):
        reader._log_backlog({a0: 0, a1: 0, a2: 10}, {a0: 40, a1: 50, a2: 10})
    assert (
        "90 records read, backlog behind the latest offsets over 3 partitions: "
        "min 0, avg 20.0, max 60" in caplog.text
    )
    assert reader.reportLatestOffset() == {"a": {"0": 100, "1": 50, "2": 10}}
