"""A small metrics registry modelled on Java's ``org.apache.kafka.common.metrics``, and the
consumer's metric sets.

The registry: :class:`Metrics` (``metrics.py``, with :class:`Sensor` and :class:`KafkaMetric`),
the statistics (``stats.py``), :class:`MetricName`, :class:`MetricConfig` and
:class:`RecordingLevel`, and :class:`MetricsReporter`. The consumer's own metric sets:
:class:`FetchManagerMetrics` (``consumer-fetch-manager-metrics``),
:class:`ConsumerCoordinatorMetrics` (``consumer-coordinator-metrics``) and
:class:`KafkaConsumerMetrics` (``consumer-metrics``).
"""

from __future__ import annotations

from kafkaconsumer.metrics.consumer_coordinator_metrics import ConsumerCoordinatorMetrics
from kafkaconsumer.metrics.fetch_manager_metrics import FetchManagerMetrics
from kafkaconsumer.metrics.kafka_consumer_metrics import KafkaConsumerMetrics
from kafkaconsumer.metrics.metric_config import MetricConfig, RecordingLevel
from kafkaconsumer.metrics.metric_name import MetricName
from kafkaconsumer.metrics.metrics import KafkaMetric, Metrics, Sensor
from kafkaconsumer.metrics.metrics_reporter import MetricsReporter
from kafkaconsumer.metrics.stats import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    Min,
    Rate,
    Stat,
    Value,
    WindowedCount,
    WindowedSum,
)

__all__ = [
    "MetricName",
    "MetricConfig",
    "RecordingLevel",
    "Stat",
    "Avg",
    "Max",
    "Min",
    "WindowedSum",
    "WindowedCount",
    "Rate",
    "CumulativeSum",
    "CumulativeCount",
    "Value",
    "KafkaMetric",
    "Sensor",
    "Metrics",
    "MetricsReporter",
    "FetchManagerMetrics",
    "ConsumerCoordinatorMetrics",
    "KafkaConsumerMetrics",
]
