"""KafkaShareConsumer against Apache Kafka 3.9.2, which has no share groups: the first poll
fails with UnsupportedVersionError saying what the broker lacks and which versions have it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from benchmarks.harness import apache_kafka
from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.errors import UnsupportedVersionError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def kafka_3_9() -> Iterator[apache_kafka.KafkaCluster]:
    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")
    with apache_kafka.KafkaCluster(version=apache_kafka.KAFKA_3_VERSION) as cluster:
        yield cluster


def test_a_share_consumer_on_kafka_3_9_names_what_the_broker_lacks(
    kafka_3_9: apache_kafka.KafkaCluster,
) -> None:
    with KafkaShareConsumer(
        {"bootstrap.servers": kafka_3_9.bootstrap_servers, "group.id": "share-on-3-9"}
    ) as consumer:
        consumer.subscribe(["share-on-3-9"])
        with pytest.raises(UnsupportedVersionError) as caught:
            for _ in range(400):
                consumer.poll(timeout_ms=50)
    message = str(caught.value)
    assert "ShareGroupHeartbeat (API 76)" in message
    assert "Apache Kafka 4.1 or later" in message
    assert "Apache Kafka 4.0 or older (such as 3.9)" in message
