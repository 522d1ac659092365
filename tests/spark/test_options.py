"""Option parsing and range splitting of the Spark integration (no broker, no Spark)."""

from __future__ import annotations

import pytest

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.spark.offsets import OffsetRange, from_json, split_ranges, to_json
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
        ({"subscribe": "a", "fetchOffset.numRetries": "3"}, "fetchOffset.numRetries"),
        ({"subscribe": "a", "startingOffsets": "{nope"}, "startingOffsets"),
        ({"subscribe": "a", "endingOffsets": "earliest"}, "endingOffsets"),
        ({"subscribe": "a", "minPartitions": "0"}, "minPartitions"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "5"}, "streaming"),
        ({"assign": "[1]"}, "assign"),
        ({"subscribePattern": "("}, "subscribePattern"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_options({**BS, **options})


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
