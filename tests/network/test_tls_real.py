"""TLS against Apache Kafka's own SSL listeners (the ``secure_kafka`` fixture; certificates from
a CA the fixture generates): server verification with host-name check, a host-name mismatch, a
wrong CA, and mutual TLS (with and without a client certificate). Failures end in
:class:`SslAuthenticationError` within the timeout, never a hang.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.errors import SslAuthenticationError
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name
from tests.support.apache_kafka import Security

pytestmark = [pytest.mark.integration]


def _produce(security: Security, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": security.plaintext_bootstrap})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0


def _ssl(bootstrap: str, ca: str, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca,
        "request.timeout.ms": 5000,
        "default.api.timeout.ms": 10000,
    }
    cfg.update(extra)
    return cfg


def _client_cert(security: Security) -> dict[str, Any]:
    pki = security.pki
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": Path(pki.client_cert).read_text(),
        "ssl.keystore.key": Path(pki.client_key).read_text(),
        "ssl.key.password": pki.client_key_password,
    }


def _consume(cfg: dict[str, Any], topic: str, count: int) -> list[bytes]:
    group = unique_name("g-tls")
    got: list[bytes] = []
    with KafkaConsumer(
        {
            **cfg,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    ) as consumer:
        consumer.subscribe([topic])
        for _ in range(200):
            got += [rec.value for rec in consumer.poll(timeout_ms=200)]
            if len(got) >= count:
                break
        consumer.commit_sync()
        tp = TopicPartition(topic, 0)
        committed = consumer.committed({tp})[tp]
        assert committed is not None and committed.offset == count
    return got


def test_tls_server_verified_with_host_name(secure_kafka: Security) -> None:
    topic = unique_name("tls")
    _produce(secure_kafka, topic, 4)
    cfg = _ssl(secure_kafka.ssl_bootstrap, secure_kafka.pki.ca)
    assert cfg.get("ssl.endpoint.identification.algorithm") is None  # the default: https
    assert _consume(cfg, topic, 4) == [b"v0", b"v1", b"v2", b"v3"]


def test_tls_host_name_mismatch(secure_kafka: Security) -> None:
    cfg = _ssl(secure_kafka.wronghost_bootstrap, secure_kafka.pki.ca)
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "127.0.0.1" in str(info.value)


def test_tls_host_name_check_disabled_accepts_the_mismatch(secure_kafka: Security) -> None:
    # Java's escape hatch: an empty ssl.endpoint.identification.algorithm skips the name check
    # (the chain is still verified).
    cfg = _ssl(
        secure_kafka.wronghost_bootstrap,
        secure_kafka.pki.ca,
        **{"ssl.endpoint.identification.algorithm": ""},
    )
    with KafkaConsumer(cfg) as consumer:
        assert isinstance(consumer.list_topics(timeout_ms=10000), dict)


def test_tls_wrong_ca(secure_kafka: Security) -> None:
    cfg = _ssl(secure_kafka.ssl_bootstrap, secure_kafka.pki.other_ca)
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "certificate verify" in str(info.value) or "certificate verification" in str(info.value)


def test_mutual_tls_with_client_certificate(secure_kafka: Security) -> None:
    topic = unique_name("mtls")
    _produce(secure_kafka, topic, 2)
    cfg = _ssl(secure_kafka.mtls_bootstrap, secure_kafka.pki.ca, **_client_cert(secure_kafka))
    assert _consume(cfg, topic, 2) == [b"v0", b"v1"]


def test_mutual_tls_without_client_certificate_is_refused(secure_kafka: Security) -> None:
    cfg = _ssl(secure_kafka.mtls_bootstrap, secure_kafka.pki.ca)
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SslAuthenticationError):
            consumer.list_topics(timeout_ms=10000)
