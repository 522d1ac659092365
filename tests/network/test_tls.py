"""TLS: a TLS-terminating proxy in front of the broker, certificates made by the test.

The client verifies the certificate chain and the host name (``ssl.endpoint.identification
.algorithm=https``, the default). A wrong CA, an expired certificate and a host-name mismatch
each fail with :class:`SslAuthenticationError`, and the reconnect backoff keeps the attempts
few.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

import pytest

from benchmarks.harness.proxy import FaultProxy
from benchmarks.harness.tls_proxy import Pki, TlsProxy, make_pki
from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.errors import (
    ConfigError,
    KafkaError,
    KafkaTimeoutError,
    SslAuthenticationError,
)
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.client_utils import parse_bootstrap_servers
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.ssl_context import build_ssl_context
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.helpers import network_settings, unique_name, wait_for
from tests.network.kafka_ops import create_topic, fetch, produce

pytestmark = [pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(str(tmp_path_factory.mktemp("pki")))


def tls_client(
    bootstrap: str,
    pki: Pki,
    ca: str | None = None,
    with_metadata: bool = True,
    extra: dict[str, Any] | None = None,
) -> ConsumerNetworkClient:
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.truststore.location": ca or pki.ca,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 1000,
    }
    cfg.update(extra or {})
    if not with_metadata:
        return ConsumerNetworkClient(NetworkClient(network_settings(cfg)))
    md = ConsumerMetadata(cfg)
    return ConsumerNetworkClient(NetworkClient(network_settings(cfg), metadata=md), md)


def proxy_for(broker: Any, pki: Pki, cert: str, key: str, **kw: Any) -> TlsProxy:
    host, port = parse_bootstrap_servers(broker.bootstrap_servers)[0]
    return TlsProxy(host, port, cert, key, **kw)


def assert_fails_without_storm(cnc: ConsumerNetworkClient, proxy: FaultProxy, match: str) -> None:
    with pytest.raises(SslAuthenticationError, match=match):
        cnc.await_metadata_update(5000)
    # Keep the client busy for 2 s: the backoff (100 ms doubling to 1 s) bounds the attempts.
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            cnc.await_metadata_update(200)
        except KafkaError:
            pass
    assert 1 <= proxy.accepted <= 7, f"{proxy.accepted} connection attempts in ~2 s"


@pytest.mark.integration
def test_tls_metadata_produce_fetch_with_hostname_check(broker: Any, pki: Pki) -> None:
    with proxy_for(broker, pki, pki.server_cert, pki.server_key) as proxy:
        # Bootstrap node only: the session broker advertises its own plaintext address, which a
        # TLS client cannot use; metadata, produce and fetch go through the proxy on node -1.
        cnc = tls_client(f"localhost:{proxy.port}", pki, with_metadata=False)
        try:
            topic = unique_name("tls")
            assert cnc.await_ready(-1, 10_000)
            conn = cnc.client.connection(-1)
            assert conn is not None and isinstance(conn.sock, ssl.SSLSocket)
            create_topic(cnc, topic, 1)
            body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
            deadline = time.monotonic() + 20
            while True:
                fut = cnc.send(-1, ApiKey.METADATA, body)
                cnc.poll(timeout_ms=10_000, future=fut)
                parts = fut.value["topics"][0]["partitions"]
                if parts and parts[0]["leader_id"] >= 0:
                    break
                assert time.monotonic() < deadline
            produce(cnc, -1, topic, 0, [b"x", b"y"])
            assert fetch(cnc, -1, topic, 0, 0, fut.value["topics"][0]["topic_id"]) == [b"x", b"y"]
            assert proxy.handshakes >= 1 and proxy.handshake_failures == 0
        finally:
            cnc.close()


@pytest.mark.integration
@pytest.mark.own_embedded_broker
def test_tls_full_metadata_flow_with_advertised_proxy(pki: Pki) -> None:
    """A broker that advertises the proxy: every connection (bootstrap and metadata nodes) is
    TLS with the host name checked against the advertised name."""
    embedded = pytest.importorskip("kafkaconsumer.embedded")
    try:
        embedded.find_broker_binary()
    except embedded.EmbeddedBrokerError as exc:
        pytest.skip(str(exc))
    proxy = TlsProxy("127.0.0.1", 1, pki.server_cert, pki.server_key)
    with (
        proxy,
        embedded.EmbeddedBroker(advertised_host="localhost", advertised_port=proxy.port) as b,
    ):
        proxy.target = ("127.0.0.1", b.listen_port)
        cnc = tls_client(f"localhost:{proxy.port}", pki)
        try:
            topic = unique_name("tls-md")
            create_topic(cnc, topic, 1)
            assert cnc.metadata is not None
            cnc.metadata.set_topics([topic])
            tp = TopicPartition(topic, 0)
            deadline = time.monotonic() + 20
            while cnc.metadata.cluster.leader_for(tp) is None:
                assert time.monotonic() < deadline
                cnc.await_metadata_update(5000)
            leader = cnc.metadata.cluster.leader_for(tp)
            assert leader is not None and leader >= 0
            broker_node = cnc.metadata.cluster.broker(leader)
            assert broker_node is not None and broker_node.host == "localhost"
            assert cnc.await_ready(leader, 10_000)
            produce(cnc, leader, topic, 0, [b"1"])
            assert fetch(cnc, leader, topic, 0, 0, cnc.metadata.cluster.topic_id(topic)) == [b"1"]
        finally:
            cnc.close()


@pytest.mark.integration
def test_tls_wrong_ca(broker: Any, pki: Pki) -> None:
    with proxy_for(broker, pki, pki.server_cert, pki.server_key) as proxy:
        cnc = tls_client(f"localhost:{proxy.port}", pki, ca=pki.other_ca)
        try:
            assert_fails_without_storm(cnc, proxy, "certificate verify failed|unable to get")
        finally:
            cnc.close()


@pytest.mark.integration
def test_tls_expired_certificate(broker: Any, pki: Pki) -> None:
    with proxy_for(broker, pki, pki.expired_cert, pki.expired_key) as proxy:
        cnc = tls_client(f"localhost:{proxy.port}", pki)
        try:
            assert_fails_without_storm(cnc, proxy, "expired")
        finally:
            cnc.close()


@pytest.mark.integration
def test_tls_hostname_mismatch(broker: Any, pki: Pki) -> None:
    with proxy_for(broker, pki, pki.wronghost_cert, pki.wronghost_key) as proxy:
        cnc = tls_client(f"localhost:{proxy.port}", pki)
        try:
            assert_fails_without_storm(cnc, proxy, "[Hh]ostname mismatch|doesn't match")
        finally:
            cnc.close()
        # With the host-name check off (ssl.endpoint.identification.algorithm=""), the same
        # certificate is accepted: the chain is still verified.
        lax = tls_client(
            f"localhost:{proxy.port}", pki, extra={"ssl.endpoint.identification.algorithm": ""}
        )
        try:
            assert lax.await_ready(-1, 10_000)
        finally:
            lax.close()


@pytest.mark.integration
def test_tls_client_certificate(broker: Any, pki: Pki) -> None:
    with proxy_for(broker, pki, pki.server_cert, pki.server_key, client_ca=pki.ca) as proxy:
        good = tls_client(
            f"127.0.0.1:{proxy.port}",
            pki,
            extra={
                "ssl.keystore.location": pki.client_cert,
                "ssl.key.location": pki.client_key,
                "ssl.key.password": pki.client_key_password,
            },
        )
        try:
            good.await_metadata_update(10_000)
        finally:
            good.close()
        anonymous = tls_client(f"127.0.0.1:{proxy.port}", pki)
        try:
            # With TLS 1.3 the server rejects the missing certificate after the client's side
            # of the handshake is done: the client reads the alert (SslAuthenticationError) or,
            # when the server's reset overtakes it, just a broken connection.
            with pytest.raises((SslAuthenticationError, KafkaTimeoutError)):
                anonymous.await_metadata_update(3000)
            wait_for(
                lambda: proxy.handshake_failures >= 1,
                timeout=5,
                message="the proxy to see the failed handshake",
            )
            assert anonymous.metadata is not None
            assert not anonymous.metadata.cluster.brokers()
        finally:
            anonymous.close()


def test_user_supplied_context_and_bad_settings(pki: Pki) -> None:
    ctx = ssl.create_default_context()
    assert build_ssl_context({"ssl.context": ctx}) is ctx
    with pytest.raises(ConfigError, match="ssl.context"):
        build_ssl_context({"ssl.context": "nope"})
    with pytest.raises(ConfigError, match="no such file"):
        build_ssl_context({"ssl.truststore.location": "/nonexistent/ca.pem"})
    with pytest.raises(ConfigError, match="ssl.key.password"):
        build_ssl_context(
            {
                "ssl.truststore.location": pki.ca,
                "ssl.keystore.location": pki.client_cert,
                "ssl.key.location": pki.client_key,
                "ssl.key.password": "wrong-pw",
            }
        )
    with pytest.raises(ConfigError, match="not supported"):
        build_ssl_context({"ssl.endpoint.identification.algorithm": "ldap"})
    strict = build_ssl_context({"ssl.truststore.location": pki.ca})
    assert strict.check_hostname and strict.verify_mode == ssl.CERT_REQUIRED
    with open(pki.ca) as fh:
        pem = fh.read()
    inline = build_ssl_context(
        {"ssl.truststore.certificates": pem, "ssl.endpoint.identification.algorithm": ""}
    )
    assert not inline.check_hostname and inline.verify_mode == ssl.CERT_REQUIRED


def test_password_not_in_key_error(pki: Pki) -> None:
    with pytest.raises(ConfigError) as info:
        build_ssl_context(
            {
                "ssl.truststore.location": pki.ca,
                "ssl.keystore.location": pki.client_cert,
                "ssl.key.location": pki.client_key,
                "ssl.key.password": "topsecret-xyz",
            }
        )
    assert "topsecret-xyz" not in str(info.value)


def test_sasl_ssl_through_tls_proxy_to_fake_broker(pki: Pki) -> None:
    from tests.support.fake_broker import FakeCluster

    with FakeCluster(sasl_mechanisms=["SCRAM-SHA-512"]) as cluster:
        from tests.network.scram_server import ScramServer

        servers: list[ScramServer] = []

        def scram(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
            token = bytes(body["auth_bytes"])
            if token.startswith(b"n,,"):
                servers.append(ScramServer("sha512", "pw-over-tls"))
                return {"error_code": 0, "auth_bytes": servers[-1].first(token)}
            ok, final = servers[-1].final(token)
            return {
                "error_code": 0 if ok else 58,
                "auth_bytes": final if ok else b"",
                "error_message": None if ok else "bad credentials",
            }

        cluster.on(ApiKey.SASL_AUTHENTICATE, scram)
        with TlsProxy(
            "127.0.0.1", cluster.brokers[0].port, pki.server_cert, pki.server_key
        ) as proxy:
            cnc = tls_client(
                f"localhost:{proxy.port}",
                pki,
                with_metadata=False,
                extra={
                    "security.protocol": "SASL_SSL",
                    "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "tls-user",
                    "sasl.password": "pw-over-tls",
                },
            )
            try:
                assert cnc.await_ready(-1, 10_000)
                fut = cnc.send(-1, ApiKey.METADATA, {"topics": None})
                cnc.poll(timeout_ms=10_000, future=fut)
                assert fut.succeeded()
                assert proxy.handshakes == 1 and len(servers) == 1
            finally:
                cnc.close()


@pytest.mark.parametrize(
    ("protocol", "newest"),
    [
        ("TLSv1.3", ssl.TLSVersion.TLSv1_3),
        ("TLS", ssl.TLSVersion.TLSv1_3),
        ("TLSv1.2", ssl.TLSVersion.TLSv1_2),
    ],
)
def test_ssl_protocol_bounds_the_newest_tls_version(
    pki: Pki, protocol: str, newest: ssl.TLSVersion
) -> None:
    # As Java's SSLContext.getInstance(ssl.protocol): TLSv1.2 never uses TLSv1.3 even when
    # ssl.enabled.protocols (TLSv1.2,TLSv1.3 by default) lists it.
    config = ConsumerConfig(
        {"bootstrap.servers": "h:1", "ssl.truststore.location": pki.ca, "ssl.protocol": protocol}
    )
    ctx = build_ssl_context(config)
    assert ctx.maximum_version == newest
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2


def test_ssl_protocol_leaving_no_enabled_version_is_refused(pki: Pki) -> None:
    config = ConsumerConfig(
        {
            "bootstrap.servers": "h:1",
            "ssl.truststore.location": pki.ca,
            "ssl.protocol": "TLSv1.2",
            "ssl.enabled.protocols": "TLSv1.3",
        }
    )
    with pytest.raises(ConfigError, match=r"ssl\.protocol=TLSv1\.2 leaves none"):
        build_ssl_context(config)
