"""OAUTHBEARER tokens fetched by the client from a real identity provider, as Java's
``OAuthBearerLoginCallbackHandler`` does: Keycloak (benchmarks/harness/keycloak.py) issues them with
the client_credentials grant, and an Apache Kafka listener validates them against Keycloak's
JWKS (``OAuthBearerValidatorCallbackHandler`` with the expected audience and issuer), so the
broker decides whether a token is good. A wrong secret, an endpoint nobody listens on and an
expired token fail with a clear error within the configured timeouts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import apache_kafka, keycloak
from benchmarks.harness.apache_kafka import KafkaCluster, Security
from kafkaconsumer import KafkaConsumer
from kafkaconsumer._child_process import free_port
from kafkaconsumer.errors import SaslAuthenticationError
from kafkaconsumer.network.oauth_token_retriever import ALLOWED_URLS_ENV
from tests.helpers import unique_name
from tests.network.secured_clients import consume_committed, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
_WRONG = "definitely-not-the-secret"


@pytest.fixture(scope="session")
def identity_provider() -> Iterator[keycloak.Keycloak]:
    """Keycloak with the test realm, started once per session."""
    if apache_kafka.missing_tools():
        pytest.skip(apache_kafka.missing_tools() or "")
    try:
        keycloak.java_home()
    except keycloak.KeycloakError as exc:
        pytest.skip(str(exc))
    server = keycloak.Keycloak().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def oauth_kafka(identity_provider: keycloak.Keycloak) -> Iterator[Security]:
    """An Apache Kafka broker whose SASL_PLAINTEXT OAUTHBEARER validates Keycloak's tokens."""
    idp = identity_provider
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    extra = {
        f"{prefix}sasl.server.callback.handler.class": _VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": idp.jwks_url,
        "sasl.oauthbearer.expected.audience": keycloak.AUDIENCE,
        "sasl.oauthbearer.expected.issuer": idp.issuer,
    }
    # Kafka 4 reads only the URLs this JVM property allows.
    allowed = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={idp.jwks_url}"
    with KafkaCluster(
        security=True,
        extra_config=extra,
        jvm_options=(*apache_kafka.TEST_JVM_OPTIONS, allowed),
    ) as cluster:
        assert cluster.security is not None
        yield cluster.security


@pytest.fixture
def allow_endpoint(monkeypatch: pytest.MonkeyPatch, identity_provider: keycloak.Keycloak) -> None:
    monkeypatch.setenv(ALLOWED_URLS_ENV, identity_provider.token_url)


def _config(security: Security, idp: keycloak.Keycloak, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "bootstrap.servers": security.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": _HANDLER,
        "sasl.oauthbearer.token.endpoint.url": idp.token_url,
        "sasl.oauthbearer.client.credentials.client.id": keycloak.CLIENT_ID,
        "sasl.oauthbearer.client.credentials.client.secret": keycloak.CLIENT_SECRET,
        "request.timeout.ms": 5000,
        "default.api.timeout.ms": 15000,
    }
    cfg.update(extra)
    return cfg


@pytest.mark.usefixtures("allow_endpoint")
def test_client_credentials_token_is_accepted_by_the_broker(
    oauth_kafka: Security, identity_provider: keycloak.Keycloak
) -> None:
    """A consumer with only the token endpoint and its client credentials reads and commits
    through a listener that validates the token's signature, audience and issuer."""
    topic = unique_name("oauth")
    produce(oauth_kafka, topic, 4)
    cfg = _config(oauth_kafka, identity_provider, **{"sasl.oauthbearer.scope": "profile"})
    assert consume_committed(cfg, topic, 4) == [b"v0", b"v1", b"v2", b"v3"]


@pytest.mark.usefixtures("allow_endpoint")
def test_credentials_from_jaas_options_and_urlencoded_header(
    oauth_kafka: Security, identity_provider: keycloak.Keycloak
) -> None:
    """The client id and secret may come from the JAAS options, as Java reads them, and the
    RFC 6749 URL-encoding of the Basic header is accepted by the provider."""
    topic = unique_name("oauth-jaas")
    produce(oauth_kafka, topic, 2)
    cfg = _config(oauth_kafka, identity_provider)
    del cfg["sasl.oauthbearer.client.credentials.client.id"]
    del cfg["sasl.oauthbearer.client.credentials.client.secret"]
    cfg["sasl.jaas.config"] = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        f'clientId="{keycloak.CLIENT_ID}" clientSecret="{keycloak.CLIENT_SECRET}";'
    )
    cfg["sasl.oauthbearer.header.urlencode"] = True
    assert consume_committed(cfg, topic, 2) == [b"v0", b"v1"]


