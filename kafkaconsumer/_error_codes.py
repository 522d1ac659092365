"""One exception class per error code of the Kafka protocol (generated; do not edit).

Written by ``tools/gen_errors.py`` from its table; ``tests/test_errors.py`` fails when this file
and the table drift apart. Import the classes from :mod:`kafkaconsumer.errors`.
"""

# ruff: noqa: E501

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkaconsumer._error_base import (
    AuthorizationError,
    BrokerResponseError,
    SaslAuthenticationError,
)

__all__ = [
    "UnknownServerError",
    "OffsetOutOfRangeError",
    "CorruptMessageError",
    "UnknownTopicOrPartitionError",
    "InvalidFetchSizeError",
    "LeaderNotAvailableError",
    "NotLeaderOrFollowerError",
    "RequestTimedOutError",
    "BrokerNotAvailableError",
    "ReplicaNotAvailableError",
    "MessageTooLargeError",
    "StaleControllerEpochError",
    "OffsetMetadataTooLargeError",
    "NetworkError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "NotCoordinatorError",
    "InvalidTopicError",
    "RecordListTooLargeError",
    "NotEnoughReplicasError",
    "NotEnoughReplicasAfterAppendError",
    "InvalidRequiredAcksError",
    "IllegalGenerationError",
    "InconsistentGroupProtocolError",
    "InvalidGroupIdError",
    "UnknownMemberIdError",
    "InvalidSessionTimeoutError",
    "RebalanceInProgressError",
    "InvalidCommitOffsetSizeError",
    "TopicAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "InvalidTimestampError",
    "UnsupportedSaslMechanismError",
    "IllegalSaslStateError",
    "UnsupportedVersionError",
    "TopicAlreadyExistsError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidReplicaAssignmentError",
    "InvalidConfigError",
    "NotControllerError",
    "InvalidRequestError",
    "UnsupportedForMessageFormatError",
    "PolicyViolationError",
    "OutOfOrderSequenceNumberError",
    "DuplicateSequenceNumberError",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "InvalidProducerIdMappingError",
    "InvalidTransactionTimeoutError",
    "ConcurrentTransactionsError",
    "TransactionCoordinatorFencedError",
    "TransactionalIdAuthorizationFailedError",
    "SecurityDisabledError",
    "OperationNotAttemptedError",
    "KafkaStorageError",
    "LogDirNotFoundError",
    "SaslAuthenticationFailedError",
    "UnknownProducerIdError",
    "ReassignmentInProgressError",
    "DelegationTokenAuthDisabledError",
    "DelegationTokenNotFoundError",
    "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowedError",
    "DelegationTokenAuthorizationFailedError",
    "DelegationTokenExpiredError",
    "InvalidPrincipalTypeError",
    "NonEmptyGroupError",
    "GroupIdNotFoundError",
    "FetchSessionIdNotFoundError",
    "InvalidFetchSessionEpochError",
    "ListenerNotFoundError",
    "TopicDeletionDisabledError",
    "FencedLeaderEpochError",
    "UnknownLeaderEpochError",
    "UnsupportedCompressionTypeError",
    "StaleBrokerEpochError",
    "OffsetNotAvailableError",
    "MemberIdRequiredError",
    "PreferredLeaderNotAvailableError",
    "GroupMaxSizeReachedError",
    "FencedInstanceIdError",
    "EligibleLeadersNotAvailableError",
    "ElectionNotNeededError",
    "NoReassignmentInProgressError",
    "GroupSubscribedToTopicError",
    "InvalidRecordError",
    "UnstableOffsetCommitError",
    "ThrottlingQuotaExceededError",
    "ProducerFencedError",
    "ResourceNotFoundError",
    "DuplicateResourceError",
    "UnacceptableCredentialError",
    "InconsistentVoterSetError",
    "InvalidUpdateVersionError",
    "FeatureUpdateFailedError",
    "PrincipalDeserializationFailureError",
    "SnapshotNotFoundError",
    "PositionOutOfRangeError",
    "UnknownTopicIdError",
    "DuplicateBrokerRegistrationError",
    "BrokerIdNotRegisteredError",
    "InconsistentTopicIdError",
    "InconsistentClusterIdError",
    "TransactionalIdNotFoundError",
    "FetchSessionTopicIdError",
    "IneligibleReplicaError",
    "NewLeaderElectedError",
    "OffsetMovedToTieredStorageError",
    "FencedMemberEpochError",
    "UnreleasedInstanceIdError",
    "UnsupportedAssignorError",
    "StaleMemberEpochError",
    "MismatchedEndpointTypeError",
    "UnsupportedEndpointTypeError",
    "UnknownControllerIdError",
    "UnknownSubscriptionIdError",
    "TelemetryTooLargeError",
    "InvalidRegistrationError",
    "TransactionAbortableError",
    "InvalidRecordStateError",
    "ShareSessionNotFoundError",
    "InvalidShareSessionEpochError",
    "FencedStateEpochError",
    "InvalidVoterKeyError",
    "DuplicateVoterError",
    "VoterNotFoundError",
    "InvalidRegularExpressionError",
    "RebootstrapRequiredError",
    "StreamsInvalidTopologyError",
    "StreamsInvalidTopologyEpochError",
    "StreamsTopologyFencedError",
    "ShareSessionLimitReachedError",
]


