"""Recovery paths against a real broker: log start moving past the position, broker loss."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import OffsetOutOfRangeError
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, poll_until, produce, simple_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def delete_records(bootstrap: str, tp: TopicPartition, before: int) -> None:
    from confluent_kafka import TopicPartition as CTP
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([CTP(tp.topic, tp.partition, before)], operation_timeout=10)
    for fut in futures.values():
        fut.result(timeout=30)


def _out_of_range_position(
    broker: Any, consumer_factory: Any, policy: str, how: str
) -> tuple[KafkaConsumer, TopicPartition, int, int]:
    """A consumer whose position is out of range; returns it, the partition, the bad
    position and the log start offset."""
    bootstrap = str(broker.bootstrap_servers)
    if broker.is_tansu:
        # Covered with the scripted fake broker in test_fetcher_fake_broker.py.
        pytest.skip(
            "Tansu 0.6 never answers OFFSET_OUT_OF_RANGE and closes the connection on DeleteRecords"
        )
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, simple_records(1, 30), one_batch_per_record=True)
    tp = TopicPartition(topic, 0)
    c = consumer_factory(auto_offset_reset=policy, max_poll_records=5)
    c.assign([tp])
    c.seek(tp, 2)
    poll_until(c, lambda acc: len(acc) > 0)
    start = 0
    if how == "deleted":
        delete_records(bootstrap, tp, 20)
        start = 20
        assert c.beginning_offsets([tp])[tp] == 20
        bad = 5  # now below the log start
    else:
        bad = 1000  # beyond the end
    c.seek(tp, bad)
    return c, tp, bad, start


@pytest.mark.parametrize("how", ["deleted", "beyond_end"])
def test_out_of_range_resets_earliest(broker: Any, consumer_factory: Any, how: str) -> None:
    c, tp, _bad, start = _out_of_range_position(broker, consumer_factory, "earliest", how)
    recs = poll_until(c, lambda acc: len(acc) > 0)
    assert recs[0].offset == start
    rest = poll_until(c, lambda acc: c.position(tp) == 30)
    assert [r.offset for r in recs + rest] == list(range(start, 30))


@pytest.mark.parametrize("how", ["deleted", "beyond_end"])
def test_out_of_range_resets_latest(broker: Any, consumer_factory: Any, how: str) -> None:
    c, tp, _bad, _start = _out_of_range_position(broker, consumer_factory, "latest", how)
    poll_until(c, lambda acc: c.position(tp) == 30)


@pytest.mark.parametrize("how", ["deleted", "beyond_end"])
def test_out_of_range_raises_under_none(broker: Any, consumer_factory: Any, how: str) -> None:
    c, tp, bad, start = _out_of_range_position(broker, consumer_factory, "none", how)
    with pytest.raises(OffsetOutOfRangeError) as info:
        poll_until(c, lambda acc: False, timeout_s=20)
    assert getattr(info.value, "partitions", None) == {tp: bad}
    # The user decides: seek to the start and carry on.
    c.seek_to_beginning([tp])
    recs = poll_until(c, lambda acc: len(acc) > 0)
    assert recs[0].offset == start


@pytest.mark.own_embedded_broker
def test_close_returns_within_its_timeout_when_broker_is_gone() -> None:
    from kafkaconsumer.embedded import EmbeddedBroker

    broker = EmbeddedBroker()
    broker.start()
    try:
        topic = create_topic(broker.bootstrap_servers, 1)
        produce(broker.bootstrap_servers, topic, simple_records(1, 5))
        c = KafkaConsumer(
            {"bootstrap.servers": broker.bootstrap_servers},
            auto_offset_reset="earliest",
            request_timeout_ms=60_000,
        )
        c.assign([TopicPartition(topic, 0)])
        poll_until(c, lambda acc: len(acc) == 5)
    finally:
        broker.stop()
    # A fetch is in flight to a broker that no longer exists.
    done = threading.Event()

    def close() -> None:
        c.close(timeout_ms=1000)
        done.set()

    t = threading.Thread(target=close, daemon=True)
    t.start()
    # Bounded wait far below request.timeout.ms: close must not wait for the dead broker.
    assert done.wait(15), "close(timeout_ms=1000) did not return"
