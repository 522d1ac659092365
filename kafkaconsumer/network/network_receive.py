"""The receive path of a broker connection: size-prefixed frames read from the socket, bounded
before anything is allocated for them (Java ``NetworkReceive``).

Partial reads accumulate until a whole frame is there. A frame size is checked before anything
is allocated for it: before READY it must fit an ApiVersions/SASL answer (1 MiB), after READY
twice the largest fetch we ask for (at least 64 MiB), as Java's ``NetworkReceive`` bounds its
receives. A peer whose first bytes are a TLS record or an HTTP (or other text protocol) reply is
named in the error. Responses arrive in request order on a Kafka connection, so every
response's correlation id must match the oldest in-flight request; a mismatch or undecodable
bytes close the connection. While a large response is partly in, the socket's ``SO_RCVLOWAT``
(Linux 5.7+, see ``_LOWAT_MIN``) makes the selector report it only once a large piece of the
rest has arrived. Where the owner gives a wake-up descriptor, the rest of a large plaintext
response (and, after one, the whole next response) is received by a thread of the
``_cframe_reader`` extension without the GIL (see ``NATIVE_READ_MIN``).
"""

from __future__ import annotations

import abc
import collections
import logging
import mmap
import os
import re
import socket
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any

from kafkaconsumer.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    SslAuthenticationError,
    UnsupportedVersionError,
)
from kafkaconsumer.network import ssl_transport_layer as tls
from kafkaconsumer.network.channel_state import ConnectionState
from kafkaconsumer.network.in_flight_request import InFlightRequest, api_name
from kafkaconsumer.protocol import ApiKey, decode_response

try:
    from kafkaconsumer.network import _cframe_reader
except ImportError:  # the extension is not built: every read on the driving thread
    _cframe_reader = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

__all__ = ["NetworkReceive", "describe_foreign_peer", "release_spare_buffers", "spare_buffer_bytes"]

_SIZE = struct.Struct(">i")
_CHUNK = 65536
# Response buffers of at least this size are kept (up to _POOL_SIZE per connection) and reused
# once nothing refers to them: a fresh one costs a page fault per 4 KiB (and, as a bytearray,
# a zero fill too: see _large_buffer), more than receiving into it (a third of the consumer's
# CPU with 50 MB responses).
_POOL_MIN = 1 << 20
# One a response being received, one buffered, one being handed out: the fetcher's prefetch
# bound, which the network thread reaches while the user's thread decodes.
_POOL_SIZE = 3
# The pooled buffers of closed connections, kept (at most _SPARE_LIMIT bytes in all) for the
# next connection of this process: a consumer per Spark task, or per bounded read, would
# otherwise fault in and unmap tens of MB of fresh buffers each time (reading 8 partitions of
# 250,000 x 100 B one consumer after another: 0.19 s of CPU against 0.32 s, page faults from
# 30,000-50,000 down to under 10,000 after the first).
_SPARE_LIMIT = 64 << 20
_spare: list[mmap.mmap] = []  # guarded by _spare_lock
_spare_lock = threading.Lock()
# While a response of at least _LOWAT_MIN bytes is partly received, the socket's SO_RCVLOWAT
# asks the selector to report it readable only once up to _LOWAT_MAX more bytes of it are in
# (never more than the rest): a multi-MiB response then takes a few large reads instead of one
# network-loop round per few hundred KiB, and the thread sleeps meanwhile (the broker shares
# the machine's cores). Linux also grows an autotuned receive buffer to hold the mark (alone it
# stays under 1 MiB on loopback, leaving the broker little room to send ahead).
#
# Only on Linux 5.7 or later: since 4.18 the kernel caps the mark at half a fixed receive
# buffer and grows an autotuned one to hold it, and since 5.7 it reports the socket readable
# below the mark when the receive window closes or memory runs short. An older kernel would
# let a small receive buffer fill below the mark and never report the socket: the response
# would wait for request.timeout.ms. A receive buffer set by receive.buffer.bytes also caps
# the mark at a quarter of it.
_LOWAT_MIN = 256 * 1024
_LOWAT_MAX = 2 << 20
# The rest of a plaintext response of at least this many bytes is received by a thread that
# never takes the GIL (``_cframe_reader``), while the interpreter's threads decode the previous
# one: the copy out of the kernel is about a fifth of the CPU of reading 1 KiB records. Smaller
# responses are not worth a thread (one is started per response: 86 us from start to join for a
# 100-byte read, measured). Only where the connection's owner gave a wake-up descriptor for the
# thread to report on (``_notify_fd``).
NATIVE_READ_MIN = 256 * 1024