class UnknownServerError(BrokerResponseError):
    """The broker hit an unexpected error while handling the request."""

    errno = -1
    name = "UNKNOWN_SERVER_ERROR"
    description = "The broker hit an unexpected error while handling the request."


class OffsetOutOfRangeError(BrokerResponseError):
    """The requested offset is outside the range of offsets kept for the partition."""

    errno = 1
    name = "OFFSET_OUT_OF_RANGE"
    description = "The requested offset is outside the range of offsets kept for the partition."


class CorruptMessageError(BrokerResponseError):
    """The message failed its CRC check, is too small, or is otherwise corrupt."""

    errno = 2
    name = "CORRUPT_MESSAGE"
    description = "The message failed its CRC check, is too small, or is otherwise corrupt."
    retriable = True


class UnknownTopicOrPartitionError(BrokerResponseError):
    """The broker does not host this topic or partition."""

    errno = 3
    name = "UNKNOWN_TOPIC_OR_PARTITION"
    description = "The broker does not host this topic or partition."
    retriable = True
    invalid_metadata = True


class InvalidFetchSizeError(BrokerResponseError):
    """The requested fetch size is invalid."""

    errno = 4
    name = "INVALID_FETCH_SIZE"
    description = "The requested fetch size is invalid."


class LeaderNotAvailableError(BrokerResponseError):
    """The partition has no leader right now (for example during an election)."""

    errno = 5
    name = "LEADER_NOT_AVAILABLE"
    description = "The partition has no leader right now (for example during an election)."
    retriable = True
    invalid_metadata = True


class NotLeaderOrFollowerError(BrokerResponseError):
    """The broker is neither the leader nor a follower of the partition."""

    errno = 6
    name = "NOT_LEADER_OR_FOLLOWER"
    description = "The broker is neither the leader nor a follower of the partition."
    retriable = True
    invalid_metadata = True


class RequestTimedOutError(BrokerResponseError):
    """The broker did not finish the request within its time limit."""

    errno = 7
    name = "REQUEST_TIMED_OUT"
    description = "The broker did not finish the request within its time limit."
    retriable = True


class BrokerNotAvailableError(BrokerResponseError):
    """The broker is not available."""

    errno = 8
    name = "BROKER_NOT_AVAILABLE"
    description = "The broker is not available."


class ReplicaNotAvailableError(BrokerResponseError):
    """The replica is not available for the partition."""

    errno = 9
    name = "REPLICA_NOT_AVAILABLE"
    description = "The replica is not available for the partition."
    retriable = True
    invalid_metadata = True


class MessageTooLargeError(BrokerResponseError):
    """The request contains a message larger than the broker accepts."""

    errno = 10
    name = "MESSAGE_TOO_LARGE"
    description = "The request contains a message larger than the broker accepts."


class StaleControllerEpochError(BrokerResponseError):
    """The controller epoch is stale."""

    errno = 11
    name = "STALE_CONTROLLER_EPOCH"
    description = "The controller epoch is stale."


class OffsetMetadataTooLargeError(BrokerResponseError):
    """The metadata string of the committed offset is too long."""

    errno = 12
    name = "OFFSET_METADATA_TOO_LARGE"
    description = "The metadata string of the committed offset is too long."


class NetworkError(BrokerResponseError):
    """The broker lost its connection while the request was in flight."""

    errno = 13
    name = "NETWORK_EXCEPTION"
    description = "The broker lost its connection while the request was in flight."
    retriable = True
    invalid_metadata = True


class CoordinatorLoadInProgressError(BrokerResponseError):
    """The coordinator is still loading its state."""

    errno = 14
    name = "COORDINATOR_LOAD_IN_PROGRESS"
    description = "The coordinator is still loading its state."
    retriable = True


