"""Metrics registry and the consumer metric sets, driven by a fake clock."""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.config import JMX_REPORTER, ConsumerConfig
from kafkaconsumer.errors import ConfigError, IllegalStateError
from kafkaconsumer.metrics import (
    Avg,
    ConsumerCoordinatorMetrics,
    CumulativeCount,
    CumulativeSum,
    FetchManagerMetrics,
    KafkaConsumerMetrics,
    Max,
    MetricConfig,
    MetricName,
    Metrics,
    MetricsReporter,
    Min,
    Rate,
    RecordingLevel,
    Value,
    WindowedCount,
)
from kafkaconsumer.structs import TopicPartition
from tests.support.mock_time import MockTime

G = "test-group"


def _registry(samples: int = 2, window_ms: int = 1000) -> tuple[Metrics, MockTime]:
    clock = MockTime(start_ms=0)
    return Metrics(MetricConfig(samples=samples, time_window_ms=window_ms), time=clock), clock


def test_metric_name_identity() -> None:
    a = MetricName("x", "g", "one description", {"client-id": "c", "topic": "t"})
    b = MetricName("x", "g", "another", {"topic": "t", "client-id": "c"})
    assert a == b and hash(a) == hash(b)
    assert a != MetricName("x", "g", "", {"client-id": "c"})
    assert a != MetricName("x", "h", "", {"client-id": "c", "topic": "t"})
    assert a.tags == {"client-id": "c", "topic": "t"}


def test_avg_max_min_windows_and_expiry() -> None:
    metrics, clock = _registry(samples=2, window_ms=1000)
    sensor = metrics.sensor("s")
    sensor.add(MetricName("avg", G), Avg()).add(MetricName("max", G), Max())
    sensor.add(MetricName("min", G), Min())
    assert math.isnan(metrics.value("avg", G))
    assert math.isnan(metrics.value("max", G))
    sensor.record(10)
    sensor.record(30)
    assert metrics.value("avg", G) == 20
    assert metrics.value("max", G) == 30
    assert metrics.value("min", G) == 10
    clock.advance(1000)  # second window
    sensor.record(2)
    assert metrics.value("avg", G) == pytest.approx(14.0)
    assert metrics.value("min", G) == 2
    clock.advance(1000)  # third window reuses the first sample: 10 and 30 are gone
    sensor.record(4)
    assert metrics.value("max", G) == 4
    assert metrics.value("avg", G) == 3
    clock.advance(5000)  # everything expired
    assert math.isnan(metrics.value("avg", G))
    assert math.isnan(metrics.value("max", G))


def test_rate_uses_at_least_samples_minus_one_windows() -> None:
    metrics, clock = _registry(samples=2, window_ms=1000)
    sensor = metrics.sensor("s")
    sensor.add(MetricName("rate", G), Rate())
    sensor.add(MetricName("count-rate", G), Rate(WindowedCount()))
    sensor.add(MetricName("total", G), CumulativeSum())
    sensor.add(MetricName("count", G), CumulativeCount())
    sensor.record(100)
    # Right after start-up the span is the minimum of one full window (1 s), not ~0.
    assert metrics.value("rate", G) == pytest.approx(100.0)
    clock.advance(500)
    sensor.record(50)
    # 150 over 0.5 s elapsed plus the one-window minimum: 1.5 s.
    assert metrics.value("rate", G) == pytest.approx(100.0)
    assert metrics.value("count-rate", G) == pytest.approx(2 / 1.5)
    clock.advance(1400)  # 1.9 s since the first window began (a full window): 150 / 1.9 s
    assert metrics.value("rate", G) == pytest.approx(150 / 1.9)
    clock.advance(100)  # the first window is now samples * window old: purged
    assert metrics.value("rate", G) == 0.0
    clock.advance(10_000)
    assert metrics.value("rate", G) == 0.0
    assert metrics.value("total", G) == 150.0
    assert metrics.value("count", G) == 2.0


def test_value_stat_and_gauges() -> None:
    metrics, _ = _registry()
    sensor = metrics.sensor("v")
    sensor.add(MetricName("last", G), Value())
    assert math.isnan(metrics.value("last", G))
    sensor.record(7)
    sensor.record(3)
    assert metrics.value("last", G) == 3
    box = {"n": 5}
    metrics.add_gauge(MetricName("gauge", G), lambda: box["n"])
    assert metrics.value("gauge", G) == 5
    box["n"] = 6
    assert metrics.metrics()[MetricName("gauge", G)] == 6

    def broken() -> float:
        raise RuntimeError("boom")

    metrics.add_gauge(MetricName("broken", G), broken)
    assert math.isnan(metrics.value("broken", G))
    with pytest.raises(KeyError):
        metrics.value("missing", G)


