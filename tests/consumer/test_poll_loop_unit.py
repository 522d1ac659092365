"""Unit test of KafkaConsumer's wait-for-fetches loop with fake fetcher and client."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.internals.fetch.fetcher import Fetch
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.timer import Timer
from tests.support.consumers import consumer_with_collaborators
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(30)


class CountingFetcher:
    def __init__(self, client: CountingClient) -> None:
        self.client = client
        self.available_checks = 0
        self.sends = 0

    def collect_fetch(self, max_records: int | None = None, decoder: Any = None) -> Fetch:
        return Fetch()

    def send_fetches(self) -> int:
        self.sends += 1
        return 0

    def has_available_fetches(self) -> bool:
        self.available_checks += 1
        return self.client.polls >= 3  # data arrives with the third network poll


class CountingClient:
    def __init__(
        self, time: MockTime, metadata_update_at: int = 0, leaders_named_at: int = 0
    ) -> None:
        self.time = time
        self.polls = 0
        self.metadata_update_at = metadata_update_at
        self.leaders_named_at = leaders_named_at
        self.update_version = 1  # the metadata's, bumped by the network poll that updates it
        # The metadata's snapshot: replaced by a refresh, and by leaders a fetch answer names
        # (which is not a refresh: the version stays).
        self.cluster = object()

    def poll(self, timeout_ms: Any = None, **kw: Any) -> None:
        self.polls += 1
        self.time.advance(10)
        if self.polls == self.metadata_update_at:
            self.update_version += 1
            self.cluster = object()
        if self.polls == self.leaders_named_at:
            self.cluster = object()


def consumer_with(client: CountingClient, fetcher: CountingFetcher) -> KafkaConsumer:
    return consumer_with_collaborators(
        time=client.time, client=client, metadata=client, fetcher=fetcher
    )


def test_wait_loop_checks_for_available_fetches_once_per_network_poll() -> None:
    time = MockTime()
    client = CountingClient(time)
    fetcher = CountingFetcher(client)
    consumer_with(client, fetcher)._poll_for_fetches(Timer(time, 1000))
    assert client.polls == 3
    # One check before waiting, then one after each network poll: nothing in between could
    # have completed a fetch.
    assert fetcher.available_checks == 1 + client.polls
    # The first send, one per empty network poll, and one (a prefetch) when data arrived.
    assert fetcher.sends == 1 + client.polls


def test_wait_loop_ends_when_a_fetch_answer_names_new_leaders() -> None:
    # KIP-951: leaders named by a fetch answer replace the snapshot without a refresh; poll()
    # points the positions at them at once, as after a refresh.
    time = MockTime()
    client = CountingClient(time, leaders_named_at=2)
    fetcher = CountingFetcher(client)
    consumer_with(client, fetcher)._poll_for_fetches(Timer(time, 1000))
    assert client.polls == 2


def test_wait_loop_ends_when_the_metadata_changes() -> None:
    # New metadata may name new leaders: poll() must point the positions at them (and send
    # their validation) before fetching again, not fetch from the old leader until the wait
    # ends (Java's poll loop does so after every network poll).
    time = MockTime()
    client = CountingClient(time, metadata_update_at=2)
    fetcher = CountingFetcher(client)
    consumer_with(client, fetcher)._poll_for_fetches(Timer(time, 1000))
    assert client.polls == 2


class HandingOutFetcher:
    """Always has records to hand out, with a fetch in flight behind them."""

    def __init__(self) -> None:
        self.in_flight = True

    def collect_fetch(self, max_records: int | None = None, decoder: Any = None) -> Fetch:
        fetch = Fetch()
        fetch.add(TopicPartition("t", 0), [object()])
        return fetch

    def send_fetches(self) -> int:
        return 0

    def has_fetch_in_flight(self) -> bool:
        return self.in_flight

    def set_prefetch_waits_for_node(self, on: bool) -> None:
        pass


class NonBlockingPolls:
    """The network client's side of poll(): counts its non-blocking polls."""

    receives_in_background = False

    def __init__(self, time: MockTime) -> None:
        self.time = time
        self.non_blocking = 0
        self.cluster = object()  # the metadata's snapshot (this stands in for the metadata)
        self.receiving = False  # every response in flight arrives through a reading thread

    def only_receiving(self) -> bool:
        return self.receiving

    def set_background_receive(self, on: bool) -> None:
        pass

    def poll_no_wakeup(self) -> None:
        self.non_blocking += 1


def _handing_out(time: MockTime) -> tuple[NonBlockingPolls, HandingOutFetcher, KafkaConsumer]:
    """A consumer of one positioned partition whose fetcher always has records to hand out."""
    client = NonBlockingPolls(time)
    fetcher = HandingOutFetcher()
    consumer = consumer_with(client, fetcher)  # type: ignore[arg-type]
    consumer._subscriptions.assign_from_user([TopicPartition("t", 0)])
    consumer._subscriptions.seek(TopicPartition("t", 0), 0)
    return client, fetcher, consumer


def test_poll_reads_what_arrived_of_the_fetch_in_flight_while_handing_out_records() -> None:
    # As Java's poll(): records are handed out without waiting, and what the broker sent of
    # the next response meanwhile is taken off the socket, so that the broker is not held up
    # by a full socket buffer until a poll has to wait. Once per millisecond at most: a
    # network poll costs more than a poll() of a few hundred small records.
    time = MockTime()
    client, fetcher, consumer = _handing_out(time)
    assert consumer.poll(0)
    assert client.non_blocking == 1
    assert consumer.poll(0)
    assert client.non_blocking == 1  # the same millisecond
    time.advance(1)
    assert consumer.poll(0)
    assert client.non_blocking == 2
    fetcher.in_flight = False
    time.advance(1)
    assert consumer.poll(0)
    assert client.non_blocking == 2  # nothing in flight: nothing to read


def test_poll_leaves_the_network_alone_while_reading_threads_receive_every_response() -> None:
    # A response arriving through its reading thread needs no network poll: the thread's end
    # wakes the poll that takes it. Asked once per millisecond, as the poll it replaces.
    time = MockTime()
    client, fetcher, consumer = _handing_out(time)
    assert consumer.poll(0)
    assert client.non_blocking == 1  # the first poll validates positions
    client.receiving = True
    for _ in range(3):
        time.advance(1)
        assert consumer.poll(0)
    assert client.non_blocking == 1
    client.receiving = False
    assert consumer.poll(0)
    assert client.non_blocking == 1  # asked this millisecond already
    time.advance(1)
    assert consumer.poll(0)
    assert client.non_blocking == 2