class CoordinatorNotAvailableError(BrokerResponseError):
    """The coordinator is not available."""

    errno = 15
    name = "COORDINATOR_NOT_AVAILABLE"
    description = "The coordinator is not available."
    retriable = True


class NotCoordinatorError(BrokerResponseError):
    """This broker is not the coordinator of the group or transaction."""

    errno = 16
    name = "NOT_COORDINATOR"
    description = "This broker is not the coordinator of the group or transaction."
    retriable = True


class InvalidTopicError(BrokerResponseError):
    """The topic name is invalid or the topic is internal."""

    errno = 17
    name = "INVALID_TOPIC_EXCEPTION"
    description = "The topic name is invalid or the topic is internal."


class RecordListTooLargeError(BrokerResponseError):
    """The record batch is larger than the broker's segment size allows."""

    errno = 18
    name = "RECORD_LIST_TOO_LARGE"
    description = "The record batch is larger than the broker's segment size allows."


class NotEnoughReplicasError(BrokerResponseError):
    """Fewer in-sync replicas than required."""

    errno = 19
    name = "NOT_ENOUGH_REPLICAS"
    description = "Fewer in-sync replicas than required."
    retriable = True


class NotEnoughReplicasAfterAppendError(BrokerResponseError):
    """The write was stored with fewer in-sync replicas than required."""

    errno = 20
    name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    description = "The write was stored with fewer in-sync replicas than required."
    retriable = True


class InvalidRequiredAcksError(BrokerResponseError):
    """The acks value is invalid."""

    errno = 21
    name = "INVALID_REQUIRED_ACKS"
    description = "The acks value is invalid."


class IllegalGenerationError(BrokerResponseError):
    """The group generation in the request is not the current one."""

    errno = 22
    name = "ILLEGAL_GENERATION"
    description = "The group generation in the request is not the current one."


class InconsistentGroupProtocolError(BrokerResponseError):
    """The member's protocol type or protocols do not match the group's."""

    errno = 23
    name = "INCONSISTENT_GROUP_PROTOCOL"
    description = "The member's protocol type or protocols do not match the group's."


class InvalidGroupIdError(BrokerResponseError):
    """The group id is empty or invalid."""

    errno = 24
    name = "INVALID_GROUP_ID"
    description = "The group id is empty or invalid."


class UnknownMemberIdError(BrokerResponseError):
    """The coordinator does not know this member id."""

    errno = 25
    name = "UNKNOWN_MEMBER_ID"
    description = "The coordinator does not know this member id."


class InvalidSessionTimeoutError(BrokerResponseError):
    """The session timeout is outside the broker's allowed range."""

    errno = 26
    name = "INVALID_SESSION_TIMEOUT"
    description = "The session timeout is outside the broker's allowed range."


class RebalanceInProgressError(BrokerResponseError):
    """The group is rebalancing; the member must rejoin."""

    errno = 27
    name = "REBALANCE_IN_PROGRESS"
    description = "The group is rebalancing; the member must rejoin."


class InvalidCommitOffsetSizeError(BrokerResponseError):
    """The committed offset data is too large."""

    errno = 28
    name = "INVALID_COMMIT_OFFSET_SIZE"
    description = "The committed offset data is too large."


class TopicAuthorizationFailedError(AuthorizationError, BrokerResponseError):
    """Not authorized to access the topic."""

    errno = 29
    name = "TOPIC_AUTHORIZATION_FAILED"
    description = "Not authorized to access the topic."

    #: The topics the principal may not access (empty when the broker did not say which).
    unauthorized_topics: frozenset[str]

    def __init__(
        self,
        message: str | None = None,
        *,
        unauthorized_topics: Iterable[str] = (),
        **context: Any,
    ) -> None:
        """Keep ``unauthorized_topics`` (``topic=`` alone counts as one); the rest as
        :class:`BrokerResponseError`.
        """
        topics = set(unauthorized_topics)
        if not topics and isinstance(context.get("topic"), str):
            topics.add(context["topic"])
        self.unauthorized_topics = frozenset(topics)
        super().__init__(message, **context)


class GroupAuthorizationFailedError(AuthorizationError, BrokerResponseError):
    """Not authorized to access the group."""

    errno = 30
    name = "GROUP_AUTHORIZATION_FAILED"
    description = "Not authorized to access the group."


class ClusterAuthorizationFailedError(AuthorizationError, BrokerResponseError):
    """Not authorized for this cluster operation."""

    errno = 31
    name = "CLUSTER_AUTHORIZATION_FAILED"
    description = "Not authorized for this cluster operation."


class InvalidTimestampError(BrokerResponseError):
    """A record timestamp is outside the accepted range."""

    errno = 32
    name = "INVALID_TIMESTAMP"
    description = "A record timestamp is outside the accepted range."


