"""Hostile and wrong peers: servers that are not Kafka, and a broker whose frames turn bogus.

The client must fail with an error that names what it met, quickly, back off between attempts
instead of reconnecting in a storm, and never allocate what a bogus frame header claims (a TLS
alert read as a Kafka size claims 336 MiB). ``tracemalloc`` measures the peak of Python
allocations while the client talks to the peer.
"""

from __future__ import annotations

import http.server
import logging
import random
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.harness.proxy import FaultProxy
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import KafkaConnectionError, KafkaTimeoutError
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.connection import describe_foreign_peer
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.protocol import ApiKey
from tests.chaos.peers import TLS_ALERT, ScriptedPeer
from tests.helpers import network_settings

pytestmark = pytest.mark.timeout(60)

# Far below any bogus size a peer claims here, far above what a few connection attempts need.
_ALLOCATION_BOUND = 8 * 1024 * 1024


def _consumer(address: str, **extra: Any) -> KafkaConsumer:
    cfg: dict[str, Any] = {
        "bootstrap_servers": address,
        "reconnect_backoff_ms": 50,
        "reconnect_backoff_max_ms": 500,
        "request_timeout_ms": 800,
    }
    cfg.update(extra)
    return KafkaConsumer(**cfg)


def _fail_against(
    address: str, caplog: pytest.LogCaptureFixture
) -> tuple[BaseException, float, int]:
    """list_topics against a peer; returns the error, the seconds it took, the peak bytes."""
    caplog.set_level(logging.WARNING, logger="kafkaconsumer")
    consumer = _consumer(address)
    tracemalloc.start()
    try:
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as info:
            consumer.list_topics(timeout_ms=1500)
        took = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        consumer.close()
    return info.value, took, peak


