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


@pytest.mark.skipif(connection._SO_RCVLOWAT is None, reason="no SO_RCVLOWAT on this platform")
def test_a_large_response_sets_the_receive_low_water_mark_never_above_what_is_left() -> None:
    """While a large response is partly in, the selector is asked to report the socket only
    once a large piece of the rest has arrived (SO_RCVLOWAT), never more than the rest (it
    would wait for bytes that are not coming); the mark is back to 1 once the response is in."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    writer = socket.create_connection(listener.getsockname())
    reader, _ = listener.accept()
    listener.close()
    reader.setblocking(False)
    c = _conn()
    old_sock = c.sock
    c.sock = reader
    c.state = connection.ConnectionState.READY
    frames: list[bytes] = []
    c._on_frame = lambda frame: frames.append(bytes(frame))  # type: ignore[method-assign]

    def lowat() -> int:
        return reader.getsockopt(socket.SOL_SOCKET, connection._SO_RCVLOWAT)  # type: ignore[arg-type]

    size = 6 << 20
    body = bytes(range(256)) * (size // 256)
    head = 50_000
    try:
        assert lowat() == 1
        writer.sendall(connection._SIZE.pack(size) + body[:head])
        while c._frame is None or c._frame_pos < head:
            c._read()
        assert lowat() == connection._LOWAT_MAX  # 2 MiB of the ~6 MiB still to come
        rest = threading.Thread(target=writer.sendall, args=(body[head:],))
        rest.start()
        seen = []
        while not frames:
            c._read()
            if c._frame is not None:
                seen.append((lowat(), c._frame_size - c._frame_pos))
        rest.join()
        assert frames == [body]
        assert all(mark <= left for mark, left in seen), seen
        assert lowat() == 1
    finally:
        writer.close()
        reader.close()
        if old_sock is not None:
            old_sock.close()
