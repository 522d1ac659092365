"""Socket buffer sizes come from the Java keys receive.buffer.bytes / send.buffer.bytes."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator

import pytest

from kafkaconsumer.config import ConsumerConfig
from kafkaconsumer.network.connection import BrokerConnection
from kafkaconsumer.network.settings import NetworkSettings


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    yield server
    server.close()


def _connected(config: ConsumerConfig, port: int) -> BrokerConnection:
    ids = itertools.count(1)
    conn = BrokerConnection(
        0,
        "127.0.0.1",
        port,
        NetworkSettings.from_config(config),
        now_ms=lambda: 0,
        next_correlation_id=lambda: next(ids),
    )
    conn.connect(10_000)
    assert conn.sock is not None
    return conn


def test_buffer_sizes_follow_the_java_keys(listener: socket.socket) -> None:
    config = ConsumerConfig(
        {
            "bootstrap.servers": "127.0.0.1:1",
            "receive.buffer.bytes": 32768,
            "send.buffer.bytes": 49152,
        }
    )
    conn = _connected(config, listener.getsockname()[1])
    try:
        assert conn.sock is not None
        # Linux doubles the requested size for its bookkeeping; either form is the setting.
        assert conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (32768, 65536)
        assert conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (49152, 98304)
    finally:
        conn.close()


def test_minus_one_keeps_the_operating_system_default(listener: socket.socket) -> None:
    plain = socket.socket()
    default_rcv = plain.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    plain.close()
    config = ConsumerConfig({"bootstrap.servers": "127.0.0.1:1", "receive.buffer.bytes": -1})
    conn = _connected(config, listener.getsockname()[1])
    try:
        assert conn.sock is not None
        assert conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == default_rcv
    finally:
        conn.close()