def test_tls_alert_is_named_and_never_allocated(caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedPeer(lambda n: TLS_ALERT) as peer:
        error, took, peak = _fail_against(peer.address, caplog)
    assert "TLS alert record" in str(error)
    assert "security.protocol SSL" in str(error)
    assert took < 10
    assert peak < _ALLOCATION_BOUND, f"peak allocation {peak} bytes"
    warnings = [r for r in caplog.records if "TLS alert" in r.getMessage()]
    assert warnings and all(r.levelno == logging.WARNING for r in warnings)
    # Backed off between attempts: a handful in 1.5 s, not a storm.
    assert 1 <= peer.connections <= 15


def test_tls_alert_split_across_reads_is_still_named(caplog: pytest.LogCaptureFixture) -> None:
    # Two bytes, then the rest: the size header is assembled across reads.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        stop = threading.Event()

        def serve() -> None:
            listener.settimeout(0.1)
            while not stop.is_set():
                try:
                    sock, _ = listener.accept()
                except OSError:
                    continue
                with sock:
                    sock.settimeout(2)
                    try:
                        sock.recv(1024)
                        sock.sendall(TLS_ALERT[:2])
                        time.sleep(0.05)  # a second segment, so the client reads twice
                        sock.sendall(TLS_ALERT[2:])
                        sock.recv(1)
                    except OSError:
                        pass

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            error, _took, peak = _fail_against(f"127.0.0.1:{port}", caplog)
        finally:
            stop.set()
            thread.join(5)
    assert "TLS alert record" in str(error)
    assert peak < _ALLOCATION_BOUND


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


_NGINX_400 = (
    b"HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Type: text/html\r\n"
    b"Content-Length: 150\r\nConnection: close\r\n\r\n<html>" + b" " * 144
)


def test_http_reply_is_named(caplog: pytest.LogCaptureFixture) -> None:
    # nginx rejects a request line with non-token bytes at once with a 400.
    with ScriptedPeer(lambda n: _NGINX_400, close_after_reply=True) as peer:
        error, took, peak = _fail_against(peer.address, caplog)
    assert "an HTTP server answered ('HTTP/1.1 400 Bad Request')" in str(error)
    assert took < 10
    assert peak < _ALLOCATION_BOUND


def test_silent_http_server_times_out_the_request(
    http_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Python's http.server waits for a line end a Kafka request never sends: the ApiVersions
    # request times out (request.timeout.ms) and that is the error reported.
    error, took, peak = _fail_against(http_server, caplog)
    assert "API_VERSIONS request to node -1 timed out after 800 ms" in str(error)
    assert took < 10
    assert peak < _ALLOCATION_BOUND


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_fail_cleanly(seed: int, caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(seed)
    # Every other seed claims a small positive size, so the client waits for a frame that
    # turns out to be garbage (or never completes) rather than rejecting the size at once.
    small = seed % 2 == 1

    def reply(n: int) -> bytes:
        body = rng.randbytes(rng.randint(1, 4096))
        if small:
            return rng.randint(0, 200).to_bytes(4, "big") + body
        return body

    with ScriptedPeer(reply) as peer:
        error, took, peak = _fail_against(peer.address, caplog)
    assert took < 10
    assert peak < _ALLOCATION_BOUND
    assert isinstance(error, KafkaTimeoutError)


def test_real_tls_listener_fails_quickly(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    from benchmarks.harness.tls_proxy import make_pki, server_context

    pki = make_pki(str(tmp_path))
    ctx = server_context(pki.server_cert, pki.server_key)
    with ScriptedPeer(ssl_context=ctx) as peer:
        error, took, peak = _fail_against(peer.address, caplog)
    # OpenSSL resets instead of sending an alert; either way the cause is in the error.
    assert "last error" in str(error)
    assert took < 10
    assert peak < _ALLOCATION_BOUND


def test_describe_foreign_peer() -> None:
    assert "TLS alert" in (describe_foreign_peer(TLS_ALERT) or "")
    assert "TLS handshake" in (describe_foreign_peer(b"\x16\x03\x01\x02\x00\x01") or "")
    assert "HTTP" in (describe_foreign_peer(b"HTTP/1.1 400 Bad Request\r\n\r\n") or "")
    assert "SSH" in (describe_foreign_peer(b"SSH-2.0-OpenSSH_9\r\n") or "")
    assert describe_foreign_peer(b"\x00\x00\x00\x10\x00\x00\x00\x01") is None
    assert describe_foreign_peer(b"") is None


@pytest.mark.integration
def test_bogus_size_on_ready_connection_closes_and_recovers(broker: Any) -> None:
    """A broker connection in READY whose next response claims 2 GiB: closed before anything
    is allocated, the request fails with a connection error, and the next one reconnects."""
    from kafkaconsumer.config import parse_bootstrap_servers

    host, port = parse_bootstrap_servers(broker.bootstrap_servers)[0]
    with FaultProxy(host, port) as proxy:
        cnc = ConsumerNetworkClient(
            NetworkClient(
                network_settings(
                    {
                        "bootstrap.servers": proxy.address,
                        "reconnect.backoff.ms": 20,
                        "reconnect.backoff.max.ms": 200,
                    }
                )
            )
        )
        try:
            fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
            cnc.poll(timeout_ms=10_000, future=fut)
            assert fut.succeeded()
            proxy.corrupt_next_response(lambda data: b"\x7f\xff\xff\xff" + data[4:])
            tracemalloc.start()
            try:
                fut = cnc.send(-1, ApiKey.METADATA, {"topics": []})
                cnc.poll(timeout_ms=10_000, future=fut)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert isinstance(fut.exception, KafkaConnectionError)
            assert "above the receive limit" in str(fut.exception)
            assert peak < _ALLOCATION_BOUND
            deadline = time.monotonic() + 10
            while True:
                fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
                cnc.poll(timeout_ms=5000, future=fut)
                if fut.succeeded():
                    break
                assert time.monotonic() < deadline, f"never recovered: {fut.exception!r}"
        finally:
            cnc.close()


@pytest.mark.integration
@pytest.mark.timeout(300)  # the secure_kafka fixture may start a broker
def test_plaintext_client_against_kafkas_own_ssl_listener(
    secure_kafka: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Apache Kafka's SSL listener meets a PLAINTEXT client: the error says TLS, quickly, and
    nothing like the alert's 336 MiB "size" is allocated."""
    error, took, peak = _fail_against(secure_kafka.ssl_bootstrap.split(",")[0], caplog)
    text = str(error)
    assert "TLS" in text or "SSL" in text, text
    assert took < 10
    assert peak < _ALLOCATION_BOUND, peak
