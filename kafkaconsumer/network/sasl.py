"""SASL client mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER.

Each mechanism is a small state machine independent of the socket: the connection sends
:meth:`SaslMechanism.initial_response` in a SaslAuthenticate request, feeds every reply's
``auth_bytes`` to :meth:`SaslMechanism.evaluate_challenge`, and sends whatever comes back until
the mechanism says it is complete. This keeps the cryptography testable against the RFC vectors
without a broker.

Secrets (passwords, tokens) are held in :class:`Secret`, whose ``repr``/``str`` never show them;
no log line or exception text in this module contains a secret.
"""

from __future__ import annotations

# hashlib, hmac and json are imported where SCRAM and OAuth use them: a plaintext client
# need not pay for them at start-up.
import base64
import logging
import os
import random
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from kafkaconsumer.config import config_value
from kafkaconsumer.errors import ConfigError, KafkaConnectionError, SaslAuthenticationError

logger = logging.getLogger(__name__)

__all__ = [
    "Secret",
    "SaslMechanism",
    "PlainMechanism",
    "ScramMechanism",
    "OAuthBearerMechanism",
    "OAuthBearerToken",
    "OAuthTokenCache",
    "create_mechanism",
    "SUPPORTED_MECHANISMS",
]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

#: Kafka's brokers refuse SCRAM credentials with fewer iterations; a server asking for fewer is
#: either broken or trying to make an offline attack cheap, so the client refuses too.
SCRAM_MIN_ITERATIONS = 4096


class Secret:
    """A string that never shows itself in ``repr``, ``str`` or formatted log output.

    Thread-safety: immutable.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        """Wrap ``value``."""
        if not isinstance(value, str):
            raise ConfigError("a SASL secret must be a string")
        self._value = value

    def reveal(self) -> str:
        """The secret itself; only for building the bytes sent to the broker."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('******')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        import hmac

        return isinstance(other, Secret) and hmac.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(("Secret", len(self._value)))


class SaslMechanism(ABC):
    """One client-side SASL exchange.

    Thread-safety: not thread-safe; one instance serves one authentication on one connection.
    """

    #: The mechanism name sent in SaslHandshake.
    name: str = ""

    @abstractmethod
    def initial_response(self) -> bytes:
        """The first client message."""

    @abstractmethod
    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """Process the server's bytes; return the next client message, or None when done.

        Raises :class:`SaslAuthenticationError` when the server's message is invalid (for
        SCRAM, a wrong server signature).
        """

    @abstractmethod
    def is_complete(self) -> bool:
        """True when the exchange has finished successfully on the client side."""


class PlainMechanism(SaslMechanism):
    """SASL/PLAIN (RFC 4616): one message with the username and password, no challenge.

    Thread-safety: not thread-safe (one exchange).
    """

    name = "PLAIN"

    def __init__(self, username: str, password: Secret) -> None:
        """Authenticate as ``username`` with ``password``."""
        if not username:
            raise ConfigError("SASL/PLAIN needs a username (sasl.username or sasl.jaas.config)")
        if "\x00" in username or "\x00" in password.reveal():
            raise ConfigError("SASL/PLAIN username and password must not contain NUL")
        self._username = username
        self._password = password
        self._sent = False
        self._done = False

    def initial_response(self) -> bytes:
        """``\\0username\\0password`` in UTF-8 (empty authorization id)."""
        self._sent = True
        return b"\x00" + self._username.encode() + b"\x00" + self._password.reveal().encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """The broker answers PLAIN with an empty message on success."""
        if not self._sent:
            raise SaslAuthenticationError("SASL/PLAIN: challenge before the initial response")
        if challenge:
            raise SaslAuthenticationError("SASL/PLAIN: unexpected challenge from the broker")
        self._done = True
        return None

    def is_complete(self) -> bool:
        """True after the broker accepted the credentials."""
        return self._done

    def __repr__(self) -> str:
        return f"PlainMechanism(username={self._username!r})"


def _saslname(username: str) -> str:
    # RFC 5802 5.1: ',' and '=' in a username are escaped.
    return username.replace("=", "=3D").replace(",", "=2C")


