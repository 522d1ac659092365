"""The OAuth token retriever on its own: the requests it sends for the client_credentials and
jwt-bearer grants (as Java's request formatters build them), the signed assertion's claims, the
retry policy (5xx and no connection retried with a doubling backoff within
sasl.login.retry.backoff.max.ms, 4xx not), the checks on the token received, the allow-lists,
and the configuration rules. A small HTTP server in the test plays the token endpoint; the
end-to-end tests against Keycloak and Apache Kafka are in test_oauth_keycloak.py.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.errors import ConfigError, SaslAuthenticationError
from kafkaconsumer.network.oauth_token_retriever import (
    ALLOWED_FILES_ENV,
    ALLOWED_URLS_ENV,
    FileTokenRetriever,
    HttpAccessTokenRetriever,
    create_token_retriever,
    parse_access_token,
)

jwt = pytest.importorskip("jwt")

_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
_JWT_BEARER = "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever"


def _token(sub: str | None = "svc", lifetime_s: int = 300, **claims: Any) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    body: dict[str, Any] = {"exp": int(time.time()) + lifetime_s, **claims}
    if sub is not None:
        body["sub"] = sub
    return f"{part({'alg': 'RS256'})}.{part(body)}.c2ln"


class _Endpoint:
    """A token endpoint that records requests and answers from a script of (status, body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, str]]] = []
        self.script: list[tuple[int, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                endpoint.requests.append((dict(self.headers.items()), form))
                status, body = (
                    endpoint.script.pop(0)
                    if endpoint.script
                    else (200, json.dumps({"access_token": _token()}))
                )
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/realms/r/token"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Endpoint]:
    server = _Endpoint()
    monkeypatch.setenv(ALLOWED_URLS_ENV, f"https://other.invalid/x, {server.url}")
    yield server
    server.close()


def _cfg(url: str, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "sasl.login.callback.handler.class": _HANDLER,
        "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.oauthbearer.client.credentials.client.id": "my client",
        "sasl.oauthbearer.client.credentials.client.secret": "s3:cret&",
        "sasl.login.retry.backoff.ms": 10,
        "sasl.login.retry.backoff.max.ms": 500,
    }
    cfg.update(extra)
    return cfg


def test_client_credentials_request_as_java_formats_it(endpoint: _Endpoint) -> None:
    """Basic authentication of the raw id and secret, grant_type and the trimmed scope in the
    form, and JSON asked for."""
    token = create_token_retriever(_cfg(endpoint.url, **{"sasl.oauthbearer.scope": " read "}))()
    headers, form = endpoint.requests[0]
    assert base64.b64decode(headers["Authorization"].split()[1]) == b"my client:s3:cret&"
    assert form == {"grant_type": "client_credentials", "scope": "read"}
    assert headers["Accept"] == "application/json"
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert token.principal == "svc" and token.lifetime_ms is not None


def test_header_urlencode_encodes_id_and_secret(endpoint: _Endpoint) -> None:
    """sasl.oauthbearer.header.urlencode=true URL-encodes the credentials (RFC 6749 2.3.1)."""
    create_token_retriever(_cfg(endpoint.url, **{"sasl.oauthbearer.header.urlencode": True}))()
    headers, _ = endpoint.requests[0]
    assert base64.b64decode(headers["Authorization"].split()[1]) == b"my+client:s3%3Acret%26"


def test_credentials_and_scope_from_jaas_options(endpoint: _Endpoint) -> None:
    """Without the keys, clientId, clientSecret and scope come from sasl.jaas.config."""
    cfg = _cfg(endpoint.url)
    del cfg["sasl.oauthbearer.client.credentials.client.id"]
    del cfg["sasl.oauthbearer.client.credentials.client.secret"]
    cfg["sasl.jaas.config"] = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="jaas-id" clientSecret="jaas-secret" scope="kafka";'
    )
    create_token_retriever(cfg)()
    headers, form = endpoint.requests[0]
    assert base64.b64decode(headers["Authorization"].split()[1]) == b"jaas-id:jaas-secret"
    assert form["scope"] == "kafka"


def test_server_errors_are_retried_then_succeed(endpoint: _Endpoint) -> None:
    """HTTP 5xx is retried after the backoff; the next good answer is used."""
    endpoint.script = [(503, "busy"), (500, "{}")]
    token = create_token_retriever(_cfg(endpoint.url))()
    assert len(endpoint.requests) == 3
    assert token.principal == "svc"


def test_client_errors_are_not_retried(endpoint: _Endpoint) -> None:
    """HTTP 4xx fails at once with the OAuth error and its description, without the secret."""
    endpoint.script = [(401, json.dumps({"error": "invalid_client", "error_description": "bad"}))]
    with pytest.raises(SaslAuthenticationError) as info:
        create_token_retriever(_cfg(endpoint.url))()
    assert len(endpoint.requests) == 1
    assert "HTTP 401: invalid_client (bad)" in str(info.value)
    assert "s3:cret" not in str(info.value)


def test_retries_stop_after_backoff_max(monkeypatch: pytest.MonkeyPatch) -> None:
    """No server: waits of 10, 20, 40 ... ms until 200 ms are spent, then an error naming the
    attempts."""
    retriever = HttpAccessTokenRetriever(
        "http://127.0.0.1:9/token",
        lambda: "grant_type=client_credentials",
        {},
        retry_backoff_ms=10,
        retry_backoff_max_ms=200,
        connect_timeout_ms=100,
        read_timeout_ms=100,
    )
    with pytest.raises(SaslAuthenticationError, match=r"after \d+ attempt\(s\)") as info:
        retriever()
    assert "cannot connect" in str(info.value)
    attempts = int(str(info.value).split(" attempt(s)")[0].rsplit(" ", 1)[1])
    assert attempts >= 3


def test_answer_without_access_token_is_an_error(endpoint: _Endpoint) -> None:
    """A 200 answer lacking access_token is refused (not retried)."""
    endpoint.script = [(200, json.dumps({"token_type": "Bearer"}))]
    with pytest.raises(SaslAuthenticationError, match="no access_token"):
        create_token_retriever(_cfg(endpoint.url))()


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("abc", "not a JWT"),
        (_token(sub=None), "'sub' claim"),
        (_token(scope=7), "neither a string nor a list"),
    ],
    # The tokens carry the time: named ids keep the collection the same in every process.
    ids=["not-a-jwt", "no-subject", "bad-scope"],
)
def test_token_checks(token: str, message: str) -> None:
    """The received token passes Java's client-side checks: three parts, a subject, a
    well-formed scope claim."""
    with pytest.raises(SaslAuthenticationError, match=message):
        parse_access_token(token)