def test_remove_sensor_and_reporters() -> None:
    events: list[tuple[str, str]] = []

    class Recorder(MetricsReporter):
        def init(self, metrics: list[Any]) -> None:
            events.append(("init", str(len(metrics))))

        def metric_change(self, metric: Any) -> None:
            events.append(("change", metric.metric_name.name))

        def metric_removal(self, metric: Any) -> None:
            events.append(("remove", metric.metric_name.name))

        def close(self) -> None:
            events.append(("close", ""))

    class Broken:
        def metric_change(self, metric: Any) -> None:
            raise RuntimeError("reporter bug")

    metrics = Metrics(time=MockTime(), reporters=[Recorder(), Broken()])
    metrics.sensor("s").add(MetricName("a", G), Avg())
    metrics.remove_sensor("s")
    assert MetricName("a", G) not in metrics.metrics()
    assert metrics.get_sensor("s") is None
    metrics.close()
    assert events == [("init", "0"), ("change", "a"), ("remove", "a"), ("close", "")]


def test_from_config_reads_sampling_and_skips_the_jmx_reporter() -> None:
    config = ConsumerConfig(metrics_num_samples=3, metrics_sample_window_ms=500)
    assert list(config["metric.reporters"]) == [JMX_REPORTER]
    metrics = Metrics.from_config(config, time=MockTime())
    assert metrics.config == MetricConfig(samples=3, time_window_ms=500)
    assert metrics._reporters == []
    with pytest.raises(ValueError):
        MetricConfig(samples=0)


@pytest.mark.parametrize(
    "java_class",
    ["io.confluent.metrics.reporter.ConfluentMetricsReporter", "org.apache.kafka.Foo"],
)
def test_a_java_metric_reporter_other_than_jmx_is_refused(java_class: str) -> None:
    # Dropping it silently would leave the user without the metrics they configured.
    with pytest.raises(ConfigError, match=r"metric\.reporters: .*Java class"):
        ConsumerConfig({"metric.reporters": [JMX_REPORTER, java_class]})


@pytest.mark.parametrize(
    ("configured", "recorded"),
    [
        ("INFO", {RecordingLevel.INFO}),
        ("DEBUG", {RecordingLevel.INFO, RecordingLevel.DEBUG}),
        ("TRACE", {RecordingLevel.INFO, RecordingLevel.DEBUG, RecordingLevel.TRACE}),
    ],
)
def test_sensors_above_metrics_recording_level_publish_but_do_not_record(
    configured: str, recorded: set[RecordingLevel]
) -> None:
    metrics = Metrics.from_config(
        ConsumerConfig({"bootstrap.servers": "h:1", "metrics.recording.level": configured}),
        time=MockTime(),
    )
    assert metrics.config.recording_level is RecordingLevel[configured]
    for level in RecordingLevel:
        sensor = metrics.sensor(f"s-{level.name}", level)
        sensor.add(metrics.metric_name(f"total-{level.name}", "g"), CumulativeSum())
        sensor.record(5.0)
        assert sensor.should_record() == (level in recorded)
    # As in Java, every metric is published; only those of recording sensors move.
    assert {level: metrics.value(f"total-{level.name}", "g") for level in RecordingLevel} == {
        level: 5.0 if level in recorded else 0.0 for level in RecordingLevel
    }


def test_a_sensor_keeps_the_level_it_was_made_with() -> None:
    metrics = Metrics(MetricConfig(recording_level=RecordingLevel.INFO), time=MockTime())
    debug = metrics.sensor("s", RecordingLevel.DEBUG)
    assert metrics.sensor("s") is debug and not debug.should_record()
    assert metrics.sensor("t").recording_level is RecordingLevel.INFO
    with pytest.raises(ValueError, match="unknown recording level"):
        RecordingLevel.for_name("VERBOSE")


def test_the_consumer_registry_takes_metrics_recording_level() -> None:
    consumer = KafkaConsumer(
        {"bootstrap.servers": "127.0.0.1:9", "metrics.recording.level": "DEBUG"}
    )
    try:
        assert consumer._metrics.config.recording_level is RecordingLevel.DEBUG
    finally:
        consumer.close(timeout_ms=0)


