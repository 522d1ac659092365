"""SASL against Apache Kafka (the ``secure_kafka`` fixture's SASL_PLAINTEXT and SASL_SSL
listeners): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (the broker's unsecured-JWT
validator), each with the right credentials (a consumer reads what was produced, through the
group coordinator too) and wrong ones (an authentication error naming the mechanism, never the
secret, and no hang); every mechanism again over TLS.
"""

from __future__ import annotations

import pytest

from benchmarks.harness.apache_kafka import Security
from kafkaconsumer import KafkaConsumer
from kafkaconsumer.errors import SaslAuthenticationError
from tests.helpers import unique_name
from tests.network.secured_clients import consume_committed, produce, sasl_config

pytestmark = [pytest.mark.integration]

_WRONG = "definitely-not-the-password"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_password_mechanisms_consume(secure_kafka: Security, mechanism: str) -> None:
    topic = unique_name("sasl")
    produce(secure_kafka, topic, 5)
    assert consume_committed(sasl_config(secure_kafka, mechanism), topic, 5) == [
        b"v0",
        b"v1",
        b"v2",
        b"v3",
        b"v4",
    ]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_wrong_password_fails_with_the_mechanism_named(
    secure_kafka: Security, mechanism: str
) -> None:
    cfg = {**sasl_config(secure_kafka, mechanism), "sasl.password": _WRONG}
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert mechanism in str(info.value)
    assert _WRONG not in str(info.value)


def test_sasl_unknown_user_fails(secure_kafka: Security) -> None:
    cfg = {**sasl_config(secure_kafka, "SCRAM-SHA-256"), "sasl.username": "nobody"}
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError):
            consumer.list_topics(timeout_ms=10000)


def test_sasl_scram_user_of_the_other_hash_fails(secure_kafka: Security) -> None:
    # The SCRAM-SHA-512 user has no SHA-256 credential.
    user, password = secure_kafka.users["SCRAM-SHA-512"]
    cfg = {
        **sasl_config(secure_kafka, "SCRAM-SHA-256"),
        "sasl.username": user,
        "sasl.password": password,
    }
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError):
            consumer.list_topics(timeout_ms=10000)


def test_sasl_oauthbearer_unsecured_jwt_consumes(secure_kafka: Security) -> None:
    topic = unique_name("oauth")
    produce(secure_kafka, topic, 3)
    calls: list[int] = []

    def token() -> str:
        calls.append(1)
        return secure_kafka.unsecured_jwt(sub="alice", lifetime_s=3600)

    cfg = {**sasl_config(secure_kafka, "OAUTHBEARER"), "sasl.oauthbearer.token.provider": token}
    assert consume_committed(cfg, topic, 3) == [b"v0", b"v1", b"v2"]
    assert calls


def test_sasl_oauthbearer_token_the_broker_rejects(secure_kafka: Security) -> None:
    # Well formed and unexpired for the client, but without the "sub" claim the broker's
    # validator requires.
    token = secure_kafka.unsecured_jwt(sub=None)
    cfg = {
        **sasl_config(secure_kafka, "OAUTHBEARER"),
        "sasl.oauthbearer.token.provider": lambda: token,
    }
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "OAUTHBEARER" in str(info.value)


def test_sasl_client_on_a_plaintext_listener_is_told_at_once(secure_kafka: Security) -> None:
    # The PLAINTEXT listener answers SaslHandshake with no enabled mechanism: an authentication
    # error that says so, not a hang until the timeout.
    cfg = {
        **sasl_config(secure_kafka, "PLAIN"),
        "bootstrap.servers": secure_kafka.plaintext_bootstrap,
    }
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError, match="does not accept SASL mechanism PLAIN"):
            consumer.list_topics(timeout_ms=10000)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_sasl_ssl_each_mechanism_consumes_over_tls(secure_kafka: Security, mechanism: str) -> None:
    topic = unique_name("sasl-ssl")
    produce(secure_kafka, topic, 3)
    extra: dict[str, object] = {}
    if mechanism == "OAUTHBEARER":
        extra["sasl.oauthbearer.token.provider"] = lambda: secure_kafka.unsecured_jwt(sub="alice")
    cfg = sasl_config(secure_kafka, mechanism, over_tls=True, **extra)
    assert cfg["security.protocol"] == "SASL_SSL"
    assert consume_committed(cfg, topic, 3) == [b"v0", b"v1", b"v2"]


def test_sasl_ssl_wrong_password_fails_after_the_handshake(secure_kafka: Security) -> None:
    cfg = sasl_config(secure_kafka, "SCRAM-SHA-512", over_tls=True, **{"sasl.password": _WRONG})
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "SCRAM-SHA-512" in str(info.value)
    assert _WRONG not in str(info.value)