def _kernel_at_least(release: str, wanted: tuple[int, int]) -> bool:
    """Whether a Linux release string (``os.uname().release``) is ``wanted`` or later."""
    found = re.match(r"(\d+)\.(\d+)", release)
    return found is not None and (int(found[1]), int(found[2])) >= wanted


def _rcvlowat_option() -> int | None:
    """SO_RCVLOWAT where the low-water mark is safe to use (see _LOWAT_MIN), else None."""
    option = getattr(socket, "SO_RCVLOWAT", None)
    if option is None or not sys.platform.startswith("linux"):
        return None
    return int(option) if _kernel_at_least(os.uname().release, (5, 7)) else None


_SO_RCVLOWAT: int | None = _rcvlowat_option()


# Private, not mmap's default shared mapping: anonymous shared memory is backed by shmem, whose
# pages cost more to fault in and to give back (on a 2-vCPU VM: 2.4 against 1.5 us per 4 KiB
# page written first, 13 against 4.7 ms to unmap 64 MiB). Nothing else maps the buffer, so
# sharing buys nothing. (Windows' mmap takes no flags.)
_MAP_PRIVATE: int | None = getattr(mmap, "MAP_PRIVATE", None)


def _large_buffer(size: int) -> mmap.mmap:
    # Anonymous memory, not bytearray(size): a bytearray is zero-filled, a pass over the whole
    # buffer before the socket writes it (7.5 ms for a 50 MiB response); the kernel hands out
    # zeroed pages only as they are first written. Freed (unmapped) with the last reference.
    if _MAP_PRIVATE is None:
        return mmap.mmap(-1, size)
    return mmap.mmap(-1, size, flags=_MAP_PRIVATE)


def _forget_spare_in_child() -> None:
    # A forked child starts without spares: they are copies of the parent's memory it has no
    # use for (copied page by page once written), and a lock held by another thread at the
    # fork would never be released in the child.
    global _spare, _spare_lock
    _spare = []
    _spare_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spare_in_child)


def keep_spare_buffers(buffers: list[mmap.mmap]) -> None:
    """Keep ``buffers`` (the pool of a connection being closed) for the next connections of
    this process, as many as fit in _SPARE_LIMIT with those already kept."""
    with _spare_lock:
        held = sum(len(buf) for buf in _spare)
        for buf in buffers:
            if held + len(buf) <= _SPARE_LIMIT:
                _spare.append(buf)
                held += len(buf)


def _take_spare(size: int) -> mmap.mmap | None:
    """A kept buffer of at least ``size`` bytes that no view refers to, out of the spares."""
    with _spare_lock:
        for i in range(len(_spare)):
            buf = _spare[i]
            # Held by the list, this variable and getrefcount's argument only.
            if len(buf) >= size and sys.getrefcount(buf) <= 3:
                del _spare[i]
                return buf
        return None


def spare_buffer_bytes() -> int:
    """Bytes of response buffers kept from closed connections for the next ones."""
    with _spare_lock:
        return sum(len(buf) for buf in _spare)


def release_spare_buffers() -> int:
    """Give back the response buffers kept from closed connections; returns their bytes."""
    with _spare_lock:
        freed = sum(len(buf) for buf in _spare)
        _spare.clear()
        return freed


# The receive limit of a ready connection (Java: NetworkReceive's maxSize). A size above it is
# taken for garbage, never allocated. The largest response we expect is a fetch: about
# fetch.max.bytes, but the broker may exceed that by one oversized first batch, hence twice it;
# and never below this floor, which covers metadata of large clusters.
_MIN_RECEIVE_LIMIT = 64 * 1024 * 1024
# Before READY only ApiVersions and SASL answers arrive: a few KiB. A bigger first "size" is a
# peer that is not a Kafka listener (a TLS alert read as a size claims 336 MiB).
_SETUP_RECEIVE_LIMIT = 1024 * 1024


