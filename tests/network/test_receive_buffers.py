"""Large response buffers are reused only when no view of them is alive."""

from __future__ import annotations

import pytest

from kafkaconsumer.network import connection
from kafkaconsumer.network.connection import BrokerConnection
from tests.helpers import network_settings

pytestmark = pytest.mark.timeout(30)

BIG = connection._POOL_MIN


def _conn() -> BrokerConnection:
    settings = network_settings({"bootstrap.servers": "127.0.0.1:9"})
    return BrokerConnection(
        0, "127.0.0.1", 9, settings, now_ms=lambda: 0, next_correlation_id=lambda: 1
    )


def test_a_buffer_with_a_live_view_is_never_handed_out_again() -> None:
    c = _conn()
    first = c._frame_buffer(BIG)
    first[:4] = b"keep"
    view = memoryview(first)[:4]  # as the records of an undecoded partition hold
    del first
    second = c._frame_buffer(BIG)
    second[:4] = b"over"
    assert bytes(view) == b"keep"
    third = c._frame_buffer(BIG)  # the pool is full of busy buffers: a fresh one
    assert third is not second
    del view, third


def test_a_released_buffer_is_reused_and_an_idle_small_one_replaced() -> None:
    c = _conn()
    first = c._frame_buffer(BIG + 100)
    ident = id(first)
    del first
    again = c._frame_buffer(BIG)
    assert id(again) == ident and len(again) == BIG + 100  # callers use `size` bytes of it
    del again
    bigger = c._frame_buffer(2 * BIG)
    assert len(bigger) == 2 * BIG and len(c._pool) == 1


def test_small_responses_are_not_pooled() -> None:
    c = _conn()
    assert len(c._frame_buffer(BIG - 1)) == BIG - 1
    assert c._pool == []
