"""Large response buffers are reused only when no view of them is alive."""

from __future__ import annotations

import os

import pytest

from kafkaconsumer.network import network_receive
from kafkaconsumer.network.connection import BrokerConnection, ConnectionState
from tests.helpers import network_settings

pytestmark = pytest.mark.timeout(30)

BIG = network_receive._POOL_MIN


def _conn() -> BrokerConnection:
    settings = network_settings({"bootstrap.servers": "127.0.0.1:9"})
    return BrokerConnection(
        0, "127.0.0.1", 9, settings, now_ms=lambda: 0, next_correlation_id=lambda: 1
    )


def _close(c: BrokerConnection) -> None:
    c.state = ConnectionState.READY  # as a connection that received large responses
    c.close()


def test_a_buffer_with_a_live_view_is_never_handed_out_again() -> None:
    c = _conn()
    first = c._frame_buffer(BIG)
    first[:4] = b"keep"
    view = memoryview(first)[:4]  # as the records of an undecoded partition hold
    del first
    second = c._frame_buffer(BIG)
    second[:4] = b"over"
    assert bytes(view) == b"keep"
    busy = [second]
    for _ in range(network_receive._POOL_SIZE - 1):
        busy.append(c._frame_buffer(BIG))
    assert len(c._pool) == network_receive._POOL_SIZE
    extra = c._frame_buffer(BIG)  # the pool is full of busy buffers: a fresh one, not pooled
    assert all(extra is not b for b in busy) and len(c._pool) == network_receive._POOL_SIZE
    assert bytes(view) == b"keep"
    del view, busy, extra


def test_a_released_buffer_is_reused_and_an_idle_small_one_replaced() -> None:
    c = _conn()
    first = c._frame_buffer(BIG + 100)
    ident = id(first)
    # Rounded up to a power of two, so that the next responses of about that size fit it.
    assert len(first) == 2 * BIG
    del first
    again = c._frame_buffer(BIG)
    assert id(again) == ident  # callers use `size` bytes of it
    del again
    same = c._frame_buffer(2 * BIG - 7)
    assert id(same) == ident
    del same
    bigger = c._frame_buffer(3 * BIG)
    assert len(bigger) == 4 * BIG and len(c._pool) == 1 and id(bigger) != ident


def test_the_buffers_of_a_closed_connection_serve_the_next_one() -> None:
    """A consumer per Spark task or per bounded read opens new connections each time: the
    pooled buffers of a closed connection go to the next one instead of being unmapped and
    faulted in again."""
    network_receive.release_spare_buffers()
    try:
        first = _conn()
        buf = first._frame_buffer(BIG)
        ident = id(buf)
        del buf
        _close(first)
        assert network_receive.spare_buffer_bytes() == BIG
        second = _conn()
        again = second._frame_buffer(BIG)
        assert id(again) == ident and second._pool == [again]
        assert network_receive.spare_buffer_bytes() == 0
        del again
        # A larger response than any spare holds gets a fresh buffer.
        _close(second)
        third = _conn()
        bigger = third._frame_buffer(2 * BIG)
        assert id(bigger) != ident and len(bigger) == 2 * BIG
        assert network_receive.spare_buffer_bytes() == BIG
        del bigger
        _close(third)
    finally:
        network_receive.release_spare_buffers()


def test_a_spare_buffer_with_a_live_view_is_not_handed_out() -> None:
    network_receive.release_spare_buffers()
    try:
        first = _conn()
        buf = first._frame_buffer(BIG)
        buf[:4] = b"keep"
        view = memoryview(buf)[:4]  # records of a closed consumer still held by the user
        del buf
        _close(first)
        second = _conn()
        other = second._frame_buffer(BIG)
        other[:4] = b"over"
        assert bytes(view) == b"keep"
        del view
        # Once the view is gone, the kept buffer serves the next connection.
        third = _conn()
        assert bytes(third._frame_buffer(BIG)[:4]) == b"keep"
        del other
    finally:
        network_receive.release_spare_buffers()


