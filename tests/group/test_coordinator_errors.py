"""The coordinator's reaction to every group error code the Java client handles (fake broker).

Each table row scripts one error for one API and checks the Java client's reaction: retried,
coordinator rediscovered, member id reset, generation reset, rejoin, or a fatal error raised to
the user.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.group_member import NO_GENERATION
from kafkaconsumer.network.client import coordinator_node_id
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.group.harness import Stack
from tests.helpers import wait_for
from tests.support.fake_broker import FakeCluster, Reply, error_body

pytestmark = pytest.mark.timeout(30)

TOPIC = "orders"
TP0 = TopicPartition(TOPIC, 0)

# Error codes (Kafka protocol).
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
UNSUPPORTED_VERSION = 35
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=2, topics={TOPIC: 3}) as c:
        yield c


def stack(cluster: FakeCluster, **overrides: Any) -> Stack:
    s = Stack(cluster.bootstrap_servers, "g", **overrides)
    s.subscribe([TOPIC])
    return s


def joined(cluster: FakeCluster, **overrides: Any) -> Stack:
    s = stack(cluster, **overrides)
    s.join()
    return s


#: For tests where the coordinator keeps counting a member id we dropped until its session
#: expires (as Kafka does): keep that wait short.
SHORT_SESSION = dict(session_timeout_ms=1000, heartbeat_interval_ms=100, max_poll_interval_ms=2000)


def count(cluster: FakeCluster, api: int) -> int:
    return len(cluster.requests(api))


# ----------------------------------------------------------------------------- FindCoordinator


@pytest.mark.parametrize(
    "code", [COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS]
)
def test_find_coordinator_retriable_errors_are_retried(cluster: FakeCluster, code: int) -> None:
    cluster.fail(ApiKey.FIND_COORDINATOR, code, times=2)
    s = stack(cluster)
    try:
        s.join()
        assert count(cluster, ApiKey.FIND_COORDINATOR) >= 3
        # Group requests use the coordinator connection of that broker (Java's MAX_VALUE - id).
        assert s.coordinator.coordinator == coordinator_node_id(cluster.coordinator_id)
    finally:
        s.close()


def test_find_coordinator_authorization_failure_is_fatal(cluster: FakeCluster) -> None:
    cluster.fail(ApiKey.FIND_COORDINATOR, GROUP_AUTHORIZATION_FAILED)
    s = stack(cluster)
    try:
        with pytest.raises(Errors.GroupAuthorizationFailedError):
            s.join()
    finally:
        s.close()


def test_dead_coordinator_is_rediscovered_by_the_heartbeat_thread(cluster: FakeCluster) -> None:
    s = joined(cluster)
    try:
        assert s.coordinator.coordinator == coordinator_node_id(0)
        finds = count(cluster, ApiKey.FIND_COORDINATOR)
        cluster.coordinator_id = 1
        cluster.kill(0)
        # Nobody polls: the heartbeat thread notices the dead connection and looks it up again.
        wait_for(
            lambda: count(cluster, ApiKey.FIND_COORDINATOR) > finds,
            10,
            message="a new FindCoordinator",
        )
        wait_for(
            lambda: s.coordinator.coordinator == coordinator_node_id(1), 10, message="coordinator 1"
        )
    finally:
        s.close()


def test_a_dead_coordinator_the_brokers_still_name_is_looked_up_with_backoff(
    cluster: FakeCluster,
) -> None:
    """Until the controller fences a killed broker, the other brokers keep naming it as the
    coordinator: each lookup that names a coordinator that cannot be connected to backs off
    (retry.backoff.ms, growing to retry.backoff.max.ms) before the next one, rather than asking
    again at once; the commit goes through once the coordinator has moved, and the backoff
    starts over once connected to it."""
    s = joined(cluster, retry_backoff_ms=100, retry_backoff_max_ms=1000)
    try:
        assert s.coordinator.coordinator == coordinator_node_id(0)
        dead = cluster.broker(0)

        def stale(node: int, header: Any, body: dict[str, Any]) -> dict[str, Any]:
            entry = {"error_code": 0, "node_id": 0, "host": dead.host, "port": dead.port}
            if header.api_version >= 4:
                keys = body["coordinator_keys"]
                return {"coordinators": [dict(entry, key=k) for k in keys]}
            return entry

        cluster.on(ApiKey.FIND_COORDINATOR, stale)
        cluster.kill(0)
        finds = count(cluster, ApiKey.FIND_COORDINATOR)
        assert not s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(3000))
        # 100, 200, 400, 800, 1000 ms... (the heartbeat thread looks up too, at the same pace);
        # without the backoff, they were counted in thousands.
        assert count(cluster, ApiKey.FIND_COORDINATOR) - finds <= 20
        assert s.coordinator.lookup_backoff_ms() > 120
        cluster.on(ApiKey.FIND_COORDINATOR, None)
        cluster.coordinator_id = 1
        assert s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(10_000))
        assert cluster.committed("g")[(TOPIC, 0)][0] == 42
        # Connected to the new coordinator: a later loss starts from retry.backoff.ms again.
        assert not s.coordinator.coordinator_unknown()
        assert s.coordinator.lookup_backoff_ms() <= 120
    finally:
        s.close()


# --------------------------------------------------------------------------------- JoinGroup


@pytest.mark.parametrize("code", [COORDINATOR_LOAD_IN_PROGRESS, REBALANCE_IN_PROGRESS])
def test_join_group_retriable_errors_rejoin(cluster: FakeCluster, code: int) -> None:
    cluster.fail(ApiKey.JOIN_GROUP, code)
    s = stack(cluster)
    try:
        s.join()
        # error + MEMBER_ID_REQUIRED + the successful join
        assert count(cluster, ApiKey.JOIN_GROUP) == 3
        assert s.subscriptions.assigned_partitions() == {TopicPartition(TOPIC, p) for p in range(3)}
    finally:
        s.close()


@pytest.mark.parametrize("code", [COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR])
def test_join_group_coordinator_errors_rediscover(cluster: FakeCluster, code: int) -> None:
    cluster.fail(ApiKey.JOIN_GROUP, code)
    s = stack(cluster)
    try:
        s.join()
        assert count(cluster, ApiKey.FIND_COORDINATOR) >= 2
    finally:
        s.close()


def test_join_group_member_id_required_two_step_join(cluster: FakeCluster) -> None:
    s = stack(cluster)
    try:
        s.join()
        joins = [body for _h, body in cluster.requests(ApiKey.JOIN_GROUP)]
        assert joins[0]["member_id"] == ""
        assert joins[1]["member_id"] != ""
        assert joins[1]["member_id"] == s.coordinator.member_id()
        # rebalance timeout is max.poll.interval.ms
        assert joins[0]["rebalance_timeout_ms"] == s.config["max.poll.interval.ms"]
        assert joins[0]["session_timeout_ms"] == s.config["session.timeout.ms"]
    finally:
        s.close()


def test_join_group_unknown_member_id_resets_member_id(cluster: FakeCluster) -> None:
    s = joined(cluster, **SHORT_SESSION)
    try:
        cluster.fail(ApiKey.JOIN_GROUP, UNKNOWN_MEMBER_ID)
        cluster.clear_requests()
        s.coordinator.enforce_rebalance("test")
        s.join()
        joins = [body["member_id"] for _h, body in cluster.requests(ApiKey.JOIN_GROUP)]
        assert joins[0] != ""  # the rejoin with the old member id got UNKNOWN_MEMBER_ID
        assert joins[1] == ""  # so the member id was reset
    finally:
        s.close()


@pytest.mark.parametrize(
    "code,error",
    [
        (INCONSISTENT_GROUP_PROTOCOL, Errors.InconsistentGroupProtocolError),
        (INVALID_SESSION_TIMEOUT, Errors.InvalidSessionTimeoutError),
        (INVALID_GROUP_ID, Errors.InvalidGroupIdError),
        (GROUP_AUTHORIZATION_FAILED, Errors.GroupAuthorizationFailedError),
        (GROUP_MAX_SIZE_REACHED, Errors.GroupMaxSizeReachedError),
        (FENCED_INSTANCE_ID, Errors.FencedInstanceIdError),
        (UNSUPPORTED_VERSION, Errors.UnsupportedVersionError),
        (UNKNOWN_SERVER_ERROR, Errors.KafkaError),
    ],
)
def test_join_group_fatal_errors_raise(cluster: FakeCluster, code: int, error: type) -> None:
    cluster.fail(ApiKey.JOIN_GROUP, code)
    s = stack(cluster)
    try:
        with pytest.raises(error):
            s.join()
        assert count(cluster, ApiKey.JOIN_GROUP) == 1
    finally:
        s.close()


# --------------------------------------------------------------------------------- SyncGroup


@pytest.mark.parametrize(
    "code,member_id_reset",
    [
        (REBALANCE_IN_PROGRESS, False),
        (ILLEGAL_GENERATION, False),
        (UNKNOWN_MEMBER_ID, True),
        (COORDINATOR_NOT_AVAILABLE, False),
        (NOT_COORDINATOR, False),
    ],
)
def test_sync_group_errors_rejoin(cluster: FakeCluster, code: int, member_id_reset: bool) -> None:
    s = stack(cluster, **SHORT_SESSION)
    try:
        cluster.fail(ApiKey.SYNC_GROUP, code)
        s.join()
        joins = [body["member_id"] for _h, body in cluster.requests(ApiKey.JOIN_GROUP)]
        # MEMBER_ID_REQUIRED, the join whose sync failed, then the rejoin
        assert len(joins) >= 3
        if member_id_reset:
            assert joins[2] == ""
        else:
            assert joins[2] == joins[1] != ""
        assert count(cluster, ApiKey.SYNC_GROUP) == 2
    finally:
        s.close()


@pytest.mark.parametrize(
    "code,error",
    [
        (GROUP_AUTHORIZATION_FAILED, Errors.GroupAuthorizationFailedError),
        (FENCED_INSTANCE_ID, Errors.FencedInstanceIdError),
        (UNKNOWN_SERVER_ERROR, Errors.KafkaError),
    ],
)
def test_sync_group_fatal_errors_raise(cluster: FakeCluster, code: int, error: type) -> None:
    cluster.fail(ApiKey.SYNC_GROUP, code)
    s = stack(cluster)
    try:
        with pytest.raises(error):
            s.join()
    finally:
        s.close()


# --------------------------------------------------------------------------------- Heartbeat


def _wait_heartbeat_answered(cluster: FakeCluster, s: Stack) -> None:
    n = count(cluster, ApiKey.HEARTBEAT)
    cluster.wait_for_requests(ApiKey.HEARTBEAT, n + 1)


def test_heartbeat_rebalance_in_progress_rejoins_at_next_poll(cluster: FakeCluster) -> None:
    s = joined(cluster)
    try:
        gen = s.coordinator.generation_snapshot()
        cluster.fail(ApiKey.HEARTBEAT, REBALANCE_IN_PROGRESS)
        wait_for(lambda: s.coordinator.rejoin_needed, 10, message="rejoin requested")
        # The generation stays valid: partitions are revoked (not lost) and reassigned.
        assert s.coordinator.generation_snapshot() == gen
        s.listener.calls.clear()
        s.join()
        assert s.listener.names() == ["revoked", "assigned"]
        assert s.coordinator.member_id() == gen.member_id
    finally:
        s.close()


@pytest.mark.parametrize(
    "code,member_id_kept", [(ILLEGAL_GENERATION, True), (UNKNOWN_MEMBER_ID, False)]
)
def test_heartbeat_generation_errors_reset_generation(
    cluster: FakeCluster, code: int, member_id_kept: bool
) -> None:
    s = joined(cluster, **SHORT_SESSION)
    try:
        member = s.coordinator.member_id()
        cluster.fail(ApiKey.HEARTBEAT, code)
        wait_for(
            lambda: s.coordinator.generation_snapshot().generation_id == -1,
            10,
            message="generation reset",
        )
        assert (s.coordinator.member_id() == member) is member_id_kept
        s.listener.calls.clear()
        cluster.clear_requests()
        s.join()
        # Ownership may be gone: the listener hears "lost", not "revoked".
        assert s.listener.names() == ["lost", "assigned"]
        first_join = cluster.requests(ApiKey.JOIN_GROUP)[0][1]
        assert (first_join["member_id"] == member) is member_id_kept
    finally:
        s.close()


def test_heartbeat_fenced_instance_id_is_fatal_at_next_poll(cluster: FakeCluster) -> None:
    s = joined(cluster, group_instance_id="instance-1")
    try:
        cluster.fail(ApiKey.HEARTBEAT, FENCED_INSTANCE_ID)
        wait_for(
            lambda: (
                s.coordinator.heartbeat_thread is None
                or s.coordinator.heartbeat_thread.failure is not None
            ),
            10,
            message="heartbeat failure stored",
        )
        with pytest.raises(Errors.FencedInstanceIdError):
            s.coordinator.poll(s.timer(1000))
    finally:
        s.close()


def test_heartbeat_group_authorization_failure_is_fatal_at_next_poll(cluster: FakeCluster) -> None:
    s = joined(cluster)
    try:
        cluster.fail(ApiKey.HEARTBEAT, GROUP_AUTHORIZATION_FAILED)
        wait_for(
            lambda: (
                s.coordinator.heartbeat_thread is not None
                and s.coordinator.heartbeat_thread.failure is not None
            ),
            10,
            message="heartbeat failure stored",
        )
        with pytest.raises(Errors.GroupAuthorizationFailedError):
            s.coordinator.poll(s.timer(1000))
    finally:
        s.close()


@pytest.mark.parametrize("code", [COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR])
def test_heartbeat_coordinator_errors_rediscover(cluster: FakeCluster, code: int) -> None:
    s = joined(cluster)
    try:
        finds = count(cluster, ApiKey.FIND_COORDINATOR)
        cluster.fail(ApiKey.HEARTBEAT, code)
        wait_for(lambda: count(cluster, ApiKey.FIND_COORDINATOR) > finds, 10, message="rediscovery")
        # Still a member of the same generation.
        wait_for(lambda: s.coordinator.coordinator is not None, 10, message="coordinator known")
        assert s.coordinator.generation_if_stable() is not None
    finally:
        s.close()


def test_heartbeats_continue_without_polls(cluster: FakeCluster) -> None:
    s = joined(cluster)
    try:
        n = count(cluster, ApiKey.HEARTBEAT)
        # heartbeat.interval.ms is 200: several heartbeats arrive while nobody polls.
        cluster.wait_for_requests(ApiKey.HEARTBEAT, n + 3, timeout_s=10)
    finally:
        s.close()


# -------------------------------------------------------------------------------- LeaveGroup


@pytest.mark.parametrize(
    "code", [UNKNOWN_MEMBER_ID, COORDINATOR_NOT_AVAILABLE, UNKNOWN_SERVER_ERROR]
)
def test_leave_group_errors_are_logged_and_close_completes(cluster: FakeCluster, code: int) -> None:
    s = joined(cluster)
    cluster.fail(ApiKey.LEAVE_GROUP, code)
    s.close()
    assert count(cluster, ApiKey.LEAVE_GROUP) == 1
    assert s.coordinator.generation_snapshot() == NO_GENERATION


def test_leave_group_carries_reason(cluster: FakeCluster) -> None:
    s = joined(cluster)
    s.close()
    ((_h, body),) = cluster.requests(ApiKey.LEAVE_GROUP)
    member = body["members"][0]
    assert member["member_id"]
    assert "closed" in (member["reason"] or "")


def test_static_member_close_does_not_leave_unless_asked(cluster: FakeCluster) -> None:
    s = joined(cluster, group_instance_id="static-1")
    s.close()
    assert count(cluster, ApiKey.LEAVE_GROUP) == 0
    s2 = joined(cluster, group_instance_id="static-1")
    s2.close(leave_group=True)
    ((_h, body),) = cluster.requests(ApiKey.LEAVE_GROUP)
    assert body["members"][0]["group_instance_id"] == "static-1"


# ------------------------------------------------------------------------------- OffsetCommit

OFFSETS = {TP0: OffsetAndMetadata(42, "meta")}


@pytest.mark.parametrize(
    "code",
    [
        COORDINATOR_LOAD_IN_PROGRESS,
        UNKNOWN_TOPIC_OR_PARTITION,
        COORDINATOR_NOT_AVAILABLE,
        NOT_COORDINATOR,
        REQUEST_TIMED_OUT,
    ],
)
def test_commit_retriable_errors_are_retried(cluster: FakeCluster, code: int) -> None:
    s = joined(cluster)
    try:
        cluster.fail(ApiKey.OFFSET_COMMIT, code)
        assert s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
        assert count(cluster, ApiKey.OFFSET_COMMIT) == 2
        assert cluster.committed("g")[(TOPIC, 0)][0] == 42
        assert cluster.committed("g")[(TOPIC, 0)][2] == "meta"
    finally:
        s.close()


def test_commit_follows_a_moving_coordinator_without_a_growing_backoff(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit answered NOT_COORDINATOR is sent to the rediscovered coordinator after
    retry.backoff.ms each time; the exponential backoff is for a coordinator that is loading
    (COORDINATOR_LOAD_IN_PROGRESS) and starts from retry.backoff.ms at the new coordinator."""
    s = joined(cluster, retry_backoff_ms=100, retry_backoff_max_ms=10_000)
    waits: list[int] = []
    original = s.coordinator.backoff_wait
    me = threading.current_thread()

    def recording(timer: Any, backoff_ms: int) -> None:
        if threading.current_thread() is me:
            waits.append(backoff_ms)
        original(timer, backoff_ms)

    monkeypatch.setattr(s.coordinator, "backoff_wait", recording)
    try:
        cluster.fail(ApiKey.OFFSET_COMMIT, NOT_COORDINATOR, times=3)
        cluster.fail(ApiKey.OFFSET_COMMIT, COORDINATOR_LOAD_IN_PROGRESS, times=3)
        assert s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(20_000))
        assert count(cluster, ApiKey.OFFSET_COMMIT) == 7
        assert cluster.committed("g")[(TOPIC, 0)][0] == 42
        # retry.backoff.ms with its 20 % jitter, then doubling while the coordinator loads.
        assert len(waits) == 6, waits
        assert all(80 <= w <= 120 for w in waits[:3]), waits
        assert 80 <= waits[3] <= 120 and 160 <= waits[4] <= 240 and 320 <= waits[5] <= 480, waits
    finally:
        s.close()


