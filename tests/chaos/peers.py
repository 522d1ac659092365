"""Hostile and wrong peers for the chaos tests: servers that are not Kafka.

:class:`ScriptedPeer` accepts connections on a loopback port and answers every one with bytes
chosen per connection (after the client's first bytes arrive, as a real server would), then
either keeps the connection open or closes it. It counts connections, so a test can check that
the client backs off instead of reconnecting in a storm.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import threading
from collections.abc import Callable

__all__ = ["ScriptedPeer", "TLS_ALERT"]

# What a TLS 1.2 server sends a client whose first bytes are not a ClientHello: an alert record,
# fatal (2), handshake_failure (40). Read as a Kafka size: 0x15030300 = 336 MiB.
TLS_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])


class ScriptedPeer:
    """A loopback server that answers each connection with ``reply(n)`` (n counts from 0).

    With ``ssl_context`` it is a real TLS listener instead: each accepted socket is wrapped and
    the handshake runs, so a plaintext client meets whatever the TLS stack answers.

    Thread-safety: one server thread; ``connections`` is read from any thread.
    """

    def __init__(
        self,
        reply: Callable[[int], bytes] | None = None,
        *,
        ssl_context: ssl.SSLContext | None = None,
        close_after_reply: bool = False,
    ) -> None:
        self._reply = reply or (lambda n: b"")
        self._ssl = ssl_context
        self._close = close_after_reply
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scripted-peer", daemon=True)

    @property
    def address(self) -> str:
        """``host:port`` for bootstrap.servers."""
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._listener.close()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ, None)
        open_socks: dict[socket.socket, int] = {}
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(0.05):
                    if key.data is None:
                        try:
                            sock, _addr = self._listener.accept()
                        except OSError:
                            continue
                        n = self.connections
                        self.connections += 1
                        if self._ssl is not None:
                            threading.Thread(target=self._tls, args=(sock,), daemon=True).start()
                            continue
                        sock.setblocking(False)
                        open_socks[sock] = n
                        sel.register(sock, selectors.EVENT_READ, n)
                        continue
                    sock = key.fileobj  # type: ignore[assignment]
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(sock)
                        open_socks.pop(sock, None)
                        sock.close()
                        continue
                    reply = self._reply(key.data)
                    if reply:
                        try:
                            sock.setblocking(True)
                            sock.sendall(reply)
                            sock.setblocking(False)
                        except OSError:
                            pass
                    if self._close:
                        sel.unregister(sock)
                        open_socks.pop(sock, None)
                        sock.close()
        finally:
            for sock in open_socks:
                sock.close()
            sel.close()

    def _tls(self, sock: socket.socket) -> None:
        assert self._ssl is not None
        sock.settimeout(5)
        try:
            with self._ssl.wrap_socket(sock, server_side=True) as tls:
                tls.recv(1)
        except (OSError, ssl.SSLError):
            pass
        finally:
            sock.close()
