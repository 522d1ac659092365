"""Unit test of KafkaConsumer's wait-for-fetches loop with fake fetcher and client."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.internals.fetcher import Fetch
from kafkaconsumer.utils.clock import MockTime
from kafkaconsumer.utils.timer import Timer

pytestmark = pytest.mark.timeout(30)


class CountingFetcher:
    def __init__(self, client: CountingClient) -> None:
        self.client = client
        self.available_checks = 0
        self.sends = 0

    def collect_fetch(self, max_records: int | None = None, arrow: bool = False) -> Fetch:
        return Fetch()

    def send_fetches(self) -> int:
        self.sends += 1
        return 0

    def has_available_fetches(self) -> bool:
        self.available_checks += 1
        return self.client.polls >= 3  # data arrives with the third network poll


class CountingClient:
    def __init__(self, time: MockTime) -> None:
        self.time = time
        self.polls = 0

    def poll(self, timeout_ms: Any = None, **kw: Any) -> None:
        self.polls += 1
        self.time.advance(10)


def test_wait_loop_checks_for_available_fetches_once_per_network_poll() -> None:
    time = MockTime()
    c = KafkaConsumer.__new__(KafkaConsumer)
    client = CountingClient(time)
    fetcher = CountingFetcher(client)
    c._time = time
    c._client = client  # type: ignore[assignment]
    c._fetcher = fetcher  # type: ignore[assignment]
    c._coordinator = None
    c._cached_all_positions = True
    c._retry_backoff_ms = 100
    c._poll_for_fetches(Timer(time, 1000))
    assert client.polls == 3
    # One check before waiting, then one after each network poll: nothing in between could
    # have completed a fetch.
    assert fetcher.available_checks == 1 + client.polls
    assert fetcher.sends == 1 + (client.polls - 1)  # the first send, then one per empty poll