@pytest.mark.parametrize(
    "code,error",
    [
        (OFFSET_METADATA_TOO_LARGE, Errors.OffsetMetadataTooLargeError),
        (INVALID_COMMIT_OFFSET_SIZE, Errors.InvalidCommitOffsetSizeError),
        (GROUP_AUTHORIZATION_FAILED, Errors.GroupAuthorizationFailedError),
        (TOPIC_AUTHORIZATION_FAILED, Errors.TopicAuthorizationFailedError),
        (FENCED_INSTANCE_ID, Errors.FencedInstanceIdError),
        (UNKNOWN_SERVER_ERROR, Errors.KafkaError),
    ],
)
def test_commit_fatal_errors_raise(cluster: FakeCluster, code: int, error: type) -> None:
    s = joined(cluster)
    try:
        cluster.fail(ApiKey.OFFSET_COMMIT, code)
        with pytest.raises(error):
            s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
        assert count(cluster, ApiKey.OFFSET_COMMIT) == 1
    finally:
        s.close()


def test_commit_rebalance_in_progress_raises_and_requests_rejoin(cluster: FakeCluster) -> None:
    s = joined(cluster)
    try:
        gen = s.coordinator.generation_snapshot()
        cluster.fail(ApiKey.OFFSET_COMMIT, REBALANCE_IN_PROGRESS)
        with pytest.raises(Errors.RebalanceInProgressError, match="poll"):
            s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
        assert s.coordinator.rejoin_needed
        # The generation is kept: the member may still commit after the rebalance.
        assert s.coordinator.generation_snapshot() == gen
    finally:
        s.close()


