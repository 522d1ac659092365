"""ConsumerInterceptors: resolution from config, chaining, failure isolation."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.interceptors import ConsumerInterceptor, ConsumerInterceptors
from kafkaconsumer.structs import ConsumerRecords, OffsetAndMetadata, TopicPartition

TP = TopicPartition("t", 0)


class Tag(ConsumerInterceptor):
    """Appends its name to a shared log and wraps records in a marker."""

    log: list[str] = []

    def __init__(self, name: str = "tag") -> None:
        self.name = name
        self.configs: Mapping[str, Any] | None = None
        self.commits: list[Mapping[TopicPartition, OffsetAndMetadata]] = []
        self.closed = False

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.configs = configs

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        Tag.log.append(self.name)
        return ConsumerRecords({TP: [*records.records(TP), self.name]})  # type: ignore[list-item]

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.commits.append(offsets)

    def close(self) -> None:
        self.closed = True


class Exploding(ConsumerInterceptor):
    """Fails in every method."""

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        raise RuntimeError("consume failed")

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        raise RuntimeError("commit failed")

    def close(self) -> None:
        raise RuntimeError("close failed")


def test_chain_order_and_records_flow() -> None:
    a, b = Tag("a"), Tag("b")
    chain = ConsumerInterceptors([a, b])
    out = chain.on_consume(ConsumerRecords({TP: ["r"]}))  # type: ignore[list-item]
    assert list(out) == ["r", "a", "b"]  # type: ignore[comparison-overlap]
    offsets = {TP: OffsetAndMetadata(3)}
    chain.on_commit(offsets)
    assert a.commits == [offsets] and b.commits == [offsets]
    chain.close()
    assert a.closed and b.closed


def test_failures_are_logged_and_swallowed(caplog: pytest.LogCaptureFixture) -> None:
    a = Tag("after")
    chain = ConsumerInterceptors([Exploding(), a])
    with caplog.at_level(logging.WARNING, logger="kafkaconsumer.interceptors"):
        out = chain.on_consume(ConsumerRecords({TP: ["r"]}))  # type: ignore[list-item]
        chain.on_commit({TP: OffsetAndMetadata(1)})
        chain.close()
    # The failing interceptor is skipped; the next one gets the original records.
    assert list(out) == ["r", "after"]  # type: ignore[comparison-overlap]
    assert a.commits and a.closed
    assert "consume failed" in caplog.text and "commit failed" in caplog.text
    assert "close failed" in caplog.text


def test_returning_none_keeps_records() -> None:
    class Forgetful(ConsumerInterceptor):
        def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
            return None  # type: ignore[return-value]

    chain = ConsumerInterceptors([Forgetful()])
    records = ConsumerRecords({TP: ["r"]})  # type: ignore[list-item]
    assert chain.on_consume(records) is records


def test_from_config_with_class_path_and_instance() -> None:
    instance = Tag("inst")
    config = ConsumerConfig(interceptor_classes=[f"{__name__}:Tag", Tag, instance])
    chain = ConsumerInterceptors.from_config(config)
    assert len(chain) == 3 and bool(chain)
    first, second, third = chain.interceptors
    assert isinstance(first, Tag) and first.configs is config
    assert isinstance(second, Tag) and second.configs is config
    assert third is instance and instance.configs is None  # instances are used as given
    assert not ConsumerInterceptors.from_config(ConsumerConfig())


def test_bad_interceptors() -> None:
    with pytest.raises(ConfigError, match="neither on_consume"):
        ConsumerInterceptors([object()])

    class NeedsArgs(ConsumerInterceptor):
        def __init__(self, x: int) -> None:
            self.x = x

    with pytest.raises(ConfigError, match="without arguments"):
        ConsumerInterceptors([NeedsArgs])
    with pytest.raises(ConfigError, match="interceptor.classes"):
        ConsumerInterceptors(["collections:NoSuch"])
