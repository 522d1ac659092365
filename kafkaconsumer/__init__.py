"""kafkaconsumer: a Kafka consumer for Python that mirrors the Java KafkaConsumer."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