@pytest.mark.parametrize(
    "code,cause",
    [(UNKNOWN_MEMBER_ID, "removed this consumer"), (ILLEGAL_GENERATION, "already rebalanced")],
)
def test_commit_generation_errors_raise_commit_failed(
    cluster: FakeCluster, code: int, cause: str
) -> None:
    s = joined(cluster)
    try:
        cluster.fail(ApiKey.OFFSET_COMMIT, code)
        with pytest.raises(Errors.CommitFailedError, match=cause) as raised:
            s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
        # Nothing says the poll loop was slow: do not send the user to max.poll.interval.ms.
        assert "max.poll.interval.ms" not in str(raised.value)
        assert s.coordinator.generation_snapshot().generation_id == -1
        assert s.coordinator.rejoin_needed
    finally:
        s.close()


def test_commit_async_callbacks_run_in_order_with_retriable_wrapped(cluster: FakeCluster) -> None:
    s = joined(cluster)
    try:
        seen: list[tuple[int, type | None]] = []
        cluster.fail(ApiKey.OFFSET_COMMIT, COORDINATOR_LOAD_IN_PROGRESS)
        for offset in (1, 2, 3):
            s.coordinator.commits.commit_offsets_async(
                {TP0: OffsetAndMetadata(offset)},
                lambda offsets, exc: seen.append(
                    (offsets[TP0].offset, type(exc) if exc is not None else None)
                ),
            )
        # A sync commit returns only after earlier async callbacks ran, in order.
        assert s.coordinator.commits.commit_offsets_sync({TP0: OffsetAndMetadata(4)}, s.timer(5000))
        assert seen == [(1, Errors.RetriableCommitFailedError), (2, None), (3, None)]
        assert cluster.committed("g")[(TOPIC, 0)][0] == 4
    finally:
        s.close()


