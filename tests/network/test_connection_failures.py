"""Connection failures are reported: a WARNING per node with the cause,
rate-limited, also for requests that time out on a working connection; the last error of each
bootstrap server in the timeout message; bootstrap addresses resolved when the client is built
(``client.dns.lookup`` as Java); a hint when a PLAINTEXT client meets an SSL or SASL listener.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

import kafkaconsumer.network.client as client_module
from benchmarks.harness.proxy import FaultProxy
from benchmarks.harness.tls_proxy import TlsProxy, make_pki
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import ConfigError, KafkaTimeoutError
from kafkaconsumer.network.client_utils import resolve_bootstrap_servers
from kafkaconsumer.protocol import ApiKey
from tests.helpers import wait_for
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

FAST = {
    "reconnect.backoff.ms": 20,
    "reconnect.backoff.max.ms": 50,
    "socket.connection.setup.timeout.ms": 300,
    "socket.connection.setup.timeout.max.ms": 300,
}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("kafkaconsumer")
    ]


def fail_list_topics(bootstrap: str, timeout_ms: int = 1500, **config: Any) -> str:
    c = KafkaConsumer({"bootstrap.servers": bootstrap, **FAST, **config})
    try:
        with pytest.raises(KafkaTimeoutError) as info:
            c.list_topics(timeout_ms=timeout_ms)
        return str(info.value)
    finally:
        c.close(timeout_ms=0)


@pytest.fixture
def warn_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.WARNING, logger="kafkaconsumer")
    yield caplog


def test_refused_connections_are_warned_once_per_node_and_named_in_the_timeout(
    warn_log: pytest.LogCaptureFixture,
) -> None:
    p1, p2 = closed_port(), closed_port()
    message = fail_list_topics(f"127.0.0.1:{p1},127.0.0.1:{p2}")
    # Each bootstrap server's own last error.
    assert f"127.0.0.1:{p1}:" in message and f"127.0.0.1:{p2}:" in message, message
    assert message.count("Connection refused") >= 2 or message.count("ECONNREFUSED") >= 2, message
    warned = warnings_of(warn_log)
    # Dozens of attempts (50 ms backoff over 1.5 s), one WARNING per node with the cause.
    for port in (p1, p2):
        mine = [w for w in warned if f"127.0.0.1:{port}" in w]
        assert len(mine) == 1, warned
        assert "refused" in mine[0].lower(), mine


def test_a_new_cause_is_warned_again(warn_log: pytest.LogCaptureFixture) -> None:
    with FaultProxy("127.0.0.1", closed_port()) as proxy:
        proxy.black_hole()
        c = KafkaConsumer({"bootstrap.servers": f"127.0.0.1:{proxy.port}", **FAST})
        try:
            with pytest.raises(KafkaTimeoutError):
                c.list_topics(timeout_ms=1000)
            proxy.stop()
            with pytest.raises(KafkaTimeoutError) as info:
                c.list_topics(timeout_ms=1000)
        finally:
            c.close(timeout_ms=0)
    warned = warnings_of(warn_log)
    assert any("timed out" in w for w in warned), warned
    assert any("refused" in w.lower() for w in warned), warned
    assert "refused" in str(info.value).lower()


def test_an_unreachable_broker_times_out_with_the_setup_timeout_named(
    warn_log: pytest.LogCaptureFixture,
) -> None:
    # A listener that accepts and never answers (as a firewall that drops packets would
    # behave after the TCP handshake).
    with FaultProxy("127.0.0.1", closed_port()) as proxy:
        proxy.black_hole()
        message = fail_list_topics(f"127.0.0.1:{proxy.port}")
    assert f"127.0.0.1:{proxy.port}: connection set-up" in message, message
    assert "timed out" in message
    assert any("timed out" in w for w in warnings_of(warn_log))


def test_unresolvable_bootstrap_is_rejected_when_the_client_is_built(
    warn_log: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(ConfigError, match="bootstrap.servers") as info:
        KafkaConsumer({"bootstrap.servers": "no-such-broker.invalid:9092"})
    assert "no-such-broker.invalid:9092" in str(info.value)
    # One resolvable address is enough; the other one is dropped with a WARNING.
    port = closed_port()
    c = KafkaConsumer({"bootstrap.servers": f"no-such-broker.invalid:9092,127.0.0.1:{port}"})
    c.close(timeout_ms=0)
    assert any("no-such-broker.invalid:9092" in w for w in warnings_of(warn_log))


def test_client_dns_lookup_is_validated_and_canonical_names_are_resolved() -> None:
    with pytest.raises(ConfigError, match="client.dns.lookup"):
        KafkaConsumer({"bootstrap.servers": "127.0.0.1:9092", "client.dns.lookup": "default"})
    assert resolve_bootstrap_servers([("127.0.0.1", 9)], "use_all_dns_ips") == [("127.0.0.1", 9)]
    canonical = resolve_bootstrap_servers(
        [("127.0.0.1", 9)], "resolve_canonical_bootstrap_servers_only"
    )
    expected = socket.gethostbyaddr("127.0.0.1")[0]
    assert canonical == [(expected, 9)]


def test_plaintext_client_on_a_sasl_listener_gets_the_hint(
    warn_log: pytest.LogCaptureFixture,
) -> None:
    # A SASL listener answers ApiVersions and then closes on the first non-SASL request.
    with FakeCluster(n_brokers=1) as cluster:
        cluster.on(ApiKey.METADATA, lambda node, header, body: Reply(close=True))
        message = fail_list_topics(cluster.bootstrap_servers)
    hint = "is this an SSL/SASL listener? security.protocol is PLAINTEXT"
    assert hint in message, message
    assert any(hint in w for w in warnings_of(warn_log))


def test_plaintext_client_on_an_ssl_listener_is_told_so(
    tmp_path: Any, warn_log: pytest.LogCaptureFixture
) -> None:
    pki = make_pki(str(tmp_path))
    with TlsProxy("127.0.0.1", closed_port(), pki.server_cert, pki.server_key) as proxy:
        message = fail_list_topics(f"127.0.0.1:{proxy.port}")
    # Whether the TLS listener sends an alert first or just closes, the cause is named.
    assert "SSL" in message, message
    assert any("SSL" in w for w in warnings_of(warn_log))


@pytest.mark.parametrize(
    ("forwarded", "hinted"),
    [(0, True), (2, False), (10, False)],
    ids=["nothing-back", "mid-size-prefix", "mid-frame"],
)
def test_the_listener_hint_needs_a_close_with_nothing_of_the_answer(
    warn_log: pytest.LogCaptureFixture, forwarded: int, hinted: bool
) -> None:
    # The proxy resets the first connection after `forwarded` bytes of the ApiVersions answer.
    # Nothing back is what an SSL listener does to a plaintext client; part of a frame is a
    # Kafka listener cut off mid-response, which must not be blamed on security.protocol.
    hint = "is this an SSL/SASL listener?"
    with FakeCluster(n_brokers=1) as cluster:
        port = cluster.brokers[0].port
        with FaultProxy("127.0.0.1", port) as proxy:
            proxy.cut_mid_response(forwarded)
            c = KafkaConsumer({"bootstrap.servers": f"127.0.0.1:{proxy.port}", **FAST})
            try:
                c.list_topics(timeout_ms=10_000)  # the retried connection works
            finally:
                c.close(timeout_ms=0)
    mine = [w for w in warnings_of(warn_log) if f"127.0.0.1:{proxy.port}" in w]
    assert len(mine) == 1, warnings_of(warn_log)
    assert "closed the connection" in mine[0], mine
    assert (hint in mine[0]) is hinted, mine


def test_requests_that_time_out_are_warned_rate_limited(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A broker that stops answering Metadata once the consumer has listed the topics: every
    # connection after that ends in a request timeout, about one each 200 ms.
    caplog.set_level(logging.WARNING, logger="kafkaconsumer")
    caplog.set_level(logging.DEBUG, logger="kafkaconsumer.network.connection")
    silent: list[bool] = []

    def metadata(node: int, header: Any, body: Any) -> Reply | None:
        return Reply(drop=True) if silent else None

    def timeouts() -> int:
        return sum("timed out after" in r.getMessage() for r in caplog.records if r.levelno == 10)

    def timeout_warnings() -> list[str]:
        return [w for w in warnings_of(caplog) if "timed out after" in w]

    def try_list_topics() -> bool:
        """One metadata attempt; never the condition itself (the waits end on the counts)."""
        with contextlib.suppress(KafkaTimeoutError):
            c.list_topics(timeout_ms=300)
        return False

    with FakeCluster(n_brokers=1) as cluster:
        cluster.on(ApiKey.METADATA, metadata)
        c = KafkaConsumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "request.timeout.ms": 200, **FAST}
        )
        try:
            c.list_topics(timeout_ms=10_000)
            silent.append(True)
            wait_for(lambda: try_list_topics() or timeouts() >= 4, timeout=30)
            warned = timeout_warnings()
            # Each node (the bootstrap server and broker 0) warned once with the cause; the
            # timeouts after that within the interval are only counted.
            assert 1 <= len(warned) <= 2, warned
            assert len({w.split(" (")[0] for w in warned}) == len(warned), warned
            assert all("METADATA request to node" in w for w in warned), warned
            assert timeouts() > len(warned)
            # Once the interval has passed, the next timeout is warned with the count of those
            # held back.
            monkeypatch.setattr(client_module, "_WARN_INTERVAL_MS", 0)
            wait_for(lambda: try_list_topics() or len(timeout_warnings()) > len(warned), timeout=30)
        finally:
            c.close(timeout_ms=0)
    again = timeout_warnings()[len(warned)]
    assert "more such failures since the last warning" in again, again
