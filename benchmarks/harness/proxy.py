"""A TCP fault proxy for tests: sits between a client and a broker and misbehaves on demand.

::

    with FaultProxy("127.0.0.1", broker_port) as proxy:
        proxy.set_latency(200)        # every chunk, both ways, arrives 200 ms late
        proxy.black_hole()            # swallow everything on current and new connections
        proxy.partition()             # hold everything until restore() (TCP rides it out)
        proxy.black_hole_apis({12})   # swallow the connections that carry heartbeats
        proxy.restore()               # heal: new connections work again
        proxy.cut()                   # reset every open connection (TCP RST)
        proxy.cut_mid_response(10)    # forward 10 bytes of the next broker reply, then reset
        proxy.corrupt_next_response() # flip bytes in the next broker reply
        proxy.refuse()                # reset new connections as soon as they arrive

One background thread runs a selector over every socket; all traffic stays on loopback. With
``listeners=n`` the proxy listens on n ports (``proxy.ports``) that all lead to the target, which
gives a client many distinct "nodes". With ``ssl_context`` (a server-side context) the proxy
terminates TLS on the client side and forwards plaintext (see ``benchmarks/harness/tls_proxy.py``).
"""

from __future__ import annotations

import collections
import logging
import selectors
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["FaultProxy"]

_LINGER_RST = struct.pack("ii", 1, 0)


def _reset(sock: socket.socket | None) -> None:
    if sock is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Pair:
    """One client connection and its upstream connection. Thread-safety: proxy thread only."""

    def __init__(self, client: socket.socket, poisoned: bool) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.upstream_connected = False
        self.handshaking = isinstance(client, ssl.SSLSocket)
        self.to_upstream: collections.deque[list[Any]] = collections.deque()  # [deliver_at, bytes]
        self.to_client: collections.deque[list[Any]] = collections.deque()
        self.poisoned = poisoned  # black-holed: never forwards anything again
        self.cut_after: int | None = None
        self.closed = False
        # Request framing of the client's stream, to learn which APIs a connection carries.
        self.req_head = b""
        self.req_skip = 0
        self.api_keys: set[int] = set()

    def scan_requests(self, data: bytes) -> None:
        """Note the api key of every request that starts in ``data`` (size, api key, ...)."""
        pos, end = 0, len(data)
        while pos < end:
            if self.req_skip:
                step = min(self.req_skip, end - pos)
                self.req_skip -= step
                pos += step
                continue
            need = 6 - len(self.req_head)
            self.req_head += data[pos : pos + need]
            pos += need
            if len(self.req_head) < 6:
                return
            size, api_key = struct.unpack(">ih", self.req_head)
            self.api_keys.add(api_key)
            self.req_skip = max(0, size - 2)
            self.req_head = b""


