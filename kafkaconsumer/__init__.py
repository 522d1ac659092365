"""kafkaconsumer: a Kafka consumer for Python that mirrors the Java KafkaConsumer.

The public names are importable from here::

    from kafkaconsumer import KafkaConsumer, TopicPartition, OffsetAndMetadata

The exceptions the consumer raises are here too; :mod:`kafkaconsumer.errors` has them all (one
class per broker error code). Everything else (``kafkaconsumer.internals``, ``kafkaconsumer.network``,
``kafkaconsumer.protocol``, ``kafkaconsumer.record``) is the engine and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .close_options import CloseOptions, GroupMembershipOperation
from .config import ConsumerConfig
from .consumer import KafkaConsumer
from .errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    CommitFailedError,
    ConcurrentModificationError,
    ConfigError,
    CorruptRecordError,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupAuthorizationFailedError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    IllegalStateError,
    InconsistentGroupProtocolError,
    InterruptError,
    InvalidGroupIdError,
    InvalidRegularExpressionError,
    InvalidSessionTimeoutError,
    InvalidTopicError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    LogTruncationError,
    NodeNotReadyError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RebalanceInProgressError,
    RecordDeserializationError,
    RecordTooLargeError,
    RetriableCommitFailedError,
    SaslAuthenticationError,
    SaslAuthenticationFailedError,
    SerializationError,
    SslAuthenticationError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownErrorCodeError,
    UnknownMemberIdError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedCodecError,
    UnsupportedVersionError,
    WakeupError,
)
from .interceptors import ConsumerInterceptor
from .listener import ConsumerRebalanceListener
from .record import ConsumerRecord
from .serialization import Deserializer, Serializer
from .structs import (
    ConsumerGroupMetadata,
    ConsumerRecords,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

if TYPE_CHECKING:
    from .admin import KafkaAdminClient
    from .internals.fetch.acknowledgements import AcknowledgeType
    from .internals.fetch.share_completed_fetch import ShareConsumerRecord
    from .producer import KafkaProducer
    from .share_consumer import KafkaShareConsumer


def __getattr__(name: str) -> Any:
    # The admin client and the producer load on first use: a plain consumer needs neither, and
    # they are a good part of the package's import time.
    if name == "KafkaAdminClient":
        from .admin import KafkaAdminClient

        return KafkaAdminClient
    if name == "KafkaProducer":
        from .producer import KafkaProducer

        return KafkaProducer
    # The share consumer and its types load on first use too.
    if name == "KafkaShareConsumer":
        from .share_consumer import KafkaShareConsumer

        return KafkaShareConsumer
    if name == "AcknowledgeType":
        from .internals.fetch.acknowledgements import AcknowledgeType

        return AcknowledgeType
    if name == "ShareConsumerRecord":
        from .internals.fetch.share_completed_fetch import ShareConsumerRecord

        return ShareConsumerRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "__version__",
    "KafkaConsumer",
    "CloseOptions",
    "GroupMembershipOperation",
    "KafkaShareConsumer",
    "AcknowledgeType",
    "ShareConsumerRecord",
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
    "AuthenticationError",
    "AuthorizationError",
    "BrokerResponseError",
    "ClusterAuthorizationFailedError",
    "CommitFailedError",
    "ConcurrentModificationError",
    "ConfigError",
    "CorruptRecordError",
    "FencedInstanceIdError",
    "FencedMemberEpochError",
    "GroupAuthorizationFailedError",
    "GroupMaxSizeReachedError",
    "IllegalGenerationError",
    "IllegalStateError",
    "InconsistentGroupProtocolError",
    "InterruptError",
    "InvalidGroupIdError",
    "InvalidRegularExpressionError",
    "InvalidSessionTimeoutError",
    "InvalidTopicError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaProtocolError",
    "KafkaTimeoutError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "NodeNotReadyError",
    "OffsetOutOfRangeError",
    "RebalanceInProgressError",
    "RecordDeserializationError",
    "RecordTooLargeError",
    "RetriableCommitFailedError",
    "SaslAuthenticationError",
    "SaslAuthenticationFailedError",
    "SerializationError",
    "SslAuthenticationError",
    "TopicAuthorizationFailedError",
    "TransactionalIdAuthorizationFailedError",
    "UnknownErrorCodeError",
    "UnknownMemberIdError",
    "UnknownServerError",
    "UnknownTopicOrPartitionError",
    "UnreleasedInstanceIdError",
    "UnsupportedAssignorError",
    "UnsupportedCodecError",
    "UnsupportedVersionError",
    "WakeupError",
]