def test_fetch_manager_metrics() -> None:
    metrics, clock = _registry(samples=2, window_ms=30_000)
    fm = FetchManagerMetrics(metrics, "c1")
    tags = {"client-id": "c1"}
    g = FetchManagerMetrics.GROUP
    fm.record_fetch_latency(10)
    fm.record_fetch_latency(30)
    fm.record_fetched({"my.topic": (1000, 10), "other": (500, 5)})
    fm.record_partition_fetched(TopicPartition("other", 1), 100, 1)
    tp = TopicPartition("my.topic", 0)
    fm.record_lag(tp, 40)
    fm.record_lag(tp, 20)
    fm.record_lead(tp, 5)
    fm.record_throttle_time(3)
    clock.advance(30_000)
    assert metrics.value("fetch-latency-avg", g, tags) == 20
    assert metrics.value("fetch-latency-max", g, tags) == 30
    assert metrics.value("fetch-total", g, tags) == 2
    assert metrics.value("fetch-rate", g, tags) == pytest.approx(2 / 30)
    assert metrics.value("bytes-consumed-total", g, tags) == 1600
    assert metrics.value("records-consumed-total", g, tags) == 16
    assert metrics.value("records-consumed-rate", g, tags) == pytest.approx(16 / 30)
    assert metrics.value("fetch-size-max", g, tags) == 1500
    assert metrics.value("records-per-request-avg", g, tags) == pytest.approx(8)
    topic_tags = {"client-id": "c1", "topic": "my_topic"}  # Java replaces '.' with '_'
    assert metrics.value("bytes-consumed-total", g, topic_tags) == 1000
    assert metrics.value("records-consumed-total", g, {"client-id": "c1", "topic": "other"}) == 6
    part_tags = {"client-id": "c1", "topic": "my_topic", "partition": "0"}
    assert metrics.value("records-lag", g, part_tags) == 20
    assert metrics.value("records-lag-max", g, part_tags) == 40
    assert metrics.value("records-lag-avg", g, part_tags) == 30
    assert metrics.value("records-lag-max", g, tags) == 40
    assert metrics.value("records-lead-min", g, part_tags) == 5
    assert metrics.value("fetch-throttle-time-max", g, tags) == 3
    fm.remove_partition(tp)
    with pytest.raises(KeyError):
        metrics.value("records-lag", g, part_tags)
    fm.record_lag(tp, 1)  # re-created after removal
    assert metrics.value("records-lag", g, part_tags) == 1


def test_partition_metrics_are_published_when_first_read() -> None:
    # Six metrics per partition are registered only when the registry is read; their
    # statistics record from the first fetch on.
    metrics, clock = _registry()
    fm = FetchManagerMetrics(metrics, "c1")
    g = FetchManagerMetrics.GROUP
    tps = [TopicPartition("t", p) for p in range(3)]
    for tp in tps:
        fm.record_lag(tp, 7)
        fm.record_lead(tp, 2)
    assert not any(name.tags.get("partition") for name in metrics._metrics)
    fm.record_lag(tps[0], 9)
    fm.remove_partition(tps[2])  # unassigned before anyone looked: never published
    values = {
        (name.name, name.tags.get("partition")): value
        for name, value in metrics.metrics().items()
        if name.group == g
    }
    assert values[("records-lag", "0")] == 9
    assert values[("records-lag-max", "0")] == 9
    assert values[("records-lag-avg", "0")] == 8
    assert values[("records-lead", "1")] == 2
    assert values[("records-lead-min", "1")] == 2
    assert not any(p == "2" for _name, p in values)
    # A partition first seen after the registry was read is published by the next read.
    fm.record_lag(TopicPartition("t", 5), 4)
    part_tags = {"client-id": "c1", "topic": "t", "partition": "5"}
    assert metrics.value("records-lag", g, part_tags) == 4


def test_partition_metrics_reach_reporters_as_they_are_made() -> None:
    changed: list[tuple[str, str | None]] = []

    class Recorder(MetricsReporter):
        def metric_change(self, metric: Any) -> None:
            name = metric.metric_name
            changed.append((name.name, name.tags.get("partition")))

    metrics = Metrics(time=MockTime(), reporters=[Recorder()])
    fm = FetchManagerMetrics(metrics, "c1")
    changed.clear()
    fm.record_lag(TopicPartition("t", 0), 3)
    assert ("records-lag", "0") in changed and ("records-lead-avg", "0") in changed
    with pytest.raises(IllegalStateError):
        metrics.defer(lambda: None)


