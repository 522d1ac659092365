"""Unit tests of the network layer without a real broker: futures, configuration, backoff,
partial reads, big frames, idle connections, node choice, several DNS addresses, wake-ups."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from kafkaconsumer.embedded import free_port
from kafkaconsumer.errors import (
    ConfigError,
    KafkaConnectionError,
    KafkaProtocolError,
    KafkaTimeoutError,
    NodeNotReadyError,
    WakeupError,
)
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.client import NetworkClient, coordinator_node_id
from kafkaconsumer.network.client_utils import parse_bootstrap_servers
from kafkaconsumer.network.connection import ConnectionState
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, decode_request, encode_response
from kafkaconsumer.protocol.message_types import MetadataResponse
from tests.helpers import network_settings
from tests.network.conftest import Factory
from tests.support.fake_broker import FakeCluster

pytestmark = pytest.mark.timeout(60)


# ------------------------------------------------------------------------------- Future


def test_future_callbacks_and_states() -> None:
    seen: list[Any] = []
    f: Future[int] = Future()
    f.add_callback(seen.append).add_errback(lambda e: seen.append(("err", e)))
    assert not f.is_done and not f.succeeded() and not f.failed()
    f.success(5)
    assert f.is_done and f.succeeded() and f.value == 5 and seen == [5]
    f.add_callback(lambda v: seen.append(v * 2))  # already done: runs at once
    assert seen == [5, 10]
    with pytest.raises(RuntimeError):
        f.success(6)
    g: Future[int] = Future()
    g.add_errback(lambda e: seen.append(type(e)))
    g.failure(KafkaTimeoutError("t"))
    assert g.failed() and g.retriable() and seen[-1] is KafkaTimeoutError
    with pytest.raises(RuntimeError):
        _ = g.value
    h: Future[int] = Future()
    chained: Future[int] = Future()
    h.chain(chained)
    h.success(1)
    assert chained.value == 1


def test_a_failing_future_callback_is_logged_at_error_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A bug in a response handler is never silent: ERROR with the traceback, and the other
    # callbacks of the future still run (the network loop goes on).
    seen: list[int] = []

    def buggy(value: int) -> None:
        raise KeyError("partition_index")

    f: Future[int] = Future()
    f.add_callback(buggy).add_callback(seen.append)
    with caplog.at_level(logging.ERROR, logger="kafkaconsumer.network.future"):
        f.success(7)
    assert seen == [7]
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.exc_info is not None and isinstance(record.exc_info[1], KeyError)


def test_future_wait_from_another_thread() -> None:
    f: Future[str] = Future()
    threading.Timer(0.05, lambda: f.success("done")).start()
    assert f.wait(5)
    assert f.value == "done"


def test_failing_callback_does_not_break_completion() -> None:
    f: Future[int] = Future()
    seen: list[int] = []
    f.add_callback(lambda v: 1 / 0)
    f.add_callback(seen.append)
    f.success(3)
    assert seen == [3]


# ------------------------------------------------------------------------------- config


def test_bootstrap_parsing() -> None:
    assert parse_bootstrap_servers("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap_servers(["[::1]:9092", "SSL://h:9093"]) == [("::1", 9092), ("h", 9093)]
    for bad in ("nohost", "h:0", "h:x", "", "h:70000"):
        with pytest.raises(ConfigError):
            parse_bootstrap_servers(bad)


@pytest.mark.parametrize(
    "config,match",
    [
        ({"security.protocol": "TLS"}, "security.protocol"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"},
            "OAUTHBEARER needs",
        ),
        ({"client.dns.lookup": "magic"}, "client.dns.lookup"),
        ({"request.timeout.ms": 0}, "request.timeout.ms"),
    ],
)
def test_bad_configuration_is_rejected(config: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        NetworkClient(network_settings({"bootstrap.servers": "localhost:9092", **config}))


# ------------------------------------------------------------------------------- backoff


def test_reconnect_backoff_grows_exponentially_with_jitter() -> None:
    from tests.support.mock_time import MockTime

    port = free_port()
    clock = MockTime(start_ms=1_000_000)  # only moves when told: the delays read exactly
    client = NetworkClient(
        network_settings(
            {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 400,
            }
        ),
        time=clock,
    )
    try:
        delays = []
        for _ in range(6):
            clock.advance(client.connection_delay(-1))
            assert client.can_connect(-1)
            client.ready(-1)
            deadline = time.monotonic() + 5
            while client.is_connecting(-1):  # nothing listens: the refusal comes at once
                assert time.monotonic() < deadline
                client.poll(20)
            assert client.connection_failed(-1)
            delays.append(client.connection_delay(-1))
        expected = [50, 100, 200, 400, 400, 400]
        for got, want in zip(delays, expected, strict=True):
            assert want * 0.8 <= got <= want * 1.2, (delays, expected)  # +/-20% jitter
        assert isinstance(client.last_error(-1), KafkaConnectionError)
        assert client.connection_attempts(-1) == 6
    finally:
        client.close()


# ------------------------------------------------------------------------------- framing


class TrickleServer:
    """Answers ApiVersions one byte at a time (partial reads) and can send a huge frame."""

    def __init__(self, extra_size: int = 0) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.extra_size = extra_size
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read_frame(self, conn: socket.socket) -> bytes:
        def exact(n: int) -> bytes:
            buf = b""
            while len(buf) < n:
                chunk = conn.recv(n - len(buf))
                if not chunk:
                    raise EOFError
                buf += chunk
            return buf

        size = struct.unpack(">i", exact(4))[0]
        return exact(size)

    def _run(self) -> None:
        conn, _ = self.sock.accept()
        conn.settimeout(10)
        try:
            while True:
                header, _ = decode_request(self._read_frame(conn))
                keys: list[dict[str, int]] = [
                    {"api_key": k, "min_version": v[0], "max_version": v[1]}
                    for k, v in SUPPORTED_VERSIONS.items()
                ]
                body: dict[str, Any] = {"error_code": 0, "api_keys": keys}
                if (
                    header.api_key == ApiKey.API_VERSIONS
                    and self.extra_size
                    and header.correlation_id > 1
                ):
                    # A large answer: many fake api keys (the client ignores unknown ones).
                    keys += [
                        {"api_key": 1000 + i % 20000, "min_version": 0, "max_version": 0}
                        for i in range(self.extra_size)
                    ]
                frame = encode_response(
                    header.api_key, header.api_version, header.correlation_id, body
                )
                if self.extra_size:
                    conn.sendall(frame)
                else:
                    for i in range(len(frame)):
                        conn.sendall(frame[i : i + 1])
        except (EOFError, OSError):
            pass
        finally:
            conn.close()
            self.sock.close()


def test_partial_reads_one_byte_at_a_time() -> None:
    server = TrickleServer()
    cnc = ConsumerNetworkClient(
        NetworkClient(network_settings({"bootstrap.servers": f"127.0.0.1:{server.port}"}))
    )
    try:
        fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
        cnc.poll(timeout_ms=10_000, future=fut)
        assert fut.succeeded() and fut.value["error_code"] == 0
        assert cnc.api_version(-1, ApiKey.FETCH) == SUPPORTED_VERSIONS[ApiKey.FETCH][1]
    finally:
        cnc.close()


def test_frame_larger_than_read_chunk() -> None:
    server = TrickleServer(extra_size=40_000)  # about 200 KB of api keys
    cnc = ConsumerNetworkClient(
        NetworkClient(network_settings({"bootstrap.servers": f"127.0.0.1:{server.port}"}))
    )
    try:
        futs = [cnc.send(-1, ApiKey.API_VERSIONS, {}) for _ in range(3)]
        for fut in futs:
            cnc.poll(timeout_ms=10_000, future=fut)
            assert fut.succeeded(), fut.exception
            assert len(fut.value["api_keys"]) > 40_000
    finally:
        cnc.close()


def test_large_metadata_response(make_client: Factory) -> None:
    with FakeCluster(topics={f"topic-{i:05d}": 2 for i in range(3000)}) as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        assert cnc.metadata is not None
        cnc.metadata.set_topics(None)
        cnc.await_metadata_update(20_000)
        assert len(cnc.metadata.cluster.topics()) == 3000


# ------------------------------------------------------------------------------- lifecycle


def test_idle_connection_is_closed(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers, connections_max_idle_ms=200)
        assert cnc.await_ready(-1, 5000)
        conn = cnc.client.connection(-1)
        assert conn is not None
        deadline = time.monotonic() + 5
        while conn.state is not ConnectionState.DISCONNECTED:
            assert time.monotonic() < deadline, "idle connection never closed"
            cnc.poll(50)


def ready_on_three_nodes(cluster: FakeCluster, make_client: Factory) -> Any:
    """A client with a ready connection to each of the cluster's three brokers."""
    cnc = make_client(cluster.bootstrap_servers)
    cnc.await_metadata_update(5000)
    for node in (0, 1, 2):
        assert cnc.await_ready(node, 5000)
    return cnc


