"""The network client against the scripted fake broker: negotiation, metadata, SASL exchanges,
malformed responses, timeouts."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafkaconsumer.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    SaslAuthenticationError,
    UnsupportedVersionError,
)
from kafkaconsumer.network.connection import ConnectionState
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey, encode_response
from kafkaconsumer.structs import TopicPartition
from tests.helpers import network_settings
from tests.network.conftest import Factory
from tests.network.scram_server import ScramServer
from tests.support.fake_broker import FakeCluster, Reply, response_frame

pytestmark = pytest.mark.timeout(60)


def wait_done(cnc: Any, fut: Future[Any], timeout_ms: int = 10_000) -> Future[Any]:
    cnc.poll(timeout_ms=timeout_ms, future=fut)
    assert fut.is_done, "future did not complete in time"
    return fut


def test_bootstrap_metadata_then_real_nodes(make_client: Factory) -> None:
    with FakeCluster(n_brokers=3, topics={"orders": 6}) as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        assert cnc.metadata is not None
        cnc.metadata.set_topics(["orders"])
        cnc.await_metadata_update(5000)
        cluster_view = cnc.metadata.cluster
        assert [b.node_id for b in cluster_view.brokers()] == [0, 1, 2]
        assert len(cluster_view.partitions_for_topic("orders") or []) == 6
        assert cnc.client.nodes() == [0, 1, 2]
        leader = cluster_view.leader_for(TopicPartition("orders", 4))
        assert leader is not None
        fut = wait_done(cnc, cnc.send(leader, ApiKey.API_VERSIONS, {}))
        assert fut.succeeded() and fut.value["error_code"] == 0
        # The version used is the highest both sides support.
        assert cnc.api_version(leader, ApiKey.METADATA) == 13


def test_partition_count_change_seen_on_refresh(make_client: Factory) -> None:
    with FakeCluster(topics={"t": 2}) as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        assert cnc.metadata is not None
        cnc.metadata.set_topics(["t"])
        cnc.await_metadata_update(5000)
        assert len(cnc.metadata.cluster.partitions_for_topic("t") or []) == 2
        cluster.add_topic("t", 5, topic_id=cluster.topic_id("t"))
        cnc.await_metadata_update(5000)
        assert len(cnc.metadata.cluster.partitions_for_topic("t") or []) == 5


def test_negotiates_down_to_broker_versions(make_client: Factory) -> None:
    with FakeCluster(api_versions={ApiKey.API_VERSIONS: (0, 2), ApiKey.METADATA: (0, 7)}) as cl:
        cnc = make_client(cl.bootstrap_servers)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        assert cnc.api_version(0, ApiKey.METADATA) == 7
        fut = wait_done(cnc, cnc.send(0, ApiKey.FETCH, {}))
        assert isinstance(fut.exception, UnsupportedVersionError)


def test_api_versions_fallback_after_unsupported_version(make_client: Factory) -> None:
    with FakeCluster() as cluster:

        def old_broker(node: int, header: Any, body: dict[str, Any]) -> Reply | None:
            if header.api_version <= 2:
                return None  # the default answer
            # What a broker that knows ApiVersions v0-2 only answers: v0 UNSUPPORTED_VERSION.
            return Reply(
                raw=encode_response(
                    ApiKey.API_VERSIONS,
                    0,
                    header.correlation_id,
                    {
                        "error_code": 35,
                        "api_keys": [
                            {"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 2}
                        ],
                    },
                )
            )

        cluster.on(ApiKey.API_VERSIONS, old_broker)
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        versions = [h.api_version for h, _ in cluster.requests(ApiKey.API_VERSIONS)]
        assert versions[:2] == [versions[0], 2] and versions[0] > 2


def test_malformed_response_closes_connection_and_metadata_retries(make_client: Factory) -> None:
    with FakeCluster(topics={"t": 1}) as cluster:
        garbage = b"\xff" * 16

        def malformed(node: int, header: Any, body: dict[str, Any]) -> Reply:
            return Reply(raw=response_frame(header, garbage))

        cluster.script(ApiKey.METADATA, [malformed])
        cnc = make_client(cluster.bootstrap_servers, retry_backoff_ms=10)
        cnc.await_metadata_update(5000)
        assert cnc.metadata is not None and cnc.metadata.cluster.partitions_for_topic("t") is None
        # The bad answer closed its connection; the retry went over a new one.
        assert cluster.accepted_connections(0) >= 2
        assert len(cluster.requests(ApiKey.METADATA)) == 2


def test_correlation_id_mismatch_closes_connection(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)

        def wrong_cid(node: int, header: Any, body: dict[str, Any]) -> Reply:
            forged = header._replace(correlation_id=header.correlation_id + 1000)
            return Reply(raw=response_frame(forged, b"\x00\x00"))

        cluster.script(ApiKey.API_VERSIONS, [wrong_cid])
        fut = wait_done(cnc, cnc.send(0, ApiKey.API_VERSIONS, {}))
        assert isinstance(fut.exception, KafkaConnectionError)
        assert "correlation id" in str(fut.exception)
        # The next request works on a fresh connection (after the reconnect backoff).
        assert cnc.await_ready(0, 5000)
        fut2 = wait_done(cnc, cnc.send(0, ApiKey.API_VERSIONS, {}))
        assert fut2.succeeded()


def test_request_timeout_closes_connection_and_fails_all_in_flight(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers, request_timeout_ms=400)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        cluster.on(ApiKey.API_VERSIONS, lambda n, h, b: Reply(None, delay_s=3))
        first = cnc.send(0, ApiKey.API_VERSIONS, {})
        second = cnc.send(0, ApiKey.API_VERSIONS, {})
        wait_done(cnc, second)
        assert isinstance(first.exception, KafkaTimeoutError)
        assert isinstance(second.exception, KafkaTimeoutError)
        conn = cnc.client.connection(0)
        assert conn is not None and conn.state is ConnectionState.DISCONNECTED
        cluster.on(ApiKey.API_VERSIONS, None)
        assert cnc.await_ready(0, 5000)
        assert wait_done(cnc, cnc.send(0, ApiKey.API_VERSIONS, {})).succeeded()


def test_per_request_timeout_override(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers, request_timeout_ms=300)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        cluster.script(ApiKey.API_VERSIONS, [Reply(None, delay_s=0.6)])
        fut = wait_done(cnc, cnc.send(0, ApiKey.API_VERSIONS, {}, timeout_ms=5000))
        assert fut.succeeded()


def test_max_in_flight_bound(make_client: Factory) -> None:
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers, max_in_flight_requests_per_connection=2)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        cluster.on(ApiKey.API_VERSIONS, lambda n, h, b: Reply(None, delay_s=0.2))
        futs = [cnc.send(0, ApiKey.API_VERSIONS, {}) for _ in range(5)]
        peak = 0
        deadline = time.monotonic() + 10
        while not all(f.is_done for f in futs) and time.monotonic() < deadline:
            cnc.poll(50)
            peak = max(peak, cnc.client.in_flight_request_count(0))
        assert all(f.succeeded() for f in futs)
        assert peak == 2


# ------------------------------------------------------------------------------- SASL


def sasl_config(mechanism: str, **extra: Any) -> dict[str, Any]:
    cfg = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 1000,
    }
    cfg.update(extra)
    return cfg


def test_sasl_plain_success(make_client: Factory) -> None:
    with FakeCluster(sasl_mechanisms=["PLAIN"]) as cluster:

        def check(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
            ok = bytes(body["auth_bytes"]) == b"\x00alice\x00pw"
            return {
                "error_code": 0 if ok else 58,
                "error_message": None if ok else "bad",
                "auth_bytes": b"",
                "session_lifetime_ms": 0,
            }

        cluster.on(ApiKey.SASL_AUTHENTICATE, check)
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config("PLAIN", **{"sasl.username": "alice", "sasl.password": "pw"}),
        )
        cnc.await_metadata_update(5000)
        assert [b["mechanism"] for _, b in cluster.requests(ApiKey.SASL_HANDSHAKE)][0] == "PLAIN"


def test_sasl_wrong_password_fails_without_retry_storm(make_client: Factory) -> None:
    with FakeCluster(sasl_mechanisms=["PLAIN"]) as cluster:
        cluster.on(
            ApiKey.SASL_AUTHENTICATE,
            lambda n, h, b: {
                "error_code": 58,
                "error_message": "Invalid username or password",
                "auth_bytes": b"",
            },
        )
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config("PLAIN", **{"sasl.username": "alice", "sasl.password": "wrong-pass-123"}),
        )
        with pytest.raises(SaslAuthenticationError) as info:
            cnc.await_metadata_update(5000)
        assert "Invalid username or password" in str(info.value)
        assert "wrong-pass-123" not in str(info.value)
        # Keep trying for 2 s: the reconnect backoff (100 ms doubling to 1 s) bounds the attempts.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                cnc.poll(100)
            except SaslAuthenticationError:
                pass
        assert cluster.accepted_connections(0) <= 6


@pytest.mark.parametrize(
    "mechanism,hash_name", [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")]
)
def test_sasl_scram_exchange(make_client: Factory, mechanism: str, hash_name: str) -> None:
    with FakeCluster(sasl_mechanisms=[mechanism]) as cluster:
        servers: dict[int, ScramServer] = {}

        def scram(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
            token = bytes(body["auth_bytes"])
            if token.startswith(b"n,,"):
                servers[0] = ScramServer(hash_name, "sekrit")
                return {"error_code": 0, "auth_bytes": servers[0].first(token)}
            ok, final = servers[0].final(token)
            if not ok:
                return {
                    "error_code": 58,
                    "error_message": "Authentication failed during "
                    "authentication due to invalid credentials with SASL mechanism " + mechanism,
                }
            return {"error_code": 0, "auth_bytes": final, "session_lifetime_ms": 0}

        cluster.on(ApiKey.SASL_AUTHENTICATE, scram)
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config(mechanism, **{"sasl.username": "bob", "sasl.password": "sekrit"}),
        )
        cnc.await_metadata_update(5000)
        assert len(cluster.requests(ApiKey.SASL_AUTHENTICATE)) == 2

        bad = make_client(
            cluster.bootstrap_servers,
            sasl_config(mechanism, **{"sasl.username": "bob", "sasl.password": "nope"}),
        )
        with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
            bad.await_metadata_update(5000)


def test_sasl_scram_bad_server_signature_is_rejected(make_client: Factory) -> None:
    with FakeCluster(sasl_mechanisms=["SCRAM-SHA-256"]) as cluster:
        state: dict[str, ScramServer] = {}

        def imposter(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
            token = bytes(body["auth_bytes"])
            if token.startswith(b"n,,"):
                state["s"] = ScramServer("sha256", "a-different-password")
                return {"error_code": 0, "auth_bytes": state["s"].first(token)}
            # An imposter that accepts anything but cannot sign with the real password.
            return {"error_code": 0, "auth_bytes": b"v=" + b"A" * 44}

        cluster.on(ApiKey.SASL_AUTHENTICATE, imposter)
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config("SCRAM-SHA-256", **{"sasl.username": "bob", "sasl.password": "sekrit"}),
        )
        with pytest.raises(SaslAuthenticationError, match="server signature"):
            cnc.await_metadata_update(5000)


def test_sasl_unsupported_mechanism(make_client: Factory) -> None:
    with FakeCluster(sasl_mechanisms=["SCRAM-SHA-512"]) as cluster:
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config("PLAIN", **{"sasl.username": "a", "sasl.password": "b"}),
        )
        with pytest.raises(SaslAuthenticationError, match="SCRAM-SHA-512"):
            cnc.await_metadata_update(5000)


def test_sasl_oauthbearer_success_failure_and_token_refresh(make_client: Factory) -> None:
    with FakeCluster(sasl_mechanisms=["OAUTHBEARER"]) as cluster:
        tokens: list[str] = []

        def token_cb() -> tuple[str, float]:
            tokens.append(f"token-{len(tokens)}")
            return tokens[-1], time.time() + 3600

        def check(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
            auth = bytes(body["auth_bytes"])
            if auth == b"\x01":
                return {"error_code": 58, "error_message": "invalid_token"}
            if b"auth=Bearer token-" in auth:
                return {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": 0}
            return {"error_code": 0, "auth_bytes": b'{"status":"invalid_token"}'}

        cluster.on(ApiKey.SASL_AUTHENTICATE, check)
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config("OAUTHBEARER", **{"sasl.oauthbearer.token.callback": token_cb}),
        )
        cnc.await_metadata_update(5000)
        assert tokens == ["token-0"]

        bad = make_client(
            cluster.bootstrap_servers,
            sasl_config(
                "OAUTHBEARER", **{"sasl.oauthbearer.token.callback": lambda: ("forged", None)}
            ),
        )
        with pytest.raises(SaslAuthenticationError, match="invalid_token"):
            bad.await_metadata_update(5000)


def test_oauthbearer_token_callback_never_runs_under_the_network_lock() -> None:
    """docs/architecture.md (Locks): the user's token callback never runs under ConsumerNetworkClient's
    lock (nor on a thread that polls, which may hold the coordinator's lock), also when a later
    connection needs a fresh token (unknown lifetime: one per connection)."""
    from kafkaconsumer.metadata import ConsumerMetadata
    from kafkaconsumer.network.client import NetworkClient
    from kafkaconsumer.network.consumer_client import ConsumerNetworkClient

    with FakeCluster(sasl_mechanisms=["OAUTHBEARER"]) as cluster:
        cluster.on(
            ApiKey.SASL_AUTHENTICATE,
            lambda n, h, b: {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": 0},
        )
        holder: list[ConsumerNetworkClient] = []
        seen: list[tuple[bool, str]] = []  # (lock held by the calling thread, thread name)

        def token_cb() -> str:
            if holder:
                owned = holder[0]._lock._is_owned()  # type: ignore[attr-defined]
                seen.append((owned, threading.current_thread().name))
            return f"token-{len(seen)}"

        cfg = {
            "bootstrap.servers": cluster.bootstrap_servers,
            **sasl_config("OAUTHBEARER", **{"sasl.oauthbearer.token.callback": token_cb}),
        }
        md = ConsumerMetadata(cfg)
        cnc = ConsumerNetworkClient(NetworkClient(network_settings(cfg), metadata=md), md)
        holder.append(cnc)
        try:
            cnc.await_metadata_update(5000)
            # The bootstrap connection used the first token; broker 0 needs a fresh one.
            assert cnc.await_ready(0, 5000)
            assert cluster.requests(ApiKey.SASL_AUTHENTICATE)
            deadline = time.monotonic() + 5
            while len(seen) < 2 and time.monotonic() < deadline:
                cnc.poll(20)
            assert seen, "the token callback never ran after the client was built"
            poller = threading.current_thread().name
            assert all(not owned and name != poller for owned, name in seen), seen
        finally:
            cnc.close()


def test_sasl_session_lifetime_reconnects_before_expiry(make_client: Factory) -> None:
    with FakeCluster(sasl_mechanisms=["PLAIN"]) as cluster:
        cluster.on(
            ApiKey.SASL_AUTHENTICATE,
            lambda n, h, b: {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": 300},
        )
        cnc = make_client(
            cluster.bootstrap_servers,
            sasl_config("PLAIN", **{"sasl.username": "a", "sasl.password": "b"}),
        )
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        before = len(cluster.requests(ApiKey.SASL_AUTHENTICATE))
        deadline = time.monotonic() + 5
        while (
            len(cluster.requests(ApiKey.SASL_AUTHENTICATE)) < before + 2
            and time.monotonic() < deadline
        ):
            cnc.poll(50)
            cnc.try_connect(0)
        # Each session ended before its 300 ms lifetime and was replaced by a new login.
        assert len(cluster.requests(ApiKey.SASL_AUTHENTICATE)) >= before + 2


def test_between_waits_runs_the_step_of_the_waiting_thread_between_rounds(
    make_client: Factory,
) -> None:
    """Inside between_waits(), the thread's blocking poll runs the step between rounds of I/O:
    a request the step queues goes out and is answered during the wait; the step is not
    re-entered by a poll it makes, and polls of other threads and polls that ignore wakeup()
    never run it."""
    with FakeCluster(n_brokers=2) as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000) and cnc.await_ready(1, 5000)
        me = threading.get_ident()
        calls: list[int] = []
        queued: list[Future[Any]] = []

        def step() -> float | None:
            calls.append(threading.get_ident())
            cnc.poll(timeout_ms=0)  # runs without the step
            if not queued:
                queued.append(cnc.send(1, ApiKey.API_VERSIONS, {}))
            return None

        # The answer the wait is for comes late, on another node than the step's request.
        cluster.script(ApiKey.API_VERSIONS, [Reply(None, delay_s=0.5)], node_id=0)
        with cnc.between_waits(step):
            waited = wait_done(cnc, cnc.send(0, ApiKey.API_VERSIONS, {}))
            assert waited.succeeded()
            assert queued and queued[0].is_done and queued[0].succeeded()
            assert calls and set(calls) == {me}
            seen = len(calls)
            cnc.poll_no_wakeup()
            other = threading.Thread(target=cnc.poll, kwargs={"timeout_ms": 0})
            other.start()
            other.join(10)
            assert len(calls) == seen
        cnc.poll(timeout_ms=0)
        assert len(calls) == seen


def test_between_waits_bounds_each_round_by_what_the_step_returns(
    make_client: Factory,
) -> None:
    """The wait of a round lasts at most what the step returned, so a step that waits for a
    timer of its own runs again before the blocking call's answer arrives."""
    with FakeCluster() as cluster:
        cnc = make_client(cluster.bootstrap_servers)
        cnc.await_metadata_update(5000)
        assert cnc.await_ready(0, 5000)
        calls = 0

        def step() -> float | None:
            nonlocal calls
            calls += 1
            return 20.0

        cluster.script(ApiKey.API_VERSIONS, [Reply(None, delay_s=1.0)])
        with cnc.between_waits(step):
            assert wait_done(cnc, cnc.send(0, ApiKey.API_VERSIONS, {})).succeeded()
        # Nothing else wakes this wait: without the bound the step would run once or twice.
        assert calls >= 5