class FaultProxy:
    """A misbehaving TCP proxy (see the module docstring).

    Thread-safety: the control methods may be called from any thread; a lock guards the fault
    settings and the proxy thread applies them.
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        listen_host: str = "127.0.0.1",
        listeners: int = 1,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.target = (target_host, target_port)
        self._ssl_context = ssl_context
        self._lock = threading.Lock()
        self._latency_ms = 0.0
        self._black_hole = False
        self._black_hole_apis: frozenset[int] = frozenset()
        self._partitioned = False
        self._refuse = False
        self._cut_mid_response: int | None = None
        self._corrupt: Callable[[bytes], bytes] | None = None
        self._listeners: list[socket.socket] = []
        for _ in range(listeners):
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((listen_host, 0))
            ls.listen(128)
            ls.setblocking(False)
            self._listeners.append(ls)
        self.host = listen_host
        self.ports: list[int] = [ls.getsockname()[1] for ls in self._listeners]
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._pairs: list[_Pair] = []
        self._stop = False
        self._thread: threading.Thread | None = None
        #: Connections accepted (including refused/reset ones).
        self.accepted = 0
        #: TLS handshakes that failed (TLS mode only).
        self.handshake_failures = 0
        #: TLS handshakes that succeeded (TLS mode only).
        self.handshakes = 0
        self.bytes_to_client = 0
        self.bytes_to_upstream = 0
        self._accepted_cond = threading.Condition(self._lock)

    # ------------------------------------------------------------------ lifecycle -----------
    @property
    def port(self) -> int:
        """The first listening port."""
        return self.ports[0]

    @property
    def address(self) -> str:
        """``host:port`` of the first listener, for ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def addresses(self) -> list[str]:
        """``host:port`` of every listener."""
        return [f"{self.host}:{p}" for p in self.ports]

    def start(self) -> FaultProxy:
        """Start the proxy thread."""
        for ls in self._listeners:
            self._sel.register(ls, selectors.EVENT_READ, ("listen", None))
        self._sel.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and close every socket (bounded: waits at most 5 s)."""
        self._stop = True
        self._wake()
        if self._thread is not None:
            self._thread.join(5)
        for ls in self._listeners:
            ls.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # ------------------------------------------------------------------ faults --------------
    def set_latency(self, ms: float) -> None:
        """Delay every chunk in both directions by ``ms`` milliseconds."""
        with self._lock:
            self._latency_ms = float(ms)
        self._wake()

    def black_hole(self, on: bool = True) -> None:
        """Swallow all traffic on current and new connections (they stay poisoned)."""
        with self._lock:
            self._black_hole = on
        self._wake()

    def black_hole_apis(self, api_keys: set[int]) -> None:
        """Black-hole only the connections that carry (or later send) a request of one of
        ``api_keys``: e.g. the group APIs, to cut a consumer's coordinator connection while its
        fetch connections work. :meth:`restore` ends it (the poisoned connections stay dead)."""
        with self._lock:
            self._black_hole_apis = frozenset(api_keys)
        self._wake()

    def partition(self, on: bool = True) -> None:
        """Hold every byte in both directions until :meth:`restore` (or ``partition(False)``):
        a network partition that TCP rides out, as retransmissions would. Unlike
        :meth:`black_hole`, nothing is lost and the connections work again after the heal."""
        with self._lock:
            self._partitioned = on
        self._wake()

    def refuse(self, on: bool = True) -> None:
        """Reset new connections right after accepting them."""
        with self._lock:
            self._refuse = on
        self._wake()

    def cut(self) -> None:
        """Reset every open connection now."""
        with self._lock:
            self._cut_all = True
        self._wake()

    def cut_mid_response(self, after_bytes: int = 10) -> None:
        """Forward only ``after_bytes`` of the next broker reply, then reset that connection."""
        with self._lock:
            self._cut_mid_response = after_bytes
        self._wake()

    def corrupt_next_response(self, fn: Callable[[bytes], bytes] | None = None) -> None:
        """Rewrite the next chunk the broker sends (default: garble the bytes after the
        correlation id so that the response cannot be decoded)."""

        def garble(data: bytes) -> bytes:
            # Keep the size and correlation id (8 bytes) so the client sees a well-framed,
            # malformed body; the rest become 0xFF (huge lengths, invalid counts).
            return data[:8] + b"\xff" * (len(data) - 8)

        with self._lock:
            self._corrupt = fn or garble
        self._wake()

    def restore(self) -> None:
        """Clear latency, black hole, refusal and pending one-shot faults."""
        with self._lock:
            self._latency_ms = 0.0
            self._black_hole = False
            self._black_hole_apis = frozenset()
            self._partitioned = False
            self._refuse = False
            self._cut_mid_response = None
            self._corrupt = None
        self._wake()

    def wait_for_accepted(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``accepted >= count`` or ``timeout`` seconds pass."""
        with self._accepted_cond:
            return self._accepted_cond.wait_for(lambda: self.accepted >= count, timeout)

    @property
    def open_connections(self) -> int:
        """Client connections currently open."""
        return sum(1 for p in list(self._pairs) if not p.closed)

    _cut_all = False

    # ------------------------------------------------------------------ loop ----------------
    def _run(self) -> None:
        try:
            while not self._stop:
                timeout = self._next_due()
                for key, events in self._sel.select(timeout):
                    kind, pair = key.data
                    if kind == "wake":
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except (BlockingIOError, OSError):
                            pass
                    elif kind == "listen":
                        self._accept(key.fileobj)  # type: ignore[arg-type]
                    elif not pair.closed:
                        self._on_event(kind, pair, events)
                self._apply_controls()
                self._flush_all()
        except Exception:  # pragma: no cover - a crash here would hang tests; log it loudly
            logger.exception("fault proxy crashed")
        finally:
            for pair in self._pairs:
                self._close_pair(pair, reset=False)
            self._sel.close()

    def _next_due(self) -> float | None:
        if self._partitioned:
            return None  # nothing is due until the heal wakes the loop
        now = time.monotonic()
        due: float | None = None
        for pair in self._pairs:
            for queue in (pair.to_client, pair.to_upstream):
                if queue:
                    wait = max(0.0, queue[0][0] - now)
                    due = wait if due is None else min(due, wait)
        return due

    def _apply_controls(self) -> None:
        with self._lock:
            cut_all = self._cut_all
            self._cut_all = False
            black = self._black_hole
        if black:
            for pair in self._pairs:
                pair.poisoned = True
                pair.to_client.clear()
                pair.to_upstream.clear()
        if cut_all:
            for pair in list(self._pairs):
                self._close_pair(pair, reset=True)
        self._pairs = [p for p in self._pairs if not p.closed]

    def _accept(self, ls: socket.socket) -> None:
        while True:
            try:
                conn, _ = ls.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                refuse = self._refuse
                black = self._black_hole
                self._accepted_cond.notify_all()
            if refuse:
                _reset(conn)
                continue
            conn.setblocking(False)
            if self._ssl_context is not None:
                try:
                    conn = self._ssl_context.wrap_socket(
                        conn, server_side=True, do_handshake_on_connect=False
                    )
                except (ssl.SSLError, OSError):
                    _reset(conn)
                    continue
            pair = _Pair(conn, poisoned=black)
            self._pairs.append(pair)
            self._sel.register(conn, selectors.EVENT_READ, ("client", pair))
            if pair.handshaking:
                self._handshake(pair)
            elif not black:
                self._connect_upstream(pair)

    def _connect_upstream(self, pair: _Pair) -> None:
        up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        up.setblocking(False)
        up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            up.connect_ex(self.target)
        except OSError:
            self._close_pair(pair, reset=True)
            return
        pair.upstream = up
        self._sel.register(up, selectors.EVENT_WRITE | selectors.EVENT_READ, ("upstream", pair))

    def _handshake(self, pair: _Pair) -> None:
        sock = pair.client
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._sel.modify(sock, selectors.EVENT_READ, ("client", pair))
            return
        except ssl.SSLWantWriteError:
            self._sel.modify(sock, selectors.EVENT_WRITE, ("client", pair))
            return
        except (ssl.SSLError, OSError) as exc:
            logger.debug("proxy: TLS handshake failed: %s", exc)
            self.handshake_failures += 1
            self._close_pair(pair, reset=False)
            return
        pair.handshaking = False
        self.handshakes += 1
        self._sel.modify(sock, selectors.EVENT_READ, ("client", pair))
        if not pair.poisoned:
            self._connect_upstream(pair)

    def _on_event(self, kind: str, pair: _Pair, events: int) -> None:
        if kind == "client":
            if pair.handshaking:
                self._handshake(pair)
                return
            if events & selectors.EVENT_READ:
                self._read(pair, pair.client, to_client=False)
        else:
            if not pair.upstream_connected and events & selectors.EVENT_WRITE:
                assert pair.upstream is not None
                err = pair.upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self._close_pair(pair, reset=True)
                    return
                pair.upstream_connected = True
            if events & selectors.EVENT_READ and pair.upstream is not None:
                self._read(pair, pair.upstream, to_client=True)

    def _read(self, pair: _Pair, sock: socket.socket, to_client: bool) -> None:
        while not pair.closed:
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            except OSError:
                self._close_pair(pair, reset=True)
                return
            if not data:
                self._close_pair(pair, reset=False)
                return
            if pair.poisoned:
                continue
            if not to_client:
                pair.scan_requests(data)
            with self._lock:
                deliver_at = time.monotonic() + self._latency_ms / 1000.0
                if self._black_hole or (
                    self._black_hole_apis and self._black_hole_apis & pair.api_keys
                ):
                    pair.poisoned = True
                    pair.to_client.clear()
                    pair.to_upstream.clear()
                    continue
                if to_client:
                    if self._cut_mid_response is not None:
                        pair.cut_after = self._cut_mid_response
                        self._cut_mid_response = None
                    if self._corrupt is not None:
                        data = self._corrupt(data)
                        self._corrupt = None
            if to_client:
                pair.to_client.append([deliver_at, data])
            else:
                pair.to_upstream.append([deliver_at, data])
            if not (isinstance(sock, ssl.SSLSocket) and sock.pending()) and len(data) < 65536:
                return

    def _flush_all(self) -> None:
        if self._partitioned:
            for pair in self._pairs:  # read on (bytes queue up), write nothing
                for sock, kind in ((pair.client, "client"), (pair.upstream, "upstream")):
                    if (
                        sock is None
                        or pair.closed
                        or (kind == "upstream" and not pair.upstream_connected)
                    ):
                        continue  # a connect in progress keeps its write interest
                    try:
                        if self._sel.get_key(sock).events != selectors.EVENT_READ:
                            self._sel.modify(sock, selectors.EVENT_READ, (kind, pair))
                    except (KeyError, ValueError):
                        pass
            return
        now = time.monotonic()
        for pair in list(self._pairs):
            if pair.closed:
                continue
            if pair.upstream is not None and pair.upstream_connected:
                self._flush(pair, pair.upstream, pair.to_upstream, now, to_client=False)
            if not pair.closed and not pair.handshaking:
                self._flush(pair, pair.client, pair.to_client, now, to_client=True)
            if pair.closed:
                continue
            # Ask for write readiness only while bytes are due but could not be written.
            for sock, queue, kind in (
                (pair.client, pair.to_client, "client"),
                (pair.upstream, pair.to_upstream, "upstream"),
            ):
                if sock is None or (kind == "client" and pair.handshaking):
                    continue
                if kind == "upstream" and not pair.upstream_connected:
                    continue
                want = selectors.EVENT_READ
                if queue and queue[0][0] <= now:
                    want |= selectors.EVENT_WRITE
                try:
                    if self._sel.get_key(sock).events != want:
                        self._sel.modify(sock, want, (kind, pair))
                except (KeyError, ValueError):
                    pass

    def _flush(
        self,
        pair: _Pair,
        sock: socket.socket,
        queue: collections.deque[list[Any]],
        now: float,
        to_client: bool,
    ) -> None:
        while queue and queue[0][0] <= now:
            data: bytes = queue[0][1]
            limit = pair.cut_after if to_client else None
            chunk = data if limit is None else data[:limit]
            sent = 0
            if chunk:
                try:
                    sent = sock.send(chunk)
                except (
                    BlockingIOError,
                    InterruptedError,
                    ssl.SSLWantWriteError,
                    ssl.SSLWantReadError,
                ):
                    return
                except OSError:
                    self._close_pair(pair, reset=True)
                    return
            if to_client:
                self.bytes_to_client += sent
            else:
                self.bytes_to_upstream += sent
            if limit is not None:
                pair.cut_after = limit - sent
                if pair.cut_after <= 0:
                    # The response was cut in the middle: reset the client connection.
                    self._close_pair(pair, reset=True)
                    return
            if sent < len(data):
                queue[0][1] = data[sent:]
                return
            queue.popleft()

    def _close_pair(self, pair: _Pair, reset: bool) -> None:
        if pair.closed:
            return
        pair.closed = True
        for sock in (pair.client, pair.upstream):
            if sock is None:
                continue
            try:
                self._sel.unregister(sock)
            except (KeyError, ValueError):
                pass
            if reset:
                _reset(sock)
            else:
                try:
                    sock.close()
                except OSError:
                    pass
