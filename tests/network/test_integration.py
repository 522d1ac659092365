"""The network client against a real broker, directly and through the fault proxy.

Every test here talks only through the standard protocol and passes on Apache Kafka too. The
fault tests put :class:`~benchmarks.harness.proxy.FaultProxy` in front of the session broker's
bootstrap address and use the bootstrap (pseudo) node only, so they need no broker set-up.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from benchmarks.harness.proxy import FaultProxy
from kafkaconsumer.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    WakeupError,
)
from kafkaconsumer.network.client import NetworkClient, coordinator_node_id
from kafkaconsumer.network.client_utils import parse_bootstrap_servers
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from tests.helpers import network_settings, unique_name
from tests.network.conftest import Factory
from tests.network.kafka_ops import any_node, create_topic, fetch, produce, request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def broker_address(broker: Any) -> tuple[str, int]:
    return parse_bootstrap_servers(broker.bootstrap_servers)[0]


@pytest.fixture
def proxy(broker: Any) -> Any:
    host, port = broker_address(broker)
    with FaultProxy(host, port) as p:
        yield p


def bootstrap_only(proxy: FaultProxy, **config: Any) -> ConsumerNetworkClient:
    """A client whose only node is the proxy (no metadata: node -1 stays the target)."""
    cfg: dict[str, Any] = {
        "bootstrap.servers": proxy.address,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 200,
    }
    cfg.update({k.replace("_", "."): v for k, v in config.items()})
    return ConsumerNetworkClient(NetworkClient(network_settings(cfg)))


def api_versions(cnc: ConsumerNetworkClient, timeout_ms: int = 10_000) -> Future[Any]:
    fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
    cnc.poll(timeout_ms=timeout_ms, future=fut)
    assert fut.is_done
    return fut


def test_connect_negotiate_and_metadata(broker: Any, make_client: Factory) -> None:
    cnc = make_client(broker.bootstrap_servers)
    topic = unique_name("net-md")
    create_topic(cnc, topic, 3)
    assert cnc.metadata is not None
    cnc.metadata.set_topics([topic])
    deadline = time.monotonic() + 20
    while len(cnc.metadata.cluster.partitions_for_topic(topic) or []) < 3:
        assert time.monotonic() < deadline, "topic never showed up in metadata"
        cnc.await_metadata_update(5000)
    cluster = cnc.metadata.cluster
    assert cluster.brokers()
    tp = TopicPartition(topic, 0)
    leader = cluster.leader_for(tp)
    assert leader is not None and cluster.broker(leader) is not None
    assert cnc.await_ready(leader, 10_000)
    assert cnc.api_version(leader, ApiKey.METADATA) is not None


def test_metadata_sees_topic_created_later(broker: Any, make_client: Factory) -> None:
    cnc = make_client(broker.bootstrap_servers, allow_auto_create_topics=False, retry_backoff_ms=50)
    topic = unique_name("net-late")
    assert cnc.metadata is not None
    cnc.metadata.set_topics([topic])
    cnc.await_metadata_update(10_000)
    assert cnc.metadata.cluster.partitions_for_topic(topic) is None
    assert isinstance(cnc.metadata.topic_error(topic), UnknownTopicOrPartitionError)
    create_topic(cnc, topic, 2)
    deadline = time.monotonic() + 20
    while cnc.metadata.cluster.partitions_for_topic(topic) is None:
        assert time.monotonic() < deadline
        cnc.await_metadata_update(5000)
    assert len(cnc.metadata.cluster.partitions_for_topic(topic) or []) == 2
    assert cnc.metadata.topic_error(topic) is None


def test_metadata_sees_added_partitions(broker: Any, make_client: Factory) -> None:
    cnc = make_client(broker.bootstrap_servers)
    topic = unique_name("net-grow")
    create_topic(cnc, topic, 1)
    assert cnc.metadata is not None
    cnc.metadata.set_topics([topic])
    cnc.await_metadata_update(10_000)
    node = cnc.least_loaded_node()
    assert node is not None and cnc.await_ready(node, 10_000)
    if cnc.api_version(node, ApiKey.CREATE_PARTITIONS) is None:
        pytest.skip("the broker has no CreatePartitions (covered with the fake broker)")
    resp = request(
        cnc,
        node,
        ApiKey.CREATE_PARTITIONS,
        {
            "topics": [{"name": topic, "count": 3, "assignments": None}],
            "timeout_ms": 10_000,
            "validate_only": False,
        },
    )
    assert resp["results"][0]["error_code"] == 0
    deadline = time.monotonic() + 20
    while len(cnc.metadata.cluster.partitions_for_topic(topic) or []) < 3:
        assert time.monotonic() < deadline
        cnc.await_metadata_update(5000)


def test_latency_is_tolerated_within_request_timeout(proxy: FaultProxy) -> None:
    proxy.set_latency(150)
    slow = bootstrap_only(proxy, request_timeout_ms=5000)
    tight = bootstrap_only(proxy, request_timeout_ms=250)
    try:
        assert api_versions(slow).succeeded()
        # The connection's own ApiVersions round trip takes 300 ms: longer than 250 ms.
        fut = api_versions(tight, timeout_ms=3000)
        assert isinstance(fut.exception, KafkaTimeoutError)
    finally:
        slow.close()
        tight.close()


def test_black_hole_times_out_then_reconnects_after_heal(proxy: FaultProxy) -> None:
    cnc = bootstrap_only(proxy, request_timeout_ms=500)
    try:
        assert api_versions(cnc).succeeded()
        accepted = proxy.accepted
        proxy.black_hole()
        fut = api_versions(cnc)
        assert isinstance(fut.exception, KafkaTimeoutError)
        proxy.restore()
        deadline = time.monotonic() + 10
        while True:
            fut = api_versions(cnc)
            if fut.succeeded():
                break
            assert time.monotonic() < deadline, f"never recovered: {fut.exception!r}"
        assert proxy.accepted > accepted  # a new connection served it
    finally:
        cnc.close()


def test_connection_reset_mid_response(proxy: FaultProxy) -> None:
    cnc = bootstrap_only(proxy)
    try:
        assert api_versions(cnc).succeeded()
        proxy.cut_mid_response(after_bytes=6)
        fut = cnc.send(-1, ApiKey.METADATA, {"topics": None})
        cnc.poll(timeout_ms=10_000, future=fut)
        assert isinstance(fut.exception, KafkaConnectionError)
        deadline = time.monotonic() + 10
        while not (fut := api_versions(cnc)).succeeded():
            assert time.monotonic() < deadline
    finally:
        cnc.close()


def test_cut_and_refused_connections_recover(proxy: FaultProxy) -> None:
    cnc = bootstrap_only(proxy)
    try:
        assert api_versions(cnc).succeeded()
        proxy.cut()  # reset the open connection while it is idle
        conn = cnc.client.connection(-1)
        assert conn is not None
        deadline = time.monotonic() + 10
        while not conn.is_disconnected:
            assert time.monotonic() < deadline, "the reset was never noticed"
            cnc.poll(50)
        proxy.refuse()
        fut = api_versions(cnc)
        assert isinstance(fut.exception, KafkaConnectionError)
        proxy.restore()
        while not (fut := api_versions(cnc)).succeeded():
            assert time.monotonic() < deadline
    finally:
        cnc.close()


def test_corrupted_response_closes_connection_and_metadata_retries(broker: Any) -> None:
    host, port = broker_address(broker)
    with FaultProxy(host, port) as p:
        cfg = {"bootstrap.servers": p.address, "retry.backoff.ms": 20, "reconnect.backoff.ms": 20}
        from kafkaconsumer.metadata import ConsumerMetadata

        md = ConsumerMetadata(cfg)
        cnc = ConsumerNetworkClient(NetworkClient(network_settings(cfg), metadata=md), md)
        try:
            # Connect (ApiVersions done) before garbling: the first Metadata answer, from the
            # bootstrap node behind the proxy, is then the one corrupted after its header.
            assert cnc.await_ready(-1, 10_000)
            before = p.accepted
            p.corrupt_next_response()
            cnc.await_metadata_update(10_000)
            assert md.cluster.brokers()
            assert p.accepted > before  # the retry used a new connection
        finally:
            cnc.close()


def test_nothing_listening_times_out_without_spinning() -> None:
    from kafkaconsumer.embedded import free_port

    port = free_port()
    cfg = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 1000,
    }
    from kafkaconsumer.metadata import ConsumerMetadata

    md = ConsumerMetadata(cfg)
    cnc = ConsumerNetworkClient(NetworkClient(network_settings(cfg), metadata=md), md)
    try:
        cpu0, wall0 = time.process_time(), time.monotonic()
        with pytest.raises(KafkaTimeoutError):
            cnc.await_metadata_update(5000)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        assert wall < 8.0, f"took {wall:.1f} s for a 5 s bound"
        assert cpu < 0.5, f"spent {cpu:.2f} s CPU while backing off for {wall:.1f} s"
        # Exponential backoff: far fewer attempts than 5 s / 50 ms.
        assert cnc.client.connection_attempts(-1) <= 12
    finally:
        cnc.close()


def test_wakeup_interrupts_blocked_poll(proxy: FaultProxy) -> None:
    cnc = bootstrap_only(proxy)
    try:
        assert api_versions(cnc).succeeded()
        woke: list[float] = []

        def waker() -> None:
            time.sleep(0.3)  # let the main thread block in poll first
            woke.append(time.monotonic())
            cnc.wakeup()

        t = threading.Thread(target=waker)
        t.start()
        start = time.monotonic()
        with pytest.raises(WakeupError):
            cnc.poll(timeout_ms=20_000)
        raised = time.monotonic()
        t.join(5)
        assert woke and raised - start < 10
        # A behavioural bound (the brief's 100 ms), asserted generously.
        assert raised - woke[0] < 1.0
        cnc.poll(timeout_ms=0)  # the wake-up was consumed
    finally:
        cnc.close()


def test_fifty_connections_one_selector_one_thread(broker: Any) -> None:
    host, port = broker_address(broker)
    with FaultProxy(host, port, listeners=50) as p:
        threads_before = threading.active_count()
        cfg = {"bootstrap.servers": ",".join(p.addresses)}
        cnc = ConsumerNetworkClient(NetworkClient(network_settings(cfg)))
        try:
            nodes = [n for n, _, _ in cnc.client.bootstrap_nodes]
            assert len(nodes) == 50
            futures = [cnc.send(n, ApiKey.API_VERSIONS, {}) for n in nodes]
            deadline = time.monotonic() + 30
            while not all(f.is_done for f in futures):
                assert time.monotonic() < deadline
                cnc.poll(200)
            assert all(f.succeeded() for f in futures), [
                f.exception for f in futures if f.failed()
            ][:3]
            assert p.accepted == 50
            assert cnc.client.selector_fd_count() == 51  # 50 brokers + the wake-up socket
            assert threading.active_count() == threads_before
        finally:
            cnc.close()


def test_produce_and_fetch_round_trip(broker: Any, make_client: Factory) -> None:
    cnc = make_client(broker.bootstrap_servers)
    topic = unique_name("net-rt")
    create_topic(cnc, topic, 1)
    assert cnc.metadata is not None
    cnc.metadata.set_topics([topic])
    tp = TopicPartition(topic, 0)
    deadline = time.monotonic() + 20
    while cnc.metadata.cluster.leader_for(tp) is None:
        assert time.monotonic() < deadline
        cnc.await_metadata_update(5000)
    leader = cnc.metadata.cluster.leader_for(tp)
    assert leader is not None and cnc.await_ready(leader, 10_000)
    produce(cnc, leader, topic, 0, [b"a", b"b", b"c"])
    values = fetch(cnc, leader, topic, 0, 0, cnc.metadata.cluster.topic_id(topic))
    assert values == [b"a", b"b", b"c"]


# ---------------------------------------------------------------- group coordinator connection


def _find_coordinator(cnc: ConsumerNetworkClient, group: str) -> int:
    """The broker id of ``group``'s coordinator (retrying while the broker is still loading)."""
    deadline = time.monotonic() + 20
    while True:
        node = any_node(cnc)
        version = cnc.api_version(node, ApiKey.FIND_COORDINATOR) or 0
        body: dict[str, Any] = (
            {"key_type": 0, "coordinator_keys": [group]}
            if version >= 4
            else {"key_type": 0, "key": group}
        )
        resp = request(cnc, node, ApiKey.FIND_COORDINATOR, body)
        entry = (resp.get("coordinators") or [resp])[0]
        if entry["error_code"] == 0:
            return int(entry["node_id"])
        assert time.monotonic() < deadline, f"FindCoordinator failed: {entry['error_code']}"
        cnc.poll(timeout_ms=100)  # COORDINATOR_NOT_AVAILABLE while the offsets topic is made


