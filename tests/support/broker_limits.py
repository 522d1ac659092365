"""What the session's broker allows, read from the broker itself, so that the suite also runs on
a cluster of one's own (``KAFKA_BOOTSTRAP_SERVERS``) with Kafka's default settings.

The broker's own configuration comes from DescribeConfigs (our admin client) on a broker id
named by the cluster metadata (confluent-kafka, so the oracle is not only the client under test).
A broker that does not describe its configuration (the embedded Tansu broker) allows what the
suite's own brokers allow: no minimum.
"""

from __future__ import annotations

import functools
from typing import Any

from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.errors import KafkaError

#: Kafka's default ``group.min.session.timeout.ms``; also what a test that must run without a
#: short session timeout asks for.
KAFKA_DEFAULT_MIN_SESSION_MS = 6000


@functools.cache
def broker_config(bootstrap: str, key: str) -> str | None:
    """The value of broker setting ``key`` on one broker of the cluster at ``bootstrap``, or
    None when the broker does not say (no DescribeConfigs, or no such key)."""
    from confluent_kafka.admin import AdminClient

    brokers = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).brokers
    if not brokers:
        return None
    resource = ConfigResource("broker", str(min(brokers)))
    try:
        with KafkaAdminClient({"bootstrap.servers": bootstrap}) as admin:
            entries = admin.describe_configs([resource], keys=[key], timeout_ms=30_000)
    except KafkaError:
        return None
    entry = entries.get(resource, {}).get(key)
    return None if entry is None else entry.value


def min_session_timeout_ms(bootstrap: str) -> int:
    """The broker's ``group.min.session.timeout.ms`` (0 when it does not say)."""
    value = broker_config(bootstrap, "group.min.session.timeout.ms")
    return int(value) if value is not None else 0


def session_timeout_ms(bootstrap: str, wanted: Any) -> int:
    """``wanted``, raised to the broker's minimum: for a test that does not depend on a short
    session, only on one the broker accepts."""
    return max(int(wanted), min_session_timeout_ms(bootstrap))


def auto_creates_topics(bootstrap: str) -> bool:
    """Whether the broker creates a topic on a metadata request for it
    (``auto.create.topics.enable``, true by Kafka's default)."""
    value = broker_config(bootstrap, "auto.create.topics.enable")
    return value is None or value.lower() == "true"
