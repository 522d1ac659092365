"""Shared helpers of the network tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from tests.helpers import network_settings

Factory = Callable[..., ConsumerNetworkClient]


@pytest.fixture
def make_client() -> Iterator[Factory]:
    """``make_client(bootstrap, **config)`` -> a ConsumerNetworkClient with ConsumerMetadata,
    closed after the test. Keyword names use ``_`` for ``.`` (``request_timeout_ms=500``);
    ``max_in_flight_requests_per_connection`` (not a consumer key) replaces that setting."""
    made: list[ConsumerNetworkClient] = []

    def factory(
        bootstrap: str, config: dict[str, Any] | None = None, **kw: Any
    ) -> ConsumerNetworkClient:
        fixed = {k: kw.pop(k) for k in ("max_in_flight_requests_per_connection",) if k in kw}
        cfg: dict[str, Any] = {"bootstrap.servers": bootstrap}
        cfg.update({k.replace("_", "."): v for k, v in kw.items()})
        cfg.update(config or {})
        md = ConsumerMetadata(cfg)
        cnc = ConsumerNetworkClient(NetworkClient(network_settings(cfg, **fixed), metadata=md), md)
        made.append(cnc)
        return cnc

    yield factory
    for cnc in made:
        cnc.close()
