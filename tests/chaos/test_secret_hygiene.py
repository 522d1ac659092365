"""Security hygiene: secrets never show in config reprs, logs or errors; TLS checks host names
by default.

This module's name puts it in the security suite that ``tests/support/secret_scan.py`` watches:
besides the explicit checks below, every log record (at DEBUG) and every KafkaError message
built while these tests run is scanned for the secrets they pass in.
"""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.config import AdminClientConfig, ConsumerConfig, ProducerConfig
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import ConfigError, KafkaError, KafkaTimeoutError
from kafkaconsumer.network.ssl_context import build_ssl_context
from kafkaconsumer.protocol import ApiKey
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

JAAS_SECRET = "jaas-s3cret-Xq9w"
PASSWORD = "sasl-pa55word-Zk1"
KEY_PASSWORD = "key-pa55-Lm3"
TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.oauth-token-Rt7"
SECRETS = (JAAS_SECRET, PASSWORD, KEY_PASSWORD, TOKEN)

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="alice" password="{JAAS_SECRET}";'
)


def assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"secret in {text[:80]!r}..."


@pytest.mark.parametrize("cls", [ConsumerConfig, ProducerConfig, AdminClientConfig])
def test_config_reprs_hide_every_secret(cls: Any) -> None:
    cfg = cls(
        {
            "bootstrap.servers": "127.0.0.1:1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": JAAS,
            "sasl.username": "alice",
            "sasl.password": PASSWORD,
            "ssl.key.password": KEY_PASSWORD,
        }
    )
    assert_clean(repr(cfg), str(cfg), repr(dict(cfg)), str(list(cfg.values())))
    # The secret is still there for the network layer, and survives pickling (Spark).
    again = pickle.loads(pickle.dumps(cfg))
    assert again["sasl.password"].value == PASSWORD
    # The store passwords (PEM stores have none) are refused without echoing the value.
    for key in ("ssl.keystore.password", "ssl.truststore.password"):
        with pytest.raises(ConfigError) as info:
            cls({"bootstrap.servers": "127.0.0.1:1", key: KEY_PASSWORD})
        assert key in str(info.value)
        assert_clean(str(info.value), repr(info.value))


def test_conflicting_secret_values_are_not_echoed() -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig({"sasl.password": PASSWORD}, sasl_password=PASSWORD + "-other")
    assert "sasl.password" in str(info.value)
    assert_clean(str(info.value), repr(info.value))


@pytest.mark.parametrize(
    "bad",
    [
        f'PlainLoginModule required password="{JAAS_SECRET}"',  # no ';'
        f'PlainLoginModule required password={JAAS_SECRET} "x;',  # unbalanced quote
        f'PlainLoginModule required password="{JAAS_SECRET}"; Other required;',
        f'PlainLoginModule maybe password="{JAAS_SECRET}";',
    ],
)
def test_malformed_jaas_errors_hide_the_value(bad: str) -> None:
    with pytest.raises(KafkaError) as info:
        KafkaConsumer(
            bootstrap_servers="127.0.0.1:1",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_jaas_config=bad,
        ).close()
    assert_clean(str(info.value), repr(info.value))


def test_wrong_key_password_error_hides_it(tmp_path: Any) -> None:
    from benchmarks.harness.tls_proxy import make_pki

    pki = make_pki(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        build_ssl_context(
            {
                "ssl.truststore.location": pki.ca,
                "ssl.keystore.location": pki.client_cert,
                "ssl.key.location": pki.client_key,
                "ssl.key.password": KEY_PASSWORD,
            }
        )
    assert_clean(str(info.value), repr(info.value))


def test_hostname_verification_is_on_by_default(tmp_path: Any) -> None:
    from benchmarks.harness.tls_proxy import make_pki

    pki = make_pki(str(tmp_path))
    cfg = ConsumerConfig({"security.protocol": "SSL", "ssl.truststore.location": pki.ca})
    assert cfg["ssl.endpoint.identification.algorithm"] == "https"
    ctx = build_ssl_context(cfg)
    assert ctx.check_hostname


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_failed_sasl_exchange_logs_and_errors_hide_the_password(
    mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkaconsumer")
    with FakeCluster(sasl_mechanisms=[mechanism]) as cluster:
        cluster.on(
            ApiKey.SASL_AUTHENTICATE,
            lambda node, header, body: Reply(
                {"error_code": 58, "error_message": "Authentication failed: invalid credentials"}
            ),
        )
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_username="alice",
            sasl_password=PASSWORD,
            reconnect_backoff_ms=20,
            request_timeout_ms=2000,
        )
        try:
            with pytest.raises(KafkaError) as info:
                consumer.list_topics(timeout_ms=3000)
            sent = cluster.requests(ApiKey.SASL_AUTHENTICATE)
        finally:
            consumer.close()
    assert sent, "the client never tried to authenticate"
    assert "invalid credentials" in str(info.value) or "authentication" in str(info.value).lower()
    assert_clean(
        str(info.value), repr(info.value), caplog.text, repr(consumer), repr(consumer.config)
    )


def test_oauth_token_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkaconsumer")
    with FakeCluster(sasl_mechanisms=["OAUTHBEARER"]) as cluster:
        cluster.on(
            ApiKey.SASL_AUTHENTICATE,
            lambda node, header, body: Reply(
                {"error_code": 0, "auth_bytes": b'{"status":"invalid_token"}'}
            ),
        )
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_token_provider=lambda: (TOKEN, None),
            reconnect_backoff_ms=20,
            request_timeout_ms=2000,
        )
        try:
            with pytest.raises(KafkaError) as info:
                consumer.list_topics(timeout_ms=3000)
            sent = cluster.requests(ApiKey.SASL_AUTHENTICATE)
        finally:
            consumer.close()
    # The token did go to the broker (that is its purpose), and nowhere else.
    assert any(TOKEN.encode() in bytes(body["auth_bytes"]) for _h, body in sent)
    assert_clean(str(info.value), repr(info.value), caplog.text)


def test_admin_and_timeouts_hide_secrets() -> None:
    admin = KafkaAdminClient(
        bootstrap_servers="127.0.0.1:9",
        sasl_password=PASSWORD,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        request_timeout_ms=500,
        reconnect_backoff_ms=20,
    )
    try:
        with pytest.raises(KafkaTimeoutError) as info:
            admin.list_topics(timeout_ms=800)
        assert_clean(str(info.value), repr(admin))
    finally:
        admin.close()