def _parse_scram(message: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslAuthenticationError(f"SCRAM: malformed attribute in server message: {part!r}")
        attrs[part[0]] = part[2:]
    return attrs


class ScramMechanism(SaslMechanism):
    """SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), with the server signature checked.

    Thread-safety: not thread-safe (one exchange).
    """

    _HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: Secret,
        nonce: str | None = None,
        extensions: Mapping[str, str] | None = None,
    ) -> None:
        """Authenticate as ``username`` with ``mechanism`` (``SCRAM-SHA-256`` or
        ``SCRAM-SHA-512``); ``nonce`` fixes the client nonce (tests), ``extensions`` are sent in
        the first message.
        """
        if mechanism not in self._HASHES:
            raise ConfigError(f"unsupported SCRAM mechanism {mechanism!r}")
        if not username:
            raise ConfigError(f"{mechanism} needs a username (sasl.username or sasl.jaas.config)")
        self.name = mechanism
        self._hash = self._HASHES[mechanism]
        self._username = username
        self._password = password
        # A fixed nonce is only for the RFC test vectors; normally 24 random bytes, base64.
        self._nonce = nonce if nonce is not None else base64.b64encode(os.urandom(24)).decode()
        self._extensions = dict(extensions or {})
        self._state = "initial"
        self._client_first_bare = ""
        self._server_signature = b""

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        import hmac

        return hmac.new(key, msg, self._hash).digest()

    def _h(self, data: bytes) -> bytes:
        import hashlib

        return hashlib.new(self._hash, data).digest()

    def initial_response(self) -> bytes:
        """``n,,n=<user>,r=<nonce>`` (plus Kafka extensions such as ``tokenauth=true``)."""
        if self._state != "initial":
            raise SaslAuthenticationError("SCRAM: initial response already sent")
        bare = f"n={_saslname(self._username)},r={self._nonce}"
        for key, value in self._extensions.items():
            bare += f",{key}={value}"
        self._client_first_bare = bare
        self._state = "client_first_sent"
        return ("n,," + bare).encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """Answer server-first with the client proof; verify server-final's signature."""
        try:
            text = bytes(challenge).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SaslAuthenticationError("SCRAM: server message is not UTF-8") from exc
        if self._state == "client_first_sent":
            return self._client_final(text)
        if self._state == "client_final_sent":
            self._verify_server_final(text)
            return None
        raise SaslAuthenticationError(f"SCRAM: unexpected server message in state {self._state}")

    def _client_final(self, server_first: str) -> bytes:
        attrs = _parse_scram(server_first)
        if "m" in attrs:
            raise SaslAuthenticationError("SCRAM: server requires an unsupported extension")
        if "e" in attrs:
            raise SaslAuthenticationError(f"SCRAM: server error: {attrs['e']}")
        try:
            nonce, salt_b64, iterations_s = attrs["r"], attrs["s"], attrs["i"]
        except KeyError as exc:
            raise SaslAuthenticationError(f"SCRAM: server-first lacks attribute {exc}") from None
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise SaslAuthenticationError("SCRAM: server nonce does not extend the client nonce")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_s)
        except (ValueError, TypeError) as exc:
            raise SaslAuthenticationError("SCRAM: invalid salt or iteration count") from exc
        if iterations < SCRAM_MIN_ITERATIONS:
            raise SaslAuthenticationError(
                f"SCRAM: server asked for {iterations} iterations, fewer than the minimum "
                f"{SCRAM_MIN_ITERATIONS}"
            )
        import hashlib

        salted = hashlib.pbkdf2_hmac(self._hash, self._password.reveal().encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = self._h(client_key)
        without_proof = "c=" + base64.b64encode(b"n,,").decode() + ",r=" + nonce
        auth_message = ",".join((self._client_first_bare, server_first, without_proof)).encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = self._hmac(salted, b"Server Key")
        self._server_signature = self._hmac(server_key, auth_message)
        self._state = "client_final_sent"
        return (without_proof + ",p=" + base64.b64encode(proof).decode()).encode()

    def _verify_server_final(self, server_final: str) -> None:
        attrs = _parse_scram(server_final)
        if "e" in attrs:
            self._state = "failed"
            raise SaslAuthenticationError(f"SCRAM: server error: {attrs['e']}")
        try:
            received = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            received = b""
        import hmac

        if not received or not hmac.compare_digest(received, self._server_signature):
            self._state = "failed"
            raise SaslAuthenticationError(
                "SCRAM: the server signature is invalid (the server does not know the "
                "credentials; possible man in the middle)"
            )
        self._state = "complete"

    def is_complete(self) -> bool:
        """True once the server's signature was verified."""
        return self._state == "complete"

    def __repr__(self) -> str:
        return f"ScramMechanism({self.name!r}, username={self._username!r})"


class OAuthBearerToken:
    """An OAuth 2 bearer token and when it expires.

    ``lifetime_ms`` is the expiry as milliseconds since the Unix epoch (as Java's
    ``OAuthBearerToken.lifetimeMs()``), or None when unknown (then the token is fetched again
    for every new connection).

    Thread-safety: immutable.
    """

    __slots__ = ("_value", "lifetime_ms", "principal")

    def __init__(
        self, value: str, lifetime_ms: int | None = None, principal: str | None = None
    ) -> None:
        """Hold the token ``value``, its absolute expiry ``lifetime_ms`` (epoch ms) and ``principal``."""
        if not isinstance(value, str) or not value:
            raise SaslAuthenticationError("OAUTHBEARER: the token callback returned an empty token")
        self._value = Secret(value)
        self.lifetime_ms = lifetime_ms
        self.principal = principal

    @property
    def value(self) -> str:
        """The compact token string."""
        return self._value.reveal()

    def __repr__(self) -> str:
        return f"OAuthBearerToken(lifetime_ms={self.lifetime_ms}, principal={self.principal!r})"


def _jwt_expiry_ms(token: str) -> int | None:
    # An unverified peek at a JWT's "exp" claim only to schedule the refresh; the broker is the
    # one that validates the token.
    import json

    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(payload))
        exp = claims.get("exp") if isinstance(claims, dict) else None
        return int(float(exp) * 1000) if exp is not None else None
    except (ValueError, TypeError):
        return None


