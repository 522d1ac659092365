"""Write kafkaconsumer/_error_codes.py: one exception class per Apache Kafka protocol error code.

The table below lists the codes (code, constant, flags, description in our own words). Flags:
r = retriable, m = invalid metadata (refresh metadata then retry), a = authorization failure,
s = SASL authentication failure.

Run ``python tools/gen_errors.py`` to rewrite the module and ``python tools/gen_errors.py --check``
to fail when it has drifted from the table (tests/test_errors.py runs the check).
"""

from __future__ import annotations

import sys
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "kafkaconsumer" / "_error_codes.py"

TABLE = """\
-1|UNKNOWN_SERVER_ERROR||The broker hit an unexpected error while handling the request.
1|OFFSET_OUT_OF_RANGE||The requested offset is outside the range of offsets kept for the partition.
2|CORRUPT_MESSAGE|r|The message failed its CRC check, is too small, or is otherwise corrupt.
3|UNKNOWN_TOPIC_OR_PARTITION|rm|The broker does not host this topic or partition.
4|INVALID_FETCH_SIZE||The requested fetch size is invalid.
5|LEADER_NOT_AVAILABLE|rm|The partition has no leader right now (for example during an election).
6|NOT_LEADER_OR_FOLLOWER|rm|The broker is neither the leader nor a follower of the partition.
7|REQUEST_TIMED_OUT|r|The broker did not finish the request within its time limit.
8|BROKER_NOT_AVAILABLE||The broker is not available.
9|REPLICA_NOT_AVAILABLE|rm|The replica is not available for the partition.
10|MESSAGE_TOO_LARGE||The request contains a message larger than the broker accepts.
11|STALE_CONTROLLER_EPOCH||The controller epoch is stale.
12|OFFSET_METADATA_TOO_LARGE||The metadata string of the committed offset is too long.
13|NETWORK_EXCEPTION|rm|The broker lost its connection while the request was in flight.
14|COORDINATOR_LOAD_IN_PROGRESS|r|The coordinator is still loading its state.
15|COORDINATOR_NOT_AVAILABLE|r|The coordinator is not available.
16|NOT_COORDINATOR|r|This broker is not the coordinator of the group or transaction.
17|INVALID_TOPIC_EXCEPTION||The topic name is invalid or the topic is internal.
18|RECORD_LIST_TOO_LARGE||The record batch is larger than the broker's segment size allows.
19|NOT_ENOUGH_REPLICAS|r|Fewer in-sync replicas than required.
20|NOT_ENOUGH_REPLICAS_AFTER_APPEND|r|The write was stored with fewer in-sync replicas than required.
21|INVALID_REQUIRED_ACKS||The acks value is invalid.
22|ILLEGAL_GENERATION||The group generation in the request is not the current one.
23|INCONSISTENT_GROUP_PROTOCOL||The member's protocol type or protocols do not match the group's.
24|INVALID_GROUP_ID||The group id is empty or invalid.
25|UNKNOWN_MEMBER_ID||The coordinator does not know this member id.
26|INVALID_SESSION_TIMEOUT||The session timeout is outside the broker's allowed range.
27|REBALANCE_IN_PROGRESS||The group is rebalancing; the member must rejoin.
28|INVALID_COMMIT_OFFSET_SIZE||The committed offset data is too large.
29|TOPIC_AUTHORIZATION_FAILED|a|Not authorized to access the topic.
30|GROUP_AUTHORIZATION_FAILED|a|Not authorized to access the group.
31|CLUSTER_AUTHORIZATION_FAILED|a|Not authorized for this cluster operation.
32|INVALID_TIMESTAMP||A record timestamp is outside the accepted range.
33|UNSUPPORTED_SASL_MECHANISM||The broker does not support the requested SASL mechanism.
34|ILLEGAL_SASL_STATE||The request is not valid in the current SASL state.
35|UNSUPPORTED_VERSION||The broker does not support this version of the API.
36|TOPIC_ALREADY_EXISTS||A topic with this name exists already.
37|INVALID_PARTITIONS||The number of partitions is invalid.
38|INVALID_REPLICATION_FACTOR||The replication factor is invalid.
39|INVALID_REPLICA_ASSIGNMENT||The replica assignment is invalid.
40|INVALID_CONFIG||The configuration is invalid.
41|NOT_CONTROLLER|r|This broker is not the controller.
42|INVALID_REQUEST||The broker found the request malformed or incompatible; its log has details.
43|UNSUPPORTED_FOR_MESSAGE_FORMAT||The broker's message format does not support the request.
44|POLICY_VIOLATION||The request violates a policy configured on the broker.
45|OUT_OF_ORDER_SEQUENCE_NUMBER||The broker received a producer sequence number out of order.
46|DUPLICATE_SEQUENCE_NUMBER||The broker received a duplicate producer sequence number.
47|INVALID_PRODUCER_EPOCH||The producer epoch is older than the current one.
48|INVALID_TXN_STATE||The transactional operation is not valid in the transaction's state.
49|INVALID_PRODUCER_ID_MAPPING||The producer id is not assigned to this transactional id.
50|INVALID_TRANSACTION_TIMEOUT||The transaction timeout exceeds the broker's maximum.
51|CONCURRENT_TRANSACTIONS|r|Another operation on the same transaction is still in progress.
52|TRANSACTION_COORDINATOR_FENCED||The transaction coordinator is no longer the current one.
53|TRANSACTIONAL_ID_AUTHORIZATION_FAILED|a|Not authorized for this transactional id.
54|SECURITY_DISABLED||Security features are disabled on the broker.
55|OPERATION_NOT_ATTEMPTED||The broker did not attempt this operation of a batched request.
56|KAFKA_STORAGE_ERROR|rm|The broker hit a disk error reading or writing the log.
57|LOG_DIR_NOT_FOUND||The log directory does not exist.
58|SASL_AUTHENTICATION_FAILED|s|SASL authentication failed.
59|UNKNOWN_PRODUCER_ID||The broker has no state for this producer id.
60|REASSIGNMENT_IN_PROGRESS||A partition reassignment is in progress.
61|DELEGATION_TOKEN_AUTH_DISABLED||Delegation token authentication is disabled.
62|DELEGATION_TOKEN_NOT_FOUND||The delegation token was not found.
63|DELEGATION_TOKEN_OWNER_MISMATCH||The principal does not own the delegation token.
64|DELEGATION_TOKEN_REQUEST_NOT_ALLOWED||Delegation token requests are not allowed on this channel.
65|DELEGATION_TOKEN_AUTHORIZATION_FAILED|a|Not authorized for the delegation token.
66|DELEGATION_TOKEN_EXPIRED||The delegation token has expired.
67|INVALID_PRINCIPAL_TYPE||The principal type is not supported.
68|NON_EMPTY_GROUP||The group still has members.
69|GROUP_ID_NOT_FOUND||The group does not exist.
70|FETCH_SESSION_ID_NOT_FOUND|r|The fetch session is unknown to the broker.
71|INVALID_FETCH_SESSION_EPOCH|r|The fetch session epoch is not the one the broker expects.
72|LISTENER_NOT_FOUND|rm|The leader has no endpoint for the listener this request came through.
73|TOPIC_DELETION_DISABLED||Topic deletion is disabled.
74|FENCED_LEADER_EPOCH|rm|The leader epoch in the request is older than the broker's.
75|UNKNOWN_LEADER_EPOCH|r|The leader epoch in the request is newer than the broker's.
76|UNSUPPORTED_COMPRESSION_TYPE||The consumer does not support the compression type of the records.
77|STALE_BROKER_EPOCH||The broker epoch is stale.
78|OFFSET_NOT_AVAILABLE|r|The leader's high watermark is not yet known for this offset.
79|MEMBER_ID_REQUIRED||The member must rejoin with the member id the coordinator gave it.
80|PREFERRED_LEADER_NOT_AVAILABLE|rm|The preferred leader is not available.
81|GROUP_MAX_SIZE_REACHED||The group has reached its maximum size.
82|FENCED_INSTANCE_ID||Another member with the same group.instance.id has fenced this one.
83|ELIGIBLE_LEADERS_NOT_AVAILABLE|rm|No eligible leader is available for the election.
84|ELECTION_NOT_NEEDED||The leader election is not needed.
85|NO_REASSIGNMENT_IN_PROGRESS||There is no partition reassignment in progress.
86|GROUP_SUBSCRIBED_TO_TOPIC||The group still subscribes to the topic.
87|INVALID_RECORD||The broker rejected a record as invalid.
88|UNSTABLE_OFFSET_COMMIT|r|Pending transactional offset commits exist; the offset is not stable yet.
89|THROTTLING_QUOTA_EXCEEDED|r|The throttling quota was exceeded.
90|PRODUCER_FENCED||A newer producer with the same transactional id has fenced this one.
91|RESOURCE_NOT_FOUND||The resource does not exist.
92|DUPLICATE_RESOURCE||The resource is named more than once in the request.
93|UNACCEPTABLE_CREDENTIAL||The credential does not meet the broker's requirements.
94|INCONSISTENT_VOTER_SET||The voter set does not match the leader's.
95|INVALID_UPDATE_VERSION||The update version is invalid.
96|FEATURE_UPDATE_FAILED||The feature update failed.
97|PRINCIPAL_DESERIALIZATION_FAILURE||The forwarded principal could not be deserialized.
98|SNAPSHOT_NOT_FOUND||The snapshot was not found.
99|POSITION_OUT_OF_RANGE||The requested position is outside the snapshot.
100|UNKNOWN_TOPIC_ID|rm|The broker does not know this topic id.
101|DUPLICATE_BROKER_REGISTRATION||This broker id is registered already.
102|BROKER_ID_NOT_REGISTERED||This broker id is not registered.
103|INCONSISTENT_TOPIC_ID|rm|The topic id does not match the one the broker has.
104|INCONSISTENT_CLUSTER_ID||The cluster id does not match.
105|TRANSACTIONAL_ID_NOT_FOUND||The transactional id was not found.
106|FETCH_SESSION_TOPIC_ID_ERROR|r|The fetch session saw a topic id change or a mix of topic ids and names.
107|INELIGIBLE_REPLICA||The replica is not eligible for leadership.
108|NEW_LEADER_ELECTED||A new leader was elected while the request waited.
109|OFFSET_MOVED_TO_TIERED_STORAGE||The offset was moved to tiered storage.
110|FENCED_MEMBER_EPOCH||The member epoch is fenced; the member must rejoin with epoch 0.
111|UNRELEASED_INSTANCE_ID||The instance id is still used by another member.
112|UNSUPPORTED_ASSIGNOR||The broker does not support the requested assignor.
113|STALE_MEMBER_EPOCH||The member epoch is stale.
114|MISMATCHED_ENDPOINT_TYPE||The request was sent to an endpoint of the wrong type.
115|UNSUPPORTED_ENDPOINT_TYPE||This endpoint type does not support the request.
116|UNKNOWN_CONTROLLER_ID||The controller id is unknown.
117|UNKNOWN_SUBSCRIPTION_ID||The client telemetry subscription id is unknown.
118|TELEMETRY_TOO_LARGE||The client telemetry payload is too large.
119|INVALID_REGISTRATION||The controller rejected the broker registration.
120|TRANSACTION_ABORTABLE||The transaction hit an error and can be aborted to go on.
121|INVALID_RECORD_STATE||The record state is invalid for the acknowledgement.
122|SHARE_SESSION_NOT_FOUND|r|The share session is unknown.
123|INVALID_SHARE_SESSION_EPOCH|r|The share session epoch is invalid.
124|FENCED_STATE_EPOCH||The share-group state epoch does not match.
125|INVALID_VOTER_KEY||The voter key does not match the replica's.
126|DUPLICATE_VOTER||The voter is already in the voter set.
127|VOTER_NOT_FOUND||The voter is not in the voter set.
128|INVALID_REGULAR_EXPRESSION||The regular expression is invalid.
129|REBOOTSTRAP_REQUIRED||The client's metadata is stale; it must bootstrap again.
130|STREAMS_INVALID_TOPOLOGY||The streams topology is invalid.
131|STREAMS_INVALID_TOPOLOGY_EPOCH||The streams topology epoch is invalid.
132|STREAMS_TOPOLOGY_FENCED||The streams topology epoch is outdated.
133|SHARE_SESSION_LIMIT_REACHED||The broker has reached its limit of share sessions.
"""