def _join_group(
    cnc: ConsumerNetworkClient, node: int, group: str, metadata: bytes, member_id: str = ""
) -> Future[Any]:
    # Session and rebalance timeouts of 6 s: the broker holds a rebalance (and a JoinGroup
    # waiting on it) for up to that long, and 6 s is Kafka's group.min.session.timeout.ms.
    return cnc.send(
        node,
        ApiKey.JOIN_GROUP,
        {
            "group_id": group,
            "session_timeout_ms": 6000,
            "rebalance_timeout_ms": 6000,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": metadata}],
            "reason": None,
        },
        timeout_ms=30_000,
    )


def _join_answer(cnc: ConsumerNetworkClient, node: int, group: str, metadata: bytes) -> Future[Any]:
    """Send JoinGroup; when the broker asks for a member id first (KIP-394), send it again
    with that id and return the second request's future (not waited for)."""
    fut = _join_group(cnc, node, group, metadata)
    cnc.poll(timeout_ms=20_000, future=fut)
    assert fut.succeeded(), fut.exception
    if fut.value["error_code"] == 79:  # MEMBER_ID_REQUIRED
        return _join_group(cnc, node, group, metadata, fut.value["member_id"])
    return fut


def test_group_requests_use_their_own_connection(broker: Any, make_client: Factory) -> None:
    """A JoinGroup the broker holds during a rebalance does not hold up fetches: group
    requests travel on the coordinator connection (id 2**31 - 1 - broker id), a socket of
    their own, and a broker answers each connection's requests in order."""
    from kafkaconsumer.internals.consumer_protocol import (
        Assignment,
        Subscription,
        encode_assignment,
        encode_subscription,
    )

    cnc = make_client(broker.bootstrap_servers)
    topic, group = unique_name("net-coord"), unique_name("net-coord-group")
    create_topic(cnc, topic, 1)
    assert cnc.metadata is not None
    cnc.metadata.set_topics([topic])
    tp = TopicPartition(topic, 0)
    deadline = time.monotonic() + 20
    while cnc.metadata.cluster.leader_for(tp) is None:
        assert time.monotonic() < deadline, "no leader for the topic"
        cnc.await_metadata_update(5000)
    leader = cnc.metadata.cluster.leader_for(tp)
    assert leader is not None and cnc.await_ready(leader, 10_000)
    produce(cnc, leader, topic, 0, [b"a", b"b", b"c"])
    topic_id = cnc.metadata.cluster.topic_id(topic)

    coordinator = coordinator_node_id(_find_coordinator(cnc, group))
    assert cnc.client.node_address(coordinator) is not None
    assert cnc.await_ready(coordinator, 10_000)

    # Member A joins and syncs: the group is stable with one member.
    meta = encode_subscription(Subscription(topics=[topic]))
    join_a = _join_answer(cnc, coordinator, group, meta)
    cnc.poll(timeout_ms=20_000, future=join_a)
    assert join_a.succeeded() and join_a.value["error_code"] == 0, join_a.value
    a = join_a.value
    sync = cnc.send(
        coordinator,
        ApiKey.SYNC_GROUP,
        {
            "group_id": group,
            "generation_id": a["generation_id"],
            "member_id": a["member_id"],
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [
                {
                    "member_id": a["member_id"],
                    "assignment": encode_assignment(Assignment(partitions=[tp])),
                }
            ],
        },
    )
    cnc.poll(timeout_ms=20_000, future=sync)
    assert sync.succeeded() and sync.value["error_code"] == 0, sync.value

    # Member B joins: a rebalance starts, and B's JoinGroup is held until A rejoins (it never
    # does here) or A's rebalance/session timeout ends it, seconds from now.
    join_b = _join_answer(cnc, coordinator, group, meta)
    cnc.poll(timeout_ms=200, future=join_b)
    assert not join_b.is_done, "the broker answered the second member's JoinGroup at once"

    # Meanwhile fetches on the broker's own connection are answered.
    plain, group_conn = cnc.client.connection(leader), cnc.client.connection(coordinator)
    assert plain is not None and group_conn is not None and plain is not group_conn
    assert plain.sock is not None and group_conn.sock is not None
    assert plain.sock.getsockname() != group_conn.sock.getsockname()
    for _ in range(3):
        assert fetch(cnc, leader, topic, 0, 0, topic_id) == [b"a", b"b", b"c"]
    assert not join_b.is_done, "the JoinGroup was no longer held: nothing was shown"
    cnc.poll(timeout_ms=30_000, future=join_b)  # let the broker finish the round
    assert join_b.is_done
