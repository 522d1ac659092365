"""Unit tests of the SASL mechanisms: RFC 7677 vectors, a SCRAM server, PLAIN, OAUTHBEARER."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from kafkaconsumer.errors import ConfigError, KafkaConnectionError, SaslAuthenticationError
from kafkaconsumer.network.sasl import (
    OAuthBearerMechanism,
    OAuthBearerToken,
    OAuthTokenCache,
    PlainMechanism,
    ScramMechanism,
    Secret,
    create_mechanism,
    credentials,
    parse_jaas_options,
)
from tests.network.scram_server import ScramServer

# RFC 7677 section 3: SCRAM-SHA-256 exchange for user "user", password "pencil".
RFC7677_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC7677_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC7677_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha256_rfc7677_vector() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", Secret("pencil"), nonce=RFC7677_CLIENT_NONCE)
    assert mech.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert mech.evaluate_challenge(RFC7677_SERVER_FIRST) == RFC7677_CLIENT_FINAL
    assert not mech.is_complete()
    assert mech.evaluate_challenge(RFC7677_SERVER_FINAL) is None
    assert mech.is_complete()


def test_scram_sha256_bad_server_signature() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", Secret("pencil"), nonce=RFC7677_CLIENT_NONCE)
    mech.initial_response()
    mech.evaluate_challenge(RFC7677_SERVER_FIRST)
    forged = b"v=" + base64.b64encode(b"\x00" * 32)
    with pytest.raises(SaslAuthenticationError, match="server signature is invalid"):
        mech.evaluate_challenge(forged)
    assert not mech.is_complete()


def test_scram_server_error_is_reported() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", Secret("pencil"), nonce=RFC7677_CLIENT_NONCE)
    mech.initial_response()
    mech.evaluate_challenge(RFC7677_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError, match="invalid-proof"):
        mech.evaluate_challenge(b"e=invalid-proof")


@pytest.mark.parametrize(
    "mechanism,hash_name", [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")]
)
def test_scram_against_independent_server(mechanism: str, hash_name: str) -> None:
    server = ScramServer(hash_name, "pa,ss=word", iterations=4096)
    mech = ScramMechanism(mechanism, "al=ice,x", Secret("pa,ss=word"))
    first = mech.initial_response()
    assert first.startswith(b"n,,n=al=3Dice=2Cx,r=")
    final = mech.evaluate_challenge(server.first(first))
    assert final is not None
    ok, server_final = server.final(final)
    assert ok
    assert mech.evaluate_challenge(server_final) is None
    assert mech.is_complete()


def test_scram_sha512_wrong_password_fails_server_check() -> None:
    server = ScramServer("sha512", "right")
    mech = ScramMechanism("SCRAM-SHA-512", "bob", Secret("wrong"))
    final = mech.evaluate_challenge(server.first(mech.initial_response()))
    assert final is not None
    ok, reply = server.final(final)
    assert not ok
    with pytest.raises(SaslAuthenticationError):
        mech.evaluate_challenge(reply)


def test_scram_sha512_bad_server_signature() -> None:
    server = ScramServer("sha512", "pw")
    mech = ScramMechanism("SCRAM-SHA-512", "bob", Secret("pw"))
    final = mech.evaluate_challenge(server.first(mech.initial_response()))
    assert final is not None
    with pytest.raises(SaslAuthenticationError, match="server signature"):
        mech.evaluate_challenge(b"v=" + base64.b64encode(b"\x01" * 64))


@pytest.mark.parametrize(
    "server_first,match",
    [
        (b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000", "iterations"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "lacks"),
        (b"m=ext,r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "extension"),
        (b"garbage", "malformed"),
    ],
)
def test_scram_rejects_bad_server_first(server_first: bytes, match: str) -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", Secret("pencil"), nonce=RFC7677_CLIENT_NONCE)
    mech.initial_response()
    with pytest.raises(SaslAuthenticationError, match=match):
        mech.evaluate_challenge(server_first)


def test_plain_message_and_completion() -> None:
    mech = PlainMechanism("alice", Secret("secret"))
    assert mech.initial_response() == b"\x00alice\x00secret"
    assert mech.evaluate_challenge(b"") is None
    assert mech.is_complete()


def test_secrets_never_in_repr_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = Secret("hunter2-very-secret")
    mechs = [
        PlainMechanism("alice", secret),
        ScramMechanism("SCRAM-SHA-256", "alice", secret),
        OAuthBearerMechanism(OAuthBearerToken("hunter2-very-secret")),
    ]
    texts = [repr(secret), str(secret), f"{secret}"] + [repr(m) for m in mechs]
    server = ScramServer("sha256", "other")
    mech = ScramMechanism("SCRAM-SHA-256", "alice", secret)
    final = mech.evaluate_challenge(server.first(mech.initial_response()))
    assert final is not None
    _, reply = server.final(final)
    with pytest.raises(SaslAuthenticationError) as info:
        mech.evaluate_challenge(reply)
    texts.append(str(info.value))
    with pytest.raises(ConfigError) as cfg_info:
        create_mechanism({"sasl.mechanism": "PLAIN", "sasl.password": "hunter2-very-secret"})
    texts.append(str(cfg_info.value))
    texts.extend(r.getMessage() for r in caplog.records)
    assert not any("hunter2" in t for t in texts)


def test_credentials_from_jaas_config() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="svc" password="p\\"w";'
    )
    assert parse_jaas_options(jaas) == {"username": "svc", "password": 'p"w'}
    user, password = credentials({"sasl.jaas.config": jaas})
    assert user == "svc" and password.reveal() == 'p"w'
    mech = create_mechanism({"sasl.mechanism": "scram-sha-512", "sasl.jaas.config": jaas})
    assert isinstance(mech, ScramMechanism) and mech.name == "SCRAM-SHA-512"


def test_unsupported_mechanism_is_config_error() -> None:
    with pytest.raises(ConfigError, match="GSSAPI"):
        create_mechanism({"sasl.mechanism": "GSSAPI", "sasl.username": "u", "sasl.password": "p"})


def _jwt(exp: float) -> str:
    def b64(d: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{b64({'alg': 'none'})}.{b64({'sub': 'me', 'exp': exp})}.sig"


def test_oauthbearer_message_and_server_error() -> None:
    mech = OAuthBearerMechanism(OAuthBearerToken("tok123"), {"traceId": "abc"})
    assert mech.initial_response() == b"n,,\x01auth=Bearer tok123\x01traceId=abc\x01\x01"
    # The broker's JSON error is acknowledged with a single 0x01 byte (RFC 7628).
    assert mech.evaluate_challenge(b'{"status":"invalid_token"}') == b"\x01"
    with pytest.raises(SaslAuthenticationError, match="invalid_token"):
        mech.evaluate_challenge(b"")
    ok = OAuthBearerMechanism(OAuthBearerToken("tok"))
    ok.initial_response()
    assert ok.evaluate_challenge(b"") is None and ok.is_complete()


def test_oauth_token_cache_refreshes_before_expiry() -> None:
    now = [1_000_000]
    issued: list[str] = []

    def callback() -> tuple[str, float]:
        token = f"t{len(issued)}"
        issued.append(token)
        return token, (now[0] + 100_000) / 1000.0  # expires 100 s after issue

    cache = OAuthTokenCache(
        callback, refresh_window_factor=0.8, wall_ms=lambda: now[0], uniform=lambda: 0.0
    )
    assert cache.refresh_if_due()
    assert cache.token().value == "t0"
    now[0] += 79_000
    assert not cache.refresh_if_due()  # before 80% of the lifetime: cached
    assert cache.token().value == "t0"
    now[0] += 2_000
    assert cache.token().value == "t0"  # token() never calls the callback
    assert cache.refresh_if_due()
    assert cache.token().value == "t1"  # past 80%: refreshed, still before expiry
    assert cache.refreshes == 2 and issued == ["t0", "t1"]


def _refresh_delay_ms(lifetime_s: int, draw: float = 0.0, **settings: Any) -> int:
    """How long after obtaining a token of ``lifetime_s`` the cache asks for the next one."""
    now = [1_000_000]
    cache = OAuthTokenCache(
        lambda: ("tok", now[0] / 1000.0 + lifetime_s),
        wall_ms=lambda: now[0],
        uniform=lambda: draw,
        **settings,
    )
    assert cache.refresh_if_due()
    return cache._refresh_at_ms - now[0]


def test_oauth_refresh_is_scheduled_as_java_schedules_it() -> None:
    hour = 3600
    # The window factor plus a random share of the jitter (sasl.login.refresh.window.*).
    assert _refresh_delay_ms(hour) == 2_880_000
    assert _refresh_delay_ms(hour, draw=1.0) == 3_060_000  # 0.8 + 0.05
    assert _refresh_delay_ms(hour, draw=1.0, refresh_window_jitter=0.1) == 3_240_000
    # Never inside the last sasl.login.refresh.buffer.seconds of the token's life ...
    assert _refresh_delay_ms(hour, refresh_window_factor=1.0) == (hour - 300) * 1000
    assert _refresh_delay_ms(hour, refresh_window_factor=1.0, refresh_buffer_s=60) == 3_540_000
    # ... nor sooner than sasl.login.refresh.min.period.seconds after obtaining it.
    assert _refresh_delay_ms(1000, refresh_window_factor=0.5) == 500_000
    assert _refresh_delay_ms(1000, refresh_window_factor=0.5, refresh_min_period_s=600) == 600_000
    # A token living less than both margins together is refreshed at the window share alone.
    assert _refresh_delay_ms(300, refresh_window_factor=0.5) == 150_000


def test_oauth_refresh_settings_come_from_the_configuration() -> None:
    from kafkaconsumer.config import ConsumerConfig
    from kafkaconsumer.network.settings import NetworkSettings

    settings = NetworkSettings.from_config(
        ConsumerConfig(
            {
                "bootstrap.servers": "h:1",
                "sasl.login.refresh.window.jitter": 0.1,
                "sasl.login.refresh.min.period.seconds": 30,
                "sasl.login.refresh.buffer.seconds": 120,
            }
        )
    )
    assert settings.sasl_login_refresh_window_jitter == 0.1
    assert settings.sasl_login_refresh_min_period_seconds == 30
    assert settings.sasl_login_refresh_buffer_seconds == 120


def test_oauth_token_cache_token_never_calls_the_callback() -> None:
    calls: list[int] = []

    def callback() -> str:
        calls.append(1)
        return "tok"

    cache = OAuthTokenCache(callback)
    # No token yet: the connection attempt fails (retriable) instead of running user code.
    with pytest.raises(KafkaConnectionError, match="no valid token"):
        cache.token()
    assert calls == []
    assert cache.refresh_if_due()
    assert cache.token().value == "tok" and cache.token().value == "tok"
    # A token of unknown lifetime is fetched again after a connection used it.
    assert cache.refresh_if_due() and len(calls) == 2
    assert not cache.refresh_if_due() and len(calls) == 2


def test_oauth_token_cache_failure_is_kept_and_retried_after_backoff() -> None:
    now = [5_000_000]
    results: list[object] = [RuntimeError("idp down"), "good"]

    def callback() -> object:
        result = results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result

    cache = OAuthTokenCache(
        callback, wall_ms=lambda: now[0], retry_backoff_ms=100, retry_backoff_max_ms=1000
    )
    assert cache.refresh_if_due()  # never raises
    with pytest.raises(SaslAuthenticationError, match="raised RuntimeError"):
        cache.token()
    assert not cache.refresh_if_due()  # backing off
    now[0] += 100
    assert cache.refresh_if_due()
    assert cache.token().value == "good"


def test_oauth_token_cache_refresher_thread_fetches_after_use_and_stops_on_close() -> None:
    import threading
    import time

    calls: list[str] = []

    def callback() -> str:
        calls.append(threading.current_thread().name)
        return f"tok{len(calls)}"

    cache = OAuthTokenCache(callback)
    cache.refresh_if_due()
    cache.start_refresher()
    try:
        assert cache.token().value == "tok1"  # unknown lifetime: used once, fetched again
        deadline = time.monotonic() + 5
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls[1:] == ["kafkaconsumer-oauth-refresh"]
        assert cache.token().value == "tok2"
    finally:
        cache.close()
    assert not any(
        t.name == "kafkaconsumer-oauth-refresh" and t.is_alive()
        for t in threading.enumerate()
        if t is cache._thread
    )


def test_oauth_token_cache_reads_jwt_expiry_and_rejects_expired() -> None:
    now = [2_000_000_000_000]
    cache = OAuthTokenCache(lambda: _jwt(now[0] / 1000 + 50), wall_ms=lambda: now[0])
    cache.refresh_if_due()
    assert cache.token().lifetime_ms == now[0] + 50_000
    expired = OAuthTokenCache(lambda: _jwt(now[0] / 1000 - 5), wall_ms=lambda: now[0])
    expired.refresh_if_due()
    with pytest.raises(SaslAuthenticationError, match="expired"):
        expired.token()
    broken = OAuthTokenCache(lambda: 42, wall_ms=lambda: now[0])
    broken.refresh_if_due()
    with pytest.raises(SaslAuthenticationError, match="must return"):
        broken.token()


def test_config_password_objects_and_provider_objects() -> None:
    from kafkaconsumer.config import ConsumerConfig

    cfg = ConsumerConfig(
        {
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "real-secret",
        }
    )
    mech = create_mechanism(cfg)
    assert mech.initial_response() == b"\x00u\x00real-secret"
    jaas = ConsumerConfig(
        {
            "bootstrap.servers": "h:1",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram."
            'ScramLoginModule required username="j" password="jpw";',
        }
    )
    user, password = credentials(jaas)
    assert (user, password.reveal()) == ("j", "jpw")

    class Provider:
        def token(self) -> str:
            return "provided-token"

    cache = OAuthTokenCache(Provider())
    cache.refresh_if_due()
    assert cache.token().value == "provided-token"