class UnsupportedSaslMechanismError(BrokerResponseError):
    """The broker does not support the requested SASL mechanism."""

    errno = 33
    name = "UNSUPPORTED_SASL_MECHANISM"
    description = "The broker does not support the requested SASL mechanism."


class IllegalSaslStateError(BrokerResponseError):
    """The request is not valid in the current SASL state."""

    errno = 34
    name = "ILLEGAL_SASL_STATE"
    description = "The request is not valid in the current SASL state."


class UnsupportedVersionError(BrokerResponseError):
    """The broker does not support this version of the API."""

    errno = 35
    name = "UNSUPPORTED_VERSION"
    description = "The broker does not support this version of the API."


class TopicAlreadyExistsError(BrokerResponseError):
    """A topic with this name exists already."""

    errno = 36
    name = "TOPIC_ALREADY_EXISTS"
    description = "A topic with this name exists already."


class InvalidPartitionsError(BrokerResponseError):
    """The number of partitions is invalid."""

    errno = 37
    name = "INVALID_PARTITIONS"
    description = "The number of partitions is invalid."


class InvalidReplicationFactorError(BrokerResponseError):
    """The replication factor is invalid."""

    errno = 38
    name = "INVALID_REPLICATION_FACTOR"
    description = "The replication factor is invalid."


class InvalidReplicaAssignmentError(BrokerResponseError):
    """The replica assignment is invalid."""

    errno = 39
    name = "INVALID_REPLICA_ASSIGNMENT"
    description = "The replica assignment is invalid."


class InvalidConfigError(BrokerResponseError):
    """The configuration is invalid."""

    errno = 40
    name = "INVALID_CONFIG"
    description = "The configuration is invalid."


class NotControllerError(BrokerResponseError):
    """This broker is not the controller."""

    errno = 41
    name = "NOT_CONTROLLER"
    description = "This broker is not the controller."
    retriable = True


class InvalidRequestError(BrokerResponseError):
    """The broker found the request malformed or incompatible; its log has details."""

    errno = 42
    name = "INVALID_REQUEST"
    description = "The broker found the request malformed or incompatible; its log has details."


class UnsupportedForMessageFormatError(BrokerResponseError):
    """The broker's message format does not support the request."""

    errno = 43
    name = "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    description = "The broker's message format does not support the request."


class PolicyViolationError(BrokerResponseError):
    """The request violates a policy configured on the broker."""

    errno = 44
    name = "POLICY_VIOLATION"
    description = "The request violates a policy configured on the broker."


class OutOfOrderSequenceNumberError(BrokerResponseError):
    """The broker received a producer sequence number out of order."""

    errno = 45
    name = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    description = "The broker received a producer sequence number out of order."


class DuplicateSequenceNumberError(BrokerResponseError):
    """The broker received a duplicate producer sequence number."""

    errno = 46
    name = "DUPLICATE_SEQUENCE_NUMBER"
    description = "The broker received a duplicate producer sequence number."


class InvalidProducerEpochError(BrokerResponseError):
    """The producer epoch is older than the current one."""

    errno = 47
    name = "INVALID_PRODUCER_EPOCH"
    description = "The producer epoch is older than the current one."


class InvalidTxnStateError(BrokerResponseError):
    """The transactional operation is not valid in the transaction's state."""

    errno = 48
    name = "INVALID_TXN_STATE"
    description = "The transactional operation is not valid in the transaction's state."


class InvalidProducerIdMappingError(BrokerResponseError):
    """The producer id is not assigned to this transactional id."""

    errno = 49
    name = "INVALID_PRODUCER_ID_MAPPING"
    description = "The producer id is not assigned to this transactional id."


class InvalidTransactionTimeoutError(BrokerResponseError):
    """The transaction timeout exceeds the broker's maximum."""

    errno = 50
    name = "INVALID_TRANSACTION_TIMEOUT"
    description = "The transaction timeout exceeds the broker's maximum."


class ConcurrentTransactionsError(BrokerResponseError):
    """Another operation on the same transaction is still in progress."""

    errno = 51
    name = "CONCURRENT_TRANSACTIONS"
    description = "Another operation on the same transaction is still in progress."
    retriable = True


class TransactionCoordinatorFencedError(BrokerResponseError):
    """The transaction coordinator is no longer the current one."""

    errno = 52
    name = "TRANSACTION_COORDINATOR_FENCED"
    description = "The transaction coordinator is no longer the current one."