def test_custom_subject_claim() -> None:
    """sasl.oauthbearer.sub.claim.name picks the claim naming the principal."""
    assert parse_access_token(_token(sub=None, client_id="svc-2"), "client_id").principal == "svc-2"


def test_url_not_allowed_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint missing from the allow-list is refused before any request."""
    monkeypatch.setenv(ALLOWED_URLS_ENV, "http://127.0.0.1:1/other")
    with pytest.raises(ConfigError, match=ALLOWED_URLS_ENV):
        create_token_retriever(_cfg("http://127.0.0.1:1/token"))


def test_file_url_reads_the_token_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file: endpoint (Java's FileJwtRetriever) is read for every token."""
    path = tmp_path / "token"
    path.write_text(_token(sub="first"))
    monkeypatch.setenv(ALLOWED_URLS_ENV, path.as_uri())
    retriever = create_token_retriever(_cfg(path.as_uri()))
    assert isinstance(retriever, FileTokenRetriever)
    assert retriever().principal == "first"
    path.write_text(_token(sub="second"))
    assert retriever().principal == "second"


def _key_pair(tmp_path: Path, algorithm: str) -> tuple[Path, Any]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    key: Any = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if algorithm == "RS256"
        else ec.generate_private_key(ec.SECP256R1())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pass"),
    )
    path = tmp_path / "key.pem"
    path.write_bytes(pem)
    return path, key.public_key()


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_jwt_bearer_signs_an_assertion_with_the_claim_keys(
    endpoint: _Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algorithm: str
) -> None:
    """The jwt-bearer grant sends an assertion signed with the private key (encrypted, with
    its passphrase), carrying the configured iss, sub, aud, an expiry and not-before relative
    to now, a jti when asked, and the template's extra header and claims."""
    key_path, public_key = _key_pair(tmp_path, algorithm)
    template = tmp_path / "template.json"
    template.write_text(
        json.dumps({"header": {"kid": "k1"}, "payload": {"tenant": "t", "iss": "x"}})
    )
    monkeypatch.setenv(ALLOWED_FILES_ENV, f"{key_path},{template}")
    cfg = _cfg(
        endpoint.url,
        **{
            "sasl.oauthbearer.jwt.retriever.class": _JWT_BEARER,
            "sasl.oauthbearer.assertion.algorithm": algorithm,
            "sasl.oauthbearer.assertion.private.key.file": str(key_path),
            "sasl.oauthbearer.assertion.private.key.passphrase": "pass",
            "sasl.oauthbearer.assertion.template.file": str(template),
            "sasl.oauthbearer.assertion.claim.iss": "issuer-1",
            "sasl.oauthbearer.assertion.claim.sub": "subject-1",
            "sasl.oauthbearer.assertion.claim.aud": "aud-1",
            "sasl.oauthbearer.assertion.claim.exp.seconds": 120,
            "sasl.oauthbearer.assertion.claim.nbf.seconds": 30,
            "sasl.oauthbearer.assertion.claim.jti.include": True,
            "sasl.oauthbearer.scope": "kafka",
        },
    )
    create_token_retriever(ConsumerConfig({"bootstrap.servers": "h:1", **cfg}))()
    create_token_retriever(ConsumerConfig({"bootstrap.servers": "h:1", **cfg}))()
    headers, form = endpoint.requests[0]
    assert "Authorization" not in headers
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert form["scope"] == "kafka"
    assertion = form["assertion"]
    assert jwt.get_unverified_header(assertion)["kid"] == "k1"
    claims = jwt.decode(assertion, public_key, algorithms=[algorithm], audience="aud-1")
    assert (claims["iss"], claims["sub"], claims["tenant"]) == ("issuer-1", "subject-1", "t")
    assert claims["exp"] - claims["iat"] == 120 and claims["iat"] - claims["nbf"] == 30
    assert (
        claims["jti"]
        != jwt.decode(
            endpoint.requests[1][1]["assertion"],
            public_key,
            algorithms=[algorithm],
            audience="aud-1",
        )["jti"]
    )