def test_commit_without_coordinator_async_finds_it_first(cluster: FakeCluster) -> None:
    s = stack(cluster)
    try:
        s.subscriptions.unsubscribe()
        s.subscriptions.assign_from_user([TP0])
        done: list[BaseException | None] = []
        s.coordinator.commits.commit_offsets_async(OFFSETS, lambda o, e: done.append(e))
        s.poll_until(lambda: done, 5000)
        assert done == [None]
        # Manual assignment commits with generation -1 and no member id.
        ((_h, body),) = cluster.requests(ApiKey.OFFSET_COMMIT)
        assert body["generation_id_or_member_epoch"] == -1
        assert body["member_id"] == ""
    finally:
        s.close()


# -------------------------------------------------------------------------------- OffsetFetch


def _partition_error(code: int) -> Any:
    """An OffsetFetch answer with ``code`` on every partition but no group-level error."""

    def answer(node: int, header: Any, body: dict[str, Any]) -> Reply:
        full = error_body(ApiKey.OFFSET_FETCH, header.api_version, code, body)
        for group in full.get("groups") or []:
            group["error_code"] = 0
        if "error_code" in full:
            full["error_code"] = 0
        return Reply(full)

    return answer


@pytest.mark.parametrize("code", [COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR])
def test_offset_fetch_group_level_retriable_errors(cluster: FakeCluster, code: int) -> None:
    s = joined(cluster)
    try:
        cluster.set_committed("g", TOPIC, 0, 17, metadata="m")
        cluster.fail(ApiKey.OFFSET_FETCH, code)
        got = s.coordinator.commits.fetch_committed_offsets({TP0}, s.timer(5000))
        assert got == {TP0: OffsetAndMetadata(17, "m")}
        assert count(cluster, ApiKey.OFFSET_FETCH) == 2
    finally:
        s.close()


