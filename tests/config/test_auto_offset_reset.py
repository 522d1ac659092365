"""``auto.offset.reset=by_duration:<ISO-8601 duration>`` (KIP-1106): Java's Duration grammar,
Java's validation errors, and the ListOffsets timestamp a reset asks for (fake broker)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.config.auto_offset_reset import parse_duration_ns
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.internals.subscription_state import OffsetResetStrategy, SubscriptionState
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.support.fake_broker import FakeCluster
from tests.support.mock_time import MockTime

S = 1_000_000_000


@pytest.mark.parametrize(
    "text,ns",
    [
        ("PT1H", 3600 * S),
        ("P2D", 2 * 86400 * S),
        ("pt15m", 900 * S),
        ("PT0.5S", S // 2),
        ("PT1,25S", S + S // 4),
        ("P1DT2H3M4.000000001S", (86400 + 7200 + 180 + 4) * S + 1),
        ("PT0S", 0),
        ("+PT1H", 3600 * S),
        ("-PT1H", -3600 * S),
        ("PT-1H30M", -1800 * S),
        ("PT-0.5S", -S // 2),
        ("-PT-1H", 3600 * S),
    ],
)
def test_durations_parse_as_java_parses_them(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize(
    "text", ["", "P", "PT", "P1DT", "PT.5S", "1H", "PT1H ", "PT1.1234567891S", "P1W", "P1Y", "PT1D"]
)
def test_texts_java_refuses_do_not_parse(text: str) -> None:
    with pytest.raises(ValueError, match="cannot be parsed"):
        parse_duration_ns(text)


@pytest.mark.parametrize(
    "value,cause",
    [
        ("by_duration", "<:duration> part is missing in by_duration auto offset reset strategy."),
        ("by_duration:", "Unable to parse duration string in by_duration offset reset strategy."),
        ("by_duration:1h", "Unable to parse duration string in by_duration offset reset strategy."),
        ("by_duration:-PT1H", "Negative duration is not supported in by_duration offset reset"),
        ("BY_DURATION:PT1H", "Unknown auto offset reset strategy: BY_DURATION:PT1H"),
        ("smallest", "Unknown auto offset reset strategy: smallest"),
    ],
)
def test_bad_values_get_javas_error(value: str, cause: str) -> None:
    with pytest.raises(ConfigError) as info:
        KafkaConsumer(bootstrap_servers="localhost:9092", auto_offset_reset=value)
    message = str(info.value)
    assert message.startswith(
        f"Invalid value `{value}` for configuration auto.offset.reset. The value must be either "
        "'earliest', 'latest', 'none' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
    )
    assert cause in message


@pytest.mark.parametrize(
    "value", ["earliest", "LATEST", "None", "by_duration:PT1H", "by_duration:P0D"]
)
def test_good_values_are_accepted(value: str) -> None:
    c = KafkaConsumer(bootstrap_servers="localhost:9092", auto_offset_reset=value)
    try:
        expected = value.lower() if not value.startswith("by_duration") else value
        assert c.config["auto.offset.reset"] == expected
    finally:
        c.close()


def test_the_subscription_state_keeps_the_duration() -> None:
    subs = SubscriptionState("by_duration:PT2H")
    assert subs.default_reset_strategy is OffsetResetStrategy.BY_DURATION
    assert subs.reset_duration_ns == 2 * 3600 * S
    assert SubscriptionState("earliest").reset_duration_ns is None


# ------------------------------------------------------------------------ against a fake broker

NOW_MS = 1_800_000_000_000


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(topics={"t": 1}) as c:
        yield c


def _list_offsets_answer(offset: int) -> Any:
    def answer(_node: int, _header: Any, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "topics": [
                {
                    "name": t["name"],
                    "partitions": [
                        {
                            "partition_index": p["partition_index"],
                            "error_code": 0,
                            "timestamp": -1 if p["timestamp"] < 0 or offset < 0 else p["timestamp"],
                            "offset": offset if p["timestamp"] >= 0 else 7,
                            "leader_epoch": -1,
                        }
                        for p in t["partitions"]
                    ],
                }
                for t in body["topics"]
            ]
        }

    return answer


def _requested_timestamps(cluster: FakeCluster) -> list[int]:
    return [
        p["timestamp"]
        for _h, body in cluster.requests(ApiKey.LIST_OFFSETS)
        for t in body["topics"]
        for p in t["partitions"]
    ]


def test_a_reset_asks_for_the_first_offset_after_now_minus_the_duration(
    cluster: FakeCluster,
) -> None:
    cluster.on(ApiKey.LIST_OFFSETS, _list_offsets_answer(3))
    clock = MockTime(wall_start_ms=NOW_MS, auto_tick_ms=1)
    c = KafkaConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers},
        auto_offset_reset="by_duration:PT1H",
        _time=clock,
    )
    try:
        tp = TopicPartition("t", 0)
        c.assign([tp])
        assert c.position(tp, timeout_ms=10_000) == 3
        (ts,) = _requested_timestamps(cluster)
        # The wall clock moved on a little while the consumer started (auto tick).
        assert NOW_MS - 3_600_000 <= ts <= NOW_MS - 3_600_000 + 10_000
    finally:
        c.close(timeout_ms=0)


def test_no_record_that_recent_resets_to_the_log_end(cluster: FakeCluster) -> None:
    cluster.on(ApiKey.LIST_OFFSETS, _list_offsets_answer(-1))
    c = KafkaConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers}, auto_offset_reset="by_duration:PT1H"
    )
    try:
        tp = TopicPartition("t", 0)
        c.assign([tp])
        assert c.position(tp, timeout_ms=10_000) == 7  # the log end the latest lookup gave
        stamps = _requested_timestamps(cluster)
        assert stamps[0] > 0 and stamps[-1] == -1  # by time, then the end
    finally:
        c.close(timeout_ms=0)