class TransactionalIdAuthorizationFailedError(AuthorizationError, BrokerResponseError):
    """Not authorized for this transactional id."""

    errno = 53
    name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    description = "Not authorized for this transactional id."


class SecurityDisabledError(BrokerResponseError):
    """Security features are disabled on the broker."""

    errno = 54
    name = "SECURITY_DISABLED"
    description = "Security features are disabled on the broker."


class OperationNotAttemptedError(BrokerResponseError):
    """The broker did not attempt this operation of a batched request."""

    errno = 55
    name = "OPERATION_NOT_ATTEMPTED"
    description = "The broker did not attempt this operation of a batched request."


class KafkaStorageError(BrokerResponseError):
    """The broker hit a disk error reading or writing the log."""

    errno = 56
    name = "KAFKA_STORAGE_ERROR"
    description = "The broker hit a disk error reading or writing the log."
    retriable = True
    invalid_metadata = True


class LogDirNotFoundError(BrokerResponseError):
    """The log directory does not exist."""

    errno = 57
    name = "LOG_DIR_NOT_FOUND"
    description = "The log directory does not exist."


class SaslAuthenticationFailedError(SaslAuthenticationError, BrokerResponseError):
    """SASL authentication failed."""

    errno = 58
    name = "SASL_AUTHENTICATION_FAILED"
    description = "SASL authentication failed."


class UnknownProducerIdError(BrokerResponseError):
    """The broker has no state for this producer id."""

    errno = 59
    name = "UNKNOWN_PRODUCER_ID"
    description = "The broker has no state for this producer id."


class ReassignmentInProgressError(BrokerResponseError):
    """A partition reassignment is in progress."""

    errno = 60
    name = "REASSIGNMENT_IN_PROGRESS"
    description = "A partition reassignment is in progress."


class DelegationTokenAuthDisabledError(BrokerResponseError):
    """Delegation token authentication is disabled."""

    errno = 61
    name = "DELEGATION_TOKEN_AUTH_DISABLED"
    description = "Delegation token authentication is disabled."


class DelegationTokenNotFoundError(BrokerResponseError):
    """The delegation token was not found."""

    errno = 62
    name = "DELEGATION_TOKEN_NOT_FOUND"
    description = "The delegation token was not found."


class DelegationTokenOwnerMismatchError(BrokerResponseError):
    """The principal does not own the delegation token."""

    errno = 63
    name = "DELEGATION_TOKEN_OWNER_MISMATCH"
    description = "The principal does not own the delegation token."


class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    """Delegation token requests are not allowed on this channel."""

    errno = 64
    name = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
    description = "Delegation token requests are not allowed on this channel."


class DelegationTokenAuthorizationFailedError(AuthorizationError, BrokerResponseError):
    """Not authorized for the delegation token."""

    errno = 65
    name = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"
    description = "Not authorized for the delegation token."


class DelegationTokenExpiredError(BrokerResponseError):
    """The delegation token has expired."""

    errno = 66
    name = "DELEGATION_TOKEN_EXPIRED"
    description = "The delegation token has expired."


class InvalidPrincipalTypeError(BrokerResponseError):
    """The principal type is not supported."""

    errno = 67
    name = "INVALID_PRINCIPAL_TYPE"
    description = "The principal type is not supported."


class NonEmptyGroupError(BrokerResponseError):
    """The group still has members."""

    errno = 68
    name = "NON_EMPTY_GROUP"
    description = "The group still has members."


class GroupIdNotFoundError(BrokerResponseError):
    """The group does not exist."""

    errno = 69
    name = "GROUP_ID_NOT_FOUND"
    description = "The group does not exist."


class FetchSessionIdNotFoundError(BrokerResponseError):
    """The fetch session is unknown to the broker."""

    errno = 70
    name = "FETCH_SESSION_ID_NOT_FOUND"
    description = "The fetch session is unknown to the broker."
    retriable = True


class InvalidFetchSessionEpochError(BrokerResponseError):
    """The fetch session epoch is not the one the broker expects."""

    errno = 71
    name = "INVALID_FETCH_SESSION_EPOCH"
    description = "The fetch session epoch is not the one the broker expects."
    retriable = True


class ListenerNotFoundError(BrokerResponseError):
    """The leader has no endpoint for the listener this request came through."""

    errno = 72
    name = "LISTENER_NOT_FOUND"
    description = "The leader has no endpoint for the listener this request came through."
    retriable = True
    invalid_metadata = True


class TopicDeletionDisabledError(BrokerResponseError):
    """Topic deletion is disabled."""

    errno = 73
    name = "TOPIC_DELETION_DISABLED"
    description = "Topic deletion is disabled."