def test_least_loaded_node_prefers_idle_ready_nodes(make_client: Factory) -> None:
    with FakeCluster(n_brokers=3) as cluster:
        cnc = ready_on_three_nodes(cluster, make_client)
        from tests.support.fake_broker import Reply

        cluster.on(ApiKey.API_VERSIONS, lambda n, h, b: Reply(None, delay_s=1.0), node_id=0)
        cluster.on(ApiKey.API_VERSIONS, lambda n, h, b: Reply(None, delay_s=1.0), node_id=1)
        busy = [
            cnc.send(0, ApiKey.API_VERSIONS, {}),
            cnc.send(1, ApiKey.API_VERSIONS, {}),
            cnc.send(1, ApiKey.API_VERSIONS, {}),
        ]
        cnc.poll(0)
        assert cnc.client.in_flight_request_count(1) == 2
        assert cnc.least_loaded_node() == 2
        for f in busy:
            cnc.poll(timeout_ms=5000, future=f)


def test_least_loaded_node_avoids_a_connection_holding_a_fetch(make_client: Factory) -> None:
    # The broker answers a connection's requests in order: a metadata refresh behind a
    # long-poll Fetch would wait for it, so a node with as many (or more) other requests wins.
    with FakeCluster(n_brokers=3) as cluster:
        cnc = ready_on_three_nodes(cluster, make_client)
        from tests.support.fake_broker import Reply

        slow = lambda n, h, b: Reply(None, delay_s=1.0)  # noqa: E731
        cluster.on(ApiKey.FETCH, slow, node_id=0)
        for node in (1, 2):
            cluster.on(ApiKey.API_VERSIONS, slow, node_id=node)
        fetch = {"max_wait_ms": 1000, "min_bytes": 1, "max_bytes": 1024, "topics": []}
        busy = [
            cnc.send(0, ApiKey.FETCH, fetch),
            cnc.send(1, ApiKey.API_VERSIONS, {}),
            cnc.send(2, ApiKey.API_VERSIONS, {}),
            cnc.send(2, ApiKey.API_VERSIONS, {}),
        ]
        cnc.poll(0)
        assert [cnc.client.in_flight_request_count(n) for n in (0, 1, 2)] == [1, 1, 2]
        assert cnc.least_loaded_node() == 1
        for f in busy:
            cnc.poll(timeout_ms=5000, future=f)
        assert all(f.is_done and f.exception is None for f in busy)