def test_jwt_bearer_assertion_from_a_file(
    endpoint: _Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sasl.oauthbearer.assertion.file is sent as it is, read again for every request."""
    path = tmp_path / "assertion"
    path.write_text("first.assertion.x\n")
    monkeypatch.setenv(ALLOWED_FILES_ENV, str(path))
    retriever = create_token_retriever(
        _cfg(
            endpoint.url,
            **{
                "sasl.oauthbearer.jwt.retriever.class": _JWT_BEARER,
                "sasl.oauthbearer.assertion.file": str(path),
            },
        )
    )
    retriever()
    path.write_text("second.assertion.x")
    retriever()
    assert [form["assertion"] for _, form in endpoint.requests] == [
        "first.assertion.x",
        "second.assertion.x",
    ]


def test_jwt_bearer_files_must_be_allowed(endpoint: _Endpoint, tmp_path: Path) -> None:
    """Key and assertion files missing from the allow-list are refused."""
    path = tmp_path / "assertion"
    path.write_text("a.b.c")
    cfg = _cfg(
        endpoint.url,
        **{
            "sasl.oauthbearer.jwt.retriever.class": _JWT_BEARER,
            "sasl.oauthbearer.assertion.file": str(path),
        },
    )
    with pytest.raises(ConfigError, match=ALLOWED_FILES_ENV):
        create_token_retriever(cfg)


def test_jwt_bearer_needs_a_key_or_an_assertion(endpoint: _Endpoint) -> None:
    """The jwt-bearer grant without an assertion source is a configuration error."""
    cfg = _cfg(endpoint.url, **{"sasl.oauthbearer.jwt.retriever.class": _JWT_BEARER})
    with pytest.raises(ConfigError, match="assertion.private.key.file"):
        create_token_retriever(cfg)


_BASE = {
    "bootstrap.servers": "h:1",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "OAUTHBEARER",
}


def test_config_accepts_the_java_login_handler() -> None:
    """Java's handler class and its keys load; the secret is hidden in the configuration."""
    cfg = ConsumerConfig({**_BASE, **_cfg("http://idp/token")})
    assert "s3:cret" not in repr(cfg["sasl.oauthbearer.client.credentials.client.secret"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"sasl.login.callback.handler.class": "com.example.MyHandler"}, "only Java's"),
        ({"sasl.login.callback.handler.class": _HANDLER}, "needs sasl.oauthbearer.token.endpoint"),
        (
            {**_cfg("http://idp/token"), "sasl.oauthbearer.token.provider": lambda: "t"},
            "not both",
        ),
        ({"sasl.oauthbearer.jwt.retriever.class": "com.example.R"}, "only Java's own"),
        ({"sasl.oauthbearer.assertion.algorithm": "HS256"}, "assertion.algorithm"),
        ({"sasl.oauthbearer.assertion.claim.exp.seconds": 86401}, "exp.seconds"),
        ({"sasl.oauthbearer.allow.unverified.issuer": True}, "broker's token validation"),
    ],
)
def test_config_refusals(extra: dict[str, Any], message: str) -> None:
    """Values that cannot work are refused at construction with the reason."""
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig({**_BASE, **extra})


def test_sasl_extensions_from_jaas_options() -> None:
    """JAAS options named extension_<name> become SASL extensions, as in Java's login
    handlers; sasl.oauthbearer.extensions overrides them by name."""
    from kafkaconsumer.network.sasl import oauth_extensions

    cfg = {
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'clientId="c" extension_logicalCluster="lkc-1" extension_pool="p1";'
        ),
        "sasl.oauthbearer.extensions": {"pool": "p2"},
    }
    assert oauth_extensions(cfg) == {"logicalCluster": "lkc-1", "pool": "p2"}