class FencedLeaderEpochError(BrokerResponseError):
    """The leader epoch in the request is older than the broker's."""

    errno = 74
    name = "FENCED_LEADER_EPOCH"
    description = "The leader epoch in the request is older than the broker's."
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpochError(BrokerResponseError):
    """The leader epoch in the request is newer than the broker's."""

    errno = 75
    name = "UNKNOWN_LEADER_EPOCH"
    description = "The leader epoch in the request is newer than the broker's."
    retriable = True


class UnsupportedCompressionTypeError(BrokerResponseError):
    """The consumer does not support the compression type of the records."""

    errno = 76
    name = "UNSUPPORTED_COMPRESSION_TYPE"
    description = "The consumer does not support the compression type of the records."


class StaleBrokerEpochError(BrokerResponseError):
    """The broker epoch is stale."""

    errno = 77
    name = "STALE_BROKER_EPOCH"
    description = "The broker epoch is stale."


class OffsetNotAvailableError(BrokerResponseError):
    """The leader's high watermark is not yet known for this offset."""

    errno = 78
    name = "OFFSET_NOT_AVAILABLE"
    description = "The leader's high watermark is not yet known for this offset."
    retriable = True


class MemberIdRequiredError(BrokerResponseError):
    """The member must rejoin with the member id the coordinator gave it."""

    errno = 79
    name = "MEMBER_ID_REQUIRED"
    description = "The member must rejoin with the member id the coordinator gave it."


class PreferredLeaderNotAvailableError(BrokerResponseError):
    """The preferred leader is not available."""

    errno = 80
    name = "PREFERRED_LEADER_NOT_AVAILABLE"
    description = "The preferred leader is not available."
    retriable = True
    invalid_metadata = True


class GroupMaxSizeReachedError(BrokerResponseError):
    """The group has reached its maximum size."""

    errno = 81
    name = "GROUP_MAX_SIZE_REACHED"
    description = "The group has reached its maximum size."


class FencedInstanceIdError(BrokerResponseError):
    """Another member with the same group.instance.id has fenced this one."""

    errno = 82
    name = "FENCED_INSTANCE_ID"
    description = "Another member with the same group.instance.id has fenced this one."


class EligibleLeadersNotAvailableError(BrokerResponseError):
    """No eligible leader is available for the election."""

    errno = 83
    name = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    description = "No eligible leader is available for the election."
    retriable = True
    invalid_metadata = True


class ElectionNotNeededError(BrokerResponseError):
    """The leader election is not needed."""

    errno = 84
    name = "ELECTION_NOT_NEEDED"
    description = "The leader election is not needed."


class NoReassignmentInProgressError(BrokerResponseError):
    """There is no partition reassignment in progress."""

    errno = 85
    name = "NO_REASSIGNMENT_IN_PROGRESS"
    description = "There is no partition reassignment in progress."


class GroupSubscribedToTopicError(BrokerResponseError):
    """The group still subscribes to the topic."""

    errno = 86
    name = "GROUP_SUBSCRIBED_TO_TOPIC"
    description = "The group still subscribes to the topic."


class InvalidRecordError(BrokerResponseError):
    """The broker rejected a record as invalid."""

    errno = 87
    name = "INVALID_RECORD"
    description = "The broker rejected a record as invalid."


class UnstableOffsetCommitError(BrokerResponseError):
    """Pending transactional offset commits exist; the offset is not stable yet."""

    errno = 88
    name = "UNSTABLE_OFFSET_COMMIT"
    description = "Pending transactional offset commits exist; the offset is not stable yet."
    retriable = True


class ThrottlingQuotaExceededError(BrokerResponseError):
    """The throttling quota was exceeded."""

    errno = 89
    name = "THROTTLING_QUOTA_EXCEEDED"
    description = "The throttling quota was exceeded."
    retriable = True


class ProducerFencedError(BrokerResponseError):
    """A newer producer with the same transactional id has fenced this one."""

    errno = 90
    name = "PRODUCER_FENCED"
    description = "A newer producer with the same transactional id has fenced this one."


class ResourceNotFoundError(BrokerResponseError):
    """The resource does not exist."""

    errno = 91
    name = "RESOURCE_NOT_FOUND"
    description = "The resource does not exist."


class DuplicateResourceError(BrokerResponseError):
    """The resource is named more than once in the request."""

    errno = 92
    name = "DUPLICATE_RESOURCE"
    description = "The resource is named more than once in the request."


