"""Rebootstrap on the scripted fake broker: the cluster check in ApiVersions v5, the broker's
REBOOTSTRAP_REQUIRED (to ApiVersions and at the top of a Metadata v13 response), every known
broker unreachable, and the metadata.recovery.rebootstrap.trigger.ms timer."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.protocol import ApiKey
from tests.network.conftest import Factory
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

REBOOTSTRAP_REQUIRED = 129


def count_rebootstraps(cnc: ConsumerNetworkClient) -> list[int]:
    """Record each rebootstrap of ``cnc``'s metadata (the cluster's broker count before it)."""
    md = cnc.metadata
    assert md is not None
    seen: list[int] = []
    original = md.rebootstrap

    def rebootstrap() -> None:
        seen.append(len(md.cluster.brokers()))
        original()

    md.rebootstrap = rebootstrap  # type: ignore[method-assign]  # the test watches the calls
    return seen


def poll_until(cnc: ConsumerNetworkClient, done: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "condition not reached in time"
        cnc.poll(timeout_ms=50)


def bootstrapped(make_client: Factory, cluster: FakeCluster, **config: Any) -> Any:
    cnc = make_client(cluster.bootstrap_servers, config or None)
    assert cnc.metadata is not None
    cnc.metadata.set_topics(["t"])
    cnc.await_metadata_update(5000)
    assert cnc.metadata.cluster.cluster_id == cluster.cluster_id
    return cnc


def api_versions_to(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [body for _, body in cluster.requests(ApiKey.API_VERSIONS)]


def reconnect_for_metadata(cnc: ConsumerNetworkClient, cluster: FakeCluster) -> None:
    """Drop every connection and ask for metadata: the client reconnects to a known broker."""
    cluster.clear_requests()
    cluster.close_connections()
    assert cnc.metadata is not None
    cnc.metadata.request_update()


def test_api_versions_names_cluster_and_node_of_known_brokers(make_client: Factory) -> None:
    """A connection to a broker of the metadata sends ApiVersions v5 with the cluster id and
    the node id; the bootstrap connection, with nothing known yet, sends neither."""
    with FakeCluster(n_brokers=2, topics={"t": 2}) as cluster:
        cnc = bootstrapped(make_client, cluster)
        first = api_versions_to(cluster)[0]
        assert first["cluster_id"] is None and first["node_id"] == -1
        reconnect_for_metadata(cnc, cluster)
        poll_until(cnc, lambda: bool(api_versions_to(cluster)))
        cnc.await_metadata_update(5000)
        sent = [
            (h.api_version, b["cluster_id"], b["node_id"])
            for h, b in cluster.requests(ApiKey.API_VERSIONS)
        ]
        assert sent and all(v == 5 and c == "fake-cluster" and n in (0, 1) for v, c, n in sent)
        # The broker found itself named: the connection works.
        assert cnc.metadata is not None and len(cnc.metadata.cluster.brokers()) == 2


@pytest.mark.parametrize(
    "config",
    [
        {"metadata.cluster.check.enable": False},
        {"metadata.recovery.strategy": "none"},
    ],
    ids=["check-off", "strategy-none"],
)
def test_no_cluster_check_when_off(make_client: Factory, config: dict[str, Any]) -> None:
    """With the check off, or with strategy none, ApiVersions names no cluster."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster, **config)
        reconnect_for_metadata(cnc, cluster)
        cnc.await_metadata_update(5000)
        bodies = api_versions_to(cluster)
        assert bodies and all(b["cluster_id"] is None and b["node_id"] == -1 for b in bodies)


def test_no_cluster_check_to_brokers_without_api_versions_v5(make_client: Factory) -> None:
    """A cluster whose brokers advertise ApiVersions up to v4 gets no cluster check (a v5 request
    naming a cluster is dropped by some such brokers)."""
    from kafkaconsumer.protocol import SUPPORTED_VERSIONS

    with FakeCluster(
        topics={"t": 1}, api_versions={**SUPPORTED_VERSIONS, ApiKey.API_VERSIONS: (0, 4)}
    ) as cluster:
        cnc = bootstrapped(make_client, cluster)
        reconnect_for_metadata(cnc, cluster)
        cnc.await_metadata_update(5000)
        sent = [(h.api_version, b["cluster_id"]) for h, b in cluster.requests(ApiKey.API_VERSIONS)]
        # The first request of a connection tries v5 (with nothing to check), then v4.
        assert (4, None) in sent and all(c is None for _, c in sent)