def test_coordinator_and_consumer_metrics() -> None:
    metrics, clock = _registry(samples=2, window_ms=10_000)
    last_hb: dict[str, int | None] = {"ms": None}
    cm = ConsumerCoordinatorMetrics(
        metrics, "c", assigned_partitions=lambda: 3, last_heartbeat_ms=lambda: last_hb["ms"]
    )
    tags = {"client-id": "c"}
    g = ConsumerCoordinatorMetrics.GROUP
    assert metrics.value("last-heartbeat-seconds-ago", g, tags) == -1
    assert metrics.value("last-rebalance-seconds-ago", g, tags) == -1
    cm.record_commit_latency(12)
    cm.record_join_latency(100)
    cm.record_sync_latency(50)
    cm.record_heartbeat(4)
    cm.record_rebalance(150)
    cm.record_rebalance(99, failed=True)
    last_hb["ms"] = clock.monotonic_ms()
    clock.advance(2500)
    assert metrics.value("commit-latency-avg", g, tags) == 12
    assert metrics.value("commit-total", g, tags) == 1
    assert metrics.value("join-time-max", g, tags) == 100
    assert metrics.value("sync-time-avg", g, tags) == 50
    assert metrics.value("heartbeat-response-time-max", g, tags) == 4
    assert metrics.value("rebalance-total", g, tags) == 1
    assert metrics.value("rebalance-latency-total", g, tags) == 150
    assert metrics.value("failed-rebalance-total", g, tags) == 1
    assert metrics.value("assigned-partitions", g, tags) == 3
    assert metrics.value("last-heartbeat-seconds-ago", g, tags) == pytest.approx(2.5)
    assert metrics.value("last-rebalance-seconds-ago", g, tags) == pytest.approx(2.5)

    km = KafkaConsumerMetrics(metrics, "c")
    cg = KafkaConsumerMetrics.GROUP
    assert metrics.value("last-poll-seconds-ago", cg, tags) == -1
    km.record_poll_start()
    clock.advance(100)
    km.record_poll_end()
    clock.advance(300)  # user processing time
    km.record_poll_start()
    clock.advance(100)
    km.record_poll_end()
    assert metrics.value("time-between-poll-max", cg, tags) == 400
    # Second poll: 100 ms inside poll out of 400 + 100 ms since the previous poll began.
    assert metrics.value("poll-idle-ratio-avg", cg, tags) == pytest.approx((1.0 + 0.2) / 2)
    assert metrics.value("last-poll-seconds-ago", cg, tags) == pytest.approx(0.1)
    km.record_commit_sync(1000)
    km.record_committed(2000)
    assert metrics.value("commit-sync-time-ns-total", cg, tags) == 1000
    assert metrics.value("committed-time-ns-total", cg, tags) == 2000


def test_concurrent_recording_is_consistent() -> None:
    metrics, _ = _registry()
    sensor = metrics.sensor("s")
    sensor.add(MetricName("count", G), CumulativeCount())

    def work() -> None:
        for _ in range(2000):
            sensor.record(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert metrics.value("count", G) == 8000


def test_lag_and_lead_recorded_together_match_separate_recording() -> None:
    """record_lag_and_lead moves the same metrics as record_lag then record_lead, and skips
    whichever is None."""
    g = FetchManagerMetrics.GROUP
    tags = {"client-id": "c1"}
    part_tags = {"client-id": "c1", "topic": "t", "partition": "0"}
    tp = TopicPartition("t", 0)
    values: list[dict[str, float]] = []
    for together in (False, True):
        metrics, clock = _registry(samples=2, window_ms=30_000)
        fm = FetchManagerMetrics(metrics, "c1")
        for lag, lead in ((40, 5), (20, None), (None, 9)):
            if together:
                fm.record_lag_and_lead(tp, lag, lead)
            else:
                if lag is not None:
                    fm.record_lag(tp, lag)
                if lead is not None:
                    fm.record_lead(tp, lead)
        clock.advance(1)
        names = ["records-lag", "records-lag-max", "records-lag-avg", "records-lead"]
        names += ["records-lead-min", "records-lead-avg"]
        seen = {name: metrics.value(name, g, part_tags) for name in names}
        seen["all-lag-max"] = metrics.value("records-lag-max", g, tags)
        seen["all-lead-min"] = metrics.value("records-lead-min", g, tags)
        values.append(seen)
    assert values[0] == values[1]
    assert values[1]["records-lag"] == 20 and values[1]["records-lead-avg"] == 7


def test_record_all_skips_sensors_above_the_recording_level() -> None:
    """Metrics.record_all records like Sensor.record: idle sensors keep their initial values."""
    metrics = Metrics(MetricConfig(recording_level=RecordingLevel.INFO), time=MockTime())
    info = metrics.sensor("info")
    info.add(metrics.metric_name("info-total", "g"), CumulativeSum())
    debug = metrics.sensor("debug", RecordingLevel.DEBUG)
    debug.add(metrics.metric_name("debug-total", "g"), CumulativeSum())
    metrics.record_all([(info, 3.0), (debug, 4.0), (info, 2.0)], metrics.time.monotonic_ms())
    assert metrics.value("info-total", "g") == 5.0
    assert metrics.value("debug-total", "g") == 0.0