class UnacceptableCredentialError(BrokerResponseError):
    """The credential does not meet the broker's requirements."""

    errno = 93
    name = "UNACCEPTABLE_CREDENTIAL"
    description = "The credential does not meet the broker's requirements."


class InconsistentVoterSetError(BrokerResponseError):
    """The voter set does not match the leader's."""

    errno = 94
    name = "INCONSISTENT_VOTER_SET"
    description = "The voter set does not match the leader's."


class InvalidUpdateVersionError(BrokerResponseError):
    """The update version is invalid."""

    errno = 95
    name = "INVALID_UPDATE_VERSION"
    description = "The update version is invalid."


class FeatureUpdateFailedError(BrokerResponseError):
    """The feature update failed."""

    errno = 96
    name = "FEATURE_UPDATE_FAILED"
    description = "The feature update failed."


class PrincipalDeserializationFailureError(BrokerResponseError):
    """The forwarded principal could not be deserialized."""

    errno = 97
    name = "PRINCIPAL_DESERIALIZATION_FAILURE"
    description = "The forwarded principal could not be deserialized."


class SnapshotNotFoundError(BrokerResponseError):
    """The snapshot was not found."""

    errno = 98
    name = "SNAPSHOT_NOT_FOUND"
    description = "The snapshot was not found."


class PositionOutOfRangeError(BrokerResponseError):
    """The requested position is outside the snapshot."""

    errno = 99
    name = "POSITION_OUT_OF_RANGE"
    description = "The requested position is outside the snapshot."


class UnknownTopicIdError(BrokerResponseError):
    """The broker does not know this topic id."""

    errno = 100
    name = "UNKNOWN_TOPIC_ID"
    description = "The broker does not know this topic id."
    retriable = True
    invalid_metadata = True


class DuplicateBrokerRegistrationError(BrokerResponseError):
    """This broker id is registered already."""

    errno = 101
    name = "DUPLICATE_BROKER_REGISTRATION"
    description = "This broker id is registered already."


class BrokerIdNotRegisteredError(BrokerResponseError):
    """This broker id is not registered."""

    errno = 102
    name = "BROKER_ID_NOT_REGISTERED"
    description = "This broker id is not registered."


class InconsistentTopicIdError(BrokerResponseError):
    """The topic id does not match the one the broker has."""

    errno = 103
    name = "INCONSISTENT_TOPIC_ID"
    description = "The topic id does not match the one the broker has."
    retriable = True
    invalid_metadata = True


class InconsistentClusterIdError(BrokerResponseError):
    """The cluster id does not match."""

    errno = 104
    name = "INCONSISTENT_CLUSTER_ID"
    description = "The cluster id does not match."


class TransactionalIdNotFoundError(BrokerResponseError):
    """The transactional id was not found."""

    errno = 105
    name = "TRANSACTIONAL_ID_NOT_FOUND"
    description = "The transactional id was not found."


class FetchSessionTopicIdError(BrokerResponseError):
    """The fetch session saw a topic id change or a mix of topic ids and names."""

    errno = 106
    name = "FETCH_SESSION_TOPIC_ID_ERROR"
    description = "The fetch session saw a topic id change or a mix of topic ids and names."
    retriable = True


class IneligibleReplicaError(BrokerResponseError):
    """The replica is not eligible for leadership."""

    errno = 107
    name = "INELIGIBLE_REPLICA"
    description = "The replica is not eligible for leadership."


class NewLeaderElectedError(BrokerResponseError):
    """A new leader was elected while the request waited."""

    errno = 108
    name = "NEW_LEADER_ELECTED"
    description = "A new leader was elected while the request waited."


class OffsetMovedToTieredStorageError(BrokerResponseError):
    """The offset was moved to tiered storage."""

    errno = 109
    name = "OFFSET_MOVED_TO_TIERED_STORAGE"
    description = "The offset was moved to tiered storage."


class FencedMemberEpochError(BrokerResponseError):
    """The member epoch is fenced; the member must rejoin with epoch 0."""

    errno = 110
    name = "FENCED_MEMBER_EPOCH"
    description = "The member epoch is fenced; the member must rejoin with epoch 0."


class UnreleasedInstanceIdError(BrokerResponseError):
    """The instance id is still used by another member."""

    errno = 111
    name = "UNRELEASED_INSTANCE_ID"
    description = "The instance id is still used by another member."


class UnsupportedAssignorError(BrokerResponseError):
    """The broker does not support the requested assignor."""

    errno = 112
    name = "UNSUPPORTED_ASSIGNOR"
    description = "The broker does not support the requested assignor."


class StaleMemberEpochError(BrokerResponseError):
    """The member epoch is stale."""

    errno = 113
    name = "STALE_MEMBER_EPOCH"
    description = "The member epoch is stale."