def test_send_to_unready_node_fails_fast() -> None:
    client = NetworkClient(network_settings({"bootstrap.servers": "127.0.0.1:9"}))
    try:
        fut = client.send(-1, ApiKey.API_VERSIONS, {})
        assert isinstance(fut.exception, NodeNotReadyError)
    finally:
        client.close()


def test_unsent_request_to_unreachable_node_times_out() -> None:
    port = free_port()
    cnc = ConsumerNetworkClient(
        NetworkClient(
            network_settings(
                {
                    "bootstrap.servers": f"127.0.0.1:{port}",
                    "socket.connection.setup.timeout.ms": 200,
                }
            )
        )
    )
    try:
        fut = cnc.send(-1, ApiKey.API_VERSIONS, {}, timeout_ms=300)
        cnc.poll(timeout_ms=5000, future=fut)
        assert isinstance(fut.exception, (KafkaConnectionError, KafkaTimeoutError))
    finally:
        cnc.close()


def test_all_dns_addresses_are_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeCluster() as cluster:
        good_port = cluster.brokers[0].port
        dead_port = free_port()
        real = socket.getaddrinfo

        def fake_getaddrinfo(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
            # ASCII names are looked up as bytes (no IDNA codec to load).
            if host in ("multi.test", b"multi.test"):
                return [
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", dead_port)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", good_port)),
                ]
            return real(host, port, *args, **kw)

        monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
        cnc = ConsumerNetworkClient(
            NetworkClient(network_settings({"bootstrap.servers": f"multi.test:{good_port}"}))
        )
        try:
            assert cnc.await_ready(-1, 5000)
            conn = cnc.client.connection(-1)
            assert conn is not None and conn.connected_address == ("127.0.0.1", good_port)
        finally:
            cnc.close()


