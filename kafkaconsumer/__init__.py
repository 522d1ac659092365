"""kafkaconsumer: a Kafka consumer for Python that mirrors the Java KafkaConsumer.

The public names are importable from here::

    from kafkaconsumer import KafkaConsumer, TopicPartition, OffsetAndMetadata

Everything else (``kafkaconsumer.internals``, ``kafkaconsumer.network``,
``kafkaconsumer.protocol``, ``kafkaconsumer.record``) is the engine and may change.
"""

from __future__ import annotations

from .admin import KafkaAdminClient
from .config import ConsumerConfig
from .consumer import KafkaConsumer
from .errors import (
    BrokerResponseError,
    CommitFailedError,
    ConcurrentModificationError,
    ConfigError,
    CorruptRecordError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RecordDeserializationError,
    WakeupError,
)
from .interceptors import ConsumerInterceptor
from .listener import ConsumerRebalanceListener
from .producer import KafkaProducer
from .record import ConsumerRecord
from .serialization import Deserializer, Serializer
from .structs import (
    ConsumerGroupMetadata,
    ConsumerRecords,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "KafkaConsumer",
    "ConsumerConfig",
    "ConsumerRecord",
    "ConsumerRecords",
    "ConsumerRebalanceListener",
    "ConsumerInterceptor",
    "ConsumerGroupMetadata",
    "TopicPartition",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "Deserializer",
    "Serializer",
    "KafkaProducer",
    "KafkaAdminClient",
    "KafkaError",
    "BrokerResponseError",
    "CommitFailedError",
    "ConcurrentModificationError",
    "ConfigError",
    "CorruptRecordError",
    "KafkaTimeoutError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "RecordDeserializationError",
    "WakeupError",
]
