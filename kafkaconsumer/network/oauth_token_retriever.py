"""OAuth 2 access tokens fetched by the client, as Java's ``OAuthBearerLoginCallbackHandler``.

With ``sasl.login.callback.handler.class`` set to Java's
``org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler`` and
``sasl.oauthbearer.token.endpoint.url`` set, the client obtains its OAUTHBEARER tokens itself:

- ``client_credentials`` (RFC 6749 4.4, Java's ``ClientCredentialsJwtRetriever``, the default):
  the client id and secret from ``sasl.oauthbearer.client.credentials.client.id``/``.secret``
  or the JAAS options ``clientId``/``clientSecret``, sent as HTTP Basic authentication
  (URL-encoded first when ``sasl.oauthbearer.header.urlencode`` is true);
- ``urn:ietf:params:oauth:grant-type:jwt-bearer`` (RFC 7523, KIP-1139, Java's
  ``JwtBearerJwtRetriever``, chosen with ``sasl.oauthbearer.jwt.retriever.class``): an
  assertion read from ``sasl.oauthbearer.assertion.file``, or signed here (RS256 or ES256)
  with the key of ``sasl.oauthbearer.assertion.private.key.file`` from the
  ``sasl.oauthbearer.assertion.claim.*`` keys and an optional template file;
- a ``file:`` endpoint URL: the token is read from that file (Java's ``FileJwtRetriever``).

``sasl.oauthbearer.scope`` (or the JAAS option ``scope``) is sent with both grants. A request
that fails for a reason worth retrying (no connection, a timeout, HTTP 5xx) is retried after
``sasl.login.retry.backoff.ms``, doubling, until ``sasl.login.retry.backoff.max.ms`` has
passed since the first attempt, as Java's ``Retry`` does; HTTP 4xx (a wrong secret, an unknown
client) fails at once with the provider's error text. Connect and read are bounded by
``sasl.login.connect.timeout.ms``/``sasl.login.read.timeout.ms``, or by ``request.timeout.ms``
when they are unset (Java waits without bound then; this client bounds every wait).

As Java 4.x does with its ``org.apache.kafka.sasl.oauthbearer.allowed.urls`` and
``...allowed.files`` system properties, the endpoint URL and the files read must be listed in
the environment variables :data:`ALLOWED_URLS_ENV` and :data:`ALLOWED_FILES_ENV`
(comma-separated, compared exactly), so that a configuration cannot make the client read
arbitrary URLs or files.

The received token is checked as Java's ``ClientJwtValidator`` checks it (a JWT whose
``exp`` and subject claim, ``sasl.oauthbearer.sub.claim.name``, are present; the signature is
the broker's to verify) and handed to the refresh scheduling of
:class:`~kafkaconsumer.network.sasl.OAuthTokenCache`. JWT signing needs PyJWT with
``cryptography`` (the ``oauth`` extra); everything else uses the standard library.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kafkaconsumer.config import config_value
from kafkaconsumer.config.validators import (
    OAUTH_DEFAULT_JWT_RETRIEVER,
    OAUTH_JWT_RETRIEVERS,
    OAUTH_LOGIN_CALLBACK_HANDLERS,
)
from kafkaconsumer.errors import ConfigError, SaslAuthenticationError
from kafkaconsumer.network.sasl import OAuthBearerToken, parse_jaas_options, secret_text

logger = logging.getLogger(__name__)

__all__ = [
    "ALLOWED_FILES_ENV",
    "ALLOWED_URLS_ENV",
    "HttpAccessTokenRetriever",
    "FileTokenRetriever",
    "create_token_retriever",
    "uses_login_callback_handler",
]

#: ``sasl.oauthbearer.jwt.retriever.class`` values: the default chooses by the endpoint URL.
CLIENT_CREDENTIALS_RETRIEVER, FILE_RETRIEVER, JWT_BEARER_RETRIEVER = OAUTH_JWT_RETRIEVERS

#: Comma-separated token endpoint URLs the client may call (Java's system property
#: ``org.apache.kafka.sasl.oauthbearer.allowed.urls``).
ALLOWED_URLS_ENV = "KAFKACONSUMER_SASL_OAUTHBEARER_ALLOWED_URLS"
#: Comma-separated files the client may read tokens, assertions and keys from (Java's
#: ``org.apache.kafka.sasl.oauthbearer.allowed.files``).
ALLOWED_FILES_ENV = "KAFKACONSUMER_SASL_OAUTHBEARER_ALLOWED_FILES"

_JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_ASSERTION_ALGORITHMS = ("RS256", "ES256")


class _Retriable(Exception):
    """A failure worth another attempt (connection refused, timeout, HTTP 5xx).

    Thread-safety: raised and caught on one thread.
    """


def uses_login_callback_handler(config: Mapping[str, Any]) -> bool:
    """True when ``config`` asks for Java's token-fetching login callback handler."""
    return config.get("sasl.login.callback.handler.class") in OAUTH_LOGIN_CALLBACK_HANDLERS