# Class names that differ from the plain CamelCase of the constant (no "ErrorError", no
# "Exception" suffix), kept close to Java's names.
RENAMES = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerError",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicError",
    "NETWORK_EXCEPTION": "NetworkError",
    "KAFKA_STORAGE_ERROR": "KafkaStorageError",
    "SASL_AUTHENTICATION_FAILED": "SaslAuthenticationFailedError",
    "FETCH_SESSION_TOPIC_ID_ERROR": "FetchSessionTopicIdError",
}

# Extra typed attributes of some classes (Java: TopicAuthorizationException.unauthorizedTopics,
# GroupAuthorizationException.groupId). Each is a keyword-only constructor argument.
EXTRA_INIT = {
    "TOPIC_AUTHORIZATION_FAILED": '''
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
''',
}

HEADER = '''"""One exception class per error code of the Kafka protocol (generated; do not edit).

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
'''


def rows() -> list[tuple[int, str, str, str]]:
    """The table as (code, constant, flags, description) rows."""
    out = []
    for line in TABLE.strip().splitlines():
        code, name, flags, desc = line.split("|", 3)
        out.append((int(code), name, flags, desc))
    return out


def class_name(const: str) -> str:
    """The exception class name of an error constant."""
    return RENAMES.get(const) or "".join(p.capitalize() for p in const.split("_")) + "Error"


def render() -> str:
    """The full text of kafkaconsumer/_error_codes.py."""
    out = [HEADER, "__all__ = ["]
    out += [f'    "{class_name(const)}",' for _, const, _, _ in rows()]
    out.append("]")
    for code, const, flags, desc in rows():
        bases = ["BrokerResponseError"]
        if "a" in flags:
            bases.insert(0, "AuthorizationError")
        if "s" in flags:
            bases.insert(0, "SaslAuthenticationError")
        out.append(f"\n\nclass {class_name(const)}({', '.join(bases)}):")
        out.append(f'    """{desc}"""\n')
        out.append(f"    errno = {code}")
        out.append(f'    name = "{const}"')
        out.append(f'    description = "{desc}"')
        if "r" in flags:
            out.append("    retriable = True")
        if "m" in flags:
            out.append("    invalid_metadata = True")
        if const in EXTRA_INIT:
            out.append(EXTRA_INIT[const].rstrip("\n"))
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """Write the module, or with ``--check`` report whether it is up to date."""
    text = render()
    if "--check" in argv:
        if OUTPUT.read_text(encoding="utf-8") != text:
            sys.stderr.write(f"{OUTPUT} is out of date: run python tools/gen_errors.py\n")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
