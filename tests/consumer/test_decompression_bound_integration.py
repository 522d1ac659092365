"""A batch beyond the decompression bound, on a real broker: the error
names the bound that applied and how to raise it; raised, the same record is read."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import CorruptRecordError
from kafkaconsumer.record import set_decompression_limits
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, poll_until, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def restore_limits() -> Iterator[None]:
    previous = set_decompression_limits()
    yield
    set_decompression_limits(*previous)


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_decompression_bound_names_the_limit_and_the_setting(
    bootstrap: str, consumer_factory: Callable[..., KafkaConsumer], codec: str, restore_limits: None
) -> None:
    topic = create_topic(bootstrap, 1, "bomb")
    value = bytes(2 * 1024 * 1024)  # 2 MiB of zeros: a few KiB compressed
    produce(
        bootstrap,
        topic,
        [(0, None, value, [], None)],
        compression=codec,
        extra={"message.max.bytes": 10_000_000},
    )
    set_decompression_limits(min_limit=1024 * 1024, ratio=16)
    c = consumer_factory()
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning([tp])
    with pytest.raises(CorruptRecordError) as info:
        poll_until(c, lambda acc: bool(acc), timeout_s=20)
    err = info.value
    message = str(err)
    assert (err.topic, err.partition, err.offset) == (topic, 0, 0), message
    assert "min_limit=1048576" in message and "set_decompression_limits" in message, message
    assert c.position(tp) == 0  # nothing was skipped
    set_decompression_limits(min_limit=64 * 1024 * 1024, ratio=256)
    got = poll_until(c, lambda acc: bool(acc), timeout_s=20)
    assert got[0].value == value