def test_offset_fetch_unstable_offsets_are_retried(cluster: FakeCluster) -> None:
    s = joined(cluster, isolation_level="read_committed")
    try:
        cluster.set_committed("g", TOPIC, 0, 5)
        cluster.script(ApiKey.OFFSET_FETCH, [_partition_error(UNSTABLE_OFFSET_COMMIT)] * 2)
        got = s.coordinator.commits.fetch_committed_offsets({TP0}, s.timer(5000))
        assert got == {TP0: OffsetAndMetadata(5)}
        bodies = [body for _h, body in cluster.requests(ApiKey.OFFSET_FETCH)]
        assert len(bodies) == 3
        assert all(b["require_stable"] for b in bodies)
    finally:
        s.close()


@pytest.mark.parametrize(
    "code,error,partition_level",
    [
        (GROUP_AUTHORIZATION_FAILED, Errors.GroupAuthorizationFailedError, False),
        (UNKNOWN_SERVER_ERROR, Errors.KafkaError, False),
        (UNKNOWN_TOPIC_OR_PARTITION, Errors.KafkaError, True),
        (TOPIC_AUTHORIZATION_FAILED, Errors.TopicAuthorizationFailedError, True),
    ],
)
def test_offset_fetch_fatal_errors(
    cluster: FakeCluster, code: int, error: type, partition_level: bool
) -> None:
    s = joined(cluster)
    try:
        if partition_level:
            cluster.script(ApiKey.OFFSET_FETCH, [_partition_error(code)])
        else:
            cluster.fail(ApiKey.OFFSET_FETCH, code)
        with pytest.raises(error):
            s.coordinator.commits.fetch_committed_offsets({TP0}, s.timer(5000))
    finally:
        s.close()


