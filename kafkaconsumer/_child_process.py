"""Broker processes started by this package or its tests: start-up probe, death signal, stop.

Shared by :mod:`kafkaconsumer.embedded` (the Tansu broker) and the test suite's Apache Kafka
harness, which start brokers as child processes and must never leave one behind:

- :func:`free_port` picks a loopback port; :func:`api_versions_probe` says whether a broker
  answers ApiVersions there (the request is built by hand so that this module does not depend on
  the protocol package);
- :func:`die_with_parent` is a ``preexec_fn`` that makes Linux stop the child when the process
  that started it dies (SIGKILL, a crash: what atexit cannot cover);
- :func:`stop_process` stops a child by its PID (SIGTERM, then SIGKILL);
- :class:`LiveProcesses` remembers the objects that own running children and stops them at
  interpreter exit;
- :func:`file_tail` reads the end of a child's log for error messages.
"""

from __future__ import annotations

import atexit
import ctypes
import signal
import socket
import struct
import subprocess
import sys
import threading
import weakref
from typing import Generic, Protocol, TypeVar

__all__ = [
    "LiveProcesses",
    "Stoppable",
    "api_versions_probe",
    "die_with_parent",
    "file_tail",
    "free_port",
    "recv_exact",
    "stop_process",
]


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Read exactly ``n`` bytes from ``sock``; OSError when the peer closes first."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise OSError("connection closed")
        chunks += chunk
    return bytes(chunks)


def api_versions_probe(host: str, port: int, timeout: float) -> bool:
    """Send ApiVersions v0 and return True when a well-formed answer with error 0 comes back."""
    client_id = b"kafkaconsumer-probe"
    correlation_id = 0x4B43
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(body)) + body)
            (size,) = struct.unpack(">i", recv_exact(sock, 4))
            if size < 6 or size > 1 << 20:
                return False
            payload = recv_exact(sock, size)
            got_id, error_code = struct.unpack_from(">ih", payload, 0)
            return bool(got_id == correlation_id and error_code == 0)
    except (OSError, struct.error):
        return False


def die_with_parent() -> None:
    """``preexec_fn``: ask Linux to send SIGTERM to the child if the thread that forked it dies.

    This covers the cases atexit cannot: a run killed with SIGKILL or crashing. Elsewhere a
    no-op.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
        except OSError:
            pass


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
    """Stop ``proc`` by its PID (SIGTERM, SIGKILL when it is still there after ``timeout`` s)
    and wait for it; return True when it had to be killed. None or an exited process is a
    no-op."""
    if proc is None or proc.poll() is not None:
        return False
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
        return False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
        return True


def file_tail(path: str, limit: int) -> str:
    """The last ``limit`` bytes of the file at ``path`` as text ("" when unreadable)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace").strip()


class Stoppable(Protocol):
    """What :class:`LiveProcesses` can stop at exit."""

    def stop(self, timeout: float) -> None:
        """Stop the owned process within about ``timeout`` s."""


_T = TypeVar("_T", bound=Stoppable)


class LiveProcesses(Generic[_T]):
    """The owners of running child processes, stopped at interpreter exit (best effort).

    Thread-safety: add/discard/stop_all may be called from any thread (one lock).
    """

    def __init__(self, exit_timeout: float) -> None:
        """Stop each remaining owner with ``exit_timeout`` s at interpreter exit."""
        self._owners: weakref.WeakSet[_T] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._exit_timeout = exit_timeout
        atexit.register(self.stop_all)

    def add(self, owner: _T) -> None:
        """Remember ``owner`` as running a child."""
        with self._lock:
            self._owners.add(owner)

    def discard(self, owner: _T) -> None:
        """Forget ``owner`` (its child has stopped)."""
        with self._lock:
            self._owners.discard(owner)

    def stop_all(self) -> None:
        """Stop every remembered owner; errors are ignored (this runs at interpreter exit)."""
        with self._lock:
            owners = list(self._owners)
        for owner in owners:
            try:
                owner.stop(timeout=self._exit_timeout)
            except Exception:  # interpreter shutdown: best effort only
                pass
