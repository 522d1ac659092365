"""When the share consumer sends what it has (no network: the request manager is a stub): a
broker whose fetched records are still being handed out gets no ShareFetch and its
acknowledgements wait to ride on the next one, for a second at most before they go alone in a
ShareAcknowledge; once no more than two polls' worth of its records are left, the ShareFetch
goes out carrying them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
from kafkaconsumer.internals.fetch.acquisition_locks import AcquisitionLocks
from kafkaconsumer.internals.fetch.share_completed_fetch import ShareCompletedFetch
from kafkaconsumer.record import encode_batch
from kafkaconsumer.structs import TopicPartition
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(30)

TP = TopicPartition("t", 0)
NODE = 1


class _Requests:
    """Records what the consumer asks the share consume request manager to send."""

    def __init__(self) -> None:
        self.fetches: list[tuple[dict[int, Any], frozenset[int]]] = []
        self.acknowledges: list[dict[int, Any]] = []
        self.in_flight: set[int] = set()

    def send_fetches(self, acks: Any, *, skip: frozenset[int] = frozenset()) -> int:
        self.fetches.append((dict(acks), skip))
        return 0

    def send_acknowledgements(self, acks: Any, *, close: bool = False) -> list[Any]:
        self.acknowledges.append(dict(acks))
        return []

    def has_in_flight(self, node: int | None = None) -> bool:
        return node in self.in_flight

    def retry_acknowledgements(self) -> int | None:
        return None


def _consumer(buffered: int) -> tuple[KafkaShareConsumer, _Requests, MockTime]:
    """A consumer holding ``buffered`` fetched records of one partition from NODE, 10 records
    a poll, and one pending acknowledgement for NODE."""
    c = KafkaShareConsumer.__new__(KafkaShareConsumer)
    requests, time = _Requests(), MockTime()
    raw = encode_batch([(None, b"v", [], 1)] * buffered)
    part = {
        "partition_index": 0,
        "error_code": 0,
        "records": raw,
        "acquired_records": [{"first_offset": 0, "last_offset": buffered - 1, "delivery_count": 1}],
    }
    c._time = time
    c._max_poll_records = 10
    c._current = [ShareCompletedFetch(TP, uuid.UUID(int=1), NODE, part)]
    c._pending = {}
    c._pending_since = {}
    c._acquisition_locks = AcquisitionLocks()
    c._fetch = requests  # type: ignore[assignment]
    return c, requests, time


def _pend(c: KafkaShareConsumer, offset: int) -> Acknowledgements:
    acks = Acknowledgements()
    acks.add(offset, AcknowledgeType.ACCEPT)
    c._pending.setdefault(NODE, {})[TP] = acks
    return acks


def test_a_broker_with_records_left_gets_no_fetch_and_its_acknowledgements_wait() -> None:
    c, requests, _time = _consumer(buffered=25)
    acks = _pend(c, 100)
    c._send_requests()
    assert requests.fetches == [({}, frozenset({NODE}))]
    assert requests.acknowledges == []
    assert c._pending == {NODE: {TP: acks}}


def test_waiting_acknowledgements_go_alone_after_a_second_when_the_broker_is_free() -> None:
    c, requests, time = _consumer(buffered=25)
    acks = _pend(c, 100)
    c._send_requests()
    time.sleep(999)
    c._send_requests()
    assert requests.acknowledges == []
    time.sleep(1)
    requests.in_flight.add(NODE)
    c._send_requests()
    assert requests.acknowledges == []  # one request per broker at a time
    requests.in_flight.clear()
    c._send_requests()
    assert requests.acknowledges == [{NODE: {TP: acks}}]
    assert c._pending == {}


def test_the_fetch_goes_out_with_the_acknowledgements_once_the_records_run_low() -> None:
    c, requests, _time = _consumer(buffered=25)
    acks = _pend(c, 100)
    c._send_requests()
    c._current[0].fetch_records(5)  # 20 left: two polls' worth
    c._send_requests()
    assert requests.fetches[-1] == ({NODE: {TP: acks}}, frozenset())
    assert requests.acknowledges == [] and c._pending == {} and c._pending_since == {}
