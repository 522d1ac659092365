"""Unit tests of the OffsetFetcher's leader checks with an in-process fake client."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kafkaconsumer.errors import KafkaConnectionError
from kafkaconsumer.internals.fetch.offset_fetcher import OffsetFetcher
from kafkaconsumer.internals.subscription_state import (
    FetchPosition,
    LeaderAndEpoch,
    SubscriptionState,
)
from kafkaconsumer.network.client import seek_fetch_node_id
from kafkaconsumer.network.future import Future
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.timer import Timer
from tests.support.mock_time import MockTime

from .test_fetcher_unit import FakeCluster, FakeMetadata

pytestmark = pytest.mark.timeout(30)

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
T2 = TopicPartition("t", 2)


class RawClient:
    """The NetworkClient under the wrapper: only to be read under the wrapper's lock."""

    def __init__(self, outer: LockingClient, advertised: dict[int, tuple[int, int]]) -> None:
        self.outer = outer
        self.advertised = advertised

    def broker_api_versions(self, node: int) -> dict[int, tuple[int, int]]:
        assert self.outer.locked, "read outside the network client's lock"
        return dict(self.advertised)


class _NoRequests:
    """The request half of ``OffsetClient`` for doubles whose tests send nothing."""

    def send(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> Future[Any]:
        raise AssertionError(f"unexpected request {api_key} to node {node_id}")

    def poll(self, timeout_ms: float | None = None, future: Future[Any] | None = None) -> bool:
        return future is None or future.is_done

    def execute(self, fn: Callable[[Any], Any]) -> Any:
        raise AssertionError("unexpected direct access to the network client")

    def await_metadata_update(self, timeout_ms: float) -> bool:
        return True

    def has_pending(self, node_id: int, api_key: int) -> bool:
        return False

    def is_unavailable(self, node_id: int) -> bool:
        return False


class LockingClient(_NoRequests):
    """Stands for ConsumerNetworkClient: api_version and execute take its lock."""

    def __init__(self, advertised: dict[int, tuple[int, int]]) -> None:
        self.client = RawClient(self, advertised)
        self.locked = False
        self.lock_taken = 0

    def api_version(self, node: int, api_key: int) -> int | None:
        self.lock_taken += 1
        return None  # negotiated version not known: fall back to the advertised list

    def execute(self, fn: Callable[[Any], Any]) -> Any:
        self.lock_taken += 1
        self.locked = True
        try:
            return fn(self.client)
        finally:
            self.locked = False


def _moved_leader_setup(
    client: LockingClient | RecordingClient,
) -> tuple[OffsetFetcher, SubscriptionState]:
    subs = SubscriptionState("earliest")
    subs.assign_from_user([T0, T1, T2])
    for tp in (T0, T1, T2):
        subs.seek_validated(tp, FetchPosition(5, 1, LeaderAndEpoch(0, 1)))
    md = FakeMetadata({T0: 1, T1: 1, T2: 1})  # every leader moved to node 1 (epoch 0)
    return OffsetFetcher(client, md, subs, {}, time=MockTime()), subs


def test_broker_lacking_the_api_is_read_under_the_client_lock() -> None:
    # Node 1 advertised ApiVersions without OffsetForLeaderEpoch: positions move unvalidated.
    client = LockingClient({int(ApiKey.FETCH): (0, 12)})
    of, subs = _moved_leader_setup(client)
    of._point_positions_at_current_leaders()
    for tp in (T0, T1, T2):
        assert not subs.awaiting_validation(tp)
        pos = subs.position(tp)
        assert pos is not None and pos.current_leader.leader == 1


def test_leader_api_support_is_asked_once_per_node() -> None:
    client = LockingClient({int(ApiKey.FETCH): (0, 12)})
    of, _subs = _moved_leader_setup(client)
    of._point_positions_at_current_leaders()
    assert client.lock_taken == 2  # api_version + advertised versions, for node 1 only


class RecordingClient(_NoRequests):
    """Records ListOffsets requests; :meth:`answer` decides what becomes of each (by default
    it stays pending)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Mapping[str, Any]]] = []

    @property
    def sends(self) -> int:
        return len(self.sent)

    def api_version(self, node: int, api_key: int) -> int:
        return 7

    def send(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> Future[Any]:
        self.sent.append((node_id, body))
        fut: Future[Any] = Future()
        self.answer(fut)
        return fut

    def answer(self, fut: Future[Any]) -> None:
        """Complete ``fut`` (or not) as the broker would."""


class FailingClient(RecordingClient):
    """Every ListOffsets fails with a retriable connection error, as the network would."""

    def answer(self, fut: Future[Any]) -> None:
        fut.failure(KafkaConnectionError("connection reset"))


def test_reset_retries_wait_retry_backoff_ms_each_time() -> None:
    """A partition whose reset keeps failing is retried after retry.backoff.ms each time, the
    same wait, as Java's OffsetFetcherUtils does (no growth per consecutive failure)."""
    time = MockTime()
    subs = SubscriptionState("earliest")
    subs.assign_from_user([T0])
    subs.request_offset_reset(T0)
    client = FailingClient()
    of = OffsetFetcher(
        client,
        FakeMetadata({T0: 0}),
        subs,
        {"retry.backoff.ms": 100, "retry.backoff.max.ms": 1000},
        time=time,
    )
    waits = []
    for _ in range(5):
        now = time.monotonic_ms()
        assert subs.partitions_needing_reset(now) == [T0]
        of.reset_positions_if_needed()
        state = subs._assigned_state(T0)
        assert state.next_retry_time_ms is not None
        waits.append(state.next_retry_time_ms - now)
        assert subs.partitions_needing_reset(now + 99) == []
        time.sleep(waits[-1])
    assert client.sends == 5
    assert waits == [100] * 5


def test_reset_with_an_unknown_leader_waits_for_metadata_not_for_a_backoff() -> None:
    # As Java: the partition is not put in backoff, so the ListOffsets goes out at the first
    # poll after the metadata names its leader (a first poll used to wait out retry.backoff.ms).
    time = MockTime()
    subs = SubscriptionState("earliest")
    subs.assign_from_user([T0])
    subs.request_offset_reset(T0)
    md = FakeMetadata({})
    client = RecordingClient()
    of = OffsetFetcher(client, md, subs, {"retry.backoff.ms": 100}, time=time)
    of.reset_positions_if_needed()
    assert client.sent == []
    assert md.updates == 1
    assert subs.partitions_needing_reset(time.monotonic_ms()) == [T0]
    md.cluster = FakeCluster({T0: 3})
    of.reset_positions_if_needed()
    assert [node for node, _body in client.sent] == [3]


def test_reset_with_an_unknown_leader_asks_once_for_metadata_while_a_refresh_is_pending() -> None:
    """Polls that find no leader while a metadata refresh is pending ask for none more; once
    the refresh came without the leader, the next one asks again."""
    time = MockTime()
    subs = SubscriptionState("earliest")
    subs.assign_from_user([T0])
    subs.request_offset_reset(T0)
    md = FakeMetadata({})
    client = RecordingClient()
    of = OffsetFetcher(client, md, subs, {"retry.backoff.ms": 100}, time=time)
    for _ in range(3):
        of.reset_positions_if_needed()
    assert md.updates == 1
    md.requested = False  # the refresh came, naming no leader yet
    of.reset_positions_if_needed()
    assert md.updates == 2
    assert client.sent == []


class MetadataLandingClient(RecordingClient):
    """Answers ListOffsets at once; a metadata wait makes ``md`` name node 3 as T0's leader."""

    def __init__(self, md: FakeMetadata) -> None:
        super().__init__()
        self.md = md
        self.metadata_waits = 0

    def answer(self, fut: Future[Any]) -> None:
        fut.success(
            {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 42}]}]}
        )

    def await_metadata_update(self, timeout_ms: float) -> bool:
        self.metadata_waits += 1
        self.md.cluster = FakeCluster({T0: 3})
        self.md.requested = False
        return True