def _to_token(result: Any) -> OAuthBearerToken:
    if isinstance(result, OAuthBearerToken):
        return result
    if isinstance(result, str):
        return OAuthBearerToken(result, _jwt_expiry_ms(result))
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
        # (token, expiry as epoch seconds), the shape confluent-kafka's oauth_cb returns.
        expiry = result[1]
        return OAuthBearerToken(result[0], None if expiry is None else int(float(expiry) * 1000))
    value = getattr(result, "token", None) or getattr(result, "value", None)
    if isinstance(value, str):
        lifetime = getattr(result, "lifetime_ms", None)
        if lifetime is None and getattr(result, "expires_at", None) is not None:
            lifetime = int(float(result.expires_at) * 1000)
        return OAuthBearerToken(value, None if lifetime is None else int(lifetime))
    raise SaslAuthenticationError(
        "OAUTHBEARER: the token callback must return a str, (token, expiry_epoch_seconds), "
        f"or an object with .token/.lifetime_ms; got {type(result).__name__}"
    )


class OAuthTokenCache:
    """Calls the user's token callback and keeps the token until it is due for refresh.

    The two halves run in different places so that the user's callback never runs under a
    lock (docs/architecture.md, Locks): :meth:`refresh_if_due` calls the callback, once when the network
    client is built and then on a refresher thread of its own (:meth:`start_refresher`, as
    Java's ``ExpiringCredentialRefreshingLogin``) that holds no lock while it runs; :meth:`token`
    only reads the cache, and is what a connection uses while authenticating under the network
    lock.

    A token is refreshed as Java's ``ExpiringCredentialRefreshingLogin`` schedules it: once
    ``refresh_window_factor`` of its lifetime, plus a random share of up to
    ``refresh_window_jitter``, has passed (``sasl.login.refresh.window.*``), but no sooner than
    ``refresh_min_period_s`` after it was obtained and at least ``refresh_buffer_s`` before it
    expires (``sasl.login.refresh.min.period.seconds``, ``sasl.login.refresh.buffer.seconds``);
    a token living less than those two together is refreshed after the window share of its
    life alone. So new connections never present a token about to expire, and clients started
    together do not ask the identity provider at the same moment. A token of unknown lifetime
    is fetched again after a connection used it.
    A failed callback is retried after ``retry_backoff_ms``, doubling up to
    ``retry_backoff_max_ms`` (Java's ``sasl.login.retry.backoff.*``).

    Thread-safety: thread-safe. A small internal lock guards the cached state and is never held
    while the callback runs; only one thread calls the callback at a time (another thread
    arriving meanwhile returns at once and keeps using the cached token).
    """

    #: Longest single wait of the refresher thread, so a wall-clock jump is noticed soon.
    _MAX_WAIT_S = 1.0

    def __init__(
        self,
        callback: Any,
        refresh_window_factor: float = 0.8,
        wall_ms: Callable[[], int] | None = None,
        *,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 10000,
        refresh_window_jitter: float = 0.05,
        refresh_min_period_s: int = 60,
        refresh_buffer_s: int = 300,
        uniform: Callable[[], float] = random.random,
    ) -> None:
        """Cache the tokens of ``callback`` (or of a provider's ``token()`` method), refreshing
        them as the class describes; ``wall_ms`` reads the wall clock and ``uniform`` draws the
        jitter from [0, 1) (tests replace both).
        """
        if not callable(callback) and callable(getattr(callback, "token", None)):
            callback = callback.token  # a provider object with a token() method
        if not callable(callback):
            raise ConfigError("sasl.oauthbearer.token.callback must be callable")
        if not 0.5 <= refresh_window_factor <= 1.0:
            raise ConfigError("sasl.login.refresh.window.factor must be between 0.5 and 1.0")
        self._callback = callback
        self._factor = refresh_window_factor
        self._jitter = refresh_window_jitter
        self._min_period_ms = 1000 * refresh_min_period_s
        self._buffer_ms = 1000 * refresh_buffer_s
        self._uniform = uniform
        self._wall_ms = wall_ms or (lambda: time.time_ns() // 1_000_000)
        self._retry_backoff_ms = max(0, int(retry_backoff_ms))
        self._retry_backoff_max_ms = max(self._retry_backoff_ms, int(retry_backoff_max_ms))
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._refreshing = False
        self._token: OAuthBearerToken | None = None
        self._used = False
        self._refresh_at_ms = 0
        self._error: SaslAuthenticationError | None = None
        self._failures = 0
        self._retry_at_ms = 0
        self.refreshes = 0

    def _due_at(self) -> int | None:
        """Wall ms at which a refresh is due (None: not until a connection uses the token)."""
        if self._error is not None:
            return self._retry_at_ms
        token = self._token
        if token is None:
            return 0
        if token.lifetime_ms is None:
            return 0 if self._used else None
        return self._refresh_at_ms

    def _due(self, now: int) -> bool:
        due = self._due_at()
        return due is not None and now >= due

    def start_refresher(self) -> None:
        """Start the daemon thread that calls :meth:`refresh_if_due` whenever a refresh is due
        (idempotent); :meth:`close` stops it."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(
                target=self._run, name="kafkaconsumer-oauth-refresh", daemon=True
            )
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                due = self._due_at()
                wait = self._MAX_WAIT_S if due is None else (due - self._wall_ms()) / 1000.0
                if wait > 0:
                    self._cond.wait(min(wait, self._MAX_WAIT_S))
                    continue
            self.refresh_if_due()  # outside every lock: runs the user's callback

    def close(self) -> None:
        """Stop the refresher thread (waits briefly for a callback in progress). Idempotent."""
        # The lock itself, not the Condition: this runs on the user's thread, where a Ctrl-C
        # just after a Condition's (Python) __enter__ took the lock would leave it held.
        with self._lock:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)

    def refresh_if_due(self) -> bool:
        """Ask the callback for a new token when none is cached, the cached one is due for
        refresh, or one of unknown lifetime was used; True when the callback was called.

        Never raises: a failing callback is remembered, :meth:`token` raises it while no valid
        token is cached, and the callback is retried after the backoff. Call it outside every
        lock: it runs the user's code.
        """
        now = self._wall_ms()
        with self._lock:
            if self._refreshing or not self._due(now):
                return False
            self._refreshing = True
        token: OAuthBearerToken | None = None
        error: SaslAuthenticationError | None = None
        try:
            token = _to_token(self._callback())
            if token.lifetime_ms is not None and token.lifetime_ms <= now:
                token = None
                error = SaslAuthenticationError(
                    "OAUTHBEARER: the token callback returned an expired token"
                )
        except SaslAuthenticationError as exc:
            error = exc
        except Exception as exc:  # noqa: BLE001 - the user's callback may raise anything
            error = SaslAuthenticationError(
                f"OAUTHBEARER: the token callback raised {type(exc).__name__}"
            )
            error.__cause__ = exc
        with self._lock:
            self._refreshing = False
            self.refreshes += 1
            if token is not None:
                self._token = token
                self._used = False
                self._error = None
                self._failures = 0
                if token.lifetime_ms is not None:
                    # Not sooner than the retry backoff, so a callback handing out tokens about
                    # to expire cannot make the refresher spin.
                    self._refresh_at_ms = max(
                        now + self._retry_backoff_ms, self._refresh_time(now, token.lifetime_ms)
                    )
            else:
                self._error = error
                self._failures += 1
                backoff = self._retry_backoff_ms * (2 ** min(self._failures - 1, 16))
                self._retry_at_ms = now + min(backoff, self._retry_backoff_max_ms)
        if token is not None:
            logger.debug("obtained OAUTHBEARER token (expires at %s ms)", token.lifetime_ms)
        else:
            logger.warning("%s; retrying in at most %d ms", error, self._retry_backoff_max_ms)
        return True

    def _refresh_time(self, now: int, expires: int) -> int:
        share = self._factor + self._jitter * self._uniform()
        proposed = now + int((expires - now) * share)
        if now + self._min_period_ms + self._buffer_ms > expires:
            return proposed  # too short-lived for both margins: Java drops them
        return max(min(proposed, expires - self._buffer_ms), now + self._min_period_ms)

    def token(self) -> OAuthBearerToken:
        """The cached token; never calls the callback (see :meth:`refresh_if_due`).

        Raises :class:`SaslAuthenticationError` with the callback's failure when no valid token
        is cached because the callback failed, and :class:`KafkaConnectionError` (retriable)
        when no token was fetched yet or the cached one expired: the connection attempt fails
        and backs off while the refresher thread fetches a token.
        """
        now = self._wall_ms()
        with self._lock:
            token = self._token
            if token is not None and (token.lifetime_ms is None or token.lifetime_ms > now):
                if not self._used:
                    self._used = True
                    if token.lifetime_ms is None:
                        self._cond.notify_all()  # the refresher fetches the next one
                return token
            if self._error is not None:
                raise self._error
        raise KafkaConnectionError(
            "OAUTHBEARER: no valid token cached yet; the token callback "
            "is asked for one before the next connection attempt"
        )


class OAuthBearerMechanism(SaslMechanism):
    """SASL/OAUTHBEARER (RFC 7628) as Kafka uses it: one client message carrying the token.

    On failure the broker sends a JSON error as a challenge; the client answers with a single
    ``0x01`` byte as the RFC requires and the broker then fails the authentication.

    Thread-safety: not thread-safe (one exchange).
    """

    name = "OAUTHBEARER"

    def __init__(
        self, token: OAuthBearerToken, extensions: Mapping[str, str] | None = None
    ) -> None:
        """Send ``token`` with the optional SASL ``extensions``."""
        self._token = token
        self._extensions = dict(extensions or {})
        for key, value in self._extensions.items():
            if not re.fullmatch(r"[A-Za-z]+", key) or key == "auth":
                raise ConfigError(f"invalid SASL extension name {key!r}")
            if not re.fullmatch(r"[\x21-\x7E \t\r\n]+", value):
                raise ConfigError(f"invalid value for SASL extension {key!r}")
        self._state = "initial"
        self.server_error: str | None = None

    def initial_response(self) -> bytes:
        """``n,,<01>auth=Bearer <token><01>[key=value<01>...]<01>``."""
        self._state = "sent"
        ext = "".join(f"{k}={v}\x01" for k, v in self._extensions.items())
        return f"n,,\x01auth=Bearer {self._token.value}\x01{ext}\x01".encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """Empty on success; a JSON error is acknowledged with ``0x01``."""
        if self._state == "sent":
            if not challenge:
                self._state = "complete"
                return None
            try:
                self.server_error = bytes(challenge).decode("utf-8", "replace")
            except Exception:  # pragma: no cover - decode with "replace" does not raise
                self.server_error = "<undecodable>"
            self._state = "error_acknowledged"
            return b"\x01"
        raise SaslAuthenticationError(
            f"OAUTHBEARER: authentication failed: {self.server_error or 'unexpected message'}"
        )

    def is_complete(self) -> bool:
        """True once the broker accepted the token."""
        return self._state == "complete"


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_jaas_options(jaas: str) -> dict[str, str]:
    """The ``key="value"`` options of a Java ``sasl.jaas.config`` string."""
    return {
        m.group(1): m.group(2).replace('\\"', '"').replace("\\\\", "\\")
        for m in _JAAS_OPTION.finditer(jaas or "")
    }


def secret_text(value: Any) -> str | None:
    """The text of a secret config value: our :class:`Secret` or the config's ``Password``
    (both have ``reveal()``) or a plain value; None stays None."""
    if value is None:
        return None
    reveal = getattr(value, "reveal", None)
    return str(reveal()) if callable(reveal) else str(value)


def credentials(config: Mapping[str, Any]) -> tuple[str, Secret]:
    """Username and password from ``sasl.username``/``sasl.password`` or ``sasl.jaas.config``."""
    username = config.get("sasl.username")
    password = secret_text(config.get("sasl.password"))
    jaas = secret_text(config.get("sasl.jaas.config"))
    if (username is None or password is None) and jaas:
        opts = parse_jaas_options(jaas)
        username = username if username is not None else opts.get("username")
        password = password if password is not None else opts.get("password")
    if password is None:
        raise ConfigError("SASL needs a password (sasl.password or sasl.jaas.config)")
    secret = Secret(password)
    if not username:
        raise ConfigError("SASL needs a username (sasl.username or sasl.jaas.config)")
    return str(username), secret


def oauth_extensions(config: Mapping[str, Any]) -> dict[str, str]:
    """The SASL extensions sent with an OAUTHBEARER token: the JAAS options named
    ``extension_<name>`` (as Java's login callback handlers read them), overridden by the
    ``sasl.oauthbearer.extensions`` mapping."""
    jaas = parse_jaas_options(secret_text(config.get("sasl.jaas.config")) or "")
    found = {k[len("extension_") :]: v for k, v in jaas.items() if k.startswith("extension_")}
    found.update(config.get("sasl.oauthbearer.extensions") or {})
    return found


def create_mechanism(
    config: Mapping[str, Any], token_cache: OAuthTokenCache | None = None
) -> SaslMechanism:
    """A fresh mechanism for one connection attempt, from ``sasl.mechanism`` and credentials."""
    mechanism = str(config_value(config, "sasl.mechanism")).upper()
    if mechanism == "PLAIN":
        return PlainMechanism(*credentials(config))
    if mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        user, password = credentials(config)
        ext = {"tokenauth": "true"} if config.get("sasl.scram.tokenauth") else None
        return ScramMechanism(mechanism, user, password, extensions=ext)
    if mechanism == "OAUTHBEARER":
        if token_cache is None:
            raise ConfigError(
                "OAUTHBEARER needs sasl.oauthbearer.token.callback (a callable returning a token)"
            )
        return OAuthBearerMechanism(token_cache.token(), oauth_extensions(config))
    raise ConfigError(
        f"sasl.mechanism {mechanism!r} is not supported; use one of "
        f"{', '.join(SUPPORTED_MECHANISMS)}"
    )