def _allowed(env: str, what: str, value: str, java_property: str) -> None:
    allowed = {item.strip() for item in os.environ.get(env, "").split(",") if item.strip()}
    if value not in allowed:
        raise ConfigError(
            f"the {what} {value!r} may not be accessed: list it in the environment variable "
            f"{env} (comma-separated; Java's system property {java_property})"
        )


def _read_allowed_file(path: str, key: str) -> str:
    _allowed(ALLOWED_FILES_ENV, "file", path, "org.apache.kafka.sasl.oauthbearer.allowed.files")
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path!r}: {exc.strerror or exc}") from None


def _b64url_json(part: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def parse_access_token(
    value: str, sub_claim: str = "sub", scope_claim: str = "scope"
) -> OAuthBearerToken:
    """Check ``value`` as Java's ``ClientJwtValidator`` does and wrap it with its expiry.

    The token must be a JWT with a numeric ``exp`` and a non-empty ``sub_claim``, and its
    ``scope_claim``, when present, a string or a list of strings; its signature is not checked
    here (the broker validates it).
    """
    value = value.strip()
    parts = value.split(".")
    if len(parts) != 3:
        raise SaslAuthenticationError(
            f"OAUTHBEARER: the access token is not a JWT (it has {len(parts)} parts, not 3)"
        )
    try:
        claims = _b64url_json(parts[1])
    except (ValueError, TypeError):
        raise SaslAuthenticationError(
            "OAUTHBEARER: the access token's payload is not base64url-encoded JSON"
        ) from None
    if not isinstance(claims, dict):
        raise SaslAuthenticationError("OAUTHBEARER: the access token's payload is not an object")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise SaslAuthenticationError("OAUTHBEARER: the access token has no numeric 'exp' claim")
    subject = claims.get(sub_claim)
    if not isinstance(subject, str) or not subject.strip():
        raise SaslAuthenticationError(
            f"OAUTHBEARER: the access token has no {sub_claim!r} claim "
            "(sasl.oauthbearer.sub.claim.name)"
        )
    scope = claims.get(scope_claim)
    if scope is not None and not (
        isinstance(scope, str)
        or (isinstance(scope, list) and all(isinstance(x, str) for x in scope))
    ):
        raise SaslAuthenticationError(
            f"OAUTHBEARER: the access token's {scope_claim!r} claim is neither a string nor a "
            "list of strings (sasl.oauthbearer.scope.claim.name)"
        )
    return OAuthBearerToken(value, int(exp * 1000), subject.strip())


class FileTokenRetriever:
    """Reads the access token from a ``file:`` endpoint URL on every call (Java's
    ``FileJwtRetriever``), so a token rewritten by another process is picked up.

    Thread-safety: immutable; safe from any thread.
    """

    def __init__(self, path: str, sub_claim: str = "sub", scope_claim: str = "scope") -> None:
        """Read tokens from ``path`` (which must be allowed, see the module's docstring)."""
        _allowed(
            ALLOWED_URLS_ENV,
            "URL",
            Path(path).as_uri(),
            "org.apache.kafka.sasl.oauthbearer.allowed.urls",
        )
        self._path = path
        self._claims = (sub_claim, scope_claim)

    def __call__(self) -> OAuthBearerToken:
        """The token in the file, checked (see :func:`parse_access_token`)."""
        try:
            text = Path(self._path).read_text(encoding="utf-8")
        except OSError as exc:
            raise SaslAuthenticationError(
                f"OAUTHBEARER: cannot read the token file {self._path!r}: {exc.strerror or exc}"
            ) from None
        return parse_access_token(text, *self._claims)


class _AssertionSigner:
    """Signs a fresh jwt-bearer assertion for every request (Java's ``DefaultAssertionCreator``
    with its layered static and dynamic templates).

    Thread-safety: immutable after construction; safe from any thread.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        try:
            import jwt  # noqa: F401 - probe: PyJWT comes with the "oauth" extra
            from cryptography.hazmat.primitives import serialization
        except ImportError:
            raise ConfigError(
                "sasl.oauthbearer.assertion.private.key.file needs PyJWT and cryptography: "
                "pip install 'kafkaconsumer[oauth]'"
            ) from None
        algorithm = str(config_value(config, "sasl.oauthbearer.assertion.algorithm")).upper()
        if algorithm not in _ASSERTION_ALGORITHMS:
            raise ConfigError(
                f"sasl.oauthbearer.assertion.algorithm: {algorithm!r} is not one of "
                f"{', '.join(_ASSERTION_ALGORITHMS)}"
            )
        self._algorithm = algorithm
        key_file = str(config["sasl.oauthbearer.assertion.private.key.file"])
        pem = _read_allowed_file(key_file, "sasl.oauthbearer.assertion.private.key.file")
        passphrase = secret_text(config.get("sasl.oauthbearer.assertion.private.key.passphrase"))
        try:
            key = serialization.load_pem_private_key(
                pem.encode(), None if passphrase is None else passphrase.encode()
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"sasl.oauthbearer.assertion.private.key.file: {key_file!r} is not a PEM "
                f"private key readable with the given passphrase ({type(exc).__name__})"
            ) from None
        from cryptography.hazmat.primitives.asymmetric import ec, rsa

        wanted = rsa.RSAPrivateKey if algorithm == "RS256" else ec.EllipticCurvePrivateKey
        if not isinstance(key, wanted):
            raise ConfigError(
                f"sasl.oauthbearer.assertion.private.key.file: {key_file!r} holds no "
                f"{'RSA' if algorithm == 'RS256' else 'EC'} key for {algorithm} "
                "(sasl.oauthbearer.assertion.algorithm)"
            )
        self._key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = key
        header: dict[str, Any] = {}
        payload: dict[str, Any] = {}
        template = config.get("sasl.oauthbearer.assertion.template.file")
        if template:
            try:
                loaded = json.loads(
                    _read_allowed_file(str(template), "sasl.oauthbearer.assertion.template.file")
                )
            except ValueError:
                raise ConfigError(
                    "sasl.oauthbearer.assertion.template.file: not a JSON object"
                ) from None
            if not isinstance(loaded, dict):
                raise ConfigError("sasl.oauthbearer.assertion.template.file: not a JSON object")
            header = dict(loaded.get("header") or {})
            payload = dict(loaded.get("payload") or {})
        # The configured claims override the template's, as Java layers them.
        for claim, value in (
            ("aud", config.get("sasl.oauthbearer.assertion.claim.aud")),
            ("iss", config.get("sasl.oauthbearer.assertion.claim.iss")),
            ("sub", config.get("sasl.oauthbearer.assertion.claim.sub")),
        ):
            if value:
                payload[claim] = value
        self._header = header
        self._static = payload
        self._exp_s = int(config_value(config, "sasl.oauthbearer.assertion.claim.exp.seconds"))
        self._nbf_s = int(config_value(config, "sasl.oauthbearer.assertion.claim.nbf.seconds"))
        self._jti = bool(config_value(config, "sasl.oauthbearer.assertion.claim.jti.include"))

    def __call__(self) -> str:
        import jwt

        now = int(time.time())
        claims = dict(self._static)
        claims.update(iat=now, exp=now + self._exp_s, nbf=now - self._nbf_s)
        if self._jti:
            claims["jti"] = str(uuid.uuid4())
        return jwt.encode(
            claims, self._key, algorithm=self._algorithm, headers=self._header or None
        )


class HttpAccessTokenRetriever:
    """POSTs one grant to the token endpoint and returns the access token it answers with.

    Retries as the module's docstring says; raises :class:`SaslAuthenticationError` with the
    provider's answer (never the secret) when no token could be had.

    Thread-safety: safe from any thread; each call opens its own connection. The
    :class:`~kafkaconsumer.network.sasl.OAuthTokenCache` calls it from one thread at a time.
    """

    def __init__(
        self,
        url: str,
        body: Callable[[], str],
        headers: Mapping[str, str],
        *,
        claims: tuple[str, str] = ("sub", "scope"),
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 10000,
        connect_timeout_ms: int = 30000,
        read_timeout_ms: int = 30000,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Fetch from ``url`` with the form ``body()`` (called per attempt: an assertion is
        signed afresh) and ``headers``."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError(
                f"sasl.oauthbearer.token.endpoint.url: {url!r} is not an http, https or file URL"
            )
        self._url = parsed
        self._body = body
        self._headers = dict(headers)
        self._claims = claims
        self._backoff_ms = max(0, retry_backoff_ms)
        self._backoff_max_ms = max(self._backoff_ms, retry_backoff_max_ms)
        self._connect_s = connect_timeout_ms / 1000.0
        self._read_s = read_timeout_ms / 1000.0
        self._sleep = sleep
        self._stop = threading.Event()

    def close(self) -> None:
        """Cut short a backoff in progress (the cache is closing)."""
        self._stop.set()

    def __call__(self) -> OAuthBearerToken:
        """One token, retried as Java's ``Retry`` does."""
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                return parse_access_token(self._post(), *self._claims)
            except _Retriable as exc:
                elapsed_ms = (time.monotonic() - started) * 1000
                wait_ms = min(
                    self._backoff_ms * 2 ** min(attempt - 1, 30), self._backoff_max_ms - elapsed_ms
                )
                if wait_ms <= 0 or self._stop.is_set():
                    raise SaslAuthenticationError(
                        f"OAUTHBEARER: no token from {self._endpoint()} after {attempt} "
                        f"attempt(s) in {elapsed_ms / 1000:.1f} s "
                        f"(sasl.login.retry.backoff.max.ms={self._backoff_max_ms}): {exc}"
                    ) from None
                logger.debug(
                    "token request to %s failed (%s); retrying in %.0f ms",
                    self._endpoint(),
                    exc,
                    wait_ms,
                )
                if self._stop.wait(wait_ms / 1000.0):
                    raise SaslAuthenticationError("OAUTHBEARER: token retrieval stopped") from None

    def _endpoint(self) -> str:
        return urllib.parse.urlunsplit(self._url)

    def _post(self) -> str:
        url = self._url
        conn_cls = (
            http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        )
        conn = conn_cls(url.hostname or "", url.port, timeout=self._connect_s)
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        try:
            try:
                conn.connect()
            except OSError as exc:
                raise _Retriable(f"cannot connect: {exc.strerror or exc}") from None
            if conn.sock is not None:
                conn.sock.settimeout(self._read_s)
            try:
                conn.request("POST", path, body=self._body().encode(), headers=self._headers)
                response = conn.getresponse()
                status, text = response.status, response.read().decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as exc:
                raise _Retriable(f"no answer: {type(exc).__name__}: {exc}") from None
        finally:
            conn.close()
        if 500 <= status < 600:
            raise _Retriable(f"HTTP {status}: {_error_text(text)}")
        if not 200 <= status < 300:
            raise SaslAuthenticationError(
                f"OAUTHBEARER: the token endpoint {self._endpoint()} refused the request: "
                f"HTTP {status}: {_error_text(text)}"
            )
        try:
            answer = json.loads(text)
        except ValueError:
            raise SaslAuthenticationError(
                f"OAUTHBEARER: the token endpoint answered HTTP {status} with no JSON"
            ) from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token.strip():
            raise SaslAuthenticationError(
                "OAUTHBEARER: the token endpoint's answer has no access_token"
            )
        return token


def _error_text(text: str) -> str:
    # OAuth errors are JSON with error/error_description (RFC 6749 5.2); keep it short either way.
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "error" in answer:
        description = answer.get("error_description")
        return f"{answer['error']}" + (f" ({description})" if description else "")
    return text.strip()[:200] or "(empty body)"


def _form(**fields: str | None) -> str:
    return "&".join(
        f"{name}={urllib.parse.quote_plus(value)}" for name, value in fields.items() if value
    )


def create_token_retriever(
    config: Mapping[str, Any],
) -> HttpAccessTokenRetriever | FileTokenRetriever:
    """The retriever ``config`` describes (see the module's docstring).

    Raises :class:`ConfigError` for a missing endpoint URL, missing credentials, a URL or file
    not allowed, or an unreadable key; nothing is fetched yet.
    """
    url = config.get("sasl.oauthbearer.token.endpoint.url")
    if not url:
        raise ConfigError(
            f"sasl.login.callback.handler.class={config.get('sasl.login.callback.handler.class')}"
            " needs sasl.oauthbearer.token.endpoint.url"
        )
    url = str(url).strip()
    sub_claim = str(config_value(config, "sasl.oauthbearer.sub.claim.name"))
    scope_claim = str(config_value(config, "sasl.oauthbearer.scope.claim.name"))
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    retriever_class = str(config_value(config, "sasl.oauthbearer.jwt.retriever.class"))
    if scheme == "file" and retriever_class in (OAUTH_DEFAULT_JWT_RETRIEVER, FILE_RETRIEVER):
        return FileTokenRetriever(
            urllib.parse.unquote(urllib.parse.urlsplit(url).path), sub_claim, scope_claim
        )
    if retriever_class == FILE_RETRIEVER:
        raise ConfigError(
            f"sasl.oauthbearer.jwt.retriever.class={FILE_RETRIEVER} needs a file: "
            "sasl.oauthbearer.token.endpoint.url"
        )
    _allowed(ALLOWED_URLS_ENV, "URL", url, "org.apache.kafka.sasl.oauthbearer.allowed.urls")
    jaas = parse_jaas_options(secret_text(config.get("sasl.jaas.config")) or "")
    scope = config.get("sasl.oauthbearer.scope") or jaas.get("scope")
    scope = str(scope).strip() if scope and str(scope).strip() else None
    headers = {
        "Accept": "application/json",
        "Cache-Control": "no-cache",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    body: Callable[[], str]
    if retriever_class == JWT_BEARER_RETRIEVER:
        body = _jwt_bearer_body(config, scope)
    else:
        client_id = config.get("sasl.oauthbearer.client.credentials.client.id") or jaas.get(
            "clientId"
        )
        client_secret = secret_text(
            config.get("sasl.oauthbearer.client.credentials.client.secret")
        ) or jaas.get("clientSecret")
        if not client_id or not str(client_id).strip():
            raise ConfigError(
                "the client_credentials grant needs sasl.oauthbearer.client.credentials.client.id "
                "(or the JAAS option clientId)"
            )
        if not client_secret or not client_secret.strip():
            raise ConfigError(
                "the client_credentials grant needs "
                "sasl.oauthbearer.client.credentials.client.secret (or the JAAS option "
                "clientSecret)"
            )
        cid, csecret, cscope = str(client_id).strip(), client_secret.strip(), scope
        if config.get("sasl.oauthbearer.header.urlencode"):
            # RFC 6749 2.3.1 asks for it; off by default as in Java, since many providers
            # accept the raw form and some reject the encoded one.
            cid, csecret = urllib.parse.quote_plus(cid), urllib.parse.quote_plus(csecret)
            cscope = urllib.parse.quote_plus(scope) if scope else None
        basic = base64.b64encode(f"{cid}:{csecret}".encode()).decode()
        headers["Authorization"] = f"Basic {basic}"
        text = "grant_type=client_credentials" + (f"&scope={cscope}" if cscope else "")
        body = lambda: text  # noqa: E731 - a constant form
    fallback_ms = int(config_value(config, "request.timeout.ms"))
    connect_ms = config.get("sasl.login.connect.timeout.ms")
    read_ms = config.get("sasl.login.read.timeout.ms")
    return HttpAccessTokenRetriever(
        url,
        body,
        headers,
        claims=(sub_claim, scope_claim),
        retry_backoff_ms=int(config_value(config, "sasl.login.retry.backoff.ms")),
        retry_backoff_max_ms=int(config_value(config, "sasl.login.retry.backoff.max.ms")),
        connect_timeout_ms=int(connect_ms) if connect_ms is not None else fallback_ms,
        read_timeout_ms=int(read_ms) if read_ms is not None else fallback_ms,
    )


def _jwt_bearer_body(config: Mapping[str, Any], scope: str | None) -> Callable[[], str]:
    assertion_file = config.get("sasl.oauthbearer.assertion.file")
    if assertion_file:
        path = str(assertion_file)
        _read_allowed_file(path, "sasl.oauthbearer.assertion.file")  # allowed and readable now

        def from_file() -> str:
            # Read per request: an assertion rotated by another process is picked up.
            assertion = _read_allowed_file(path, "sasl.oauthbearer.assertion.file").strip()
            return _form(grant_type=_JWT_BEARER_GRANT, assertion=assertion, scope=scope)

        return from_file
    if not config.get("sasl.oauthbearer.assertion.private.key.file"):
        raise ConfigError(
            "the jwt-bearer grant needs sasl.oauthbearer.assertion.file or "
            "sasl.oauthbearer.assertion.private.key.file"
        )
    signer = _AssertionSigner(config)
    return lambda: _form(grant_type=_JWT_BEARER_GRANT, assertion=signer(), scope=scope)
