"""TLS against Apache Kafka's own SSL listeners (the ``secure_kafka`` fixture; certificates from
a CA the fixture generates): server verification with host-name check, a host-name mismatch, a
wrong CA, mutual TLS (with and without a client certificate), and the TLS version ssl.protocol
allows. Failures end in
:class:`SslAuthenticationError` within the timeout, never a hang.
"""

from __future__ import annotations

import ssl

import pytest

from benchmarks.harness.apache_kafka import Security
from kafkaconsumer import KafkaConsumer
from kafkaconsumer.errors import SslAuthenticationError
from tests.helpers import unique_name
from tests.network.secured_clients import client_cert, consume_committed, produce, ssl_config

pytestmark = [pytest.mark.integration]


def test_tls_server_verified_with_host_name(secure_kafka: Security) -> None:
    topic = unique_name("tls")
    produce(secure_kafka, topic, 4)
    cfg = ssl_config(secure_kafka.ssl_bootstrap, secure_kafka.pki.ca)
    assert cfg.get("ssl.endpoint.identification.algorithm") is None  # the default: https
    assert consume_committed(cfg, topic, 4) == [b"v0", b"v1", b"v2", b"v3"]


def test_tls_host_name_mismatch(secure_kafka: Security) -> None:
    cfg = ssl_config(secure_kafka.wronghost_bootstrap, secure_kafka.pki.ca)
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "127.0.0.1" in str(info.value)


def test_tls_host_name_check_disabled_accepts_the_mismatch(secure_kafka: Security) -> None:
    # Java's escape hatch: an empty ssl.endpoint.identification.algorithm skips the name check
    # (the chain is still verified).
    cfg = ssl_config(
        secure_kafka.wronghost_bootstrap,
        secure_kafka.pki.ca,
        **{"ssl.endpoint.identification.algorithm": ""},
    )
    with KafkaConsumer(cfg) as consumer:
        assert isinstance(consumer.list_topics(timeout_ms=10000), dict)


def test_tls_wrong_ca(secure_kafka: Security) -> None:
    cfg = ssl_config(secure_kafka.ssl_bootstrap, secure_kafka.pki.other_ca)
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "certificate verify" in str(info.value) or "certificate verification" in str(info.value)


def test_mutual_tls_with_client_certificate(secure_kafka: Security) -> None:
    topic = unique_name("mtls")
    produce(secure_kafka, topic, 2)
    cfg = ssl_config(secure_kafka.mtls_bootstrap, secure_kafka.pki.ca, **client_cert(secure_kafka))
    assert consume_committed(cfg, topic, 2) == [b"v0", b"v1"]


def test_mutual_tls_without_client_certificate_is_refused(secure_kafka: Security) -> None:
    cfg = ssl_config(secure_kafka.mtls_bootstrap, secure_kafka.pki.ca)
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SslAuthenticationError):
            consumer.list_topics(timeout_ms=10000)


def _negotiated_versions(consumer: KafkaConsumer) -> set[str | None]:
    return {
        conn.sock.version()
        for conn in consumer._net._conns.values()
        if isinstance(conn.sock, ssl.SSLSocket)
    }


@pytest.mark.parametrize(("protocol", "negotiated"), [(None, "TLSv1.3"), ("TLSv1.2", "TLSv1.2")])
def test_ssl_protocol_bounds_the_negotiated_version(
    secure_kafka: Security, protocol: str | None, negotiated: str
) -> None:
    # The broker takes TLSv1.2 and TLSv1.3, and so does the client's default
    # ssl.enabled.protocols: ssl.protocol=TLSv1.2 keeps the connection off TLSv1.3, as Java's
    # SSLContext of that protocol does.
    extra = {} if protocol is None else {"ssl.protocol": protocol}
    cfg = ssl_config(secure_kafka.ssl_bootstrap, secure_kafka.pki.ca, **extra)
    with KafkaConsumer(cfg) as consumer:
        assert isinstance(consumer.list_topics(timeout_ms=10000), dict)
        assert _negotiated_versions(consumer) == {negotiated}
