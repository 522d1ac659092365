"""The rest of a large response received on a thread that never takes the GIL: the bytes it
reads, how it reports, how it stops, and how a connection hands its socket over and back."""

from __future__ import annotations

import mmap
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from kafkaconsumer.network import network_receive
from kafkaconsumer.network.connection import BrokerConnection, ConnectionState
from kafkaconsumer.network.future import Future
from tests.helpers import network_settings

pytestmark = pytest.mark.timeout(60)

if os.environ.get("KAFKACONSUMER_EXPECT_EXTENSIONS") == "1":
    # CI builds the extensions: a missing one fails here instead of skipping.
    from kafkaconsumer.network import _cframe_reader as frame_reader
else:
    frame_reader = pytest.importorskip("kafkaconsumer.network._cframe_reader")
if not frame_reader.AVAILABLE:
    pytest.skip("no reading thread on this platform", allow_module_level=True)

FrameRead = frame_reader.FrameRead


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected TCP pair (the reader non-blocking, as a connection's socket)."""
    listener = socket.create_server(("127.0.0.1", 0))
    writer = socket.create_connection(listener.getsockname())
    reader, _ = listener.accept()
    listener.close()
    reader.setblocking(False)
    try:
        yield reader, writer
    finally:
        writer.close()
        reader.close()


@pytest.fixture
def wake() -> Iterator[tuple[socket.socket, socket.socket]]:
    """The wake-up pair of a network client: the thread writes to the second."""
    r, w = socket.socketpair()
    r.setblocking(False)
    w.setblocking(False)
    try:
        yield r, w
    finally:
        r.close()
        w.close()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _send(writer: socket.socket, payload: bytes) -> threading.Thread:
    """Send ``payload`` from a thread of its own (it may not fit the socket buffers)."""
    sender = threading.Thread(target=writer.sendall, args=(payload,))
    sender.start()
    return sender


def _read_until_handed_over(c: BrokerConnection) -> None:
    """Read what has come until the connection gave the rest of its response to a thread."""
    deadline = time.monotonic() + 10
    while not c.native_read_active():
        assert time.monotonic() < deadline, "the response was not handed over"
        c._read()


def _wait(predicate: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_the_thread_fills_the_buffer_and_reports_on_the_wake_up_socket(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    body = os.urandom(3 << 20)
    buf = mmap.mmap(-1, 4 << 20)
    buf[:100] = body[:100]  # what the connection read itself before handing over
    read = FrameRead(reader.fileno(), buf, 100, len(body), wake[1].fileno(), 1 << 20)
    assert not read.started and not read.done
    read.start()
    assert read.started
    sender = _send(writer, body[100:])
    # Nothing but the end of the read makes the wake-up socket readable.
    assert select.select([wake[0]], [], [], 10)[0] == [wake[0]]
    sender.join()
    assert read.done
    assert read.finish() == (len(body), 0)
    assert read.finish() == (len(body), 0)  # asked again after an interrupt: the same answer
    assert buf[: len(body)] == body
    assert wake[0].recv(10) == b"\x00"
    # The low-water mark the thread used is back to the default.
    assert reader.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == 1
    del read
    buf.close()  # the thread let go of the buffer


def test_the_thread_reads_no_byte_past_its_response(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    writer.sendall(b"a" * 1000 + b"next response")
    buf = bytearray(1000)
    read = FrameRead(reader.fileno(), buf, 0, 1000, wake[1].fileno())
    read.start()
    _wait(lambda: read.done)
    assert read.finish() == (1000, 0) and bytes(buf) == b"a" * 1000
    assert reader.recv(100) == b"next response"


def test_a_peer_gone_mid_response_is_reported_with_what_arrived(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    buf = bytearray(1 << 20)
    read = FrameRead(reader.fileno(), buf, 0, len(buf), wake[1].fileno())
    read.start()
    writer.sendall(b"x" * 5000)
    writer.close()
    _wait(lambda: read.done)
    assert read.finish() == (5000, frame_reader.PEER_CLOSED)


def test_cancel_stops_a_waiting_thread_and_nothing_is_read_after_it(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    before = _threads()
    buf = bytearray(1 << 20)
    read = FrameRead(reader.fileno(), buf, 0, len(buf), wake[1].fileno())
    read.start()
    writer.sendall(b"y" * 10)
    _wait(lambda: _threads() == before + 1)
    read.cancel()
    assert read.done and _threads() == before
    pos, error = read.finish()
    assert error == frame_reader.CANCELLED and pos <= 10
    writer.sendall(b"after")
    time.sleep(0.05)
    rest = b""
    while not rest.endswith(b"after"):
        rest += reader.recv(100)
    assert bytes(buf[:pos]) + rest == b"y" * 10 + b"after"


def test_a_read_dropped_while_running_stops_its_thread(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, _ = pair
    before = _threads()
    read = FrameRead(reader.fileno(), bytearray(1 << 20), 0, 1 << 20, wake[1].fileno())
    read.start()
    _wait(lambda: _threads() == before + 1)
    del read  # its owner interrupted before it could cancel it
    _wait(lambda: _threads() == before)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_does_not_wait_for_its_parents_reading_thread(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    read = FrameRead(reader.fileno(), bytearray(1 << 20), 0, 1 << 20, wake[1].fileno())
    read.start()
    dropped = FrameRead(reader.fileno(), bytearray(1 << 20), 0, 1 << 20, wake[1].fileno())
    dropped.start()
    pid = os.fork()
    if pid == 0:  # the child: fork copied the reads, not their threads
        code = 1
        try:
            if read.done and read.finish()[1] == frame_reader.CANCELLED:
                del dropped  # its __dealloc__ must not wait either
                code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        assert time.monotonic() < deadline, "the child waited for a thread it does not have"
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not read.done  # the parent's thread still reads
    read.cancel()
    dropped.cancel()
    assert read.finish()[1] == frame_reader.CANCELLED


def test_a_range_outside_the_buffer_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    with pytest.raises(ValueError, match="not within a buffer of 10"):
        FrameRead(pair[0].fileno(), bytearray(10), 0, 11, -1)
    with pytest.raises(BufferError):
        FrameRead(pair[0].fileno(), b"read-only", 0, 1, -1)


# ---------------------------------------------------------------------- the connection --------


def _conn(sock: socket.socket, notify_fd: int | None) -> BrokerConnection:
    settings = network_settings({"bootstrap.servers": "127.0.0.1:9"})
    c = BrokerConnection(
        0,
        "127.0.0.1",
        9,
        settings,
        now_ms=lambda: 0,
        next_correlation_id=lambda: 1,
        notify_fd=notify_fd,
    )
    c.sock = sock
    c._lowat = 1
    c.state = ConnectionState.READY
    return c


def test_a_large_response_is_received_by_the_thread_and_the_next_one_by_the_connection(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    c = _conn(reader, wake[1].fileno())
    frames: list[bytes] = []
    c._on_frame = lambda frame: frames.append(bytes(frame))  # type: ignore[method-assign]
    size = network_receive.NATIVE_READ_MIN * 8
    body = os.urandom(size)
    small = b"small response"
    writer.sendall(network_receive._SIZE.pack(size) + body[:1000])
    _read_until_handed_over(c)
    # The thread has the receive side: the selector is not to watch the socket for reading.
    assert c.interest() == 0
    c._read()  # a stray readiness report reads nothing
    sender = _send(writer, body[1000:] + network_receive._SIZE.pack(len(small)) + small)
    assert select.select([wake[0]], [], [], 10)[0] == [wake[0]]
    sender.join()
    c.finish_native_read()
    assert not c.native_read_active()
    assert c.interest() & 1  # EVENT_READ again
    while len(frames) < 2:
        c._read()
    assert frames == [body, small]
    c.close()


def test_small_responses_and_connections_without_a_wake_up_socket_read_on_their_thread(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    size = network_receive.NATIVE_READ_MIN * 2
    for notify, body_size in (
        (wake[1].fileno(), network_receive.NATIVE_READ_MIN // 2),
        (None, size),
    ):
        c = _conn(reader, notify)
        frames: list[bytes] = []
        c._on_frame = frames.append  # type: ignore[assignment]
        body = os.urandom(body_size)
        sender = _send(writer, network_receive._SIZE.pack(body_size) + body)
        while not frames:
            c._read()
            assert not c.native_read_active()
        sender.join()
        assert [bytes(f) for f in frames] == [body]


def test_closing_mid_response_stops_the_thread_before_the_socket_closes(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    before = _threads()
    c = _conn(reader, wake[1].fileno())
    writer.sendall(network_receive._SIZE.pack(4 << 20) + b"z" * 100)
    _read_until_handed_over(c)
    assert _threads() == before + 1
    c.close()
    assert not c.native_read_active() and _threads() == before and c.sock is None


def test_a_peer_gone_mid_response_closes_the_connection_with_a_clear_error(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    c = _conn(reader, wake[1].fileno())
    c.ever_served = True
    writer.sendall(network_receive._SIZE.pack(4 << 20) + b"z" * 100)
    _read_until_handed_over(c)
    writer.close()
    assert select.select([wake[0]], [], [], 10)[0] == [wake[0]]
    c.finish_native_read()
    assert c.state is ConnectionState.DISCONNECTED
    assert "closed the connection" in str(c.close_error)


def test_a_refused_thread_leaves_the_response_to_the_connection(
    pair: tuple[socket.socket, socket.socket],
    wake: tuple[socket.socket, socket.socket],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refused(FrameRead):
        def start(self) -> None:
            raise OSError(11, "no thread")

    monkeypatch.setattr(frame_reader, "FrameRead", Refused)
    reader, writer = pair
    c = _conn(reader, wake[1].fileno())
    frames: list[bytes] = []
    c._on_frame = lambda frame: frames.append(bytes(frame))  # type: ignore[method-assign]
    size = network_receive.NATIVE_READ_MIN * 2
    body = os.urandom(size)
    sender = _send(writer, network_receive._SIZE.pack(size) + body)
    while not frames:
        c._read()
        assert not c.native_read_active()
    sender.join()
    assert frames == [body]


# ---------------------------------------------------------------- reads armed ahead -----------


def _whole_response_read(
    reader: socket.socket, wake: tuple[socket.socket, socket.socket]
) -> tuple[Any, bytearray]:
    """A read armed before its response began (not started), with its 1 MiB buffer."""
    buf = bytearray(1 << 20)
    return FrameRead(reader.fileno(), buf, 0, len(buf), wake[1].fileno(), 0, True), buf


def test_a_whole_response_read_takes_its_size_first_and_stops_at_its_end(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    read, buf = _whole_response_read(reader, wake)
    read.start()
    assert read.size == -1 and read.size_bytes_read == 0
    body = os.urandom(300_000)
    writer.sendall(network_receive._SIZE.pack(len(body))[:2])
    time.sleep(0.02)  # the size split over two segments
    writer.sendall(network_receive._SIZE.pack(len(body))[2:] + body + b"the next one")
    _wait(lambda: read.done)
    assert read.finish() == (len(body), 0)
    assert read.size == len(body) and read.size_bytes_read == 4
    assert bytes(buf[: len(body)]) == body
    assert reader.recv(100) == b"the next one"


def test_a_read_counts_as_receiving_from_its_responses_size_until_it_ends(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    # Armed before the response began, a read may wait for as long as the broker holds the
    # request; once the size is in, the rest comes without anything else happening.
    reader, writer = pair
    read, buf = _whole_response_read(reader, wake)
    assert not read.receiving  # not started
    read.start()
    time.sleep(0.02)
    assert not read.receiving  # waiting for the response
    body = os.urandom(300_000)
    writer.sendall(network_receive._SIZE.pack(len(body)) + body[:1000])
    _wait(lambda: read.receiving)
    writer.sendall(body[1000:])
    _wait(lambda: read.done)
    assert not read.receiving
    assert read.finish() == (len(body), 0)
    rest = FrameRead(reader.fileno(), buf, 0, 10, wake[1].fileno())
    rest.start()  # the rest of a response whose size the connection read: receiving at once
    assert rest.receiving or rest.done
    writer.sendall(b"0123456789")
    _wait(lambda: rest.done)
    assert rest.finish() == (10, 0) and not rest.receiving


def test_a_connection_is_receiving_only_while_an_armed_read_has_a_response_coming(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    frames: list[bytes] = []
    c = _armed_conn(reader, wake[1].fileno(), frames)
    assert not c.native_read_receiving()
    size = network_receive.NATIVE_READ_MIN * 4
    first = os.urandom(size)
    writer.sendall(network_receive._SIZE.pack(size) + first[:100])
    _read_until_handed_over(c)
    assert c.native_read_receiving() or c.native_read_active()
    sender = _send(writer, first[100:])
    _deliver(c, wake[0], frames, 1)
    sender.join()
    assert c.native_read_active() and not c.native_read_receiving()  # armed, nothing came
    second = os.urandom(size)
    writer.sendall(network_receive._SIZE.pack(size) + second[:100])
    _wait(lambda: c.native_read_receiving())
    sender = _send(writer, second[100:])
    _deliver(c, wake[0], frames, 2)
    sender.join()
    assert frames == [first, second]
    c.close()
    assert not c.native_read_receiving()


@pytest.mark.parametrize("size", [(1 << 20) + 1, -5])
def test_a_whole_response_read_stops_after_a_size_its_buffer_cannot_take(
    pair: tuple[socket.socket, socket.socket],
    wake: tuple[socket.socket, socket.socket],
    size: int,
) -> None:
    reader, writer = pair
    read, buf = _whole_response_read(reader, wake)
    read.start()
    writer.sendall(network_receive._SIZE.pack(size) + b"body")
    _wait(lambda: read.done)
    assert read.finish() == (0, frame_reader.NEEDS_BUFFER) and read.size == size
    time.sleep(0.02)
    assert reader.recv(100) == b"body"  # left for the connection


def test_a_whole_response_read_reports_a_peer_gone_between_responses(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    read = FrameRead(reader.fileno(), bytearray(100), 0, 100, wake[1].fileno(), 0, True)
    read.start()
    writer.close()
    _wait(lambda: read.done)
    assert read.finish() == (0, frame_reader.PEER_CLOSED) and read.size_bytes_read == 0


def _armed_conn(
    reader: socket.socket, notify_fd: int, frames: list[bytes], *, ssl: bool = False
) -> BrokerConnection:
    c = _conn(reader, notify_fd)
    c._use_ssl = ssl
    c._on_frame = lambda frame: frames.append(bytes(frame))  # type: ignore[method-assign]
    # A request awaiting its answer (the test reads the answers itself: _on_frame above).
    c.in_flight.append(SimpleNamespace(future=Future()))  # type: ignore[arg-type]
    return c


def _deliver(c: BrokerConnection, wake_r: socket.socket, frames: list[bytes], want: int) -> None:
    """Poll as the network client does until ``want`` responses arrived."""
    deadline = time.monotonic() + 10
    while len(frames) < want:
        assert time.monotonic() < deadline, "the responses did not arrive"
        assert c.sock is not None
        select.select([wake_r, c.sock], [], [], 0.05)
        try:
            wake_r.recv(100)
        except BlockingIOError:
            pass
        if c.native_read_active():
            c.finish_native_read()
        else:
            c._read()
        if not c.native_read_active():
            c.maybe_arm_native_read()


def test_after_a_large_response_the_next_is_read_by_a_thread_from_its_first_byte(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    frames: list[bytes] = []
    c = _armed_conn(reader, wake[1].fileno(), frames)
    c.maybe_arm_native_read()
    assert not c.native_read_active()  # nothing large seen yet
    size = network_receive.NATIVE_READ_MIN * 4
    bodies = [os.urandom(size), os.urandom(size), b"small", os.urandom(size * 3)]
    writer.sendall(network_receive._SIZE.pack(size) + bodies[0][:100])
    _read_until_handed_over(c)  # the rest of the first one, as before
    sender = _send(writer, bodies[0][100:])
    _deliver(c, wake[0], frames, 1)
    sender.join()
    # Armed for the next response before any byte of it came.
    assert c.native_read_active() and c.interest() == 0
    for body in bodies[1:]:
        sender = _send(writer, network_receive._SIZE.pack(len(body)) + body)
        _deliver(c, wake[0], frames, bodies.index(body) + 1)
        sender.join()
        if body == b"small":
            # Small answers come now: the polling thread reads the next one itself.
            assert not c.native_read_active()
    assert frames == bodies
    c.close()


def test_a_response_larger_than_the_armed_buffer_is_read_into_a_larger_one(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    frames: list[bytes] = []
    c = _armed_conn(reader, wake[1].fileno(), frames)
    c._large_size = network_receive.NATIVE_READ_MIN
    c.maybe_arm_native_read()
    assert c.native_read_active()
    body = os.urandom(network_receive._POOL_MIN * 5)
    sender = _send(writer, network_receive._SIZE.pack(len(body)) + body)
    _deliver(c, wake[0], frames, 1)
    sender.join()
    assert frames == [body]


def test_a_size_no_response_has_closes_an_armed_connection_with_a_clear_error(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = pair
    frames: list[bytes] = []
    c = _armed_conn(reader, wake[1].fileno(), frames)
    c._large_size = network_receive.NATIVE_READ_MIN
    c.maybe_arm_native_read()
    writer.sendall(network_receive._SIZE.pack(-7) + b"garbage")
    deadline = time.monotonic() + 10
    while c.state is not ConnectionState.DISCONNECTED:
        assert time.monotonic() < deadline
        c.finish_native_read()
    assert "-7" in str(c.close_error) and not frames


def test_tls_connections_are_never_armed(
    pair: tuple[socket.socket, socket.socket], wake: tuple[socket.socket, socket.socket]
) -> None:
    frames: list[bytes] = []
    c = _armed_conn(pair[0], wake[1].fileno(), frames, ssl=True)
    c._large_size = network_receive.NATIVE_READ_MIN
    c.maybe_arm_native_read()
    assert not c.native_read_active()
