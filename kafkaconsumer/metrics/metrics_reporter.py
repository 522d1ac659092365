"""The listener told about metrics as they come and go (Java ``MetricsReporter``)."""

from __future__ import annotations

from kafkaconsumer.metrics.metrics import KafkaMetric


class MetricsReporter:
    """Optional listener told about metrics as they come and go (Java ``MetricsReporter``).

    Thread-safety: the registry calls a reporter from whichever thread adds or removes a metric,
    never under a metrics lock; an implementation that keeps state guards it itself.
    """

    def init(self, metrics: list[KafkaMetric]) -> None:
        """Called once with the metrics that already exist."""

    def metric_change(self, metric: KafkaMetric) -> None:
        """A metric was added (or replaced)."""

    def metric_removal(self, metric: KafkaMetric) -> None:
        """A metric was removed."""

    def close(self) -> None:
        """The registry is closing."""
