"""SASL against Apache Kafka (the ``secure_kafka`` fixture's SASL_PLAINTEXT listener): PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (the broker's unsecured-JWT validator), each with
the right credentials (a consumer reads what was produced, through the group coordinator too) and
wrong ones (an authentication error naming the mechanism, never the secret, and no hang).
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.errors import SaslAuthenticationError
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name
from tests.support.apache_kafka import Security

pytestmark = [pytest.mark.integration]

_WRONG = "definitely-not-the-password"


def _produce(security: Security, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": security.plaintext_bootstrap})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0


def _sasl(security: Security, mechanism: str, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "bootstrap.servers": security.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "request.timeout.ms": 5000,
        "default.api.timeout.ms": 10000,
    }
    if mechanism in security.users:
        user, password = security.users[mechanism]
        cfg.update({"sasl.username": user, "sasl.password": password})
    cfg.update(extra)
    return cfg


def _read_all(cfg: dict[str, Any], topic: str, count: int) -> list[bytes]:
    """Join a group, read ``count`` records, commit them, and check the committed offset."""
    group = unique_name("g-sasl")
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
            for rec in consumer.poll(timeout_ms=200):
                got.append(rec.value)
            if len(got) >= count:
                break
        consumer.commit_sync()
        tp = TopicPartition(topic, 0)
        committed = consumer.committed({tp})[tp]
        assert committed is not None and committed.offset == count
    return got


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_password_mechanisms_consume(secure_kafka: Security, mechanism: str) -> None:
    topic = unique_name("sasl")
    _produce(secure_kafka, topic, 5)
    assert _read_all(_sasl(secure_kafka, mechanism), topic, 5) == [
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
    cfg = _sasl(secure_kafka, mechanism, **{"sasl.password": _WRONG})
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert mechanism in str(info.value)
    assert _WRONG not in str(info.value)


def test_sasl_unknown_user_fails(secure_kafka: Security) -> None:
    cfg = _sasl(secure_kafka, "SCRAM-SHA-256", **{"sasl.username": "nobody"})
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError):
            consumer.list_topics(timeout_ms=10000)


def test_sasl_scram_user_of_the_other_hash_fails(secure_kafka: Security) -> None:
    # The SCRAM-SHA-512 user has no SHA-256 credential.
    user, password = secure_kafka.users["SCRAM-SHA-512"]
    cfg = _sasl(secure_kafka, "SCRAM-SHA-256", **{"sasl.username": user, "sasl.password": password})
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError):
            consumer.list_topics(timeout_ms=10000)


def test_sasl_oauthbearer_unsecured_jwt_consumes(secure_kafka: Security) -> None:
    topic = unique_name("oauth")
    _produce(secure_kafka, topic, 3)
    calls: list[int] = []

    def token() -> str:
        calls.append(1)
        return secure_kafka.unsecured_jwt(sub="alice", lifetime_s=3600)

    cfg = _sasl(secure_kafka, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": token})
    assert _read_all(cfg, topic, 3) == [b"v0", b"v1", b"v2"]
    assert calls


def test_sasl_oauthbearer_token_the_broker_rejects(secure_kafka: Security) -> None:
    # Well formed and unexpired for the client, but without the "sub" claim the broker's
    # validator requires.
    token = secure_kafka.unsecured_jwt(sub=None)
    cfg = _sasl(secure_kafka, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": lambda: token})
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    assert "OAUTHBEARER" in str(info.value)


def test_sasl_client_on_a_plaintext_listener_is_told_at_once(secure_kafka: Security) -> None:
    # The PLAINTEXT listener answers SaslHandshake with no enabled mechanism: an authentication
    # error that says so, not a hang until the timeout.
    cfg = _sasl(secure_kafka, "PLAIN", **{"bootstrap.servers": secure_kafka.plaintext_bootstrap})
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError, match="does not accept SASL mechanism PLAIN"):
            consumer.list_topics(timeout_ms=10000)