def describe_foreign_peer(head: bytes) -> str | None:
    """Name the protocol a peer speaks from the first bytes it sent, when they are not Kafka.

    Returns None when the bytes do not look like any protocol we know (they may still be
    garbage; the caller decides from the size).
    """
    if len(head) >= 3 and head[0] in _TLS_CONTENT_TYPES and head[1] == 3 and head[2] <= 4:
        kind = _TLS_CONTENT_TYPES[head[0]]
        detail = ""
        if head[0] == 0x15 and len(head) >= 7:
            detail = f" ({_TLS_ALERTS.get(head[6], f'alert {head[6]}')})"
        return (
            f"it answered with a TLS {kind} record{detail}, so it expects TLS "
            "(security.protocol SSL or SASL_SSL)"
        )
    for prefix, name in (
        (b"HTTP/", "an HTTP server"),
        (b"SSH-", "an SSH server"),
        (b"220 ", "an SMTP or FTP server"),
        (b"+OK", "a POP3 server"),
        (b"-ERR", "a Redis server"),
    ):
        if head.startswith(prefix):
            line = head.split(b"\r", 1)[0].split(b"\n", 1)[0][:60]
            text = line.decode("ascii", "replace")
            return f"{name} answered ({text!r})"
    return None


_TLS_CONTENT_TYPES = {
    0x14: "change_cipher_spec",
    0x15: "alert",
    0x16: "handshake",
    0x17: "application_data",
}
_TLS_ALERTS = {
    10: "unexpected_message",
    40: "handshake_failure",
    42: "bad_certificate",
    47: "illegal_parameter",
    50: "decode_error",
    70: "protocol_version",
    80: "internal_error",
    112: "unrecognized_name",
}

_UNSUPPORTED_VERSION = UnsupportedVersionError.errno