def test_refresh_committed_offsets_seeks_only_partitions_with_a_commit(
    cluster: FakeCluster,
) -> None:
    s = joined(cluster)
    try:
        cluster.set_committed("g", TOPIC, 1, 99)
        assert s.coordinator.commits.refresh_committed_offsets_if_needed(s.timer(5000))
        pos = s.subscriptions.position(TopicPartition(TOPIC, 1))
        assert pos is not None and pos.offset == 99
        # No commit: left for the reset policy.
        assert TopicPartition(TOPIC, 0) in s.subscriptions.initializing_partitions()
    finally:
        s.close()


def test_commit_after_expulsion_names_the_session_not_the_poll_interval(
    cluster: FakeCluster,
) -> None:
    s = joined(cluster, **SHORT_SESSION)
    try:
        cluster.fail(ApiKey.HEARTBEAT, UNKNOWN_MEMBER_ID)
        wait_for(
            lambda: s.coordinator.generation_snapshot().generation_id == -1,
            10,
            message="generation reset by the heartbeat answer",
        )
        with pytest.raises(Errors.CommitFailedError) as raised:
            s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
        message = str(raised.value)
        assert "UNKNOWN_MEMBER_ID in a Heartbeat response" in message, message
        assert "session.timeout.ms (1000 ms)" in message, message
        assert "max.poll.interval.ms" not in message, message
    finally:
        s.close()


def test_commit_after_poll_timeout_names_max_poll_interval(cluster: FakeCluster) -> None:
    s = joined(cluster, **SHORT_SESSION)
    try:
        # Nobody polls: after max.poll.interval.ms the heartbeat thread leaves the group.
        cluster.wait_for_requests(ApiKey.LEAVE_GROUP, 1, timeout_s=15)
        with pytest.raises(Errors.CommitFailedError, match=r"max.poll.interval.ms \(2000 ms\)"):
            s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
        # The member joins again at its next poll; the old cause no longer applies.
        s.join()
        s.coordinator.commits.commit_offsets_sync(OFFSETS, s.timer(5000))
    finally:
        s.close()