class MismatchedEndpointTypeError(BrokerResponseError):
    """The request was sent to an endpoint of the wrong type."""

    errno = 114
    name = "MISMATCHED_ENDPOINT_TYPE"
    description = "The request was sent to an endpoint of the wrong type."


class UnsupportedEndpointTypeError(BrokerResponseError):
    """This endpoint type does not support the request."""

    errno = 115
    name = "UNSUPPORTED_ENDPOINT_TYPE"
    description = "This endpoint type does not support the request."


class UnknownControllerIdError(BrokerResponseError):
    """The controller id is unknown."""

    errno = 116
    name = "UNKNOWN_CONTROLLER_ID"
    description = "The controller id is unknown."


class UnknownSubscriptionIdError(BrokerResponseError):
    """The client telemetry subscription id is unknown."""

    errno = 117
    name = "UNKNOWN_SUBSCRIPTION_ID"
    description = "The client telemetry subscription id is unknown."


class TelemetryTooLargeError(BrokerResponseError):
    """The client telemetry payload is too large."""

    errno = 118
    name = "TELEMETRY_TOO_LARGE"
    description = "The client telemetry payload is too large."


class InvalidRegistrationError(BrokerResponseError):
    """The controller rejected the broker registration."""

    errno = 119
    name = "INVALID_REGISTRATION"
    description = "The controller rejected the broker registration."


class TransactionAbortableError(BrokerResponseError):
    """The transaction hit an error and can be aborted to go on."""

    errno = 120
    name = "TRANSACTION_ABORTABLE"
    description = "The transaction hit an error and can be aborted to go on."


class InvalidRecordStateError(BrokerResponseError):
    """The record state is invalid for the acknowledgement."""

    errno = 121
    name = "INVALID_RECORD_STATE"
    description = "The record state is invalid for the acknowledgement."


class ShareSessionNotFoundError(BrokerResponseError):
    """The share session is unknown."""

    errno = 122
    name = "SHARE_SESSION_NOT_FOUND"
    description = "The share session is unknown."
    retriable = True


class InvalidShareSessionEpochError(BrokerResponseError):
    """The share session epoch is invalid."""

    errno = 123
    name = "INVALID_SHARE_SESSION_EPOCH"
    description = "The share session epoch is invalid."
    retriable = True


class FencedStateEpochError(BrokerResponseError):
    """The share-group state epoch does not match."""

    errno = 124
    name = "FENCED_STATE_EPOCH"
    description = "The share-group state epoch does not match."


class InvalidVoterKeyError(BrokerResponseError):
    """The voter key does not match the replica's."""

    errno = 125
    name = "INVALID_VOTER_KEY"
    description = "The voter key does not match the replica's."


class DuplicateVoterError(BrokerResponseError):
    """The voter is already in the voter set."""

    errno = 126
    name = "DUPLICATE_VOTER"
    description = "The voter is already in the voter set."


class VoterNotFoundError(BrokerResponseError):
    """The voter is not in the voter set."""

    errno = 127
    name = "VOTER_NOT_FOUND"
    description = "The voter is not in the voter set."


class InvalidRegularExpressionError(BrokerResponseError):
    """The regular expression is invalid."""

    errno = 128
    name = "INVALID_REGULAR_EXPRESSION"
    description = "The regular expression is invalid."


class RebootstrapRequiredError(BrokerResponseError):
    """The client's metadata is stale; it must bootstrap again."""

    errno = 129
    name = "REBOOTSTRAP_REQUIRED"
    description = "The client's metadata is stale; it must bootstrap again."


class StreamsInvalidTopologyError(BrokerResponseError):
    """The streams topology is invalid."""

    errno = 130
    name = "STREAMS_INVALID_TOPOLOGY"
    description = "The streams topology is invalid."


class StreamsInvalidTopologyEpochError(BrokerResponseError):
    """The streams topology epoch is invalid."""

    errno = 131
    name = "STREAMS_INVALID_TOPOLOGY_EPOCH"
    description = "The streams topology epoch is invalid."


class StreamsTopologyFencedError(BrokerResponseError):
    """The streams topology epoch is outdated."""

    errno = 132
    name = "STREAMS_TOPOLOGY_FENCED"
    description = "The streams topology epoch is outdated."


class ShareSessionLimitReachedError(BrokerResponseError):
    """The broker has reached its limit of share sessions."""

    errno = 133
    name = "SHARE_SESSION_LIMIT_REACHED"
    description = "The broker has reached its limit of share sessions."