@pytest.mark.usefixtures("allow_endpoint")
def test_wrong_secret_fails_with_the_providers_answer(
    oauth_kafka: Security, identity_provider: keycloak.Keycloak
) -> None:
    """A secret the provider refuses is not retried (HTTP 4xx) and is reported with the
    provider's error, never the secret itself."""
    cfg = _config(
        oauth_kafka,
        identity_provider,
        **{"sasl.oauthbearer.client.credentials.client.secret": _WRONG},
    )
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    text = str(info.value)
    assert "HTTP 401" in text and "unauthorized_client" in text
    assert _WRONG not in text


def test_unreachable_endpoint_is_retried_with_backoff_then_reported(
    oauth_kafka: Security,
    identity_provider: keycloak.Keycloak,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nobody listening at the endpoint: the request is retried with a growing backoff until
    sasl.login.retry.backoff.max.ms has passed, then the connection fails naming the endpoint
    and the number of attempts."""
    url = f"http://127.0.0.1:{free_port()}/token"
    monkeypatch.setenv(ALLOWED_URLS_ENV, url)
    cfg = _config(
        oauth_kafka,
        identity_provider,
        **{
            "sasl.oauthbearer.token.endpoint.url": url,
            "sasl.login.retry.backoff.ms": 50,
            "sasl.login.retry.backoff.max.ms": 1000,
            "sasl.login.connect.timeout.ms": 1000,
        },
    )
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.list_topics(timeout_ms=10000)
    text = str(info.value)
    assert url in text and "cannot connect" in text
    attempts = int(text.split(" attempt(s)")[0].rsplit(" ", 1)[1])
    assert attempts >= 3  # 50, 100, 200, 400 ms waits fit in the 1 s budget


def test_endpoint_not_allowed_is_refused_at_construction(
    oauth_kafka: Security, identity_provider: keycloak.Keycloak, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Java 4 refuses URLs missing from its allow-list, the client refuses an endpoint not
    listed in the environment variable, before any request."""
    monkeypatch.delenv(ALLOWED_URLS_ENV, raising=False)
    from kafkaconsumer.errors import ConfigError

    with pytest.raises(ConfigError, match=ALLOWED_URLS_ENV):
        KafkaConsumer(_config(oauth_kafka, identity_provider))


@pytest.mark.usefixtures("allow_endpoint")
def test_short_lived_tokens_are_refreshed_before_they_expire(
    oauth_kafka: Security,
    identity_provider: keycloak.Keycloak,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Tokens living 10 s are fetched again before they expire, and a consumer running past
    several lifetimes keeps authenticating new connections."""
    topic = unique_name("oauth-refresh")
    produce(oauth_kafka, topic, 3)
    cfg = _config(
        oauth_kafka,
        identity_provider,
        **{"sasl.oauthbearer.client.credentials.client.id": keycloak.SHORT_CLIENT_ID},
    )
    caplog.set_level(logging.DEBUG, logger="kafkaconsumer.network.sasl")
    with KafkaConsumer(cfg) as consumer:
        consumer.list_topics(timeout_ms=15000)
        time.sleep(2.5 * keycloak.SHORT_LIFESPAN_S)
        obtained = [r for r in caplog.records if "obtained OAUTHBEARER token" in r.getMessage()]
        assert len(obtained) >= 3
    # A new consumer joining after that reads what was produced with the latest token.
    assert consume_committed(cfg, topic, 3) == [b"v0", b"v1", b"v2"]


def test_expired_token_from_a_file_is_reported(
    oauth_kafka: Security,
    identity_provider: keycloak.Keycloak,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file: endpoint whose Keycloak token has expired: the client does not present it and
    says the token expired."""
    import json
    import urllib.parse
    import urllib.request

    body = urllib.parse.urlencode({"grant_type": "client_credentials"}).encode()
    request = urllib.request.Request(identity_provider.token_url, data=body)
    import base64

    basic = base64.b64encode(f"{keycloak.SHORT_CLIENT_ID}:{keycloak.CLIENT_SECRET}".encode())
    request.add_header("Authorization", "Basic " + basic.decode())
    with urllib.request.urlopen(request, timeout=30) as answer:
        token = json.load(answer)["access_token"]
    path = tmp_path / "token.jwt"
    path.write_text(token)
    monkeypatch.setenv(ALLOWED_URLS_ENV, path.as_uri())
    time.sleep(keycloak.SHORT_LIFESPAN_S + 1)
    cfg = _config(
        oauth_kafka, identity_provider, **{"sasl.oauthbearer.token.endpoint.url": path.as_uri()}
    )
    with KafkaConsumer(cfg) as consumer:
        with pytest.raises(SaslAuthenticationError, match="expired"):
            consumer.list_topics(timeout_ms=10000)