def test_poll_no_wakeup_ignores_wakeup_and_later_poll_raises(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.wakeup()
        cnc.poll_no_wakeup()  # the heartbeat thread's poll is never interrupted
        with pytest.raises(WakeupError):
            cnc.poll(timeout_ms=5000)
        cnc.poll(timeout_ms=0)  # consumed


def test_wakeup_interrupts_wait_on_future(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        from tests.support.fake_broker import Reply

        cnc = make_client(cluster.bootstrap_servers)
        assert cnc.await_ready(-1, 5000)
        cluster.on(ApiKey.API_VERSIONS, lambda n, h, b: Reply(None, delay_s=5))
        fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
        woke: list[float] = []

        def waker() -> None:
            time.sleep(0.2)
            woke.append(time.monotonic())
            cnc.wakeup()

        threading.Thread(target=waker, daemon=True).start()
        with pytest.raises(WakeupError):
            cnc.poll(timeout_ms=20_000, future=fut)
        assert woke and time.monotonic() - woke[0] < 1.0
        assert not fut.is_done  # the request itself goes on


def test_callbacks_run_outside_the_lock(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        held: list[bool] = []

        def callback(_: Any) -> None:
            # Another thread can take the network lock while this callback runs.
            got = threading.Event()

            def other() -> None:
                cnc.pending_request_count()
                got.set()

            t = threading.Thread(target=other)
            t.start()
            held.append(got.wait(2))
            t.join(2)

        fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
        fut.add_callback(callback)
        cnc.poll(timeout_ms=5000, future=fut)
        assert held == [True]


def test_a_completion_fired_after_the_lock_is_let_go_wakes_the_thread_holding_it(
    bare_client: Callable[[str], ConsumerNetworkClient],
) -> None:
    """A response the heartbeat thread received, whose completion it runs after letting go of
    the lock while the user's thread took the lock and blocked waiting for that very future,
    ends the user's wait at once."""
    cnc = bare_client(f"127.0.0.1:{free_port()}")
    real_poll, real_wakeup = cnc.client.poll, cnc.client.wakeup
    log: list[str] = []
    firing, blocked = threading.Event(), threading.Event()
    response: Future[int] = Future()
    awaited: Future[int] = Future()

    def poll(timeout_ms: float) -> None:
        if threading.current_thread() is heartbeat:
            # The response arrives in the heartbeat thread's poll.
            cnc._complete(response, 1, None)
        elif timeout_ms > 0 and firing.is_set():
            blocked.set()
        real_poll(timeout_ms)

    def wakeup() -> None:
        log.append("wakeup")
        real_wakeup()

    def handle(value: int) -> None:
        # Run by the heartbeat thread once it let go of the lock: the user's thread takes
        # the lock and blocks on the future this handler completes.
        firing.set()
        assert blocked.wait(30)
        awaited.success(value)
        log.append("done")

    response.add_callback(handle)
    cnc.client.poll = poll  # type: ignore[method-assign]
    cnc.client.wakeup = wakeup  # type: ignore[method-assign]
    heartbeat = threading.Thread(target=cnc.poll_no_wakeup)
    heartbeat.start()
    try:
        assert firing.wait(30)
        assert cnc.poll(timeout_ms=30_000, future=awaited)
    finally:
        blocked.set()
        heartbeat.join(30)
    assert "done" in log and "wakeup" in log[log.index("done") :], log


def test_close_fails_pending_requests() -> None:
    port = free_port()
    cnc = ConsumerNetworkClient(
        NetworkClient(network_settings({"bootstrap.servers": f"127.0.0.1:{port}"}))
    )
    fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
    cnc.close()
    assert isinstance(fut.exception, KafkaConnectionError)
    assert cnc.send(-1, ApiKey.API_VERSIONS, {}).failed()


def test_waiting_for_an_in_flight_slot_does_not_spin(make_client: Factory) -> None:
    from tests.support.fake_broker import Reply

    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers, max_in_flight_requests_per_connection=1)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        cluster.on(ApiKey.API_VERSIONS, lambda n, h, b: Reply(None, delay_s=0.7))
        futures = [cnc.send(0, ApiKey.API_VERSIONS, {}) for _ in range(3)]
        cpu = time.process_time()
        for fut in futures:
            cnc.poll(timeout_ms=10_000, future=fut)
        cpu = time.process_time() - cpu
        assert all(f.succeeded() for f in futures)
        # About 2 s of waiting for responses; a busy loop would burn most of it.
        assert cpu < 0.5, f"{cpu:.2f} s of CPU while waiting"


def test_other_threads_get_the_lock_during_a_long_poll(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        stop = threading.Event()

        def long_polls() -> None:  # the user thread, blocked in poll most of the time
            while not stop.is_set():
                cnc.poll(timeout_ms=3000, disable_wakeup=True)

        t = threading.Thread(target=long_polls, daemon=True)
        t.start()
        try:
            time.sleep(0.2)  # let it block in the selector
            took = []
            for _ in range(5):
                start = time.monotonic()
                cnc.poll_no_wakeup()  # what the heartbeat thread does
                cnc.least_loaded_node()
                took.append(time.monotonic() - start)
            # Without the hand-off these would wait out the 3 s poll.
            assert max(took) < 1.0, took
        finally:
            stop.set()
            cnc.client.wakeup()
            t.join(5)


def test_many_threads_send_while_one_polls(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        assert cnc.await_ready(-1, 5000)
        futures: list[Future[Any]] = []
        lock = threading.Lock()

        def sender() -> None:
            for _ in range(100):
                fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
                with lock:
                    futures.append(fut)

        threads = [threading.Thread(target=sender) for _ in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while any(t.is_alive() for t in threads) or not all(f.is_done for f in futures):
            assert time.monotonic() < deadline, "requests sent from other threads got stuck"
            cnc.poll(timeout_ms=100)
        assert len(futures) == 400 and all(f.succeeded() for f in futures)
        # Correlation ids never repeat on the connection.
        cids = [h.correlation_id for h, _ in cluster.requests(ApiKey.API_VERSIONS)]
        assert len(cids) == len(set(cids))


# ------------------------------------------------------------------- coordinator connections


def test_coordinator_node_id_maps_to_its_brokers_address() -> None:
    md = ConsumerMetadata({"bootstrap.servers": "127.0.0.1:9"})
    # Only the fields the test needs; the decoder would fill the others with their defaults.
    md.update(
        cast(
            MetadataResponse,
            {
                "brokers": [
                    {"node_id": 0, "host": "h0", "port": 1000},
                    {"node_id": 7, "host": "h7", "port": 1007},
                ],
                "topics": [],
                "controller_id": 0,
                "cluster_id": "c",
            },
        )
    )
    client = NetworkClient(network_settings({"bootstrap.servers": "127.0.0.1:9"}), metadata=md)
    try:
        assert coordinator_node_id(0) == 2**31 - 1 and coordinator_node_id(7) == 2**31 - 8
        assert client.node_address(coordinator_node_id(0)) == ("h0", 1000)
        assert client.node_address(coordinator_node_id(7)) == ("h7", 1007)
        assert client.node_address(7) == ("h7", 1007)
        # A broker the metadata does not name has no coordinator connection either.
        assert client.node_address(coordinator_node_id(3)) is None
        # Coordinator ids are extra connections, never candidates for ordinary requests.
        assert client.nodes() == [0, 7]
    finally:
        client.close()


def test_coordinator_connection_is_a_second_socket_to_the_broker(make_client: Factory) -> None:
    with FakeCluster(n_brokers=2) as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        coord = coordinator_node_id(1)
        assert cnc.await_ready(1, 5000) and cnc.await_ready(coord, 5000)
        plain, group = cnc.client.connection(1), cnc.client.connection(coord)
        assert plain is not None and group is not None
        assert plain.sock is not None and group.sock is not None
        assert plain.sock.getpeername() == group.sock.getpeername()
        assert plain.sock.getsockname() != group.sock.getsockname()
        fut = cnc.send(coord, ApiKey.API_VERSIONS, {})
        cnc.poll(timeout_ms=5000, future=fut)
        assert fut.succeeded()
        # Two handshakes (one per socket) and the request, all served by broker 1.
        assert len(cluster.requests(ApiKey.API_VERSIONS, node_id=1)) >= 3


def test_request_to_a_node_without_address_fails_without_raising(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        fut = cnc.send(coordinator_node_id(42), ApiKey.API_VERSIONS, {})
        # Without the guard poll() raised NodeNotReadyError, the request lost on the way.
        cnc.poll(timeout_ms=5000, future=fut)
        assert isinstance(fut.exception, KafkaConnectionError)
        ok = cnc.send(0, ApiKey.API_VERSIONS, {})
        cnc.poll(timeout_ms=5000, future=ok)
        assert ok.succeeded()


def test_node_without_address_is_a_failed_connect_attempt() -> None:
    md = ConsumerMetadata({})
    client = NetworkClient(
        network_settings(
            {
                "bootstrap.servers": "127.0.0.1:9",
                "reconnect.backoff.ms": 1000,
                "reconnect.backoff.max.ms": 1000,
            }
        ),
        metadata=md,
    )
    try:
        brokers = [{"node_id": 0, "host": "127.0.0.1", "port": 9}]
        md.update(cast(MetadataResponse, {"brokers": brokers, "topics": []}))
        version = md.update_version
        node = coordinator_node_id(42)
        assert not md.update_requested()
        # Not raised out of ready(): recorded like an unreachable node, with a backoff.
        assert client.ready(node) is False
        assert client.connection_failed(node)
        assert isinstance(client.last_error(node), KafkaConnectionError)
        assert "not in the cluster metadata" in str(client.last_error(node))
        assert client.connection_delay(node) > 0 and not client.can_connect(node)
        assert md.update_requested() and md.update_version == version
        assert client.connection_attempts(node) == 1
        assert client.ready(node) is False and client.connection_attempts(node) == 1
    finally:
        client.close()


# ------------------------------------------------------------------- poll(0) and bad bodies


@pytest.fixture
def bare_client() -> Iterator[Callable[[str], ConsumerNetworkClient]]:
    """``bare_client(bootstrap)``: a client without metadata, so its bootstrap connection is
    never closed for the brokers the metadata names (closed after the test)."""
    made: list[ConsumerNetworkClient] = []

    def factory(bootstrap: str) -> ConsumerNetworkClient:
        cnc = ConsumerNetworkClient(
            NetworkClient(network_settings({"bootstrap.servers": bootstrap}))
        )
        made.append(cnc)
        return cnc

    yield factory
    for cnc in made:
        cnc.close()


def test_poll_with_zero_timeout_still_sends_and_receives(
    bare_client: Callable[[str], ConsumerNetworkClient],
) -> None:
    with FakeCluster() as cluster:
        cnc = bare_client(cluster.bootstrap_servers)
        assert cnc.await_ready(-1, 5000)
        fut = cnc.send(-1, ApiKey.API_VERSIONS, {})
        assert not cnc.poll(timeout_ms=0, future=fut)  # no time to wait for the answer...
        # ... but the request went out: nothing is left unsent or unwritten.
        conn = cnc.client.connection(-1)
        assert conn is not None and not conn.has_pending_send()
        assert cnc.client.in_flight_request_count(-1) == 1
        assert cnc.pending_request_count(-1) == 1
        deadline = time.monotonic() + 5
        while not cnc.poll(timeout_ms=0, future=fut):  # "do not block" rounds collect it
            assert time.monotonic() < deadline, "poll(0) never read the response"
        assert fut.succeeded()
        assert cnc.poll(timeout_ms=0, future=fut)  # a done future: True at once


def test_unencodable_body_fails_only_its_own_request(
    bare_client: Callable[[str], ConsumerNetworkClient],
) -> None:
    with FakeCluster() as cluster:
        cnc = bare_client(cluster.bootstrap_servers)
        assert cnc.await_ready(-1, 5000)
        conn = cnc.client.connection(-1)
        before = cnc.send(-1, ApiKey.API_VERSIONS, {})
        bad = cnc.send(-1, ApiKey.METADATA, {"no_such_field": 1})
        after = cnc.send(-1, ApiKey.API_VERSIONS, {})
        cnc.poll(timeout_ms=5000, future=after)  # raised KafkaProtocolError before the fix
        cnc.poll(timeout_ms=5000, future=before)
        assert isinstance(bad.exception, KafkaProtocolError)
        assert before.succeeded() and after.succeeded()
        # The same connection carries on.
        assert cnc.client.connection(-1) is conn and conn is not None and conn.is_ready
        assert cnc.client.connection_attempts(-1) == 1
        again = cnc.send(-1, ApiKey.API_VERSIONS, {})
        cnc.poll(timeout_ms=5000, future=again)
        assert again.succeeded()


class _Watched:
    """The part of a connection the selector bookkeeping reads: its socket and interest."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def interest(self) -> int:
        return 1  # selectors.EVENT_READ


def test_a_registration_whose_bookkeeping_was_interrupted_is_made_again() -> None:
    # Ctrl-C between the selector's registration of a socket and the client's record of it
    # must not leave the node unable to register (the selector knows the descriptor already).
    client = NetworkClient(network_settings({"bootstrap.servers": "127.0.0.1:9"}))
    a, b = socket.socketpair()
    try:
        client._selector.register(a, 1, 7)  # as if interrupted right after this
        conn = cast(Any, _Watched(a))
        client._sync_registration(7, conn)
        assert client._registered_sock[7] is a
        assert client._selector.get_key(a).data == 7
        b.send(b"x")
        assert [key.fileobj for key, _ in client._selector.select(1.0)] == [a]
    finally:
        client.close()
        a.close()
        b.close()
