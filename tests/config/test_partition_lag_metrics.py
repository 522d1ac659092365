"""The per-partition lag and lead metrics of the fetch-manager group read exactly as sensors
built from the general statistics (Value, Max, Avg, Min) would, window by window."""

from __future__ import annotations

import math
import random

import pytest

from kafkaconsumer.metrics import (
    Avg,
    FetchManagerMetrics,
    Max,
    MetricConfig,
    MetricName,
    Metrics,
    Min,
    Value,
)
from kafkaconsumer.structs import TopicPartition
from tests.support.mock_time import MockTime

G = FetchManagerMetrics.GROUP
NAMES = (
    "records-lag",
    "records-lag-max",
    "records-lag-avg",
    "records-lead",
    "records-lead-min",
    "records-lead-avg",
)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("samples", [1, 2, 3])
def test_partition_lag_and_lead_match_the_general_statistics(seed: int, samples: int) -> None:
    """Random records of lag and lead (together and alone), clock steps across window and
    expiry boundaries, and reads of random subsets of the six metrics (a read purges expired
    windows of what it reads) give the same value from the fetch-manager metrics as from
    reference sensors fed the same values at the same times."""
    rng = random.Random(seed)
    clock = MockTime(start_ms=0)
    config = MetricConfig(samples=samples, time_window_ms=100)
    registry = Metrics(config, time=clock)
    fetch = FetchManagerMetrics(registry, "c")
    reference = Metrics(config, time=clock)
    lag = reference.sensor("lag")
    lead = reference.sensor("lead")
    stats = (Value(), Max(), Avg(), Value(), Min(), Avg())
    ref_names = [MetricName(n, "ref") for n in NAMES]
    for i, stat in enumerate(stats):
        (lag if i < 3 else lead).add(ref_names[i], stat)
    tp = TopicPartition("a.topic", 3)
    tags = {"client-id": "c", "topic": "a_topic", "partition": "3"}
    fetch.record_lag_and_lead(tp, 1, 1)  # the partition's metrics exist from here on
    lag.record(1)
    lead.record(1)
    for _ in range(300):
        step = rng.random()
        if step < 0.3:
            clock.advance(rng.choice([1, 40, 99, 100, 101, 250, 1000]))
        elif step < 0.8:
            kind = rng.randrange(3)
            lag_value = rng.randrange(-5, 1000) if kind != 2 else None
            lead_value = rng.randrange(-5, 1000) if kind != 1 else None
            fetch.record_lag_and_lead(tp, lag_value, lead_value)
            if lag_value is not None:
                lag.record(lag_value)
            if lead_value is not None:
                lead.record(lead_value)
        else:
            for i in rng.sample(range(6), rng.randrange(1, 7)):
                ours = registry.value(NAMES[i], G, tags)
                theirs = reference.value(NAMES[i], "ref")
                assert _same(ours, theirs), (NAMES[i], ours, theirs)
    for i in range(6):
        assert _same(registry.value(NAMES[i], G, tags), reference.value(NAMES[i], "ref"))


def test_partition_metrics_before_any_record_read_nan() -> None:
    """A partition's metrics published by a lag-only record read NaN for the lead side."""
    clock = MockTime(start_ms=0)
    registry = Metrics(MetricConfig(samples=2, time_window_ms=100), time=clock)
    fetch = FetchManagerMetrics(registry, "c")
    fetch.record_lag(TopicPartition("t", 0), 7)
    tags = {"client-id": "c", "topic": "t", "partition": "0"}
    assert registry.value("records-lag", G, tags) == 7
    assert registry.value("records-lag-avg", G, tags) == 7
    for name in ("records-lead", "records-lead-min", "records-lead-avg"):
        assert math.isnan(registry.value(name, G, tags))