def test_spare_buffers_stay_within_their_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    network_receive.release_spare_buffers()
    monkeypatch.setattr(network_receive, "_SPARE_LIMIT", 3 * BIG)
    try:
        for _ in range(3):
            c = _conn()
            held = [c._frame_buffer(BIG) for _ in range(network_receive._POOL_SIZE)]
            del held
            _close(c)
        assert network_receive.spare_buffer_bytes() == 3 * BIG
        assert network_receive.release_spare_buffers() == 3 * BIG
        assert network_receive.spare_buffer_bytes() == 0
    finally:
        network_receive.release_spare_buffers()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_without_spare_buffers() -> None:
    """Anonymous buffers may be shared with a forked child: it must not reuse its parent's."""
    network_receive.release_spare_buffers()
    try:
        c = _conn()
        buf = c._frame_buffer(BIG)
        del buf
        _close(c)
        assert network_receive.spare_buffer_bytes() == BIG
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit status
            os._exit(0 if network_receive.spare_buffer_bytes() == 0 else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert network_receive.spare_buffer_bytes() == BIG
    finally:
        network_receive.release_spare_buffers()


def test_small_responses_are_not_pooled() -> None:
    c = _conn()
    assert len(c._frame_buffer(BIG - 1)) == BIG - 1
    assert c._pool == []


@pytest.mark.skipif(network_receive._SO_RCVLOWAT is None, reason="no SO_RCVLOWAT on this platform")
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
    c._lowat = 1  # as for every new socket the connection makes
    c.state = ConnectionState.READY
    frames: list[bytes] = []
    c._on_frame = lambda frame: frames.append(bytes(frame))  # type: ignore[method-assign]

    def lowat() -> int:
        return reader.getsockopt(socket.SOL_SOCKET, network_receive._SO_RCVLOWAT)  # type: ignore[arg-type]

    size = 6 << 20
    body = bytes(range(256)) * (size // 256)
    head = 50_000
    try:
        assert lowat() == 1
        writer.sendall(network_receive._SIZE.pack(size) + body[:head])
        while c._frame is None or c._frame_pos < head:
            c._read()
        # Up to 2 MiB of the ~6 MiB still to come (the kernel may cap it lower).
        assert 1 < lowat() <= network_receive._LOWAT_MAX
        assert c._lowat == network_receive._LOWAT_MAX
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


def test_the_low_water_mark_is_used_only_where_the_kernel_makes_it_safe() -> None:
    # Before Linux 5.7 a socket whose receive buffer fills below the mark is never reported
    # readable: the response would wait for request.timeout.ms.
    assert network_receive._kernel_at_least("6.18.44-fc-v657", (5, 7))
    assert network_receive._kernel_at_least("5.7.0", (5, 7))
    assert not network_receive._kernel_at_least("5.4.0-150-generic", (5, 7))
    assert not network_receive._kernel_at_least("4.19.0", (5, 7))
    assert not network_receive._kernel_at_least("unknown", (5, 7))


@pytest.mark.skipif(network_receive._SO_RCVLOWAT is None, reason="no SO_RCVLOWAT on this platform")
def test_a_fixed_receive_buffer_caps_the_low_water_mark() -> None:
    settings = network_settings(
        {"bootstrap.servers": "127.0.0.1:9", "receive.buffer.bytes": 400_000}
    )
    c = BrokerConnection(
        0, "127.0.0.1", 9, settings, now_ms=lambda: 0, next_correlation_id=lambda: 1
    )
    import socket

    with socket.socket() as sock:
        c._lowat = 1
        c._set_lowat(sock, 5 << 20)
        assert c._lowat == 100_000  # a quarter of the buffer asked for
    c.close()


def test_each_new_socket_starts_at_the_default_low_water_mark() -> None:
    # The mark lives on the socket: a connection closed mid-response and opened again must
    # not believe the new socket still carries the old mark.
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        settings = network_settings({"bootstrap.servers": f"127.0.0.1:{port}"})
        c = BrokerConnection(
            0, "127.0.0.1", port, settings, now_ms=lambda: 0, next_correlation_id=lambda: 1
        )
        c.connect(5000)
        assert c.sock is not None
        assert c._lowat == (1 if network_receive._SO_RCVLOWAT is not None else None)
        c._lowat = network_receive._LOWAT_MAX if c._lowat is not None else None  # mid-response
        c.close()
        c.connect(5000)
        assert c._lowat == (1 if network_receive._SO_RCVLOWAT is not None else None)
        c.close()
    finally:
        listener.close()
