"""The network layer reads secrets and keys from a ConsumerConfig as it is handed over."""

from __future__ import annotations

from kafkaconsumer.config import ConsumerConfig


def test_ssl_secrets_reach_the_tls_layer() -> None:
    from kafkaconsumer.network.sasl import secret_text as _secret_text

    config = ConsumerConfig(
        ssl_key_password="kp", ssl_keystore_key="KEY", ssl_keystore_certificate_chain="CHAIN"
    )
    # Password values expose reveal(), which the TLS layer uses; certificates are plain text.
    assert _secret_text(config["ssl.key.password"]) == "kp"
    assert _secret_text(config["ssl.keystore.key"]) == "KEY"
    assert config["ssl.keystore.certificate.chain"] == "CHAIN"


def test_sasl_credentials_reach_the_sasl_layer() -> None:
    from kafkaconsumer.network.sasl import credentials

    config = ConsumerConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="u",
        sasl_password="secret",
    )
    user, secret = credentials(dict(config))
    assert (user, secret.reveal()) == ("u", "secret")
    jaas = ConsumerConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_jaas_config="org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="ju" password="jp";',
    )
    user, secret = credentials(dict(jaas))
    assert (user, secret.reveal()) == ("ju", "jp")
