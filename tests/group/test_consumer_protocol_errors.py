"""The consumer group protocol (KIP-848) against a scripted coordinator (fake broker).

Every ConsumerGroupHeartbeat error code gets the Java client's reaction; a heartbeat answered
after the member left changes nothing; an assignment naming a topic id the metadata does not
know yet waits until it does; a revocation and an assignment in one answer are applied in
order (revoke, assign, then acknowledge).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer import errors as Errors
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.internals.group.consumer_membership_manager import ConsumerMemberState
from kafkaconsumer.protocol import SUPPORTED_VERSIONS
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition
from tests.group.harness import Stack
from tests.helpers import wait_for
from tests.support.fake_broker import FakeCluster, Reply

pytestmark = pytest.mark.timeout(60)

TOPIC = "orders"
CGH = 68
FIND_COORDINATOR = 10


class ScriptedCoordinator:
    """Answers ConsumerGroupHeartbeat like a KIP-848 coordinator, with scripted exceptions.

    ``target`` is the assignment (topic id -> partitions) handed out; changing it through
    :meth:`assign` bumps the epoch and sends it with the next answer. ``script`` entries
    (callables of the request body) answer instead of the default, in order.
    """

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.script: list[Callable[[dict[str, Any]], Any]] = []
        self.target: dict[uuid.UUID, list[int]] = {}
        self.epoch = 0
        self.send_assignment = True
        self.interval_ms = 100
        cluster.set_api_versions({**SUPPORTED_VERSIONS, CGH: (0, 1)})
        cluster.on(CGH, self.handle)

    def assign(self, target: dict[uuid.UUID, list[int]]) -> None:
        with self.lock:
            self.target = dict(target)
            self.epoch += 1
            self.send_assignment = True

    def answer(self, body: dict[str, Any], **extra: Any) -> dict[str, Any]:
        out = {
            "error_code": 0,
            "member_id": body["member_id"],
            "member_epoch": self.epoch,
            "heartbeat_interval_ms": self.interval_ms,
            "assignment": None,
        }
        out.update(extra)
        return out

    def handle(self, node: int, header: Any, body: dict[str, Any]) -> Any:
        with self.lock:
            self.requests.append(body)
            if body["member_epoch"] < 0:
                return {
                    "error_code": 0,
                    "member_id": body["member_id"],
                    "member_epoch": body["member_epoch"],
                    "heartbeat_interval_ms": 0,
                }
            if self.script:
                return self.script.pop(0)(body)
            if body["member_epoch"] == 0:
                self.epoch = max(self.epoch, 1)
                self.send_assignment = True
            assignment = None
            if self.send_assignment:
                self.send_assignment = False
                assignment = {
                    "topic_partitions": [
                        {"topic_id": t, "partitions": p} for t, p in self.target.items()
                    ]
                }
            return self.answer(body, assignment=assignment)

    def heartbeats(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(n_brokers=1, topics={TOPIC: 3}) as c:
        yield c


def tp(p: int) -> TopicPartition:
    return TopicPartition(TOPIC, p)


def member(cluster: FakeCluster, **overrides: Any) -> Stack:
    s = Stack(cluster.bootstrap_servers, "g848", group_protocol="consumer", **overrides)
    s.subscribe([TOPIC])
    return s


def joined(cluster: FakeCluster, coord: ScriptedCoordinator, parts: list[int]) -> Stack:
    coord.assign({cluster.topic_id(TOPIC): parts})
    s = member(cluster)
    s.poll_until(
        lambda: (
            s.subscriptions.assigned_partitions() == {tp(p) for p in parts}
            and s.coordinator.membership is not None
            and s.coordinator.membership.state is ConsumerMemberState.STABLE
        )
    )
    return s


def state(s: Stack) -> ConsumerMemberState:
    current: ConsumerMemberState = s.coordinator.membership.state
    return current


def test_join_reconcile_acknowledge_then_deltas(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0, 1])
    try:
        first = coord.heartbeats()[0]
        assert first["member_epoch"] == 0
        assert first["subscribed_topic_names"] == [TOPIC]
        assert first["rebalance_timeout_ms"] == 10000
        assert first["topic_partitions"] == []
        acks = [b for b in coord.heartbeats() if b.get("topic_partitions")]
        assert acks and acks[0]["topic_partitions"] == [
            {"topic_id": cluster.topic_id(TOPIC), "partitions": [0, 1]}
        ]
        # Once acknowledged, heartbeats carry only what changed: nothing.
        n = len(coord.heartbeats())
        wait_for(lambda: len(coord.heartbeats()) >= n + 2, 10, message="more heartbeats")
        last = coord.heartbeats()[-1]
        assert last["subscribed_topic_names"] is None and last["topic_partitions"] is None
        assert last["member_epoch"] == coord.epoch
        assert s.listener.names() == ["assigned"]
        # Commits carry the member epoch.
        s.subscriptions.seek(tp(0), 5)
        cluster.script(
            8,
            [
                {
                    "topics": [
                        {"name": TOPIC, "partitions": [{"partition_index": 0, "error_code": 0}]}
                    ]
                }
            ],
        )
        assert s.coordinator.commits.commit_offsets_sync(
            s.subscriptions.all_consumed(), s.timer(5000)
        )
        commit = cluster.requests(8)[-1][1]
        assert commit["generation_id_or_member_epoch"] == coord.epoch
        assert commit["member_id"] == s.coordinator.member_id()
    finally:
        s.close()


def test_revocation_and_assignment_in_one_answer(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0, 1])
    try:
        coord.assign({cluster.topic_id(TOPIC): [1, 2]})
        s.poll_until(
            lambda: (
                s.subscriptions.assigned_partitions() == {tp(1), tp(2)}
                and state(s) is ConsumerMemberState.STABLE
            )
        )
        assert s.listener.calls == [
            ("assigned", [tp(0), tp(1)]),
            ("revoked", [tp(0)]),
            ("assigned", [tp(2)]),
        ]
        acks = [b["topic_partitions"] for b in coord.heartbeats() if b.get("topic_partitions")]
        assert acks[-1] == [{"topic_id": cluster.topic_id(TOPIC), "partitions": [1, 2]}]
    finally:
        s.close()


def test_unknown_topic_id_waits_until_the_topic_appears(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    later = uuid.uuid4()
    coord.assign({cluster.topic_id(TOPIC): [0], later: [0, 1]})
    s = Stack(cluster.bootstrap_servers, "g848", group_protocol="consumer")
    s.subscribe([TOPIC, "later"])
    try:
        s.poll_until(lambda: s.subscriptions.assigned_partitions() == {tp(0)})
        # Acknowledged what resolved; the unknown id waits.
        wait_for(
            lambda: any(
                b.get("topic_partitions")
                == [{"topic_id": cluster.topic_id(TOPIC), "partitions": [0]}]
                for b in coord.heartbeats()
            ),
            10,
            message="the partial acknowledgement",
        )
        cluster.add_topic("later", 2, topic_id=later)
        s.poll_until(
            lambda: (
                s.subscriptions.assigned_partitions()
                == {tp(0), TopicPartition("later", 0), TopicPartition("later", 1)}
            ),
            timeout_ms=15000,
        )
        s.poll_until(lambda: state(s) is ConsumerMemberState.STABLE)
    finally:
        s.close()


@pytest.mark.parametrize("error", [Errors.FencedMemberEpochError, Errors.UnknownMemberIdError])
def test_fencing_releases_partitions_as_lost_and_rejoins_with_epoch_0(
    cluster: FakeCluster, error: type[Errors.BrokerResponseError]
) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0, 1])
    try:
        member_id = s.coordinator.member_id()
        coord.script.append(lambda body: coord.answer(body, error_code=error.errno))
        s.poll_until(lambda: ("lost", [tp(0), tp(1)]) in s.listener.calls)
        s.poll_until(
            lambda: (
                state(s) is ConsumerMemberState.STABLE
                and s.subscriptions.assigned_partitions() == {tp(0), tp(1)}
            )
        )
        rejoin = [b for b in coord.heartbeats() if b["member_epoch"] == 0]
        assert len(rejoin) >= 2
        # The same member id, a full heartbeat.
        assert rejoin[-1]["member_id"] == member_id
        assert rejoin[-1]["subscribed_topic_names"] == [TOPIC]
        assert s.listener.names() == ["assigned", "lost", "assigned"]
    finally:
        s.close()


def test_commit_after_fencing_names_the_expulsion_not_the_poll_interval(
    cluster: FakeCluster,
) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0, 1])
    try:
        coord.script.append(
            lambda body: coord.answer(body, error_code=Errors.FencedMemberEpochError.errno)
        )
        # No poll: the heartbeat thread alone learns that the member was fenced.
        wait_for(lambda: state(s) is ConsumerMemberState.FENCED, 10, message="member fenced")
        with pytest.raises(Errors.CommitFailedError) as raised:
            s.coordinator.commits.commit_offsets_sync(
                {tp(0): OffsetAndMetadata(1, "")}, s.timer(5000)
            )
        message = str(raised.value)
        assert "FENCED_MEMBER_EPOCH in a ConsumerGroupHeartbeat response" in message, message
        assert "max.poll.interval.ms" not in message, message
    finally:
        s.close()


@pytest.mark.parametrize(
    "code", [Errors.NotCoordinatorError.errno, Errors.CoordinatorNotAvailableError.errno]
)
def test_coordinator_errors_rediscover_and_keep_the_membership(
    cluster: FakeCluster, code: int
) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0])
    try:
        finds = len(cluster.requests(FIND_COORDINATOR))
        n = len(coord.heartbeats())
        coord.script.append(lambda body: coord.answer(body, error_code=code))
        wait_for(
            lambda: len(cluster.requests(FIND_COORDINATOR)) > finds,
            10,
            message="a new FindCoordinator",
        )
        wait_for(lambda: len(coord.heartbeats()) >= n + 3, 10, message="heartbeats resume")
        assert state(s) is ConsumerMemberState.STABLE
        assert s.listener.names() == ["assigned"]
    finally:
        s.close()


def test_load_in_progress_is_retried_after_a_backoff(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    coord.script.extend(
        [lambda body: coord.answer(body, error_code=Errors.CoordinatorLoadInProgressError.errno)]
        * 3
    )
    coord.assign({cluster.topic_id(TOPIC): [0]})
    s = member(cluster)
    try:
        s.poll_until(lambda: state(s) is ConsumerMemberState.STABLE)
        # The failed heartbeats were full ones, and so is the retry.
        assert [b["member_epoch"] for b in coord.heartbeats()[:4]] == [0, 0, 0, 0]
    finally:
        s.close()


@pytest.mark.parametrize(
    "error",
    [
        Errors.GroupAuthorizationFailedError,
        Errors.InvalidRequestError,
        Errors.GroupMaxSizeReachedError,
        Errors.UnsupportedAssignorError,
        Errors.UnsupportedVersionError,
        Errors.UnreleasedInstanceIdError,
        Errors.FencedInstanceIdError,
        Errors.InvalidRegularExpressionError,
        Errors.for_code(-1),
    ],
)
def test_fatal_errors_are_raised_by_the_next_poll(
    cluster: FakeCluster, error: type[Errors.BrokerResponseError]
) -> None:
    coord = ScriptedCoordinator(cluster)
    coord.script.append(
        lambda body: coord.answer(body, error_code=error.errno, error_message="scripted")
    )
    s = member(cluster)
    try:
        with pytest.raises(error):
            s.poll_until(lambda: False, timeout_ms=10000)
        assert state(s) is ConsumerMemberState.FATAL
        # Still raised: the member does not carry on as if nothing happened.
        with pytest.raises(error):
            s.coordinator.poll(s.timer(100))
    finally:
        s.close()


def test_topic_authorization_failure_is_raised_and_heartbeats_go_on(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0])
    try:
        coord.script.append(
            lambda body: coord.answer(
                body, error_code=Errors.TopicAuthorizationFailedError.errno, error_message="denied"
            )
        )
        with pytest.raises(Errors.TopicAuthorizationFailedError):
            s.poll_until(lambda: False, timeout_ms=10000)
        n = len(coord.heartbeats())
        wait_for(lambda: len(coord.heartbeats()) > n + 1, 10, message="heartbeats go on")
        s.poll_until(lambda: state(s) is ConsumerMemberState.STABLE)
    finally:
        s.close()


def test_heartbeat_answered_after_the_member_left_changes_nothing(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0, 1])
    try:
        # The next heartbeat's answer (a new assignment) arrives only after we left.
        coord.script.append(
            lambda body: Reply(
                coord.answer(
                    body,
                    member_epoch=coord.epoch + 1,
                    assignment={
                        "topic_partitions": [
                            {"topic_id": cluster.topic_id(TOPIC), "partitions": [2]}
                        ]
                    },
                ),
                delay_s=1.0,
            )
        )
        n = len(coord.heartbeats())
        wait_for(lambda: len(coord.heartbeats()) > n, 10, message="the delayed heartbeat sent")
        s.coordinator.on_leave_prepare()
        leave = s.coordinator.maybe_leave_group("test")
        assert leave is not None
        s.client.poll(timeout_ms=5000, future=leave)
        assert state(s) is ConsumerMemberState.UNSUBSCRIBED
        s.client.poll(timeout_ms=1500)
        assert state(s) is ConsumerMemberState.UNSUBSCRIBED
        assert s.subscriptions.assigned_partitions() == set()
        assert s.listener.names() == ["assigned", "revoked"]
        assert [b["member_epoch"] for b in coord.heartbeats() if b["member_epoch"] < 0] == [-1]
    finally:
        s.close()


def test_stale_member_epoch_on_commit_is_retried_with_the_new_epoch(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0])
    try:
        stale = Errors.StaleMemberEpochError.errno
        cluster.script(
            8,
            [
                {
                    "topics": [
                        {"name": TOPIC, "partitions": [{"partition_index": 0, "error_code": code}]}
                    ]
                }
                for code in (stale, 0)
            ],
        )
        s.subscriptions.seek(tp(0), 3)
        assert s.coordinator.commits.commit_offsets_sync(
            s.subscriptions.all_consumed(), s.timer(5000)
        )
        assert len(cluster.requests(8)) == 2
    finally:
        s.close()


def test_broker_without_the_protocol_fails_the_first_poll_naming_the_setting(
    cluster: FakeCluster,
) -> None:
    # A broker that does not advertise ConsumerGroupHeartbeat (as brokers before Kafka 4.0).
    cluster.set_api_versions({k: v for k, v in SUPPORTED_VERSIONS.items() if k != CGH})
    s = member(cluster)
    try:
        with pytest.raises(Errors.UnsupportedVersionError, match="group.protocol"):
            s.poll_until(lambda: False, timeout_ms=10000)
    finally:
        s.close()


def test_first_heartbeat_carries_assignor_rack_and_static_instance(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    coord.assign({cluster.topic_id(TOPIC): [0]})
    s = member(
        cluster, group_remote_assignor="range", client_rack="rack-7", group_instance_id="instance-1"
    )
    try:
        s.poll_until(lambda: state(s) is ConsumerMemberState.STABLE)
        first = coord.heartbeats()[0]
        assert (first["server_assignor"], first["rack_id"], first["instance_id"]) == (
            "range",
            "rack-7",
            "instance-1",
        )
        s.close()
        # A static member leaves with epoch -2: the broker keeps its partitions for a restart.
        assert coord.heartbeats()[-1]["member_epoch"] == -2
    finally:
        s.close()


@pytest.mark.parametrize(
    ("instance", "leave_group", "epochs"),
    [
        (None, None, [-1]),
        (None, True, [-1]),
        (None, False, []),
        ("instance-1", None, [-2]),
        ("instance-1", True, [-1]),
        ("instance-1", False, [-2]),
    ],
)
def test_close_membership_operation_sends_the_leave_epoch(
    cluster: FakeCluster, instance: str | None, leave_group: bool | None, epochs: list[int]
) -> None:
    """close() as CloseOptions asks (KIP-1092): DEFAULT leaves with -1 (a static member with
    -2), LEAVE_GROUP with -1, REMAIN_IN_GROUP sends nothing (a static member -2)."""
    coord = ScriptedCoordinator(cluster)
    coord.assign({cluster.topic_id(TOPIC): [0]})
    s = member(cluster, group_instance_id=instance)
    try:
        s.poll_until(lambda: state(s) is ConsumerMemberState.STABLE)
        s.close(leave_group=leave_group)
        assert [b["member_epoch"] for b in coord.heartbeats() if b["member_epoch"] < 0] == epochs
    finally:
        s.close()


def test_keys_of_the_other_protocol_are_refused_by_the_consumer() -> None:
    # As Java's ConsumerConfig: set, they would be ignored (the broker owns the consumer
    # protocol's timers and assignor), so construction fails naming them.
    with pytest.raises(ConfigError, match=r"^partition\.assignment\.strategy cannot be set"):
        KafkaConsumer(
            {
                "bootstrap.servers": "127.0.0.1:9",
                "group.id": "g848",
                "group.protocol": "consumer",
                "partition.assignment.strategy": ["range"],
            }
        )


def test_offset_fetch_carries_the_member_epoch_and_retries_a_stale_one(
    cluster: FakeCluster,
) -> None:
    """OffsetFetch v9 names the member and its epoch (KIP-848); STALE_MEMBER_EPOCH is retried
    with the epoch the member holds then, as Java does while the member is in the group."""
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0])
    try:
        assert s.coordinator.commits.fetch_committed_offsets({tp(0)}, s.timer(5000)) == {
            tp(0): None
        }
        header, body = cluster.requests(9)[-1]
        assert header.api_version >= 9
        group = body["groups"][0]
        assert (group["member_id"], group["member_epoch"]) == (
            s.coordinator.member_id(),
            coord.epoch,
        )
        before = len(cluster.requests(9))
        cluster.fail(9, Errors.StaleMemberEpochError.errno)
        offsets = s.coordinator.commits.fetch_committed_offsets({tp(0)}, s.timer(5000))
        assert offsets == {tp(0): None}
        sent = [b["groups"][0] for _h, b in cluster.requests(9)[before:]]
        assert len(sent) == 2
        assert all(g["member_epoch"] == coord.epoch for g in sent)
    finally:
        s.close()


def test_offset_fetch_unknown_member_id_is_raised_not_retried(cluster: FakeCluster) -> None:
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0])
    try:
        before = len(cluster.requests(9))
        cluster.fail(9, Errors.UnknownMemberIdError.errno)
        with pytest.raises(Errors.UnknownMemberIdError, match="OffsetFetch"):
            s.coordinator.commits.fetch_committed_offsets({tp(0)}, s.timer(5000))
        assert len(cluster.requests(9)) == before + 1
    finally:
        s.close()


def test_offset_fetch_stale_epoch_out_of_the_group_fails(cluster: FakeCluster) -> None:
    """Without a valid epoch (not in the group) the request carries none, and Java does not
    retry STALE_MEMBER_EPOCH: it is raised."""
    ScriptedCoordinator(cluster)
    s = Stack(cluster.bootstrap_servers, "g848", group_protocol="consumer")
    try:
        cluster.fail(9, Errors.StaleMemberEpochError.errno)
        with pytest.raises(Errors.StaleMemberEpochError):
            s.coordinator.commits.fetch_committed_offsets({tp(0)}, s.timer(5000))
        wait_for(lambda: cluster.requests(9), 5, message="the OffsetFetch recorded")
        body = cluster.requests(9)[-1][1]
        for group in body.get("groups") or [body]:
            assert group.get("member_id") is None and group.get("member_epoch", -1) == -1
    finally:
        s.close()


@pytest.mark.parametrize(
    ("versions", "pattern", "expected"),
    [
        ((0, 1), r"ord.*", "ord.*"),
        ((0, 0), r"ord.*", None),  # a coordinator without v1 (Kafka 3.7-3.9)
        ((0, 1), r"ord(?!x).*", None),  # a look-ahead: RE2 has none
    ],
)
def test_pattern_goes_to_the_broker_where_it_can(
    cluster: FakeCluster, versions: tuple[int, int], pattern: str, expected: str | None
) -> None:
    import re

    coord = ScriptedCoordinator(cluster)
    cluster.set_api_versions({**SUPPORTED_VERSIONS, CGH: versions})
    coord.assign({cluster.topic_id(TOPIC): [0]})
    s = Stack(cluster.bootstrap_servers, "g848", group_protocol="consumer")
    s.subscribe(re.compile(pattern))
    try:
        s.poll_until(lambda: s.subscriptions.assigned_partitions() == {tp(0)})
        first = coord.heartbeats()[0]
        assert first.get("subscribed_topic_regex") == expected
        if expected is None:
            # Matched by the client: the names it found go to the broker.
            wait_for(
                lambda: any(b.get("subscribed_topic_names") == [TOPIC] for b in coord.heartbeats()),
                10,
                message="the matched names sent",
            )
        else:
            assert first["subscribed_topic_names"] is None
            assert not any(b.get("subscribed_topic_names") for b in coord.heartbeats())
    finally:
        s.close()


def test_kip983_new_partitions_are_taken_while_a_revocation_is_delayed(
    cluster: FakeCluster,
) -> None:
    """KIP-983: a revocation waits for the application (delay_revoke) while the partitions
    arriving in the same target are assigned and fetched at once; the broker hears of the
    revocation only once it completed."""
    coord = ScriptedCoordinator(cluster)
    s = joined(cluster, coord, [0, 1])
    tid = cluster.topic_id(TOPIC)
    try:
        s.coordinator.to_be_revoked()  # KIP-983 mode
        coord.assign({tid: [1, 2]})
        s.poll_until(lambda: tp(2) in s.subscriptions.assigned_partitions())
        assert s.coordinator.to_be_revoked() == {tp(0)}
        assert s.coordinator.delay_revoke({tp(0)})
        assert s.subscriptions.assigned_partitions() == {tp(0), tp(1), tp(2)}
        assert not s.subscriptions.is_fetchable(tp(0))
        assert s.listener.calls == [("assigned", [tp(0), tp(1)]), ("assigned", [tp(2)])]
        # The broker is told the member owns 0 (still), 1 and 2.
        wait_for(
            lambda: any(
                b.get("topic_partitions") == [{"topic_id": tid, "partitions": [0, 1, 2]}]
                for b in coord.heartbeats()
            ),
            10,
            message="partition 2 acknowledged while 0 is still owned",
        )
        s.poll_until(lambda: s.subscriptions.assigned_partitions() == {tp(1), tp(2)})
        assert s.listener.calls[-1] == ("revoked", [tp(0)])
        s.poll_until(
            lambda: any(
                b.get("topic_partitions") == [{"topic_id": tid, "partitions": [1, 2]}]
                for b in coord.heartbeats()
            )
        )
    finally:
        s.close()
