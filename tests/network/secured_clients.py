"""What the SASL and TLS tests against Apache Kafka share: client settings for each secured
listener of a :class:`benchmarks.harness.apache_kafka.Security`, a producer on the PLAINTEXT
listener (confluent-kafka, not the client under test), and a group member that reads and
commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness.apache_kafka import Security
from kafkaconsumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name

#: Short timeouts: a failure must end quickly, never hang.
_TIMEOUTS = {"request.timeout.ms": 5000, "default.api.timeout.ms": 10000}


def produce(security: Security, topic: str, count: int, partitions: int = 1) -> None:
    """Write ``v0``..``v<count-1>`` to ``topic``, record ``i`` to partition ``i % partitions``."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": security.plaintext_bootstrap})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def sasl_config(
    security: Security, mechanism: str, *, over_tls: bool = False, **extra: Any
) -> dict[str, Any]:
    """Settings for the SASL_PLAINTEXT listener (SASL_SSL with ``over_tls``) with the user of
    ``mechanism`` (none for OAUTHBEARER); ``extra`` overrides."""
    cfg: dict[str, Any] = {
        "bootstrap.servers": security.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        **_TIMEOUTS,
    }
    if over_tls:
        cfg.update(ssl_config(security.sasl_ssl_bootstrap, security.pki.ca))
        cfg["security.protocol"] = "SASL_SSL"
    if mechanism in security.users:
        user, password = security.users[mechanism]
        cfg.update({"sasl.username": user, "sasl.password": password})
    cfg.update(extra)
    return cfg


def ssl_config(bootstrap: str, ca: str, **extra: Any) -> dict[str, Any]:
    """Settings for an SSL listener at ``bootstrap`` trusting the PEM CA file ``ca``."""
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca,
        **_TIMEOUTS,
    }
    cfg.update(extra)
    return cfg


def client_cert(security: Security) -> dict[str, Any]:
    """The client certificate settings for mutual TLS (PEM, encrypted key)."""
    pki = security.pki
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": Path(pki.client_cert).read_text(),
        "ssl.keystore.key": Path(pki.client_key).read_text(),
        "ssl.key.password": pki.client_key_password,
    }


def consume_committed(
    cfg: dict[str, Any], topic: str, count: int, partitions: int = 1
) -> list[bytes]:
    """Join a new group on ``topic``, read ``count`` records, commit them and check that the
    committed offsets add up to ``count``; return the values in the order received."""
    got: list[bytes] = []
    with KafkaConsumer(
        {
            **cfg,
            "group.id": unique_name("g-secured"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    ) as consumer:
        consumer.subscribe([topic])
        for _ in range(300):
            got += [rec.value for rec in consumer.poll(timeout_ms=200)]
            if len(got) >= count:
                break
        consumer.commit_sync()
        tps = {TopicPartition(topic, p) for p in range(partitions)}
        committed = consumer.committed(tps)
        offsets = [c.offset if (c := committed[tp]) is not None else 0 for tp in tps]
        assert sum(offsets) == count, committed
    return got