def test_blocking_lookup_retries_when_the_metadata_lands_without_a_backoff() -> None:
    # As Java's fetchOffsetsByTimes: a round that asked for metadata waits for it, then retries;
    # it does not also sleep retry.backoff.ms (a first lookup used to wait 100 ms for nothing).
    time = MockTime()
    md = FakeMetadata({})
    client = MetadataLandingClient(md)
    subs = SubscriptionState("earliest")
    of = OffsetFetcher(client, md, subs, {"retry.backoff.ms": 60_000}, time=time)
    start = time.monotonic_ms()
    found = of.end_offsets([T0], Timer(time, 120_000))
    assert found == {T0: 42}
    assert client.metadata_waits == 1
    assert [node for node, _body in client.sent] == [3]
    assert time.monotonic_ms() == start


class FetchHeldClient(RecordingClient):
    """A client whose connections in ``fetching`` have a fetch out (maybe held by the broker)
    and whose connections in ``failing`` back off after a failed connect."""

    def __init__(self, fetching: set[int], failing: frozenset[int] = frozenset()) -> None:
        super().__init__()
        self.fetching = fetching
        self.failing = failing

    def has_pending(self, node_id: int, api_key: int) -> bool:
        return api_key == ApiKey.FETCH and node_id in self.fetching

    def is_unavailable(self, node_id: int) -> bool:
        return node_id in self.failing


@pytest.mark.parametrize(
    ("fetching", "expected"),
    [
        (set(), 0),  # nothing out: the broker's own connection
        ({0}, seek_fetch_node_id(0)),  # a fetch out there: the second connection
        ({0, seek_fetch_node_id(0)}, 0),  # both busy: the own one, as before
    ],
)
def test_reset_goes_around_a_fetch_the_broker_may_hold(fetching: set[int], expected: int) -> None:
    # The broker answers a connection's requests in order: a reset's ListOffsets sent behind a
    # long-poll fetch waited up to fetch.max.wait.ms (seek_to_beginning() while caught up).
    subs = SubscriptionState("earliest")
    subs.assign_from_user([T0])
    subs.request_offset_reset(T0)
    client = FetchHeldClient(fetching)
    of = OffsetFetcher(client, FakeMetadata({T0: 0}), subs, {}, time=MockTime())
    of.reset_positions_if_needed()
    assert [node for node, _body in client.sent] == [expected]


def test_validation_goes_around_a_fetch_the_broker_may_hold() -> None:
    client = FetchHeldClient({1})
    of, subs = _moved_leader_setup(client)
    of.validate_positions_if_needed()
    assert [node for node, _body in client.sent] == [seek_fetch_node_id(1)]
    assert all(subs.awaiting_validation(tp) for tp in (T0, T1, T2))


def test_reset_stays_on_the_first_connection_while_the_second_fails_to_connect() -> None:
    subs = SubscriptionState("earliest")
    subs.assign_from_user([T0])
    subs.request_offset_reset(T0)
    client = FetchHeldClient({0}, failing=frozenset({seek_fetch_node_id(0)}))
    of = OffsetFetcher(client, FakeMetadata({T0: 0}), subs, {}, time=MockTime())
    of.reset_positions_if_needed()
    assert [node for node, _body in client.sent] == [0]
