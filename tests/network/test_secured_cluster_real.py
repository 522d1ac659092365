"""SASL and TLS across the 3-broker Apache Kafka cluster (``kafka_cluster``, secured listeners on
every broker): a client bootstrapped from ONE broker's secured listener reads a topic whose
partitions lead on three different brokers. The metadata a listener answers names the other
brokers' listeners of the same name, so every record of a partition led elsewhere proves a
connection to that broker through the secured listener (fetches go to the leader: no
``client.rack`` here)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness.apache_kafka import KafkaCluster, Security
from tests.helpers import unique_name
from tests.network.secured_clients import (
    client_cert,
    consume_committed,
    produce,
    sasl_config,
    ssl_config,
)

pytestmark = [pytest.mark.integration]

_PER_PARTITION = 4


def _spread_topic(cluster: KafkaCluster) -> str:
    """A topic whose partitions 0, 1, 2 lead on brokers 1, 2, 3, filled with records."""
    topic = unique_name("secured-spread")
    cluster.create_topic(topic, assignment=[[1, 2], [2, 3], [3, 1]])
    assert [cluster.leader_of(topic, p) for p in range(3)] == [1, 2, 3]
    assert cluster.security is not None
    produce(cluster.security, topic, 3 * _PER_PARTITION, partitions=3)
    return topic


def _first_broker_only(cfg: dict[str, Any]) -> dict[str, Any]:
    return {**cfg, "bootstrap.servers": cfg["bootstrap.servers"].split(",")[0]}


def _check(cfg: dict[str, Any], topic: str) -> None:
    got = consume_committed(_first_broker_only(cfg), topic, 3 * _PER_PARTITION, partitions=3)
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(3 * _PER_PARTITION))


@pytest.fixture
def security(kafka_cluster: KafkaCluster) -> Security:
    assert kafka_cluster.security is not None
    return kafka_cluster.security


def test_sasl_scram_client_reads_partitions_led_by_every_broker(
    kafka_cluster: KafkaCluster, security: Security
) -> None:
    topic = _spread_topic(kafka_cluster)
    _check(sasl_config(security, "SCRAM-SHA-256"), topic)


def test_mutual_tls_client_reads_partitions_led_by_every_broker(
    kafka_cluster: KafkaCluster, security: Security
) -> None:
    topic = _spread_topic(kafka_cluster)
    _check(ssl_config(security.mtls_bootstrap, security.pki.ca, **client_cert(security)), topic)


def test_sasl_ssl_client_reads_partitions_led_by_every_broker(
    kafka_cluster: KafkaCluster, security: Security
) -> None:
    topic = _spread_topic(kafka_cluster)
    _check(sasl_config(security, "PLAIN", over_tls=True), topic)