class NetworkReceive(abc.ABC):
    """The receive half of :class:`~kafkaconsumer.network.connection.BrokerConnection`: reading
    frames off the socket, bounding and buffering them, matching each to its request.

    The fields below are declared here for the type checker; ``BrokerConnection.__init__``
    sets them, and its comments say who writes them.

    Thread-safety: as ``BrokerConnection``: only the thread that owns the NetworkClient, under
    the network lock.
    """

    state: ConnectionState
    sock: socket.socket | None
    node_id: int
    host: str
    port: int
    in_flight: collections.deque[InFlightRequest]
    served: bool
    ever_served: bool
    last_activity_ms: int
    throttle_until_ms: int
    _now_ms: Callable[[], int]
    _use_ssl: bool
    _use_sasl: bool
    _rcvbuf: int
    _max_frame: int
    _hdr: bytes
    _frame: bytearray | mmap.mmap | None
    _frame_pos: int
    _frame_size: int
    _pool: list[mmap.mmap]
    _lowat: int | None
    _want_write_for_read: bool
    _notify_fd: int | None
    _native: Any
    _large_size: int

    def native_read_active(self) -> bool:
        """True while a reading thread owns the socket's receive side (see NATIVE_READ_MIN):
        the socket is then not selected for reading."""
        return self._native is not None

    def responses_on_reading_threads(self) -> bool:
        """True while this connection's responses are received by reading threads (its last
        one was large, and it can have them): whichever thread polls, the bytes are taken off
        the socket without the GIL. A hint read without a lock."""
        return bool(self._large_size) and self._native_reads_possible()

    def native_read_receiving(self) -> bool:
        """True while a reading thread is still receiving a response that has begun to
        arrive (its size is in): the response completes without this thread, which the
        thread's byte on the wake-up socket then says. A hint read without a lock."""
        read = self._native
        return read is not None and read.receiving

    def finish_native_read(self) -> None:
        """Take the response a reading thread completed, if it has; called by the network
        client after each wait (the thread writes to ``_notify_fd`` when it ends)."""
        read = self._native
        if read is None:
            return
        if not read.started:
            # An interrupt landed between creating the read and starting it.
            self._start_native(read)
            return
        if not read.done:
            return
        # Joined before it is forgotten: finish() may be asked again, a dropped read not.
        pos, error = read.finish()
        self._native = None
        if self._lowat is not None:
            self._lowat = 1  # the thread put SO_RCVLOWAT back
        if self.state is ConnectionState.DISCONNECTED:
            return
        if read.whole_response:
            self._finish_whole_read(read, pos, error)
            return
        self._frame_pos = pos
        if error:
            self._native_read_failed(error)
            return
        self.last_activity_ms = self._now_ms()
        frame = self._frame
        assert frame is not None and pos == self._frame_size
        self._frame = None
        self._on_frame(memoryview(frame)[: self._frame_size])
        del frame
        self._read()  # what came after the response (the selector did not watch)

    def maybe_arm_native_read(self) -> None:
        """Hand the socket's receive side to a reading thread before the next response
        begins, when the last one was large (see NATIVE_READ_MIN) and a request is in flight:
        its bytes are then taken off the socket from the first one, not when the polling
        thread next looks (it may be decoding for a millisecond or more, while the broker
        stops on a full socket buffer). Called by the network client after each wait."""
        if (
            self._large_size
            and self._native is None
            and self.in_flight
            and self._frame is None
            and not self._hdr
            and self.state is ConnectionState.READY
            and self._native_reads_possible()
        ):
            assert self.sock is not None and self._notify_fd is not None
            frame = self._frame_buffer(self._large_size)
            # One assignment hands the receive side over (the read keeps its buffer), so an
            # interrupt leaves either no read or one finish_native_read() starts.
            self._native = _cframe_reader.FrameRead(
                self.sock.fileno(),
                frame,
                0,
                len(frame),
                self._notify_fd,
                self._lowat_max(),
                True,
            )
            del frame
            self._start_native(self._native)
            if self._native is None:
                self._large_size = 0  # no thread to be had: read as before

    def _finish_whole_read(self, read: Any, pos: int, error: int) -> None:
        """The end of a read armed before its response began (see maybe_arm_native_read)."""
        frame = read.buffer
        size = read.size
        if error == _cframe_reader.NEEDS_BUFFER:
            # Larger than the last one, or a size no response has: checked and taken as if
            # the polling thread had read it.
            self._large_size = 0
            self._start_frame(size, memoryview(b""))
            return
        if error:
            self._native_read_failed(error)
            return
        assert pos == size
        self.last_activity_ms = self._now_ms()
        self._large_size = size if size >= NATIVE_READ_MIN else 0
        self._on_frame(memoryview(frame)[:size])
        del frame
        self._read()

    def _native_read_failed(self, error: int) -> None:
        """Close after a reading thread ended with ``error`` (FrameRead.finish())."""
        if error == _cframe_reader.PEER_CLOSED:
            self._peer_closed()
            return
        what = os.strerror(error) if error > 0 else "the read was stopped"
        self.close(
            KafkaConnectionError(
                f"connection to node {self.node_id} ({self.host}:{self.port}) failed while "
                f"receiving: {what}"
            )
        )

    def _native_reads_possible(self) -> bool:
        """Whether a reading thread may have this socket: a plaintext one (TLS keeps decrypted
        bytes in the library), the extension built, and a wake-up descriptor to report on."""
        return (
            self._notify_fd is not None
            and _cframe_reader is not None
            and _cframe_reader.AVAILABLE
            and not self._use_ssl
            and self.sock is not None
        )

    def _lowat_cap(self, rest: int) -> int:
        """The SO_RCVLOWAT for ``rest`` bytes still to come: at most _LOWAT_MAX, and at most a
        quarter of a receive buffer set by receive.buffer.bytes."""
        rest = min(rest, _LOWAT_MAX)
        if self._rcvbuf > 0:
            rest = max(1, min(rest, self._rcvbuf // 4))
        return rest

    def _lowat_max(self) -> int:
        """The largest SO_RCVLOWAT a reading thread may set (0: none)."""
        return self._lowat_cap(_LOWAT_MAX) if self._lowat is not None else 0

    def _start_native(self, read: Any) -> None:
        try:
            read.start()
        except OSError as exc:
            # No thread to be had (a process at its limit): this response is read here.
            logger.debug("node %s: receiving on the polling thread: %s", self.node_id, exc)
            self._native = None
            read.cancel()

    def cancel_native_read(self) -> None:
        """Stop a reading thread and wait for it (before the socket closes)."""
        read = self._native
        if read is not None:
            self._native = None
            read.cancel()

    @abc.abstractmethod
    def close(self, error: KafkaError | None = None) -> None:
        """Close the connection and fail what is in flight with ``error``."""

    def _read(self) -> None:
        self._want_write_for_read = False
        while self.state is not ConnectionState.DISCONNECTED:
            if self._native is not None:
                return  # a reading thread has the socket's receive side
            sock = self.sock
            assert sock is not None
            try:
                if self._frame is not None:
                    view = memoryview(self._frame)[self._frame_pos : self._frame_size]
                    want = len(view)
                    n = sock.recv_into(view)
                    view.release()
                    if n == 0:
                        self._peer_closed()
                        return
                    self.last_activity_ms = self._now_ms()
                    self._frame_pos += n
                    if self._frame_pos == self._frame_size:
                        frame = self._frame
                        self._frame = None
                        if self._lowat is not None and self._lowat > 1:
                            self._set_lowat(sock, 1)
                        self._on_frame(memoryview(frame)[: self._frame_size])
                        del frame
                    elif self._lowat is not None and self._lowat > want - n:
                        # Never above what is left: the selector would wait for bytes that
                        # are not coming.
                        self._set_lowat(sock, want - n)
                    got_all = n >= want
                else:
                    want = _CHUNK
                    chunk = sock.recv(want)
                    if not chunk:
                        self._peer_closed()
                        return
                    self.last_activity_ms = self._now_ms()
                    n = len(chunk)
                    self._on_chunk(chunk)
                    got_all = n >= want
            except (BlockingIOError, InterruptedError, tls.SSLWantReadError):
                return
            except tls.SSLWantWriteError:
                self._want_write_for_read = True
                return
            except tls.SSLError as exc:
                if self.state is not ConnectionState.READY:
                    # With TLS 1.3 the server rejects a client certificate only after the
                    # handshake, with an alert: before READY that is an authentication failure.
                    self.close(
                        SslAuthenticationError(
                            f"TLS with node {self.node_id} ({self.host}:{self.port}) failed: "
                            f"{exc.reason or exc}"
                        )
                    )
                else:
                    self.close(
                        KafkaConnectionError(
                            f"TLS error on the connection to node {self.node_id}: "
                            f"{exc.reason or exc}"
                        )
                    )
                return
            except ConnectionResetError as exc:
                self._peer_closed(exc)
                return
            except OSError as exc:
                self.close(
                    KafkaConnectionError(
                        f"connection to node {self.node_id} ({self.host}:{self.port}) failed while "
                        f"receiving: {exc}"
                    )
                )
                return
            if not got_all and not (isinstance(sock, tls.SSLSocket) and sock.pending()):
                # A short read means the kernel buffer is drained (TLS may still hold decrypted
                # bytes, hence the pending() check); the selector reports the next data.
                return

    def _on_chunk(self, chunk: bytes) -> None:
        data = memoryview(chunk)
        if self._hdr:
            need = 4 - len(self._hdr)
            self._hdr += bytes(data[:need])
            data = data[need:]
            if len(self._hdr) < 4:
                return
            size = _SIZE.unpack(self._hdr)[0]
            self._hdr = b""
            if not self._start_frame(size, data):
                return
            data = data[min(size, len(data)) :]
        pos = 0
        end = len(data)
        while self.state is not ConnectionState.DISCONNECTED and pos < end:
            if end - pos < 4:
                self._hdr = bytes(data[pos:end])
                return
            size = _SIZE.unpack_from(data, pos)[0]
            pos += 4
            if not self._start_frame(size, data[pos:]):
                return
            pos += size

    def _start_frame(self, size: int, data: memoryview) -> bool:
        """Take a frame of ``size`` starting at ``data``; False when it is incomplete/fatal."""
        limit = self._max_frame if self.state is ConnectionState.READY else _SETUP_RECEIVE_LIMIT
        if size < 0 or size > limit:
            self._reject_size(size, data, limit)
            return False
        # Whether the next response is worth a thread from its first byte on.
        self._large_size = size if size >= NATIVE_READ_MIN else 0
        if len(data) >= size:
            self._on_frame(data[:size])
            return True
        frame = self._frame_buffer(size)
        frame[: len(data)] = data
        self._frame = frame
        self._frame_pos = len(data)
        self._frame_size = size
        rest = size - len(data)
        if rest >= NATIVE_READ_MIN and self._native_reads_possible():
            assert self.sock is not None and self._notify_fd is not None
            self._native = _cframe_reader.FrameRead(
                self.sock.fileno(), frame, len(data), size, self._notify_fd, self._lowat_max()
            )
            self._start_native(self._native)
            if self._native is not None:
                return False
        # Not under TLS: the library may hold part of a record already taken off the socket,
        # so fewer bytes than the rest of the response may ever reach the kernel's queue.
        if (
            rest >= _LOWAT_MIN
            and self._lowat is not None
            and not self._use_ssl
            and self.sock is not None
        ):
            self._set_lowat(self.sock, rest)
        return False

    def _set_lowat(self, sock: socket.socket, rest: int) -> None:
        """Set SO_RCVLOWAT for a response with ``rest`` bytes still to come (1: back to the
        default); see _LOWAT_MIN."""
        try:
            if rest > 1:
                rest = self._lowat_cap(rest)
            if rest != self._lowat:
                sock.setsockopt(socket.SOL_SOCKET, _SO_RCVLOWAT, rest)  # type: ignore[arg-type]
                self._lowat = rest
        except OSError:
            # Not every platform takes it (Windows): read as data comes, as before.
            self._lowat = None

    def _frame_buffer(self, size: int) -> bytearray | mmap.mmap:
        """A buffer of at least ``size`` bytes for one response: a pooled one no view refers
        to any more (its responses are decoded and dropped), else a new one."""
        if size < _POOL_MIN:
            return bytearray(size)
        # Rounded up to a power of two, so that a pooled buffer fits the next responses, whose
        # sizes vary a little: a page of an mmap costs nothing until it is written.
        size = 1 << (size - 1).bit_length()
        pool = self._pool
        for i in range(len(pool)):
            buf = pool[i]
            # Held by the pool, this variable and getrefcount's argument only: no memoryview
            # of it (data still to decode) is alive, so it may be overwritten.
            if sys.getrefcount(buf) <= 3:
                if len(buf) >= size:
                    return buf
                del buf
                # An idle buffer too small: replace it.
                pool[i] = fresh = _take_spare(size) or _large_buffer(size)
                return fresh
        fresh = _take_spare(size) or _large_buffer(size)
        if len(pool) < _POOL_SIZE:
            pool.append(fresh)
        return fresh

    def _reject_size(self, size: int, data: memoryview, limit: int) -> None:
        """Close on a size no Kafka response of this connection can have, naming what the
        peer looks like when its first bytes tell."""
        head = _SIZE.pack(size) + bytes(data[:60])
        where = f"node {self.node_id} ({self.host}:{self.port})"
        peer = describe_foreign_peer(head) if self.state is not ConnectionState.READY else None
        if peer is not None:
            message = (
                f"{where} is not a Kafka {self._protocol_name()} listener: {peer}; "
                "closing the connection"
            )
        elif self.state is ConnectionState.READY:
            message = (
                f"{where} sent a response of {size} bytes, above the receive limit of "
                f"{limit} bytes (twice fetch.max.bytes, at least "
                f"{_MIN_RECEIVE_LIMIT}); closing the connection"
            )
        else:
            message = (
                f"{where} answered with bytes that are not a Kafka response (first "
                f"bytes {head[:16].hex(' ')}); closing the connection"
            )
        # A misconfigured address or security.protocol: the network client logs it at
        # WARNING (rate-limited per node), as every failed connection.
        self.close(KafkaConnectionError(message))

    def _protocol_name(self) -> str:
        if self._use_ssl:
            return "SASL_SSL" if self._use_sasl else "SSL"
        return "SASL_PLAINTEXT" if self._use_sasl else "PLAINTEXT"

    def _on_frame(self, frame: memoryview) -> None:
        if self.state is ConnectionState.DISCONNECTED:
            return
        if len(frame) < 4:
            self.close(KafkaConnectionError(f"node {self.node_id} sent a truncated response"))
            return
        cid = _SIZE.unpack_from(frame, 0)[0]
        if not self.in_flight:
            self.close(
                KafkaConnectionError(
                    f"node {self.node_id} sent a response (correlation id {cid}) with no request "
                    "in flight"
                )
            )
            return
        req = self.in_flight[0]
        if cid != req.correlation_id:
            self.close(
                KafkaConnectionError(
                    f"correlation id mismatch from node {self.node_id}: expected "
                    f"{req.correlation_id}, got {cid}; closing the connection"
                )
            )
            return
        body: dict[str, Any] | None
        try:
            _, body = decode_response(req.api_key, req.api_version, frame)
        except KafkaProtocolError as exc:
            body = self._api_versions_v0(req, frame)
            if body is None:
                err = KafkaConnectionError(
                    f"malformed {api_name(req.api_key)} v{req.api_version} response from node "
                    f"{self.node_id}: {exc}; closing the connection"
                )
                err.__cause__ = exc
                self.close(err)
                return
        if body.get("error_code") == _UNSUPPORTED_VERSION:
            # The broker answered ApiVersions in v0 format whatever we asked; read it as such.
            body = self._api_versions_v0(req, frame) or body
        self.in_flight.popleft()
        if self.state is ConnectionState.READY:
            self.served = self.ever_served = True
        throttle = body.get("throttle_time_ms")
        if throttle:
            self.throttle_until_ms = max(self.throttle_until_ms, self._now_ms() + int(throttle))
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("node %s: <- %s cid=%d", self.node_id, api_name(req.api_key), cid)
        req.future.success(body)

    @staticmethod
    def _api_versions_v0(req: InFlightRequest, frame: memoryview) -> dict[str, Any] | None:
        """An ApiVersions answer read as v0, when it is an UNSUPPORTED_VERSION one."""
        if req.api_key != ApiKey.API_VERSIONS or req.api_version == 0:
            return None
        try:
            _, body = decode_response(req.api_key, 0, frame)
        except KafkaProtocolError:
            return None
        return body if body.get("error_code") == _UNSUPPORTED_VERSION else None

    def _peer_closed(self, reset: OSError | None = None) -> None:
        """The peer closed (``reset``: reset) the connection; name the likely cause."""
        how = f" ({reset})" if reset is not None else ""
        if self.state is ConnectionState.HANDSHAKE:
            self.close(
                SslAuthenticationError(
                    f"node {self.node_id} ({self.host}:{self.port}) closed the connection during the "
                    f"TLS handshake{how}"
                )
            )
        elif (
            not self.ever_served
            and not self._use_ssl
            and not self._use_sasl
            and self._frame is None
            and not self._hdr
        ):
            # An SSL listener drops a plaintext ApiVersions; a SASL listener answers it and
            # then drops the first request that is not SASL. Both close with nothing of the
            # pending answer sent. Part of a frame received means a Kafka listener cut off
            # mid-response (a proxy, a dying broker); a broker that served this address
            # before is more likely going down: neither gets the hint.
            self.close(
                KafkaConnectionError(
                    f"node {self.node_id} ({self.host}:{self.port}): the broker closed the "
                    f"connection during the handshake{how}: is this an SSL/SASL listener? "
                    "security.protocol is PLAINTEXT"
                )
            )
        else:
            self.close(
                KafkaConnectionError(
                    f"node {self.node_id} ({self.host}:{self.port}) closed the connection{how}"
                )
            )