def test_other_cluster_at_a_known_address_rebootstraps(
    make_client: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    """When another cluster answers at a known broker's address, the broker refuses the
    connection with REBOOTSTRAP_REQUIRED and the client starts again from bootstrap.servers,
    ending up with the new cluster's metadata."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster)
        rebootstraps = count_rebootstraps(cnc)
        cluster.cluster_id = "another-cluster"
        caplog.set_level(logging.INFO, logger="kafkaconsumer")
        reconnect_for_metadata(cnc, cluster)
        assert cnc.metadata is not None
        poll_until(cnc, lambda: cnc.metadata.cluster.cluster_id == "another-cluster")
        assert rebootstraps and rebootstraps[0] == 1
        refused = [b for b in api_versions_to(cluster) if b["cluster_id"] == "fake-cluster"]
        assert refused and refused[0]["node_id"] == 0
        assert any("REBOOTSTRAP_REQUIRED" in r.getMessage() for r in caplog.records)
        # The connection to the broker works again under the new cluster id.
        cluster.clear_requests()
        cluster.close_connections()
        cnc.metadata.request_update()
        cnc.await_metadata_update(5000)
        assert all(b["cluster_id"] in (None, "another-cluster") for b in api_versions_to(cluster))


def test_other_node_at_a_known_address_rebootstraps(make_client: Factory) -> None:
    """The same cluster with another node id behind a known address (the broker checks the node
    id too): the client rebootstraps and learns the new node id."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster)
        rebootstraps = count_rebootstraps(cnc)
        broker = cluster.broker(0)
        broker.node_id = 7
        with cluster._lock:  # noqa: SLF001 - move the partition to the renamed node
            for topic in cluster._topics.values():  # noqa: SLF001
                for p in topic.partitions:
                    p.leader = 7
        reconnect_for_metadata(cnc, cluster)
        assert cnc.metadata is not None
        poll_until(cnc, lambda: [b.node_id for b in cnc.metadata.cluster.brokers()] == [7])
        assert rebootstraps


def test_rebootstrap_required_in_metadata_response(make_client: Factory) -> None:
    """REBOOTSTRAP_REQUIRED at the top of a Metadata response makes the client rebootstrap."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster)
        rebootstraps = count_rebootstraps(cnc)
        cluster.fail(ApiKey.METADATA, REBOOTSTRAP_REQUIRED)
        assert cnc.metadata is not None
        version = cnc.metadata.update_version
        cnc.metadata.request_update()
        poll_until(cnc, lambda: bool(rebootstraps))
        assert rebootstraps == [1]
        # The next Metadata answer (through bootstrap.servers) restores the cluster view.
        poll_until(cnc, lambda: cnc.metadata.update_version > version)
        assert len(cnc.metadata.cluster.brokers()) == 1
        assert cluster.requests(ApiKey.METADATA)[-1][0].api_version == 13


def test_rebootstrap_required_in_metadata_ignored_with_strategy_none(
    make_client: Factory,
) -> None:
    """With strategy none, a REBOOTSTRAP_REQUIRED Metadata answer (naming no broker) is a failed
    refresh: the cluster view stays and the next refresh succeeds."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster, **{"metadata.recovery.strategy": "none"})
        rebootstraps = count_rebootstraps(cnc)
        cluster.fail(ApiKey.METADATA, REBOOTSTRAP_REQUIRED)
        assert cnc.metadata is not None
        version = cnc.metadata.update_version
        cnc.metadata.request_update()
        poll_until(cnc, lambda: len(cluster.requests(ApiKey.METADATA)) >= 3)
        poll_until(cnc, lambda: cnc.metadata.update_version > version)
        assert not rebootstraps
        assert len(cnc.metadata.cluster.brokers()) == 1


def test_every_known_broker_unreachable_rebootstraps(make_client: Factory) -> None:
    """With every broker of the metadata down and backing off, the client drops the cluster
    view and goes back to bootstrap.servers; when the broker is back, metadata returns."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster)
        rebootstraps = count_rebootstraps(cnc)
        cluster.kill(0)
        assert cnc.metadata is not None
        cnc.metadata.request_update()
        poll_until(cnc, lambda: bool(rebootstraps))
        assert rebootstraps[0] == 1
        assert cnc.client.nodes() == [-1]  # back to bootstrap.servers
        cluster.restart(0)
        poll_until(cnc, lambda: bool(cnc.metadata.cluster.brokers()))
        assert cnc.client.nodes() == [0]


def test_every_known_broker_unreachable_with_strategy_none(make_client: Factory) -> None:
    """With strategy none the client keeps the brokers it knows and keeps trying them."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(make_client, cluster, **{"metadata.recovery.strategy": "none"})
        rebootstraps = count_rebootstraps(cnc)
        cluster.kill(0)
        assert cnc.metadata is not None
        cnc.metadata.request_update()
        poll_until(cnc, lambda: cnc.client.connection_attempts(0) >= 3)
        assert not rebootstraps
        assert cnc.client.nodes() == [0]


def test_trigger_timer_rebootstraps_when_metadata_never_comes(make_client: Factory) -> None:
    """A refresh left unanswered (the connection stays up) for longer than
    metadata.recovery.rebootstrap.trigger.ms rebootstraps the client."""
    with FakeCluster(topics={"t": 1}) as cluster:
        cnc = bootstrapped(
            make_client, cluster, **{"metadata.recovery.rebootstrap.trigger.ms": 200}
        )
        rebootstraps = count_rebootstraps(cnc)
        cluster.script(ApiKey.METADATA, [Reply({}, delay_s=20)])
        assert cnc.metadata is not None
        cnc.metadata.request_update()
        poll_until(cnc, lambda: len(cluster.requests(ApiKey.METADATA)) >= 2)
        poll_until(cnc, lambda: bool(rebootstraps))
        assert rebootstraps == [1]


def test_rebootstrap_looks_the_bootstrap_name_up_again(
    make_client: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bootstrap.servers is a name: when every broker it led to is gone, the rebootstrap
    connects through the name again, which now leads to another cluster."""
    import socket

    real_getaddrinfo = socket.getaddrinfo
    with FakeCluster(topics={"t": 1}) as a, FakeCluster(topics={"t": 1}, cluster_id="b") as b:
        target = {"port": a.brokers[0].port}

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host in (b"kafka.test", "kafka.test"):
                return real_getaddrinfo("127.0.0.1", target["port"], *args, **kwargs)
            return real_getaddrinfo(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        cnc = make_client("kafka.test:9092")
        md = cnc.metadata
        assert md is not None
        md.set_topics(["t"])
        cnc.await_metadata_update(5000)
        assert md.cluster.cluster_id == "fake-cluster"
        rebootstraps = count_rebootstraps(cnc)
        target["port"] = b.brokers[0].port
        a.kill(0)
        md.request_update()
        poll_until(cnc, lambda: md.cluster.cluster_id == "b")
        assert rebootstraps == [1]
        broker = md.cluster.broker(0)
        assert broker is not None and broker.port == b.brokers[0].port
